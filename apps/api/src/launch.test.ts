import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..', '..');
const FLAGS = ['--max-semi-space-size=8', '--heap-growing-percent=50'];

/**
 * The server's Node flags (README, "Memory"): V8's young generation capped at 8 MB semispaces and
 * its old generation grown by half at a time, which held the server's peak RSS over the
 * benchmark's scenarios near 120 MB instead of 150-175 MB at the same throughput. Every way the
 * project starts the server passes them.
 */
describe('how the server is launched', () => {
  it('passes the heap flags from the convo-server shebang, pnpm start and the benchmark', () => {
    expect(readFileSync(join(REPO, 'apps/api/src/bin.ts'), 'utf8').split('\n')[0]).toBe(`#!/usr/bin/env -S node ${FLAGS.join(' ')}`);
    const start = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start;
    expect(start).toContain(`node ${FLAGS.join(' ')} apps/api/dist/bin.js serve`);
    expect(readFileSync(join(REPO, 'bench/src/run.ts'), 'utf8')).toContain(`SERVER_NODE_FLAGS = [${FLAGS.map((f) => `'${f}'`).join(', ')}]`);
  });
});
