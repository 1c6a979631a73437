import { CliError } from '../../errors.js';
import type { InputStream, OutputStream } from '../../terminal.js';

/**
 * Asks for a secret on a terminal without echoing it: the prompt goes to stderr, the typed
 * characters are read in raw mode and never written back. Ctrl-C and Ctrl-D abort.
 */
export function promptSecret(question: string, stdin: InputStream, stderr: OutputStream): Promise<string> {
  return new Promise((resolve, reject) => {
    stderr.write(question);
    let value = '';
    stdin.setRawMode?.(true);
    stdin.setEncoding?.('utf8');
    const finish = (error?: Error) => {
      stdin.removeListener('data', onData);
      stdin.removeListener('end', onEnd);
      stdin.setRawMode?.(false);
      stdin.pause();
      stderr.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (chunk: Buffer | string) => {
      for (const char of typeof chunk === 'string' ? chunk : chunk.toString('utf8')) {
        if (char === '\r' || char === '\n') return finish();
        if (char === '\u0003' || char === '\u0004') return finish(new CliError('cancelled', 'usage'));
        if (char === '\u007f' || char === '\b') value = value.slice(0, -1);
        else if (char >= ' ') value += char;
      }
    };
    const onEnd = () => finish(new CliError('no API key given: the input ended', 'usage'));
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.resume();
  });
}
