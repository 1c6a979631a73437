import { createHmac } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Contact, Conversation, Workflow, WorkflowRun, WorkflowRunList } from '@convo/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachDialect, eventually, expectBody, expectError, testSettings } from '../testing/harness.js';

const isFinished = (run: WorkflowRun) => ['succeeded', 'failed', 'cancelled', 'skipped'].includes(run.status);
const vip = [{ field: 'contact.tags', op: 'contains', value: 'vip' }];

/** A receiver on loopback: records each request and answers as `answer` says (or holds it). */
function startReceiver() {
  const received: { headers: IncomingMessage['headers']; body: string; response: ServerResponse }[] = [];
  let answer: (request: { body: string }, response: ServerResponse) => void = (_request, response) =>
    response.writeHead(200).end('ok');
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ headers: request.headers, body, response });
      answer({ body }, response);
    });
  });
  return {
    received,
    answerWith(next: typeof answer) {
      answer = next;
    },
    url: (path = '/hook') => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    listen: () => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)),
    close: () => {
      for (const r of received) r.response.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

describeEachDialect('workflow steps if and http_request', (server) => {
  let phoneSeq = 7_000_000;
  const phone = () => `+1415${phoneSeq++}`;
  const receiver = startReceiver();

  const createContact = async (body: Record<string, unknown> = {}) =>
    expectBody(await server().request('POST', '/contacts', { body: { phone: phone(), ...body } }), 201, Contact);
  const createWorkflow = async (steps: unknown[], extra: Record<string, unknown> = {}) =>
    expectBody(
      await server().request('POST', '/workflows', { body: { name: 'Steps', steps, ...extra } }),
      201,
      Workflow,
    );
  const trigger = async (workflowId: string, contactId: string, data?: Record<string, unknown>) =>
    expectBody(
      await server().request('POST', `/workflows/${workflowId}/trigger`, {
        body: { contact_id: contactId, ...(data ? { data } : {}) },
      }),
      202,
      WorkflowRun,
    );
  const retrieveRun = async (workflowId: string, runId: string) =>
    expectBody(await server().request('GET', `/workflows/${workflowId}/runs/${runId}`), 200, WorkflowRun);
  const finished = (workflowId: string, runId: string) =>
    eventually(async () => {
      const run = await retrieveRun(workflowId, runId);
      return isFinished(run) && run;
    }, 15_000);
  const tagsOf = async (contactId: string) =>
    expectBody(await server().request('GET', `/contacts/${contactId}`), 200, Contact).tags;

  beforeAll(async () => {
    await receiver.listen();
    await server().startWorker({ pollIntervalMs: 20 });
  });
  afterAll(() => receiver.close());

  describe('if', () => {
    it('runs the then branch when every condition holds, else the else branch, and shows both in the run', async () => {
      const branching = {
        type: 'if',
        conditions: vip,
        then: [{ type: 'add_tag', tag: 'gold' }],
        else: [
          { type: 'add_tag', tag: 'standard' },
          { type: 'add_tag', tag: 'nurture' },
        ],
      };
      const workflow = await createWorkflow([
        { type: 'add_tag', tag: 'seen' },
        branching,
        { type: 'add_tag', tag: 'done' },
      ]);
      expect(workflow.steps[1]).toEqual(branching);
      const important = await createContact({ tags: ['vip'] });
      const ordinary = await createContact();
      const queued = await trigger(workflow.id, important.id);
      expect(queued.steps.map((s) => [s.index, s.path, s.type, s.status])).toEqual([
        [0, '0', 'add_tag', 'pending'],
        [1, '1', 'if', 'pending'],
        [2, '1.then.0', 'add_tag', 'pending'],
        [3, '1.else.0', 'add_tag', 'pending'],
        [4, '1.else.1', 'add_tag', 'pending'],
        [5, '2', 'add_tag', 'pending'],
      ]);
      expect(queued.steps[1]?.branch).toBeNull();

      const thenRun = await finished(workflow.id, queued.id);
      expect(thenRun.status).toBe('succeeded');
      expect(thenRun.steps.map((s) => s.status)).toEqual([
        'succeeded',
        'succeeded',
        'succeeded',
        'skipped',
        'skipped',
        'succeeded',
      ]);
      expect(thenRun.steps[1]?.branch).toBe('then');
      expect(await tagsOf(important.id)).toEqual(['vip', 'seen', 'gold', 'done']);

      const elseRun = await finished(workflow.id, (await trigger(workflow.id, ordinary.id)).id);
      expect(elseRun.status).toBe('succeeded');
      expect(elseRun.steps.map((s) => s.status)).toEqual([
        'succeeded',
        'succeeded',
        'skipped',
        'succeeded',
        'succeeded',
        'succeeded',
      ]);
      expect(elseRun.steps[1]?.branch).toBe('else');
      expect(await tagsOf(ordinary.id)).toEqual(['seen', 'standard', 'nurture', 'done']);
    });

    it('nests ifs, waits inside a branch, and reads the run data; a missing else does nothing', async () => {
      const workflow = await createWorkflow([
        {
          type: 'if',
          conditions: [{ field: 'data.plan', op: 'in', value: ['gold', 'silver'] }],
          then: [
            { type: 'wait', seconds: 1 },
            {
              type: 'if',
              conditions: [{ field: 'data.plan', op: 'eq', value: 'gold' }],
              then: [
                {
                  type: 'if',
                  conditions: [{ field: 'data.total', op: 'gt', value: 100 }],
                  then: [{ type: 'add_tag', tag: 'big-gold' }],
                },
              ],
              else: [{ type: 'add_tag', tag: 'silver' }],
            },
          ],
        },
        { type: 'add_tag', tag: 'after' },
      ]);
      const contact = await createContact();
      const run = await trigger(workflow.id, contact.id, { plan: 'gold', total: 250 });
      const waiting = await eventually(async () => {
        const current = await retrieveRun(workflow.id, run.id);
        return current.status === 'waiting' && current;
      });
      expect(waiting.steps.find((s) => s.status === 'running')?.path).toBe('0.then.0');
      const done = await finished(workflow.id, run.id);
      expect(done.steps.map((s) => [s.path, s.status, s.branch ?? null])).toEqual([
        ['0', 'succeeded', 'then'],
        ['0.then.0', 'succeeded', null],
        ['0.then.1', 'succeeded', 'then'],
        ['0.then.1.then.0', 'succeeded', 'then'],
        ['0.then.1.then.0.then.0', 'succeeded', null],
        ['0.then.1.else.0', 'skipped', null],
        ['1', 'succeeded', null],
      ]);
      expect(await tagsOf(contact.id)).toEqual(['big-gold', 'after']);

      // No plan: the outer if takes its (empty) else; everything inside it is skipped.
      const other = await createContact();
      const skipped = await finished(workflow.id, (await trigger(workflow.id, other.id)).id);
      expect(skipped.status).toBe('succeeded');
      expect(skipped.steps.map((s) => s.status)).toEqual([
        'succeeded',
        'skipped',
        'skipped',
        'skipped',
        'skipped',
        'skipped',
        'succeeded',
      ]);
      expect(await tagsOf(other.id)).toEqual(['after']);
    });

    it('reads data keys of letters of either case, digits, _ and -', async () => {
      const workflow = await createWorkflow([
        {
          type: 'if',
          conditions: [
            { field: 'data.orderId', op: 'eq', value: 'A-7' },
            { field: 'data.utm-source', op: 'exists' },
          ],
          then: [{ type: 'add_tag', tag: 'matched' }],
        },
      ]);
      const contact = await createContact();
      const run = await finished(
        workflow.id,
        (await trigger(workflow.id, contact.id, { orderId: 'A-7', 'utm-source': 'ads' })).id,
      );
      expect(run.steps[0]?.branch).toBe('then');
      expect(await tagsOf(contact.id)).toEqual(['matched']);
    });

    it("reads the triggering event's data in a run its trigger started", async () => {
      const workflow = await createWorkflow(
        [
          {
            type: 'if',
            conditions: [{ field: 'event.name', op: 'contains', value: 'ltd' }],
            then: [{ type: 'add_tag', tag: 'company' }],
            else: [{ type: 'add_tag', tag: 'person' }],
          },
        ],
        { trigger: { event: 'contact.created' } },
      );
      const company = await createContact({ name: 'Acme Ltd' });
      const person = await createContact({ name: 'Ana' });
      await eventually(
        async () => (await tagsOf(company.id)).includes('company') && (await tagsOf(person.id)).includes('person'),
      );
      const runs = expectBody(
        await server().request('GET', `/workflows/${workflow.id}/runs`),
        200,
        WorkflowRunList,
      ).data;
      expect(runs.filter((r) => r.contact_id === company.id || r.contact_id === person.id)).toHaveLength(2);
      expect(await tagsOf(company.id)).toEqual(['company']);
      expect(await tagsOf(person.id)).toEqual(['person']);
      expect((await server().request('DELETE', `/workflows/${workflow.id}`)).status).toBe(204);
    });

    it('validates conditions, branches, the nesting depth and the number of steps in all', async () => {
      const ifOf = (then: unknown[]) => ({ type: 'if', conditions: vip, then });
      const wait = { type: 'wait', seconds: 1 };
      const cases: [unknown[], string, string][] = [
        [[ifOf([ifOf([ifOf([ifOf([wait])])])])], 'steps.0.then.0.then.0.then.0', 'max'],
        [Array.from({ length: 40 }, () => ifOf([wait, wait])), 'steps', 'max'],
        [[{ type: 'if', conditions: vip }], 'steps.0.then', 'required'],
        [[ifOf([])], 'steps.0.then', 'min'],
        [[{ type: 'if', conditions: [], then: [wait] }], 'steps.0.conditions', 'min'],
        [
          [{ type: 'if', conditions: [{ field: 'contact.tags', op: 'like', value: 'x' }], then: [wait] }],
          'steps.0.conditions.0.op',
          'enum',
        ],
        [[ifOf([{ type: 'teleport' }])], 'steps.0.then.0.type', 'enum'],
        [
          [{ type: 'if', conditions: vip, then: [wait], else: [{ type: 'wait', seconds: 0 }] }],
          'steps.0.else.0.seconds',
          'min',
        ],
        [[{ type: 'http_request' }], 'steps.0.url', 'required'],
        [[{ type: 'http_request', url: 'ftp://example.com/x' }], 'steps.0.url', 'format'],
        [[{ type: 'http_request', url: 'https://example.com/x', method: 'GET' }], 'steps.0.method', 'unknown'],
      ];
      for (const [steps, field, constraint] of cases) {
        expectError(
          await server().request('POST', '/workflows', { body: { name: 'Bad', steps } }),
          400,
          'bad_request',
          { field, constraint },
        );
      }
      // Three levels deep and exactly 100 steps in all are accepted.
      await createWorkflow([ifOf([ifOf([ifOf([wait])])])]);
      await createWorkflow([...Array.from({ length: 33 }, () => ifOf([wait, wait])), wait]);
      const workflow = await createWorkflow([wait]);
      expectError(
        await server().request('PATCH', `/workflows/${workflow.id}`, {
          body: { steps: [ifOf([ifOf([ifOf([ifOf([wait])])])])] },
        }),
        400,
        'bad_request',
        {
          field: 'steps.0.then.0.then.0.then.0',
          constraint: 'max',
        },
      );
    });
  });

  describe('http_request', () => {
    it("POSTs the run's contact and data, signed like a webhook, records the status and goes on", async () => {
      receiver.answerWith((_request, response) => response.writeHead(202).end('accepted'));
      const contact = await createContact({ name: 'Ana', tags: ['vip'] });
      const workflow = await createWorkflow([
        { type: 'if', conditions: vip, then: [{ type: 'http_request', url: receiver.url('/vip') }] },
        { type: 'add_tag', tag: 'notified' },
      ]);
      const before = receiver.received.length;
      const run = await finished(workflow.id, (await trigger(workflow.id, contact.id, { order: 'A-1' })).id);
      expect(run.status).toBe('succeeded');
      expect(run.steps[1]).toMatchObject({
        path: '0.then.0',
        type: 'http_request',
        status: 'succeeded',
        response_status: 202,
        error: null,
      });
      expect(await tagsOf(contact.id)).toEqual(['vip', 'notified']);

      const sent = receiver.received.slice(before);
      expect(sent).toHaveLength(1);
      const [request] = sent;
      const body = JSON.parse(request?.body ?? '{}');
      expect(body).toEqual({
        run_id: run.id,
        workflow_id: workflow.id,
        step: '0.then.0',
        contact: expect.objectContaining({ id: contact.id, name: 'Ana', tags: ['vip'] }),
        data: { order: 'A-1' },
        event: null,
      });
      const headers = request?.headers ?? {};
      expect(headers['content-type']).toBe('application/json');
      expect(headers['webhook-id']).toBe(`${run.id}.1`);
      // Verified as a receiver would, with the account's webhook signing secret.
      const key = Buffer.from(server().keys.webhook.replace(/^whsec_/, ''), 'base64');
      const expected = createHmac('sha256', key)
        .update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${request?.body}`)
        .digest('base64');
      expect(String(headers['webhook-signature']).split(' ')).toContain(`v1,${expected}`);
    });

    it('fails the run on an error status or no answer in time, recording what came back', async () => {
      receiver.answerWith((_request, response) => response.writeHead(500).end('down'));
      const contact = await createContact();
      const workflow = await createWorkflow([
        { type: 'http_request', url: receiver.url('/fail') },
        { type: 'add_tag', tag: 'never' },
      ]);
      const failed = await finished(workflow.id, (await trigger(workflow.id, contact.id)).id);
      expect(failed).toMatchObject({
        status: 'failed',
        error: 'step 0 (http_request): HTTP 500 Internal Server Error',
      });
      // Without if steps, no path: the steps are the contract's, plus the request's status.
      expect(failed.steps).toEqual([
        {
          index: 0,
          type: 'http_request',
          status: 'failed',
          error: 'HTTP 500 Internal Server Error',
          response_status: 500,
        },
        { index: 1, type: 'add_tag', status: 'skipped', error: null },
      ]);

      receiver.answerWith(() => {}); // held: the test server's timeout is 2 s
      const timedOut = await finished(workflow.id, (await trigger(workflow.id, contact.id)).id);
      expect(timedOut).toMatchObject({ status: 'failed', error: 'step 0 (http_request): timeout after 2000 ms' });
      expect(timedOut.steps[0]).toMatchObject({ status: 'failed', response_status: null });
      expect(await tagsOf(contact.id)).toEqual([]);
    });

    it('holds no transaction while waiting for the answer: the run and its contact change meanwhile', async () => {
      let release: (() => void) | undefined;
      receiver.answerWith((_request, response) => {
        release = () => response.writeHead(200).end('ok');
      });
      const contact = await createContact();
      const conversation = expectBody(
        await server().request('POST', '/conversations', { body: { contact_id: contact.id, platform: 'whatsapp' } }),
        201,
        Conversation,
      );
      const workflow = await createWorkflow([
        { type: 'http_request', url: receiver.url('/slow') },
        { type: 'add_tag', tag: 'after' },
      ]);
      const run = await trigger(workflow.id, contact.id);
      await eventually(() => release !== undefined);
      // Writes to the contact the step locked and to the rest of the account go through at once.
      expect(
        (await server().request('PATCH', `/contacts/${contact.id}`, { body: { name: 'Changed meanwhile' } })).status,
      ).toBe(200);
      expect(
        (await server().request('PATCH', `/conversations/${conversation.id}`, { body: { status: 'resolved' } })).status,
      ).toBe(200);
      expect((await retrieveRun(workflow.id, run.id)).steps[0]).toMatchObject({
        status: 'running',
        response_status: null,
      });
      release?.();
      const done = await finished(workflow.id, run.id);
      expect(done.status).toBe('succeeded');
      expect(await tagsOf(contact.id)).toEqual(['after']);
      receiver.answerWith((_request, response) => response.writeHead(200).end('ok'));
    });

    it('is not repeated once answered, and a run deleted while it waits for the answer stays cancelled', async () => {
      let release: (() => void) | undefined;
      receiver.answerWith((_request, response) => {
        release = () => response.writeHead(200).end('ok');
      });
      const contact = await createContact();
      const workflow = await createWorkflow([
        { type: 'http_request', url: receiver.url('/deleted') },
        { type: 'add_tag', tag: 'after' },
      ]);
      const run = await trigger(workflow.id, contact.id);
      await eventually(() => release !== undefined);
      expect((await server().request('DELETE', `/workflows/${workflow.id}`)).status).toBe(204);
      release?.();
      // The background worker finishes the run's job: the step's answer finds the run cancelled.
      await server().drainJobs();
      const cancelled = await retrieveRun(workflow.id, run.id);
      expect(cancelled.status).toBe('cancelled');
      expect(cancelled.steps.map((s) => s.status)).toEqual(['skipped', 'skipped']);
      expect(receiver.received.filter((r) => r.body.includes(run.id))).toHaveLength(1);
      expect(await tagsOf(contact.id)).toEqual([]);
      receiver.answerWith((_request, response) => response.writeHead(200).end('ok'));
    });
  });
});

describeEachDialect(
  'workflow http_request URLs under the webhook rules',
  (server) => {
    it('refuses plain http and private addresses, at any depth, on create and update', async () => {
      const wait = { type: 'wait', seconds: 1 };
      const cases: [unknown[], string][] = [
        [[{ type: 'http_request', url: 'http://example.com/hook' }], 'steps.0.url'],
        [[{ type: 'http_request', url: 'https://127.0.0.1/hook' }], 'steps.0.url'],
        [
          [
            wait,
            { type: 'if', conditions: vip, then: [wait], else: [{ type: 'http_request', url: 'https://[::1]/hook' }] },
          ],
          'steps.1.else.0.url',
        ],
        [[{ type: 'http_request', url: 'https://169.254.169.254/latest/meta-data' }], 'steps.0.url'],
      ];
      for (const [steps, field] of cases) {
        expectError(
          await server().request('POST', '/workflows', { body: { name: 'SSRF', steps } }),
          400,
          'bad_request',
          { field, constraint: 'format' },
        );
      }
      const workflow = expectBody(
        await server().request('POST', '/workflows', {
          body: { name: 'Public', steps: [{ type: 'http_request', url: 'https://93.184.215.14/hook' }] },
        }),
        201,
        Workflow,
      );
      expectError(
        await server().request('PATCH', `/workflows/${workflow.id}`, {
          body: { steps: [{ type: 'http_request', url: 'https://10.0.0.8/hook' }] },
        }),
        400,
        'bad_request',
        { field: 'steps.0.url', constraint: 'format' },
      );
    });
  },
  testSettings({ allowPrivateWebhooks: false }),
);
