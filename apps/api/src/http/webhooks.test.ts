import {
  Contact,
  Conversation,
  CreatedWebhookEndpoint,
  Event,
  EventList,
  MAX_WEBHOOK_ENDPOINTS,
  Message,
  Order,
  DeliveryReplay,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
} from '@convo/core';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { TenantScope } from '../repositories/tenant.js';
import { endpointLane, enqueue } from '../repositories/jobs.js';
import { Worker, jobHandlers } from '../worker/worker.js';
import { webhookEndpointsRepository } from '../repositories/webhooks.js';
import { accountsService } from '../services/accounts.js';
import {
  type TestServer,
  describeEachDialect,
  eventually,
  expectBody,
  expectError,
  testSettings,
} from '../testing/harness.js';

/** A request as the receiver saw it. */
interface ReceivedRequest {
  path: string;
  method: string;
  headers: Record<string, string>;
  body: string;
}

/** What a route answers to its n-th request (0-based): a status, or a full answer, or nothing ever. */
type Reply =
  | number
  | { status: number; headers?: Record<string, string>; body?: string }
  | 'hang'
  | ((res: ServerResponse) => void);

/** A real HTTP server on 127.0.0.1 that records every request and answers as each path is told. */
class Receiver {
  readonly requests: ReceivedRequest[] = [];
  private readonly routes = new Map<string, (n: number) => Reply>();
  private server: Server | undefined;
  private base = '';
  private counter = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  get port(): number {
    return (this.server?.address() as AddressInfo | undefined)?.port ?? 0;
  }

  /** A new path answering with `reply` (200 by default); returns its URL. */
  route(reply: (n: number) => Reply = () => 200): { url: string; path: string } {
    const path = `/hooks/${++this.counter}`;
    this.routes.set(path, reply);
    return { url: this.base + path, path };
  }

  at(path: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = req.url ?? '/';
    const n = this.at(path).length;
    const headers = Object.fromEntries(
      Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]),
    );
    this.requests.push({ path, method: req.method ?? '', headers, body: Buffer.concat(chunks).toString('utf8') });
    const reply = this.routes.get(path)?.(n) ?? 404;
    if (reply === 'hang') return;
    if (typeof reply === 'function') return reply(res);
    const answer = typeof reply === 'number' ? { status: reply } : reply;
    res.writeHead(answer.status, answer.headers ?? {});
    res.end(answer.body ?? '');
  }
}

const verifierHeaders = (r: ReceivedRequest) => ({
  'webhook-id': r.headers['webhook-id'] ?? '',
  'webhook-timestamp': r.headers['webhook-timestamp'] ?? '',
  'webhook-signature': r.headers['webhook-signature'] ?? '',
});

let phoneSeq = 0;
const phone = () => `+3161${String(2_000_000 + phoneSeq++).padStart(7, '0')}`;

/** Deletes every endpoint of both test accounts, so that no test's endpoint receives another's events. */
async function deleteAllEndpoints(server: TestServer): Promise<void> {
  for (const key of [server.keys.full, server.keys.otherFull]) {
    const list = expectBody(
      await server.request('GET', '/webhook_endpoints', { key, query: { limit: 100 } }),
      200,
      WebhookEndpointList,
    );
    for (const endpoint of list.data)
      expect((await server.request('DELETE', `/webhook_endpoints/${endpoint.id}`, { key })).status).toBe(204);
  }
}

