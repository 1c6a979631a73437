import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CONTRACT_VERSION, ConversationList } from '@convo/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../db/database.js';
import { ApiError } from '../errors.js';
import { accountsService } from '../services/accounts.js';
import { demoKeyPath } from './demo-key-file.js';
import { BIN, ensureBuilt } from '../testing/built-bin.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../testing/databases.js';

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A scratch working directory, so that nothing the command writes lands in the repository. */
const WORK_DIR = mkdtempSync(join(tmpdir(), 'convo-cli-'));

function cliEnv(databaseUrl: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, ...extra };
}

function runCli(databaseUrl: string, args: string[]): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: WORK_DIR,
      env: cliEnv(databaseUrl),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
  });
}

/** Asserts success and that stdout is exactly one JSON object (nothing before or after it). */
function jsonObjectOf(result: CliResult): Record<string, any> {
  expect(result.code, result.stderr).toBe(0);
  let value: unknown;
  try {
    value = JSON.parse(result.stdout);
  } catch {
    throw new Error(`stdout is not one JSON value:\n${result.stdout}`);
  }
  expect(value !== null && typeof value === 'object' && !Array.isArray(value), result.stdout).toBe(true);
  return value as Record<string, any>;
}

function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      if (!address || typeof address === 'string') return reject(new Error('no port'));
      probe.close(() => resolvePromise(address.port));
    });
  });
}

const STANDARD_BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

const dialects: ('sqlite' | 'postgres')[] = (await postgresAvailable()) ? ['sqlite', 'postgres'] : ['sqlite'];

beforeAll(() => {
  ensureBuilt();
}, 120_000);

afterAll(() => {
  rmSync(WORK_DIR, { recursive: true, force: true });
});

