import { Contact, Conversation, ConversationList, Message } from '@convo/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { describeEachDialect, expectBody, expectError } from '../testing/harness.js';

/** Moves the (faked) clock on, so that the next write is later than the last. */
const tick = () => vi.setSystemTime(Date.now() + 5);

describeEachDialect('conversations', (server) => {
  let phoneSeq = 1_000_000;
  const phone = () => `+1628${phoneSeq++}`;
  // Letters only and of one length, so one token is never a substring of another (and never matches a phone).
  let tokenSeq = 0;
  const token = () =>
    `zq${String(tokenSeq++)
      .padStart(6, '0')
      .replace(/\d/g, (d) => 'abcdefghij'[Number(d)] as string)}`;

  const createContact = async (body: { name?: string; phone?: string } = {}, key?: string) =>
    expectBody(await server().request('POST', '/contacts', { key, body: { phone: phone(), ...body } }), 201, Contact);
  const open = async (contactId: string, platform: 'whatsapp' | 'facebook' | 'instagram' = 'whatsapp', key?: string) =>
    expectBody(
      await server().request('POST', '/conversations', { key, body: { contact_id: contactId, platform } }),
      201,
      Conversation,
    );
  /** A new contact named `name` with one conversation. */
  const openWith = async (name: string, platform: 'whatsapp' | 'facebook' | 'instagram' = 'whatsapp', key?: string) =>
    open((await createContact({ name }, key)).id, platform, key);
  const send = async (conversationId: string, content: string, key?: string) =>
    expectBody(
      await server().request('POST', '/messages', { key, body: { conversation_id: conversationId, content } }),
      201,
      Message,
    );
  const setStatus = async (id: string, status: string, key?: string) =>
    expectBody(await server().request('PATCH', `/conversations/${id}`, { key, body: { status } }), 200, Conversation);
  const list = async (query: Record<string, string | number | undefined> = {}, key?: string) =>
    expectBody(await server().request('GET', '/conversations', { key, query }), 200, ConversationList);
  const ids = (page: { data: { id: string }[] }) => page.data.map((c) => c.id);

  afterEach(() => {
    vi.useRealTimers();
  });

  describe('POST /conversations', () => {
    it('opens an active conversation: 201 with no messages yet', async () => {
      const contact = await createContact({ name: 'Carla Dias' });
      const res = await server().request('POST', '/conversations', {
        body: { contact_id: contact.id, platform: 'instagram' },
      });
      const conversation = expectBody(res, 201, Conversation);
      expect(conversation.id).toMatch(/^conv_[0-9A-Z]{26}$/);
      expect(conversation).toMatchObject({
        contact: { id: contact.id, name: 'Carla Dias', phone: contact.phone },
        platform: 'instagram',
        status: 'active',
        message_count: 0,
        last_message: null,
      });
      expect(conversation.created_at).toBe(conversation.updated_at);
      expect(expectBody(await server().request('GET', `/conversations/${conversation.id}`), 200, Conversation)).toEqual(
        conversation,
      );
    });

    it('embeds a contact without a name as name null', async () => {
      const contact = await createContact();
      const conversation = await open(contact.id, 'facebook');
      expect(conversation.contact).toEqual({ id: contact.id, name: null, phone: contact.phone });
    });

    it("404s an unknown contact and another account's contact", async () => {
      expectError(
        await server().request('POST', '/conversations', { body: { contact_id: 'ct_nope', platform: 'whatsapp' } }),
        404,
        'not_found',
      );
      const theirs = await createContact({}, server().keys.otherFull);
      expectError(
        await server().request('POST', '/conversations', { body: { contact_id: theirs.id, platform: 'whatsapp' } }),
        404,
        'not_found',
      );
    });

    it.each([
      [{ platform: 'whatsapp' }, 'contact_id', 'required'],
      [{ contact_id: 'ct_x' }, 'platform', 'required'],
      [{ contact_id: 'ct_x', platform: 'sms' }, 'platform', 'enum'],
      [{ contact_id: 'ct_x', platform: 'WhatsApp' }, 'platform', 'enum'],
      [{ contact_id: 42, platform: 'whatsapp' }, 'contact_id', 'type'],
      [{ contact_id: 'ct_x', platform: 'whatsapp', status: 'resolved' }, 'status', 'unknown'],
    ])('rejects %j: %s %s (validation before existence)', async (body, field, constraint) => {
      expectError(await server().request('POST', '/conversations', { body }), 400, 'bad_request', {
        field,
        constraint,
      });
    });

    it('needs a full-access key', async () => {
      const contact = await createContact();
      const body = { contact_id: contact.id, platform: 'whatsapp' };
      expectError(
        await server().request('POST', '/conversations', { key: server().keys.readOnly, body }),
        403,
        'forbidden',
      );
      expectError(
        await server().request('POST', '/conversations', { key: server().keys.webhook, body }),
        403,
        'forbidden',
      );
    });
  });

  describe('GET /conversations/:id', () => {
    it('retrieves with a read-only key', async () => {
      const conversation = await openWith('Reader');
      expect(
        expectBody(
          await server().request('GET', `/conversations/${conversation.id}`, { key: server().keys.readOnly }),
          200,
          Conversation,
        ),
      ).toEqual(conversation);
    });

    it("404s unknown ids and other accounts' ids", async () => {
      const mine = await openWith('Mine');
      expectError(await server().request('GET', '/conversations/conv_nope'), 404, 'not_found');
      expectError(
        await server().request('GET', `/conversations/${mine.id}`, { key: server().keys.otherFull }),
        404,
        'not_found',
      );
    });

    it('is gone once its contact is deleted', async () => {
      const contact = await createContact();
      const conversation = await open(contact.id);
      expect((await server().request('DELETE', `/contacts/${contact.id}`)).status).toBe(204);
      expectError(await server().request('GET', `/conversations/${conversation.id}`), 404, 'not_found');
    });
  });

  describe('PATCH /conversations/:id', () => {
    it.each([
      ['active', 'resolved'],
      ['active', 'archived'],
      ['resolved', 'active'],
      ['resolved', 'archived'],
    ])('allows %s → %s', async (from, to) => {
      const conversation = await openWith(`Transit ${from} ${to}`);
      const before = from === 'active' ? conversation : await setStatus(conversation.id, from);
      expect(before.status).toBe(from);
      const after = await setStatus(conversation.id, to);
      expect(after).toMatchObject({
        id: conversation.id,
        status: to,
        message_count: 0,
        last_message: null,
        created_at: conversation.created_at,
      });
      expect(after.updated_at >= before.updated_at).toBe(true);
      expect(expectBody(await server().request('GET', `/conversations/${conversation.id}`), 200, Conversation)).toEqual(
        after,
      );
    });

    it.each(['active', 'resolved'])('keeps archived final: archived → %s is 400 transition', async (to) => {
      const conversation = await openWith(`Final ${to}`);
      const archived = await setStatus(conversation.id, 'archived');
      const res = await server().request('PATCH', `/conversations/${conversation.id}`, { body: { status: to } });
      expectError(res, 400, 'bad_request', { field: 'status', constraint: 'transition' });
      expect(expectBody(await server().request('GET', `/conversations/${conversation.id}`), 200, Conversation)).toEqual(
        archived,
      );
    });

    it.each(['active', 'resolved', 'archived'])(
      'treats setting the current status (%s) as a 200 no-op',
      async (status) => {
        const conversation = await openWith(`Same ${status}`);
        const current = status === 'active' ? conversation : await setStatus(conversation.id, status);
        const again = await setStatus(conversation.id, status);
        expect(again).toEqual(current);
        expect(
          expectBody(await server().request('GET', `/conversations/${conversation.id}`), 200, Conversation),
        ).toEqual(current);
      },
    );

    it.each([
      [{ status: 'closed' }, 'status', 'enum'],
      [{ status: 1 }, 'status', 'type'],
      [{ status: 'resolved', platform: 'facebook' }, 'platform', 'unknown'],
    ])('rejects %j: %s %s', async (body, field, constraint) => {
      const conversation = await openWith('Invalid patch');
      expectError(await server().request('PATCH', `/conversations/${conversation.id}`, { body }), 400, 'bad_request', {
        field,
        constraint,
      });
      expect(
        expectBody(await server().request('GET', `/conversations/${conversation.id}`), 200, Conversation).status,
      ).toBe('active');
    });

    it('needs a full-access key: 403 for read-only (before validation and existence)', async () => {
      const conversation = await openWith('Read only');
      const { readOnly } = server().keys;
      expectError(
        await server().request('PATCH', `/conversations/${conversation.id}`, {
          key: readOnly,
          body: { status: 'resolved' },
        }),
        403,
        'forbidden',
      );
      expectError(
        await server().request('PATCH', `/conversations/${conversation.id}`, {
          key: readOnly,
          body: { status: 'closed' },
        }),
        403,
        'forbidden',
      );
      expectError(
        await server().request('PATCH', '/conversations/conv_nope', { key: readOnly, body: { status: 'resolved' } }),
        403,
        'forbidden',
      );
      expect(
        expectBody(await server().request('GET', `/conversations/${conversation.id}`), 200, Conversation).status,
      ).toBe('active');
    });

    it("404s unknown ids and other accounts' ids", async () => {
      const mine = await openWith('Patch mine');
      expectError(
        await server().request('PATCH', '/conversations/conv_nope', { body: { status: 'resolved' } }),
        404,
        'not_found',
      );
      expectError(
        await server().request('PATCH', `/conversations/${mine.id}`, {
          key: server().keys.otherFull,
          body: { status: 'resolved' },
        }),
        404,
        'not_found',
      );
      expect(expectBody(await server().request('GET', `/conversations/${mine.id}`), 200, Conversation).status).toBe(
        'active',
      );
    });
  });

  describe('GET /conversations', () => {
    it('answers the list envelope with the default page', async () => {
      const key = server().keys.otherFull;
      const t = token();
      const conversation = await openWith(`Envelope ${t}`, 'whatsapp', key);
      const page = await list({ search: t }, key);
      expect(page).toEqual({ data: [conversation], total: 1, limit: 20, offset: 0, has_more: false });
      // Read-only keys may list.
      expect(
        ids(
          expectBody(
            await server().request('GET', '/conversations', { key: server().keys.readOnly }),
            200,
            ConversationList,
          ),
        ),
      ).not.toContain(conversation.id);
    });

    it('orders by latest activity: last message, else creation; a status change is not activity', async () => {
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
      const key = server().keys.otherFull;
      const t = token();
      const a = await openWith(`Order ${t} a`, 'whatsapp', key);
      const b = await openWith(`Order ${t} b`, 'facebook', key);
      const c = await openWith(`Order ${t} c`, 'instagram', key);
      // No messages yet: newest created first.
      expect(ids(await list({ search: t }, key))).toEqual([c.id, b.id, a.id]);

      tick();
      const sent = await send(a.id, 'hello a', key);
      expect(ids(await list({ search: t }, key))).toEqual([a.id, c.id, b.id]);
      // The most recently active conversation tops the unfiltered list too.
      const top = (await list({}, key)).data[0];
      expect(top?.id).toBe(a.id);
      expect(top?.last_message).toEqual({ content: 'hello a', timestamp: sent.created_at });

      // Status changes move nothing.
      tick();
      await setStatus(b.id, 'resolved', key);
      await setStatus(c.id, 'archived', key);
      expect(ids(await list({ search: t }, key))).toEqual([a.id, c.id, b.id]);

      // A conversation created after a's last message comes before it.
      tick();
      const d = await openWith(`Order ${t} d`, 'whatsapp', key);
      expect(ids(await list({ search: t }, key))).toEqual([d.id, a.id, c.id, b.id]);

      tick();
      await send(b.id, 'hello b', key);
      expect(ids(await list({ search: t }, key))).toEqual([b.id, d.id, a.id, c.id]);
    });

    it('breaks ties in activity by id, descending', async () => {
      const key = server().keys.otherFull;
      const t = token();
      // Every write happens at one instant (an hour ago, so these stay below the other tests' rows).
      const instant = new Date(Date.now() - 3_600_000);
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(instant);
      const a = await openWith(`Tie ${t} a`, 'whatsapp', key);
      const b = await openWith(`Tie ${t} b`, 'whatsapp', key);
      const c = await openWith(`Tie ${t} c`, 'whatsapp', key);
      expect(new Set([a.created_at, b.created_at, c.created_at])).toEqual(new Set([instant.toISOString()]));
      expect([a.id, b.id, c.id]).toEqual([a.id, b.id, c.id].sort());
      expect(ids(await list({ search: t }, key))).toEqual([c.id, b.id, a.id]);
      // A message at the same instant leaves a tie: still by id.
      const sent = await send(a.id, 'same instant', key);
      expect(sent.created_at).toBe(instant.toISOString());
      expect(ids(await list({ search: t }, key))).toEqual([c.id, b.id, a.id]);
      vi.useRealTimers();
    });

    it('filters by status, by platform, and by both', async () => {
      const key = server().keys.otherFull;
      const t = token();
      const waActive = await openWith(`Filter ${t} 1`, 'whatsapp', key);
      const fbActive = await openWith(`Filter ${t} 2`, 'facebook', key);
      const igResolved = await openWith(`Filter ${t} 3`, 'instagram', key);
      await setStatus(igResolved.id, 'resolved', key);
      const waResolved = await openWith(`Filter ${t} 4`, 'whatsapp', key);
      await setStatus(waResolved.id, 'resolved', key);
      const waArchived = await openWith(`Filter ${t} 5`, 'whatsapp', key);
      await setStatus(waArchived.id, 'archived', key);

      expect(ids(await list({ search: t, status: 'active' }, key))).toEqual([fbActive.id, waActive.id]);
      expect(ids(await list({ search: t, status: 'resolved' }, key))).toEqual([waResolved.id, igResolved.id]);
      expect(ids(await list({ search: t, status: 'archived' }, key))).toEqual([waArchived.id]);
      expect(ids(await list({ search: t, platform: 'whatsapp' }, key))).toEqual([
        waArchived.id,
        waResolved.id,
        waActive.id,
      ]);
      expect(ids(await list({ search: t, platform: 'instagram' }, key))).toEqual([igResolved.id]);
      const both = await list({ search: t, status: 'resolved', platform: 'whatsapp' }, key);
      expect(ids(both)).toEqual([waResolved.id]);
      expect(both.total).toBe(1);
      expect(await list({ search: t, status: 'archived', platform: 'facebook' }, key)).toEqual({
        data: [],
        total: 0,
        limit: 20,
        offset: 0,
        has_more: false,
      });

      // Without a search, every row matches the filter.
      const resolved = await list({ status: 'resolved', limit: 100 }, key);
      expect(resolved.data.every((c) => c.status === 'resolved')).toBe(true);
      expect(ids(resolved)).toEqual(expect.arrayContaining([waResolved.id, igResolved.id]));
      const whatsapp = await list({ platform: 'whatsapp', limit: 100 }, key);
      expect(whatsapp.data.every((c) => c.platform === 'whatsapp')).toBe(true);
      expect(ids(whatsapp)).toEqual(expect.arrayContaining([waActive.id, waResolved.id, waArchived.id]));
      const combined = await list({ status: 'active', platform: 'facebook', limit: 100 }, key);
      expect(combined.data.every((c) => c.status === 'active' && c.platform === 'facebook')).toBe(true);
      expect(ids(combined)).toContain(fbActive.id);
      expect(combined.total).toBe(combined.data.length);
    });

    it("filters by contact: its conversations only; an unknown or another account's contact selects none", async () => {
      const key = server().keys.otherFull;
      const t = token();
      const contact = await createContact({ name: `Contact ${t}` }, key);
      const first = await open(contact.id, 'whatsapp', key);
      await setStatus(first.id, 'archived', key);
      const second = await open(contact.id, 'whatsapp', key);
      const third = await open(contact.id, 'instagram', key);
      await openWith(`Contact ${t} other`, 'whatsapp', key);

      const all = await list({ contact_id: contact.id }, key);
      expect(ids(all)).toEqual([third.id, second.id, first.id]);
      expect(all.total).toBe(3);
      expect(ids(await list({ contact_id: contact.id, status: 'active' }, key))).toEqual([third.id, second.id]);
      expect(ids(await list({ contact_id: contact.id, platform: 'instagram' }, key))).toEqual([third.id]);
      expect(ids(await list({ contact_id: contact.id, search: t }, key))).toEqual([third.id, second.id, first.id]);
      expect((await list({ contact_id: contact.id, search: `${t}x` }, key)).total).toBe(0);
      const paged = await list({ contact_id: contact.id, limit: 1, offset: 1 }, key);
      expect(paged).toMatchObject({ total: 3, has_more: true });
      expect(ids(paged)).toEqual([second.id]);

      expect((await list({ contact_id: 'ct_unknown' }, key)).total).toBe(0);
      expect((await list({ contact_id: contact.id })).total).toBe(0);
    });

    it("never shows another account's conversations", async () => {
      const t = token();
      const mine = await openWith(`Tenant ${t}`);
      expect(ids(await list({ search: t }))).toEqual([mine.id]);
      expect((await list({ search: t }, server().keys.otherFull)).total).toBe(0);
    });

    it('searches the contact name as a case-insensitive substring', async () => {
      const key = server().keys.otherFull;
      const t = token();
      const ana = await openWith(`Ana Souza ${t}`, 'whatsapp', key);
      const elise = await openWith(`Élise Moreau ${t}`, 'facebook', key);
      expect(ids(await list({ search: `ana SOUZA ${t.toUpperCase()}` }, key))).toEqual([ana.id]);
      expect(ids(await list({ search: `ouza ${t}` }, key))).toEqual([ana.id]);
      expect(ids(await list({ search: `éLISE MOR` }, key))).toEqual([elise.id]);
      expect(ids(await list({ search: t.toUpperCase() }, key))).toEqual([elise.id, ana.id]);
      // Combined with a filter.
      expect(ids(await list({ search: t, platform: 'facebook' }, key))).toEqual([elise.id]);
    });

    it('searches phone digits when the search holds a digit; a letters-only search never matches a phone', async () => {
      const key = server().keys.otherFull;
      const target = await open(
        (await createContact({ name: 'Phone Match', phone: '+14155550123' }, key)).id,
        'whatsapp',
        key,
      );
      const other = await open(
        (await createContact({ name: 'Phone Other', phone: '+4930123456' }, key)).id,
        'whatsapp',
        key,
      );

      for (const search of ['415 555', '+1415555', '4155550123', '(415) 555-0123', '50123']) {
        const found = ids(await list({ search, limit: 100 }, key));
        expect(found, search).toContain(target.id);
        expect(found, search).not.toContain(other.id);
      }
      expect(ids(await list({ search: '3012', limit: 100 }, key))).toEqual(expect.arrayContaining([other.id]));
      expect(ids(await list({ search: '3012', limit: 100 }, key))).not.toContain(target.id);
      expect((await list({ search: '415 999' }, key)).data.map((c) => c.id)).not.toContain(target.id);

      // No digit in the search: only names are searched, so punctuation or letters match no phone.
      for (const search of ['+', '-', '( )', 'qqxxzz']) {
        expect(await list({ search }, key), search).toMatchObject({ data: [], total: 0 });
      }
    });

    it('treats LIKE wildcards in a search literally', async () => {
      const key = server().keys.otherFull;
      await openWith(`Wild ${token()}`, 'whatsapp', key);
      for (const search of ['%', '_', '\\', '%q%']) expect((await list({ search }, key)).total, search).toBe(0);
      // A search with no digit compares names only; this one holds a literal %.
      const pct = await openWith(`Half% OFF ${token()}`, 'whatsapp', key);
      expect(ids(await list({ search: 'f% of' }, key))).toEqual([pct.id]);
    });

    it('treats an empty search as no filter', async () => {
      const key = server().keys.otherFull;
      const all = await list({}, key);
      const empty = await list({ search: '' }, key);
      expect(empty.total).toBe(all.total);
      expect(ids(empty)).toEqual(ids(all));
    });

    it('pages with limit and offset, reporting total and has_more', async () => {
      const key = server().keys.otherFull;
      const t = token();
      const created: string[] = [];
      for (let i = 0; i < 5; i++) created.push((await openWith(`Page ${t} ${i}`, 'whatsapp', key)).id);
      const newestFirst = [...created].reverse();

      const pages = [];
      for (let offset = 0; offset < 5; offset += 2) pages.push(await list({ search: t, limit: 2, offset }, key));
      expect(pages.map((p) => [p.limit, p.offset, p.total, p.has_more, p.data.length])).toEqual([
        [2, 0, 5, true, 2],
        [2, 2, 5, true, 2],
        [2, 4, 5, false, 1],
      ]);
      expect(pages.flatMap(ids)).toEqual(newestFirst);
      expect(await list({ search: t, limit: 2, offset: 10 }, key)).toEqual({
        data: [],
        total: 5,
        limit: 2,
        offset: 10,
        has_more: false,
      });
      expect(await list({ search: t, limit: 5 }, key)).toMatchObject({ total: 5, has_more: false });
      expect(ids(await list({ search: t, limit: 100, offset: 3 }, key))).toEqual(newestFirst.slice(3));
    });

    it('pages the whole account without repeating or skipping', async () => {
      const key = server().keys.otherFull;
      const first = await list({ limit: 100 }, key);
      expect(first.total).toBeLessThanOrEqual(100);
      const seen: string[] = [];
      for (let offset = 0; offset < first.total; offset += 3) {
        const page = await list({ limit: 3, offset }, key);
        expect(page.offset).toBe(offset);
        expect(page.total).toBe(first.total);
        expect(page.has_more).toBe(offset + page.data.length < page.total);
        seen.push(...ids(page));
      }
      expect(seen).toEqual(ids(first));
    });

    it.each([
      [{ limit: 101 }, 'limit', 'max'],
      [{ limit: 0 }, 'limit', 'min'],
      [{ limit: -1 }, 'limit', 'min'],
      [{ limit: 'x' }, 'limit', 'type'],
      [{ limit: '2.5' }, 'limit', 'type'],
      [{ offset: -1 }, 'offset', 'min'],
      [{ offset: 'x' }, 'offset', 'type'],
      [{ status: 'open' }, 'status', 'enum'],
      [{ status: 'ACTIVE' }, 'status', 'enum'],
      [{ platform: 'sms' }, 'platform', 'enum'],
      [{ sort: 'created_at' }, 'sort', 'unknown'],
      [{ contact: 'ct_x' }, 'contact', 'unknown'],
    ])('rejects query %j: %s %s', async (query, field, constraint) => {
      expectError(await server().request('GET', '/conversations', { query }), 400, 'bad_request', {
        field,
        constraint,
      });
    });

    it('accepts the bounds 1 and 100', async () => {
      expect((await list({ limit: 1 })).limit).toBe(1);
      expect((await list({ limit: 100 })).limit).toBe(100);
    });

    it('refuses webhook keys', async () => {
      expectError(await server().request('GET', '/conversations', { key: server().keys.webhook }), 403, 'forbidden');
    });
  });
});
