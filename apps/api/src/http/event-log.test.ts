import { Contact, type Event, EventList, Order, Workflow, WorkflowRun } from '@convo/core';
import { describe, expect, it } from 'vitest';
import { accountsService } from '../services/accounts.js';
import { contactsService } from '../services/contacts.js';
import type { ServiceContext } from '../services/context.js';
import { describeEachDialect, eventually, expectBody, expectError } from '../testing/harness.js';

/**
 * The events the resources emit (one per change, in the change's transaction) and the events
 * list's cursors, which page the account's log without gaps or repeats while events arrive.
 */
describeEachDialect('the event log', (server) => {
  let seq = 0;
  const phone = () => `+1213${String(5_000_000 + seq++)}`;

  /** A full-access key of a new account: its log holds this test's events only. */
  const freshAccount = async () => {
    const account = await accountsService.createAccount(
      { database: server().database },
      {
        name: 'Log',
        plan: 'enterprise',
        rateLimitRpm: 1_000_000,
      },
    );
    return {
      account,
      key: (
        await accountsService.createKey({ database: server().database }, { accountId: account.id, type: 'full_access' })
      ).key,
    };
  };
  const call = (key: string, method: string, path: string, body?: unknown) =>
    server().request(method, path, { key, ...(body === undefined ? {} : { body }) });
  const list = async (key: string, query: Record<string, string | number> = {}) =>
    expectBody(await server().request('GET', '/events', { key, query: { limit: 100, ...query } }), 200, EventList);
  /** Every event of the account, oldest first. */
  const all = async (key: string) => (await list(key)).data.reverse();

  describe('contact events', () => {
    it('emits contact.created, contact.updated and contact.deleted once per change, and nothing for a refused or idle one', async () => {
      const { key } = await freshAccount();
      const contact = expectBody(await call(key, 'POST', '/contacts', { name: 'Ana', phone: phone() }), 201, Contact);
      const other = expectBody(await call(key, 'POST', '/contacts', { phone: phone() }), 201, Contact);
      const renamed = expectBody(
        await call(key, 'PATCH', `/contacts/${contact.id}`, { name: 'Ana Souza' }),
        200,
        Contact,
      );
      expect((await call(key, 'PATCH', `/contacts/${contact.id}`, {})).status).toBe(200);
      expectError(await call(key, 'PATCH', `/contacts/${contact.id}`, { phone: other.phone }), 400, 'bad_request', {
        field: 'phone',
        constraint: 'unique',
      });
      const tagged = expectBody(await call(key, 'POST', `/contacts/${contact.id}/tags`, { tag: 'vip' }), 200, Contact);
      expect((await call(key, 'POST', `/contacts/${contact.id}/tags`, { tag: 'vip' })).status).toBe(200);
      const untagged = expectBody(await call(key, 'DELETE', `/contacts/${contact.id}/tags/vip`), 200, Contact);
      expect((await call(key, 'DELETE', `/contacts/${contact.id}`)).status).toBe(204);

      const events = await all(key);
      expect(events.map((e) => [e.type, e.data.id])).toEqual([
        ['contact.created', contact.id],
        ['contact.created', other.id],
        ['contact.updated', contact.id],
        ['contact.updated', contact.id],
        ['contact.updated', contact.id],
        ['contact.deleted', contact.id],
      ]);
      expect(events.map((e) => e.data)).toEqual([contact, other, renamed, tagged, untagged, untagged]);
    });

    it('emits contact.updated for every contact a tag rename or deletion changes', async () => {
      const { key } = await freshAccount();
      const a = expectBody(await call(key, 'POST', '/contacts', { phone: phone(), tags: ['old'] }), 201, Contact);
      const b = expectBody(
        await call(key, 'POST', '/contacts', { phone: phone(), tags: ['old', 'other'] }),
        201,
        Contact,
      );
      expect((await call(key, 'PATCH', '/tags/old', { name: 'new' })).status).toBe(200);
      expect((await call(key, 'DELETE', '/tags/new')).status).toBe(204);
      const updates = (await all(key)).filter((e) => e.type === 'contact.updated');
      expect(updates.map((e) => [e.data.id, (e.data as Contact).tags])).toEqual([
        [a.id, ['new']],
        [b.id, ['new', 'other']],
        [a.id, []],
        [b.id, ['other']],
      ]);
    });

    it('emits nothing for a change that rolls back', async () => {
      const { account, key } = await freshAccount();
      const ctx: ServiceContext = { database: server().database, accountId: account.id, settings: server().settings };
      await expect(
        server()
          .database.db.transaction()
          .execute(async (trx) => {
            await contactsService.create(
              { ...ctx, database: { ...ctx.database, db: trx } },
              { phone: phone(), name: 'Never' },
            );
            throw new Error('roll back');
          }),
      ).rejects.toThrow('roll back');
      expect((await list(key)).total).toBe(0);
    });
  });

  describe('order and workflow run events', () => {
    it('emits order.updated per status change, and workflow_run.succeeded or workflow_run.failed when a run ends', async () => {
      await server().startWorker();
      const { key } = await freshAccount();
      const contact = expectBody(await call(key, 'POST', '/contacts', { phone: phone() }), 201, Contact);
      const order = expectBody(
        await call(key, 'POST', '/orders', {
          contact_id: contact.id,
          currency: 'USD',
          items: [{ name: 'A', quantity: 1, unit_amount: 5 }],
        }),
        201,
        Order,
      );
      expect((await call(key, 'PATCH', `/orders/${order.id}`, { status: 'paid' })).status).toBe(200);
      expect((await call(key, 'PATCH', `/orders/${order.id}`, { status: 'pending' })).status).toBe(400);

      const good = expectBody(
        await call(key, 'POST', '/workflows', { name: 'Tag', steps: [{ type: 'add_tag', tag: 'run' }] }),
        201,
        Workflow,
      );
      const bad = expectBody(
        await call(key, 'POST', '/workflows', { name: 'Send', steps: [{ type: 'send_message', content: 'Hi' }] }),
        201,
        Workflow,
      );
      const ok = expectBody(
        await call(key, 'POST', `/workflows/${good.id}/trigger`, { contact_id: contact.id }),
        202,
        WorkflowRun,
      );
      const failing = expectBody(
        await call(key, 'POST', `/workflows/${bad.id}/trigger`, { contact_id: contact.id }),
        202,
        WorkflowRun,
      );
      const ends = await eventually(async () => {
        const found = (await all(key)).filter((e) => e.type.startsWith('workflow_run.'));
        return found.length === 2 && found;
      });
      const byRun = Object.fromEntries(ends.map((e) => [e.data.id, e]));
      expect(byRun[ok.id]).toMatchObject({ type: 'workflow_run.succeeded', data: { id: ok.id, status: 'succeeded' } });
      expect(byRun[failing.id]).toMatchObject({
        type: 'workflow_run.failed',
        data: { id: failing.id, status: 'failed', error: 'step 0 (send_message): no_open_conversation' },
      });
      expect(expectBody(await call(key, 'GET', `/workflows/${good.id}/runs/${ok.id}`), 200, WorkflowRun)).toEqual(
        byRun[ok.id]?.data,
      );
      expect((await all(key)).filter((e) => e.type === 'order.updated').map((e) => (e.data as Order).status)).toEqual([
        'paid',
      ]);
    });
  });

  describe('cursors', () => {
    /**
     * Catches up from `after` (an event id) with ending_before until has_more is false; returns the ids, oldest first.
     */
    async function catchUp(key: string, after: string, limit = 3): Promise<string[]> {
      const seen: string[] = [];
      let cursor = after;
      for (;;) {
        const page = await list(key, { ending_before: cursor, limit });
        const ids = page.data.map((e) => e.id).reverse();
        seen.push(...ids);
        if (ids.length > 0) cursor = ids[ids.length - 1] as string;
        if (!page.has_more) return seen;
      }
    }

    it('pages back with starting_after and forward with ending_before, newest first in each page', async () => {
      const { key } = await freshAccount();
      for (let i = 0; i < 7; i++) await call(key, 'POST', '/contacts', { phone: phone() });
      const everything = (await list(key)).data;
      expect(everything).toHaveLength(7);
      const ids = everything.map((e) => e.id);

      const first = await list(key, { starting_after: ids[0] as string, limit: 3 });
      expect(first.data.map((e) => e.id)).toEqual(ids.slice(1, 4));
      expect(first).toMatchObject({ total: 6, offset: 0, has_more: true });
      const last = await list(key, { starting_after: ids[3] as string, limit: 3 });
      expect(last.data.map((e) => e.id)).toEqual(ids.slice(4, 7));
      expect(last.has_more).toBe(false);

      // The oldest 3 after the oldest event, still newest first.
      const forward = await list(key, { ending_before: ids[6] as string, limit: 3 });
      expect(forward.data.map((e) => e.id)).toEqual(ids.slice(3, 6));
      expect(forward.has_more).toBe(true);
      expect(await catchUp(key, ids[6] as string)).toEqual([...ids.slice(0, 6)].reverse());
      expect((await list(key, { ending_before: ids[0] as string })).data).toEqual([]);

      // Both: the events between the two.
      const between = await list(key, { starting_after: ids[1] as string, ending_before: ids[5] as string });
      expect(between.data.map((e) => e.id)).toEqual(ids.slice(2, 5));
      // With a type, and with an offset past the cursor.
      expect(
        (await list(key, { starting_after: ids[0] as string, type: 'contact.created', offset: 2, limit: 2 })).data.map(
          (e) => e.id,
        ),
      ).toEqual(ids.slice(3, 5));
    });

    it("404s an unknown event or another account's, and needs a key that reads", async () => {
      const { key } = await freshAccount();
      await call(key, 'POST', '/contacts', { phone: phone() });
      const [event] = (await list(key)).data;
      expectError(
        await server().request('GET', '/events', { key, query: { starting_after: 'evt_nope' } }),
        404,
        'not_found',
      );
      expectError(
        await server().request('GET', '/events', { key, query: { ending_before: 'evt_nope' } }),
        404,
        'not_found',
      );
      expectError(
        await server().request('GET', '/events', {
          key: server().keys.full,
          query: { ending_before: (event as Event).id },
        }),
        404,
        'not_found',
      );
      expectError(
        await server().request('GET', '/events', {
          key: server().keys.webhook,
          query: { ending_before: (event as Event).id },
        }),
        403,
        'forbidden',
      );
    });

    it('catches up on every event exactly once while writers add events', async () => {
      const { key } = await freshAccount();
      await call(key, 'POST', '/contacts', { phone: phone() });
      const [origin] = (await list(key)).data;
      const seen: string[] = [];
      let cursor = (origin as Event).id;
      let writing = true;
      const writers = Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 15; i++)
          expect((await call(key, 'POST', '/contacts', { phone: phone() })).status).toBe(201);
      });
      const reader = (async () => {
        while (writing) {
          const ids = await catchUp(key, cursor, 5);
          seen.push(...ids);
          if (ids.length > 0) cursor = ids[ids.length - 1] as string;
        }
      })();
      await Promise.all(writers);
      writing = false;
      await reader;
      seen.push(...(await catchUp(key, cursor, 5)));
      const everything = (await list(key)).data.map((e) => e.id);
      expect(everything).toHaveLength(61);
      expect(new Set(seen).size).toBe(seen.length);
      expect([...seen].sort()).toEqual(everything.filter((id) => id !== (origin as Event).id).sort());
    });

    it('lists an event that committed after a later one, after it: positions follow commits, not ids', async (context) => {
      // Only Postgres commits concurrent transactions; SQLite runs one writer at a time.
      if (server().dialect !== 'postgres') context.skip();
      const { account, key } = await freshAccount();
      await call(key, 'POST', '/contacts', { phone: phone() });
      const [origin] = (await list(key)).data;
      const ctx: ServiceContext = { database: server().database, accountId: account.id, settings: server().settings };
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let early = '';
      const slow = server()
        .database.db.transaction()
        .execute(async (trx) => {
          early = (await contactsService.create({ ...ctx, database: { ...ctx.database, db: trx } }, { phone: phone() }))
            .id;
          await held;
        });
      await eventually(() => early !== '');
      const late = expectBody(await call(key, 'POST', '/contacts', { phone: phone() }), 201, Contact);
      // The late contact's event is listed; the early one's is not committed yet.
      const firstPass = await catchUp(key, (origin as Event).id);
      expect(firstPass).toHaveLength(1);
      release();
      await slow;
      const secondPass = await catchUp(key, firstPass[0] as string);
      const events = (await list(key)).data;
      const byId = Object.fromEntries(events.map((e) => [e.id, e.data.id]));
      expect(firstPass.map((id) => byId[id])).toEqual([late.id]);
      expect(secondPass.map((id) => byId[id])).toEqual([early]);
      // Its id is the earlier one: an id cursor alone would have skipped it.
      expect((secondPass[0] as string) < (firstPass[0] as string)).toBe(true);
    });
  });
});
