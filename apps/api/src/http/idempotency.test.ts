import { Contact, ContactList, Conversation } from '@convo/core';
import pg from 'pg';
import { expect, it, vi } from 'vitest';
import { describeEachDialect, expectBody, expectError } from '../testing/harness.js';

describeEachDialect('Idempotency-Key', (server) => {
  let seq = 0;
  const phone = () => `+3361${String(1_000_000 + seq++)}`;
  const post = (path: string, body: unknown, key: string, apiKey?: string) =>
    server().request('POST', path, { body, headers: { 'idempotency-key': key }, ...(apiKey ? { key: apiKey } : {}) });
  const total = async () =>
    expectBody(await server().request('GET', '/contacts', { query: { limit: 1 } }), 200, ContactList).total;

  it('replays the first response byte for byte and creates once', async () => {
    const before = await total();
    const body = { name: 'Idem', phone: phone() };
    const first = await post('/contacts', body, 'create-idem-1');
    const again = await post('/contacts', body, 'create-idem-1');
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await total()).toBe(before + 1);
    expectBody(again, 201, Contact);
  });

  it('refuses the same key with a different body', async () => {
    await post('/contacts', { phone: phone() }, 'create-idem-2');
    expectError(await post('/contacts', { phone: phone() }, 'create-idem-2'), 400, 'bad_request', {
      field: 'Idempotency-Key',
      constraint: 'idempotency_key',
    });
  });

  it('runs N parallel duplicates once and answers them all alike', async () => {
    const before = await total();
    const body = { phone: phone(), tags: ['parallel'] };
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => post('/contacts', body, 'create-idem-parallel')),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(new Set(responses.map((r) => r.text)).size).toBe(1);
    expect(await total()).toBe(before + 1);
  });

  it('stores and replays a 4xx the operation answered, and keeps keys per account', async () => {
    const missing = await post('/messages', { conversation_id: 'conv_missing', content: 'hi' }, 'create-idem-3');
    expectError(missing, 404, 'not_found');
    const replay = await post('/messages', { conversation_id: 'conv_missing', content: 'hi' }, 'create-idem-3');
    expect(replay.text).toBe(missing.text);
    expect(replay.status).toBe(404);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    const body = { phone: phone() };
    const mine = expectBody(await post('/contacts', body, 'shared-key'), 201, Contact);
    const theirs = expectBody(await post('/contacts', body, 'shared-key', server().keys.otherFull), 201, Contact);
    expect(theirs.id).not.toBe(mine.id);
  });

  it('does not store a validation refusal: the operation never started (as Stripe)', async () => {
    const invalid = await post('/contacts', { name: 'no phone' }, 'create-idem-invalid');
    expectError(invalid, 400, 'bad_request', { field: 'phone', constraint: 'required' });
    const again = await post('/contacts', { name: 'no phone' }, 'create-idem-invalid');
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    // Nothing was stored, so the key is still free for a corrected request.
    expectBody(await post('/contacts', { phone: phone() }, 'create-idem-invalid'), 201, Contact);
  });

  it('applies to every POST (a conversation, a message)', async () => {
    const contact = expectBody(await server().request('POST', '/contacts', { body: { phone: phone() } }), 201, Contact);
    const a = await post('/conversations', { contact_id: contact.id, platform: 'whatsapp' }, 'conv-1');
    const b = await post('/conversations', { contact_id: contact.id, platform: 'whatsapp' }, 'conv-1');
    expect(b.text).toBe(a.text);
    const conversation = expectBody(a, 201, Conversation);
    await post('/messages', { conversation_id: conversation.id, content: 'once' }, 'msg-1');
    await post('/messages', { conversation_id: conversation.id, content: 'once' }, 'msg-1');
    expect(
      expectBody(await server().request('GET', `/conversations/${conversation.id}`), 200, Conversation).message_count,
    ).toBe(1);
  });

  it('validates the key itself', async () => {
    expectError(await post('/contacts', { phone: phone() }, 'k'.repeat(256)), 400, 'bad_request', {
      field: 'Idempotency-Key',
      constraint: 'max_length',
    });
    expectBody(await post('/contacts', { phone: phone() }, 'k'.repeat(255)), 201, Contact);
    // Ignored outside POST.
    const list = await server().request('GET', '/contacts', { headers: { 'idempotency-key': 'x'.repeat(300) } });
    expect(list.status).toBe(200);
  });

  it("makes a concurrent duplicate wait on the first request's lock, not poll, and then replays it", async () => {
    if (server().dialect !== 'postgres') return;
    const contact = expectBody(await server().request('POST', '/contacts', { body: { phone: phone() } }), 201, Contact);
    const conversation = expectBody(
      await server().request('POST', '/conversations', { body: { contact_id: contact.id, platform: 'whatsapp' } }),
      201,
      Conversation,
    );
    const blocker = new pg.Client({ connectionString: server().databaseUrl });
    await blocker.connect();
    const waitingOnLocks = async () =>
      Number(
        (
          await blocker.query(
            `select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
          )
        ).rows[0].n,
      );
    try {
      // Holds the conversation, so the first send stops inside its transaction, key claimed.
      await blocker.query('begin');
      await blocker.query('select id from conversations where id = $1 for update', [conversation.id]);
      const body = { conversation_id: conversation.id, content: 'exactly once' };
      const first = post('/messages', body, 'wait-on-lock');
      await vi.waitFor(async () => expect(await waitingOnLocks()).toBe(1));
      const duplicate = post('/messages', body, 'wait-on-lock');
      // The duplicate waits on the first one's claim of the key: a lock, not a loop of queries.
      await vi.waitFor(async () => expect(await waitingOnLocks()).toBe(2));
      await blocker.query('commit');
      const [a, b] = await Promise.all([first, duplicate]);
      expect(a.status).toBe(201);
      expect(b.text).toBe(a.text);
      expect(b.headers.get('idempotent-replayed')).toBe('true');
      expect(
        expectBody(await server().request('GET', `/conversations/${conversation.id}`), 200, Conversation).message_count,
      ).toBe(1);
    } finally {
      await blocker.end();
    }
  });
});
