import {
  CONVERSATION_TRANSITIONS,
  Channel,
  Contact,
  Conversation,
  type ConversationStatus,
  type EventType,
  ORDER_TRANSITIONS,
  Order,
  type OrderStatus,
  WebhookEndpoint,
} from '@convo/core';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import { lockedForUpdate } from '../db/dialect.js';
import { ReferenceGone, runTransaction } from '../db/transactions.js';
import { type ChannelRow, channelsRepository } from '../repositories/channels.js';
import { TenantScope } from '../repositories/tenant.js';
import type { Arrival } from '../channels/meta-webhooks.js';
import { receiveManyOnChannel, receiveOnChannel } from '../services/channel-inbound.js';
import { newWamid } from '../testing/meta-payloads.js';
import {
  type TestResponse,
  type TestServer,
  describeEachDialect,
  expectBody,
  expectExactError,
} from '../testing/harness.js';

/** Rounds of each race: a race lost once in a few rounds is still caught. */
const ROUNDS = 5;

/** A deterministic PRNG (mulberry32), so that a failing concurrent phase can be replayed by its seed. */
function randomFrom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The contract's 404 for a contact that is gone, and nothing else. */
function expectContactGone(response: TestResponse, contactId: string): void {
  expectExactError(response, 404, 'not_found');
  expect(response.body.error.message).toBe(`No such contact: ${contactId}`);
}

/** The events of the account of these types, as stored, in the order of their conversation's sequence. */
async function eventsOf(server: TestServer, types: EventType[], conversationId?: string) {
  let query = server.database.db
    .selectFrom('events')
    .select(['id', 'type', 'conversation_id', 'sequence', 'data'])
    .where('account_id', '=', server.accountId)
    .where('type', 'in', types);
  if (conversationId !== undefined) query = query.where('conversation_id', '=', conversationId);
  const rows = await query.orderBy('sequence').orderBy('created_at').execute();
  return rows.map((row) => ({ ...row, data: JSON.parse(row.data) as Record<string, unknown> & { id: string } }));
}

/**
 * The conversation's status changes as its events tell them, checked against the contract: each
 * `conversation.updated` is a real transition from the status before it, and each entry into
 * `resolved` emits `conversation.resolved` once, right after its `conversation.updated`.
 */
async function expectEventsTellTransitions(server: TestServer, conversationId: string): Promise<ConversationStatus> {
  const events = await eventsOf(server, ['conversation.updated', 'conversation.resolved'], conversationId);
  let status: ConversationStatus = 'active';
  for (const [index, event] of events.entries()) {
    if (event.type === 'conversation.resolved') {
      const before = events[index - 1];
      expect(before?.type, `conversation.resolved of ${conversationId} follows its change`).toBe(
        'conversation.updated',
      );
      expect(before?.data.status).toBe('resolved');
      continue;
    }
    const next = event.data.status as ConversationStatus;
    expect(CONVERSATION_TRANSITIONS[status], `${conversationId}: ${status} → ${next}`).toContain(next);
    if (next === 'resolved')
      expect(events[index + 1]?.type, `${conversationId} entered resolved without its event`).toBe(
        'conversation.resolved',
      );
    status = next;
  }
  return status;
}

