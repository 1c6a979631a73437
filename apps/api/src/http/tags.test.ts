import { Contact, ContactList, Tag, TagList } from '@convo/core';
import { describe, expect, it } from 'vitest';
import { accountsService } from '../services/accounts.js';
import { describeEachDialect, expectBody, expectError } from '../testing/harness.js';

describeEachDialect('tags', (server) => {
  let phoneSeq = 3_000_000;
  const phone = () => `+1929${phoneSeq++}`;

  /** A full-access key of a new account, so that GET /tags sees only this test's tags. */
  const freshKey = async () => {
    const account = await accountsService.createAccount(
      { database: server().database },
      { name: 'Fresh', plan: 'business' },
    );
    return (
      await accountsService.createKey({ database: server().database }, { accountId: account.id, type: 'full_access' })
    ).key;
  };

  const createContact = async (tags: string[] = [], key?: string) =>
    expectBody(await server().request('POST', '/contacts', { key, body: { phone: phone(), tags } }), 201, Contact);

  const attach = (id: string, tag: unknown, key?: string) =>
    server().request('POST', `/contacts/${id}/tags`, { key, body: { tag } });
  const detach = (id: string, tag: string, key?: string) =>
    server().request('DELETE', `/contacts/${id}/tags/${encodeURIComponent(tag)}`, { key });
  const listTags = async (key: string, query?: Record<string, string | number>) =>
    expectBody(await server().request('GET', '/tags', { key, query }), 200, TagList);

  describe('POST /contacts/:id/tags', () => {
    it('attaches a tag and answers 200 with the contact', async () => {
      const contact = await createContact(['vip']);
      const updated = expectBody(await attach(contact.id, 'new'), 200, Contact);
      expect(updated).toMatchObject({
        id: contact.id,
        phone: contact.phone,
        tags: ['vip', 'new'],
        created_at: contact.created_at,
      });
      expect(updated.updated_at >= contact.updated_at).toBe(true);
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact)).toEqual(updated);
    });

    it('attaches a tag with spaces inside and non-ASCII characters', async () => {
      const contact = await createContact();
      expect(expectBody(await attach(contact.id, 'café vip'), 200, Contact).tags).toEqual(['café vip']);
      expect(expectBody(await attach(contact.id, '😀'.repeat(64)), 200, Contact).tags).toEqual([
        'café vip',
        '😀'.repeat(64),
      ]);
    });

    it('treats attaching a tag the contact already has as a 200 no-op', async () => {
      const contact = await createContact(['vip', 'new']);
      const again = expectBody(await attach(contact.id, 'vip'), 200, Contact);
      expect(again).toEqual(contact);
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact)).toEqual(contact);
    });

    it('refuses a 51st tag, but still accepts one the contact already has', async () => {
      const tags = Array.from({ length: 50 }, (_, i) => `t${i}`);
      const contact = await createContact(tags);
      expect(contact.tags).toHaveLength(50);
      expectError(await attach(contact.id, 't50'), 400, 'bad_request', { field: 'tags', constraint: 'max' });
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact).tags).toEqual(tags);
      expect(expectBody(await attach(contact.id, 't7'), 200, Contact).tags).toEqual(tags);
      // Room again after a detach.
      expectBody(await detach(contact.id, 't0'), 200, Contact);
      expect(expectBody(await attach(contact.id, 't50'), 200, Contact).tags).toEqual([...tags.slice(1), 't50']);
    });

    it.each([
      ['a/b', 'pattern'],
      ['/', 'pattern'],
      [' vip', 'pattern'],
      ['vip ', 'pattern'],
      [' ', 'pattern'],
      ['', 'min_length'],
      ['x'.repeat(65), 'max_length'],
      ['😀'.repeat(65), 'max_length'],
      [42, 'type'],
      [null, 'type'],
      [['vip'], 'type'],
    ])('rejects tag %j: %s', async (tag, constraint) => {
      const contact = await createContact();
      expectError(await attach(contact.id, tag), 400, 'bad_request', { field: 'tag', constraint });
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact).tags).toEqual([]);
    });

    it('loses no tag when several are attached at once', async () => {
      const key = await freshKey();
      const contact = await createContact([], key);
      const tags = Array.from({ length: 8 }, (_, i) => `c${i}`);
      const responses = await Promise.all(tags.map((tag) => attach(contact.id, tag, key)));
      for (const res of responses) expectBody(res, 200, Contact);
      const final = expectBody(await server().request('GET', `/contacts/${contact.id}`, { key }), 200, Contact);
      expect([...final.tags].sort()).toEqual(tags);
      expect((await listTags(key)).data).toEqual(tags.map((name) => ({ name, contact_count: 1 })));
    });

    it('answers 200 to the same tag attached several times at once', async () => {
      const key = await freshKey();
      const contact = await createContact([], key);
      const responses = await Promise.all(Array.from({ length: 4 }, () => attach(contact.id, 'dup', key)));
      for (const res of responses) expect(expectBody(res, 200, Contact).tags).toEqual(['dup']);
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`, { key }), 200, Contact).tags).toEqual([
        'dup',
      ]);
      expect((await listTags(key)).data).toEqual([{ name: 'dup', contact_count: 1 }]);
    });

    it('answers 200 or 404, never 500, to tags attached while the contact is deleted', async () => {
      const key = await freshKey();
      const contact = await createContact(['old'], key);
      const [deleted, ...attached] = await Promise.all([
        server().request('DELETE', `/contacts/${contact.id}`, { key }),
        ...Array.from({ length: 4 }, (_, i) => attach(contact.id, `late${i}`, key)),
      ]);
      expect(deleted?.status).toBe(204);
      for (const res of attached) {
        if (res.status === 404) expectError(res, 404, 'not_found');
        else expectBody(res, 200, Contact);
      }
      expect(await listTags(key)).toEqual({ data: [], total: 0, limit: 20, offset: 0, has_more: false });
    });

    it('accepts a tag of exactly 64 characters', async () => {
      const contact = await createContact();
      expect(expectBody(await attach(contact.id, 'x'.repeat(64)), 200, Contact).tags).toEqual(['x'.repeat(64)]);
    });

    it('needs a tag and nothing else in the body', async () => {
      const contact = await createContact();
      expectError(await server().request('POST', `/contacts/${contact.id}/tags`, { body: {} }), 400, 'bad_request', {
        field: 'tag',
        constraint: 'required',
      });
      expectError(
        await server().request('POST', `/contacts/${contact.id}/tags`, { body: { tag: 'vip', color: 'red' } }),
        400,
        'bad_request',
        {
          field: 'color',
          constraint: 'unknown',
        },
      );
      expectError(
        await server().request('POST', `/contacts/${contact.id}/tags`, { body: { tags: ['vip'] } }),
        400,
        'bad_request',
        {
          field: 'tag',
          constraint: 'required',
        },
      );
    });

    it("404s an unknown contact and another account's contact", async () => {
      expectError(await attach('ct_nope', 'vip'), 404, 'not_found');
      const theirs = await createContact(['theirs'], server().keys.otherFull);
      expectError(await attach(theirs.id, 'vip'), 404, 'not_found');
      // Untouched.
      const seen = expectBody(
        await server().request('GET', `/contacts/${theirs.id}`, { key: server().keys.otherFull }),
        200,
        Contact,
      );
      expect(seen.tags).toEqual(['theirs']);
    });

    it('validates before looking the contact up', async () => {
      expectError(await attach('ct_nope', 'a/b'), 400, 'bad_request', { field: 'tag', constraint: 'pattern' });
    });

    it('needs a full-access key', async () => {
      const contact = await createContact();
      expectError(await attach(contact.id, 'vip', server().keys.readOnly), 403, 'forbidden');
      expectError(await attach(contact.id, 'vip', server().keys.webhook), 403, 'forbidden');
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact).tags).toEqual([]);
    });
  });

  describe('PATCH /tags/:tag', () => {
    const rename = (tag: string, name: unknown, key?: string) =>
      server().request('PATCH', `/tags/${encodeURIComponent(tag)}`, { key, body: { name } });
    const contact = async (id: string, key: string) =>
      expectBody(await server().request('GET', `/contacts/${id}`, { key }), 200, Contact);
    const tagged = async (tag: string, key: string) =>
      expectBody(await server().request('GET', '/contacts', { key, query: { tag, limit: 100 } }), 200, ContactList)
        .data.map((c) => c.id)
        .sort();

    it('renames a tag on every contact, in its place, and merges into a name that exists', async () => {
      const key = await freshKey();
      const a = await createContact(['first', 'needs reply', 'last'], key);
      const b = await createContact(['needs reply'], key);
      const c = await createContact(['urgent', 'needs reply'], key);
      const untouched = await createContact(['other'], key);

      expect(expectBody(await rename('needs reply', 'pending', key), 200, Tag)).toEqual({
        name: 'pending',
        contact_count: 3,
      });
      expect((await contact(a.id, key)).tags).toEqual(['first', 'pending', 'last']);
      expect((await contact(b.id, key)).tags).toEqual(['pending']);
      expect(await tagged('pending', key)).toEqual([a.id, b.id, c.id].sort());
      expect(await tagged('needs reply', key)).toEqual([]);
      expect(await contact(untouched.id, key)).toEqual(untouched);

      // Into an existing name: a contact with both keeps the one it had, once.
      expect(expectBody(await rename('urgent', 'pending', key), 200, Tag)).toEqual({
        name: 'pending',
        contact_count: 3,
      });
      expect((await contact(c.id, key)).tags).toEqual(['pending']);
      expect((await listTags(key)).data).toEqual([
        { name: 'first', contact_count: 1 },
        { name: 'last', contact_count: 1 },
        { name: 'other', contact_count: 1 },
        { name: 'pending', contact_count: 3 },
      ]);
      // To its own name: nothing changes.
      const before = await contact(a.id, key);
      expect(expectBody(await rename('pending', 'pending', key), 200, Tag)).toEqual({
        name: 'pending',
        contact_count: 3,
      });
      expect(await contact(a.id, key)).toEqual(before);
    });

    it("validates the name, 404s a tag nobody has or another account's tag, and needs a full-access key", async () => {
      const key = await freshKey();
      await createContact(['mine'], key);
      expectError(await rename('mine', ' padded', key), 400, 'bad_request', { field: 'name', constraint: 'pattern' });
      expectError(await rename('mine', 'a/b', key), 400, 'bad_request', { field: 'name', constraint: 'pattern' });
      expectError(await rename('mine', 'x'.repeat(65), key), 400, 'bad_request', {
        field: 'name',
        constraint: 'max_length',
      });
      expectError(await rename('mine', undefined, key), 400, 'bad_request', { field: 'name', constraint: 'required' });
      expectError(await rename('nobody', 'x', key), 404, 'not_found');
      expectError(await rename('mine', 'x', server().keys.otherFull), 404, 'not_found');
      expectError(await rename('mine', 'x', server().keys.readOnly), 403, 'forbidden');
      expect((await listTags(key)).data).toEqual([{ name: 'mine', contact_count: 1 }]);
    });
  });

  describe('DELETE /tags/:tag', () => {
    it('removes a URL-encoded tag from every contact and answers 204; then the tag is 404', async () => {
      const key = await freshKey();
      const a = await createContact(['keep', 'drop me please', 'also'], key);
      const b = await createContact(['drop me please'], key);
      const del = await server().request('DELETE', `/tags/${encodeURIComponent('drop me please')}`, { key });
      expect(del.status, del.text).toBe(204);
      expect(del.text).toBe('');
      expect(expectBody(await server().request('GET', `/contacts/${a.id}`, { key }), 200, Contact).tags).toEqual([
        'keep',
        'also',
      ]);
      expect(expectBody(await server().request('GET', `/contacts/${b.id}`, { key }), 200, Contact).tags).toEqual([]);
      expect((await listTags(key)).data.map((t) => t.name)).toEqual(['also', 'keep']);
      expectError(
        await server().request('DELETE', `/tags/${encodeURIComponent('drop me please')}`, { key }),
        404,
        'not_found',
      );
    });

    it("404s another account's tag and needs a full-access key", async () => {
      const key = await freshKey();
      await createContact(['kept'], key);
      expectError(await server().request('DELETE', '/tags/kept', { key: server().keys.otherFull }), 404, 'not_found');
      expectError(await server().request('DELETE', '/tags/kept', { key: server().keys.readOnly }), 403, 'forbidden');
      expect((await listTags(key)).data).toEqual([{ name: 'kept', contact_count: 1 }]);
    });
  });

  describe('DELETE /contacts/:id/tags/:tag', () => {
    it('removes a URL-encoded tag and answers 200 with the contact', async () => {
      const contact = await createContact(['café vip', 'new', 'a b+c&d?e']);
      const res = await server().request('DELETE', `/contacts/${contact.id}/tags/caf%C3%A9%20vip`);
      const updated = expectBody(res, 200, Contact);
      expect(updated).toMatchObject({ id: contact.id, tags: ['new', 'a b+c&d?e'] });
      expect(updated.updated_at >= contact.updated_at).toBe(true);
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact)).toEqual(updated);

      expect(expectBody(await detach(contact.id, 'a b+c&d?e'), 200, Contact).tags).toEqual(['new']);
    });

    it('404s when the contact does not have the tag, and leaves it as it was', async () => {
      const contact = await createContact(['vip']);
      expectError(await detach(contact.id, 'gold'), 404, 'not_found');
      expectError(await detach(contact.id, 'VIP'), 404, 'not_found');
      expectError(await server().request('DELETE', `/contacts/${contact.id}/tags/v%2Fip`), 404, 'not_found');
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact)).toEqual(contact);
      // Removing twice: the second is a 404.
      expectBody(await detach(contact.id, 'vip'), 200, Contact);
      expectError(await detach(contact.id, 'vip'), 404, 'not_found');
    });

    it("404s an unknown contact and another account's contact", async () => {
      expectError(await detach('ct_nope', 'vip'), 404, 'not_found');
      const theirs = await createContact(['vip'], server().keys.otherFull);
      expectError(await detach(theirs.id, 'vip'), 404, 'not_found');
      const seen = expectBody(
        await server().request('GET', `/contacts/${theirs.id}`, { key: server().keys.otherFull }),
        200,
        Contact,
      );
      expect(seen.tags).toEqual(['vip']);
    });

    it('needs a full-access key', async () => {
      const contact = await createContact(['vip']);
      expectError(await detach(contact.id, 'vip', server().keys.readOnly), 403, 'forbidden');
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact).tags).toEqual(['vip']);
    });
  });

  describe('GET /tags', () => {
    it('lists the tags in use by name in code-point order, with contact counts', async () => {
      const key = await freshKey();
      // Code-point order: 'B' (U+0042) < 'Z' < 'a' < 'b' < 'é' (U+00E9) < 'ｚ' (U+FF5A) < '😀' (U+1F600).
      // Neither a locale collation ('a' < 'B') nor UTF-16 order ('😀' < 'ｚ') gives this.
      await createContact(['a', 'é', '😀'], key);
      await createContact(['b', 'B', 'a'], key);
      await createContact(['ｚ', 'Z', 'a'], key);
      await createContact([], key);

      const list = await listTags(key);
      expect(list).toEqual({
        data: [
          { name: 'B', contact_count: 1 },
          { name: 'Z', contact_count: 1 },
          { name: 'a', contact_count: 3 },
          { name: 'b', contact_count: 1 },
          { name: 'é', contact_count: 1 },
          { name: 'ｚ', contact_count: 1 },
          { name: '😀', contact_count: 1 },
        ],
        total: 7,
        limit: 20,
        offset: 0,
        has_more: false,
      });
    });

    it('keeps the counts up to date through attach, detach, PATCH and delete', async () => {
      const key = await freshKey();
      const names = async () => (await listTags(key)).data.map((t) => `${t.name}:${t.contact_count}`);

      expect(await listTags(key)).toEqual({ data: [], total: 0, limit: 20, offset: 0, has_more: false });

      const ana = await createContact(['vip', 'lead'], key);
      const bia = await createContact(['vip'], key);
      expect(await names()).toEqual(['lead:1', 'vip:2']);

      expectBody(await attach(ana.id, 'café vip', key), 200, Contact);
      expectBody(await attach(bia.id, 'café vip', key), 200, Contact);
      expect(await names()).toEqual(['café vip:2', 'lead:1', 'vip:2']);

      // A no-op attach counts nothing twice.
      expectBody(await attach(bia.id, 'vip', key), 200, Contact);
      expect(await names()).toEqual(['café vip:2', 'lead:1', 'vip:2']);

      // Detaching the last holder of a tag takes it off the list.
      expectBody(await detach(ana.id, 'lead', key), 200, Contact);
      expect(await names()).toEqual(['café vip:2', 'vip:2']);
      expectBody(await detach(ana.id, 'café vip', key), 200, Contact);
      expect(await names()).toEqual(['café vip:1', 'vip:2']);

      // PATCH replaces the whole set.
      expectBody(
        await server().request('PATCH', `/contacts/${bia.id}`, { key, body: { tags: ['gold', 'vip', 'gold'] } }),
        200,
        Contact,
      );
      expect(await names()).toEqual(['gold:1', 'vip:2']);
      expectBody(await server().request('PATCH', `/contacts/${ana.id}`, { key, body: { tags: [] } }), 200, Contact);
      expect(await names()).toEqual(['gold:1', 'vip:1']);
      // A PATCH of other fields leaves the tags alone.
      expectBody(await server().request('PATCH', `/contacts/${bia.id}`, { key, body: { name: 'Bia' } }), 200, Contact);
      expect(await names()).toEqual(['gold:1', 'vip:1']);

      // Deleting a contact removes its tags.
      expectBody(await attach(ana.id, 'gold', key), 200, Contact);
      expect(await names()).toEqual(['gold:2', 'vip:1']);
      expect((await server().request('DELETE', `/contacts/${bia.id}`, { key })).status).toBe(204);
      expect(await names()).toEqual(['gold:1']);
      expect((await server().request('DELETE', `/contacts/${ana.id}`, { key })).status).toBe(204);
      expect(await listTags(key)).toEqual({ data: [], total: 0, limit: 20, offset: 0, has_more: false });
    });

    it('agrees with GET /contacts?tag=', async () => {
      const key = await freshKey();
      const a = await createContact(['café vip'], key);
      const b = await createContact(['café vip', 'x'], key);
      await createContact(['x'], key);
      const tag = (await listTags(key)).data.find((t) => t.name === 'café vip');
      expect(tag).toEqual({ name: 'café vip', contact_count: 2 });
      const contacts = expectBody(
        await server().request('GET', '/contacts', { key, query: { tag: 'café vip' } }),
        200,
        ContactList,
      );
      expect(contacts.total).toBe(2);
      expect(contacts.data.map((c) => c.id).sort()).toEqual([a.id, b.id].sort());
    });

    it('pages with limit and offset', async () => {
      const key = await freshKey();
      const expected = ['t01', 't02', 't03', 't04', 't05'];
      await createContact(['t03', 't05', 't01'], key);
      await createContact(['t04', 't02', 't01'], key);

      const first = await listTags(key, { limit: 2 });
      expect(first).toMatchObject({ total: 5, limit: 2, offset: 0, has_more: true });
      expect(first.data).toEqual([
        { name: 't01', contact_count: 2 },
        { name: 't02', contact_count: 1 },
      ]);
      const seen: string[] = [];
      for (let offset = 0; offset < 5; offset += 2) {
        const page = await listTags(key, { limit: 2, offset });
        expect(page).toMatchObject({ total: 5, limit: 2, offset, has_more: offset + 2 < 5 });
        seen.push(...page.data.map((t) => t.name));
      }
      expect(seen).toEqual(expected);
      expect(await listTags(key, { offset: 3 })).toMatchObject({
        data: [{ name: 't04' }, { name: 't05' }],
        total: 5,
        limit: 20,
        offset: 3,
        has_more: false,
      });
      expect(await listTags(key, { offset: 5 })).toEqual({ data: [], total: 5, limit: 20, offset: 5, has_more: false });
      expect(await listTags(key, { limit: 100 })).toMatchObject({ total: 5, limit: 100, has_more: false });
    });

    it("lists only the caller's account's tags", async () => {
      const key = await freshKey();
      const otherKey = await freshKey();
      await createContact(['shared', 'mine-only'], key);
      await createContact(['shared', 'theirs-only'], otherKey);
      await createContact(['shared'], otherKey);
      expect((await listTags(key)).data).toEqual([
        { name: 'mine-only', contact_count: 1 },
        { name: 'shared', contact_count: 1 },
      ]);
      expect((await listTags(otherKey)).data).toEqual([
        { name: 'shared', contact_count: 2 },
        { name: 'theirs-only', contact_count: 1 },
      ]);
    });

    it('is readable with a read-only key, not with a webhook key', async () => {
      expectBody(await server().request('GET', '/tags', { key: server().keys.readOnly }), 200, TagList);
      expectError(await server().request('GET', '/tags', { key: server().keys.webhook }), 403, 'forbidden');
    });

    it.each([
      [{ limit: 101 }, 'limit', 'max'],
      [{ limit: 0 }, 'limit', 'min'],
      [{ limit: '2.5' }, 'limit', 'type'],
      [{ offset: -1 }, 'offset', 'min'],
      [{ search: 'vip' }, 'search', 'unknown'],
    ])('rejects query %j', async (query, field, constraint) => {
      expectError(await server().request('GET', '/tags', { query }), 400, 'bad_request', { field, constraint });
    });
  });
});
