import type { OutputStream } from './terminal.js';

/**
 * A one-line progress bar on stderr for bulk commands. It draws only for a person watching:
 * with `--json`, or when stderr is not a terminal, it stays silent (messages still print).
 */
export interface Progress {
  /** Sets the number of units of work once it is known. */
  setTotal(total: number): void;
  /** Marks `count` more units done. */
  tick(count?: number): void;
  /** Sets a short note shown after the counts (`2 failed`). */
  note(text: string): void;
  /** Prints a line (a row failure) above the bar. */
  log(line: string): void;
  /** Removes the bar. */
  done(): void;
}

const BAR_WIDTH = 24;
const REDRAW_MS = 80;

export function createProgress(
  stderr: OutputStream,
  options: { label: string; total?: number | undefined; enabled: boolean; now?: () => number },
): Progress {
  const now = options.now ?? Date.now;
  let total = options.total;
  let completed = 0;
  let note = '';
  let drawnAt = 0;
  let visible = false;

  const render = (): string => {
    const counts = total === undefined ? `${completed}` : `${completed}/${total}`;
    const bar =
      total === undefined || total === 0
        ? ''
        : (() => {
            const filled = Math.min(BAR_WIDTH, Math.round((completed / total) * BAR_WIDTH));
            return ` [${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`;
          })();
    return `${options.label}${bar} ${counts}${note ? ` (${note})` : ''}`;
  };
  const clear = () => {
    if (visible) stderr.write('\r\x1b[2K');
    visible = false;
  };
  const draw = (force = false) => {
    if (!options.enabled) return;
    const time = now();
    if (!force && visible && time - drawnAt < REDRAW_MS) return;
    drawnAt = time;
    stderr.write(`\r\x1b[2K${render()}`);
    visible = true;
  };

  return {
    setTotal(value) {
      total = value;
      draw(true);
    },
    tick(count = 1) {
      completed += count;
      draw(total !== undefined && completed >= total);
    },
    note(text) {
      note = text;
      draw();
    },
    log(line) {
      clear();
      stderr.write(`${line}\n`);
      draw(true);
    },
    done() {
      clear();
    },
  };
}

/** The bar is for a person: not with `--json`, and not when stderr goes to a file or a pipe. */
export const progressEnabled = (options: { json?: boolean | undefined }, stderr: OutputStream): boolean =>
  !options.json && Boolean(stderr.isTTY);
