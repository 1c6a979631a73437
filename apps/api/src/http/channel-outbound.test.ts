import { randomBytes } from 'node:crypto';
import { Channel, Contact, type Conversation, EventList, Message, MessageList } from '@convo/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  INVALID_TOKEN_CODES,
  RETRYABLE_CODES,
  classifyGraphError,
  requestBody,
  resultOf,
  sendToPlatform,
} from '../channels/graph-api.js';
import { contactIdentitiesRepository } from '../repositories/channels.js';
import { TenantScope } from '../repositories/tenant.js';
import { conversationsService } from '../services/conversations.js';
import { type FakeGraphError, META_ERRORS, type MetaPlatform, startFakeGraphApi } from '../testing/fake-graph-api.js';
import { messengerInbound, messengerRead, whatsappStatuses } from '../testing/meta-payloads.js';
import {
  type TestServer,
  describeEachDialect,
  eventually,
  expectBody,
  expectError,
  testSettings,
} from '../testing/harness.js';
import { Worker, jobHandlers } from '../worker/worker.js';

const fake = await startFakeGraphApi();
afterAll(async () => {
  await fake.close();
});

/** Retries come quickly in tests; three of them, then the message fails. */
const RETRY_SCHEDULE_MS = [100, 150, 200] as const;
const settings = () =>
  testSettings({ graphApiUrl: fake.url, channelSendRetryScheduleMs: RETRY_SCHEDULE_MS, channelSendsPerSecond: 1000 });

const APP_SECRET = 'app-secret-0123456789abcdef';
const HOUR_MS = 60 * 60 * 1000;

let sequence = 0;
const nextNumber = () => ++sequence;
/** Meta's ids are digits; these stay unique across the file's servers, which share the fake. */
const externalId = () => `${Date.now()}${String(nextNumber()).padStart(4, '0')}`;
const phone = () => `+3162${String(1_000_000 + nextNumber()).padStart(7, '0')}`;
const accessToken = () => `EAAG${randomBytes(24).toString('base64url')}`;

interface ChannelSetup {
  channel: Channel;
  token: string;
  externalId: string;
}

interface ConversationSetup {
  conversation: Conversation;
  contact: Contact;
  /** The contact's platform id on the channel, when it has one. */
  recipient: string | undefined;
}

/** Helpers over one test server, with channels connected to the shared fake Graph API. */
function channelTools(server: () => TestServer) {
  /** A channel in account A whose token the fake accepts (unless `fakeToken` says otherwise). */
  const openChannel = async (platform: MetaPlatform, options: { fakeToken?: string } = {}): Promise<ChannelSetup> => {
    const id = externalId();
    const token = accessToken();
    const response = await server().request('POST', '/channels', {
      body: { platform, external_id: id, access_token: token, app_secret: APP_SECRET },
    });
    const channel = expectBody(response, 201, Channel);
    fake.connect({
      platform,
      externalId: id,
      accessToken: options.fakeToken ?? token,
      appSecret: APP_SECRET,
      webhookUrl: channel.webhook_url,
    });
    return { channel, token, externalId: id };
  };

  /**
   * A contact and a conversation on the channel, as an inbound message would have opened them. With
   * `lastInboundAt` the contact has an identity on the channel (WhatsApp: its wa_id, else a PSID/IGSID)
   * that last wrote then (`null`: never); without, it has none.
   */
  const openConversation = async (
    setup: ChannelSetup,
    options: { lastInboundAt?: string | null } = {},
  ): Promise<ConversationSetup> => {
    const { channel } = setup;
    const contact = expectBody(
      await server().request('POST', '/contacts', { body: { phone: phone(), name: 'Channel Contact' } }),
      201,
      Contact,
    );
    const ctx = { database: server().database, accountId: server().accountId, settings: server().settings };
    const conversation = await conversationsService.create(ctx, {
      contact_id: contact.id,
      platform: channel.platform,
      channelId: channel.id,
    });
    if (options.lastInboundAt === undefined) return { conversation, contact, recipient: undefined };
    const recipient = channel.platform === 'whatsapp' ? (contact.phone as string).slice(1) : externalId();
    await contactIdentitiesRepository.insert(
      new TenantScope(server().database.db, server().accountId, server().database.capabilities),
      {
        channel_id: channel.id,
        external_id: recipient,
        contact_id: contact.id,
        platform: channel.platform,
        last_inbound_at: options.lastInboundAt,
        created_at: new Date().toISOString(),
      },
    );
    return { conversation, contact, recipient };
  };

  /** A conversation whose contact wrote a minute ago: free-form messages may be sent. */
  const openWindow = (setup: ChannelSetup) =>
    openConversation(setup, { lastInboundAt: new Date(Date.now() - 60_000).toISOString() });

  const send = async (body: Record<string, unknown>) =>
    expectBody(await server().request('POST', '/messages', { body }), 201, Message);

  const readMessage = async (conversationId: string, messageId: string): Promise<Message> => {
    const page = expectBody(
      await server().request('GET', `/conversations/${conversationId}/messages`, { query: { limit: 100 } }),
      200,
      MessageList,
    );
    const message = page.data.find((m) => m.id === messageId);
    if (!message) throw new Error(`message ${messageId} not found`);
    return message;
  };

  /** The message once it has left `queued`. */
  const settled = (message: Message, timeout?: number) =>
    eventually(async () => {
      const current = await readMessage(message.conversation_id, message.id);
      return current.status !== 'queued' && current;
    }, timeout);

  const updates = async (messageId: string) => {
    const page = expectBody(
      await server().request('GET', '/events', { query: { type: 'message.updated', limit: 100 } }),
      200,
      EventList,
    );
    return page.data.filter((event) => (event.data as { id: string }).id === messageId).reverse();
  };

  const readChannel = async (id: string) => expectBody(await server().request('GET', `/channels/${id}`), 200, Channel);

  return { openChannel, openConversation, openWindow, send, readMessage, settled, updates, readChannel };
}

