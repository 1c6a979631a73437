import { Contact, Conversation, Workflow, type WorkflowRun, WorkflowRunList } from '@convo/core';
import { describe, expect, it } from 'vitest';
import { accountsService } from '../services/accounts.js';
import { contactsService } from '../services/contacts.js';
import type { ServiceContext } from '../services/context.js';
import { holds } from '../services/automations.js';
import { describeEachDialect, eventually, expectBody, expectError } from '../testing/harness.js';

describe('conditions', () => {
  const data = {
    status: 'resolved',
    total_amount: 2500,
    contact: { tags: ['vip', 'returning'], name: 'Ana Souza' },
    created_at: '2026-11-26T10:00:00.000Z',
  };
  it.each([
    [{ field: 'status', op: 'eq', value: 'resolved' }, true],
    [{ field: 'status', op: 'neq', value: 'resolved' }, false],
    [{ field: 'status', op: 'in', value: ['active', 'resolved'] }, true],
    [{ field: 'status', op: 'not_in', value: ['active', 'resolved'] }, false],
    [{ field: 'contact.tags', op: 'contains', value: 'vip' }, true],
    [{ field: 'contact.tags', op: 'contains', value: 'new' }, false],
    [{ field: 'contact.name', op: 'contains', value: 'souza' }, true],
    [{ field: 'total_amount', op: 'gt', value: 2000 }, true],
    [{ field: 'total_amount', op: 'lte', value: 2000 }, false],
    [{ field: 'total_amount', op: 'gt', value: '2000' }, false],
    [{ field: 'created_at', op: 'gte', value: '2026-11-26T00:00:00.000Z' }, true],
    [{ field: 'contact.email', op: 'exists' }, false],
    [{ field: 'contact.tags', op: 'exists' }, true],
    [{ field: 'missing.deeper', op: 'eq', value: 'x' }, false],
  ] as const)('%j → %s', (condition, expected) => {
    expect(holds(condition as never, data)).toBe(expected);
  });
});

