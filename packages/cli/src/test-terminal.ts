import { PassThrough } from 'node:stream';
import type { OutputStream, Terminal } from './terminal.js';

/** An output stream that keeps what is written, for tests. */
export class CapturedOutput implements OutputStream {
  text = '';
  constructor(readonly isTTY = false) {}
  write(text: string): boolean {
    this.text += text;
    return true;
  }
  once(): this {
    return this;
  }
}

/** A terminal for tests: captured stdout and stderr, a given environment, stdin from `input`. */
export function testTerminal(
  options: { env?: Record<string, string | undefined>; tty?: boolean; input?: string; homeDir?: string } = {},
) {
  const stdin = new PassThrough();
  stdin.end(options.input ?? '');
  const stdout = new CapturedOutput(options.tty ?? false);
  const stderr = new CapturedOutput(options.tty ?? false);
  const terminal: Terminal = {
    env: options.env ?? {},
    platform: 'linux',
    homeDir: options.homeDir ?? '/nonexistent-home',
    stdin,
    stdout,
    stderr,
  };
  return { terminal, stdout, stderr };
}
