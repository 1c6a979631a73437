import {
  Contact,
  Conversation,
  EventList,
  Message,
  MessageList,
  Workflow,
  WorkflowList,
  WorkflowRun,
  WorkflowRunList,
} from '@convo/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { describeEachDialect, expectBody, expectError } from '../testing/harness.js';
import { enqueue } from '../repositories/jobs.js';

const isFinished = (run: WorkflowRun) =>
  run.status === 'succeeded' || run.status === 'failed' || run.status === 'cancelled';

describeEachDialect('workflows', (server) => {
  let phoneSeq = 3_000_000;
  const phone = () => `+1415${phoneSeq++}`;

  const createContact = async (body: Record<string, unknown> = {}, key?: string) =>
    expectBody(await server().request('POST', '/contacts', { key, body: { phone: phone(), ...body } }), 201, Contact);
  const openConversation = async (contactId: string, platform = 'whatsapp') =>
    expectBody(
      await server().request('POST', '/conversations', { body: { contact_id: contactId, platform } }),
      201,
      Conversation,
    );
  const createWorkflow = async (steps: unknown[], name = 'Automation', key?: string) =>
    expectBody(await server().request('POST', '/workflows', { key, body: { name, steps } }), 201, Workflow);
  const trigger = async (workflowId: string, contactId: string, data?: Record<string, unknown>) =>
    expectBody(
      await server().request('POST', `/workflows/${workflowId}/trigger`, {
        body: { contact_id: contactId, ...(data ? { data } : {}) },
      }),
      202,
      WorkflowRun,
    );
  const runsOf = async (workflowId: string, query: Record<string, string | number> = {}) =>
    expectBody(
      await server().request('GET', `/workflows/${workflowId}/runs`, { query: { limit: 100, ...query } }),
      200,
      WorkflowRunList,
    );

  /**
   * Runs the queued jobs until the run satisfies `until` (finished by default), reading it from the
   * runs list after each round of jobs; a run that waits needs the clock stopped (stopClock).
   * Returns the run and every status seen.
   */
  async function runUntil(workflowId: string, runId: string, until: (run: WorkflowRun) => boolean = isFinished) {
    const seen = new Set<WorkflowRun['status']>();
    const run = await server().runJobsUntil(async () => {
      const listed = (await runsOf(workflowId)).data.find((r) => r.id === runId);
      if (!listed) throw new Error(`run ${runId} is not listed`);
      seen.add(listed.status);
      return until(listed) && listed;
    });
    return { run, seen };
  }

  /** Stops the clock (Date only) for the rest of the test: it moves when runUntil or advanceClock moves it. */
  const stopClock = () => vi.useFakeTimers({ toFake: ['Date'] });

  /** Moves the stopped clock `ms` on and runs the jobs due by then. */
  const advanceClock = async (ms: number) => {
    vi.setSystemTime(Date.now() + ms);
    await server().drainJobs();
  };

  describe('POST /workflows, GET /workflows, GET /workflows/:id', () => {
    it('creates a workflow (201), retrieves it and lists newest first', async () => {
      const steps = [
        { type: 'send_message', content: 'Hi {{contact.name}}' },
        { type: 'add_tag', tag: 'welcomed' },
        { type: 'remove_tag', tag: 'lead' },
        { type: 'set_conversation_status', status: 'resolved' },
        { type: 'wait', seconds: 60 },
      ];
      const first = await createWorkflow(steps, 'Welcome');
      expect(first).toMatchObject({ name: 'Welcome', steps });
      expect(first.id).toMatch(/^wf_[0-9A-Z]{26}$/);
      expect(first.created_at).toBe(first.updated_at);
      expect(expectBody(await server().request('GET', `/workflows/${first.id}`), 200, Workflow)).toEqual(first);
      // Read-only keys read.
      expect(
        expectBody(
          await server().request('GET', `/workflows/${first.id}`, { key: server().keys.readOnly }),
          200,
          Workflow,
        ),
      ).toEqual(first);

      const second = await createWorkflow([{ type: 'wait', seconds: 1 }], 'Second');
      const list = expectBody(await server().request('GET', '/workflows', { query: { limit: 2 } }), 200, WorkflowList);
      expect(list.data.map((w) => w.id)).toEqual([second.id, first.id]);
      expect(list).toMatchObject({ limit: 2, offset: 0 });
      expect(list.has_more).toBe(list.total > 2);
    });

    it('pages the list without repeating or skipping', async () => {
      const key = server().keys.otherFull;
      for (let i = 0; i < 5; i++) await createWorkflow([{ type: 'wait', seconds: 1 }], `Paged ${i}`, key);
      const all = expectBody(
        await server().request('GET', '/workflows', { key, query: { limit: 100 } }),
        200,
        WorkflowList,
      );
      expect(all.total).toBe(5);
      const seen: string[] = [];
      for (let offset = 0; offset < all.total; offset += 2) {
        const page = expectBody(
          await server().request('GET', '/workflows', { key, query: { limit: 2, offset } }),
          200,
          WorkflowList,
        );
        expect(page.has_more).toBe(offset + page.data.length < page.total);
        seen.push(...page.data.map((w) => w.id));
      }
      expect(seen).toEqual(all.data.map((w) => w.id));
    });

    it.each([
      [{ name: 'x', steps: [{ type: 'teleport' }] }, 'steps.0.type', 'enum'],
      [{ name: 'x', steps: [{ type: 'wait', seconds: 1 }, { seconds: 1 }] }, 'steps.1.type', 'required'],
      [{ name: 'x', steps: [{ type: 7 }] }, 'steps.0.type', 'type'],
      [{ steps: [{ type: 'wait', seconds: 1 }] }, 'name', 'required'],
      [{ name: '', steps: [{ type: 'wait', seconds: 1 }] }, 'name', 'min_length'],
      [{ name: 'x' }, 'steps', 'required'],
      [{ name: 'x', steps: [] }, 'steps', 'min'],
      [{ name: 'x', steps: [{ type: 'wait', seconds: 0 }] }, 'steps.0.seconds', 'min'],
      [{ name: 'x', steps: [{ type: 'wait', seconds: 1.5 }] }, 'steps.0.seconds', 'type'],
      [{ name: 'x', steps: [{ type: 'add_tag', tag: 'a/b' }] }, 'steps.0.tag', 'pattern'],
      [{ name: 'x', steps: [{ type: 'remove_tag' }] }, 'steps.0.tag', 'required'],
      [{ name: 'x', steps: [{ type: 'send_message', content: '' }] }, 'steps.0.content', 'min_length'],
      [{ name: 'x', steps: [{ type: 'set_conversation_status', status: 'closed' }] }, 'steps.0.status', 'enum'],
      [{ name: 'x', steps: [{ type: 'send_message', content: 'hi', delay: 3 }] }, 'steps.0.delay', 'unknown'],
      [{ name: 'x', steps: [{ type: 'wait', seconds: 1 }], owner: 'me' }, 'owner', 'unknown'],
    ])('rejects %j: %s %s', async (body, field, constraint) => {
      expectError(await server().request('POST', '/workflows', { body }), 400, 'bad_request', { field, constraint });
    });

    it('needs a full key to create: a read-only key is 403', async () => {
      expectError(
        await server().request('POST', '/workflows', {
          key: server().keys.readOnly,
          body: { name: 'x', steps: [{ type: 'wait', seconds: 1 }] },
        }),
        403,
        'forbidden',
      );
    });

    it("404s unknown ids and other accounts' workflows", async () => {
      const mine = await createWorkflow([{ type: 'wait', seconds: 1 }]);
      const contact = await createContact();
      expectError(await server().request('GET', '/workflows/wf_nope'), 404, 'not_found');
      expectError(await server().request('GET', '/workflows/wf_nope/runs'), 404, 'not_found');
      expectError(
        await server().request('POST', '/workflows/wf_nope/trigger', { body: { contact_id: contact.id } }),
        404,
        'not_found',
      );
      const other = server().keys.otherFull;
      const otherContact = await createContact({}, other);
      expectError(await server().request('GET', `/workflows/${mine.id}`, { key: other }), 404, 'not_found');
      expectError(await server().request('GET', `/workflows/${mine.id}/runs`, { key: other }), 404, 'not_found');
      expectError(
        await server().request('POST', `/workflows/${mine.id}/trigger`, {
          key: other,
          body: { contact_id: otherContact.id },
        }),
        404,
        'not_found',
      );
      expect(
        (await server().request('GET', '/workflows', { key: other, query: { limit: 100 } })).body.data.map(
          (w: Workflow) => w.id,
        ),
      ).not.toContain(mine.id);
    });
  });

  describe('POST /workflows/:id/trigger', () => {
    it('answers 202 with the queued run', async () => {
      const workflow = await createWorkflow([
        { type: 'add_tag', tag: 'triggered' },
        { type: 'wait', seconds: 5 },
      ]);
      const contact = await createContact({ name: 'Queued' });
      const run = await trigger(workflow.id, contact.id, { order: '1001', total: 25, paid: true, note: null });
      expect(run).toEqual({
        id: expect.stringMatching(/^run_[0-9A-Z]{26}$/),
        workflow_id: workflow.id,
        contact_id: contact.id,
        event_id: null,
        status: 'queued',
        data: { order: '1001', total: 25, paid: true, note: null },
        steps: [
          { index: 0, type: 'add_tag', status: 'pending', error: null },
          { index: 1, type: 'wait', status: 'pending', error: null },
        ],
        error: null,
        created_at: run.created_at,
        started_at: null,
        finished_at: null,
      });
      // Without data, the run's data is empty.
      expect((await trigger(workflow.id, contact.id)).data).toEqual({});
      expect((await runsOf(workflow.id)).data.map((r) => r.id)).toContain(run.id);
    });

    it("404s an unknown contact and another account's contact", async () => {
      const workflow = await createWorkflow([{ type: 'wait', seconds: 1 }]);
      const otherContact = await createContact({}, server().keys.otherFull);
      for (const contactId of ['ct_nope', otherContact.id]) {
        expectError(
          await server().request('POST', `/workflows/${workflow.id}/trigger`, { body: { contact_id: contactId } }),
          404,
          'not_found',
        );
      }
      expect((await runsOf(workflow.id)).total).toBe(0);
    });

    it.each([
      [{ data: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }, 'data', 'max'],
      [{ data: { nested: { a: 1 } } }, 'data.nested', 'type'],
      [{ data: 'order 1001' }, 'data', 'type'],
      [{ contact_id: undefined }, 'contact_id', 'required'],
      [{ priority: 'high' }, 'priority', 'unknown'],
    ])('rejects %j: %s %s', async (extra, field, constraint) => {
      const workflow = await createWorkflow([{ type: 'wait', seconds: 1 }]);
      const contact = await createContact();
      const body = { contact_id: contact.id, ...extra };
      expectError(await server().request('POST', `/workflows/${workflow.id}/trigger`, { body }), 400, 'bad_request', {
        field,
        constraint,
      });
    });

    it('accepts data of exactly 50 keys', async () => {
      const workflow = await createWorkflow([{ type: 'wait', seconds: 1 }]);
      const contact = await createContact();
      const data = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i]));
      expect(Object.keys((await trigger(workflow.id, contact.id, data)).data)).toHaveLength(50);
    });

    it('needs a full key: a read-only key is 403', async () => {
      const workflow = await createWorkflow([{ type: 'wait', seconds: 1 }]);
      const contact = await createContact();
      expectError(
        await server().request('POST', `/workflows/${workflow.id}/trigger`, {
          key: server().keys.readOnly,
          body: { contact_id: contact.id },
        }),
        403,
        'forbidden',
      );
      expectBody(
        await server().request('GET', `/workflows/${workflow.id}/runs`, { key: server().keys.readOnly }),
        200,
        WorkflowRunList,
      );
    });
  });

  describe('PATCH and DELETE /workflows/:id; a run retrieved and cancelled', () => {
    const patch = (id: string, body: unknown, key?: string) =>
      server().request('PATCH', `/workflows/${id}`, { key, body });

    it('changes the name, the steps and enabled; a disabled workflow starts no run', async () => {
      const workflow = await createWorkflow([{ type: 'add_tag', tag: 'a' }], 'Before');
      expect(workflow.enabled).toBe(true);
      const renamed = expectBody(
        await patch(workflow.id, { name: 'After', steps: [{ type: 'add_tag', tag: 'b' }] }),
        200,
        Workflow,
      );
      expect(renamed).toMatchObject({
        id: workflow.id,
        name: 'After',
        steps: [{ type: 'add_tag', tag: 'b' }],
        enabled: true,
        created_at: workflow.created_at,
      });
      expect(renamed.updated_at >= workflow.updated_at).toBe(true);
      expect(expectBody(await patch(workflow.id, {}), 200, Workflow)).toEqual(renamed);
      const disabled = expectBody(await patch(workflow.id, { enabled: false }), 200, Workflow);
      expect(disabled.enabled).toBe(false);
      expect(expectBody(await server().request('GET', `/workflows/${workflow.id}`), 200, Workflow)).toEqual(disabled);
      const contact = await createContact();
      expectError(
        await server().request('POST', `/workflows/${workflow.id}/trigger`, { body: { contact_id: contact.id } }),
        400,
        'bad_request',
        {
          field: 'enabled',
          constraint: 'transition',
        },
      );
      expect((await runsOf(workflow.id)).total).toBe(0);
      expect(expectBody(await patch(workflow.id, { enabled: true }), 200, Workflow).enabled).toBe(true);
      await trigger(workflow.id, contact.id);
      // Created disabled.
      const off = expectBody(
        await server().request('POST', '/workflows', {
          body: { name: 'Off', steps: [{ type: 'wait', seconds: 1 }], enabled: false },
        }),
        201,
        Workflow,
      );
      expect(off.enabled).toBe(false);
    });

    it("validates the change, 404s unknown and other accounts' workflows, and needs a full key", async () => {
      const workflow = await createWorkflow([{ type: 'add_tag', tag: 'a' }]);
      expectError(await patch(workflow.id, { steps: [] }), 400, 'bad_request', { field: 'steps', constraint: 'min' });
      expectError(await patch(workflow.id, { steps: [{ type: 'dance' }] }), 400, 'bad_request');
      expectError(await patch(workflow.id, { enabled: 'yes' }), 400, 'bad_request', {
        field: 'enabled',
        constraint: 'type',
      });
      expectError(await patch(workflow.id, { schedule: 'x' }), 400, 'bad_request', {
        field: 'schedule',
        constraint: 'unknown',
      });
      expectError(await patch('wf_nope', { name: 'x' }), 404, 'not_found');
      expectError(await patch(workflow.id, { name: 'x' }, server().keys.otherFull), 404, 'not_found');
      expectError(await patch(workflow.id, { name: 'x' }, server().keys.readOnly), 403, 'forbidden');
      expectError(
        await server().request('DELETE', `/workflows/${workflow.id}`, { key: server().keys.otherFull }),
        404,
        'not_found',
      );
      expectError(
        await server().request('DELETE', `/workflows/${workflow.id}`, { key: server().keys.readOnly }),
        403,
        'forbidden',
      );
      expect(expectBody(await server().request('GET', `/workflows/${workflow.id}`), 200, Workflow).name).toBe(
        workflow.name,
      );
    });

    it('retrieves a run and cancels it while queued; a cancelled run cannot be cancelled again', async () => {
      const workflow = await createWorkflow([
        { type: 'wait', seconds: 60 },
        { type: 'add_tag', tag: 'never' },
      ]);
      const contact = await createContact();
      const queued = await trigger(workflow.id, contact.id);
      const runUrl = `/workflows/${workflow.id}/runs/${queued.id}`;
      expect(
        expectBody(await server().request('GET', runUrl, { key: server().keys.readOnly }), 200, WorkflowRun),
      ).toEqual(queued);
      const cancelled = expectBody(await server().request('POST', `${runUrl}/cancel`), 200, WorkflowRun);
      expect(cancelled).toMatchObject({ id: queued.id, status: 'cancelled', error: null });
      expect(cancelled.finished_at).not.toBeNull();
      expect(cancelled.steps.map((step) => step.status)).toEqual(['skipped', 'skipped']);
      expect(expectBody(await server().request('GET', runUrl), 200, WorkflowRun)).toEqual(cancelled);
      expectError(await server().request('POST', `${runUrl}/cancel`), 400, 'bad_request', {
        field: 'run_id',
        constraint: 'transition',
      });
      expect((await runsOf(workflow.id, { status: 'cancelled' })).data.map((r) => r.id)).toEqual([queued.id]);

      const other = await createWorkflow([{ type: 'wait', seconds: 1 }]);
      expectError(await server().request('GET', `/workflows/${other.id}/runs/${queued.id}`), 404, 'not_found');
      expectError(await server().request('GET', `/workflows/${workflow.id}/runs/run_nope`), 404, 'not_found');
      expectError(await server().request('GET', runUrl, { key: server().keys.otherFull }), 404, 'not_found');
      expectError(
        await server().request('POST', `${runUrl}/cancel`, { key: server().keys.otherFull }),
        404,
        'not_found',
      );
      expectError(
        await server().request('POST', `${runUrl}/cancel`, { key: server().keys.readOnly }),
        403,
        'forbidden',
      );
    });

    it('deletes a workflow: gone from lookups and lists, its queued runs cancelled and still readable', async () => {
      const workflow = await createWorkflow([{ type: 'wait', seconds: 60 }], 'Doomed');
      const run = await trigger(workflow.id, (await createContact()).id);
      const deleted = await server().request('DELETE', `/workflows/${workflow.id}`);
      expect(deleted.status, deleted.text).toBe(204);
      expectError(await server().request('GET', `/workflows/${workflow.id}`), 404, 'not_found');
      expectError(await patch(workflow.id, { name: 'x' }), 404, 'not_found');
      expectError(await server().request('DELETE', `/workflows/${workflow.id}`), 404, 'not_found');
      expectError(
        await server().request('POST', `/workflows/${workflow.id}/trigger`, { body: { contact_id: run.contact_id } }),
        404,
        'not_found',
      );
      const list = expectBody(
        await server().request('GET', '/workflows', { query: { limit: 100 } }),
        200,
        WorkflowList,
      );
      expect(list.data.map((w) => w.id)).not.toContain(workflow.id);
      expect((await runsOf(workflow.id)).data).toEqual([expect.objectContaining({ id: run.id, status: 'cancelled' })]);
      expect(
        expectBody(await server().request('GET', `/workflows/${workflow.id}/runs/${run.id}`), 200, WorkflowRun).status,
      ).toBe('cancelled');
    });
  });

  describe('running in the background', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('sends a templated message, changes tags, waits, and resolves the conversation', async () => {
      stopClock();
      const contact = await createContact({ name: 'Ana', tags: ['lead'] });
      const conversation = await openConversation(contact.id);
      const workflow = await createWorkflow([
        { type: 'send_message', content: 'Hi {{contact.name}}, order {{data.order}}{{data.missing}}!' },
        { type: 'add_tag', tag: 'customer' },
        { type: 'remove_tag', tag: 'lead' },
        { type: 'wait', seconds: 1 },
        { type: 'set_conversation_status', status: 'resolved' },
      ]);
      const queued = await trigger(workflow.id, contact.id, { order: '1001' });

      // While it waits, the steps before the wait are done and the one after it is not.
      const { run: waiting } = await runUntil(
        workflow.id,
        queued.id,
        (run) => run.status !== 'queued' && run.status !== 'running',
      );
      expect(waiting.status).toBe('waiting');
      expect(waiting.started_at).not.toBeNull();
      expect(waiting.steps.map((s) => s.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'running', 'pending']);
      const messages = expectBody(
        await server().request('GET', `/conversations/${conversation.id}/messages`),
        200,
        MessageList,
      );
      expect(messages.data.map((m) => [m.direction, m.content])).toEqual([['outbound', 'Hi Ana, order 1001!']]);
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact).tags).toEqual([
        'customer',
      ]);
      expect(
        expectBody(await server().request('GET', `/conversations/${conversation.id}`), 200, Conversation).status,
      ).toBe('active');

      const { run } = await runUntil(workflow.id, queued.id);
      expect(run).toMatchObject({ status: 'succeeded', error: null, contact_id: contact.id, data: { order: '1001' } });
      expect(run.steps).toEqual(
        workflow.steps.map((step, index) => ({ index, type: step.type, status: 'succeeded', error: null })),
      );
      expect(Date.parse(run.finished_at ?? '') - Date.parse(run.started_at ?? '')).toBeGreaterThanOrEqual(1000);

      const resolved = expectBody(
        await server().request('GET', `/conversations/${conversation.id}`),
        200,
        Conversation,
      );
      expect(resolved).toMatchObject({
        status: 'resolved',
        message_count: 1,
        last_message: { content: 'Hi Ana, order 1001!' },
      });
      const events = expectBody(
        await server().request('GET', '/events', { query: { type: 'conversation.resolved', limit: 100 } }),
        200,
        EventList,
      );
      const resolvedEvents = events.data.filter((e) => (e.data as { id?: string }).id === conversation.id);
      expect(resolvedEvents).toHaveLength(1);
      expect(resolvedEvents[0]?.data).toMatchObject({ id: conversation.id, status: 'resolved' });
    });

    it('sends into the non-archived conversation with the latest activity, on any platform', async () => {
      const contact = await createContact();
      const older = await openConversation(contact.id, 'instagram');
      const newer = await openConversation(contact.id, 'facebook');
      const archived = await openConversation(contact.id, 'whatsapp');
      expectBody(
        await server().request('PATCH', `/conversations/${archived.id}`, { body: { status: 'archived' } }),
        200,
        Conversation,
      );
      // A message makes the older conversation the latest active one.
      expectBody(
        await server().request('POST', '/messages', { body: { conversation_id: older.id, content: 'earlier' } }),
        201,
        Message,
      );
      const workflow = await createWorkflow([
        { type: 'send_message', content: '[{{contact.name}}] {{ data.note }} {{contact.phone}}' },
      ]);
      const { run } = await runUntil(workflow.id, (await trigger(workflow.id, contact.id, { note: '<b>&</b>' })).id);
      expect(run.status).toBe('succeeded');
      const sent = expectBody(await server().request('GET', `/conversations/${older.id}/messages`), 200, MessageList);
      // Verbatim: no escaping; a missing name is empty; other placeholders stay as written.
      expect(sent.data.map((m) => m.content)).toEqual(['earlier', '[] <b>&</b> {{contact.phone}}']);
      for (const id of [newer.id, archived.id]) {
        expect(expectBody(await server().request('GET', `/conversations/${id}/messages`), 200, MessageList).total).toBe(
          0,
        );
      }
    });

    it('fails a step with no open conversation, skipping the steps after it', async () => {
      const contact = await createContact();
      const conversation = await openConversation(contact.id);
      expectBody(
        await server().request('PATCH', `/conversations/${conversation.id}`, { body: { status: 'archived' } }),
        200,
        Conversation,
      );
      const workflow = await createWorkflow([
        { type: 'add_tag', tag: 'before' },
        { type: 'send_message', content: 'Hello' },
        { type: 'add_tag', tag: 'after' },
      ]);
      const { run } = await runUntil(workflow.id, (await trigger(workflow.id, contact.id)).id);
      expect(run).toMatchObject({ status: 'failed', error: 'step 1 (send_message): no_open_conversation' });
      expect(run.steps).toEqual([
        { index: 0, type: 'add_tag', status: 'succeeded', error: null },
        { index: 1, type: 'send_message', status: 'failed', error: 'no_open_conversation' },
        { index: 2, type: 'add_tag', status: 'skipped', error: null },
      ]);
      expect(run.started_at).not.toBeNull();
      expect(run.finished_at).not.toBeNull();
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact).tags).toEqual([
        'before',
      ]);

      const statusWorkflow = await createWorkflow([{ type: 'set_conversation_status', status: 'resolved' }]);
      const { run: statusRun } = await runUntil(statusWorkflow.id, (await trigger(statusWorkflow.id, contact.id)).id);
      expect(statusRun).toMatchObject({
        status: 'failed',
        error: 'step 0 (set_conversation_status): no_open_conversation',
      });
    });

    it("treats removing an absent tag as done, and fails a 51st tag with the API's message", async () => {
      const contact = await createContact({ tags: Array.from({ length: 50 }, (_, i) => `t${i}`) });
      const workflow = await createWorkflow([
        { type: 'remove_tag', tag: 'absent' },
        { type: 'add_tag', tag: 't0' },
        { type: 'add_tag', tag: 'one-too-many' },
      ]);
      const { run } = await runUntil(workflow.id, (await trigger(workflow.id, contact.id)).id);
      expect(run.steps.map((s) => s.status)).toEqual(['succeeded', 'succeeded', 'failed']);
      expect(run.steps[2]?.error).toBe('A contact has at most 50 tags');
      expect(run).toMatchObject({ status: 'failed', error: 'step 2 (add_tag): A contact has at most 50 tags' });
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact).tags).toHaveLength(50);
    });

    it('filters runs by status, newest first; a deleted contact leaves its finished runs with contact_id null', async () => {
      const workflow = await createWorkflow([{ type: 'send_message', content: 'Thanks!' }]);
      const reachable = await createContact();
      await openConversation(reachable.id);
      const unreachable = await createContact();
      const good = await runUntil(workflow.id, (await trigger(workflow.id, reachable.id)).id);
      const bad = await runUntil(workflow.id, (await trigger(workflow.id, unreachable.id)).id);
      expect(good.run.status).toBe('succeeded');
      expect(bad.run.status).toBe('failed');

      expect((await runsOf(workflow.id)).data.map((r) => r.id)).toEqual([bad.run.id, good.run.id]);
      expect((await runsOf(workflow.id, { status: 'succeeded' })).data.map((r) => r.id)).toEqual([good.run.id]);
      expect((await runsOf(workflow.id, { status: 'failed' })).data.map((r) => r.id)).toEqual([bad.run.id]);
      expect((await runsOf(workflow.id, { status: 'waiting' })).total).toBe(0);
      expectError(
        await server().request('GET', `/workflows/${workflow.id}/runs`, { query: { status: 'done' } }),
        400,
        'bad_request',
        {
          field: 'status',
          constraint: 'enum',
        },
      );
      expectError(
        await server().request('GET', `/workflows/${workflow.id}/runs`, { query: { contact_id: reachable.id } }),
        400,
        'bad_request',
        {
          field: 'contact_id',
          constraint: 'unknown',
        },
      );

      expect((await server().request('DELETE', `/contacts/${reachable.id}`)).status).toBe(204);
      const [after] = (await runsOf(workflow.id, { status: 'succeeded' })).data;
      expect(after).toEqual({ ...good.run, contact_id: null });

      // A job for a finished run changes nothing.
      const jobId = await enqueue(server().database.db, {
        kind: 'run_workflow',
        accountId: server().accountId,
        payload: { runId: bad.run.id },
      });
      await server().drainJobs();
      await vi.waitFor(
        async () =>
          expect(
            await server().database.db.selectFrom('jobs').select('id').where('id', '=', jobId).executeTakeFirst(),
          ).toBeUndefined(),
        {
          timeout: 10_000,
        },
      );
      expect((await runsOf(workflow.id, { status: 'failed' })).data).toEqual([bad.run]);
    });

    it('a run keeps the steps it started with when the workflow changes, and a waiting run can be cancelled', async () => {
      stopClock();
      const contact = await createContact();
      const workflow = await createWorkflow([
        { type: 'wait', seconds: 1 },
        { type: 'add_tag', tag: 'original' },
      ]);
      const first = await trigger(workflow.id, contact.id);
      await runUntil(workflow.id, first.id, (run) => run.status === 'waiting');
      expect(
        (
          await server().request('PATCH', `/workflows/${workflow.id}`, {
            body: { steps: [{ type: 'add_tag', tag: 'edited' }] },
          })
        ).status,
      ).toBe(200);
      const { run } = await runUntil(workflow.id, first.id);
      expect(run.status).toBe('succeeded');
      expect(run.steps.map((s) => s.type)).toEqual(['wait', 'add_tag']);
      const second = await trigger(workflow.id, contact.id);
      expect((await runUntil(workflow.id, second.id)).run.steps.map((s) => s.type)).toEqual(['add_tag']);
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact).tags).toEqual([
        'original',
        'edited',
      ]);

      const waiting = await createWorkflow([
        { type: 'wait', seconds: 2 },
        { type: 'add_tag', tag: 'not-after-cancel' },
      ]);
      const long = await trigger(waiting.id, contact.id);
      await runUntil(waiting.id, long.id, (r) => r.status === 'waiting');
      const cancelled = expectBody(
        await server().request('POST', `/workflows/${waiting.id}/runs/${long.id}/cancel`),
        200,
        WorkflowRun,
      );
      expect(cancelled.steps.map((s) => s.status)).toEqual(['skipped', 'skipped']);
      // The run's job comes back after the wait, finds it cancelled and does nothing.
      await advanceClock(2_500);
      expect(
        expectBody(await server().request('GET', `/workflows/${waiting.id}/runs/${long.id}`), 200, WorkflowRun),
      ).toEqual(cancelled);
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact).tags).not.toContain(
        'not-after-cancel',
      );
    });

    it('a running run cannot be cancelled, and deleting its workflow stops it at its next step', async () => {
      stopClock();
      const contact = await createContact();
      const workflow = await createWorkflow([
        { type: 'wait', seconds: 1 },
        { type: 'add_tag', tag: 'after-delete' },
      ]);
      const run = await trigger(workflow.id, contact.id);
      await runUntil(workflow.id, run.id, (r) => r.status === 'waiting');
      expect((await server().request('DELETE', `/workflows/${workflow.id}`)).status).toBe(204);
      const stopped = expectBody(
        await server().request('GET', `/workflows/${workflow.id}/runs/${run.id}`),
        200,
        WorkflowRun,
      );
      expect(stopped.status).toBe('cancelled');
      await advanceClock(1_500);
      expect(
        expectBody(await server().request('GET', `/workflows/${workflow.id}/runs/${run.id}`), 200, WorkflowRun),
      ).toEqual(stopped);
      expect(expectBody(await server().request('GET', `/contacts/${contact.id}`), 200, Contact).tags).not.toContain(
        'after-delete',
      );

      const done = await createWorkflow([{ type: 'add_tag', tag: 'quick' }]);
      const finished = await trigger(done.id, contact.id);
      await runUntil(done.id, finished.id);
      expectError(
        await server().request('POST', `/workflows/${done.id}/runs/${finished.id}/cancel`),
        400,
        'bad_request',
        {
          field: 'run_id',
          constraint: 'transition',
        },
      );
    });

    it('fails at the next step with contact_deleted when the contact is deleted during a wait', async () => {
      stopClock();
      const contact = await createContact();
      const workflow = await createWorkflow([
        { type: 'wait', seconds: 1 },
        { type: 'add_tag', tag: 'late' },
        { type: 'wait', seconds: 1 },
      ]);
      const queued = await trigger(workflow.id, contact.id);
      await runUntil(workflow.id, queued.id, (run) => run.status === 'waiting');
      expect((await server().request('DELETE', `/contacts/${contact.id}`)).status).toBe(204);
      const { run, seen } = await runUntil(workflow.id, queued.id);
      expect(seen.has('waiting')).toBe(true);
      expect(run).toMatchObject({ status: 'failed', contact_id: null, error: 'step 1 (add_tag): contact_deleted' });
      expect(run.steps.map((s) => [s.status, s.error])).toEqual([
        ['succeeded', null],
        ['failed', 'contact_deleted'],
        ['skipped', null],
      ]);
    });
  });
});
