import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestServer, startServer } from './server.js';

const packages = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The workspace's TypeScript compiler, run as a user's project would run its own. */
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const pnpm = process.env.npm_execpath?.includes('pnpm')
  ? [process.execPath, process.env.npm_execpath]
  : ['npx', '-y', 'pnpm@10.34.8'];

/** Packs a workspace package as it would be published (workspace and catalog versions resolved). */
function pack(name: 'core' | 'sdk' | 'cli', into: string): string {
  const [command, ...args] = pnpm as [string, ...string[]];
  execFileSync(command, [...args, 'pack', '--pack-destination', into], { cwd: join(packages, name), stdio: 'pipe' });
  const file = readdirSync(into).find((f) => f.startsWith(`convo-${name}-`) && f.endsWith('.tgz'));
  if (!file) throw new Error(`no tarball for ${name}`);
  return join(into, file);
}

describe('the packed SDK installed into an empty project', () => {
  let server: TestServer;
  let project: string;
  let tarball: string;

  beforeAll(async () => {
    server = await startServer();
    project = mkdtempSync(join(tmpdir(), 'convo-pack-'));
    // The SDK alone: nothing else of the workspace, from no registry but npm's own.
    tarball = pack('sdk', project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'scratch', private: true, dependencies: { '@convo/sdk': `file:${tarball}` } }),
    );
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: project, stdio: 'pipe' });
  });

  it('installs with no dependency of its own', () => {
    expect(readdirSync(join(project, 'node_modules')).filter((entry) => !entry.startsWith('.'))).toEqual(['@convo']);
    expect(readdirSync(join(project, 'node_modules/@convo'))).toEqual(['sdk']);
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules/@convo/sdk/package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(manifest.dependencies ?? {}).toEqual({});
  });

  it('states its packed size in its README, to within a quarter', () => {
    const readme = readFileSync(join(packages, 'sdk/README.md'), 'utf8');
    const stated = /Packed size: about (\d+) kB/.exec(readme)?.[1];
    expect(stated, 'the README says "Packed size: about N kB"').toBeDefined();
    const actual = statSync(tarball).size / 1000;
    expect(Math.abs(Number(stated) - actual) / actual, `packed ${actual.toFixed(0)} kB`).toBeLessThan(0.25);
  });

  it('type-checks the README quick start with tsc --strict', () => {
    const readme = readFileSync(join(packages, 'sdk/README.md'), 'utf8');
    const quickStart = /```js\n([\s\S]*?)```/.exec(readme)?.[1] as string;
    writeFileSync(join(project, 'quick-start.ts'), quickStart);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          skipLibCheck: false,
        },
        files: ['quick-start.ts'],
      }),
    );
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ ...JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')), type: 'module' }),
    );
    try {
      execFileSync(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: project, stdio: 'pipe' });
    } catch (error) {
      throw new Error(`tsc --strict failed:\n${(error as { stdout?: Buffer }).stdout?.toString() ?? String(error)}`);
    } finally {
      writeFileSync(
        join(project, 'package.json'),
        JSON.stringify({ ...JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')), type: undefined }),
      );
    }
  });
  afterAll(async () => {
    await server.close();
    rmSync(project, { recursive: true, force: true });
  });

  // Asynchronous: the server runs in this process and must keep answering while the script runs.
  const run = async (
    file: string,
    source: string,
    env = { CONVO_API_KEY: server.keys.full, CONVO_BASE_URL: server.baseUrl },
  ) => {
    writeFileSync(join(project, file), source);
    const { stdout } = await promisify(execFile)(process.execPath, [file], {
      cwd: project,
      env: { ...process.env, ...env },
    });
    return stdout.trim();
  };

  it('works from ESM', async () => {
    const out = await run(
      'esm.mjs',
      `import { Convo, NotFoundError } from '@convo/sdk';
const convo = new Convo();
const contact = await convo.contacts.create({ phone: '+14155550101', name: 'ESM' });
const missing = await convo.contacts.retrieve('ct_nope').catch((e) => e);
console.log(JSON.stringify({ id: contact.id, notFound: missing instanceof NotFoundError }));`,
    );
    expect(JSON.parse(out)).toMatchObject({ id: expect.stringMatching(/^ct_/), notFound: true });
  });

  it('works from CommonJS', async () => {
    const out = await run(
      'cjs.cjs',
      `const { Convo } = require('@convo/sdk');
new Convo().contacts.list({ limit: 1 }).then((page) => console.log(JSON.stringify({ total: page.total, limit: page.limit })));`,
    );
    expect(JSON.parse(out)).toEqual({ total: expect.any(Number), limit: 1 });
  });

  it('runs the README quick start as written against the demo account, twice in a row', async () => {
    const readme = readFileSync(join(packages, 'sdk/README.md'), 'utf8');
    const quickStart = /```js\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(quickStart).toContain("from '@convo/sdk'");
    const demo = await startServer({ demo: true });
    try {
      const env = { CONVO_API_KEY: demo.keys.full, CONVO_BASE_URL: demo.baseUrl };
      for (let time = 0; time < 2; time++) {
        const out = await run('quick-start.mjs', quickStart as string, env);
        expect(out).toMatch(/^conv_\S+ Ana Souza Olá Ana! Your order has shipped\.$/m);
      }
    } finally {
      await demo.close();
    }
  });
});

describe('the packed READMEs', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'convo-readmes-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // A relative link in a README that npm shows must name a file inside the tarball: `../../README.md` does not exist
  // in an installed package.
  it.each(['sdk', 'cli'] as const)('of %s link only to what the tarball holds', (name) => {
    const tarball = pack(name, dir);
    const files = new Set(
      execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .map((f) => f.replace(/^package\//, '')),
    );
    expect(files.has('README.md'), `${name}'s tarball holds its README`).toBe(true);
    const readme = execFileSync('tar', ['-xzOf', tarball, 'package/README.md'], { encoding: 'utf8' });
    const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);
    for (const target of targets) {
      if (/^(https?:|mailto:|#)/.test(target)) continue;
      const path = target.split('#')[0] as string;
      expect(path.startsWith('..') || path.startsWith('/'), `${name} README links outside the package: ${target}`).toBe(
        false,
      );
      expect(files.has(path.replace(/^\.\//, '')), `${name} README links to a missing file: ${target}`).toBe(true);
    }
  });
});
