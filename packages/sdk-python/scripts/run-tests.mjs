// Runs the Python suite (`python3 -m unittest`) with a real Convo server for its end-to-end half:
// `convo-server serve` from apps/api/dist on a fresh SQLite file and a free port, the demo account
// seeded (its key in CONVO_API_KEY), a read-only key, a webhook key and a one-request-a-minute
// account for the error tests. Without a server the end-to-end tests are skipped with a warning,
// except under CI=true, where the run fails.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const repoRoot = join(packageDir, '..', '..');
const apiBin = join(repoRoot, 'apps', 'api', 'dist', 'bin.js');
const fakeGraphBin = join(repoRoot, 'apps', 'api', 'dist', 'fake-graph-api.js');
/** The business account and token the fake Graph API lists templates to (tests/test_e2e.py reads them). */
const WABA = '102290129340398';
const WABA_TOKEN = 'python-e2e-token';
const TEMPLATES = [
  {
    name: 'order_shipped',
    language: 'en_US',
    status: 'APPROVED',
    category: 'UTILITY',
    components: [{ type: 'BODY', text: 'Hi {{1}}, order {{2}} is on its way.' }],
  },
  { name: 'spring_sale', language: 'en_US', status: 'PENDING', category: 'MARKETING', components: [] },
];
const python = process.env.PYTHON || 'python3';
const ci = /^(1|true)$/i.test(process.env.CI ?? '');

const freePort = () =>
  new Promise((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
    probe.on('error', reject);
  });

/** Runs a `convo-server` command and returns its one JSON object. */
function operator(env, ...args) {
  const result = spawnSync(process.execPath, [apiBin, ...args, '--json'], { env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`convo-server ${args.join(' ')} failed: ${result.stderr || result.error}`);
  return JSON.parse(result.stdout);
}

async function waitUntilServing(baseUrl, server) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`the server exited with ${server.exitCode}`);
    try {
      const response = await fetch(`${baseUrl}/openapi.json`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the server did not answer within 30 s');
}

/** The fake Graph API (`dist/fake-graph-api.js`) on a free port, holding the business account's templates. */
async function startFakeGraph() {
  const port = await freePort();
  const fake = spawn(process.execPath, [fakeGraphBin, '--port', String(port)], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const body = JSON.stringify({ business_account_id: WABA, access_token: WABA_TOKEN, templates: TEMPLATES });
      const response = await fetch(`${url}/_fake/templates`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      });
      if (response.ok) return { url, stop: () => fake.kill('SIGTERM') };
    } catch {
      // not listening yet
    }
    if (fake.exitCode !== null || Date.now() > deadline) throw new Error('the fake Graph API did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function startServer() {
  if (!existsSync(apiBin)) throw new Error(`${apiBin} is missing: build @convo/api first`);
  const dir = mkdtempSync(join(tmpdir(), 'convo-sdk-python-'));
  const graph = await startFakeGraph();
  const port = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: `file:${join(dir, 'convo.db')}`,
    HOST: '127.0.0.1',
    PORT: String(port),
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    CONVO_WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s',
    CONVO_GRAPH_API_URL: graph.url,
  };
  delete env.CONVO_PUBLIC_URL;
  const demo = operator(env, 'seed', '--demo');
  const readOnly = operator(env, 'keys', 'create', '--account', demo.account.id, '--type', 'read_only');
  const webhook = operator(env, 'keys', 'create', '--account', demo.account.id, '--type', 'webhook');
  const limited = operator(env, 'accounts', 'create', '--name', 'Rate limited', '--plan', 'enterprise', '--rpm', '1');
  const limitedKey = operator(env, 'keys', 'create', '--account', limited.id, '--type', 'full_access');
  const server = spawn(process.execPath, [apiBin, 'serve'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const baseUrl = `http://127.0.0.1:${port}/v1`;
  const stop = () => {
    server.kill('SIGTERM');
    graph.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitUntilServing(baseUrl, server);
  } catch (error) {
    stop();
    throw error;
  }
  return {
    env: {
      CONVO_E2E: '1',
      CONVO_BASE_URL: baseUrl,
      CONVO_API_KEY: demo.key.key,
      CONVO_TEST_READ_ONLY_KEY: readOnly.key,
      CONVO_TEST_WEBHOOK_SECRET: webhook.key,
      CONVO_TEST_LIMITED_KEY: limitedKey.key,
      CONVO_TEST_WABA: WABA,
      CONVO_TEST_WABA_TOKEN: WABA_TOKEN,
      // The event stream's restart test starts a second server of its own on this database.
      CONVO_TEST_DATABASE_URL: env.DATABASE_URL,
    },
    stop,
  };
}

let server;
try {
  server = await startServer();
} catch (error) {
  const message = `sdk-python: cannot start the Convo server for the end-to-end tests: ${error instanceof Error ? error.message : String(error)}`;
  if (ci) {
    console.error(`${message} (CI=true: failing)`);
    process.exit(1);
  }
  console.warn(`${message}; they are skipped`);
}

const env = { ...process.env, ...(server?.env ?? {}), PYTHONDONTWRITEBYTECODE: '1' };
if (!server) for (const name of ['CONVO_E2E', 'CONVO_BASE_URL', 'CONVO_API_KEY']) delete env[name];
const child = spawn(python, ['-m', 'unittest', 'discover', '-s', 'tests', '-t', '.', ...process.argv.slice(2)], {
  cwd: packageDir,
  env,
  stdio: 'inherit',
});
const stop = () => server?.stop();
process.on('SIGINT', () => child.kill('SIGINT'));
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, signal) => {
  stop();
  process.exit(code ?? (signal ? 1 : 0));
});