describeEachDialect('webhook endpoints', (server) => {
  afterEach(async () => {
    await deleteAllEndpoints(server());
  });

  const createEndpoint = async (body: object, key?: string) =>
    expectBody(
      await server().request('POST', '/webhook_endpoints', { body, ...(key ? { key } : {}) }),
      201,
      WebhookEndpoint,
    );

  describe('POST /webhook_endpoints', () => {
    it('creates an enabled endpoint: 201 with the record, description null when absent, events as given', async () => {
      const endpoint = await createEndpoint({ url: 'https://hooks.example.com/convo', events: ['*'] });
      expect(endpoint).toMatchObject({
        url: 'https://hooks.example.com/convo',
        events: ['*'],
        description: null,
        status: 'enabled',
      });
      expect(endpoint.id).toMatch(/^whe_[0-9A-Z]{26}$/);
      expect(endpoint.created_at).toBe(endpoint.updated_at);

      const described = await createEndpoint({
        url: 'https://hooks.example.com/orders',
        events: ['order.placed', 'conversation.created'],
        description: 'CRM sync',
      });
      expect(described).toMatchObject({ events: ['order.placed', 'conversation.created'], description: 'CRM sync' });
    });

    it.each([
      [{ events: ['*'] }, 'url', 'required'],
      [{ url: 'not a url', events: ['*'] }, 'url', 'format'],
      [{ url: 'ftp://hooks.example.com/x', events: ['*'] }, 'url', 'format'],
      // Stored as sent or not at all: a URL with white space around or in it is not trimmed.
      [{ url: ' https://hooks.example.com/x ', events: ['*'] }, 'url', 'format'],
      [{ url: 42, events: ['*'] }, 'url', 'type'],
      [{ url: 'https://hooks.example.com/x' }, 'events', 'required'],
      [{ url: 'https://hooks.example.com/x', events: [] }, 'events', 'min'],
      [{ url: 'https://hooks.example.com/x', events: ['order.shipped'] }, 'events.0', 'enum'],
      [{ url: 'https://hooks.example.com/x', events: ['order.placed', 'all'] }, 'events.1', 'enum'],
      [{ url: 'https://hooks.example.com/x', events: '*' }, 'events', 'type'],
      [
        { url: 'https://hooks.example.com/x', events: ['*'], description: 'x'.repeat(501) },
        'description',
        'max_length',
      ],
      [{ url: 'https://hooks.example.com/x', events: ['*'], secret: 'mine' }, 'secret', 'unknown'],
    ])('rejects %j: %s %s', async (body, field, constraint) => {
      expectError(await server().request('POST', '/webhook_endpoints', { body }), 400, 'bad_request', {
        field,
        constraint,
      });
    });

    it(`keeps an account to ${MAX_WEBHOOK_ENDPOINTS} endpoints: the next is 400 (body, max) until one is deleted`, async () => {
      const made = [];
      for (let i = 0; i < MAX_WEBHOOK_ENDPOINTS; i++)
        made.push(await createEndpoint({ url: `https://hooks.example.com/${i}`, events: ['*'] }));
      const refused = expectError(
        await server().request('POST', '/webhook_endpoints', {
          body: { url: 'https://hooks.example.com/one-more', events: ['*'] },
        }),
        400,
        'bad_request',
        {
          field: 'body',
          constraint: 'max',
        },
      );
      expect(refused.error.message).toContain(String(MAX_WEBHOOK_ENDPOINTS));
      expect(
        expectBody(
          await server().request('GET', '/webhook_endpoints', { query: { limit: 100 } }),
          200,
          WebhookEndpointList,
        ).total,
      ).toBe(MAX_WEBHOOK_ENDPOINTS);
      // Another account has its own.
      await createEndpoint({ url: 'https://hooks.example.com/other', events: ['*'] }, server().keys.otherFull);
      expect((await server().request('DELETE', `/webhook_endpoints/${made[0]?.id}`)).status).toBe(204);
      await createEndpoint({ url: 'https://hooks.example.com/one-more', events: ['*'] });
    });

    it('needs a key (401) and write permission (403)', async () => {
      const body = { url: 'https://hooks.example.com/x', events: ['*'] };
      expectError(await server().request('POST', '/webhook_endpoints', { key: null, body }), 401, 'unauthorized');
      expectError(
        await server().request('POST', '/webhook_endpoints', { key: server().keys.revoked, body }),
        401,
        'unauthorized',
      );
      expectError(
        await server().request('POST', '/webhook_endpoints', { key: server().keys.readOnly, body }),
        403,
        'forbidden',
      );
      expectError(
        await server().request('POST', '/webhook_endpoints', { key: server().keys.webhook, body }),
        403,
        'forbidden',
      );
      // Permission comes before validation.
      expectError(
        await server().request('POST', '/webhook_endpoints', { key: server().keys.readOnly, body: {} }),
        403,
        'forbidden',
      );
    });
  });

  describe('GET, PATCH, DELETE /webhook_endpoints/:id', () => {
    it('retrieves, lists newest first, and keeps accounts apart', async () => {
      const first = await createEndpoint({ url: 'https://hooks.example.com/1', events: ['*'] });
      const second = await createEndpoint({ url: 'https://hooks.example.com/2', events: ['order.placed'] });
      const theirs = await createEndpoint(
        { url: 'https://hooks.example.com/3', events: ['*'] },
        server().keys.otherFull,
      );

      expect(
        expectBody(
          await server().request('GET', `/webhook_endpoints/${first.id}`, { key: server().keys.readOnly }),
          200,
          WebhookEndpoint,
        ),
      ).toEqual(first);
      const list = expectBody(
        await server().request('GET', '/webhook_endpoints', { key: server().keys.readOnly }),
        200,
        WebhookEndpointList,
      );
      expect(list).toMatchObject({ total: 2, limit: 20, offset: 0, has_more: false });
      expect(list.data.map((e) => e.id)).toEqual([second.id, first.id]);
      const paged = expectBody(
        await server().request('GET', '/webhook_endpoints', { query: { limit: 1, offset: 1 } }),
        200,
        WebhookEndpointList,
      );
      expect(paged).toMatchObject({ total: 2, has_more: false, data: [first] });

      for (const [method, body] of [['GET'], ['PATCH', { description: 'x' }], ['DELETE']] as const) {
        expectError(await server().request(method, `/webhook_endpoints/${theirs.id}`, { body }), 404, 'not_found');
        expectError(await server().request(method, '/webhook_endpoints/whe_nope', { body }), 404, 'not_found');
      }
      expectError(await server().request('GET', `/webhook_endpoints/${theirs.id}/deliveries`), 404, 'not_found');
      expectError(await server().request('GET', '/webhook_endpoints', { query: { limit: 101 } }), 400, 'bad_request', {
        field: 'limit',
        constraint: 'max',
      });
      expectError(
        await server().request('GET', '/webhook_endpoints', { key: server().keys.webhook }),
        403,
        'forbidden',
      );
    });

    it('updates url, events, description and status; an empty patch changes nothing', async () => {
      const created = await createEndpoint({ url: 'https://hooks.example.com/a', events: ['*'], description: 'first' });
      const patched = expectBody(
        await server().request('PATCH', `/webhook_endpoints/${created.id}`, {
          body: {
            url: 'https://hooks.example.com/b',
            events: ['message.received'],
            description: null,
            status: 'disabled',
          },
        }),
        200,
        WebhookEndpoint,
      );
      expect(patched).toMatchObject({
        id: created.id,
        url: 'https://hooks.example.com/b',
        events: ['message.received'],
        description: null,
        status: 'disabled',
      });
      expect(patched.updated_at >= created.updated_at).toBe(true);
      expect(patched.created_at).toBe(created.created_at);
      expect(
        expectBody(await server().request('GET', `/webhook_endpoints/${created.id}`), 200, WebhookEndpoint),
      ).toEqual(patched);

      const enabled = expectBody(
        await server().request('PATCH', `/webhook_endpoints/${created.id}`, { body: { status: 'enabled' } }),
        200,
        WebhookEndpoint,
      );
      expect(enabled.status).toBe('enabled');
      expect(
        expectBody(
          await server().request('PATCH', `/webhook_endpoints/${created.id}`, { body: {} }),
          200,
          WebhookEndpoint,
        ),
      ).toEqual(enabled);
    });

    it.each([
      [{ url: 'nope' }, 'url', 'format'],
      [{ events: ['*', 'contact.merged'] }, 'events.1', 'enum'],
      [{ status: 'paused' }, 'status', 'enum'],
      [{ secret: 'x' }, 'secret', 'unknown'],
    ])('rejects the patch %j: %s %s', async (body, field, constraint) => {
      const created = await createEndpoint({ url: 'https://hooks.example.com/v', events: ['*'] });
      expectError(await server().request('PATCH', `/webhook_endpoints/${created.id}`, { body }), 400, 'bad_request', {
        field,
        constraint,
      });
    });

    it('deletes with 204, then 404; read-only keys cannot change or delete', async () => {
      const created = await createEndpoint({ url: 'https://hooks.example.com/d', events: ['*'] });
      const readOnly = server().keys.readOnly;
      expectError(
        await server().request('PATCH', `/webhook_endpoints/${created.id}`, {
          key: readOnly,
          body: { status: 'disabled' },
        }),
        403,
        'forbidden',
      );
      expectError(
        await server().request('DELETE', `/webhook_endpoints/${created.id}`, { key: readOnly }),
        403,
        'forbidden',
      );
      expectError(
        await server().request('POST', `/webhook_endpoints/${created.id}/deliveries/whd_x/retry`, { key: readOnly }),
        403,
        'forbidden',
      );
      expectError(
        await server().request('DELETE', `/webhook_endpoints/${created.id}`, { key: server().keys.otherFull }),
        404,
        'not_found',
      );
      const res = await server().request('DELETE', `/webhook_endpoints/${created.id}`);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expectError(await server().request('GET', `/webhook_endpoints/${created.id}`), 404, 'not_found');
      expectError(await server().request('GET', `/webhook_endpoints/${created.id}/deliveries`), 404, 'not_found');
    });
  });

  describe('delivery', () => {
    const receiver = new Receiver();
    beforeAll(async () => {
      await receiver.start();
      await server().startWorker();
    });
    afterAll(async () => {
      await receiver.close();
    });

    const deliveries = async (endpointId: string, key?: string, query: Record<string, string> = {}) =>
      expectBody(
        await server().request('GET', `/webhook_endpoints/${endpointId}/deliveries`, {
          query,
          ...(key ? { key } : {}),
        }),
        200,
        WebhookDeliveryList,
      );
    /** The endpoint's only delivery, once `done` holds for it. */
    const settledDelivery = (
      endpointId: string,
      done: (d: WebhookDelivery) => boolean = (d) => d.status !== 'pending',
      key?: string,
    ) =>
      eventually(async () => {
        const list = await deliveries(endpointId, key);
        expect(list.total).toBe(1);
        const [delivery] = list.data;
        return delivery && done(delivery) ? delivery : undefined;
      });
    const events = async () =>
      expectBody(await server().request('GET', '/events', { query: { limit: 100 } }), 200, EventList).data;
    const newContact = async (key?: string) =>
      expectBody(
        await server().request('POST', '/contacts', {
          body: { name: 'Hook Test', phone: phone() },
          ...(key ? { key } : {}),
        }),
        201,
        Contact,
      );
    const placeOrder = async (contactId: string, key?: string) =>
      expectBody(
        await server().request('POST', '/orders', {
          body: { contact_id: contactId, currency: 'USD', items: [{ name: 'Mug', quantity: 2, unit_amount: 900 }] },
          ...(key ? { key } : {}),
        }),
        201,
        Order,
      );

    it('sends a signed ping now, to a disabled endpoint too, and answers its delivery; pings are not events of the account', async () => {
      const route = receiver.route();
      const endpoint = await createEndpoint({ url: route.url, events: ['order.placed'] });
      expect(
        (await server().request('PATCH', `/webhook_endpoints/${endpoint.id}`, { body: { status: 'disabled' } })).status,
      ).toBe(200);
      const eventsBefore = (await events()).length;
      const ping = expectBody(
        await server().request('POST', `/webhook_endpoints/${endpoint.id}/test`),
        200,
        WebhookDelivery,
      );
      expect(ping).toMatchObject({
        endpoint_id: endpoint.id,
        event_type: 'ping',
        status: 'succeeded',
        next_attempt_at: null,
      });
      expect(ping.attempts).toEqual([expect.objectContaining({ status_code: 200, error: null })]);
      const [request] = receiver.at(route.path);
      const body = JSON.parse(request?.body ?? '{}') as { id: string; type: string; data: unknown };
      expect(body).toMatchObject({ id: ping.event_id, type: 'ping', data: { endpoint_id: endpoint.id } });
      expect(() =>
        new Webhook(server().keys.webhook).verify(request?.body ?? '', verifierHeaders(request as ReceivedRequest)),
      ).not.toThrow();
      expect((await events()).length).toBe(eventsBefore);
      expect((await deliveries(endpoint.id)).data.map((d) => d.id)).toEqual([ping.id]);

      // A failed ping is retried as any delivery: here the receiver fails once, then answers.
      const flaky = receiver.route((n) => (n === 0 ? 500 : 200));
      const other = await createEndpoint({ url: flaky.url, events: ['order.placed'] });
      const failed = expectBody(
        await server().request('POST', `/webhook_endpoints/${other.id}/test`),
        200,
        WebhookDelivery,
      );
      expect(failed).toMatchObject({ status: 'pending', attempts: [expect.objectContaining({ status_code: 500 })] });
      expect(failed.next_attempt_at).not.toBeNull();
      expect((await settledDelivery(other.id)).status).toBe('succeeded');

      expectError(await server().request('POST', '/webhook_endpoints/whe_nope/test'), 404, 'not_found');
      expectError(
        await server().request('POST', `/webhook_endpoints/${endpoint.id}/test`, { key: server().keys.otherFull }),
        404,
        'not_found',
      );
      expectError(
        await server().request('POST', `/webhook_endpoints/${endpoint.id}/test`, { key: server().keys.readOnly }),
        403,
        'forbidden',
      );
    });

    it('replays the failed deliveries of a window at once, once, and none outside it', async () => {
      let up = false;
      const route = receiver.route(() => (up ? 200 : 503));
      const endpoint = await createEndpoint({ url: route.url, events: ['order.placed'] });
      const contact = await newContact();
      await placeOrder(contact.id);
      await placeOrder(contact.id);
      const outage = await eventually(async () => {
        const list = await deliveries(endpoint.id, undefined, { status: 'failed' });
        return list.total === 2 && list;
      });
      const until = new Date(Date.now() + 1).toISOString();
      // The next order comes after `until`: made on a clock stopped past it, not after a wait.
      vi.useFakeTimers({ toFake: ['Date'], now: Date.parse(until) + 1 });
      try {
        await placeOrder(contact.id);
      } finally {
        vi.useRealTimers();
      }
      await eventually(async () => (await deliveries(endpoint.id, undefined, { status: 'failed' })).total === 3);
      up = true;

      const since = new Date(Date.parse(outage.data.at(-1)?.created_at as string)).toISOString();
      const replay = (body: object, key?: string) =>
        server().request('POST', `/webhook_endpoints/${endpoint.id}/replay`, { body, ...(key ? { key } : {}) });
      const first = expectBody(await replay({ since, until }), 202, DeliveryReplay);
      expect(first).toEqual({ endpoint_id: endpoint.id, since, until, status: 'failed', replayed: 2 });
      expect(expectBody(await replay({ since, until }), 202, DeliveryReplay).replayed).toBe(0);
      await eventually(async () => (await deliveries(endpoint.id, undefined, { status: 'succeeded' })).total === 2);
      const left = await deliveries(endpoint.id, undefined, { status: 'failed' });
      expect(left.data.map((d) => d.created_at >= until)).toEqual([true]);

      expect(
        expectBody(await replay({ since: until, until: since, status: 'succeeded' }), 202, DeliveryReplay).replayed,
      ).toBe(0);
      expectError(await replay({ since, until, status: 'pending' }), 400, 'bad_request', {
        field: 'status',
        constraint: 'enum',
      });
      expectError(await replay({ until }), 400, 'bad_request', { field: 'since', constraint: 'required' });
      expectError(await replay({ since, until }, server().keys.otherFull), 404, 'not_found');
      expectError(await replay({ since, until }, server().keys.readOnly), 403, 'forbidden');
    });

    it('delivers every event type, signed for each active webhook key, with the event as the body', async () => {
      const extraKey = await accountsService.createKey(
        { database: server().database },
        {
          accountId: server().accountId,
          type: 'webhook',
        },
      );
      const route = receiver.route();
      const endpoint = await createEndpoint({ url: route.url, events: ['*'] });

      const contact = await newContact();
      const conversation = expectBody(
        await server().request('POST', '/conversations', { body: { contact_id: contact.id, platform: 'whatsapp' } }),
        201,
        Conversation,
      );
      await placeOrder(contact.id);
      expectBody(
        await server().request('PATCH', `/conversations/${conversation.id}`, { body: { status: 'resolved' } }),
        200,
        Conversation,
      );
      const inbound = expectBody(
        await server().request('POST', '/sandbox/inbound', {
          body: { platform: 'whatsapp', from: { phone: contact.phone }, content: 'Where is my order?' },
        }),
        201,
        Message,
      );
      expect(inbound.conversation_id).toBe(conversation.id);

      const received = await eventually(() => receiver.at(route.path).length >= 7 && receiver.at(route.path));
      const types = received.map((r) => (JSON.parse(r.body) as Event).type).sort();
      expect(types).toEqual([
        'contact.created',
        'conversation.created',
        'conversation.resolved',
        'conversation.updated',
        'conversation.updated',
        'message.received',
        'order.placed',
      ]);

      const recorded = await events();
      for (const request of received) {
        expect(request.method).toBe('POST');
        expect(request.headers['content-type']).toBe('application/json');
        expect(request.headers['user-agent']).toBe('Convo-Webhooks/1');
        const event = Event.parse(JSON.parse(request.body));
        expect(request.headers['webhook-id']).toBe(event.id);
        expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
        // The body is the event exactly as GET /events returns it.
        expect(JSON.parse(request.body)).toEqual(recorded.find((e) => e.id === event.id));
        // One signature per active webhook key; either key verifies.
        const signatures = (request.headers['webhook-signature'] ?? '').split(' ');
        expect(signatures).toHaveLength(2);
        for (const signature of signatures) expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
        for (const key of [server().keys.webhook, extraKey.key]) {
          expect(() => new Webhook(key).verify(request.body, verifierHeaders(request))).not.toThrow();
        }
        expect(() =>
          new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(request.body, verifierHeaders(request)),
        ).toThrow();
      }
      const byType = Object.fromEntries(
        received.map((r) => [(JSON.parse(r.body) as Event).type, JSON.parse(r.body) as Event]),
      );
      expect(byType['message.received']?.data).toEqual(inbound);
      expect(byType['conversation.created']?.sequence).toBe(1);

      const list = await eventually(async () => {
        const page = await deliveries(endpoint.id, server().keys.readOnly);
        return page.data.every((d) => d.status === 'succeeded') && page;
      });
      expect(list.total).toBe(7);
      for (const delivery of list.data) {
        expect(delivery).toMatchObject({ endpoint_id: endpoint.id, status: 'succeeded', next_attempt_at: null });
        expect(delivery.id).toMatch(/^whd_/);
        expect(delivery.attempts).toHaveLength(1);
        expect(delivery.attempts[0]).toMatchObject({ status_code: 200, error: null });
        expect(delivery.event_type).toBe(recorded.find((e) => e.id === delivery.event_id)?.type);
      }
      // Newest first.
      expect(list.data.map((d) => d.created_at)).toEqual([...list.data.map((d) => d.created_at)].sort().reverse());

      // A revoked key stops signing at once.
      await accountsService.revokeKey({ database: server().database }, extraKey.id);
      await placeOrder(contact.id);
      const [last] = await eventually(() => receiver.at(route.path).length >= 8 && receiver.at(route.path).slice(7));
      expect((last?.headers['webhook-signature'] ?? '').split(' ')).toHaveLength(1);
      expect(() =>
        new Webhook(server().keys.webhook).verify(last?.body ?? '', verifierHeaders(last as ReceivedRequest)),
      ).not.toThrow();
      expect(() =>
        new Webhook(extraKey.key).verify(last?.body ?? '', verifierHeaders(last as ReceivedRequest)),
      ).toThrow();
    });

    it('sends only the subscribed event types, and nothing to other accounts', async () => {
      const route = receiver.route();
      const endpoint = await createEndpoint({ url: route.url, events: ['order.placed'] });
      const theirs = receiver.route();
      await createEndpoint({ url: theirs.url, events: ['*'] }, server().keys.otherFull);

      const contact = await newContact();
      expectBody(
        await server().request('POST', '/conversations', { body: { contact_id: contact.id, platform: 'facebook' } }),
        201,
        Conversation,
      );
      const order = await placeOrder(contact.id);

      const delivery = await settledDelivery(endpoint.id);
      expect(delivery).toMatchObject({ event_type: 'order.placed', status: 'succeeded' });
      const [request] = receiver.at(route.path);
      expect(JSON.parse(request?.body ?? '{}')).toMatchObject({ type: 'order.placed', data: order });
      expect(receiver.at(route.path)).toHaveLength(1);
      expect(receiver.at(theirs.path)).toHaveLength(0);
    });

    it('retries a failed attempt with the same id and body until it succeeds', async () => {
      const route = receiver.route((n) => (n === 0 ? 500 : 204));
      const endpoint = await createEndpoint({ url: route.url, events: ['order.placed'] });
      await placeOrder((await newContact()).id);

      const delivery = await settledDelivery(endpoint.id);
      expect(delivery.status).toBe('succeeded');
      expect(delivery.next_attempt_at).toBeNull();
      expect(delivery.attempts).toHaveLength(2);
      expect(delivery.attempts[0]).toMatchObject({ status_code: 500, error: expect.stringContaining('500') });
      expect(delivery.attempts[1]).toMatchObject({ status_code: 204, error: null });
      expect(
        delivery.attempts[0]?.at && delivery.attempts[1]?.at && delivery.attempts[0].at < delivery.attempts[1].at,
      ).toBe(true);

      const [first, second] = receiver.at(route.path);
      expect(second?.headers['webhook-id']).toBe(first?.headers['webhook-id']);
      expect(second?.headers['webhook-id']).toBe(delivery.event_id);
      expect(second?.body).toBe(first?.body);
      expect(() =>
        new Webhook(server().keys.webhook).verify(second?.body ?? '', verifierHeaders(second as ReceivedRequest)),
      ).not.toThrow();

      expect((await deliveries(endpoint.id, undefined, { status: 'succeeded' })).total).toBe(1);
      expect((await deliveries(endpoint.id, undefined, { status: 'failed' })).total).toBe(0);
    });

    it('fails a delivery after the whole schedule: one attempt and one per retry, spaced as scheduled', async () => {
      const route = receiver.route(() => 503);
      const endpoint = await createEndpoint({ url: route.url, events: ['order.placed'] });
      await placeOrder((await newContact()).id);

      const schedule = server().settings.webhookRetryScheduleMs;
      const delivery = await settledDelivery(endpoint.id);
      expect(delivery).toMatchObject({ status: 'failed', next_attempt_at: null });
      expect(delivery.attempts).toHaveLength(1 + schedule.length);
      expect(receiver.at(route.path)).toHaveLength(1 + schedule.length);
      for (const [i, wait] of schedule.entries()) {
        const gap = Date.parse(delivery.attempts[i + 1]?.at ?? '') - Date.parse(delivery.attempts[i]?.at ?? '');
        expect(gap).toBeGreaterThanOrEqual(wait * 0.9 - 5);
      }
      expect(delivery.attempts.every((a) => a.status_code === 503 && a.error !== null)).toBe(true);
      expect((await deliveries(endpoint.id, undefined, { status: 'failed' })).data.map((d) => d.id)).toEqual([
        delivery.id,
      ]);
    });

    it('disables the endpoint on a 410; a disabled endpoint gets no new deliveries', async () => {
      const route = receiver.route(() => 410);
      const endpoint = await createEndpoint({ url: route.url, events: ['order.placed'] });
      const contact = await newContact();
      await placeOrder(contact.id);

      const delivery = await settledDelivery(endpoint.id);
      expect(delivery).toMatchObject({ status: 'failed', next_attempt_at: null });
      expect(delivery.attempts).toEqual([expect.objectContaining({ status_code: 410 })]);
      expect(
        expectBody(await server().request('GET', `/webhook_endpoints/${endpoint.id}`), 200, WebhookEndpoint).status,
      ).toBe('disabled');

      await placeOrder(contact.id);
      expect((await deliveries(endpoint.id)).total).toBe(1);
      expect(receiver.at(route.path)).toHaveLength(1);
    });

    it('does not follow redirects', async () => {
      const target = receiver.route();
      const route = receiver.route(() => ({ status: 302, headers: { location: target.url } }));
      const endpoint = await createEndpoint({ url: route.url, events: ['order.placed'] });
      await placeOrder((await newContact()).id);

      const delivery = await settledDelivery(endpoint.id, (d) => d.attempts.length >= 1);
      expect(delivery.attempts[0]).toMatchObject({ status_code: 302, error: 'redirect not followed (302)' });
      expect(receiver.at(target.path)).toHaveLength(0);
    });

    it('gives up on a receiver that does not answer in time, and reads only so much of an answer', async () => {
      const silent = receiver.route(() => 'hang');
      const silentEndpoint = await createEndpoint({ url: silent.url, events: ['order.placed'] });
      // Headers and 128 KiB of body, then the answer never ends: the first 64 KiB are enough.
      const endless = receiver.route(() => (res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('x'.repeat(128 * 1024));
      });
      const endlessEndpoint = await createEndpoint({ url: endless.url, events: ['order.placed'] });
      await placeOrder((await newContact()).id);

      const timedOut = await settledDelivery(silentEndpoint.id, (d) => d.attempts.length >= 1);
      expect(timedOut.attempts[0]).toMatchObject({ status_code: null, error: expect.stringMatching(/timeout/) });
      expect(timedOut.attempts[0]?.duration_ms).toBeGreaterThanOrEqual(server().settings.webhookTimeoutMs - 50);
      const read = await settledDelivery(endlessEndpoint.id);
      expect(read.status).toBe('succeeded');
      expect(read.attempts[0]?.duration_ms).toBeLessThan(server().settings.webhookTimeoutMs);
    });

    it('retries by hand: 202 with the delivery pending and due now, then sends the same event again', async () => {
      const route = receiver.route();
      const endpoint = await createEndpoint({ url: route.url, events: ['order.placed'] });
      await placeOrder((await newContact()).id);
      const delivered = await settledDelivery(endpoint.id);
      expect(delivered.status).toBe('succeeded');

      const before = Date.now();
      const res = await server().request('POST', `/webhook_endpoints/${endpoint.id}/deliveries/${delivered.id}/retry`);
      const retried = expectBody(res, 202, WebhookDelivery);
      expect(retried).toMatchObject({
        id: delivered.id,
        event_id: delivered.event_id,
        status: 'pending',
        attempts: delivered.attempts,
      });
      expect(Date.parse(retried.next_attempt_at ?? '')).toBeGreaterThanOrEqual(before - 5);
      expect(Date.parse(retried.next_attempt_at ?? '')).toBeLessThanOrEqual(Date.now() + 5);

      const again = await settledDelivery(endpoint.id, (d) => d.status === 'succeeded' && d.attempts.length === 2);
      expect(again.next_attempt_at).toBeNull();
      const [first, second] = receiver.at(route.path);
      expect(second?.headers['webhook-id']).toBe(first?.headers['webhook-id']);
      expect(second?.body).toBe(first?.body);
    });

    it("404s a retry of an unknown delivery, another endpoint's delivery or another account's", async () => {
      const route = receiver.route();
      const endpoint = await createEndpoint({ url: route.url, events: ['order.placed'] });
      const other = await createEndpoint({ url: receiver.route().url, events: ['conversation.resolved'] });
      await placeOrder((await newContact()).id);
      const delivery = await settledDelivery(endpoint.id);

      expectError(
        await server().request('POST', `/webhook_endpoints/${endpoint.id}/deliveries/whd_nope/retry`),
        404,
        'not_found',
      );
      expectError(
        await server().request('POST', `/webhook_endpoints/${other.id}/deliveries/${delivery.id}/retry`),
        404,
        'not_found',
      );
      expectError(
        await server().request('POST', `/webhook_endpoints/whe_nope/deliveries/${delivery.id}/retry`),
        404,
        'not_found',
      );
      expectError(
        await server().request('POST', `/webhook_endpoints/${endpoint.id}/deliveries/${delivery.id}/retry`, {
          key: server().keys.otherFull,
        }),
        404,
        'not_found',
      );
      expectError(
        await server().request('GET', `/webhook_endpoints/${endpoint.id}/deliveries`, { key: server().keys.otherFull }),
        404,
        'not_found',
      );
      expectError(
        await server().request('GET', `/webhook_endpoints/${endpoint.id}/deliveries`, { query: { status: 'lost' } }),
        400,
        'bad_request',
        {
          field: 'status',
          constraint: 'enum',
        },
      );
    });

    it('fails pending deliveries of a disabled endpoint without sending, yet a manual retry still sends', async () => {
      let healthy = false;
      const route = receiver.route(() => (healthy ? 200 : 500));
      const endpoint = await createEndpoint({ url: route.url, events: ['order.placed'] });
      const contact = await newContact();
      await placeOrder(contact.id);
      await settledDelivery(endpoint.id, (d) => d.attempts.length >= 1);
      expectBody(
        await server().request('PATCH', `/webhook_endpoints/${endpoint.id}`, { body: { status: 'disabled' } }),
        200,
        WebhookEndpoint,
      );

      const failed = await settledDelivery(endpoint.id);
      expect(failed).toMatchObject({ status: 'failed', next_attempt_at: null });
      expect(failed.attempts.every((a) => a.status_code === 500)).toBe(true);
      // The attempt due after disabling was not sent.
      expect(receiver.at(route.path)).toHaveLength(failed.attempts.length);
      expect(failed.attempts.length).toBeLessThan(1 + server().settings.webhookRetryScheduleMs.length);

      // No new deliveries while disabled.
      await placeOrder(contact.id);
      expect((await deliveries(endpoint.id)).total).toBe(1);

      healthy = true;
      const retried = expectBody(
        await server().request('POST', `/webhook_endpoints/${endpoint.id}/deliveries/${failed.id}/retry`),
        202,
        WebhookDelivery,
      );
      expect(retried.status).toBe('pending');
      const sent = await settledDelivery(endpoint.id);
      expect(sent).toMatchObject({ status: 'succeeded', next_attempt_at: null });
      expect(sent.attempts.map((a) => a.status_code)).toEqual([...failed.attempts.map(() => 500), 200]);
      expect(receiver.at(route.path)).toHaveLength(failed.attempts.length + 1);
      expect(
        expectBody(await server().request('GET', `/webhook_endpoints/${endpoint.id}`), 200, WebhookEndpoint).status,
      ).toBe('disabled');

      // Re-enabled, it receives new events again.
      expectBody(
        await server().request('PATCH', `/webhook_endpoints/${endpoint.id}`, { body: { status: 'enabled' } }),
        200,
        WebhookEndpoint,
      );
      await placeOrder(contact.id);
      await eventually(() => receiver.at(route.path).length === failed.attempts.length + 2);
    });

    it("gives an account without a webhook key its signing secret once, at an endpoint's creation", async () => {
      const account = await accountsService.createAccount(
        { database: server().database },
        {
          name: 'No webhook key yet',
          plan: 'enterprise',
          rateLimitRpm: 1_000_000,
        },
      );
      const { key } = await accountsService.createKey(
        { database: server().database },
        {
          accountId: account.id,
          type: 'full_access',
        },
      );
      const route = receiver.route();
      const created = expectBody(
        await server().request('POST', '/webhook_endpoints', {
          key,
          body: { url: route.url, events: ['order.placed'] },
        }),
        201,
        CreatedWebhookEndpoint,
      );
      expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32,}={0,2}$/);
      const keys = (await accountsService.listKeys({ database: server().database, accountId: account.id })).filter(
        (k) => k.type === 'webhook',
      );
      expect(keys).toEqual([
        expect.objectContaining({ name: `Signing key, created with ${created.id}`, revoked_at: null }),
      ]);
      // Shown once: not on reads, and a second endpoint makes no second key.
      const read = (await server().request('GET', `/webhook_endpoints/${created.id}`, { key })).body;
      expect(read).not.toHaveProperty('secret');
      const second = await server().request('POST', '/webhook_endpoints', {
        key,
        body: { url: route.url, events: ['contact.deleted'] },
      });
      expect(second.status).toBe(201);
      expect(second.body).not.toHaveProperty('secret');
      expect(
        (await accountsService.listKeys({ database: server().database, accountId: account.id })).filter(
          (k) => k.type === 'webhook',
        ),
      ).toHaveLength(1);

      await placeOrder((await newContact(key)).id, key);
      const delivered = await settledDelivery(created.id, (d) => d.status !== 'pending', key);
      expect(delivered.status).toBe('succeeded');
      const [signed] = receiver.at(route.path);
      expect(() =>
        new Webhook(created.secret as string).verify(signed?.body ?? '', verifierHeaders(signed as ReceivedRequest)),
      ).not.toThrow();

      // With every webhook key revoked, attempts fail with no_signing_key until a key exists again.
      await accountsService.revokeKey({ database: server().database }, keys[0]?.id as string);
      await placeOrder((await newContact(key)).id, key);
      const deliveryWhere = (done: (d: WebhookDelivery) => boolean) =>
        eventually(async () => (await deliveries(created.id, key)).data.find(done));
      const unsigned = await deliveryWhere((d) => d.id !== delivered.id && d.attempts.length >= 1);
      expect(unsigned.attempts[0]).toMatchObject({ status_code: null, error: 'no_signing_key' });
      expect(receiver.at(route.path)).toHaveLength(1);

      const replacement = await accountsService.createKey(
        { database: server().database },
        {
          accountId: account.id,
          type: 'webhook',
        },
      );
      const retried = await deliveryWhere((d) => d.id === unsigned.id && d.status !== 'pending');
      expect(retried.status).toBe('succeeded');
      const request = receiver.at(route.path)[1];
      expect(() =>
        new Webhook(replacement.key).verify(request?.body ?? '', verifierHeaders(request as ReceivedRequest)),
      ).not.toThrow();
      expect(() =>
        new Webhook(created.secret as string).verify(request?.body ?? '', verifierHeaders(request as ReceivedRequest)),
      ).toThrow();
    });

    it("removes a deleted endpoint's deliveries; its queued attempts send nothing", async () => {
      const route = receiver.route(() => 500);
      const endpoint = await createEndpoint({ url: route.url, events: ['order.placed'] });
      await placeOrder((await newContact()).id);
      const delivery = await settledDelivery(endpoint.id, (d) => d.attempts.length >= 1);
      // Park the retry while no worker holds it, so that no attempt is under way at the deletion.
      const { db } = server().database;
      const ofDelivery = `%${delivery.id}%`;
      const retry = () => db.selectFrom('jobs').select(['id', 'locked_by']).where('payload', 'like', ofDelivery);
      await vi.waitFor(async () => {
        const parked = await db
          .updateTable('jobs')
          .set({ run_at: '9999-01-01T00:00:00.000Z' })
          .where('payload', 'like', ofDelivery)
          .where('locked_by', 'is', null)
          .executeTakeFirst();
        expect(parked.numUpdatedRows).toBe(1n);
      });
      expect((await server().request('DELETE', `/webhook_endpoints/${endpoint.id}`)).status).toBe(204);
      const sent = receiver.at(route.path).length;
      // The queued attempt comes due, finds no delivery, and leaves the queue without sending.
      await db
        .updateTable('jobs')
        .set({ run_at: new Date(0).toISOString() })
        .where('payload', 'like', ofDelivery)
        .execute();
      await vi.waitFor(async () => expect(await retry().execute()).toEqual([]), { timeout: 10_000 });
      expect(receiver.at(route.path)).toHaveLength(sent);
      expect(
        await server()
          .database.db.selectFrom('webhook_deliveries')
          .select('id')
          .where('endpoint_id', '=', endpoint.id)
          .execute(),
      ).toEqual([]);
    });
  });
});

