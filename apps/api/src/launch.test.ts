import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, ensureBuilt } from './testing/built-bin.js';

const FLAGS = ['--max-semi-space-size=8', '--heap-growing-percent=50', '--no-allocation-site-pretenuring'];

/** The server's Node flags (README, "Memory and garbage collection"; bench/README.md says why). */
describe('how the server is launched', () => {
  it('uses flags this Node accepts (an unknown V8 flag stops node before the server starts)', () => {
    const run = spawnSync(
      process.execPath,
      [
        ...FLAGS,
        '-e',
        "process.stdout.write(require('node:v8').getHeapStatistics().total_heap_size > 0 ? 'ok' : 'no')",
      ],
      { encoding: 'utf8' },
    );
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toBe('ok');
  });

  it('starts the built convo-server command with them, through its own shebang', () => {
    ensureBuilt();
    // A preloaded script reports the flags the process was started with, and stops it there.
    const dir = mkdtempSync(join(tmpdir(), 'convo-launch-'));
    const report = join(dir, 'report.cjs');
    writeFileSync(report, 'process.stdout.write(JSON.stringify(process.execArgv)); process.exit(0);');
    const run = spawnSync(BIN, ['--help'], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: `--require=${report}` },
    });
    rmSync(dir, { recursive: true, force: true });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(expect.arrayContaining(FLAGS));
  });
});
