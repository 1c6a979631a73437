import { Conversation, ConversationList, EventList, Message, Order, type buildOpenApiDocument } from '@convo/core';
import { describe, expect, it } from 'vitest';
import {
  ACTIVE_DIALECTS,
  describeEachDialect,
  expectBody,
  expectError,
  startTestServer,
  testSettings,
} from '../testing/harness.js';

describeEachDialect('events and the sandbox', (server) => {
  let seq = 0;
  const phone = () => `+4420${String(7_000_000 + seq++).padStart(8, '0')}`;
  const events = async (query: Record<string, string | number> = {}, key?: string) =>
    expectBody(
      await server().request('GET', '/events', { query: { limit: 100, ...query }, ...(key ? { key } : {}) }),
      200,
      EventList,
    );
  const eventsOf = async (conversationId: string) =>
    (await events()).data
      .filter(
        (e) =>
          (e.type === 'message.received' ? e.data.conversation_id : 'contact' in e.data ? e.data.id : undefined) ===
          conversationId,
      )
      .reverse();
  const inbound = async (body: object) =>
    expectBody(await server().request('POST', '/sandbox/inbound', { body }), 201, Message);

  it('turns an inbound message into a contact, a conversation and a message, with events in sequence', async () => {
    const from = { phone: phone(), name: 'Nadia' };
    const first = await inbound({ platform: 'whatsapp', from, content: 'Hello?' });
    expect(first).toMatchObject({ direction: 'inbound', type: 'text', content: 'Hello?' });
    const conversation = expectBody(
      await server().request('GET', `/conversations/${first.conversation_id}`),
      200,
      Conversation,
    );
    expect(conversation).toMatchObject({
      status: 'active',
      platform: 'whatsapp',
      message_count: 1,
      contact: { name: 'Nadia', phone: from.phone },
      last_message: { content: 'Hello?' },
    });

    const second = await inbound({ platform: 'whatsapp', from, content: 'Anyone there?' });
    expect(second.conversation_id).toBe(first.conversation_id);

    const history = await eventsOf(first.conversation_id);
    expect(history.map((e) => [e.type, e.sequence])).toEqual([
      ['conversation.created', 1],
      ['message.received', 2],
      ['message.received', 3],
    ]);
    expect(history[1]?.data).toEqual(first);
    expect(history[0]?.data).toMatchObject({ id: first.conversation_id, status: 'active', message_count: 0 });
  });

  it('reopens a resolved conversation and opens a new one after an archived one', async () => {
    const from = { phone: phone() };
    const first = await inbound({ platform: 'instagram', from, content: 'one' });
    const id = first.conversation_id;
    expectBody(
      await server().request('PATCH', `/conversations/${id}`, { body: { status: 'resolved' } }),
      200,
      Conversation,
    );
    // Setting the status it has is a no-op that emits nothing.
    expectBody(
      await server().request('PATCH', `/conversations/${id}`, { body: { status: 'resolved' } }),
      200,
      Conversation,
    );
    await inbound({ platform: 'instagram', from, content: 'two' });
    expect(expectBody(await server().request('GET', `/conversations/${id}`), 200, Conversation).status).toBe('active');
    expectBody(
      await server().request('PATCH', `/conversations/${id}`, { body: { status: 'resolved' } }),
      200,
      Conversation,
    );

    // Every status change is conversation.updated; a resolution is conversation.resolved too.
    expect((await eventsOf(id)).map((e) => [e.type, e.sequence])).toEqual([
      ['conversation.created', 1],
      ['message.received', 2],
      ['conversation.updated', 3],
      ['conversation.resolved', 4],
      ['message.received', 5],
      ['conversation.updated', 6],
      ['conversation.updated', 7],
      ['conversation.resolved', 8],
    ]);
    expect((await eventsOf(id))[5]?.data).toMatchObject({
      id,
      status: 'active',
      message_count: 2,
      last_message: { content: 'two' },
    });
    const resolved = (await eventsOf(id)).at(-1);
    expect(resolved?.data).toMatchObject({ id, status: 'resolved' });

    expectBody(
      await server().request('PATCH', `/conversations/${id}`, { body: { status: 'archived' } }),
      200,
      Conversation,
    );
    const after = await inbound({ platform: 'instagram', from, content: 'three' });
    expect(after.conversation_id).not.toBe(id);
    expect(expectBody(await server().request('GET', `/conversations/${id}`), 200, Conversation)).toMatchObject({
      status: 'archived',
      message_count: 2,
    });
    // Another platform is another conversation.
    const facebook = await inbound({ platform: 'facebook', from, content: 'four' });
    expect([id, after.conversation_id]).not.toContain(facebook.conversation_id);
  });

  it('emits conversation.created for POST /conversations and order.placed for POST /orders', async () => {
    const contact = (await server().request('POST', '/contacts', { body: { phone: phone() } })).body as { id: string };
    const conversation = expectBody(
      await server().request('POST', '/conversations', { body: { contact_id: contact.id, platform: 'facebook' } }),
      201,
      Conversation,
    );
    const order = expectBody(
      await server().request('POST', '/orders', {
        body: { contact_id: contact.id, currency: 'EUR', items: [{ name: 'Tee', quantity: 1, unit_amount: 1500 }] },
      }),
      201,
      Order,
    );
    const created = (await events({ type: 'conversation.created' })).data.find((e) => e.data.id === conversation.id);
    expect(created).toMatchObject({ type: 'conversation.created', sequence: 1, data: conversation });
    const placed = (await events({ type: 'order.placed' })).data.find((e) => e.data.id === order.id);
    expect(placed?.data).toEqual(order);
    expect(placed && 'sequence' in placed).toBe(false);
    expect(placed?.id).toMatch(/^evt_/);
  });

  it('lists newest first, filters by type, pages, and keeps accounts apart', async () => {
    const all = await events();
    const times = all.data.map((e) => `${e.created_at} ${e.id}`);
    expect(times).toEqual([...times].sort().reverse());
    const received = await events({ type: 'message.received' });
    expect(received.data.every((e) => e.type === 'message.received')).toBe(true);
    const page = await events({ limit: 2, offset: 1 });
    expect(page.data.map((e) => e.id)).toEqual(all.data.slice(1, 3).map((e) => e.id));
    expect(page.has_more).toBe(all.total > 3);
    expect((await events({}, server().keys.readOnly)).total).toBe(all.total);
    expect((await events({}, server().keys.otherFull)).total).toBe(0);
    expectError(await server().request('GET', '/events', { key: server().keys.webhook }), 403, 'forbidden');
    expectError(await server().request('GET', '/events', { query: { type: 'contact.merged' } }), 400, 'bad_request', {
      field: 'type',
      constraint: 'enum',
    });
  });

  it('validates inbound messages and needs a full key', async () => {
    expectError(
      await server().request('POST', '/sandbox/inbound', {
        body: { platform: 'whatsapp', from: { phone: '123' }, content: 'x' },
      }),
      400,
      'bad_request',
      {
        field: 'from.phone',
        constraint: 'format',
      },
    );
    expectError(
      await server().request('POST', '/sandbox/inbound', {
        body: { platform: 'sms', from: { phone: phone() }, content: 'x' },
      }),
      400,
      'bad_request',
      {
        field: 'platform',
        constraint: 'enum',
      },
    );
    expectError(
      await server().request('POST', '/sandbox/inbound', { body: { platform: 'whatsapp', from: { phone: phone() } } }),
      400,
      'bad_request',
      {
        field: 'content',
        constraint: 'required',
      },
    );
    expectError(
      await server().request('POST', '/sandbox/inbound', { key: server().keys.readOnly, body: {} }),
      403,
      'forbidden',
    );
    const list = expectBody(
      await server().request('GET', '/conversations', { key: server().keys.otherFull }),
      200,
      ConversationList,
    );
    expect(list.total).toBe(0);
  });
});

describe('a server with the sandbox off', () => {
  for (const dialect of ACTIVE_DIALECTS) {
    it(`neither routes nor documents POST /v1/sandbox/inbound [${dialect}]`, async () => {
      const server = await startTestServer(dialect, testSettings({ sandboxEnabled: false }));
      try {
        expectError(await server.request('POST', '/sandbox/inbound', { key: null, body: {} }), 401, 'unauthorized');
        expectError(
          await server.request('POST', '/sandbox/inbound', {
            body: { platform: 'whatsapp', from: { phone: '+14155550123' }, content: 'x' },
          }),
          404,
          'not_found',
        );
        const doc = (await server.request('GET', '/openapi.json', { key: null })).body as ReturnType<
          typeof buildOpenApiDocument
        >;
        expect(doc.paths['/v1/sandbox/inbound']).toBeUndefined();
        expect(doc.paths['/v1/contacts']).toBeDefined();
      } finally {
        await server.close();
      }
    });
  }
});
