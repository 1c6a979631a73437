import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const API_DIR = fileURLToPath(new URL('..', import.meta.url));
const CONFIG = join(API_DIR, '.dependency-cruiser.cjs');
const DEPCRUISE = join(API_DIR, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

/** The violations of the layering rules (`pnpm lint`) in the sources under `cwd`. */
async function violationsIn(cwd: string): Promise<Violation[]> {
  const args = [DEPCRUISE, 'src', '--config', CONFIG, '--output-type', 'json'];
  // depcruise exits with the number of errors: the report is on stdout either way.
  const run = promisify(execFile)(process.execPath, args, { cwd, maxBuffer: 64 * 1024 * 1024 });
  const stdout = await run.then(
    (done) => done.stdout,
    (failed: { stdout?: string }) => failed.stdout ?? '',
  );
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

const rulesBroken = (violations: Violation[]) => [...new Set(violations.map(({ rule }) => rule.name))].sort();

// Each case runs dependency-cruiser in a process of its own: seconds each on a loaded machine.
describe('the layering rules', { timeout: 120_000 }, () => {
  let fixture: string;

  /** A module that imports `name` from `from` and exports its use. */
  const uses = (name: string, from: string) => `import { ${name} } from '${from}';\nexport const used = ${name};\n`;
  /** A module that imports the type `name` from `from` only as a type, and exports a type of its own. */
  const usesType = (type: string, at: string) => `import type { ${type} } from '${at}';\nexport type Used = ${type};`;

  /** A tree of sources shaped like src/: a module of each layer, importing only downwards. */
  const sound: Record<string, string> = {
    'db/schema.ts': 'export interface Database { jobs: string[] }\n',
    'repositories/jobs.ts': usesType('Database', '../db/schema.js'),
    'services/messages.ts': uses('used', '../repositories/jobs.js'),
    'operations.ts': uses('used', './services/messages.js'),
    'http/routes.ts': uses('used', '../operations.js'),
    'worker/worker.ts': uses('used', '../services/messages.js'),
    'bin.ts': uses('used', './worker/worker.js'),
  };

  async function tree(files: Record<string, string>): Promise<string> {
    const root = await mkdtemp(join(fixture, 'tree-'));
    const tsconfig = { extends: join(API_DIR, 'tsconfig.json'), include: ['src'] };
    await writeFile(join(root, 'tsconfig.json'), JSON.stringify(tsconfig));
    for (const [path, text] of Object.entries({ ...sound, ...files })) {
      await mkdir(dirname(join(root, 'src', path)), { recursive: true });
      await writeFile(join(root, 'src', path), text);
    }
    return root;
  }

  beforeAll(async () => {
    fixture = await mkdtemp(join(tmpdir(), 'convo-layers-'));
  });
  afterAll(async () => {
    await rm(fixture, { recursive: true, force: true });
  });

  it('pass sources that import only downwards', async () => {
    expect(await violationsIn(await tree({}))).toEqual([]);
  });

  it('fail a service that imports the worker', async () => {
    const root = await tree({ 'services/webhooks.ts': uses('used', '../worker/worker.js') });
    expect(rulesBroken(await violationsIn(root))).toEqual(['services-not-up', 'worker-only-from-bin']);
  });

  it('fail a cycle that only type imports close', async () => {
    const root = await tree({
      'services/accounts.ts': usesType('Used', './key-cache.js'),
      'services/key-cache.ts': usesType('Used', './accounts.js'),
    });
    expect(rulesBroken(await violationsIn(root))).toEqual(['no-circular']);
  });

  it('fail a repository that names a service type, and a route that reads a repository', async () => {
    const root = await tree({
      'repositories/events.ts': usesType('Used', '../services/messages.js'),
      'http/meta-hooks.ts': uses('used', '../repositories/jobs.js'),
    });
    const violations = await violationsIn(root);
    expect(rulesBroken(violations)).toEqual(['repositories-not-up', 'transport-not-below-services']);
    const from = violations.map((violation) => violation.from).sort();
    expect(from).toEqual(['src/http/meta-hooks.ts', 'src/repositories/events.ts']);
  });

  it("hold for the server's own sources", async () => {
    expect(await violationsIn(API_DIR)).toEqual([]);
  });
});
