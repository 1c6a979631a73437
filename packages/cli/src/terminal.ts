import { homedir } from 'node:os';
import type { Environment } from './config.js';

/** A writable end the CLI prints to. */
export interface OutputStream {
  write(text: string): boolean;
  once(event: 'drain', listener: () => void): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface InputStream extends AsyncIterable<Buffer | string> {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
  on(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  removeListener(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  removeListener(event: 'end', listener: () => void): unknown;
  resume(): unknown;
  pause(): unknown;
  setEncoding?(encoding: BufferEncoding): unknown;
}

/** Everything the CLI reads from its surroundings: one object, so tests can hand in their own. */
export interface Terminal {
  env: Environment;
  platform: NodeJS.Platform;
  homeDir: string;
  stdin: InputStream;
  stdout: OutputStream;
  stderr: OutputStream;
  /** Waits between a request's attempts and a stream's reconnections; a timer when absent (tests pass their own). */
  sleep?: (ms: number) => Promise<void>;
}

export const processTerminal = (): Terminal => ({
  env: process.env,
  platform: process.platform,
  homeDir: homedir(),
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
});

/** Writes respecting back-pressure, so a large export does not pile up in memory. */
export function writeOut(stream: OutputStream, text: string): Promise<void> | undefined {
  if (stream.write(text)) return undefined;
  return new Promise((resolve) => stream.once('drain', resolve));
}
