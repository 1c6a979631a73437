/**
 * Input the contract refuses wherever a string is taken (CONTRACT: General): a lone surrogate or
 * U+0000 in a body value or key, a query parameter or a path is a 400 `pattern` naming where it
 * is, over REST and tRPC alike, and nothing is stored; so is a `__proto__` key, which zod would
 * otherwise drop in silence.
 */
import { EventList } from '@convo/core';
import { describe, expect, it } from 'vitest';
import { accountsService } from '../services/accounts.js';
import { describeEachDialect, expectBody, expectError, requestOverTrpc } from '../testing/harness.js';

const LONE = ['fz\ud800', 'fz\udfff', '\udc00fz', 'a\ud83d'];

describeEachDialect('bad input that is refused', (server) => {
  let seq = 0;
  const phone = () => `+1666${String(1_000_000 + seq++)}`;
  const count = async (path: string) =>
    ((await server().request('GET', path, { query: { limit: 1 } })).body as { total: number }).total;

  /** A valid body of each kind of write, the string field to spoil, and the list that must not grow. */
  const writes = async (): Promise<{ path: string; body: Record<string, unknown>; field: string; list: string }[]> => {
    const contact = (await server().request('POST', '/contacts', { body: { phone: phone() } })).body;
    const conversation = (
      await server().request('POST', '/conversations', { body: { contact_id: contact.id, platform: 'whatsapp' } })
    ).body;
    return [
      { path: '/contacts', body: { phone: phone(), name: 'x' }, field: 'name', list: '/contacts' },
      {
        path: '/workflows',
        body: { name: 'x', steps: [{ type: 'wait', seconds: 5 }] },
        field: 'name',
        list: '/workflows',
      },
      {
        path: '/messages',
        body: { conversation_id: conversation.id, content: 'x' },
        field: 'content',
        list: `/conversations/${conversation.id}/messages`,
      },
      {
        path: '/webhook_endpoints',
        body: { url: 'http://127.0.0.1:9/bad-input', events: ['*'], description: 'x' },
        field: 'description',
        list: '/webhook_endpoints',
      },
      {
        path: '/channels',
        body: {
          platform: 'whatsapp',
          external_id: String(700_000 + seq++),
          access_token: 'x',
          app_secret: 'secret',
          name: 'x',
        },
        field: 'name',
        list: '/channels',
      },
    ];
  };

  it('refuses a lone surrogate in any body string with 400 pattern, and stores nothing', async () => {
    for (const write of await writes()) {
      for (const bad of LONE) {
        const before = await count(write.list);
        const res = await server().request('POST', write.path, { body: { ...write.body, [write.field]: bad } });
        expectError(res, 400, 'bad_request', { field: write.field, constraint: 'pattern' });
        expect(await count(write.list), `${write.path} stored a refused write`).toBe(before);
      }
      // The same body, well formed (an astral character is a surrogate pair), is stored as sent.
      const good = { ...write.body, [write.field]: `fz😀${write.field}` };
      const res = await server().request('POST', write.path, { body: good });
      expect(res.status, res.text).toBe(201);
      expect(res.body[write.field]).toBe(good[write.field]);
    }
  });

  it('names the place of a bad string deep in a body, a key included', async () => {
    const nested = await server().request('POST', '/workflows', {
      body: {
        name: 'x',
        steps: [
          {
            type: 'if',
            conditions: [{ field: 'data.x', op: 'eq', value: 'a\ud800' }],
            then: [{ type: 'wait', seconds: 1 }],
          },
        ],
      },
    });
    expectError(nested, 400, 'bad_request', { field: 'steps.0.conditions.0.value', constraint: 'pattern' });
    const key = await server().request('POST', '/contacts', {
      body: { phone: phone(), attributes: { 'k\ud800': 'v' } },
    });
    expectError(key, 400, 'bad_request', { field: 'attributes.k\ud800', constraint: 'pattern' });
    const workflow = (
      await server().request('POST', '/workflows', { body: { name: 'Keys', steps: [{ type: 'wait', seconds: 5 }] } })
    ).body;
    const contact = (await server().request('POST', '/contacts', { body: { phone: phone() } })).body;
    const data = await server().request('POST', `/workflows/${workflow.id}/trigger`, {
      body: { contact_id: contact.id, data: { 'k\udc00ey': 1 } },
    });
    expectError(data, 400, 'bad_request', { field: 'data.k\udc00ey', constraint: 'pattern' });
    const nul = await server().request('POST', '/contacts', {
      body: { phone: phone(), attributes: { plan: 'a\u0000b' } },
    });
    expectError(nul, 400, 'bad_request', { field: 'attributes.plan', constraint: 'pattern' });
  });

  it('refuses U+0000 in a query parameter and in a path, and a lone surrogate in a tRPC query', async () => {
    expectError(await server().request('GET', '/contacts', { query: { search: 'a\u0000' } }), 400, 'bad_request', {
      field: 'search',
      constraint: 'pattern',
    });
    expectError(await server().request('GET', '/contacts', { query: { tag: '\u0000' } }), 400, 'bad_request', {
      field: 'tag',
      constraint: 'pattern',
    });
    expectError(await server().request('GET', '/contacts/ct_%00'), 400, 'bad_request', {
      field: 'id',
      constraint: 'pattern',
    });
    // A URL cannot carry a lone surrogate (its UTF-8 does not exist); tRPC's JSON input can.
    expectError(
      await requestOverTrpc(server(), 'contacts.list', {}, { query: { search: 'fz\ud800' } }),
      400,
      'bad_request',
      {
        field: 'search',
        constraint: 'pattern',
      },
    );
    expectError(
      await requestOverTrpc(server(), 'contacts.create', {}, { body: { phone: phone(), name: 'fz\ud800' } }),
      400,
      'bad_request',
      {
        field: 'name',
        constraint: 'pattern',
      },
    );
  });

  it('refuses a __proto__ key of attributes and of workflow data, where it was dropped in silence', async () => {
    // JSON.parse keeps `__proto__` as an own key, as the server reads it.
    const attributes = `{"phone":"${phone()}","attributes":{"plan":"pro","__proto__":"x"}}`;
    const before = await count('/contacts');
    const res = await server().request('POST', '/contacts', {
      rawBody: attributes,
      headers: { 'content-type': 'application/json' },
    });
    expectError(res, 400, 'bad_request', { field: 'attributes.__proto__', constraint: 'pattern' });
    expect(await count('/contacts')).toBe(before);

    const contact = (
      await server().request('POST', '/contacts', { body: { phone: phone(), attributes: { plan: 'pro' } } })
    ).body;
    const patch = await server().request('PATCH', `/contacts/${contact.id}`, {
      rawBody: '{"attributes":{"__proto__":{"plan":"free"}}}',
      headers: { 'content-type': 'application/json' },
    });
    expectError(patch, 400, 'bad_request', { field: 'attributes.__proto__', constraint: 'pattern' });
    expect((await server().request('GET', `/contacts/${contact.id}`)).body.attributes).toEqual({ plan: 'pro' });

    const workflow = (
      await server().request('POST', '/workflows', { body: { name: 'Proto', steps: [{ type: 'wait', seconds: 5 }] } })
    ).body;
    const trigger = await server().request('POST', `/workflows/${workflow.id}/trigger`, {
      rawBody: `{"contact_id":"${contact.id}","data":{"__proto__":"x","order":"A-1"}}`,
      headers: { 'content-type': 'application/json' },
    });
    expectError(trigger, 400, 'bad_request', { field: 'data.__proto__', constraint: 'pattern' });
    expect((await server().request('GET', `/workflows/${workflow.id}/runs`)).body.total).toBe(0);
    // A strict object names it an unknown field, once.
    const top = await server().request('POST', '/contacts', {
      rawBody: `{"phone":"${phone()}","__proto__":{}}`,
      headers: { 'content-type': 'application/json' },
    });
    const body = expectError(top, 400, 'bad_request', { field: '__proto__', constraint: 'unknown' });
    expect(
      (body.error.details as { issues: { field: string }[] }).issues.filter((issue) => issue.field === '__proto__'),
    ).toHaveLength(1);
  });

  describe('events with a cursor', () => {
    it('counts in total only the records on the cursor side, so has_more = offset + data.length < total', async () => {
      // An account of its own: the events of the other tests do not move its counts.
      const created = await accountsService.createAccount(
        { database: server().database },
        {
          name: 'Cursor totals',
          plan: 'enterprise',
          rateLimitRpm: 1_000_000,
        },
      );
      const key = (
        await accountsService.createKey({ database: server().database }, { accountId: created.id, type: 'full_access' })
      ).key;
      for (let i = 0; i < 9; i++)
        expect((await server().request('POST', '/contacts', { key, body: { phone: phone() } })).status).toBe(201);
      const list = async (query: Record<string, string | number>) =>
        expectBody(await server().request('GET', '/events', { key, query }), 200, EventList);
      const ids = (await list({ limit: 100 })).data.map((e) => e.id);
      expect(ids).toHaveLength(9);
      const consistent = (page: { data: unknown[]; total: number; offset: number; has_more: boolean }) =>
        expect(page.has_more, JSON.stringify({ ...page, data: page.data.length })).toBe(
          page.offset + page.data.length < page.total,
        );

      // Older than the third newest: six; a page of three of them has more, the last page not.
      const older = await list({ starting_after: ids[2] as string, limit: 3 });
      expect(older).toMatchObject({ total: 6, offset: 0, has_more: true });
      expect(older.data.map((e) => e.id)).toEqual(ids.slice(3, 6));
      const oldest = await list({ starting_after: ids[2] as string, limit: 3, offset: 3 });
      expect(oldest).toMatchObject({ total: 6, offset: 3, has_more: false });
      // Newer than the third oldest: six as well, the oldest three of them first.
      const newer = await list({ ending_before: ids[6] as string, limit: 3 });
      expect(newer).toMatchObject({ total: 6, offset: 0, has_more: true });
      expect(newer.data.map((e) => e.id)).toEqual(ids.slice(3, 6));
      // Between two: the three strictly between them.
      const between = await list({ starting_after: ids[1] as string, ending_before: ids[5] as string, limit: 2 });
      expect(between).toMatchObject({ total: 3, has_more: true });
      expect(between.data.map((e) => e.id)).toEqual(ids.slice(2, 4));
      for (const page of [older, oldest, newer, between, await list({ starting_after: ids[8] as string })])
        consistent(page);
    });
  });
});