const sendsTo = (id: string) => fake.requests.filter((r) => r.isSend && r.externalId === id);

describe('Graph API client', () => {
  it('builds the WhatsApp text and template bodies and the Messenger / Instagram text body', () => {
    expect(requestBody('whatsapp', '31612345678', { type: 'text', content: 'Hi' })).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '31612345678',
      type: 'text',
      text: { body: 'Hi' },
    });
    const components = [{ type: 'body' as const, parameters: [{ type: 'text', text: 'Ada' }] }];
    expect(
      requestBody('whatsapp', '31612345678', {
        type: 'template',
        content: 'order_update',
        template: { name: 'order_update', language: 'en_US', components },
      }),
    ).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '31612345678',
      type: 'template',
      template: { name: 'order_update', language: { code: 'en_US' }, components },
    });
    for (const platform of ['facebook', 'instagram'] as const) {
      expect(requestBody(platform, '6543210', { type: 'text', content: 'Hi' })).toEqual({
        recipient: { id: '6543210' },
        messaging_type: 'RESPONSE',
        message: { text: 'Hi' },
      });
      expect(
        typeof requestBody(platform, '6543210', {
          type: 'template',
          content: 'x',
          template: { name: 'x', language: 'en' },
        }),
      ).toBe('string');
    }
  });

  it("reads the platform's message id from WhatsApp's and Messenger's answers", () => {
    expect(
      resultOf('whatsapp', 200, JSON.stringify({ messaging_product: 'whatsapp', messages: [{ id: 'wamid.X' }] })),
    ).toEqual({
      ok: true,
      platformMessageId: 'wamid.X',
    });
    expect(resultOf('facebook', 200, JSON.stringify({ recipient_id: '1', message_id: 'm_Y' }))).toEqual({
      ok: true,
      platformMessageId: 'm_Y',
    });
    expect(resultOf('whatsapp', 200, '{}')).toMatchObject({
      ok: false,
      kind: 'permanent',
      code: 'unexpected_response',
    });
    expect(resultOf('whatsapp', 502, '<html>Bad gateway</html>')).toMatchObject({
      ok: false,
      kind: 'retryable',
      code: 'http_502',
    });
    expect(resultOf('whatsapp', 404, 'not found')).toMatchObject({ ok: false, kind: 'permanent', code: 'http_404' });
  });

  it('classifies Graph errors by code: refused token, temporary or throttling, or permanent', () => {
    const kindOf = (status: number, error: Record<string, unknown>) => classifyGraphError(status, error).kind;
    for (const code of [190, 102, 0])
      expect(kindOf(401, { code, type: 'OAuthException', message: 'x' }), String(code)).toBe('invalid_token');
    for (const code of [1, 2, 4, 17, 32, 341, 613, 1200, 80007, 130429, 131000, 131016, 131056]) {
      expect(kindOf(400, { code, message: 'x' }), String(code)).toBe('retryable');
    }
    // Most of Meta's errors carry type OAuthException: that alone says nothing of the token.
    for (const code of [10, 100, 131026, 131047, 131048, 368, 551]) {
      expect(kindOf(400, { code, type: 'OAuthException', message: 'x' }), String(code)).toBe('permanent');
    }
    expect(kindOf(500, { code: 100, message: 'x' })).toBe('retryable');
    expect(kindOf(400, { code: 36000, is_transient: true, message: 'x' })).toBe('retryable');
    expect([...INVALID_TOKEN_CODES].some((code) => RETRYABLE_CODES.has(code))).toBe(false);

    const error = classifyGraphError(400, {
      code: 131026,
      message: '(#131026) Message undeliverable',
      error_data: { details: 'Unable to deliver message.' },
    });
    expect(error).toMatchObject({
      code: '131026',
      message: '(#131026) Message undeliverable: Unable to deliver message.',
      httpStatus: 400,
    });
  });

  it('answers a network failure and a timeout as retryable errors, without the token', async () => {
    const token = accessToken();
    const channel = { platform: 'whatsapp' as const, external_id: externalId() };
    fake.connect({
      platform: 'whatsapp',
      externalId: channel.external_id,
      accessToken: token,
      appSecret: APP_SECRET,
      webhookUrl: 'http://127.0.0.1:9/',
    });
    const graph = { graphApiUrl: fake.url, graphApiVersion: 'v23.0' };

    fake.failNext(1, 'network', { externalId: channel.external_id });
    const reset = await sendToPlatform(graph, channel, token, '31600000000', { type: 'text', content: 'x' });
    expect(reset).toMatchObject({ ok: false, kind: 'retryable', code: 'network_error', httpStatus: null });

    fake.setDelay(300);
    try {
      const late = await sendToPlatform(
        graph,
        channel,
        token,
        '31600000000',
        { type: 'text', content: 'x' },
        { timeoutMs: 50 },
      );
      expect(late).toMatchObject({ ok: false, kind: 'retryable', code: 'timeout', httpStatus: null });
    } finally {
      fake.setDelay(0);
    }

    const echoed: FakeGraphError = { httpStatus: 400, code: 100, message: `(#100) Invalid parameter near ${token}` };
    fake.failNext(1, echoed, { externalId: channel.external_id });
    const refused = await sendToPlatform(graph, channel, token, '31600000000', { type: 'text', content: 'x' });
    expect(refused).toMatchObject({ ok: false, kind: 'permanent', code: '100' });
    expect(JSON.stringify(refused)).not.toContain(token);
    fake.disconnect(channel.external_id);
  });
});