describeEachDialect('webhook deliveries of one endpoint claimed together', (server) => {
  const receiver = new Receiver();
  beforeAll(() => receiver.start());
  afterAll(() => receiver.close());

  it('sends them at once and records each attempt as its own, whatever the others became', async () => {
    const { db } = server().database;
    // By the order in which the attempts arrive: a success, a failure to retry, a success whose
    // delivery a manual retry changed meanwhile, and a 410 that disables the endpoint.
    const replies: Reply[] = [
      200,
      500,
      (res) => {
        const eventId = receiver.at(route.path)[2]?.headers['webhook-id'] ?? '';
        void db
          .updateTable('webhook_deliveries')
          .set({ next_attempt_at: new Date().toISOString() })
          .where('event_id', '=', eventId)
          .execute()
          .then(() => res.writeHead(200).end());
      },
      410,
    ];
    const route = receiver.route((n) => replies[n] ?? 200);
    const endpoint = expectBody(
      await server().request('POST', '/webhook_endpoints', { body: { url: route.url, events: ['order.placed'] } }),
      201,
      WebhookEndpoint,
    );
    const contact = expectBody(
      await server().request('POST', '/contacts', { body: { name: 'Batch', phone: phone() } }),
      201,
      Contact,
    );
    for (let i = 0; i < 4; i++) {
      const body = { contact_id: contact.id, currency: 'USD', items: [{ name: 'Mug', quantity: 1, unit_amount: 900 }] };
      expectBody(await server().request('POST', '/orders', { body }), 201, Order);
    }
    const queued = await db
      .selectFrom('jobs')
      .select('payload')
      .where('lane', '=', endpointLane(endpoint.id))
      .orderBy('run_at')
      .orderBy('id')
      .execute();
    const first = (JSON.parse((queued[0] as { payload: string }).payload) as { deliveryId: string }).deliveryId;
    // A manual retry of the first delivery queued beside its job: one of the two makes the attempt.
    await enqueue(db, {
      kind: 'deliver_webhook',
      accountId: server().accountId,
      payload: { deliveryId: first, manual: true },
      lane: endpointLane(endpoint.id),
    });

    const worker = new Worker({
      database: server().database,
      handlers: jobHandlers({ database: server().database, settings: server().settings }),
    });
    expect(await worker.runDue()).toBe(5);

    const requests = receiver.at(route.path);
    expect(requests).toHaveLength(4);
    const list = expectBody(
      await server().request('GET', `/webhook_endpoints/${endpoint.id}/deliveries`, { query: { limit: 10 } }),
      200,
      WebhookDeliveryList,
    );
    const byEvent = new Map(list.data.map((delivery) => [delivery.event_id, delivery]));
    const outcome = (n: number) => byEvent.get(requests[n]?.headers['webhook-id'] ?? '') as WebhookDelivery;
    for (const n of [0, 1, 2, 3]) expect(outcome(n).attempts).toHaveLength(1);
    expect(outcome(0)).toMatchObject({ status: 'succeeded', next_attempt_at: null });
    expect(outcome(1).status).toBe('pending');
    expect(Date.parse(outcome(1).next_attempt_at ?? '')).toBeGreaterThan(Date.parse(outcome(1).attempts[0]?.at ?? ''));
    expect(outcome(2)).toMatchObject({ status: 'succeeded', next_attempt_at: null });
    expect(outcome(3)).toMatchObject({ status: 'failed', next_attempt_at: null });
    expect(
      expectBody(await server().request('GET', `/webhook_endpoints/${endpoint.id}`), 200, WebhookEndpoint).status,
    ).toBe('disabled');

    // Left queued: the failed attempt's next one, and the job that found the first delivery's attempt taken.
    const left = await db.selectFrom('jobs').select('payload').where('lane', '=', endpointLane(endpoint.id)).execute();
    expect(left.map((job) => (JSON.parse(job.payload) as { deliveryId: string }).deliveryId).sort()).toEqual(
      [first, outcome(1).id].sort(),
    );
  });
});

