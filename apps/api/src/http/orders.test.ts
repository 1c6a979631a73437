import { Contact, EventList, Order, OrderList } from '@convo/core';
import { describe, expect, it } from 'vitest';
import { accountsService } from '../services/accounts.js';
import { describeEachDialect, expectBody, expectError } from '../testing/harness.js';

describeEachDialect('orders', (server) => {
  let phoneSeq = 2_000_000;
  const phone = () => `+1628${phoneSeq++}`;
  let numberSeq = 0;
  /** A custom order number no other test uses. */
  const uniqueNumber = () => `T-${Date.now().toString(36)}-${numberSeq++}`;

  /** A full-access key of a new account, for tests that need an account no other test writes to. */
  const freshKey = async () => {
    const account = await accountsService.createAccount(
      { database: server().database },
      { name: 'Fresh', plan: 'business' },
    );
    return (
      await accountsService.createKey({ database: server().database }, { accountId: account.id, type: 'full_access' })
    ).key;
  };

  const createContact = async (key?: string) =>
    expectBody(
      await server().request('POST', '/contacts', { key, body: { name: 'Buyer', phone: phone() } }),
      201,
      Contact,
    );

  const items = [{ name: 'T-shirt', quantity: 2, unit_amount: 1500 }];

  const createOrder = async (body: Record<string, unknown>, key?: string) =>
    expectBody(
      await server().request('POST', '/orders', { key, body: { currency: 'USD', items, ...body } }),
      201,
      Order,
    );

  describe('POST /orders', () => {
    it('records an order and answers 201 with the record, the total computed', async () => {
      const contact = await createContact();
      const before = new Date().toISOString();
      const body = {
        contact_id: contact.id,
        currency: 'BRL',
        items: [
          { name: 'T-shirt', quantity: 2, unit_amount: 1500 },
          { name: 'Caneca ☕', quantity: 3, unit_amount: 250 },
          { name: 'Gift', quantity: 1, unit_amount: 0 },
        ],
      };
      const order = expectBody(await server().request('POST', '/orders', { body }), 201, Order);
      const after = new Date().toISOString();
      expect(Object.keys(order).sort()).toEqual(
        [
          'id',
          'contact_id',
          'number',
          'status',
          'currency',
          'total_amount',
          'items',
          'placed_at',
          'created_at',
          'updated_at',
        ].sort(),
      );
      expect(order.id).toMatch(/^ord_[0-9A-Z]{26}$/);
      expect(order).toMatchObject({
        contact_id: contact.id,
        status: 'pending',
        currency: 'BRL',
        total_amount: 2 * 1500 + 3 * 250,
        items: body.items,
      });
      expect(order.number).toMatch(/^\d+$/);
      // placed_at defaults to now.
      expect(order.placed_at >= before && order.placed_at <= after).toBe(true);
      expect(order.created_at).toBe(order.updated_at);
      expect(order.created_at >= before && order.created_at <= after).toBe(true);
      expect(expectBody(await server().request('GET', `/orders/${order.id}`), 200, Order)).toEqual(order);
    });

    it('takes status and placed_at, normalizing placed_at to UTC with milliseconds', async () => {
      const contact = await createContact();
      const withOffset = await createOrder({
        contact_id: contact.id,
        status: 'paid',
        placed_at: '2026-01-02T03:04:05+02:00',
      });
      expect(withOffset).toMatchObject({ status: 'paid', placed_at: '2026-01-02T01:04:05.000Z' });
      const utc = await createOrder({ contact_id: contact.id, placed_at: '2026-01-02T03:04:05Z' });
      expect(utc.placed_at).toBe('2026-01-02T03:04:05.000Z');
      const negative = await createOrder({ contact_id: contact.id, placed_at: '2025-12-31T22:30:00.250-03:00' });
      expect(negative.placed_at).toBe('2026-01-01T01:30:00.250Z');
      expect(expectBody(await server().request('GET', `/orders/${withOffset.id}`), 200, Order).placed_at).toBe(
        '2026-01-02T01:04:05.000Z',
      );
    });

    it('refuses a placed_at whose UTC instant a timestamp cannot show, storing nothing', async () => {
      const key = await freshKey();
      const contact = await createContact(key);
      for (const [placed_at, constraint] of [
        ['9999-12-31T23:59:59-14:00', 'max'],
        ['9999-12-31T23:59:59.9999-00:01', 'max'],
        ['0000-01-01T00:00:00+14:00', 'min'],
        ['0000-01-01T00:00:00+00:01', 'min'],
      ] as const) {
        const res = await server().request('POST', '/orders', {
          key,
          body: { contact_id: contact.id, currency: 'USD', items, placed_at },
        });
        expectError(res, 400, 'bad_request', { field: 'placed_at', constraint });
      }
      expect(expectBody(await server().request('GET', '/orders', { key }), 200, OrderList).total).toBe(0);
      expect((await server().request('GET', '/events', { key, query: { type: 'order.placed' } })).body.total).toBe(0);

      // The edges themselves are accepted and read back everywhere.
      const latest = await createOrder({ contact_id: contact.id, placed_at: '9999-12-31T23:59:59.999999Z' }, key);
      const earliest = await createOrder({ contact_id: contact.id, placed_at: '0000-01-01T14:00:00+14:00' }, key);
      expect([latest.placed_at, earliest.placed_at]).toEqual(['9999-12-31T23:59:59.999Z', '0000-01-01T00:00:00.000Z']);
      expect(expectBody(await server().request('GET', `/orders/${earliest.id}`, { key }), 200, Order).placed_at).toBe(
        '0000-01-01T00:00:00.000Z',
      );
      const list = expectBody(await server().request('GET', '/orders', { key }), 200, OrderList);
      expect(list.data.map((order) => order.id)).toEqual([latest.id, earliest.id]);
      expect(
        expectBody(await server().request('GET', '/events', { key, query: { type: 'order.placed' } }), 200, EventList)
          .total,
      ).toBe(2);
    });

    it('accepts every order status', async () => {
      const contact = await createContact();
      for (const status of ['pending', 'paid', 'fulfilled', 'cancelled', 'refunded'] as const) {
        expect((await createOrder({ contact_id: contact.id, status })).status).toBe(status);
      }
    });

    it('numbers orders "1001" upward, per account', async () => {
      const key = await freshKey();
      const contact = await createContact(key);
      const first = await createOrder({ contact_id: contact.id }, key);
      expect(first.number).toBe('1001');
      expect((await createOrder({ contact_id: contact.id }, key)).number).toBe('1002');

      // A non-numeric custom number leaves the sequence alone.
      expect((await createOrder({ contact_id: contact.id, number: 'A-17' }, key)).number).toBe('A-17');
      expect((await createOrder({ contact_id: contact.id }, key)).number).toBe('1003');

      // A numeric custom number moves it: the next is one above the highest.
      expect((await createOrder({ contact_id: contact.id, number: '5000' }, key)).number).toBe('5000');
      expect((await createOrder({ contact_id: contact.id }, key)).number).toBe('5001');
      // A lower numeric number does not move it back.
      expect((await createOrder({ contact_id: contact.id, number: '2000' }, key)).number).toBe('2000');
      expect((await createOrder({ contact_id: contact.id }, key)).number).toBe('5002');

      // Another account has its own sequence.
      const otherKey = await freshKey();
      const otherContact = await createContact(otherKey);
      expect((await createOrder({ contact_id: otherContact.id }, otherKey)).number).toBe('1001');
      expect((await createOrder({ contact_id: otherContact.id }, otherKey)).number).toBe('1002');
    });

    it('starts at "1001" even after a lower numeric custom number', async () => {
      const key = await freshKey();
      const contact = await createContact(key);
      expect((await createOrder({ contact_id: contact.id, number: '7' }, key)).number).toBe('7');
      expect((await createOrder({ contact_id: contact.id }, key)).number).toBe('1001');
    });

    it('counts on past any number of digits, leading zeros and all', async () => {
      const key = await freshKey();
      const contact = await createContact(key);
      expect((await createOrder({ contact_id: contact.id, number: '999999999999999' }, key)).number).toBe(
        '999999999999999',
      );
      expect((await createOrder({ contact_id: contact.id }, key)).number).toBe('1000000000000000');
      expect((await createOrder({ contact_id: contact.id }, key)).number).toBe('1000000000000001');
      const long = `9${'0'.repeat(40)}`;
      expect((await createOrder({ contact_id: contact.id, number: `000${long}` }, key)).number).toBe(`000${long}`);
      expect((await createOrder({ contact_id: contact.id }, key)).number).toBe(`9${'0'.repeat(39)}1`);
      const list = expectBody(await server().request('GET', '/orders', { key, query: { limit: 100 } }), 200, OrderList);
      expect(list.total).toBe(5);
    });

    it('asks for a number once the highest has all 64 digits, and stores nothing', async () => {
      const key = await freshKey();
      const contact = await createContact(key);
      await createOrder({ contact_id: contact.id, number: '9'.repeat(64) }, key);
      const res = await server().request('POST', '/orders', {
        key,
        body: { contact_id: contact.id, currency: 'USD', items },
      });
      expectError(res, 400, 'bad_request', { field: 'number', constraint: 'required' });
      expect(expectBody(await server().request('GET', '/orders', { key }), 200, OrderList).total).toBe(1);
      expect((await createOrder({ contact_id: contact.id, number: 'next-1' }, key)).number).toBe('next-1');
    });

    it('gives concurrent orders distinct numbers', async () => {
      const key = await freshKey();
      const contact = await createContact(key);
      const responses = await Promise.all(
        Array.from({ length: 5 }, () =>
          server().request('POST', '/orders', { key, body: { contact_id: contact.id, currency: 'USD', items } }),
        ),
      );
      const numbers = responses.map((res) => expectBody(res, 201, Order).number);
      expect([...numbers].sort()).toEqual(['1001', '1002', '1003', '1004', '1005']);
      // Many more at once than attempts at a number: numbering waits its turn instead of colliding.
      const more = await Promise.all(
        Array.from({ length: 20 }, () =>
          server().request('POST', '/orders', { key, body: { contact_id: contact.id, currency: 'USD', items } }),
        ),
      );
      expect(new Set(more.map((res) => expectBody(res, 201, Order).number)).size).toBe(20);
    });

    it('keeps numbers unique within the account, naming the existing order', async () => {
      const contact = await createContact();
      const number = uniqueNumber();
      const first = await createOrder({ contact_id: contact.id, number });
      expect(first.number).toBe(number);
      const res = await server().request('POST', '/orders', {
        body: { contact_id: contact.id, currency: 'USD', items, number },
      });
      expect(
        expectError(res, 400, 'bad_request', { field: 'number', constraint: 'unique' }).error.details?.existing_id,
      ).toBe(first.id);

      // Another account may use the same number.
      const otherContact = await createContact(server().keys.otherFull);
      expect((await createOrder({ contact_id: otherContact.id, number }, server().keys.otherFull)).number).toBe(number);
    });

    it('refuses a custom number that an automatic one already took', async () => {
      const key = await freshKey();
      const contact = await createContact(key);
      const auto = await createOrder({ contact_id: contact.id }, key);
      expect(auto.number).toBe('1001');
      const res = await server().request('POST', '/orders', {
        key,
        body: { contact_id: contact.id, currency: 'USD', items, number: '1001' },
      });
      expect(
        expectError(res, 400, 'bad_request', { field: 'number', constraint: 'unique' }).error.details?.existing_id,
      ).toBe(auto.id);
      // The failed attempt did not use up a number.
      expect((await createOrder({ contact_id: contact.id }, key)).number).toBe('1002');
    });

    it("404s an unknown contact and another account's contact", async () => {
      expectError(
        await server().request('POST', '/orders', { body: { contact_id: 'ct_nope', currency: 'USD', items } }),
        404,
        'not_found',
      );
      const theirs = await createContact(server().keys.otherFull);
      expectError(
        await server().request('POST', '/orders', { body: { contact_id: theirs.id, currency: 'USD', items } }),
        404,
        'not_found',
      );
    });

    it('validates before looking the contact up', async () => {
      expectError(
        await server().request('POST', '/orders', { body: { contact_id: 'ct_nope', currency: 'usd', items } }),
        400,
        'bad_request',
        {
          field: 'currency',
          constraint: 'format',
        },
      );
    });

    it('needs a full-access key', async () => {
      const contact = await createContact();
      const body = { contact_id: contact.id, currency: 'USD', items };
      expectError(await server().request('POST', '/orders', { key: server().keys.readOnly, body }), 403, 'forbidden');
      expectError(await server().request('POST', '/orders', { key: server().keys.webhook, body }), 403, 'forbidden');
    });

    const valid = { contact_id: 'ct_placeholder', currency: 'USD', items };
    const item = { name: 'Mug', quantity: 1, unit_amount: 100 };
    const withItem = (overrides: Record<string, unknown>, index = 0) => {
      const list: Record<string, unknown>[] = [item, item];
      list[index] = { ...item, ...overrides };
      return { ...valid, items: list };
    };
    const without = (field: keyof typeof valid) => {
      const { [field]: _, ...rest } = valid;
      return rest;
    };

    it.each([
      [without('contact_id'), 'contact_id', 'required'],
      [without('currency'), 'currency', 'required'],
      [without('items'), 'items', 'required'],
      [{ ...valid, contact_id: 42 }, 'contact_id', 'type'],
      [{ ...valid, currency: 'usd' }, 'currency', 'format'],
      [{ ...valid, currency: 'XYZ' }, 'currency', 'format'],
      [{ ...valid, currency: 'US' }, 'currency', 'format'],
      [{ ...valid, currency: 840 }, 'currency', 'type'],
      [{ ...valid, items: [] }, 'items', 'min'],
      [{ ...valid, items: Array.from({ length: 101 }, () => item) }, 'items', 'max'],
      [{ ...valid, items: item }, 'items', 'type'],
      [withItem({ quantity: 0 }), 'items.0.quantity', 'min'],
      [withItem({ quantity: 10001 }), 'items.0.quantity', 'max'],
      [withItem({ quantity: 1.5 }), 'items.0.quantity', 'type'],
      [withItem({ quantity: '2' }, 1), 'items.1.quantity', 'type'],
      [withItem({ quantity: undefined }, 1), 'items.1.quantity', 'required'],
      [withItem({ unit_amount: -1 }), 'items.0.unit_amount', 'min'],
      [withItem({ unit_amount: 9.99 }, 1), 'items.1.unit_amount', 'type'],
      [withItem({ name: '' }), 'items.0.name', 'min_length'],
      [withItem({ name: 'x'.repeat(201) }), 'items.0.name', 'max_length'],
      [withItem({ sku: 'MUG-1' }, 1), 'items.1.sku', 'unknown'],
      [{ ...valid, total_amount: 3000 }, 'total_amount', 'unknown'],
      [{ ...valid, id: 'ord_mine' }, 'id', 'unknown'],
      [{ ...valid, status: 'shipped' }, 'status', 'enum'],
      [{ ...valid, status: 'PAID' }, 'status', 'enum'],
      [{ ...valid, placed_at: 'yesterday' }, 'placed_at', 'format'],
      [{ ...valid, placed_at: '2026-01-02' }, 'placed_at', 'format'],
      [{ ...valid, placed_at: '2026-13-02T03:04:05Z' }, 'placed_at', 'format'],
      [{ ...valid, placed_at: '2026-02-30T03:04:05Z' }, 'placed_at', 'format'],
      [{ ...valid, placed_at: '2026-01-02T24:00:00Z' }, 'placed_at', 'format'],
      [{ ...valid, placed_at: 1767322800000 }, 'placed_at', 'type'],
      [{ ...valid, number: '' }, 'number', 'min_length'],
      [{ ...valid, number: 'A 17' }, 'number', 'pattern'],
      [{ ...valid, number: 1001 }, 'number', 'type'],
    ])('rejects %j: %s %s', async (body, field, constraint) => {
      expectError(await server().request('POST', '/orders', { body }), 400, 'bad_request', { field, constraint });
    });

    it('accepts the item bounds: 100 items, quantity 1 and 10000, unit_amount 0, name of 200 characters', async () => {
      const contact = await createContact();
      const many = await createOrder({
        contact_id: contact.id,
        items: Array.from({ length: 100 }, () => ({ name: 'Pin', quantity: 1, unit_amount: 5 })),
      });
      expect(many.items).toHaveLength(100);
      expect(many.total_amount).toBe(500);
      const edges = await createOrder({
        contact_id: contact.id,
        items: [
          { name: 'n'.repeat(200), quantity: 10000, unit_amount: 99 },
          { name: 'Free', quantity: 1, unit_amount: 0 },
        ],
      });
      expect(edges.total_amount).toBe(990000);
    });

    it('refuses a total too large to represent exactly, with a 400 rather than a 500', async () => {
      const contact = await createContact();
      const big = { name: 'Yacht', quantity: 10000, unit_amount: Number.MAX_SAFE_INTEGER };
      const res = await server().request('POST', '/orders', {
        body: { contact_id: contact.id, currency: 'USD', items: [big] },
      });
      expectError(res, 400, 'bad_request');
    });
  });

  describe('GET /orders', () => {
    it('lists newest placed_at first, ties by id descending, with filters and pages', async () => {
      const key = await freshKey();
      const ana = await createContact(key);
      const bia = await createContact(key);
      const jan = await createOrder({ contact_id: ana.id, placed_at: '2026-01-01T00:00:00Z' }, key);
      const mar = await createOrder({ contact_id: bia.id, placed_at: '2026-03-01T00:00:00Z', status: 'paid' }, key);
      const feb1 = await createOrder({ contact_id: ana.id, placed_at: '2026-02-01T00:00:00Z', status: 'paid' }, key);
      const feb2 = await createOrder({ contact_id: bia.id, placed_at: '2026-02-01T02:00:00+02:00' }, key); // the same instant
      const feb3 = await createOrder(
        { contact_id: ana.id, placed_at: '2026-02-01T00:00:00.000Z', status: 'refunded' },
        key,
      );
      const dec = await createOrder({ contact_id: ana.id, placed_at: '2025-12-31T23:59:59.999Z', status: 'paid' }, key);

      const tied = [feb1, feb2, feb3]
        .map((o) => o.id)
        .sort()
        .reverse();
      const expected = [mar.id, ...tied, jan.id, dec.id];

      const all = expectBody(await server().request('GET', '/orders', { key }), 200, OrderList);
      expect(all).toMatchObject({ total: 6, limit: 20, offset: 0, has_more: false });
      expect(all.data.map((o) => o.id)).toEqual(expected);
      expect(all.data.find((o) => o.id === mar.id)).toEqual(mar);

      const paid = expectBody(
        await server().request('GET', '/orders', { key, query: { status: 'paid' } }),
        200,
        OrderList,
      );
      expect(paid.data.map((o) => o.id)).toEqual([mar.id, feb1.id, dec.id]);
      expect(paid.total).toBe(3);

      const anas = expectBody(
        await server().request('GET', '/orders', { key, query: { contact_id: ana.id } }),
        200,
        OrderList,
      );
      expect(anas.data.map((o) => o.id)).toEqual(
        expected.filter((id) => [jan.id, feb1.id, feb3.id, dec.id].includes(id)),
      );

      const anasPaid = expectBody(
        await server().request('GET', '/orders', { key, query: { contact_id: ana.id, status: 'paid' } }),
        200,
        OrderList,
      );
      expect(anasPaid.data.map((o) => o.id)).toEqual([feb1.id, dec.id]);

      const none = expectBody(
        await server().request('GET', '/orders', { key, query: { status: 'cancelled' } }),
        200,
        OrderList,
      );
      expect(none).toEqual({ data: [], total: 0, limit: 20, offset: 0, has_more: false });

      // Pages of 4 and 2, and a page past the end.
      const page1 = expectBody(await server().request('GET', '/orders', { key, query: { limit: 4 } }), 200, OrderList);
      expect(page1).toMatchObject({ total: 6, limit: 4, offset: 0, has_more: true });
      const page2 = expectBody(
        await server().request('GET', '/orders', { key, query: { limit: 4, offset: 4 } }),
        200,
        OrderList,
      );
      expect(page2).toMatchObject({ total: 6, limit: 4, offset: 4, has_more: false });
      expect([...page1.data, ...page2.data].map((o) => o.id)).toEqual(expected);
      const seen: string[] = [];
      for (let offset = 0; offset < 6; offset += 2) {
        const page = expectBody(
          await server().request('GET', '/orders', { key, query: { limit: 2, offset } }),
          200,
          OrderList,
        );
        expect(page).toMatchObject({ total: 6, limit: 2, offset, has_more: offset + 2 < 6 });
        seen.push(...page.data.map((o) => o.id));
      }
      expect(seen).toEqual(expected);
      const past = expectBody(await server().request('GET', '/orders', { key, query: { offset: 10 } }), 200, OrderList);
      expect(past).toEqual({ data: [], total: 6, limit: 20, offset: 10, has_more: false });
    });

    it("lists only the caller's orders; another account's contact id gives an empty page", async () => {
      const key = await freshKey();
      const mine = await createContact(key);
      const order = await createOrder({ contact_id: mine.id }, key);

      const theirs = await createContact(server().keys.otherFull);
      const theirOrder = await createOrder({ contact_id: theirs.id }, server().keys.otherFull);

      const list = expectBody(await server().request('GET', '/orders', { key }), 200, OrderList);
      expect(list.data.map((o) => o.id)).toEqual([order.id]);

      const filtered = expectBody(
        await server().request('GET', '/orders', { key, query: { contact_id: theirs.id } }),
        200,
        OrderList,
      );
      expect(filtered).toEqual({ data: [], total: 0, limit: 20, offset: 0, has_more: false });
      const unknown = expectBody(
        await server().request('GET', '/orders', { key, query: { contact_id: 'ct_nope' } }),
        200,
        OrderList,
      );
      expect(unknown.total).toBe(0);

      const theirList = expectBody(
        await server().request('GET', '/orders', { key: server().keys.otherFull, query: { limit: 100 } }),
        200,
        OrderList,
      );
      expect(theirList.data.map((o) => o.id)).toContain(theirOrder.id);
      expect(theirList.data.map((o) => o.id)).not.toContain(order.id);
    });

    it('is readable with a read-only key, not with a webhook key', async () => {
      expectBody(await server().request('GET', '/orders', { key: server().keys.readOnly }), 200, OrderList);
      expectError(await server().request('GET', '/orders', { key: server().keys.webhook }), 403, 'forbidden');
    });

    it.each([
      [{ limit: 101 }, 'limit', 'max'],
      [{ limit: 0 }, 'limit', 'min'],
      [{ limit: 'all' }, 'limit', 'type'],
      [{ offset: -1 }, 'offset', 'min'],
      [{ status: 'shipped' }, 'status', 'enum'],
      [{ number: '1001' }, 'number', 'unknown'],
    ])('rejects query %j', async (query, field, constraint) => {
      expectError(await server().request('GET', '/orders', { query }), 400, 'bad_request', { field, constraint });
    });
  });

  describe('GET /orders/:id', () => {
    it("retrieves an order, and 404s unknown ids and another account's orders", async () => {
      const contact = await createContact();
      const order = await createOrder({ contact_id: contact.id, currency: 'EUR' });
      expect(expectBody(await server().request('GET', `/orders/${order.id}`), 200, Order)).toEqual(order);
      expect(
        expectBody(await server().request('GET', `/orders/${order.id}`, { key: server().keys.readOnly }), 200, Order),
      ).toEqual(order);

      expectError(await server().request('GET', '/orders/ord_nope'), 404, 'not_found');
      expectError(
        await server().request('GET', `/orders/${order.id}`, { key: server().keys.otherFull }),
        404,
        'not_found',
      );
      expectError(await server().request('GET', `/orders/${contact.id}`), 404, 'not_found');
    });
  });

  describe('PATCH /orders/:id', () => {
    const update = (id: string, body: unknown, key?: string) =>
      server().request('PATCH', `/orders/${id}`, { key, body });
    const orderEvents = async (key: string) =>
      expectBody(await server().request('GET', '/events', { key, query: { limit: 100 } }), 200, EventList).data.filter(
        (e) => e.type === 'order.updated',
      );

    it('moves an order along pending → paid → fulfilled → refunded, one order.updated per change', async () => {
      const key = await freshKey();
      const order = await createOrder({ contact_id: (await createContact(key)).id }, key);
      expect(order.status).toBe('pending');
      let previous = order.updated_at;
      for (const status of ['paid', 'fulfilled', 'refunded'] as const) {
        const changed = expectBody(await update(order.id, { status }, key), 200, Order);
        expect(changed).toMatchObject({ id: order.id, status, number: order.number, total_amount: order.total_amount });
        expect(changed.updated_at >= previous).toBe(true);
        previous = changed.updated_at;
        expect(expectBody(await server().request('GET', `/orders/${order.id}`, { key }), 200, Order)).toEqual(changed);
      }
      // The current status again changes nothing and emits nothing.
      expect(expectBody(await update(order.id, { status: 'refunded' }, key), 200, Order).updated_at).toBe(previous);
      const events = await orderEvents(key);
      expect(events.map((e) => (e.data as { status: string }).status)).toEqual(['refunded', 'fulfilled', 'paid']);
    });

    it.each([
      ['pending', 'fulfilled'],
      ['pending', 'refunded'],
      ['paid', 'pending'],
      ['fulfilled', 'cancelled'],
      ['cancelled', 'paid'],
      ['refunded', 'paid'],
    ] as const)('refuses %s → %s with 400 status transition, changing nothing', async (from, to) => {
      const key = await freshKey();
      const order = await createOrder({ contact_id: (await createContact(key)).id, status: from }, key);
      expectError(await update(order.id, { status: to }, key), 400, 'bad_request', {
        field: 'status',
        constraint: 'transition',
      });
      expect(expectBody(await server().request('GET', `/orders/${order.id}`, { key }), 200, Order)).toEqual(order);
      expect(await orderEvents(key)).toEqual([]);
    });

    it.each([
      ['pending', 'cancelled'],
      ['paid', 'cancelled'],
      ['paid', 'refunded'],
    ] as const)('allows %s → %s', async (from, to) => {
      const order = await createOrder({ contact_id: (await createContact()).id, status: from });
      expect(expectBody(await update(order.id, { status: to }), 200, Order).status).toBe(to);
    });

    it("validates the body, 404s unknown ids and another account's orders, and needs a full-access key", async () => {
      const order = await createOrder({ contact_id: (await createContact()).id });
      expectError(await update(order.id, { status: 'shipped' }), 400, 'bad_request', {
        field: 'status',
        constraint: 'enum',
      });
      expectError(await update(order.id, {}), 400, 'bad_request', { field: 'status', constraint: 'required' });
      expectError(await update(order.id, { status: 'paid', total_amount: 1 }), 400, 'bad_request', {
        field: 'total_amount',
        constraint: 'unknown',
      });
      expectError(await update('ord_nope', { status: 'paid' }), 404, 'not_found');
      expectError(await update(order.id, { status: 'paid' }, server().keys.otherFull), 404, 'not_found');
      expectError(await update(order.id, { status: 'paid' }, server().keys.readOnly), 403, 'forbidden');
      expect(expectBody(await server().request('GET', `/orders/${order.id}`), 200, Order).status).toBe('pending');
    });

    it('takes concurrent changes one at a time: exactly one of two conflicting changes wins', async () => {
      const key = await freshKey();
      const order = await createOrder({ contact_id: (await createContact(key)).id, status: 'paid' }, key);
      const [a, b] = await Promise.all([
        update(order.id, { status: 'fulfilled' }, key),
        update(order.id, { status: 'cancelled' }, key),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 400]);
      expect(await orderEvents(key)).toHaveLength(1);
    });
  });

  describe('deleting the contact', () => {
    it('keeps its orders, with contact_id null', async () => {
      const contact = await createContact();
      const first = await createOrder({ contact_id: contact.id, placed_at: '2026-05-01T10:00:00Z' });
      const second = await createOrder({
        contact_id: contact.id,
        status: 'fulfilled',
        items: [{ name: 'Lamp', quantity: 1, unit_amount: 4200 }],
      });

      const res = await server().request('DELETE', `/contacts/${contact.id}`);
      expect(res.status).toBe(204);
      expectError(await server().request('GET', `/contacts/${contact.id}`), 404, 'not_found');

      for (const before of [first, second]) {
        const after = expectBody(await server().request('GET', `/orders/${before.id}`), 200, Order);
        const { contact_id, updated_at, ...rest } = after;
        expect(contact_id).toBeNull();
        expect(rest).toMatchObject({
          id: before.id,
          number: before.number,
          status: before.status,
          currency: before.currency,
          total_amount: before.total_amount,
          items: before.items,
          placed_at: before.placed_at,
          created_at: before.created_at,
        });
        expect(updated_at >= before.updated_at).toBe(true);
      }

      // Still listed; the contact filter finds nothing any more.
      const list = expectBody(await server().request('GET', '/orders', { query: { limit: 100 } }), 200, OrderList);
      expect(list.data.filter((o) => o.id === first.id || o.id === second.id).map((o) => o.contact_id)).toEqual([
        null,
        null,
      ]);
      const byContact = expectBody(
        await server().request('GET', '/orders', { query: { contact_id: contact.id } }),
        200,
        OrderList,
      );
      expect(byContact.total).toBe(0);
    });
  });
});
