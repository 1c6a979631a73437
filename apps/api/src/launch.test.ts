import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..', '..');
const FLAGS = ['--max-semi-space-size=8', '--heap-growing-percent=50', '--no-allocation-site-pretenuring'];

/**
 * The server's Node flags (README, "Memory"): V8's young generation capped at 8 MB semispaces and
 * its old generation grown by half at a time, which held the server's peak RSS over the
 * benchmark's scenarios near 120 MB instead of 150-175 MB at the same throughput; and no
 * allocation-site pretenuring, which had moved pg's result rows into the old generation and made
 * the garbage collector copy and promote them at every scavenge (bench/README.md, tenth pass).
 * Every way the project starts the server passes them.
 */
describe('how the server is launched', () => {
  it('uses flags this Node accepts (an unknown V8 flag stops node before the server starts)', () => {
    const run = spawnSync(process.execPath, [...FLAGS, '-e', "process.stdout.write(require('node:v8').getHeapStatistics().total_heap_size > 0 ? 'ok' : 'no')"], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toBe('ok');
  });

  it('passes the heap flags from the convo-server shebang, pnpm start and the benchmark', () => {
    expect(readFileSync(join(REPO, 'apps/api/src/bin.ts'), 'utf8').split('\n')[0]).toBe(`#!/usr/bin/env -S node ${FLAGS.join(' ')}`);
    const start = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start;
    expect(start).toContain(`node ${FLAGS.join(' ')} apps/api/dist/bin.js serve`);
    expect(readFileSync(join(REPO, 'bench/src/run.ts'), 'utf8')).toContain(`SERVER_NODE_FLAGS = [${FLAGS.map((f) => `'${f}'`).join(', ')}]`);
  });
});