describeEachDialect(
  'webhook URL rules where private webhooks are not allowed',
  (server) => {
    it.each([
      ['http://hooks.example.com/x', /https/],
      ['https://127.0.0.1/x', /address/],
      ['https://127.1.2.3:8443/x', /address/],
      ['https://10.0.0.8/x', /address/],
      ['https://172.16.5.4/x', /address/],
      ['https://192.168.1.10/x', /address/],
      ['https://169.254.169.254/latest/meta-data', /address/],
      ['https://0.0.0.0/x', /address/],
      ['https://224.0.0.1/x', /address/],
      ['https://100.64.0.1/x', /address/],
      ['https://[::1]/x', /address/],
      ['https://[fd00::1]/x', /address/],
      ['https://[::ffff:10.0.0.1]/x', /address/],
      ['https://[::7f00:1]/x', /address/],
      ['https://localhost/x', /address/],
    ])('rejects %s: 400 url format', async (url, message) => {
      const body = expectError(
        await server().request('POST', '/webhook_endpoints', { body: { url, events: ['*'] } }),
        400,
        'bad_request',
        {
          field: 'url',
          constraint: 'format',
        },
      );
      expect(body.error.message).toMatch(message);
    });

    it('accepts public https URLs, and checks a changed URL the same way', async () => {
      const endpoint = expectBody(
        await server().request('POST', '/webhook_endpoints', {
          body: { url: 'https://93.184.215.14/hooks', events: ['*'] },
        }),
        201,
        WebhookEndpoint,
      );
      expectError(
        await server().request('PATCH', `/webhook_endpoints/${endpoint.id}`, {
          body: { url: 'https://192.168.0.1/hooks' },
        }),
        400,
        'bad_request',
        {
          field: 'url',
          constraint: 'format',
        },
      );
      expectError(
        await server().request('PATCH', `/webhook_endpoints/${endpoint.id}`, {
          body: { url: 'http://93.184.215.14/hooks' },
        }),
        400,
        'bad_request',
        {
          field: 'url',
          constraint: 'format',
        },
      );
      // Validation before existence.
      expectError(
        await server().request('PATCH', '/webhook_endpoints/whe_nope', { body: { url: 'https://10.0.0.1/' } }),
        400,
        'bad_request',
        {
          field: 'url',
          constraint: 'format',
        },
      );
      expect((await server().request('DELETE', `/webhook_endpoints/${endpoint.id}`)).status).toBe(204);
      const ipv6 = expectBody(
        await server().request('POST', '/webhook_endpoints', {
          body: { url: 'https://[2606:4700:4700::1111]/hooks', events: ['*'] },
        }),
        201,
        WebhookEndpoint,
      );
      expect(ipv6.url).toBe('https://[2606:4700:4700::1111]/hooks');
      expect((await server().request('DELETE', `/webhook_endpoints/${ipv6.id}`)).status).toBe(204);
    });

    describe('at delivery time', () => {
      const receiver = new Receiver();
      beforeAll(async () => {
        await receiver.start();
        await server().startWorker();
      });
      afterAll(async () => {
        await receiver.close();
      });

      it('refuses plain http and hosts that are or resolve to private addresses, even when stored', async () => {
        // Stored directly: as if saved under other settings, or a DNS answer that changed since.
        const scope = new TenantScope(server().database.db, server().accountId, server().database.capabilities);
        const urls = [
          `http://127.0.0.1:${receiver.port}/plain`,
          `https://127.0.0.1:${receiver.port}/literal`,
          `https://localhost:${receiver.port}/resolved`,
        ];
        const at = new Date().toISOString();
        const ids = urls.map((_, i) => `whe_private${i}`);
        for (const [i, url] of urls.entries()) {
          await webhookEndpointsRepository.insert(scope, {
            id: ids[i] as string,
            url,
            events: '["*"]',
            description: null,
            status: 'enabled',
            created_at: at,
            updated_at: at,
          });
        }
        const contact = expectBody(
          await server().request('POST', '/contacts', { body: { phone: phone() } }),
          201,
          Contact,
        );
        expectBody(
          await server().request('POST', '/orders', {
            body: { contact_id: contact.id, currency: 'USD', items: [{ name: 'Mug', quantity: 1, unit_amount: 900 }] },
          }),
          201,
          Order,
        );

        const attempts = await eventually(async () => {
          const firsts = [];
          for (const id of ids) {
            const list = expectBody(
              await server().request('GET', `/webhook_endpoints/${id}/deliveries`),
              200,
              WebhookDeliveryList,
            );
            const first = list.data[0]?.attempts[0];
            if (!first) return undefined;
            firsts.push(first);
          }
          return firsts;
        });
        expect(attempts[0]).toMatchObject({ status_code: null, error: expect.stringMatching(/http/) });
        expect(attempts[1]).toMatchObject({ status_code: null, error: expect.stringMatching(/non-public address/) });
        expect(attempts[2]).toMatchObject({ status_code: null, error: expect.stringMatching(/non-public address/) });
        expect(receiver.requests).toHaveLength(0);
        for (const id of ids) expect((await server().request('DELETE', `/webhook_endpoints/${id}`)).status).toBe(204);
      });
    });
  },
  testSettings({ allowPrivateWebhooks: false }),
);
