import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Channel,
  ChannelList,
  Contact,
  ContactList,
  Conversation,
  ConversationList,
  EventList,
  Message,
  MessageList,
  Order,
  OrderList,
  TagList,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
  Workflow,
  WorkflowList,
  WorkflowRun,
  STORY_TEMPLATES,
  WorkflowRunList,
  endpoints,
} from '@convo/core';
import {
  BadRequestError,
  ConnectionError,
  Convo,
  type ConvoError,
  ForbiddenError,
  NotFoundError,
  SDK_METHODS,
  UnauthorizedError,
} from '@convo/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestServer, startServer } from './server.js';

describe('the SDK against a real server', () => {
  let server: TestServer;
  let convo: Convo;
  const called = new Set<string>();

  beforeAll(async () => {
    server = await startServer();
    convo = new Convo({ apiKey: server.keys.full, baseUrl: server.baseUrl, maxRetries: 0 });
  });
  afterAll(async () => {
    // Every operation of the table was exercised through the SDK.
    expect([...called].sort()).toEqual(Object.keys(endpoints).sort());
    await server.close();
  });

  it('covers contacts, tags, conversations, messages and orders end to end', async () => {
    const ana = Contact.parse(
      await convo.contacts.create({ name: 'Ana Souza', phone: '+5511987654321', tags: ['vip'] }),
    );
    called.add('contacts.create');
    expect(Contact.parse(await convo.contacts.retrieve(ana.id))).toEqual(ana);
    called.add('contacts.retrieve');
    const updated = Contact.parse(await convo.contacts.update(ana.id, { email: 'ana@example.com' }));
    expect(updated.email).toBe('ana@example.com');
    called.add('contacts.update');
    expect(Contact.parse(await convo.contacts.tags.add(ana.id, 'café vip')).tags).toEqual(['vip', 'café vip']);
    called.add('contacts.tags.add');
    expect(Contact.parse(await convo.contacts.tags.remove(ana.id, 'café vip')).tags).toEqual(['vip']);
    called.add('contacts.tags.remove');
    expect(ContactList.parse(await convo.contacts.list({ tag: 'vip' })).data.map((c) => c.id)).toEqual([ana.id]);
    called.add('contacts.list');
    expect(TagList.parse(await convo.tags.list()).data).toEqual([{ name: 'vip', contact_count: 1 }]);
    called.add('tags.list');
    await convo.contacts.tags.add(ana.id, 'tmp');
    expect(await convo.tags.update('tmp', { name: 'temporary' })).toEqual({ name: 'temporary', contact_count: 1 });
    called.add('tags.update');
    expect(await convo.tags.del('temporary')).toBeUndefined();
    called.add('tags.delete');
    expect(Contact.parse(await convo.contacts.retrieve(ana.id)).tags).toEqual(['vip']);

    const conversation = Conversation.parse(
      await convo.conversations.create({ contact_id: ana.id, platform: 'whatsapp' }),
    );
    called.add('conversations.create');
    const message = Message.parse(await convo.messages.send({ conversation_id: conversation.id, content: 'Olá Ana!' }));
    called.add('messages.send');
    expect(Message.parse(await convo.messages.retrieve(message.id))).toEqual(message);
    called.add('messages.retrieve');
    expect(Conversation.parse(await convo.conversations.retrieve(conversation.id))).toMatchObject({
      message_count: 1,
      last_message: { content: 'Olá Ana!' },
    });
    called.add('conversations.retrieve');
    expect(MessageList.parse(await convo.conversations.listMessages(conversation.id)).data).toEqual([message]);
    called.add('conversations.listMessages');
    expect(Conversation.parse(await convo.conversations.update(conversation.id, { status: 'resolved' })).status).toBe(
      'resolved',
    );
    called.add('conversations.update');
    expect(ConversationList.parse(await convo.conversations.list({ status: 'resolved', search: '5511' })).total).toBe(
      1,
    );
    called.add('conversations.list');

    const order = Order.parse(
      await convo.orders.create({
        contact_id: ana.id,
        currency: 'BRL',
        items: [{ name: 'Jacket', quantity: 2, unit_amount: 100 }],
      }),
    );
    expect(order).toMatchObject({ number: '1001', total_amount: 200, status: 'pending' });
    called.add('orders.create');
    expect(Order.parse(await convo.orders.retrieve(order.id))).toEqual(order);
    called.add('orders.retrieve');
    expect(OrderList.parse(await convo.orders.list({ contact_id: ana.id })).data).toEqual([order]);
    called.add('orders.list');
    const paid = Order.parse(await convo.orders.update(order.id, { status: 'paid' }));
    expect(paid).toMatchObject({ id: order.id, status: 'paid' });
    called.add('orders.update');

    const workflow = Workflow.parse(
      await convo.workflows.create({ name: 'Welcome', steps: [{ type: 'add_tag', tag: 'welcomed' }] }),
    );
    called.add('workflows.create');
    expect(Workflow.parse(await convo.workflows.retrieve(workflow.id))).toEqual(workflow);
    called.add('workflows.retrieve');
    expect(WorkflowList.parse(await convo.workflows.list()).data.map((w) => w.id)).toEqual([workflow.id]);
    called.add('workflows.list');
    const run = WorkflowRun.parse(
      await convo.workflows.trigger(workflow.id, { contact_id: ana.id, data: { source: 'sdk' } }),
    );
    expect(run).toMatchObject({
      status: 'queued',
      workflow_id: workflow.id,
      contact_id: ana.id,
      data: { source: 'sdk' },
    });
    called.add('workflows.trigger');
    expect(WorkflowRunList.parse(await convo.workflows.runs(workflow.id)).data.map((r) => r.id)).toEqual([run.id]);
    called.add('workflows.listRuns');
    expect(WorkflowRun.parse(await convo.workflows.retrieveRun(workflow.id, run.id)).id).toBe(run.id);
    called.add('workflows.retrieveRun');
    const later = Workflow.parse(
      await convo.workflows.create({
        name: 'Later',
        steps: [
          {
            type: 'if',
            conditions: [{ field: 'contact.tags', op: 'exists' }],
            then: [{ type: 'wait', seconds: 3600 }],
            else: [{ type: 'http_request', url: 'https://example.com/hook' }],
          },
        ],
      }),
    );
    const waiting = WorkflowRun.parse(await convo.workflows.trigger(later.id, { contact_id: ana.id }));
    expect(waiting.steps.map((step) => [step.path, step.type])).toEqual([
      ['0', 'if'],
      ['0.then.0', 'wait'],
      ['0.else.0', 'http_request'],
    ]);
    expect(WorkflowRun.parse(await convo.workflows.cancelRun(later.id, waiting.id)).status).toBe('cancelled');
    called.add('workflows.cancelRun');
    expect(Workflow.parse(await convo.workflows.update(later.id, { enabled: false })).enabled).toBe(false);
    called.add('workflows.update');
    expect(await convo.workflows.del(later.id)).toBeUndefined();
    called.add('workflows.delete');

    const before = (await convo.events.list({ limit: 1 })).data[0]?.id as string;
    const inbound = Message.parse(
      await convo.sandbox.inbound({ platform: 'instagram', from: { phone: '+5511987654321' }, content: 'Oi!' }),
    );
    expect(inbound).toMatchObject({ direction: 'inbound', content: 'Oi!' });
    called.add('sandbox.inbound');
    const events = EventList.parse(await convo.events.list({ type: 'message.received' }));
    expect(events.data[0]?.data).toEqual(inbound);
    called.add('events.list');
    // The stream catches up from the event before the message, then would wait for new ones: its first is the message's.
    for await (const event of convo.events.stream({ type: 'message.received', starting_after: before })) {
      expect(event).toEqual(events.data[0]);
      break;
    }
    called.add('events.stream');

    const endpoint = WebhookEndpoint.parse(
      await convo.webhookEndpoints.create({ url: 'https://example.com/hooks', events: ['order.placed'] }),
    );
    called.add('webhookEndpoints.create');
    expect(WebhookEndpoint.parse(await convo.webhookEndpoints.retrieve(endpoint.id))).toEqual(endpoint);
    called.add('webhookEndpoints.retrieve');
    expect(
      WebhookEndpoint.parse(await convo.webhookEndpoints.update(endpoint.id, { description: 'orders' })).description,
    ).toBe('orders');
    called.add('webhookEndpoints.update');
    expect(WebhookEndpointList.parse(await convo.webhookEndpoints.list()).total).toBe(1);
    called.add('webhookEndpoints.list');
    await convo.orders.create({
      contact_id: ana.id,
      currency: 'BRL',
      items: [{ name: 'Cap', quantity: 1, unit_amount: 50 }],
    });
    const deliveries = WebhookDeliveryList.parse(await convo.webhookEndpoints.deliveries(endpoint.id));
    expect(deliveries.data[0]).toMatchObject({ event_type: 'order.placed', endpoint_id: endpoint.id });
    called.add('webhookEndpoints.listDeliveries');
    const retried = WebhookDelivery.parse(
      await convo.webhookEndpoints.retryDelivery(endpoint.id, deliveries.data[0]?.id as string),
    );
    expect(retried.status).toBe('pending');
    called.add('webhookEndpoints.retryDelivery');
    const ping = WebhookDelivery.parse(await convo.webhookEndpoints.test(endpoint.id));
    expect(ping).toMatchObject({ event_type: 'ping', endpoint_id: endpoint.id });
    expect(ping.attempts).toHaveLength(1);
    called.add('webhookEndpoints.test');
    const replay = await convo.webhookEndpoints.replay(endpoint.id, {
      since: '2026-01-01T00:00:00Z',
      until: '2099-01-01T00:00:00Z',
    });
    expect(replay).toMatchObject({ endpoint_id: endpoint.id, status: 'failed' });
    called.add('webhookEndpoints.replay');
    await expect(convo.webhookEndpoints.del(endpoint.id)).resolves.toBeUndefined();
    called.add('webhookEndpoints.delete');

    const channel = Channel.parse(
      await convo.channels.create({
        platform: 'whatsapp',
        external_id: '106540352242922',
        access_token: 'sdk-token',
        app_secret: 'sdk-secret',
        business_account_id: '102290129340398',
      }),
    );
    expect(channel).toMatchObject({ platform: 'whatsapp', status: 'active', last_error: null });
    called.add('channels.create');
    server.graph.setTemplates('102290129340398', STORY_TEMPLATES, { accessToken: 'sdk-token' });
    expect(await convo.channels.listTemplates(channel.id, { status: 'APPROVED' }).toArray()).toEqual(STORY_TEMPLATES);
    called.add('channels.listTemplates');
    expect(Channel.parse(await convo.channels.retrieve(channel.id))).toEqual(channel);
    called.add('channels.retrieve');
    expect(Channel.parse(await convo.channels.update(channel.id, { status: 'disabled' })).status).toBe('disabled');
    called.add('channels.update');
    expect(ChannelList.parse(await convo.channels.list({ platform: 'whatsapp' })).data.map((c) => c.id)).toEqual([
      channel.id,
    ]);
    called.add('channels.list');
    await expect(convo.channels.del(channel.id)).resolves.toBeUndefined();
    called.add('channels.delete');

    // A file: uploaded from a Blob, read back as a stream, byte for byte.
    const bytes = new Uint8Array(700_000).map((_, i) => (i * 7) % 256);
    const file = await convo.files.create({
      file: new Blob([bytes], { type: 'application/pdf' }),
      filename: 'recibo.pdf',
    });
    expect(file).toMatchObject({ filename: 'recibo.pdf', mime_type: 'application/pdf', size: bytes.length });
    called.add('files.create');
    expect(await convo.files.retrieve(file.id)).toEqual(file);
    called.add('files.retrieve');
    const read = new Uint8Array(await new Response(await convo.files.content(file.id)).arrayBuffer());
    expect(Buffer.from(read).equals(Buffer.from(bytes))).toBe(true);
    called.add('files.content');
    // The same bytes from a path, a Buffer and a Node stream: one file each, the type from the name.
    const folder = mkdtempSync(join(tmpdir(), 'convo-sdk-files-'));
    const path = join(folder, 'recibo 2.pdf');
    writeFileSync(path, bytes);
    const fromPath = await convo.files.create({ file: path });
    const fromBuffer = await convo.files.create({ file: Buffer.from(bytes), filename: 'recibo.pdf' });
    const fromStream = await convo.files.create({ file: createReadStream(path), filename: 'recibo.pdf' });
    rmSync(folder, { recursive: true, force: true });
    expect(fromPath).toMatchObject({ filename: 'recibo 2.pdf', mime_type: 'application/pdf', sha256: file.sha256 });
    for (const other of [fromBuffer, fromStream])
      expect(other).toMatchObject({ filename: 'recibo.pdf', mime_type: 'application/pdf', sha256: file.sha256 });

    await expect(convo.contacts.del(ana.id)).resolves.toBeUndefined();
    called.add('contacts.delete');
    expect((await convo.orders.retrieve(order.id)).contact_id).toBeNull();
    expect(Object.keys(SDK_METHODS).sort()).toEqual([...called].sort());
  });

  it('pages across the whole list with for await and toArray', async () => {
    const created: string[] = [];
    for (let i = 0; i < 7; i++)
      created.push((await convo.contacts.create({ phone: `+1415555${String(1000 + i)}`, tags: ['paged'] })).id);
    const seen: string[] = [];
    for await (const contact of convo.contacts.list({ tag: 'paged', limit: 2 })) seen.push(contact.id);
    expect(seen).toEqual([...created].reverse());
    expect((await convo.contacts.list({ tag: 'paged', limit: 3 }).toArray({ limit: 5 })).length).toBe(5);
  });

  it('raises each error class with the API code, details and request id', async () => {
    const bad = await convo.contacts.create({ phone: 'nope' }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(bad).toMatchObject({ status: 400, code: 'bad_request', details: { field: 'phone', constraint: 'format' } });
    expect((bad as ConvoError).requestId).toMatch(/^req_/);

    await expect(convo.contacts.retrieve('ct_missing')).rejects.toBeInstanceOf(NotFoundError);
    await expect(new Convo({ apiKey: 'convo_sk_wrong', baseUrl: server.baseUrl }).tags.list()).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
    await expect(
      new Convo({ apiKey: server.keys.readOnly, baseUrl: server.baseUrl }).contacts.create({ phone: '+14155550000' }),
    ).rejects.toBeInstanceOf(ForbiddenError);
    await expect(
      new Convo({ apiKey: server.keys.webhook, baseUrl: server.baseUrl }).tags.list(),
    ).rejects.toBeInstanceOf(ForbiddenError);
    await expect(
      new Convo({ apiKey: 'k', baseUrl: 'http://127.0.0.1:1/v1', maxRetries: 0 }).tags.list(),
    ).rejects.toBeInstanceOf(ConnectionError);
  });
});
