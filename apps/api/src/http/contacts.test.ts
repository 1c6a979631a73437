import { Contact, ContactList } from '@convo/core';
import { describe, expect, it } from 'vitest';
import { describeEachDialect, expectBody, expectError } from '../testing/harness.js';

describeEachDialect('contacts', (server) => {
  let phoneSeq = 1_000_000;
  const phone = () => `+1415${phoneSeq++}`;

  describe('POST /contacts', () => {
    it('creates a contact and answers 201 with the record', async () => {
      const p = phone();
      const res = await server().request('POST', '/contacts', {
        body: { name: 'Ana Souza', phone: p, email: 'ana@example.com', tags: ['vip', 'new', 'vip'] },
      });
      const contact = expectBody(res, 201, Contact);
      expect(contact).toMatchObject({
        name: 'Ana Souza',
        phone: p,
        email: 'ana@example.com',
        tags: ['vip', 'new'],
        attributes: {},
      });
      expect(contact.id).toMatch(/^ct_[0-9A-Z]{26}$/);
      expect(contact.created_at).toBe(contact.updated_at);
    });

    it('needs a phone: 400 required', async () => {
      expectError(await server().request('POST', '/contacts', { body: { name: 'No phone' } }), 400, 'bad_request', {
        field: 'phone',
        constraint: 'required',
      });
    });

    it.each([
      [{ phone: '4155550123' }, 'phone', 'format'],
      [{ phone: '+0155550123' }, 'phone', 'format'],
      [{ phone: 4155550123 }, 'phone', 'type'],
      [{ phone: '+14155550100', email: 'not-an-email' }, 'email', 'format'],
      [{ phone: '+14155550100', email: `${'a'.repeat(250)}@example.com` }, 'email', 'max_length'],
      [{ phone: '+14155550100', name: '' }, 'name', 'min_length'],
      [{ phone: '+14155550100', name: 'x'.repeat(201) }, 'name', 'max_length'],
      [{ phone: '+14155550100', tags: ['ok', 'a/b'] }, 'tags.1', 'pattern'],
      [{ phone: '+14155550100', tags: ['ok', ''] }, 'tags.1', 'min_length'],
      [{ phone: '+14155550100', tags: ['x'.repeat(65)] }, 'tags.0', 'max_length'],
      [{ phone: '+14155550100', tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, 'tags', 'max'],
      [{ phone: '+14155550100', tags: 'vip' }, 'tags', 'type'],
      [{ phone: '+14155550100', account_id: 'acct_x' }, 'account_id', 'unknown'],
    ])('rejects %j: %s %s', async (body, field, constraint) => {
      expectError(await server().request('POST', '/contacts', { body }), 400, 'bad_request', { field, constraint });
    });

    it('counts name length in code points', async () => {
      const res = await server().request('POST', '/contacts', { body: { phone: phone(), name: '😀'.repeat(200) } });
      expect(expectBody(res, 201, Contact).name).toBe('😀'.repeat(200));
    });

    it('keeps phones unique within the account, naming the existing contact', async () => {
      const p = phone();
      const first = expectBody(await server().request('POST', '/contacts', { body: { phone: p } }), 201, Contact);
      const body = expectError(
        await server().request('POST', '/contacts', { body: { phone: p } }),
        400,
        'bad_request',
        {
          field: 'phone',
          constraint: 'unique',
        },
      );
      expect(body.error.details?.existing_id).toBe(first.id);
      // Another account may hold the same phone.
      expectBody(
        await server().request('POST', '/contacts', { key: server().keys.otherFull, body: { phone: p } }),
        201,
        Contact,
      );
    });
  });

  describe('GET /contacts/:id, PATCH, DELETE', () => {
    it('retrieves, updates partially, clears email and replaces tags', async () => {
      const created = expectBody(
        await server().request('POST', '/contacts', {
          body: { name: 'Bruno', phone: phone(), email: 'b@example.com', tags: ['a', 'b'] },
        }),
        201,
        Contact,
      );
      expect(expectBody(await server().request('GET', `/contacts/${created.id}`), 200, Contact)).toEqual(created);

      const updated = expectBody(
        await server().request('PATCH', `/contacts/${created.id}`, {
          body: { email: null, tags: ['c'], attributes: { tier: 'gold', score: 3, active: true } },
        }),
        200,
        Contact,
      );
      expect(updated).toMatchObject({
        name: 'Bruno',
        email: null,
        tags: ['c'],
        attributes: { tier: 'gold', score: 3, active: true },
      });
      expect(updated.updated_at >= created.updated_at).toBe(true);
      expect(expectBody(await server().request('GET', `/contacts/${created.id}`), 200, Contact)).toEqual(updated);
    });

    it('rejects a phone already held by another contact on PATCH', async () => {
      const a = expectBody(await server().request('POST', '/contacts', { body: { phone: phone() } }), 201, Contact);
      const b = expectBody(await server().request('POST', '/contacts', { body: { phone: phone() } }), 201, Contact);
      const res = await server().request('PATCH', `/contacts/${b.id}`, { body: { phone: a.phone } });
      expect(
        expectError(res, 400, 'bad_request', { field: 'phone', constraint: 'unique' }).error.details?.existing_id,
      ).toBe(a.id);
      // Setting its own phone again is fine.
      expectBody(await server().request('PATCH', `/contacts/${a.id}`, { body: { phone: a.phone } }), 200, Contact);
    });

    it("404s unknown ids and other accounts' ids", async () => {
      const mine = expectBody(await server().request('POST', '/contacts', { body: { phone: phone() } }), 201, Contact);
      for (const [method, body] of [['GET'], ['PATCH', { name: 'x' }], ['DELETE']] as const) {
        expectError(await server().request(method, '/contacts/ct_nope', { body }), 404, 'not_found');
        expectError(
          await server().request(method, `/contacts/${mine.id}`, { key: server().keys.otherFull, body }),
          404,
          'not_found',
        );
      }
    });

    it('deletes with 204 and an empty body, then 404', async () => {
      const c = expectBody(
        await server().request('POST', '/contacts', { body: { phone: phone(), tags: ['gone'] } }),
        201,
        Contact,
      );
      const res = await server().request('DELETE', `/contacts/${c.id}`);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expectError(await server().request('GET', `/contacts/${c.id}`), 404, 'not_found');
    });
  });

  describe('GET /contacts', () => {
    it('lists newest first with search by name, email and phone digits, and by tag', async () => {
      const key = server().keys.otherFull;
      // Letters only: a search with a digit also matches phone digits.
      const stamp = Date.now()
        .toString(36)
        .replace(/\d/g, (d) => 'abcdefghij'[Number(d)] as string);
      const zed = expectBody(
        await server().request('POST', '/contacts', {
          key,
          body: { name: `Zed ${stamp}`, phone: '+4915112345678', tags: [`t-${stamp}`] },
        }),
        201,
        Contact,
      );
      const yara = expectBody(
        await server().request('POST', '/contacts', {
          key,
          body: { name: `Yara ${stamp}`, phone: '+4915187654321', email: `yara.${stamp}@example.com` },
        }),
        201,
        Contact,
      );

      const byName = expectBody(
        await server().request('GET', '/contacts', { key, query: { search: `ZED ${stamp}` } }),
        200,
        ContactList,
      );
      expect(byName.data.map((c) => c.id)).toEqual([zed.id]);
      const byEmail = expectBody(
        await server().request('GET', '/contacts', { key, query: { search: `yara.${stamp}@` } }),
        200,
        ContactList,
      );
      expect(byEmail.data.map((c) => c.id)).toEqual([yara.id]);
      const byDigits = expectBody(
        await server().request('GET', '/contacts', { key, query: { search: '151 1234' } }),
        200,
        ContactList,
      );
      expect(byDigits.data.map((c) => c.id)).toContain(zed.id);
      expect(byDigits.data.map((c) => c.id)).not.toContain(yara.id);
      const byTag = expectBody(
        await server().request('GET', '/contacts', { key, query: { tag: `t-${stamp}` } }),
        200,
        ContactList,
      );
      expect(byTag).toMatchObject({ total: 1, limit: 20, offset: 0, has_more: false });
      expect(byTag.data[0]?.id).toBe(zed.id);

      const all = expectBody(
        await server().request('GET', '/contacts', { key, query: { limit: 2 } }),
        200,
        ContactList,
      );
      expect(all.data[0]?.id).toBe(yara.id);
      expect(all.data[1]?.id).toBe(zed.id);
    });

    it('treats LIKE wildcards in a search literally', async () => {
      const res = expectBody(await server().request('GET', '/contacts', { query: { search: '%' } }), 200, ContactList);
      expect(res.total).toBe(0);
    });

    it('pages without repeating or skipping', async () => {
      const key = server().keys.otherFull;
      const first = expectBody(
        await server().request('GET', '/contacts', { key, query: { limit: 100 } }),
        200,
        ContactList,
      );
      const seen: string[] = [];
      for (let offset = 0; offset < first.total; offset += 2) {
        const page = expectBody(
          await server().request('GET', '/contacts', { key, query: { limit: 2, offset } }),
          200,
          ContactList,
        );
        expect(page.offset).toBe(offset);
        expect(page.has_more).toBe(offset + page.data.length < page.total);
        seen.push(...page.data.map((c) => c.id));
      }
      expect(seen).toEqual(first.data.map((c) => c.id));
    });

    it.each([
      [{ limit: 101 }, 'limit', 'max'],
      [{ limit: 0 }, 'limit', 'min'],
      [{ limit: 'ten' }, 'limit', 'type'],
      [{ limit: '1.5' }, 'limit', 'type'],
      [{ offset: -1 }, 'offset', 'min'],
      [{ sort: 'name' }, 'sort', 'unknown'],
    ])('rejects query %j', async (query, field, constraint) => {
      expectError(await server().request('GET', '/contacts', { query }), 400, 'bad_request', { field, constraint });
    });
  });
});
