import { Contact, EventList, Message } from '@convo/core';
import { describe, expect, it, vi } from 'vitest';
import { sql } from 'kysely';
import { openDatabase } from '../db/database.js';
import { EVENTS_CHANNEL } from '../db/event-notifications.js';
import { contactsService } from '../services/contacts.js';
import { EventFeed, MAX_STREAMS_PER_ACCOUNT } from '../services/event-stream.js';
import { type OpenStream, openEventStream } from '../testing/event-stream-client.js';
import {
  ACTIVE_DIALECTS,
  describeEachDialect,
  expectBody,
  expectError,
  startTestServer,
  testSettings,
} from '../testing/harness.js';

describeEachDialect('the event stream', (server) => {
  let seq = 0;
  const phone = () => `+4420${String(8_100_000 + seq++).padStart(8, '0')}`;
  // Streams left open end when the server closes.
  const opened: OpenStream[] = [];

  const open = async (query = '', options: { key?: string; headers?: Record<string, string> } = {}) => {
    const stream = await openEventStream(`${server().baseUrl}/events/stream${query}`, {
      authorization: `Bearer ${options.key ?? server().keys.full}`,
      ...options.headers,
    });
    opened.push(stream);
    return stream;
  };
  /** The stream is following once its first comment came: what is committed after that reaches it. */
  const following = async (query = '', options: { key?: string; headers?: Record<string, string> } = {}) => {
    const stream = await open(query, options);
    expect(stream.response.status).toBe(200);
    expect(await stream.next()).toMatchObject({ comment: 'stream open' });
    return stream;
  };
  const createContact = async (key = server().keys.full) =>
    expectBody(await server().request('POST', '/contacts', { key, body: { phone: phone() } }), 201, Contact);
  const inbound = async () =>
    expectBody(
      await server().request('POST', '/sandbox/inbound', {
        body: { platform: 'whatsapp', from: { phone: phone() }, content: 'Is my order on its way?' },
      }),
      201,
      Message,
    );
  const listed = async () =>
    expectBody(await server().request('GET', '/events', { query: { limit: 100 } }), 200, EventList).data;

  it('reads for nobody, and fails on nothing, when the last stream ends while its first read is under way', async () => {
    const errors: unknown[] = [];
    const logger = { warn: () => {}, error: (obj: object) => void errors.push(obj) };
    const feed = new EventFeed({ database: server().database, settings: server().settings }, logger);
    await createContact();
    // follow() starts the account's read, whose first query is still under way when the stream ends here.
    (await feed.follow(server().accountId, {})).end();
    await feed.close();
    expect(errors).toEqual([]);
  });

  it('sends each new event as id, event and data, as GET /v1/events lists it, oldest first', async () => {
    const before = (await listed())[0];
    const stream = await open();
    // The id it starts after, so that a client that drops before the first event misses none.
    expect(await stream.next()).toEqual({ id: before?.id, comment: 'stream open' });
    expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(stream.response.headers.get('x-request-id')).toBeTruthy();
    expect(stream.response.headers.get('x-ratelimit-limit')).toBeTruthy();
    const contact = await createContact();
    const message = await inbound();
    const frames = [
      await stream.nextEvent(),
      await stream.nextEvent(),
      await stream.nextEvent(),
      await stream.nextEvent(),
    ];
    const newest = (await listed()).slice(0, 4).reverse();
    expect(frames).toEqual(newest.map((event) => ({ id: event.id, event: event.type, data: JSON.stringify(event) })));
    expect(frames.map((frame) => frame.event)).toEqual([
      'contact.created',
      'contact.created',
      'conversation.created',
      'message.received',
    ]);
    expect(JSON.parse(frames[0]?.data as string).data.id).toBe(contact.id);
    expect(JSON.parse(frames[3]?.data as string).data.id).toBe(message.id);
  });

  it('catches up after starting_after, then goes on; Last-Event-ID wins over it', async () => {
    const first = await createContact();
    await createContact();
    await createContact();
    const [third, second, firstEvent] = (await listed()).slice(0, 3);
    expect(firstEvent?.data).toMatchObject({ id: first.id });

    const fromFirst = await following(`?starting_after=${firstEvent?.id}`);
    expect((await fromFirst.nextEvent()).id).toBe(second?.id);
    expect((await fromFirst.nextEvent()).id).toBe(third?.id);
    const later = await createContact();
    expect(JSON.parse((await fromFirst.nextEvent()).data).data.id).toBe(later.id);

    const resumed = await open(`?starting_after=${firstEvent?.id}`, {
      headers: { 'last-event-id': second?.id as string },
    });
    expect(await resumed.next()).toEqual({ id: second?.id, comment: 'stream open' });
    expect((await resumed.nextEvent()).id).toBe(third?.id);
    await fromFirst.close();
    await resumed.close();
  });

  it('sends only the types asked for, comma-separated', async () => {
    const stream = await following('?type=conversation.created,message.received');
    await createContact();
    const message = await inbound();
    expect((await stream.nextEvent()).event).toBe('conversation.created');
    const received = await stream.nextEvent();
    expect(received.event).toBe('message.received');
    expect(JSON.parse(received.data).data.id).toBe(message.id);
    await stream.close();
  });

  it('sends every event of the account, whichever process recorded it, and none of another account', async () => {
    const stream = await following();
    await createContact(server().keys.otherFull);
    // Another process's view of the database: a second connection (pool) that this server never uses.
    const elsewhere = openDatabase(server().databaseUrl);
    try {
      const contact = await contactsService.create(
        { database: elsewhere, accountId: server().accountId, settings: server().settings },
        { phone: phone() },
      );
      const frame = await stream.nextEvent();
      expect(JSON.parse(frame.data)).toMatchObject({ type: 'contact.created', data: { id: contact.id } });
    } finally {
      await elsewhere.destroy();
    }
    await stream.close();
  });

  it('answers HEAD with the headers alone, holding no stream', async () => {
    for (let i = 0; i <= MAX_STREAMS_PER_ACCOUNT; i++) {
      const head = await server().request('HEAD', '/events/stream', { key: server().keys.otherFull });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      expect(head.text).toBe('');
    }
  });

  it('refuses a bad type, a long Last-Event-ID and an unknown event, as the contract says', async () => {
    expectError(
      await server().request('GET', '/events/stream', { query: { type: 'contact.created,nope' } }),
      400,
      'bad_request',
      { field: 'type', constraint: 'enum' },
    );
    expectError(
      await server().request('GET', '/events/stream', { headers: { 'last-event-id': 'x'.repeat(256) } }),
      400,
      'bad_request',
      { field: 'Last-Event-ID', constraint: 'max_length' },
    );
    expectError(
      await server().request('GET', '/events/stream', { query: { starting_after: 'evt_nope' } }),
      404,
      'not_found',
    );
  });

  it(`keeps at most ${MAX_STREAMS_PER_ACCOUNT} streams of an account open: the next is 429 until one closes`, async () => {
    await Promise.all(opened.splice(0).map((stream) => stream.close()));
    const key = server().keys.readOnly;
    const streams: OpenStream[] = [];
    // Those the earlier tests closed are gone once their connections closed.
    await vi.waitFor(async () => {
      const stream = await open('', { key });
      expect(stream.response.status).toBe(200);
      streams.push(stream);
      expect(streams.length).toBe(MAX_STREAMS_PER_ACCOUNT);
    });
    const refused = await server().request('GET', '/events/stream', { key });
    expectError(refused, 429, 'rate_limited');
    expect(refused.headers.get('retry-after')).toBe('5');
    // Another account has its own room.
    expect((await following('', { key: server().keys.otherFull })).response.status).toBe(200);

    await streams[0]?.close();
    await vi.waitFor(async () => {
      const again = await open('', { key });
      expect(again.response.status).toBe(200);
    });
    // A stream nobody reads holds its connection past the server's close: these are closed here.
    await Promise.all(opened.splice(0).map((stream) => stream.close()));
  });
});