describeEachDialect('automations', (server) => {
  let seq = 0;
  const phone = () => `+1646${String(5_100_000 + seq++)}`;
  const freshAccount = async (plan: 'free' | 'enterprise' = 'enterprise') => {
    const account = await accountsService.createAccount(
      { database: server().database },
      {
        name: 'Auto',
        plan,
        ...(plan === 'enterprise' ? { rateLimitRpm: 1_000_000 } : {}),
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
  const createWorkflow = async (key: string, body: object) =>
    expectBody(await call(key, 'POST', '/workflows', body), 201, Workflow);
  const runsOf = async (key: string, workflowId: string) =>
    expectBody(
      await server().request('GET', `/workflows/${workflowId}/runs`, { key, query: { limit: 100 } }),
      200,
      WorkflowRunList,
    ).data;

  it('starts a run for the contact of each event its trigger names, when its conditions hold', async () => {
    const { key } = await freshAccount();
    const workflow = await createWorkflow(key, {
      name: 'Welcome VIPs',
      steps: [{ type: 'add_tag', tag: 'welcomed' }],
      trigger: { event: 'contact.created', conditions: [{ field: 'tags', op: 'contains', value: 'vip' }] },
    });
    expect(workflow.trigger).toEqual({
      event: 'contact.created',
      conditions: [{ field: 'tags', op: 'contains', value: 'vip' }],
    });
    const vip = expectBody(await call(key, 'POST', '/contacts', { phone: phone(), tags: ['vip'] }), 201, Contact);
    const other = expectBody(await call(key, 'POST', '/contacts', { phone: phone() }), 201, Contact);
    await server().drainJobs();
    const [run] = await eventually(async () => {
      const runs = await runsOf(key, workflow.id);
      return runs.length === 1 && runs[0]?.status === 'succeeded' && runs;
    });
    expect(run).toMatchObject({ contact_id: vip.id, event_id: expect.stringMatching(/^evt_/) });
    expect(expectBody(await call(key, 'GET', `/contacts/${vip.id}`), 200, Contact).tags).toEqual(['vip', 'welcomed']);
    expect(expectBody(await call(key, 'GET', `/contacts/${other.id}`), 200, Contact).tags).toEqual([]);
  });

  it("does not start the workflow again from its own run's events (loop guard), nor when disabled or untriggered", async () => {
    const { key } = await freshAccount();
    // Adding a tag emits contact.updated, the very event that starts it.
    const looping = await createWorkflow(key, {
      name: 'Loop',
      steps: [{ type: 'add_tag', tag: 'touched' }],
      trigger: { event: 'contact.updated' },
    });
    const contact = expectBody(await call(key, 'POST', '/contacts', { phone: phone() }), 201, Contact);
    expect((await call(key, 'PATCH', `/contacts/${contact.id}`, { name: 'Changed' })).status).toBe(200);
    // Runs the run and whatever its own events could start, until nothing is due.
    await server().drainJobs();
    await eventually(
      async () =>
        (await runsOf(key, looping.id)).every((r) => r.status === 'succeeded') &&
        (await runsOf(key, looping.id)).length === 1,
    );
    expect(await runsOf(key, looping.id)).toHaveLength(1);

    expect((await call(key, 'PATCH', `/workflows/${looping.id}`, { enabled: false })).status).toBe(200);
    expect((await call(key, 'PATCH', `/contacts/${contact.id}`, { name: 'Again' })).status).toBe(200);
    expect(
      expectBody(await call(key, 'PATCH', `/workflows/${looping.id}`, { enabled: true, trigger: null }), 200, Workflow)
        .trigger,
    ).toBeNull();
    expect((await call(key, 'PATCH', `/contacts/${contact.id}`, { name: 'Once more' })).status).toBe(200);
    expect(await runsOf(key, looping.id)).toHaveLength(1);
  });

  it('starts nothing for a change that rolls back, and one run per event and workflow', async () => {
    const { account, key } = await freshAccount();
    const workflow = await createWorkflow(key, {
      name: 'On create',
      steps: [{ type: 'wait', seconds: 3600 }],
      trigger: { event: 'contact.created' },
    });
    const ctx: ServiceContext = { database: server().database, accountId: account.id, settings: server().settings };
    await expect(
      server()
        .database.db.transaction()
        .execute(async (trx) => {
          await contactsService.create({ ...ctx, database: { ...ctx.database, db: trx } }, { phone: phone() });
          throw new Error('roll back');
        }),
    ).rejects.toThrow('roll back');
    expect(await runsOf(key, workflow.id)).toEqual([]);
    const contact = expectBody(await call(key, 'POST', '/contacts', { phone: phone() }), 201, Contact);
    const runs = await runsOf(key, workflow.id);
    expect(runs.map((r) => r.contact_id)).toEqual([contact.id]);
    // The same event cannot start a second run of the workflow.
    const row = await server()
      .database.db.selectFrom('workflow_runs')
      .selectAll()
      .where('id', '=', (runs[0] as WorkflowRun).id)
      .executeTakeFirstOrThrow();
    await expect(
      server()
        .database.db.insertInto('workflow_runs')
        .values({ ...row, id: 'run_duplicate' })
        .execute(),
    ).rejects.toThrow();
  });

  it("records runs past the account's per-minute cap as skipped, with the reason", async () => {
    const { account, key } = await freshAccount('free');
    const workflow = await createWorkflow(key, {
      name: 'Capped',
      steps: [{ type: 'wait', seconds: 3600 }],
      trigger: { event: 'contact.created' },
    });
    const ctx: ServiceContext = { database: server().database, accountId: account.id, settings: server().settings };
    for (let i = 0; i < 61; i++) await contactsService.create(ctx, { phone: phone() });
    const runs = await runsOf(key, workflow.id);
    expect(runs).toHaveLength(61);
    const skipped = runs.filter((r) => r.status === 'skipped');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatchObject({
      error: expect.stringMatching(/^rate_limited/),
      finished_at: expect.any(String),
    });
    expect(skipped[0]?.steps.map((s) => s.status)).toEqual(['skipped']);
  });

  it("triggers on a conversation status change for the conversation's contact, and validates triggers", async () => {
    const { key } = await freshAccount();
    const workflow = await createWorkflow(key, {
      name: 'Resolved',
      steps: [{ type: 'wait', seconds: 3600 }],
      trigger: { event: 'conversation.updated', conditions: [{ field: 'status', op: 'eq', value: 'resolved' }] },
    });
    const contact = expectBody(await call(key, 'POST', '/contacts', { phone: phone() }), 201, Contact);
    const conversation = expectBody(
      await call(key, 'POST', '/conversations', { contact_id: contact.id, platform: 'whatsapp' }),
      201,
      Conversation,
    );
    expect((await call(key, 'PATCH', `/conversations/${conversation.id}`, { status: 'resolved' })).status).toBe(200);
    expect((await call(key, 'PATCH', `/conversations/${conversation.id}`, { status: 'active' })).status).toBe(200);
    expect((await runsOf(key, workflow.id)).map((r) => r.contact_id)).toEqual([contact.id]);

    const bad = (trigger: unknown) =>
      call(key, 'POST', '/workflows', { name: 'x', steps: [{ type: 'wait', seconds: 1 }], trigger });
    expectError(await bad({ event: 'contact.deleted' }), 400, 'bad_request', {
      field: 'trigger.event',
      constraint: 'enum',
    });
    expectError(
      await bad({ event: 'contact.created', conditions: [{ field: 'Bad Field', op: 'exists' }] }),
      400,
      'bad_request',
      {
        field: 'trigger.conditions.0.field',
        constraint: 'pattern',
      },
    );
    expectError(
      await bad({ event: 'contact.created', conditions: [{ field: 'tags', op: 'like', value: 'x' }] }),
      400,
      'bad_request',
      {
        field: 'trigger.conditions.0.op',
        constraint: 'enum',
      },
    );
  });
});
