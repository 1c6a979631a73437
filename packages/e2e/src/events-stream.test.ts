import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, jobHandlers } from '@convo/api';
import { EVENT_TYPES } from '@convo/core';
import { Convo, type Event, type EventType, type Message, verifyWebhook } from '@convo/sdk';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type TestServer, startServer } from './server.js';

const BIN = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));
const PYTHON_SDK = fileURLToPath(new URL('../../sdk-python', import.meta.url));

/** Runs a program with `input` on its stdin; resolves with what it printed, rejects when it fails. */
function run(file: string, args: string[], options: { env: Record<string, string> }, input: string) {
  return new Promise<{ stdout: string }>((resolve, reject) => {
    const child = execFile(file, args, options, (error, stdout, stderr) =>
      error ? reject(Object.assign(error, { stderr })) : resolve({ stdout }),
    );
    child.stdin?.end(input);
  });
}

/** `GET /v1/events/stream` through the SDK's events.stream, `convo events stream` and `convo listen`. */
describe('live events against a real server', () => {
  let server: TestServer;
  let convo: Convo;
  let home: string;
  let seq = 0;
  const children: ChildProcess[] = [];
  const newContact = () => convo.contacts.create({ phone: `+1415${String(5_550_000 + seq++)}` });
  const newestEventId = async () => {
    await newContact();
    return (await convo.events.list({ limit: 1 })).data[0]?.id as string;
  };

  beforeAll(async () => {
    server = await startServer();
    convo = new Convo({ apiKey: server.keys.full, baseUrl: server.baseUrl, maxRetries: 0 });
    home = mkdtempSync(join(tmpdir(), 'convo-stream-'));
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await server.close();
    rmSync(home, { recursive: true, force: true });
  });

  /** Collects the events of an SDK stream until `stop`. */
  function follow(params: Parameters<Convo['events']['stream']>[0]) {
    const controller = new AbortController();
    const seen: Event[] = [];
    const done = (async () => {
      for await (const event of convo.events.stream(params, { signal: controller.signal })) seen.push(event);
    })();
    // A failure of the stream shows in `stop`, and fails the waits before it by never filling `seen`.
    done.catch(() => {});
    return {
      seen,
      async stop() {
        controller.abort();
        await done;
      },
    };
  }

  /** Starts `convo …` and collects its output; it runs until killed. */
  function start(args: string[]) {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: home,
        XDG_CONFIG_HOME: join(home, 'config'),
        CONVO_API_KEY: server.keys.full,
        CONVO_BASE_URL: server.baseUrl,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const output = { stdout: '', stderr: '' };
    child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    return {
      output,
      lines: () => output.stdout.split('\n').filter(Boolean),
      async interrupt() {
        child.kill('SIGINT');
        return exited;
      },
    };
  }

  /**
   * A WhatsApp channel the fake Graph API holds (it reports each send delivered), and a worker that
   * processes its webhooks and sends: the path of a real conversation, whose events the server streams.
   */
  async function whatsAppChannelWithWorker(externalId: string) {
    const worker = new Worker({
      database: server.database,
      handlers: jobHandlers({ database: server.database, settings: server.settings }),
      pollIntervalMs: 20,
    });
    await worker.start();
    const credentials = { accessToken: `token-${externalId}`, appSecret: `secret-${externalId}` };
    const channel = await convo.channels.create({
      platform: 'whatsapp',
      external_id: externalId,
      access_token: credentials.accessToken,
      app_secret: credentials.appSecret,
    });
    server.graph.connect({
      platform: 'whatsapp',
      externalId,
      ...credentials,
      webhookUrl: `${new URL(server.baseUrl).origin}/hooks/meta/${channel.id}`,
      statusesAfterSend: ['delivered'],
    });
    return { channel, worker };
  }

  /** Starts `convo listen` and waits for the signing secret it prints. */
  async function startListen(args: string[]) {
    const listen = start(['listen', ...args]);
    await vi.waitFor(() => expect(listen.output.stdout).toMatch(/whsec_\S+/), { timeout: 10_000 });
    return { listen, secret: /whsec_\S+/.exec(listen.output.stdout)?.[0] as string };
  }

  /** The account's events after `after` of these types, oldest first, as `GET /v1/events` lists them. */
  async function listedAfter(after: string, types: readonly EventType[]): Promise<string[]> {
    const ids: string[] = [];
    for await (const event of convo.events.since(after)) if (types.includes(event.type)) ids.push(event.id);
    return ids;
  }

  it('the SDK sees a sandbox inbound message and a message sent by POST /v1/messages, each event once, in order', async () => {
    const after = await newestEventId();
    const types = ['message.received', 'message.updated'] as const;
    const follower = follow({ type: types, starting_after: after });
    const inbound = await convo.sandbox.inbound({
      platform: 'instagram',
      from: { phone: '+5511987650001' },
      content: 'Oi!',
    });

    // A customer writes on a WhatsApp channel; the answer of POST /v1/messages is sent by a worker,
    // whose events the server streams too.
    const { channel, worker } = await whatsAppChannelWithWorker('106540352240001');
    try {
      expect(
        (await server.graph.sendInbound(channel.external_id, { from: '5511987650002', name: 'Bia', text: 'Hello?' }))
          .status,
      ).toBe(200);
      await vi.waitFor(() => expect(follower.seen).toHaveLength(2), { timeout: 10_000 });
      const onChannel = follower.seen[1]?.data as Message;
      const sent = await convo.messages.send({ conversation_id: onChannel.conversation_id, content: 'Olá Bia!' });
      await vi.waitFor(
        () =>
          expect(
            follower.seen
              .slice(2)
              .map((event) => [event.type, (event.data as Message).id, (event.data as Message).status]),
          ).toEqual([
            ['message.updated', sent.id, 'sent'],
            ['message.updated', sent.id, 'delivered'],
          ]),
        { timeout: 15_000 },
      );
    } finally {
      await worker.stop();
    }
    await follower.stop();
    expect(follower.seen[0]).toMatchObject({ type: 'message.received', data: inbound });
    expect(follower.seen.map((event) => event.id)).toEqual(await listedAfter(after, types));
  }, 60_000);

  it('`convo listen` forwards each event once, in order, signed so that standardwebhooks and verifyWebhook accept it', async () => {
    const verified: Event[] = [];
    const refused: string[] = [];
    const deliveries: { body: string; headers: Record<string, string> }[] = [];
    let secret = '';
    const handler = createServer(async (request, response) => {
      let body = '';
      for await (const chunk of request) body += chunk;
      const headers = request.headers as Record<string, string>;
      try {
        const byLibrary = new Webhook(secret).verify(body, headers);
        const bySdk = await verifyWebhook(body, headers, secret);
        expect(bySdk).toEqual(byLibrary);
        expect(headers['webhook-id']).toBe(bySdk.id);
        verified.push(bySdk);
        deliveries.push({ body, headers });
        response.writeHead(200).end('ok');
      } catch (error) {
        refused.push(String(error));
        response.writeHead(400).end();
      }
    });
    await new Promise<void>((resolve) => handler.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(handler.address() as AddressInfo).port}/webhooks`;

    const { listen, secret: printed } = await startListen(['--forward-to', url, '--events', 'contact.created']);
    secret = printed;
    // The stream starts from now once it opens: contacts are made until the first one comes through.
    const made: string[] = [];
    await vi.waitFor(
      async () => {
        made.push((await newContact()).id);
        expect(verified.length).toBeGreaterThan(0);
      },
      { timeout: 10_000, interval: 50 },
    );
    const first = made.indexOf((verified[0] as Event).data.id as string);
    expect(first).toBeGreaterThanOrEqual(0);
    for (let i = 0; i < 3; i++) made.push((await newContact()).id);
    await vi.waitFor(
      () => expect(verified.map((event) => (event.data as { id: string }).id)).toEqual(made.slice(first)),
      { timeout: 10_000 },
    );
    expect(refused).toEqual([]);
    // The Python library's verify_webhook accepts the same deliveries.
    const { stdout } = await run(
      'python3',
      [
        '-c',
        'import convo, json, sys\n' +
          'todo = json.load(sys.stdin)\n' +
          'print(json.dumps([convo.verify_webhook(d["body"].encode(), d["headers"], todo["secret"])["id"] for d in todo["deliveries"]]))',
      ],
      { env: { PATH: process.env.PATH ?? '', PYTHONPATH: PYTHON_SDK } },
      JSON.stringify({ secret, deliveries }),
    );
    expect(JSON.parse(stdout)).toEqual(verified.map((event) => event.id));
    await vi.waitFor(
      () => expect(listen.lines().filter((line) => line.includes('→ 200'))).toHaveLength(verified.length),
      { timeout: 10_000 },
    );
    const deliveryLines = listen.lines().slice(2);
    expect(deliveryLines.map((line) => line.split('  ').slice(1, 3))).toEqual(
      verified.map((event) => [event.type, event.id]),
    );

    // The handler goes away: the event gets an error line, and listening goes on.
    await new Promise<void>((resolve) => {
      handler.close(() => resolve());
      handler.closeAllConnections();
    });
    const lost = await newContact();
    await vi.waitFor(
      () => expect(listen.lines().at(-1)).toMatch(/contact\.created {2}evt_\S+ {2}→ error: .*ECONNREFUSED/),
      { timeout: 10_000 },
    );
    expect(verified.map((event) => (event.data as { id: string }).id)).not.toContain(lost.id);
    expect(await listen.interrupt()).toBe(0);
  }, 60_000);

  it('`convo listen` and a handler as the SDK README writes it get every event of a conversation: inbound, reply, resolved', async () => {
    const received: Event[] = [];
    let secret = '';
    // The handler of packages/sdk/README.md: the raw body verified, then the event used.
    const handler = createServer(async (request, response) => {
      let rawBody = '';
      for await (const chunk of request) rawBody += chunk;
      try {
        received.push(await verifyWebhook(rawBody, request.headers as Record<string, string>, secret));
        response.writeHead(204).end();
      } catch {
        response.writeHead(400).end();
      }
    });
    await new Promise<void>((resolve) => handler.listen(0, '127.0.0.1', resolve));
    const { listen, secret: printed } = await startListen([
      '--forward-to',
      `http://127.0.0.1:${(handler.address() as AddressInfo).port}/hooks`,
    ]);
    secret = printed;
    // Listening starts from now once the stream opens: contacts are made until one comes through.
    await vi.waitFor(
      async () => {
        await newContact();
        expect(received.length).toBeGreaterThan(0);
      },
      { timeout: 10_000, interval: 50 },
    );
    const after = received.at(-1)?.id as string;

    const { channel, worker } = await whatsAppChannelWithWorker('106540352240002');
    try {
      await server.graph.sendInbound(channel.external_id, { from: '5511987650003', name: 'Caio', text: 'Oi?' });
      const inbound = await vi.waitFor(
        () => {
          const event = received.find((e) => e.type === 'message.received');
          expect(event).toBeDefined();
          return event?.data as Message;
        },
        { timeout: 10_000 },
      );
      const reply = await convo.messages.send({ conversation_id: inbound.conversation_id, content: 'Olá Caio!' });
      await vi.waitFor(
        () =>
          expect(received.some((e) => e.type === 'message.updated' && (e.data as Message).status === 'delivered')).toBe(
            true,
          ),
        { timeout: 15_000 },
      );
      await convo.conversations.update(inbound.conversation_id, { status: 'resolved' });
      await vi.waitFor(() => expect(received.map((e) => e.type)).toContain('conversation.resolved'), {
        timeout: 10_000,
      });
      // Every event of the account since listening began, once each, in the log's order.
      const all = (await listedAfter(after, [...EVENT_TYPES])) as string[];
      await vi.waitFor(
        () => expect(received.map((e) => e.id).slice(received.findIndex((e) => e.id === after) + 1)).toEqual(all),
        { timeout: 10_000 },
      );
      expect(
        received.filter((e) => (e.data as Message).id === reply.id).map((e) => (e.data as Message).status),
      ).toEqual(['sent', 'delivered']);
    } finally {
      await worker.stop();
      expect(await listen.interrupt()).toBe(0);
      await new Promise<void>((resolve) => {
        handler.close(() => resolve());
        handler.closeAllConnections();
      });
    }
  }, 60_000);

  it('loses nothing across a server restart: the SDK and `convo events stream` resume after their last event', async () => {
    const after = await newestEventId();
    const follower = follow({ type: 'contact.created', starting_after: after });
    const cli = start(['events', 'stream', '--type', 'contact.created', '--starting-after', after]);
    const made: string[] = [];
    const idsOf = (events: Event[]) => events.map((event) => (event.data as { id: string }).id);
    const cliIds = () => idsOf(cli.lines().map((line) => JSON.parse(line) as Event));
    for (let i = 0; i < 3; i++) made.push((await newContact()).id);
    // The CLI is a process of its own: it starts, then catches up from `--starting-after`.
    await vi.waitFor(
      () => {
        expect(idsOf(follower.seen)).toEqual(made);
        expect(cliIds()).toEqual(made);
      },
      { timeout: 20_000 },
    );

    await server.restart();
    // A connection kept alive from before the restart may fail once: these POSTs retry, with their idempotency keys.
    const writer = new Convo({ apiKey: server.keys.full, baseUrl: server.baseUrl });
    for (let i = 0; i < 3; i++) made.push((await writer.contacts.create({ phone: `+1415${5_560_000 + i}` })).id);
    await vi.waitFor(
      () => {
        expect(idsOf(follower.seen)).toEqual(made);
        expect(cliIds()).toEqual(made);
      },
      { timeout: 20_000 },
    );
    await follower.stop();
    expect(follower.seen.map((event) => event.id)).toEqual(await listedAfter(after, ['contact.created']));
    expect(await cli.interrupt()).toBe(0);
  }, 60_000);
});