describe.each(ACTIVE_DIALECTS)('the event stream over time [%s]', (dialect) => {
  // Behind PgBouncer's transaction mode (the resilience run) no session holds a LISTEN: events come by the sweep.
  const listens = dialect === 'postgres' && process.env.TEST_PGBOUNCER_URL === undefined;
  it.skipIf(!listens)('holds its LISTEN connection only while a stream is open', async () => {
    const server = await startTestServer(dialect);
    const listeners = async () => {
      const { rows } = await sql<{ listeners: string }>`
        select count(*) as listeners from pg_stat_activity
        where datname = current_database() and query = ${`LISTEN ${EVENTS_CHANNEL}`}`.execute(server.database.db);
      return Number(rows[0]?.listeners);
    };
    try {
      expect(await listeners()).toBe(0);
      const stream = await openEventStream(`${server.baseUrl}/events/stream`, {
        authorization: `Bearer ${server.keys.full}`,
      });
      expect(await stream.next()).toEqual({ comment: 'stream open' });
      await vi.waitFor(async () => expect(await listeners()).toBe(1));
      await stream.close();
      await vi.waitFor(async () => expect(await listeners()).toBe(0));
    } finally {
      await server.close();
    }
  });

  it('writes a keep-alive comment while nothing happens, and ends every stream when the server closes', async () => {
    const server = await startTestServer(dialect, testSettings({ eventStreamKeepAliveMs: 50 }));
    let closed = false;
    try {
      const stream = await openEventStream(`${server.baseUrl}/events/stream`, {
        authorization: `Bearer ${server.keys.full}`,
      });
      expect(await stream.next()).toEqual({ comment: 'stream open' });
      expect(await stream.next()).toEqual({ comment: 'keep-alive' });
      await server.close();
      closed = true;
      // Keep-alives may still have been on their way; then the end.
      for (let frame = await stream.next(); frame; frame = await stream.next())
        expect(frame.comment).toBe('keep-alive');
    } finally {
      if (!closed) await server.close();
    }
  });
});