describeEachDialect('concurrent writes', (server) => {
  let phoneSeq = 4_100_000;
  const phone = () => `+1629${phoneSeq++}`;
  const createContact = async () =>
    expectBody(await server().request('POST', '/contacts', { body: { name: 'Racer', phone: phone() } }), 201, Contact);
  const createConversation = async (contactId: string) =>
    expectBody(
      await server().request('POST', '/conversations', { body: { contact_id: contactId, platform: 'whatsapp' } }),
      201,
      Conversation,
    );
  const createEndpoint = async () =>
    expectBody(
      await server().request('POST', '/webhook_endpoints', { body: { url: 'http://127.0.0.1:9/hook', events: ['*'] } }),
      201,
      WebhookEndpoint,
    );
  const items = [{ name: 'Mug', quantity: 1, unit_amount: 900 }];

  it('emits conversation.resolved once when ten PATCHes resolve a conversation at once', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const conversation = await createConversation((await createContact()).id);
      const answers = await Promise.all(
        Array.from({ length: 10 }, () =>
          server().request('PATCH', `/conversations/${conversation.id}`, { body: { status: 'resolved' } }),
        ),
      );
      for (const answer of answers) expect(expectBody(answer, 200, Conversation).status).toBe('resolved');
      const resolved = await eventsOf(server(), ['conversation.resolved'], conversation.id);
      expect(resolved, `round ${round}`).toHaveLength(1);
      expect(await eventsOf(server(), ['conversation.updated'], conversation.id)).toHaveLength(1);
    }
  });

  it('emits one event per transition when PATCHes move a conversation back and forth at once', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const conversation = await createConversation((await createContact()).id);
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, n) =>
          server().request('PATCH', `/conversations/${conversation.id}`, {
            body: { status: n % 2 === 0 ? 'resolved' : 'active' },
          }),
        ),
      );
      for (const answer of answers) expectBody(answer, 200, Conversation);
      const last = await expectEventsTellTransitions(server(), conversation.id);
      expect(
        expectBody(await server().request('GET', `/conversations/${conversation.id}`), 200, Conversation).status,
      ).toBe(last);
    }
  });

  it('answers 404 for orders and conversations of a contact deleted at the same time, and keeps what it accepted', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const contact = await createContact();
      const [deleted, ...answers] = await Promise.all([
        server().request('DELETE', `/contacts/${contact.id}`),
        ...Array.from({ length: 4 }, () =>
          server().request('POST', '/orders', { body: { contact_id: contact.id, currency: 'USD', items } }),
        ),
        ...Array.from({ length: 4 }, () =>
          server().request('POST', '/conversations', { body: { contact_id: contact.id, platform: 'facebook' } }),
        ),
      ]);
      expect(deleted?.status, deleted?.text).toBe(204);
      for (const answer of answers) {
        if (answer.status === 404) {
          expectContactGone(answer, contact.id);
          continue;
        }
        expect(answer.status, answer.text).toBe(201);
        if (String(answer.body.id).startsWith('ord_')) {
          // An order placed before the delete outlives its contact, unlinked.
          const order = expectBody(await server().request('GET', `/orders/${answer.body.id}`), 200, Order);
          expect(order).toEqual({ ...expectBody(answer, 201, Order), contact_id: null, updated_at: order.updated_at });
        } else {
          // A conversation opened before the delete went with its contact.
          expectExactError(await server().request('GET', `/conversations/${answer.body.id}`), 404, 'not_found');
        }
      }
      expectContactGone(await server().request('GET', `/contacts/${contact.id}`), contact.id);
    }
  });

  it('fans an event out only to the endpoints that exist when webhook endpoints are deleted and created meanwhile', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const endpoints = [await createEndpoint(), await createEndpoint()];
      const contact = await createContact();
      const answers = await Promise.all([
        ...endpoints.map((endpoint) => server().request('DELETE', `/webhook_endpoints/${endpoint.id}`)),
        server().request('POST', '/webhook_endpoints', { body: { url: 'http://127.0.0.1:9/other', events: ['*'] } }),
        ...Array.from({ length: 3 }, () => server().request('POST', '/contacts', { body: { phone: phone() } })),
        ...Array.from({ length: 3 }, () =>
          server().request('POST', '/orders', { body: { contact_id: contact.id, currency: 'EUR', items } }),
        ),
        server().request('DELETE', `/contacts/${contact.id}`),
      ]);
      for (const answer of answers) {
        if (answer.status === 404) expectContactGone(answer, contact.id);
        else expect(answer.status, answer.text).toBeLessThan(300);
      }
      const created = answers[2]?.body as WebhookEndpoint;
      expect((await server().request('DELETE', `/webhook_endpoints/${created.id}`)).status).toBe(204);
    }
  });

  it('gives every duplicate of an idempotent order the one answer, 201 or the 404 of a contact deleted meanwhile', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const contact = await createContact();
      const key = `race-${round}-${contact.id}`;
      const order = () =>
        server().request('POST', '/orders', {
          body: { contact_id: contact.id, currency: 'USD', items },
          headers: { 'Idempotency-Key': key },
        });
      const [deleted, ...answers] = await Promise.all([
        server().request('DELETE', `/contacts/${contact.id}`),
        order(),
        order(),
        order(),
      ]);
      expect(deleted?.status, deleted?.text).toBe(204);
      const first = answers[0] as TestResponse;
      if (first.status === 404) expectContactGone(first, contact.id);
      else expect(first.status, first.text).toBe(201);
      for (const answer of answers)
        expect({ status: answer.status, body: answer.body }).toEqual({ status: first.status, body: first.body });
      // Replayed later, whatever happened since.
      const replay = await order();
      expect({ status: replay.status, body: replay.body }).toEqual({ status: first.status, body: first.body });
    }
  });

  it('answers 400 unique to all but one of concurrent idempotent requests that take one phone or order number', async () => {
    const contact = await createContact();
    for (let round = 0; round < ROUNDS; round++) {
      const taken = phone();
      const number = `RACE-${round}-${contact.id}`;
      const keyed = (n: number) => ({ 'Idempotency-Key': `unique-${round}-${n}-${taken}` });
      const answers = await Promise.all([
        ...Array.from({ length: 4 }, (_, n) =>
          server().request('POST', '/contacts', { body: { phone: taken }, headers: keyed(n) }),
        ),
        ...Array.from({ length: 4 }, (_, n) =>
          server().request('POST', '/orders', {
            body: { contact_id: contact.id, number, currency: 'USD', items },
            headers: keyed(10 + n),
          }),
        ),
      ]);
      for (const [field, group] of [
        ['phone', answers.slice(0, 4)],
        ['number', answers.slice(4)],
      ] as const) {
        const created = group.filter((answer) => answer.status === 201);
        expect(created, group.map((answer) => answer.text).join('\n')).toHaveLength(1);
        for (const answer of group.filter((a) => a.status !== 201)) {
          expectExactError(answer, 400, 'bad_request', { field, constraint: 'unique' });
          expect(answer.body.error.details.existing_id).toBe(created[0]?.body.id);
        }
      }
    }
  });

  it("stores a channel's messages for a conversation resolved meanwhile only by reopening it", async () => {
    const channel = expectBody(
      await server().request('POST', '/channels', {
        body: {
          platform: 'whatsapp',
          external_id: `${Date.now()}${phoneSeq++}`,
          access_token: `EAAG${'x'.repeat(40)}`,
          app_secret: 'race-app-secret-0123456789',
        },
      }),
      201,
      Channel,
    );
    const ctx = { database: server().database, accountId: server().accountId, settings: server().settings };
    const channelRow = (await channelsRepository.findById(
      new TenantScope(server().database.db, server().accountId, server().database.capabilities),
      channel.id,
    )) as ChannelRow;
    const arrival = (from: string, content: string): Arrival => ({
      sender: { externalId: from, profileName: 'Racer' },
      message: { platformMessageId: newWamid(), type: 'text', content, media: null },
    });
    for (let round = 0; round < ROUNDS; round++) {
      const sender = `3163${phoneSeq++}`;
      const first = await receiveOnChannel(ctx, {
        channel: channelRow,
        sender: arrival(sender, 'first').sender,
        message: arrival(sender, 'first').message,
      });
      const conversationId = first?.conversation_id as string;
      const later = arrival(sender, 'later');
      const [left, resolved] = await Promise.all([
        receiveManyOnChannel(ctx, { channel: channelRow, arrivals: [later] }),
        server().request('PATCH', `/conversations/${conversationId}`, { body: { status: 'resolved' } }),
      ]);
      expect(resolved.status, resolved.text).toBe(200);
      for (const { sender: from, message } of left)
        await receiveOnChannel(ctx, { channel: channelRow, sender: from, message });
      // Open again, then one message at a time (the path of a new sender or a reopen) against a resolve.
      expect(
        (await server().request('PATCH', `/conversations/${conversationId}`, { body: { status: 'active' } })).status,
      ).toBe(200);
      const slow = arrival(sender, 'slow');
      const [, resolvedAgain] = await Promise.all([
        receiveOnChannel(ctx, { channel: channelRow, sender: slow.sender, message: slow.message }),
        server().request('PATCH', `/conversations/${conversationId}`, { body: { status: 'resolved' } }),
      ]);
      expect(resolvedAgain.status, resolvedAgain.text).toBe(200);
      // In the order of the conversation's events, a message that arrives while it is resolved
      // reopens it: the next event is its change back to active.
      const events = await eventsOf(server(), ['conversation.updated', 'message.received'], conversationId);
      let status = 'active';
      for (const [index, event] of events.entries()) {
        if (event.type === 'conversation.updated') status = event.data.status as string;
        else if (status !== 'active') {
          const next = events[index + 1];
          expect(
            `${next?.type} ${next?.data.status}`,
            `round ${round}: ${event.data.content} arrived while ${status}`,
          ).toBe('conversation.updated active');
        }
      }
      expect(events.filter((event) => event.type === 'message.received').map((event) => event.data.content)).toEqual([
        'first',
        'later',
        'slow',
      ]);
    }
  });

  it('runs a transaction again when it deadlocks', async (context) => {
    if (server().dialect !== 'postgres') context.skip();
    const [a, b] = [await createContact(), await createContact()];
    const db = server().database.db;
    let firstLocks = 0;
    let bothHoldOne: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      bothHoldOne = resolve;
    });
    let runs = 0;
    const lock = (trx: typeof db, id: string) =>
      lockedForUpdate(
        server().database.capabilities,
        trx.selectFrom('contacts').select('id').where('id', '=', id),
      ).execute();
    // Each locks one contact, waits until the other holds its own, then asks for the other's: a deadlock, the first
    // time.
    const crossing = (first: string, second: string) =>
      runTransaction(db, server().database.capabilities, async (trx) => {
        runs++;
        await lock(trx, first);
        if (++firstLocks === 2) bothHoldOne();
        await held;
        await lock(trx, second);
        return first;
      });
    expect(await Promise.all([crossing(a.id, b.id), crossing(b.id, a.id)])).toEqual([a.id, b.id]);
    expect(runs).toBe(3);
  });

  it('runs a transaction again after a serialization failure, and gives up after a bounded number of runs', async (context) => {
    if (server().dialect !== 'postgres') context.skip();
    const db = server().database.db;
    const failing = (times: number) => {
      let runs = 0;
      const work = runTransaction(db, server().database.capabilities, async (trx) => {
        runs++;
        if (runs <= times)
          await sql`do $$ begin raise exception 'conflict' using errcode = '40001'; end $$`.execute(trx);
        return runs;
      });
      return work;
    };
    expect(await failing(2)).toBe(3);
    await expect(failing(100)).rejects.toMatchObject({ code: '40001' });
  });

  it('runs a SQLite transaction again when another connection wrote between its read and its write', async (context) => {
    if (server().dialect !== 'sqlite') context.skip();
    const contact = await createContact();
    // Another process's connection to the same file (an operator command, a second server).
    const elsewhere = openDatabase(server().databaseUrl);
    try {
      let runs = 0;
      await runTransaction(server().database.db, server().database.capabilities, async (trx) => {
        runs++;
        await trx.selectFrom('contacts').select('id').where('id', '=', contact.id).execute();
        if (runs === 1)
          await elsewhere.db.updateTable('contacts').set({ name: 'Elsewhere' }).where('id', '=', contact.id).execute();
        // Its snapshot is older than that commit: SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out.
        await trx.updateTable('contacts').set({ email: 'here@example.com' }).where('id', '=', contact.id).execute();
      });
      expect(runs).toBe(2);
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact)).toMatchObject({
        name: 'Elsewhere',
        email: 'here@example.com',
      });
    } finally {
      await elsewhere.destroy();
    }
  });

  it('answers the contract 404 for a write that references a row deleted before it', async (context) => {
    if (server().dialect !== 'postgres') context.skip();
    const db = server().database.db;
    const insertOrder = runTransaction(db, server().database.capabilities, (trx) =>
      trx
        .insertInto('orders')
        .values({
          account_id: server().accountId,
          id: 'ord_GONE',
          contact_id: 'ct_GONE',
          number: 'GONE-1',
          number_key: null,
          status: 'pending',
          currency: 'USD',
          total_amount: 1,
          items: '[]',
          placed_at: new Date().toISOString(),
          created_at: new Date().toISOString(),
          updated_at: new Date().toISOString(),
        })
        .execute(),
    );
    const error = await insertOrder.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ReferenceGone);
    expect(error).toMatchObject({ code: 'not_found', message: 'No such contact: ct_GONE' });
  });

  describe('concurrent phase of the fuzz', () => {
    /** Operations of one round, all sent at once. */
    const OPERATIONS_PER_ROUND = 60;
    const FUZZ_ROUNDS = 4;

    it('answers no 5xx, only the contract 404 for what is gone, one event per change, and keeps every accepted write', {
      timeout: 30_000,
    }, async () => {
      const random = randomFrom(39);
      const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
      /** The kinds of answer seen (`create order 404`), to check that the races ran at all. */
      const outcomes = new Set<string>();
      for (let round = 0; round < FUZZ_ROUNDS; round++) {
        // The first two contacts may be deleted; the conversations are mostly of the others, so that
        // their status changes race each other more often than their contact's delete.
        const contacts = await Promise.all(Array.from({ length: 6 }, () => createContact()));
        const doomed = contacts.slice(0, 2);
        const conversations = await Promise.all(
          [contacts[0], contacts[2], contacts[3], contacts[4]].map((contact) =>
            createConversation((contact as Contact).id),
          ),
        );
        const endpoints = [await createEndpoint(), await createEndpoint()];
        const orders = await Promise.all(
          [contacts[2], contacts[3]].map(async (contact) =>
            expectBody(
              await server().request('POST', '/orders', {
                body: { contact_id: (contact as Contact).id, currency: 'USD', items },
              }),
              201,
              Order,
            ),
          ),
        );
        type Sent = { kind: string; target?: string; body?: Record<string, unknown>; response: Promise<TestResponse> };
        const sent: Sent[] = [];
        const send = (kind: string, method: string, path: string, body?: Record<string, unknown>, target?: string) =>
          sent.push({
            kind,
            ...(target ? { target } : {}),
            ...(body ? { body } : {}),
            response: server().request(method, path, body ? { body } : {}),
          });
        for (let n = 0; n < OPERATIONS_PER_ROUND; n++) {
          const contact = pick(contacts);
          const conversation = pick(conversations);
          const endpoint = pick(endpoints);
          const roll = random();
          if (roll < 0.05) {
            const victim = pick(doomed);
            send('delete contact', 'DELETE', `/contacts/${victim.id}`, undefined, victim.id);
          } else if (roll < 0.2)
            send('create order', 'POST', '/orders', { contact_id: contact.id, currency: 'USD', items }, contact.id);
          else if (roll < 0.3)
            send(
              'create conversation',
              'POST',
              '/conversations',
              { contact_id: contact.id, platform: pick(['whatsapp', 'facebook'] as const) },
              contact.id,
            );
          else if (roll < 0.4)
            send(
              'send message',
              'POST',
              '/messages',
              { conversation_id: conversation.id, content: `m ${round}-${n}` },
              conversation.id,
            );
          else if (roll < 0.57) {
            // Archived is final: rarer, so that most PATCHes race transitions that can still happen.
            const status = pick([
              'active',
              'resolved',
              'active',
              'resolved',
              'resolved',
              'active',
              'archived',
            ] as const);
            send('patch conversation', 'PATCH', `/conversations/${conversation.id}`, { status }, conversation.id);
          } else if (roll < 0.63) {
            const order = pick(orders);
            send(
              'patch order',
              'PATCH',
              `/orders/${order.id}`,
              { status: pick(['paid', 'paid', 'fulfilled', 'cancelled', 'refunded'] as const) },
              order.id,
            );
          } else if (roll < 0.7)
            send('tag contact', 'POST', `/contacts/${contact.id}/tags`, { tag: `t${round}-${n}` }, contact.id);
          else if (roll < 0.76)
            send('rename contact', 'PATCH', `/contacts/${contact.id}`, { name: `Renamed ${round}-${n}` }, contact.id);
          else if (roll < 0.83)
            send('delete endpoint', 'DELETE', `/webhook_endpoints/${endpoint.id}`, undefined, endpoint.id);
          else if (roll < 0.88)
            send('create endpoint', 'POST', '/webhook_endpoints', {
              url: `http://127.0.0.1:9/fuzz-${round}-${n}`,
              events: ['*'],
            });
          else send('create contact', 'POST', '/contacts', { name: `Fuzz ${round}-${n}`, phone: phone() });
        }
        const answers = await Promise.all(
          sent.map(async (request) => ({ ...request, answer: await request.response })),
        );
        for (const { kind, answer } of answers) outcomes.add(`${kind} ${answer.status}`);

        const deletedContacts = new Set(
          answers.filter((a) => a.kind === 'delete contact' && a.answer.status === 204).map((a) => a.target),
        );
        for (const { kind, target, body, answer } of answers) {
          const what = `${kind} ${target ?? ''}: ${answer.status} ${answer.text}`;
          expect(answer.status, what).toBeLessThan(500);
          if (answer.status === 404) {
            if (kind === 'delete endpoint') expectExactError(answer, 404, 'not_found');
            else if (kind === 'patch conversation' || kind === 'send message') {
              // Its contact's delete took the conversation along.
              expectExactError(answer, 404, 'not_found');
              expect(answer.body.error.message).toBe(`No such conversation: ${target}`);
            } else expectContactGone(answer, target as string);
            const contactOf =
              kind === 'patch conversation' || kind === 'send message'
                ? conversations.find((c) => c.id === target)?.contact.id
                : target;
            if (kind !== 'delete endpoint') expect(deletedContacts.has(contactOf), what).toBe(true);
            continue;
          }
          if (answer.status === 400) {
            // Only a refused transition (archived is final, and receives no messages) or the endpoint limit.
            expectExactError(answer, 400, 'bad_request');
            expect(['patch conversation', 'patch order', 'send message', 'create endpoint'], what).toContain(kind);
            continue;
          }
          expect(answer.status, what).toBeLessThan(300);
          // Every accepted write reads back as it was answered, but for what a delete of its contact changed.
          if (kind === 'create order') {
            const order = expectBody(await server().request('GET', `/orders/${answer.body.id}`), 200, Order);
            const sentOrder = expectBody(answer, 201, Order);
            expect(sentOrder).toMatchObject({ contact_id: body?.contact_id, items, currency: 'USD' });
            if (order.contact_id === null) expect(deletedContacts.has(target)).toBe(true);
            expect(order).toEqual({ ...sentOrder, contact_id: order.contact_id, updated_at: order.updated_at });
          } else if (kind === 'create conversation') {
            const read = await server().request('GET', `/conversations/${answer.body.id}`);
            if (read.status === 404) expect(deletedContacts.has(target)).toBe(true);
            else {
              // The contact's summary is the contact's as it is now (a rename meanwhile shows).
              const conversation = expectBody(read, 200, Conversation);
              expect(conversation).toEqual({
                ...expectBody(answer, 201, Conversation),
                contact: { ...answer.body.contact, name: conversation.contact.name },
              });
            }
          } else if (kind === 'create contact' || kind === 'create endpoint') {
            const path =
              kind === 'create contact' ? `/contacts/${answer.body.id}` : `/webhook_endpoints/${answer.body.id}`;
            const read = await server().request('GET', path);
            const { secret: _secret, ...returned } = answer.body as Record<string, unknown>;
            expect(read.body, what).toEqual(returned);
          } else if (kind === 'send message') {
            const read = await server().request('GET', `/messages/${answer.body.id}`);
            const contactId = conversations.find((c) => c.id === target)?.contact.id;
            if (read.status === 404) expect(deletedContacts.has(contactId), what).toBe(true);
            else expect(read.body, what).toEqual(answer.body);
          } else if (kind === 'tag contact' || kind === 'rename contact') {
            const read = await server().request('GET', `/contacts/${target}`);
            if (read.status === 404) expect(deletedContacts.has(target), what).toBe(true);
            else if (kind === 'tag contact') expect(read.body.tags, what).toContain(body?.tag);
            else
              expect(
                answers.some(
                  (a) =>
                    a.kind === kind &&
                    a.target === target &&
                    a.answer.status === 200 &&
                    a.body?.name === read.body.name,
                ),
              ).toBe(true);
          } else if (kind === 'patch conversation') {
            // Whether it changed the status or found it so, the conversation is now as asked.
            expect(expectBody(answer, 200, Conversation).status, what).toBe(body?.status);
          }
        }

        // Every event counted: one per change that happened.
        const idsOf = (kind: string, status: number) =>
          answers.filter((a) => a.kind === kind && a.answer.status === status).map((a) => a.answer.body.id as string);
        const placed = await eventsOf(server(), ['order.placed']);
        for (const id of idsOf('create order', 201))
          expect(placed.filter((event) => event.data.id === id)).toHaveLength(1);
        // An order's statuses form a chain without cycles: its order.updated events, in the chain's
        // order, must be one per transition, each allowed from the one before, ending where it is.
        const orderUpdates = await eventsOf(server(), ['order.updated']);
        for (const order of orders) {
          const entered = orderUpdates
            .filter((event) => event.data.id === order.id)
            .map((event) => event.data.status as OrderStatus);
          expect(new Set(entered).size, `${order.id}: ${entered.join(', ')}`).toBe(entered.length);
          const rank: Record<OrderStatus, number> = { pending: 0, paid: 1, fulfilled: 2, cancelled: 3, refunded: 3 };
          let status: OrderStatus = 'pending';
          for (const next of entered.sort((a, b) => rank[a] - rank[b])) {
            expect(ORDER_TRANSITIONS[status], `${order.id}: ${status} → ${next}`).toContain(next);
            status = next;
          }
          expect(expectBody(await server().request('GET', `/orders/${order.id}`), 200, Order).status).toBe(status);
          for (const patch of answers.filter(
            (a) => a.kind === 'patch order' && a.target === order.id && a.answer.status === 200,
          )) {
            expect(['pending', ...entered]).toContain(patch.body?.status);
          }
        }
        // Each accepted tag and rename changed its contact (every tag and name is new): one contact.updated each.
        const updated = await eventsOf(server(), ['contact.updated']);
        for (const contact of contacts) {
          const changes = answers.filter(
            (a) =>
              (a.kind === 'tag contact' || a.kind === 'rename contact') &&
              a.target === contact.id &&
              a.answer.status < 300,
          );
          expect(
            updated.filter((event) => event.data.id === contact.id),
            contact.id,
          ).toHaveLength(changes.length);
        }
        const opened = await eventsOf(server(), ['conversation.created']);
        for (const id of idsOf('create conversation', 201))
          expect(opened.filter((event) => event.data.id === id)).toHaveLength(1);
        const removed = await eventsOf(server(), ['contact.deleted']);
        for (const id of deletedContacts) expect(removed.filter((event) => event.data.id === id)).toHaveLength(1);
        for (const conversation of conversations) {
          const last = await expectEventsTellTransitions(server(), conversation.id);
          const read = await server().request('GET', `/conversations/${conversation.id}`);
          if (read.status === 200) {
            expect(read.body.status).toBe(last);
            // Its counter counts exactly the messages accepted into it.
            const accepted = answers.filter(
              (a) => a.kind === 'send message' && a.target === conversation.id && a.answer.status === 201,
            );
            expect(read.body.message_count, conversation.id).toBe(accepted.length);
          } else expect(deletedContacts.has(conversation.contact.id)).toBe(true);
        }
        // Endpoints left by the round are removed: an account has at most 16.
        const list = await server().request('GET', '/webhook_endpoints', { query: { limit: 100 } });
        for (const endpoint of list.body.data as WebhookEndpoint[])
          await server().request('DELETE', `/webhook_endpoints/${endpoint.id}`);
      }
      // The races happened: writes for deleted contacts refused, others accepted, status changes made.
      for (const outcome of [
        'create order 201',
        'create order 404',
        'create conversation 404',
        'patch conversation 200',
        'send message 201',
        'delete endpoint 204',
      ]) {
        expect(outcomes, outcome).toContain(outcome);
      }
      expect(await eventsOf(server(), ['conversation.resolved'])).not.toHaveLength(0);
    });
  });
});
