import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Event, Convo } from '@convo/sdk';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type TestServer, startServer } from './server.js';

const BIN = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));

/** The SDK's events.since and events.follow, and `convo events tail`, against a real server. */
describe('catching up on events', () => {
  let server: TestServer;
  let convo: Convo;
  let home: string;
  let seq = 0;
  const newContact = () => convo.contacts.create({ phone: `+1312${String(5_550_000 + seq++)}` });

  beforeAll(async () => {
    server = await startServer();
    convo = new Convo({ apiKey: server.keys.full, baseUrl: server.baseUrl, maxRetries: 0 });
    home = mkdtempSync(join(tmpdir(), 'convo-tail-'));
  });
  afterAll(async () => {
    await server.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('events.since yields every event after one, oldest first, across pages', async () => {
    await newContact();
    const [origin] = (await convo.events.list({ limit: 1 })).data;
    const made = [];
    for (let i = 0; i < 105; i++) made.push(await newContact());
    const seen: Event[] = [];
    for await (const event of convo.events.since((origin as Event).id)) seen.push(event);
    expect(seen.map((e) => e.data.id)).toEqual(made.map((c) => c.id));
    const typed: Event[] = [];
    for await (const event of convo.events.since((origin as Event).id, { type: 'contact.updated' })) typed.push(event);
    expect(typed).toEqual([]);
  }, 60_000);

  it('events.follow yields new events as they come, of one type when asked, until aborted', async () => {
    const stop = new AbortController();
    const followed: Event[] = [];
    // Follow's first answer is its starting point: the new events come after it.
    let answered!: () => void;
    const startingPoint = new Promise<void>((resolve) => (answered = resolve));
    const follower = new Convo({
      apiKey: server.keys.full,
      baseUrl: server.baseUrl,
      maxRetries: 0,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        answered();
        return response;
      },
    });
    const following = (async () => {
      for await (const event of follower.events.follow({
        type: 'contact.created',
        intervalMs: 50,
        signal: stop.signal,
      })) {
        followed.push(event);
        if (followed.length === 3) stop.abort();
      }
    })();
    await startingPoint;
    const a = await newContact();
    await convo.contacts.update(a.id, { name: 'Not followed' });
    const b = await newContact();
    const c = await newContact();
    await following;
    expect(followed.map((e) => [e.type, e.data.id])).toEqual([
      ['contact.created', a.id],
      ['contact.created', b.id],
      ['contact.created', c.id],
    ]);
  }, 30_000);

  it('`convo events tail` prints the events after one as JSON Lines, and follows new ones until interrupted', async () => {
    const [origin] = (await convo.events.list({ limit: 1 })).data;
    const first = await newContact();
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: home,
      XDG_CONFIG_HOME: join(home, 'config'),
      CONVO_API_KEY: server.keys.full,
      CONVO_BASE_URL: server.baseUrl,
    };

    const once = await run(['events', 'tail', '--after', (origin as Event).id, '--no-follow'], env);
    expect(once.code, once.stderr).toBe(0);
    expect(lines(once.stdout).map((e) => e.data.id)).toEqual([first.id]);

    const child = spawn(
      process.execPath,
      [BIN, 'events', 'tail', '--after', (origin as Event).id, '--interval', '0.1'],
      {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await vi.waitFor(() => expect(lines(stdout)).toHaveLength(1), { timeout: 10_000, interval: 25 });
    const second = await newContact();
    await vi.waitFor(() => expect(lines(stdout)).toHaveLength(2), { timeout: 10_000, interval: 25 });
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(lines(stdout).map((e) => e.data.id)).toEqual([first.id, second.id]);
  }, 30_000);
});

const lines = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Event);

function run(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
