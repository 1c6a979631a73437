import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

describe('the workspace as a fresh clone has it', () => {
  it("links every package's commands to files the clone has before any build", () => {
    const tracked = new Set(execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n'));
    const manifests = [...tracked].filter((file) => /^(apps|packages)\/[^/]+\/package\.json$/.test(file));
    const bins = manifests.flatMap((manifest) => {
      const { bin } = JSON.parse(readFileSync(join(root, manifest), 'utf8')) as { bin?: Record<string, string> };
      return Object.entries(bin ?? {}).map(([name, target]) => ({
        name,
        file: normalize(join(dirname(manifest), target)),
      }));
    });
    expect(bins.map((b) => b.name).sort()).toEqual(['convo', 'convo-server']);
    for (const { name, file } of bins) expect(tracked.has(file), `${name} → ${file}`).toBe(true);
  });
});
