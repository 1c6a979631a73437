import { Contact, Conversation, ConversationList, Message, MessageList } from '@convo/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { describeEachDialect, expectBody, expectError } from '../testing/harness.js';

describeEachDialect('messages', (server) => {
  afterEach(() => {
    vi.useRealTimers();
  });
  let phoneSeq = 1_000_000;
  const phone = () => `+1510${phoneSeq++}`;

  /** A new contact with one conversation, in account A unless another key is given. */
  const openConversation = async (key?: string, platform: 'whatsapp' | 'facebook' | 'instagram' = 'whatsapp') => {
    const contact = expectBody(
      await server().request('POST', '/contacts', { key, body: { phone: phone(), name: 'Msg Contact' } }),
      201,
      Contact,
    );
    return expectBody(
      await server().request('POST', '/conversations', { key, body: { contact_id: contact.id, platform } }),
      201,
      Conversation,
    );
  };
  const retrieve = async (id: string, key?: string) =>
    expectBody(await server().request('GET', `/conversations/${id}`, { key }), 200, Conversation);
  const setStatus = async (id: string, status: string) =>
    expectBody(await server().request('PATCH', `/conversations/${id}`, { body: { status } }), 200, Conversation);
  const send = async (body: Record<string, unknown>, key?: string) =>
    expectBody(await server().request('POST', '/messages', { key, body }), 201, Message);
  const listMessages = async (id: string, query: Record<string, string | number | undefined> = {}, key?: string) =>
    expectBody(await server().request('GET', `/conversations/${id}/messages`, { key, query }), 200, MessageList);

  describe('GET /messages/:id', () => {
    it("retrieves a sent and a received message, and 404s unknown ids and another account's messages", async () => {
      const conversation = await openConversation();
      const sent = await send({ conversation_id: conversation.id, content: 'Retrieve me' });
      expect(expectBody(await server().request('GET', `/messages/${sent.id}`), 200, Message)).toEqual(sent);
      const received = expectBody(
        await server().request('POST', '/sandbox/inbound', {
          body: { platform: 'instagram', from: { phone: phone() }, content: 'From the customer' },
        }),
        201,
        Message,
      );
      expect(received.direction).toBe('inbound');
      expect(
        expectBody(
          await server().request('GET', `/messages/${received.id}`, { key: server().keys.readOnly }),
          200,
          Message,
        ),
      ).toEqual(received);
      expectError(await server().request('GET', '/messages/msg_nope'), 404, 'not_found');
      expectError(
        await server().request('GET', `/messages/${sent.id}`, { key: server().keys.otherFull }),
        404,
        'not_found',
      );
      expectError(
        await server().request('GET', `/messages/${sent.id}`, { key: server().keys.webhook }),
        403,
        'forbidden',
      );
    });
  });

  describe('POST /messages', () => {
    it('sends an outbound text message: 201 with the message record', async () => {
      const conversation = await openConversation();
      const res = await server().request('POST', '/messages', {
        body: { conversation_id: conversation.id, content: 'Hello there', type: 'text' },
      });
      const message = expectBody(res, 201, Message);
      expect(message.id).toMatch(/^msg_[0-9A-Z]{26}$/);
      expect(message).toMatchObject({
        conversation_id: conversation.id,
        direction: 'outbound',
        type: 'text',
        content: 'Hello there',
      });
      expect(Object.keys(message).sort()).toEqual([
        'content',
        'conversation_id',
        'created_at',
        'direction',
        'error',
        'id',
        'media',
        'platform_message_id',
        'status',
        'type',
        'updated_at',
      ]);
      // Without a channel nothing sends it: it stays queued, with nothing from a platform.
      expect(message).toMatchObject({
        status: 'queued',
        platform_message_id: null,
        error: null,
        media: null,
        updated_at: message.created_at,
      });
      expect(message.created_at >= conversation.created_at).toBe(true);
    });

    it('defaults type to text', async () => {
      const conversation = await openConversation();
      expect((await send({ conversation_id: conversation.id, content: 'No type' })).type).toBe('text');
    });

    it('accepts the deprecated alias message for content', async () => {
      const conversation = await openConversation();
      const message = await send({ conversation_id: conversation.id, message: 'Via alias' });
      expect(message).toMatchObject({ content: 'Via alias', direction: 'outbound', type: 'text' });
      expect(message).not.toHaveProperty('message');
      expect((await listMessages(conversation.id)).data.map((m) => m.content)).toEqual(['Via alias']);
    });

    it('accepts content and message together when they are equal', async () => {
      const conversation = await openConversation();
      const message = await send({ conversation_id: conversation.id, content: 'Same text', message: 'Same text' });
      expect(message.content).toBe('Same text');
    });

    it('rejects content and message that differ: 400 message unique, nothing sent', async () => {
      const conversation = await openConversation();
      const res = await server().request('POST', '/messages', {
        body: { conversation_id: conversation.id, content: 'One', message: 'Two' },
      });
      expectError(res, 400, 'bad_request', { field: 'message', constraint: 'unique' });
      expect((await retrieve(conversation.id)).message_count).toBe(0);
    });

    it('needs content (or its alias): 400 content required', async () => {
      const conversation = await openConversation();
      expectError(
        await server().request('POST', '/messages', { body: { conversation_id: conversation.id } }),
        400,
        'bad_request',
        {
          field: 'content',
          constraint: 'required',
        },
      );
      expectError(
        await server().request('POST', '/messages', { body: { conversation_id: conversation.id, type: 'text' } }),
        400,
        'bad_request',
        {
          field: 'content',
          constraint: 'required',
        },
      );
    });

    it.each([
      [{ content: 'Hi' }, 'conversation_id', 'required'],
      [{ conversation_id: 'conv_x', content: 'Hi', type: 'sticker' }, 'type', 'enum'],
      [{ conversation_id: 'conv_x', content: 'Hi', type: 'image' }, 'media', 'required'],
      [{ conversation_id: 'conv_x', content: 'Hi', type: 'TEXT' }, 'type', 'enum'],
      [{ conversation_id: 'conv_x', content: 'Hi', type: 1 }, 'type', 'type'],
      [{ conversation_id: 'conv_x', content: 42 }, 'content', 'type'],
      [{ conversation_id: 'conv_x', message: 42 }, 'message', 'type'],
      [{ conversation_id: 'conv_x', content: '' }, 'content', 'min_length'],
      [{ conversation_id: 42, content: 'Hi' }, 'conversation_id', 'type'],
      [{ conversation_id: 'conv_x', content: 'Hi', direction: 'inbound' }, 'direction', 'unknown'],
      [{ conversation_id: 'conv_x', content: 'Hi', text: 'Hi' }, 'text', 'unknown'],
    ])('rejects %j: %s %s (validation before existence)', async (body, field, constraint) => {
      expectError(await server().request('POST', '/messages', { body }), 400, 'bad_request', { field, constraint });
    });

    it("404s an unknown conversation and another account's conversation", async () => {
      expectError(
        await server().request('POST', '/messages', { body: { conversation_id: 'conv_nope', content: 'Hi' } }),
        404,
        'not_found',
      );
      const theirs = await openConversation(server().keys.otherFull);
      expectError(
        await server().request('POST', '/messages', { body: { conversation_id: theirs.id, content: 'Hi' } }),
        404,
        'not_found',
      );
      expect((await retrieve(theirs.id, server().keys.otherFull)).message_count).toBe(0);
    });

    it('refuses an archived conversation: 400 conversation_id transition, nothing sent', async () => {
      const conversation = await openConversation();
      await send({ conversation_id: conversation.id, content: 'Before archiving' });
      const archived = await setStatus(conversation.id, 'archived');
      const res = await server().request('POST', '/messages', {
        body: { conversation_id: conversation.id, content: 'After archiving' },
      });
      expectError(res, 400, 'bad_request', { field: 'conversation_id', constraint: 'transition' });
      expect(await retrieve(conversation.id)).toEqual(archived);
      expect((await listMessages(conversation.id)).data.map((m) => m.content)).toEqual(['Before archiving']);
    });

    it('counts every one of many concurrent sends into one conversation, each with its message', async () => {
      const conversation = await openConversation();
      const contents = Array.from({ length: 25 }, (_, i) => `Concurrent ${i}`);
      const sent = await Promise.all(contents.map((content) => send({ conversation_id: conversation.id, content })));
      expect(new Set(sent.map((m) => m.id)).size).toBe(25);
      const after = await retrieve(conversation.id);
      expect(after.message_count).toBe(25);
      const listed = await listMessages(conversation.id, { limit: 100 });
      expect(listed.total).toBe(25);
      expect(listed.data.map((m) => m.content).sort()).toEqual([...contents].sort());
      // The last message is the latest, whatever order the sends reached the row in (one of
      // several sent in the same millisecond).
      const latestAt = listed.data
        .map((m) => m.created_at)
        .sort()
        .at(-1);
      expect(after.last_message?.timestamp).toBe(latestAt);
      expect(listed.data.filter((m) => m.created_at === latestAt).map((m) => m.content)).toContain(
        after.last_message?.content,
      );
    });

    it('sends into a resolved conversation', async () => {
      const conversation = await openConversation();
      await setStatus(conversation.id, 'resolved');
      const message = await send({ conversation_id: conversation.id, content: 'Following up' });
      expect((await retrieve(conversation.id)).last_message).toEqual({
        content: 'Following up',
        timestamp: message.created_at,
      });
    });

    it('needs a full-access key', async () => {
      const conversation = await openConversation();
      const body = { conversation_id: conversation.id, content: 'Hi' };
      expectError(await server().request('POST', '/messages', { key: server().keys.readOnly, body }), 403, 'forbidden');
      expectError(await server().request('POST', '/messages', { key: server().keys.webhook, body }), 403, 'forbidden');
      // Permission comes before validation.
      expectError(
        await server().request('POST', '/messages', { key: server().keys.readOnly, body: {} }),
        403,
        'forbidden',
      );
      expect((await retrieve(conversation.id)).message_count).toBe(0);
    });

    it("updates the conversation's message_count and last_message", async () => {
      const conversation = await openConversation();
      expect(conversation).toMatchObject({ message_count: 0, last_message: null });
      const first = await send({ conversation_id: conversation.id, content: 'First' });
      const afterFirst = await retrieve(conversation.id);
      expect(afterFirst).toMatchObject({
        message_count: 1,
        last_message: { content: 'First', timestamp: first.created_at },
      });
      const second = await send({ conversation_id: conversation.id, message: 'Second' });
      const afterSecond = await retrieve(conversation.id);
      expect(afterSecond).toMatchObject({
        message_count: 2,
        last_message: { content: 'Second', timestamp: second.created_at },
      });
      expect(afterSecond.status).toBe('active');
      expect(afterSecond.created_at).toBe(conversation.created_at);
    });

    it('moves the conversation to the top of the default order', async () => {
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
      const key = server().keys.otherFull;
      const older = await openConversation(key);
      const newer = await openConversation(key, 'facebook');
      const before = expectBody(
        await server().request('GET', '/conversations', { key, query: { limit: 100 } }),
        200,
        ConversationList,
      );
      expect(before.data.map((c) => c.id).indexOf(newer.id)).toBeLessThan(
        before.data.map((c) => c.id).indexOf(older.id),
      );

      // Later than both conversations' creation, without waiting.
      vi.setSystemTime(Date.now() + 5);
      const message = await send({ conversation_id: older.id, content: 'Bump' }, key);
      const after = expectBody(await server().request('GET', '/conversations', { key }), 200, ConversationList);
      expect(after.data[0]).toMatchObject({
        id: older.id,
        message_count: 1,
        last_message: { content: 'Bump', timestamp: message.created_at },
      });
      expect(after.data[1]?.id).toBe(newer.id);
      expect(after.total).toBe(before.total);
      // The list shows the same record as a retrieve.
      expect(after.data[0]).toEqual(await retrieve(older.id, key));
    });
  });

  describe('GET /conversations/:id/messages', () => {
    it('lists oldest first in the list envelope', async () => {
      const conversation = await openConversation();
      expect(await listMessages(conversation.id)).toEqual({
        data: [],
        total: 0,
        limit: 20,
        offset: 0,
        has_more: false,
      });
      const sent = [];
      for (const content of ['one', 'two', 'three'])
        sent.push(await send({ conversation_id: conversation.id, content }));
      const page = await listMessages(conversation.id);
      expect(page).toEqual({ data: sent, total: 3, limit: 20, offset: 0, has_more: false });
      const times = page.data.map((m) => m.created_at);
      expect(times).toEqual([...times].sort());
    });

    it("lists only this conversation's messages", async () => {
      const a = await openConversation();
      const b = await openConversation();
      await send({ conversation_id: a.id, content: 'for a' });
      await send({ conversation_id: b.id, content: 'for b' });
      expect((await listMessages(a.id)).data.map((m) => m.content)).toEqual(['for a']);
      expect((await listMessages(b.id)).data.map((m) => m.content)).toEqual(['for b']);
    });

    it('pages with limit and offset without repeating or skipping', async () => {
      const conversation = await openConversation();
      const sent: string[] = [];
      for (let i = 0; i < 7; i++) sent.push((await send({ conversation_id: conversation.id, content: `m${i}` })).id);
      const pages = [];
      for (let offset = 0; offset < 7; offset += 3)
        pages.push(await listMessages(conversation.id, { limit: 3, offset }));
      expect(pages.map((p) => [p.limit, p.offset, p.total, p.has_more, p.data.length])).toEqual([
        [3, 0, 7, true, 3],
        [3, 3, 7, true, 3],
        [3, 6, 7, false, 1],
      ]);
      expect(pages.flatMap((p) => p.data.map((m) => m.id))).toEqual(sent);
      expect(await listMessages(conversation.id, { offset: 7 })).toEqual({
        data: [],
        total: 7,
        limit: 20,
        offset: 7,
        has_more: false,
      });
      expect((await listMessages(conversation.id, { limit: 100, offset: 5 })).data.map((m) => m.content)).toEqual([
        'm5',
        'm6',
      ]);
    });

    it('reads with a read-only key but not a webhook key', async () => {
      const conversation = await openConversation();
      await send({ conversation_id: conversation.id, content: 'readable' });
      expect((await listMessages(conversation.id, {}, server().keys.readOnly)).total).toBe(1);
      expectError(
        await server().request('GET', `/conversations/${conversation.id}/messages`, { key: server().keys.webhook }),
        403,
        'forbidden',
      );
    });

    it("404s unknown ids and other accounts' ids", async () => {
      const mine = await openConversation();
      await send({ conversation_id: mine.id, content: 'private' });
      expectError(await server().request('GET', '/conversations/conv_nope/messages'), 404, 'not_found');
      expectError(
        await server().request('GET', `/conversations/${mine.id}/messages`, { key: server().keys.otherFull }),
        404,
        'not_found',
      );
    });

    it.each([
      [{ limit: 101 }, 'limit', 'max'],
      [{ limit: 0 }, 'limit', 'min'],
      [{ limit: 'x' }, 'limit', 'type'],
      [{ offset: -1 }, 'offset', 'min'],
      [{ search: 'x' }, 'search', 'unknown'],
      [{ direction: 'inbound' }, 'direction', 'unknown'],
    ])('rejects query %j: %s %s', async (query, field, constraint) => {
      const conversation = await openConversation();
      expectError(
        await server().request('GET', `/conversations/${conversation.id}/messages`, { query }),
        400,
        'bad_request',
        { field, constraint },
      );
    });
  });
});
