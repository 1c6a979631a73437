import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..', '..');
const FLAG = '--max-semi-space-size=4';

/**
 * The server's Node flag (README, "Memory"): V8's young generation capped at 4 MB semispaces,
 * which held the server's peak RSS under load near 107 MB instead of 150 MB at the same
 * throughput. Every way the project starts the server passes it.
 */
describe('how the server is launched', () => {
  it('passes the young-generation cap from the convo-server shebang, pnpm start and the benchmark', () => {
    expect(readFileSync(join(REPO, 'apps/api/src/bin.ts'), 'utf8').split('\n')[0]).toBe(`#!/usr/bin/env -S node ${FLAG}`);
    const start = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start;
    expect(start).toContain(`node ${FLAG} apps/api/dist/bin.js serve`);
    expect(readFileSync(join(REPO, 'bench/src/run.ts'), 'utf8')).toContain(`SERVER_NODE_FLAGS = ['${FLAG}']`);
  });
});