describeEachDialect(
  'outbound messages on channels',
  (server) => {
    const tools = channelTools(server);
    const { openChannel, openConversation, openWindow, send, readMessage, settled, updates, readChannel } = tools;

    beforeAll(async () => {
      await server().startWorker();
    });

    describe('sending', () => {
      it('sends a WhatsApp text in Graph format with the channel token to the contact, then records sent with the platform id', async () => {
        const setup = await openChannel('whatsapp');
        const { conversation, recipient } = await openWindow(setup);
        const queued = await send({ conversation_id: conversation.id, content: 'Your order has shipped' });
        expect(queued).toMatchObject({ status: 'queued', platform_message_id: null, error: null });

        const sent = await settled(queued);
        expect(sent.status).toBe('sent');
        const [request] = sendsTo(setup.externalId);
        expect(request?.path).toBe(`/${server().settings.graphApiVersion}/${setup.externalId}/messages`);
        expect(request?.headers.authorization).toBe(`Bearer ${setup.token}`);
        expect(request?.headers['content-type']).toMatch(/^application\/json/);
        expect(request?.body).toEqual({
          messaging_product: 'whatsapp',
          recipient_type: 'individual',
          to: recipient,
          type: 'text',
          text: { body: 'Your order has shipped' },
        });
        const [accepted] = fake.sent(setup.externalId);
        expect(sent.platform_message_id).toBe(accepted?.platformId);
        expect(sent.platform_message_id).toMatch(/^wamid\./);
        expect(sent.error).toBeNull();

        const events = await updates(sent.id);
        expect(events.map((e) => (e.data as Message).status)).toEqual(['sent']);
        expect(events[0]?.data).toMatchObject({
          id: sent.id,
          status: 'sent',
          platform_message_id: sent.platform_message_id,
        });
      });

      it.each(['facebook', 'instagram'] as const)(
        'sends a text on %s to the PSID / IGSID as a RESPONSE',
        async (platform) => {
          const setup = await openChannel(platform);
          const { conversation, recipient } = await openWindow(setup);
          const sent = await settled(await send({ conversation_id: conversation.id, content: 'Thanks for writing' }));
          expect(sent.status).toBe('sent');
          const [request] = sendsTo(setup.externalId);
          expect(request?.headers.authorization).toBe(`Bearer ${setup.token}`);
          expect(request?.body).toEqual({
            recipient: { id: recipient },
            messaging_type: 'RESPONSE',
            message: { text: 'Thanks for writing' },
          });
          expect(sent.platform_message_id).toBe(fake.sent(setup.externalId)[0]?.platformId);
        },
      );

      it('sends a WhatsApp template to a contact that never wrote, at its number without "+"', async () => {
        const setup = await openChannel('whatsapp');
        const { conversation, contact } = await openConversation(setup);
        const template = {
          name: 'order_update',
          language: 'en_US',
          components: [{ type: 'body' as const, parameters: [{ type: 'text', text: '1042' }] }],
        };
        const queued = await send({ conversation_id: conversation.id, type: 'template', template });
        expect(queued).toMatchObject({ type: 'template', content: 'order_update', status: 'queued' });
        expect((await settled(queued)).status).toBe('sent');
        expect(sendsTo(setup.externalId)[0]?.body).toEqual({
          messaging_product: 'whatsapp',
          recipient_type: 'individual',
          to: (contact.phone as string).slice(1),
          type: 'template',
          template: { name: 'order_update', language: { code: 'en_US' }, components: template.components },
        });
      });

      it('refuses a template on Messenger: 400, nothing sent', async () => {
        const setup = await openChannel('facebook');
        const { conversation } = await openWindow(setup);
        const response = await server().request('POST', '/messages', {
          body: { conversation_id: conversation.id, type: 'template', template: { name: 'hello', language: 'en' } },
        });
        expectError(response, 400, 'bad_request', { field: 'type', constraint: 'enum' });
        expect(sendsTo(setup.externalId)).toHaveLength(0);
      });
    });

    describe('the 24-hour window', () => {
      it('refuses a text when the contact never wrote on the channel, or wrote more than 24 hours ago: 400 window', async () => {
        const setup = await openChannel('whatsapp');
        const never = await openConversation(setup, { lastInboundAt: null });
        const noIdentity = await openConversation(setup);
        const old = await openConversation(setup, { lastInboundAt: new Date(Date.now() - HOUR_MS).toISOString() });
        // Moved back in the database itself, as time passing would.
        await server()
          .database.db.updateTable('contact_identities')
          .set({ last_inbound_at: new Date(Date.now() - 25 * HOUR_MS).toISOString() })
          .where('contact_id', '=', old.contact.id)
          .execute();

        for (const { conversation } of [never, noIdentity, old]) {
          const response = await server().request('POST', '/messages', {
            body: { conversation_id: conversation.id, content: 'Hello?' },
          });
          expectError(response, 400, 'bad_request', { field: 'type', constraint: 'window' });
        }
        expect(sendsTo(setup.externalId)).toHaveLength(0);
      });

      it('sends a text within 24 hours of the contact’s last message', async () => {
        const setup = await openChannel('instagram');
        const recent = await openConversation(setup, {
          lastInboundAt: new Date(Date.now() - 23 * HOUR_MS).toISOString(),
        });
        expect(
          (await settled(await send({ conversation_id: recent.conversation.id, content: 'Still here' }))).status,
        ).toBe('sent');
      });
    });

    describe('Graph errors', () => {
      it('retries a 5xx and then a throttling error on the schedule, then records sent', async () => {
        const setup = await openChannel('whatsapp');
        const { conversation } = await openWindow(setup);
        fake.failNext(
          1,
          { httpStatus: 500, code: 131000, message: '(#131000) Something went wrong' },
          { externalId: setup.externalId },
        );
        fake.failNext(1, META_ERRORS.whatsappThroughput, { externalId: setup.externalId });
        const sent = await settled(await send({ conversation_id: conversation.id, content: 'Third time lucky' }));
        expect(sent).toMatchObject({ status: 'sent', error: null });

        const tries = sendsTo(setup.externalId);
        expect(tries).toHaveLength(3);
        const gaps = tries.slice(1).map((t, i) => t.at - (tries[i]?.at ?? 0));
        expect(gaps[0]).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[0] * 0.9 - 5);
        expect(gaps[1]).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[1] * 0.9 - 5);
        expect(sent.platform_message_id).toBe(fake.sent(setup.externalId)[0]?.platformId);
        expect((await updates(sent.id)).map((e) => (e.data as Message).status)).toEqual(['sent']);
      });

      it('retries after a network failure', async () => {
        const setup = await openChannel('facebook');
        const { conversation } = await openWindow(setup);
        fake.failNext(1, 'network', { externalId: setup.externalId });
        const sent = await settled(await send({ conversation_id: conversation.id, content: 'Are you there?' }));
        expect(sent.status).toBe('sent');
        expect(sendsTo(setup.externalId)).toHaveLength(2);
      });

      it('fails the message with the last error once the retries are spent', async () => {
        const setup = await openChannel('whatsapp');
        const { conversation } = await openWindow(setup);
        fake.failNext(RETRY_SCHEDULE_MS.length + 1, META_ERRORS.apiService, { externalId: setup.externalId });
        const failed = await settled(await send({ conversation_id: conversation.id, content: 'Never arrives' }));
        expect(failed).toMatchObject({
          status: 'failed',
          platform_message_id: null,
          error: { code: '2', message: META_ERRORS.apiService.message },
        });
        expect(sendsTo(setup.externalId)).toHaveLength(RETRY_SCHEDULE_MS.length + 1);
        expect((await updates(failed.id)).map((e) => (e.data as Message).status)).toEqual(['failed']);
      });

      it.each([
        ['whatsapp', '131026', META_ERRORS.whatsappUndeliverable],
        ['whatsapp', '131047', META_ERRORS.whatsappReEngagement],
        ['facebook', '100', META_ERRORS.invalidParameter],
        ['facebook', '551', META_ERRORS.messengerUserUnavailable],
      ] as const)('fails a %s message at once on a permanent error (%s)', async (platform, code, error) => {
        const setup = await openChannel(platform);
        const { conversation } = await openWindow(setup);
        fake.failNext(1, error, { externalId: setup.externalId });
        const failed = await settled(await send({ conversation_id: conversation.id, content: 'Undeliverable' }));
        expect(failed.status).toBe('failed');
        expect(failed.error?.code).toBe(code);
        expect(failed.error?.message).toContain(error.message);
        expect(sendsTo(setup.externalId)).toHaveLength(1);
        expect((await readChannel(setup.channel.id)).status).toBe('active');
      });

      it('fails the message and puts the channel in error on a refused token; PATCH status active clears it', async () => {
        const setup = await openChannel('whatsapp', { fakeToken: accessToken() });
        const { conversation } = await openWindow(setup);
        const failed = await settled(await send({ conversation_id: conversation.id, content: 'Token trouble' }));
        expect(failed).toMatchObject({ status: 'failed', error: { code: '190' } });
        expect(failed.error?.message).toContain('Invalid OAuth access token');

        const broken = await readChannel(setup.channel.id);
        expect(broken.status).toBe('error');
        expect(broken.last_error).toMatchObject({ code: '190', message: failed.error?.message });
        expect(Date.parse(broken.last_error?.at ?? '')).toBeGreaterThan(Date.now() - 60_000);

        const repaired = expectBody(
          await server().request('PATCH', `/channels/${setup.channel.id}`, { body: { status: 'active' } }),
          200,
          Channel,
        );
        expect(repaired).toMatchObject({ status: 'active', last_error: null });
      });

      it('sends again once a refused token is replaced', async () => {
        const setup = await openChannel('facebook', { fakeToken: accessToken() });
        const { conversation } = await openWindow(setup);
        expect((await settled(await send({ conversation_id: conversation.id, content: 'First' }))).status).toBe(
          'failed',
        );
        const fixed = accessToken();
        fake.connect({
          platform: 'facebook',
          externalId: setup.externalId,
          accessToken: fixed,
          appSecret: APP_SECRET,
          webhookUrl: setup.channel.webhook_url,
        });
        const patched = expectBody(
          await server().request('PATCH', `/channels/${setup.channel.id}`, { body: { access_token: fixed } }),
          200,
          Channel,
        );
        expect(patched.status).toBe('active');
        const sent = await settled(await send({ conversation_id: conversation.id, content: 'Second' }));
        expect(sent.status).toBe('sent');
        expect(sendsTo(setup.externalId).at(-1)?.headers.authorization).toBe(`Bearer ${fixed}`);
      });

      it('never shows the token: not in responses, events, the message error or the channel error', async () => {
        const setup = await openChannel('whatsapp');
        const { conversation } = await openWindow(setup);
        // Meta's message echoing the token must not carry it into Convo's records.
        fake.failNext(
          1,
          { httpStatus: 400, code: 100, message: `(#100) Invalid parameter near ${setup.token}` },
          { externalId: setup.externalId },
        );
        const failed = await settled(await send({ conversation_id: conversation.id, content: 'Echo' }));
        expect(failed.status).toBe('failed');
        expect(failed.error?.message).toContain('[redacted]');

        const refused = await openChannel('instagram', { fakeToken: accessToken() });
        const refusedConversation = await openWindow(refused);
        expect(
          (await settled(await send({ conversation_id: refusedConversation.conversation.id, content: 'Refused' })))
            .status,
        ).toBe('failed');

        const texts = await Promise.all(
          [
            `/conversations/${conversation.id}/messages`,
            `/conversations/${refusedConversation.conversation.id}/messages`,
            `/channels/${setup.channel.id}`,
            `/channels/${refused.channel.id}`,
            '/channels?limit=100',
            '/events?limit=100',
          ].map(async (path) => (await server().request('GET', path)).text),
        );
        for (const text of texts) {
          expect(text).not.toContain(setup.token);
          expect(text).not.toContain(refused.token);
        }
      });
    });

    describe('statuses from the platform', () => {
      /** Waits until the message has reached `status`. */
      const reaches = (conversationId: string, messageId: string, status: Message['status']) =>
        eventually(async () => {
          const current = await readMessage(conversationId, messageId);
          return current.status === status && current;
        });
      const statusesOf = async (messageId: string) => (await updates(messageId)).map((e) => (e.data as Message).status);

      it('moves a WhatsApp message to delivered, then read, from the status webhooks; a late status changes nothing', async () => {
        const setup = await openChannel('whatsapp');
        // Meta's statuses may be processed out of order (forward only): read is posted once delivered is in.
        fake.autoStatuses(setup.externalId, ['sent', 'delivered']);
        const { conversation, recipient } = await openWindow(setup);
        const queued = await send({ conversation_id: conversation.id, content: 'Tracked' });
        const delivered = await reaches(conversation.id, queued.id, 'delivered');
        const wamid = fake.sent(setup.externalId)[0]?.platformId as string;
        expect(delivered.platform_message_id).toBe(wamid);

        const status = (value: 'delivered' | 'read') =>
          whatsappStatuses({
            phoneNumberId: setup.externalId,
            statuses: [{ id: wamid, status: value, recipientId: recipient as string }],
          });
        expect((await fake.postWebhook(setup.externalId, status('read'))).status).toBe(200);
        await reaches(conversation.id, queued.id, 'read');
        expect((await fake.postWebhook(setup.externalId, status('delivered'))).status).toBe(200);

        await fake.idle();
        expect(fake.webhooks.filter((w) => w.externalId === setup.externalId).every((w) => w.status === 200)).toBe(
          true,
        );
        expect(await statusesOf(queued.id)).toEqual(['sent', 'delivered', 'read']);
        expect((await readMessage(conversation.id, queued.id)).status).toBe('read');
      });

      it('moves a Messenger message to delivered, then read', async () => {
        const setup = await openChannel('facebook');
        fake.autoStatuses(setup.externalId, ['delivered']);
        const { conversation, recipient } = await openWindow(setup);
        const queued = await send({ conversation_id: conversation.id, content: 'Tracked too' });
        await reaches(conversation.id, queued.id, 'delivered');
        const read = messengerRead({ from: recipient as string, to: setup.externalId, watermark: Date.now() });
        expect(
          (await fake.postWebhook(setup.externalId, messengerInbound({ pageId: setup.externalId, events: [read] })))
            .status,
        ).toBe(200);
        await reaches(conversation.id, queued.id, 'read');
        expect(await statusesOf(queued.id)).toEqual(['sent', 'delivered', 'read']);
      });
    });
  },
  settings(),
);