describe.each(dialects)('convo-server operator command [%s]', (dialect) => {
  let database: TestDatabase;
  let url = '';
  const servers: ChildProcess[] = [];
  const cli = (...args: string[]) => runCli(url, args);

  /** Checks a key against the database the way the server does. */
  async function authenticates(key: string): Promise<boolean> {
    const handle = openDatabase(url);
    try {
      await accountsService.authenticate({ database: handle }, `Bearer ${key}`);
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.code === 'unauthorized') return false;
      throw error;
    } finally {
      await handle.destroy();
    }
  }

  /** The id of a key, as the server finds it. */
  async function keyIdOf(key: string): Promise<string> {
    const handle = openDatabase(url);
    try {
      return (await accountsService.authenticate({ database: handle }, `Bearer ${key}`)).key.id;
    } finally {
      await handle.destroy();
    }
  }

  /** What each served process wrote to stderr so far. */
  const stderrOf = new Map<ChildProcess, () => string>();

  /** Starts `serve` on a free port and waits until it answers. */
  async function serve(): Promise<string> {
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, 'serve'], {
      cwd: WORK_DIR,
      env: cliEnv(url, { PORT: String(port), HOST: '127.0.0.1' }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    servers.push(child);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    stderrOf.set(child, () => stderr);
    const base = `http://127.0.0.1:${port}`;
    await vi.waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}: ${stderr}`);
        expect((await fetch(`${base}/v1/openapi.json`)).ok, `serve did not start: ${stderr}`).toBe(true);
      },
      { timeout: 20_000, interval: 100 },
    );
    return `${base}/v1`;
  }

  beforeAll(async () => {
    if (dialect === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), 'convo-cli-db-'));
      database = {
        dialect,
        url: `file:${join(dir, 'x.db')}`,
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    } else {
      database = await createTestDatabase('postgres');
    }
    url = database.url;
  });

  afterAll(async () => {
    await Promise.all(
      servers.map(
        (child) =>
          new Promise<void>((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            // A bound on a stuck child, not a wait: the exit event ends it.
            const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
            child.once('exit', () => {
              clearTimeout(timer);
              done();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
    await database?.drop();
  });

  let accountId = '';
  const created: { id: string; key: string; type: string }[] = [];

  it('accounts create --json prints exactly one JSON object: the account', async () => {
    const account = jsonObjectOf(await cli('accounts', 'create', '--name', 'Acme', '--plan', 'starter', '--json'));
    expect(account.id).toMatch(/^acct_[0-9A-Z]{26}$/);
    expect(account).toMatchObject({ name: 'Acme', plan: 'starter' });
    accountId = account.id;
  });

  it.each([
    ['full_access', /^convo_sk_/],
    ['read_only', /^convo_rk_/],
  ] as const)(
    'keys create --type %s --json prints exactly one JSON object with the key value',
    async (type, prefix) => {
      const key = jsonObjectOf(await cli('keys', 'create', '--account', accountId, '--type', type, '--json'));
      expect(key.id).toMatch(/^key_[0-9A-Z]{26}$/);
      expect(key.key).toMatch(prefix);
      expect(key.key.length).toBeGreaterThanOrEqual(40);
      expect(key).toMatchObject({ type, account_id: accountId });
      expect(await authenticates(key.key)).toBe(true);
      created.push({ id: key.id, key: key.key, type });
    },
  );

  it('keys create --type webhook prints a Standard Webhooks secret: whsec_ and base64 of at least 24 bytes', async () => {
    const key = jsonObjectOf(await cli('keys', 'create', '--account', accountId, '--type', 'webhook', '--json'));
    expect(key.id).toMatch(/^key_/);
    expect(key).toMatchObject({ type: 'webhook', account_id: accountId });
    expect(key.key).toMatch(/^whsec_/);
    const encoded = (key.key as string).slice('whsec_'.length);
    expect(encoded).toMatch(STANDARD_BASE64);
    const bytes = Buffer.from(encoded, 'base64');
    expect(bytes.length).toBeGreaterThanOrEqual(24);
    expect(bytes.toString('base64')).toBe(encoded);
    created.push({ id: key.id, key: key.key, type: 'webhook' });
  });

  it('two keys are never the same', () => {
    expect(new Set(created.map((k) => k.key)).size).toBe(created.length);
    expect(new Set(created.map((k) => k.id)).size).toBe(created.length);
  });

  it('keys list --json lists the keys but never their values', async () => {
    const result = await cli('keys', 'list', '--account', accountId, '--json');
    expect(result.code, result.stderr).toBe(0);
    const list = JSON.parse(result.stdout) as Record<string, unknown>[];
    expect(Array.isArray(list)).toBe(true);
    expect(list.map((k) => k.id).sort()).toEqual(created.map((k) => k.id).sort());
    for (const { key } of created) {
      expect(result.stdout).not.toContain(key);
      // Not even the random part without its prefix (a redacted form shows at most 4 characters at each end).
      const secret = key.replace(/^(convo_sk_|convo_rk_|whsec_)/, '');
      expect(result.stdout).not.toContain(secret.slice(4, -4));
    }
    for (const entry of list) {
      expect(entry).not.toHaveProperty('key');
      expect(entry).not.toHaveProperty('key_hash');
      expect(entry).not.toHaveProperty('signing_secret');
      expect(entry.account_id).toBe(accountId);
      expect(entry.revoked_at).toBeNull();
    }
    // Without --json too.
    const text = await cli('keys', 'list', '--account', accountId);
    expect(text.code, text.stderr).toBe(0);
    for (const { id, key } of created) {
      expect(text.stdout).toContain(id);
      expect(text.stdout).not.toContain(key);
    }
  });

  it('keys revoke KEY_ID: the key stops authenticating, the others keep working', async () => {
    const [full, readOnly] = created;
    if (!full || !readOnly) throw new Error('keys were not created');
    expect(await authenticates(full.key)).toBe(true);
    const result = await cli('keys', 'revoke', full.id);
    expect(result.code, result.stderr).toBe(0);
    expect(await authenticates(full.key)).toBe(false);
    expect(await authenticates(readOnly.key)).toBe(true);

    const list = JSON.parse((await cli('keys', 'list', '--account', accountId, '--json')).stdout) as {
      id: string;
      revoked_at: string | null;
    }[];
    expect(list.find((k) => k.id === full.id)?.revoked_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(list.find((k) => k.id === readOnly.id)?.revoked_at).toBeNull();

    // Revoking again changes nothing and does not bring it back.
    expect((await cli('keys', 'revoke', full.id)).code).toBe(0);
    expect(await authenticates(full.key)).toBe(false);
  });

  it('an enterprise account needs --rpm', async () => {
    const without = await cli('accounts', 'create', '--name', 'Big Co', '--plan', 'enterprise', '--json');
    expect(without.code).not.toBe(0);
    expect(without.code).not.toBeNull();
    expect(without.stdout).toBe('');
    expect(without.stderr).toMatch(/rpm/);

    const withRpm = jsonObjectOf(
      await cli('accounts', 'create', '--name', 'Big Co', '--plan', 'enterprise', '--rpm', '5000', '--json'),
    );
    expect(withRpm).toMatchObject({ plan: 'enterprise', rate_limit_rpm: 5000 });
    expect(withRpm.id).toMatch(/^acct_/);
  });

  it.each([
    [['accounts', 'create', '--name', 'Acme', '--plan', 'platinum', '--json']],
    [['accounts', 'create', '--name', 'Acme', '--json']],
    [['accounts', 'create', '--plan', 'free', '--json']],
    [['accounts', 'create', '--name', 'Acme', '--plan', 'enterprise', '--rpm', '0', '--json']],
    [['accounts', 'create', '--name', 'Acme', '--plan', 'enterprise', '--rpm', 'lots', '--json']],
    [['keys', 'create', '--account', 'acct_nope', '--type', 'full_access', '--json']],
    [['keys', 'create', '--account', 'ACCOUNT', '--type', 'admin', '--json']],
    [['keys', 'revoke', 'key_nope']],
  ])('fails with a non-zero exit: %j', async (args) => {
    const result = await cli(...args.map((a) => (a === 'ACCOUNT' ? accountId : a)));
    expect(result.code, result.stdout).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stderr.length).toBeGreaterThan(0);
    expect(result.stdout).not.toMatch(/"id"/);
  });

  describe('seed --demo and serve', () => {
    let baseUrl = '';
    let firstKey = '';
    let demoAccountId = '';

    const keyIn = (stdout: string) => {
      const match = /\b(convo_sk_[A-Za-z0-9_-]+)/.exec(stdout);
      if (!match?.[1]) throw new Error(`no key in:\n${stdout}`);
      return match[1];
    };
    const accountIn = (stdout: string) => {
      const match = /\b(acct_[0-9A-Z]{26})\b/.exec(stdout);
      if (!match?.[1]) throw new Error(`no account id in:\n${stdout}`);
      return match[1];
    };

    it('prints a key that works against the served API, with conversations on every platform in every status', async () => {
      const result = await cli('seed', '--demo');
      expect(result.code, result.stderr).toBe(0);
      firstKey = keyIn(result.stdout);
      demoAccountId = accountIn(result.stdout);
      expect(demoAccountId).not.toBe(accountId);

      baseUrl = await serve();
      const res = await fetch(`${baseUrl}/conversations?limit=100`, {
        headers: { authorization: `Bearer ${firstKey}` },
      });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      const list = ConversationList.parse(JSON.parse(text));
      expect(list.total).toBeGreaterThan(0);
      expect(list.data.length).toBe(list.total);
      expect(new Set(list.data.map((c) => c.platform))).toEqual(new Set(['whatsapp', 'facebook', 'instagram']));
      expect(new Set(list.data.map((c) => c.status))).toEqual(new Set(['active', 'resolved', 'archived']));
      expect(list.data.some((c) => c.message_count > 0)).toBe(true);
    }, 60_000);

    it('seed --demo again reuses the account and prints the same key, kept for its owner only; without it, a new key', async () => {
      const before = ConversationList.parse(
        await (
          await fetch(`${baseUrl}/conversations?limit=100`, { headers: { authorization: `Bearer ${firstKey}` } })
        ).json(),
      );
      const keyFile = resolve(WORK_DIR, demoKeyPath(url));
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      const result = await cli('seed', '--demo');
      expect(result.code, result.stderr).toBe(0);
      expect(keyIn(result.stdout)).toBe(firstKey);
      expect(accountIn(result.stdout)).toBe(demoAccountId);
      expect(result.stdout).toContain(`The same as before, kept in ${demoKeyPath(url)} (readable by you only)`);
      const res = await fetch(`${baseUrl}/conversations?limit=100`, {
        headers: { authorization: `Bearer ${firstKey}` },
      });
      expect(res.status).toBe(200);
      // The data is not seeded twice.
      expect(ConversationList.parse(await res.json()).total).toBe(before.total);

      // A key nobody keeps any more is revoked when the next one is made.
      rmSync(keyFile);
      const again = await cli('seed', '--demo');
      const secondKey = keyIn(again.stdout);
      expect(secondKey).not.toBe(firstKey);
      expect(again.stdout).toContain('The demo key printed before is revoked');
      expect(readFileSync(keyFile, 'utf8')).toBe(`${secondKey}\n`);
      expect(
        (await fetch(`${baseUrl}/conversations?limit=1`, { headers: { authorization: `Bearer ${firstKey}` } })).status,
      ).toBe(401);
      expect(await authenticates(secondKey)).toBe(true);
      expect(await authenticates(firstKey)).toBe(false);

      // A kept key that was revoked meanwhile is replaced too.
      const revoked = await cli('keys', 'revoke', (await keyIdOf(secondKey)) as string);
      expect(revoked.code, revoked.stderr).toBe(0);
      const third = keyIn((await cli('seed', '--demo')).stdout);
      expect(third).not.toBe(secondKey);
      expect(await authenticates(third)).toBe(true);
    }, 60_000);

    it("prints the console's address and a demo sign-in that works there; the next start's password replaces it", async () => {
      const signInOf = (stdout: string) => {
        const match = /Console: (\S+) \(sign in as (\S+) with password (\S+);/.exec(stdout);
        if (!match) throw new Error(`no console sign-in in:\n${stdout}`);
        return { url: match[1] as string, email: match[2] as string, password: match[3] as string };
      };
      const first = signInOf((await cli('seed', '--demo')).stdout);
      const origin = baseUrl.replace(/\/v1$/, '');
      expect(first.url).toMatch(/^http:\/\/[^/]+\/console\/$/);
      const signIn = (password: string) =>
        fetch(`${origin}/console/trpc/session.signIn`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin, 'x-convo-csrf': '1' },
          body: JSON.stringify({ email: first.email, password }),
        });
      const answer = await signIn(first.password);
      expect(answer.status, await answer.clone().text()).toBe(200);
      expect(
        ((await answer.json()) as { result: { data: { account: { id: string }; role: string } } }).result.data,
      ).toMatchObject({
        account: { id: demoAccountId },
        role: 'owner',
      });
      const second = signInOf((await cli('seed', '--demo')).stdout);
      expect(second.password).not.toBe(first.password);
      expect((await signIn(first.password)).status).toBe(401);
      expect((await signIn(second.password)).status).toBe(200);
    }, 60_000);

    it('users create gives a person a role with a printed password; users reset-password prints a one-time link', async () => {
      const origin = baseUrl.replace(/\/v1$/, '');
      const created = jsonObjectOf(
        await cli(
          'users',
          'create',
          '--email',
          'Ops@Example.com',
          '--account',
          demoAccountId,
          '--role',
          'admin',
          '--json',
        ),
      );
      expect(created).toMatchObject({ email: 'ops@example.com', account_id: demoAccountId, role: 'admin' });
      expect(created.password).toMatch(/^[A-Za-z0-9_-]{16}$/);
      const signIn = (password: string) =>
        fetch(`${origin}/console/trpc/session.signIn`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin, 'x-convo-csrf': '1' },
          body: JSON.stringify({ email: 'ops@example.com', password }),
        });
      expect((await signIn(created.password)).status).toBe(200);
      // Again: the role changes, the password does not, and none is printed.
      const again = jsonObjectOf(
        await cli(
          'users',
          'create',
          '--email',
          'ops@example.com',
          '--account',
          demoAccountId,
          '--role',
          'member',
          '--json',
        ),
      );
      expect(again.password).toBeUndefined();
      expect((await signIn(created.password)).status).toBe(200);
      expect(
        (await cli('users', 'create', '--email', 'not-an-address', '--account', demoAccountId, '--role', 'member'))
          .code,
      ).not.toBe(0);

      const reset = jsonObjectOf(await cli('users', 'reset-password', '--email', 'ops@example.com', '--json'));
      expect(reset.url).toMatch(/^http:\/\/[^/]+\/console\/reset-password\/[A-Za-z0-9_-]{43}$/);
      const token = reset.url.split('/').pop();
      const resetCall = () =>
        fetch(`${origin}/console/trpc/session.resetPassword`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin, 'x-convo-csrf': '1' },
          body: JSON.stringify({ token, new_password: 'a brand new password' }),
        });
      expect((await resetCall()).status).toBe(200);
      expect((await resetCall()).status).toBe(404);
      expect((await signIn(created.password)).status).toBe(401);
      expect((await signIn('a brand new password')).status).toBe(200);
    }, 60_000);

    it("serve names where it is served in its OpenAPI document, with the contract's version", async () => {
      const document = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as {
        servers: { url: string }[];
        info: { version: string };
      };
      expect(document.servers).toEqual([{ url: baseUrl.replace(/\/v1$/, '') }]);
      expect(document.info.version).toBe(CONTRACT_VERSION);
    }, 60_000);

    it('seed --demo --json prints exactly one JSON object with the account and a working key', async () => {
      const out = jsonObjectOf(await cli('seed', '--demo', '--json'));
      expect(out.account?.id).toBe(demoAccountId);
      expect(out.key?.key).toMatch(/^convo_sk_/);
      expect(out.key?.account_id).toBe(demoAccountId);
      const res = await fetch(`${baseUrl}/conversations?limit=1`, {
        headers: { authorization: `Bearer ${out.key.key}` },
      });
      expect(res.status).toBe(200);
    }, 60_000);

    it('serve says so when SIGTERM stops it, and exits cleanly', async () => {
      await serve();
      const child = servers.at(-1) as ChildProcess;
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(stderrOf.get(child)?.()).toContain('convo-server: SIGTERM: stopping');
    }, 60_000);

    it('the served API refuses a key revoked by the operator command on the next request', async () => {
      const key = jsonObjectOf(
        await cli('keys', 'create', '--account', demoAccountId, '--type', 'read_only', '--json'),
      );
      const headers = { authorization: `Bearer ${key.key}` };
      expect((await fetch(`${baseUrl}/contacts?limit=1`, { headers })).status).toBe(200);
      expect((await cli('keys', 'revoke', key.id)).code).toBe(0);
      const res = await fetch(`${baseUrl}/contacts?limit=1`, { headers });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }, 60_000);
  });
});