describeEachDialect(
  'send jobs run by hand',
  (server) => {
    const { openChannel, openWindow, send, readMessage, updates } = channelTools(server);
    /** A worker that only runs when told, so that a test can change things between the request and the send. */
    let worker: Worker;
    beforeAll(() => {
      worker = new Worker({
        database: server().database,
        handlers: jobHandlers({ database: server().database, settings: server().settings }),
      });
    });

    it.each([
      ['deleted', 'channel_deleted'],
      ['disabled', 'channel_disabled'],
    ] as const)('fails a queued message whose channel was %s before the send', async (change, code) => {
      const setup = await openChannel('whatsapp');
      const { conversation } = await openWindow(setup);
      const queued = await send({ conversation_id: conversation.id, content: 'Too late' });
      if (change === 'deleted')
        expect((await server().request('DELETE', `/channels/${setup.channel.id}`)).status).toBe(204);
      else
        expect(
          (await server().request('PATCH', `/channels/${setup.channel.id}`, { body: { status: 'disabled' } })).status,
        ).toBe(200);

      await worker.runDue();
      const failed = await readMessage(conversation.id, queued.id);
      expect(failed).toMatchObject({ status: 'failed', error: { code } });
      expect(sendsTo(setup.externalId)).toHaveLength(0);
      expect((await updates(queued.id)).map((e) => (e.data as Message).status)).toEqual(['failed']);
    });

    it('does not send a message again whose send was already recorded (a crash before the job was done)', async () => {
      const setup = await openChannel('whatsapp');
      const { conversation } = await openWindow(setup);
      const queued = await send({ conversation_id: conversation.id, content: 'Once only' });
      await server()
        .database.db.updateTable('messages')
        .set({ status: 'sent', platform_message_id: 'wamid.recorded' })
        .where('id', '=', queued.id)
        .execute();

      await worker.runDue();
      expect(sendsTo(setup.externalId)).toHaveLength(0);
      const jobs = await server()
        .database.db.selectFrom('jobs')
        .select('id')
        .where('kind', '=', 'send_message')
        .where('payload', 'like', `%${queued.id}%`)
        .execute();
      expect(jobs).toHaveLength(0);
      expect(await readMessage(conversation.id, queued.id)).toMatchObject({
        status: 'sent',
        platform_message_id: 'wamid.recorded',
      });
    });
  },
  settings(),
);

const SENDS_PER_SECOND = 5;

describeEachDialect(
  'the send rate of a channel',
  (server) => {
    const { openChannel, openWindow, send, readMessage } = channelTools(server);
    beforeAll(async () => {
      await server().startWorker();
    });

    it(`sends at most ${SENDS_PER_SECOND} messages a second on one channel, by the platform's clock`, async () => {
      const setup = await openChannel('whatsapp');
      const { conversation } = await openWindow(setup);
      const count = 3 * SENDS_PER_SECOND;
      const messages: Message[] = [];
      for (let i = 0; i < count; i++)
        messages.push(await send({ conversation_id: conversation.id, content: `Burst ${i}` }));

      await eventually(async () => {
        const statuses = await Promise.all(
          messages.map(async (m) => (await readMessage(conversation.id, m.id)).status),
        );
        return statuses.every((s) => s === 'sent');
      }, 20_000);

      const times = sendsTo(setup.externalId).map((r) => r.at);
      expect(times).toHaveLength(count);
      // Fifteen sends at five a second span at least two seconds, and no second holds more than five
      // (less the 0.2 s a request may spend on its way while the machine is busy).
      expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(
        ((count - SENDS_PER_SECOND) * 1000) / SENDS_PER_SECOND - 200,
      );
      expect(fake.maxSendsInWindow(setup.externalId, 800)).toBeLessThanOrEqual(SENDS_PER_SECOND);
    });
  },
  testSettings({
    graphApiUrl: fake.url,
    channelSendRetryScheduleMs: RETRY_SCHEDULE_MS,
    channelSendsPerSecond: SENDS_PER_SECOND,
  }),
);
