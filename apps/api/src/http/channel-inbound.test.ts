import { randomBytes } from 'node:crypto';
import {
  Channel,
  Contact,
  type Conversation,
  ConversationList,
  type Event,
  EventList,
  type EventType,
  Message,
  MessageList,
} from '@convo/core';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { type MetaPlatform, startFakeGraphApi } from '../testing/fake-graph-api.js';
import { type TestServer, describeEachDialect, expectBody, expectError, testSettings } from '../testing/harness.js';
import {
  type MessagingEvent,
  type WhatsAppInboundMessage,
  batchWebhooks,
  instagramInbound,
  instagramRead,
  messagingAttachments,
  messagingReaction,
  messagingText,
  messengerDelivery,
  messengerInbound,
  messengerRead,
  messengerSticker,
  newGraphId,
  newMid,
  newWamid,
  signMetaPayload,
  waAudio,
  waDocument,
  waImage,
  waLocation,
  waReaction,
  waSticker,
  waText,
  waUnsupported,
  waVideo,
  whatsappInbound,
  whatsappStatuses,
} from '../testing/meta-payloads.js';
import { type ChannelRow, channelsRepository } from '../repositories/channels.js';
import { TenantScope } from '../repositories/tenant.js';
import type { Arrival } from '../channels/meta-webhooks.js';
import { receiveManyOnChannel, receiveOnChannel } from '../services/channel-inbound.js';
import { Worker, jobHandlers } from '../worker/worker.js';

const fake = await startFakeGraphApi();
afterAll(async () => {
  await fake.close();
});

/** A status for a message not stored yet is looked at again twice, quickly, then recorded as an error. */
const PAYLOAD_RETRY_MS = [100, 200] as const;

const APP_SECRET = 'inbound-app-secret-0123456789';

let sequence = 0;
const next = () => ++sequence;
/** Page, Instagram account and phone number ids: digits, unique across the file's servers (they share the fake). */
const externalId = () => `${Date.now()}${String(next()).padStart(4, '0')}`;
/** A WhatsApp id: a phone number's digits. */
const waId = () => `3162${String(1_000_000 + next()).padStart(7, '0')}`;

type Body = object;

/** Helpers over one test server: channels, signed posts, the queue drained by hand, and reads through the API. */
function inboundTools(server: () => TestServer) {
  const openChannel = async (platform: MetaPlatform): Promise<Channel> => {
    const id = externalId();
    const token = `EAAG${randomBytes(24).toString('base64url')}`;
    const response = await server().request('POST', '/channels', {
      body: { platform, external_id: id, access_token: token, app_secret: APP_SECRET },
    });
    const channel = expectBody(response, 201, Channel);
    // Sends through the fake answer with platform ids, which the status tests need.
    fake.connect({
      platform,
      externalId: id,
      accessToken: token,
      appSecret: APP_SECRET,
      webhookUrl: channel.webhook_url,
    });
    return channel;
  };

  /** Posts a body to the channel's webhook address as Meta does: raw JSON, signed with the app secret. */
  const post = async (channel: Channel, body: Body): Promise<void> => {
    const raw = JSON.stringify(body);
    const response = await fetch(channel.webhook_url, {
      method: 'POST',
      body: raw,
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signMetaPayload(APP_SECRET, raw) },
    });
    expect(response.status, await response.text()).toBe(200);
  };

  /** Runs the jobs that are due until none is left (payloads, and the sends they lead to). */
  const drain = async () => {
    await server().drainJobs();
  };

  const deliver = async (channel: Channel, body: Body) => {
    await post(channel, body);
    await drain();
  };

  const conversationsOn = async (channel: Channel): Promise<Conversation[]> => {
    const page = expectBody(
      await server().request('GET', '/conversations', { query: { platform: channel.platform, limit: 100 } }),
      200,
      ConversationList,
    );
    return page.data.filter((conversation) => conversation.channel_id === channel.id);
  };

  const onlyConversation = async (channel: Channel): Promise<Conversation> => {
    const conversations = await conversationsOn(channel);
    expect(conversations).toHaveLength(1);
    return conversations[0] as Conversation;
  };

  const messagesOf = async (conversationId: string): Promise<Message[]> =>
    expectBody(
      await server().request('GET', `/conversations/${conversationId}/messages`, { query: { limit: 100 } }),
      200,
      MessageList,
    ).data;

  const contact = async (id: string): Promise<Contact> =>
    expectBody(await server().request('GET', `/contacts/${id}`), 200, Contact);

  /** The account's events of a type, oldest first. */
  const events = async (type: EventType): Promise<Event[]> =>
    expectBody(
      await server().request('GET', '/events', { query: { type, limit: 100 } }),
      200,
      EventList,
    ).data.reverse();

  const conversationEvents = async (type: EventType, conversationId: string) =>
    (await events(type)).filter(
      (event) =>
        (event.data as { id?: string; conversation_id?: string })[
          type.startsWith('conversation') ? 'id' : 'conversation_id'
        ] === conversationId,
    );

  /** The statuses `message.updated` reported for a message, in order. */
  const updates = async (messageId: string) =>
    (await events('message.updated'))
      .filter((event) => (event.data as Message).id === messageId)
      .map((event) => (event.data as Message).status);

  const payloads = (channel: Channel) =>
    server()
      .database.db.selectFrom('channel_payloads')
      .selectAll()
      .where('channel_id', '=', channel.id)
      .orderBy('received_at')
      .orderBy('id')
      .execute();

  const payloadErrors = async (channel: Channel) => {
    const rows = await payloads(channel);
    expect(rows.every((row) => row.processed_at !== null)).toBe(true);
    return rows.flatMap((row) =>
      row.errors === null ? [] : (JSON.parse(row.errors) as { path: string; error: string }[]),
    );
  };

  /** Outbound messages sent through the fake, so that each has the platform id the fake gave it. */
  const sendAll = async (conversation: Conversation, texts: string[]): Promise<Message[]> => {
    const queued: Message[] = [];
    // Receipts with a watermark compare creation times: each message its own millisecond, on a
    // stopped clock moved 1 ms per message; the real one has passed them by when it comes back.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      for (const content of texts) {
        vi.setSystemTime(Date.now() + 1);
        queued.push(
          expectBody(
            await server().request('POST', '/messages', { body: { conversation_id: conversation.id, content } }),
            201,
            Message,
          ),
        );
      }
    } finally {
      vi.useRealTimers();
    }
    await drain();
    const stored = await messagesOf(conversation.id);
    return queued.map((message) => {
      const sent = stored.find((m) => m.id === message.id) as Message;
      expect(sent).toMatchObject({ status: 'sent', platform_message_id: expect.any(String) });
      return sent;
    });
  };

  const statusOf = async (message: Message) =>
    (await messagesOf(message.conversation_id)).find((m) => m.id === message.id)?.status;

  return {
    openChannel,
    post,
    drain,
    deliver,
    conversationsOn,
    onlyConversation,
    messagesOf,
    contact,
    events,
    conversationEvents,
    updates,
    payloads,
    payloadErrors,
    sendAll,
    statusOf,
  };
}

/** What a test compares of a stored message: of its media, the platform's reference (inbound-media.test.ts has the rest). */
const shape = (message: Message) => ({
  type: message.type,
  content: message.content,
  media:
    message.media &&
    (({ id, mime_type, filename }) => ({ id, mime_type, ...(filename !== undefined ? { filename } : {}) }))(
      message.media,
    ),
  direction: message.direction,
});

describeEachDialect(
  'inbound messages from channels',
  (server) => {
    let worker: Worker;
    beforeAll(() => {
      worker = new Worker({
        database: server().database,
        handlers: jobHandlers({ database: server().database, settings: server().settings }),
      });
    });
    const tools = inboundTools(server);
    const {
      openChannel,
      post,
      drain,
      deliver,
      conversationsOn,
      onlyConversation,
      messagesOf,
      contact,
      conversationEvents,
      payloads,
      payloadErrors,
    } = tools;

    it('stores every WhatsApp message type with its caption, media and the sender as a contact named by its profile', async () => {
      const channel = await openChannel('whatsapp');
      const from = waId();
      const reactedTo = newWamid();
      const base = () => ({ from, id: newWamid(), timestamp: String(Math.floor(Date.now() / 1000)) });
      const messages: WhatsAppInboundMessage[] = [
        waText({ from, body: 'Hello, is my order on its way?' }),
        waImage({ from, caption: 'The box arrived broken', mediaId: '1001', mimeType: 'image/jpeg' }),
        waVideo({ from, mediaId: '1002' }),
        waAudio({ from, mediaId: '1003' }),
        waDocument({ from, mediaId: '1004', filename: 'invoice-42.pdf', caption: 'My invoice' }),
        waSticker({ from, mediaId: '1005' }),
        waLocation({
          from,
          latitude: 52.3731,
          longitude: 4.8926,
          name: 'Dam Square',
          address: 'Dam, 1012 JS Amsterdam',
        }),
        waLocation({ from, latitude: 52.1, longitude: 5.12 }),
        waReaction({ from, messageId: reactedTo, emoji: '👍' }),
        waUnsupported({ from }),
        { ...base(), type: 'button', button: { text: 'Track my order', payload: 'TRACK' } },
        {
          ...base(),
          type: 'interactive',
          interactive: { type: 'list_reply', list_reply: { id: 'size-m', title: 'Size M' } },
        },
      ];
      await deliver(
        channel,
        whatsappInbound({
          phoneNumberId: channel.external_id,
          contacts: [{ waId: from, name: 'Ada Lovelace' }],
          messages,
        }),
      );

      const conversation = await onlyConversation(channel);
      expect(conversation).toMatchObject({
        platform: 'whatsapp',
        channel_id: channel.id,
        status: 'active',
        message_count: messages.length,
        contact: { name: 'Ada Lovelace', phone: `+${from}` },
        last_message: { content: 'Size M' },
      });
      const stored = await messagesOf(conversation.id);
      expect(stored.map(shape)).toEqual([
        { type: 'text', content: 'Hello, is my order on its way?', media: null, direction: 'inbound' },
        {
          type: 'image',
          content: 'The box arrived broken',
          media: { id: '1001', mime_type: 'image/jpeg' },
          direction: 'inbound',
        },
        { type: 'video', content: '', media: { id: '1002', mime_type: 'video/mp4' }, direction: 'inbound' },
        {
          type: 'audio',
          content: '',
          media: { id: '1003', mime_type: 'audio/ogg; codecs=opus' },
          direction: 'inbound',
        },
        {
          type: 'document',
          content: 'My invoice',
          media: { id: '1004', mime_type: 'application/pdf', filename: 'invoice-42.pdf' },
          direction: 'inbound',
        },
        { type: 'sticker', content: '', media: { id: '1005', mime_type: 'image/webp' }, direction: 'inbound' },
        { type: 'location', content: 'Dam Square, Dam, 1012 JS Amsterdam', media: null, direction: 'inbound' },
        { type: 'location', content: '52.1,5.12', media: null, direction: 'inbound' },
        { type: 'reaction', content: '👍', media: null, direction: 'inbound' },
        { type: 'unsupported', content: '', media: null, direction: 'inbound' },
        { type: 'unsupported', content: 'Track my order', media: null, direction: 'inbound' },
        { type: 'unsupported', content: 'Size M', media: null, direction: 'inbound' },
      ]);
      expect(stored.map((m) => m.platform_message_id)).toEqual(messages.map((m) => m.id));
      expect(stored.every((m) => m.status === 'delivered' && m.error === null)).toBe(true);

      const sender = await contact(conversation.contact.id);
      expect(sender).toMatchObject({ name: 'Ada Lovelace', phone: `+${from}`, email: null, tags: [] });
      expect(sender.identities).toEqual([{ platform: 'whatsapp', channel_id: channel.id, external_id: from }]);

      expect(await conversationEvents('conversation.created', conversation.id)).toHaveLength(1);
      const received = await conversationEvents('message.received', conversation.id);
      expect(received.map((event) => (event.data as Message).id)).toEqual(stored.map((m) => m.id));
      expect(await payloadErrors(channel)).toEqual([]);
    });

    it('gives a WhatsApp sender the contact that has its phone, fills only an empty name, and keeps one conversation', async () => {
      const channel = await openChannel('whatsapp');
      const [unnamed, named, anonymous] = [waId(), waId(), waId()];
      const existing = expectBody(
        await server().request('POST', '/contacts', { body: { phone: `+${unnamed}` } }),
        201,
        Contact,
      );
      const keeps = expectBody(
        await server().request('POST', '/contacts', { body: { phone: `+${named}`, name: 'Grace H.' } }),
        201,
        Contact,
      );
      await deliver(
        channel,
        whatsappInbound({
          phoneNumberId: channel.external_id,
          contacts: [
            { waId: unnamed, name: '  Charles Babbage  ' },
            { waId: named, name: 'Grace Hopper' },
            { waId: anonymous },
          ],
          messages: [
            waText({ from: unnamed, body: 'one' }),
            waText({ from: named, body: 'two' }),
            waText({ from: anonymous, body: 'three' }),
          ],
        }),
      );
      await deliver(
        channel,
        whatsappInbound({
          phoneNumberId: channel.external_id,
          contacts: [{ waId: unnamed, name: 'Another Name' }],
          messages: [waText({ from: unnamed, body: 'four' })],
        }),
      );

      const conversations = await conversationsOn(channel);
      expect(conversations).toHaveLength(3);
      const byPhone = new Map(conversations.map((c) => [c.contact.phone, c]));
      expect(byPhone.get(`+${unnamed}`)).toMatchObject({
        contact: { id: existing.id, name: 'Charles Babbage' },
        message_count: 2,
      });
      expect(byPhone.get(`+${named}`)).toMatchObject({ contact: { id: keeps.id, name: 'Grace H.' }, message_count: 1 });
      expect(byPhone.get(`+${anonymous}`)).toMatchObject({ contact: { name: null }, message_count: 1 });

      const filled = await contact(existing.id);
      expect(filled).toMatchObject({ name: 'Charles Babbage', phone: `+${unnamed}` });
      expect(filled.identities).toEqual([{ platform: 'whatsapp', channel_id: channel.id, external_id: unnamed }]);
      expect(filled.updated_at > existing.updated_at).toBe(true);
      expect((await contact(keeps.id)).name).toBe('Grace H.');

      // A second channel adds a second identity to the same contact, after the first.
      const second = await openChannel('whatsapp');
      await deliver(
        second,
        whatsappInbound({
          phoneNumberId: second.external_id,
          contacts: [{ waId: unnamed }],
          messages: [waText({ from: unnamed, body: 'five' })],
        }),
      );
      expect((await contact(existing.id)).identities).toEqual([
        { platform: 'whatsapp', channel_id: channel.id, external_id: unnamed },
        { platform: 'whatsapp', channel_id: second.id, external_id: unnamed },
      ]);
      expect((await onlyConversation(second)).contact.id).toBe(existing.id);
    });

    it('stores every Messenger message type, skips echoes, and makes the sender a contact without a phone', async () => {
      const channel = await openChannel('facebook');
      const page = channel.external_id;
      const psid = newGraphId();
      // Attachment URLs the fake serves, so that their downloads succeed at once (inbound-media.test.ts).
      const url = (name: string) => fake.addMedia({ id: name, bytes: Buffer.from(name), mimeType: 'text/plain' }).url;
      const reactedTo = newMid();
      const events: MessagingEvent[] = [
        messagingText({ from: psid, to: page, text: 'Hi, do you ship to Belgium?' }),
        messagingAttachments({
          from: psid,
          to: page,
          text: 'This one',
          attachments: [{ type: 'image', url: url('photo') }],
        }),
        messagingAttachments({ from: psid, to: page, attachments: [{ type: 'video', url: url('video') }] }),
        messagingAttachments({ from: psid, to: page, attachments: [{ type: 'audio', url: url('voice') }] }),
        messagingAttachments({ from: psid, to: page, attachments: [{ type: 'file', url: url('form.pdf') }] }),
        messengerSticker({
          from: psid,
          to: page,
          stickerId: 369239263222822,
          url: url('thumbs-up'),
          withStickerAttachment: true,
        }),
        {
          sender: { id: psid },
          recipient: { id: page },
          timestamp: Date.now(),
          message: {
            mid: newMid(),
            attachments: [{ type: 'location', payload: { coordinates: { lat: 50.85, long: 4.35 } } }],
          },
        },
        messagingAttachments({
          from: psid,
          to: page,
          attachments: [{ type: 'fallback', url: 'https://example.com/shared-link' }],
        }),
        messagingReaction({ from: psid, to: page, mid: reactedTo, emoji: '❤️', reaction: 'love' }),
        // The Page's own message, echoed back: not the contact's.
        {
          sender: { id: page },
          recipient: { id: psid },
          timestamp: Date.now(),
          message: { mid: newMid(), text: 'We do!', is_echo: true, app_id: 1234 },
        },
        messagingAttachments({
          from: psid,
          to: page,
          text: 'Both sides',
          attachments: [
            { type: 'image', url: url('front') },
            { type: 'image', url: url('back') },
          ],
        }),
      ];
      await deliver(channel, messengerInbound({ pageId: page, events }));

      const conversation = await onlyConversation(channel);
      expect(conversation).toMatchObject({
        platform: 'facebook',
        channel_id: channel.id,
        message_count: 11,
        contact: { name: null, phone: null },
      });
      const stored = await messagesOf(conversation.id);
      expect(stored.map(shape)).toEqual([
        { type: 'text', content: 'Hi, do you ship to Belgium?', media: null, direction: 'inbound' },
        { type: 'image', content: 'This one', media: { id: url('photo'), mime_type: 'image/*' }, direction: 'inbound' },
        { type: 'video', content: '', media: { id: url('video'), mime_type: 'video/*' }, direction: 'inbound' },
        { type: 'audio', content: '', media: { id: url('voice'), mime_type: 'audio/*' }, direction: 'inbound' },
        {
          type: 'document',
          content: '',
          media: { id: url('form.pdf'), mime_type: 'application/octet-stream' },
          direction: 'inbound',
        },
        { type: 'sticker', content: '', media: { id: url('thumbs-up'), mime_type: 'image/*' }, direction: 'inbound' },
        { type: 'location', content: '50.85,4.35', media: null, direction: 'inbound' },
        { type: 'unsupported', content: 'https://example.com/shared-link', media: null, direction: 'inbound' },
        { type: 'reaction', content: '❤️', media: null, direction: 'inbound' },
        {
          type: 'image',
          content: 'Both sides',
          media: { id: url('front'), mime_type: 'image/*' },
          direction: 'inbound',
        },
        { type: 'image', content: '', media: { id: url('back'), mime_type: 'image/*' }, direction: 'inbound' },
      ]);
      const mid = (event: MessagingEvent) => (event.message as { mid: string }).mid;
      expect(stored[0]?.platform_message_id).toBe(mid(events[0] as MessagingEvent));
      expect(stored[9]?.platform_message_id).toBe(mid(events[10] as MessagingEvent));
      expect(new Set(stored.map((m) => m.platform_message_id)).size).toBe(stored.length);

      const sender = await contact(conversation.contact.id);
      expect(sender).toMatchObject({ name: null, phone: null });
      expect(sender.identities).toEqual([{ platform: 'facebook', channel_id: channel.id, external_id: psid }]);

      // The same sender later is the same contact and conversation.
      await deliver(
        channel,
        messengerInbound({ pageId: page, events: [messagingText({ from: psid, to: page, text: 'Thanks' })] }),
      );
      expect(await onlyConversation(channel)).toMatchObject({ contact: { id: sender.id }, message_count: 12 });
      expect(await payloadErrors(channel)).toEqual([]);
    });

    it('stores every Instagram message type, deleted and unsupported ones as unsupported', async () => {
      const channel = await openChannel('instagram');
      const account = channel.external_id;
      const igsid = newGraphId();
      // Attachment URLs the fake serves, so that their downloads succeed at once (inbound-media.test.ts).
      const url = (name: string) => fake.addMedia({ id: name, bytes: Buffer.from(name), mimeType: 'text/plain' }).url;
      const first = messagingText({ from: igsid, to: account, text: 'Is this still available?' });
      const events: MessagingEvent[] = [
        first,
        messagingAttachments({ from: igsid, to: account, attachments: [{ type: 'image', url: url('photo') }] }),
        messagingAttachments({ from: igsid, to: account, attachments: [{ type: 'video', url: url('video') }] }),
        messagingAttachments({ from: igsid, to: account, attachments: [{ type: 'audio', url: url('voice') }] }),
        messagingAttachments({ from: igsid, to: account, attachments: [{ type: 'file', url: url('size-chart') }] }),
        messagingAttachments({ from: igsid, to: account, attachments: [{ type: 'ig_reel', url: url('reel') }] }),
        {
          sender: { id: igsid },
          recipient: { id: account },
          timestamp: Date.now(),
          message: { mid: newMid(), is_unsupported: true },
        },
        messagingReaction({ from: igsid, to: account, mid: newMid(), emoji: '😂', reaction: 'other' }),
        // Unsending a message names it again: the stored one stays as it is.
        {
          sender: { id: igsid },
          recipient: { id: account },
          timestamp: Date.now(),
          message: { mid: (first.message as { mid: string }).mid, is_deleted: true },
        },
        // One we never saw, deleted: kept as unsupported.
        {
          sender: { id: igsid },
          recipient: { id: account },
          timestamp: Date.now(),
          message: { mid: newMid(), is_deleted: true },
        },
      ];
      await deliver(channel, instagramInbound({ igId: account, events }));

      const conversation = await onlyConversation(channel);
      expect(conversation).toMatchObject({
        platform: 'instagram',
        channel_id: channel.id,
        message_count: 9,
        contact: { name: null, phone: null },
      });
      expect((await messagesOf(conversation.id)).map(shape)).toEqual([
        { type: 'text', content: 'Is this still available?', media: null, direction: 'inbound' },
        { type: 'image', content: '', media: { id: url('photo'), mime_type: 'image/*' }, direction: 'inbound' },
        { type: 'video', content: '', media: { id: url('video'), mime_type: 'video/*' }, direction: 'inbound' },
        { type: 'audio', content: '', media: { id: url('voice'), mime_type: 'audio/*' }, direction: 'inbound' },
        {
          type: 'document',
          content: '',
          media: { id: url('size-chart'), mime_type: 'application/octet-stream' },
          direction: 'inbound',
        },
        { type: 'unsupported', content: url('reel'), media: null, direction: 'inbound' },
        { type: 'unsupported', content: '', media: null, direction: 'inbound' },
        { type: 'reaction', content: '😂', media: null, direction: 'inbound' },
        { type: 'unsupported', content: '', media: null, direction: 'inbound' },
      ]);
      const sender = await contact(conversation.contact.id);
      expect(sender).toMatchObject({ name: null, phone: null });
      expect(sender.identities).toEqual([{ platform: 'instagram', channel_id: channel.id, external_id: igsid }]);
    });

    it('changes nothing when Meta delivers the same body again, one after the other or at the same time', async () => {
      const channel = await openChannel('whatsapp');
      const from = waId();
      const body = whatsappInbound({
        phoneNumberId: channel.external_id,
        contacts: [{ waId: from, name: 'Twice' }],
        messages: [waText({ from, body: 'first' }), waImage({ from, caption: 'second' })],
      });
      // Two deliveries processed at once: the second finds the first's messages, or loses the race on a unique index.
      await post(channel, body);
      await post(channel, body);
      await drain();
      await deliver(channel, body);
      await deliver(channel, body);

      const conversation = await onlyConversation(channel);
      expect(conversation.message_count).toBe(2);
      expect(await messagesOf(conversation.id)).toHaveLength(2);
      expect(await conversationEvents('message.received', conversation.id)).toHaveLength(2);
      expect(await conversationEvents('conversation.created', conversation.id)).toHaveLength(1);
      expect(await payloads(channel)).toHaveLength(4);
      expect(await payloadErrors(channel)).toEqual([]);

      const messenger = await openChannel('facebook');
      const psid = newGraphId();
      const messengerBody = messengerInbound({
        pageId: messenger.external_id,
        events: [
          messagingText({ from: psid, to: messenger.external_id, text: 'once' }),
          messagingReaction({ from: psid, to: messenger.external_id, mid: newMid(), emoji: '👍' }),
          messagingAttachments({
            from: psid,
            to: messenger.external_id,
            attachments: [
              { type: 'image', url: fake.addMedia({ id: 'x1', bytes: Buffer.from('1'), mimeType: 'image/png' }).url },
              { type: 'image', url: fake.addMedia({ id: 'x2', bytes: Buffer.from('2'), mimeType: 'image/png' }).url },
            ],
          }),
        ],
      });
      await deliver(messenger, messengerBody);
      await deliver(messenger, messengerBody);
      expect((await onlyConversation(messenger)).message_count).toBe(4);
    });

    it('applies every entry and change of a batch, and one bad message or change loses none of the others', async () => {
      const channel = await openChannel('whatsapp');
      const [a, b, c] = [waId(), waId(), waId()];
      const broken = { from: a, id: newWamid(), timestamp: String(Math.floor(Date.now() / 1000)), type: 'text' };
      const body = batchWebhooks(
        [
          whatsappInbound({
            phoneNumberId: channel.external_id,
            contacts: [{ waId: a, name: 'A' }],
            messages: [waText({ from: a, body: 'a1' }), broken, waText({ from: a, body: 'a2' })],
          }),
          whatsappInbound({
            phoneNumberId: channel.external_id,
            contacts: [{ waId: b, name: 'B' }, { waId: '0999' }],
            messages: [waText({ from: b, body: 'b1' }), waText({ from: '0999', body: 'not a phone number' })],
          }),
          whatsappInbound({
            phoneNumberId: '999000999',
            contacts: [{ waId: c, name: 'C' }],
            messages: [waText({ from: c, body: 'not ours' })],
          }),
        ],
        { sameEntry: true },
      );
      const other = whatsappInbound({
        wabaId: '200300400500',
        phoneNumberId: channel.external_id,
        contacts: [{ waId: b }],
        messages: [waText({ from: b, body: 'b2' })],
      });
      body.entry.push(...other.entry);
      await deliver(channel, body);

      const conversations = await conversationsOn(channel);
      const byPhone = new Map(conversations.map((conversation) => [conversation.contact.phone, conversation]));
      expect([...byPhone.keys()].sort()).toEqual([`+${a}`, `+${b}`].sort());
      const contents = async (phone: string) =>
        (await messagesOf(byPhone.get(phone)?.id as string)).map((m) => m.content);
      expect(await contents(`+${a}`)).toEqual(['a1', 'a2']);
      expect(await contents(`+${b}`)).toEqual(['b1', 'b2']);

      const errors = await payloadErrors(channel);
      expect(errors.map((error) => error.path)).toEqual([
        'entry.0.changes.0.value.messages.1',
        'entry.0.changes.1.value.messages.1',
        'entry.0.changes.2',
      ]);
      expect(errors[0]?.error).toMatch(/^text: /);
      expect(errors[1]?.error).toContain('0999');
      expect(errors[2]?.error).toContain('999000999');

      const messenger = await openChannel('facebook');
      const psid = newGraphId();
      const to = messenger.external_id;
      const messengerBody = messengerInbound({
        pageId: to,
        events: [
          messagingText({ from: psid, to, text: 'm1' }),
          {
            recipient: { id: to },
            timestamp: Date.now(),
            message: { mid: newMid(), text: 'no sender' },
          } as unknown as MessagingEvent,
          messagingText({ from: psid, to: '123123123', text: 'for another page' }),
          messagingText({ from: psid, to, text: 'm2' }),
        ],
      });
      messengerBody.entry.push({
        id: '456456456',
        time: Date.now(),
        messaging: [messagingText({ from: psid, to: '456456456', text: 'another page' })],
      });
      await deliver(messenger, messengerBody);
      expect((await messagesOf((await onlyConversation(messenger)).id)).map((m) => m.content)).toEqual(['m1', 'm2']);
      expect((await payloadErrors(messenger)).map((error) => error.path)).toEqual([
        'entry.1.messaging.0',
        'entry.2.messaging.0',
        'entry.4',
      ]);
    });

    it("stores a claim's payloads of one channel together as one at a time would, whichever way each sender goes", async () => {
      const channel = await openChannel('whatsapp');
      const [a, b, c, d, e] = [waId(), waId(), waId(), waId(), waId()];
      const to = channel.external_id;
      const one = (from: string, body: string, name?: string, id?: string) =>
        whatsappInbound({
          phoneNumberId: to,
          contacts: [{ waId: from, ...(name ? { name } : {}) }],
          messages: [waText({ from, body, ...(id ? { id } : {}) })],
        });
      // a, b, d and e write first, one payload at a time; d shares no name, e's conversation is resolved.
      await deliver(channel, one(a, 'a0', 'Ann'));
      await deliver(channel, one(b, 'b0', 'Bob'));
      await deliver(channel, one(d, 'd0'));
      await deliver(channel, one(e, 'e0', 'Eve'));
      const before = new Map(
        (await conversationsOn(channel)).map((conversation) => [conversation.contact.phone, conversation]),
      );
      const conversationOf = (waIdOf: string) => before.get(`+${waIdOf}`) as Conversation;
      expect(
        (await server().request('PATCH', `/conversations/${conversationOf(e).id}`, { body: { status: 'resolved' } }))
          .status,
      ).toBe(200);

      // Taken together: a and b (contact and open conversation as they are); left for one at a time:
      // c (new), d (a name to fill), e (a conversation to reopen).
      const scope = new TenantScope(server().database.db, server().accountId, server().database.capabilities);
      const channelRow = (await channelsRepository.findById(scope, channel.id)) as ChannelRow;
      const ctx = { database: server().database, accountId: server().accountId, settings: server().settings };
      const arrival = (from: string, content: string, profileName?: string): Arrival => ({
        sender: { externalId: from, profileName },
        message: { platformMessageId: newWamid(), type: 'text', content, media: null },
      });
      const direct = [
        arrival(a, 'a1'),
        arrival(c, 'c0', 'Cy'),
        arrival(b, 'b1', 'Bob'),
        arrival(d, 'd1', 'Dee'),
        arrival(e, 'e1'),
        arrival(a, 'a2'),
      ];
      const left = await receiveManyOnChannel(ctx, {
        channel: channelRow,
        arrivals: [...direct, direct[0] as Arrival],
      });
      expect(left.map((arrival) => arrival.message.content)).toEqual(['c0', 'd1', 'e1']);
      for (const arrival of left)
        await receiveOnChannel(ctx, { channel: channelRow, sender: arrival.sender, message: arrival.message });

      // The same through the worker: three payloads claimed together, a redelivery and a bad message among them.
      const repeated = newWamid();
      const broken = { from: b, id: newWamid(), timestamp: String(Math.floor(Date.now() / 1000)), type: 'image' };
      await post(channel, one(a, 'a3', 'Ann', repeated));
      await post(
        channel,
        whatsappInbound({
          phoneNumberId: to,
          contacts: [{ waId: b, name: 'Bob' }, { waId: c, name: 'Cy' }, { waId: e }],
          messages: [
            waText({ from: b, body: 'b2' }),
            broken,
            waText({ from: c, body: 'c1' }),
            waText({ from: e, body: 'e2' }),
          ],
        }),
      );
      await post(channel, one(a, 'a3', 'Ann', repeated));
      expect(await worker.runDue()).toBe(3);
      await drain();

      const after = new Map(
        (await conversationsOn(channel)).map((conversation) => [conversation.contact.phone, conversation]),
      );
      const contents = async (from: string) =>
        (await messagesOf((after.get(`+${from}`) as Conversation).id)).map((message) => message.content);
      expect(await contents(a)).toEqual(['a0', 'a1', 'a2', 'a3']);
      expect(await contents(b)).toEqual(['b0', 'b1', 'b2']);
      expect(await contents(c)).toEqual(['c0', 'c1']);
      expect(await contents(d)).toEqual(['d0', 'd1']);
      expect(await contents(e)).toEqual(['e0', 'e1', 'e2']);
      expect(after.get(`+${a}`)).toMatchObject({
        id: conversationOf(a).id,
        message_count: 4,
        last_message: { content: 'a3' },
      });
      expect(after.get(`+${e}`)).toMatchObject({ id: conversationOf(e).id, status: 'active', message_count: 3 });
      expect((await contact((after.get(`+${c}`) as Conversation).contact.id)).name).toBe('Cy');
      expect((await contact((after.get(`+${d}`) as Conversation).contact.id)).name).toBe('Dee');
      expect((await payloadErrors(channel)).map((error) => error.path)).toEqual(['entry.0.changes.0.value.messages.1']);

      // Every message has its event, in order, and a conversation's events never share a sequence number.
      for (const conversation of after.values()) {
        const received = await conversationEvents('message.received', conversation.id);
        const messages = await messagesOf(conversation.id);
        expect(received.map((event) => (event.data as Message).id)).toEqual(messages.map((message) => message.id));
        const sequences = [
          ...received,
          ...(await conversationEvents('conversation.created', conversation.id)),
          ...(await conversationEvents('conversation.updated', conversation.id)),
        ].map((event) => event.sequence);
        expect(new Set(sequences).size).toBe(sequences.length);
        const receivedSequences = received.map((event) => event.sequence as number);
        expect(receivedSequences).toEqual([...receivedSequences].sort((x, y) => x - y));
      }
    });

    it('records a body of the wrong platform, and one for a channel disabled or deleted before it was processed, storing nothing', async () => {
      const channel = await openChannel('whatsapp');
      const psid = newGraphId();
      await deliver(
        channel,
        messengerInbound({
          pageId: channel.external_id,
          events: [messagingText({ from: psid, to: channel.external_id, text: 'wrong' })],
        }),
      );
      expect(await conversationsOn(channel)).toHaveLength(0);
      expect((await payloadErrors(channel)).map((error) => error.path)).toEqual(['object']);

      for (const change of ['disabled', 'deleted'] as const) {
        const later = await openChannel('whatsapp');
        const from = waId();
        await post(
          later,
          whatsappInbound({
            phoneNumberId: later.external_id,
            contacts: [{ waId: from }],
            messages: [waText({ from, body: 'too late' })],
          }),
        );
        if (change === 'disabled')
          expect(
            (await server().request('PATCH', `/channels/${later.id}`, { body: { status: 'disabled' } })).status,
          ).toBe(200);
        else expect((await server().request('DELETE', `/channels/${later.id}`)).status).toBe(204);
        await drain();
        expect(await conversationsOn(later)).toHaveLength(0);
        const [payload] = await payloads(later);
        expect(payload?.processed_at).not.toBeNull();
        expect(payload?.errors).toContain(change);
      }
    });

    it('reopens a resolved conversation, opens a new one after an archived one, and keeps channels apart', async () => {
      const channel = await openChannel('instagram');
      const igsid = newGraphId();
      const write = (text: string) =>
        deliver(
          channel,
          instagramInbound({
            igId: channel.external_id,
            events: [messagingText({ from: igsid, to: channel.external_id, text })],
          }),
        );
      await write('one');
      const first = await onlyConversation(channel);
      expect(
        (await server().request('PATCH', `/conversations/${first.id}`, { body: { status: 'resolved' } })).status,
      ).toBe(200);
      await write('two');
      expect(await onlyConversation(channel)).toMatchObject({ id: first.id, status: 'active', message_count: 2 });

      expect(
        (await server().request('PATCH', `/conversations/${first.id}`, { body: { status: 'archived' } })).status,
      ).toBe(200);
      await write('three');
      const conversations = await conversationsOn(channel);
      expect(conversations).toHaveLength(2);
      const reopened = conversations.find((conversation) => conversation.id !== first.id) as Conversation;
      expect(reopened).toMatchObject({ status: 'active', message_count: 1, contact: { id: first.contact.id } });
      expect(await conversationEvents('conversation.created', reopened.id)).toHaveLength(1);

      // Scoped ids belong to their Page or account: the same id on another channel is another contact.
      const otherChannel = await openChannel('instagram');
      await deliver(
        otherChannel,
        instagramInbound({
          igId: otherChannel.external_id,
          events: [messagingText({ from: igsid, to: otherChannel.external_id, text: 'elsewhere' })],
        }),
      );
      expect((await onlyConversation(otherChannel)).contact.id).not.toBe(first.contact.id);
    });

    it("starts the 24-hour window at the platform's time of the contact's message", async () => {
      const channel = await openChannel('whatsapp');
      const [recent, old] = [waId(), waId()];
      const seconds = (ms: number) => String(Math.floor(ms / 1000));
      await deliver(
        channel,
        whatsappInbound({
          phoneNumberId: channel.external_id,
          contacts: [{ waId: recent }, { waId: old }],
          messages: [
            waText({ from: recent, body: 'an hour ago', timestamp: seconds(Date.now() - 60 * 60 * 1000) }),
            waText({ from: old, body: 'two days ago', timestamp: seconds(Date.now() - 48 * 60 * 60 * 1000) }),
          ],
        }),
      );
      const byPhone = new Map(
        (await conversationsOn(channel)).map((conversation) => [conversation.contact.phone, conversation]),
      );
      const send = (phone: string) =>
        server().request('POST', '/messages', { body: { conversation_id: byPhone.get(phone)?.id, content: 'Hello' } });
      expect((await send(`+${recent}`)).status).toBe(201);
      expectError(await send(`+${old}`), 400, 'bad_request', { field: 'type', constraint: 'window' });
    });
  },
  testSettings({ graphApiUrl: fake.url, channelPayloadRetryScheduleMs: PAYLOAD_RETRY_MS, channelSendsPerSecond: 1000 }),
);

describeEachDialect(
  'statuses of outbound messages from channels',
  (server) => {
    const { openChannel, deliver, onlyConversation, updates, payloads, payloadErrors, sendAll, statusOf } =
      inboundTools(server);

    /** A WhatsApp channel with a contact who just wrote, and outbound messages sent to it. */
    const whatsappSends = async (count: number) => {
      const channel = await openChannel('whatsapp');
      const from = waId();
      await deliver(
        channel,
        whatsappInbound({
          phoneNumberId: channel.external_id,
          contacts: [{ waId: from }],
          messages: [waText({ from, body: 'Hi' })],
        }),
      );
      const conversation = await onlyConversation(channel);
      const sent = await sendAll(
        conversation,
        Array.from({ length: count }, (_, i) => `Reply ${i + 1}`),
      );
      const statuses = (
        ...list: {
          id: string;
          status: 'sent' | 'delivered' | 'read' | 'failed';
          errors?: { code: number; title: string; message?: string }[];
        }[]
      ) =>
        deliver(
          channel,
          whatsappStatuses({
            phoneNumberId: channel.external_id,
            statuses: list.map((s) => ({ ...s, recipientId: from })),
          }),
        );
      return { channel, from, conversation, sent, statuses };
    };

    it('moves WhatsApp messages forward only, whatever order the statuses come in, with one message.updated per change', async () => {
      const { sent, statuses } = await whatsappSends(2);
      const [first, second] = sent as [Message, Message];
      await statuses({ id: first.platform_message_id as string, status: 'read' });
      await statuses({ id: first.platform_message_id as string, status: 'delivered' });
      await statuses({ id: first.platform_message_id as string, status: 'sent' });
      await statuses({
        id: first.platform_message_id as string,
        status: 'failed',
        errors: [{ code: 131026, title: 'Message undeliverable' }],
      });
      expect(await statusOf(first)).toBe('read');
      expect(await updates(first.id)).toEqual(['sent', 'read']);

      // Several statuses of one message in one body, in order.
      await statuses(
        { id: second.platform_message_id as string, status: 'delivered' },
        { id: second.platform_message_id as string, status: 'read' },
      );
      await statuses({ id: second.platform_message_id as string, status: 'read' });
      expect(await statusOf(second)).toBe('read');
      expect(await updates(second.id)).toEqual(['sent', 'delivered', 'read']);
    });

    it("fails a WhatsApp message with the platform's error, after which delivery changes nothing", async () => {
      const { sent, statuses, conversation } = await whatsappSends(1);
      const [message] = sent as [Message];
      const id = message.platform_message_id as string;
      await statuses({
        id,
        status: 'failed',
        errors: [{ code: 131047, title: 'Re-engagement message', message: 'More than 24 hours have passed' }],
      });
      await statuses({ id, status: 'delivered' });
      const page = expectBody(
        await server().request('GET', `/conversations/${conversation.id}/messages`),
        200,
        MessageList,
      );
      expect(page.data.find((m) => m.id === message.id)).toMatchObject({
        status: 'failed',
        error: { code: '131047', message: 'Re-engagement message' },
      });
      expect(await updates(message.id)).toEqual(['sent', 'failed']);
    });

    it('waits for a message whose send is not recorded yet, and records a status for an unknown message after the last retry', async () => {
      const { channel, sent, statuses } = await whatsappSends(1);
      const [message] = sent as [Message];
      // The send answered with an id the send job has not written yet.
      const pending = newWamid();
      await statuses({ id: pending, status: 'delivered' });
      expect((await payloads(channel)).at(-1)?.processed_at).toBeNull();
      await server()
        .database.db.updateTable('messages')
        .set({ platform_message_id: pending })
        .where('id', '=', message.id)
        .execute();
      // The payload's retries come on a stopped clock moved to each, not after waits.
      vi.useFakeTimers({ toFake: ['Date'] });
      try {
        await server().runJobsUntil(async () => (await statusOf(message)) === 'delivered');
        expect(await updates(message.id)).toEqual(['sent', 'delivered']);

        await statuses({ id: newWamid(), status: 'read' });
        await server().runJobsUntil(async () => (await payloads(channel)).every((row) => row.processed_at !== null));
      } finally {
        vi.useRealTimers();
      }
      const errors = await payloadErrors(channel);
      expect(errors).toEqual([
        { path: 'entry.0.changes.0.value.statuses.0', error: expect.stringContaining('platform id') },
      ]);
    });

    it("moves Messenger messages by the delivery's mids and watermark and the read watermark, never past the watermark", async () => {
      const channel = await openChannel('facebook');
      const page = channel.external_id;
      const psid = newGraphId();
      await deliver(
        channel,
        messengerInbound({ pageId: page, events: [messagingText({ from: psid, to: page, text: 'Hello' })] }),
      );
      const [first, second, third] = (await sendAll(await onlyConversation(channel), ['one', 'two', 'three'])) as [
        Message,
        Message,
        Message,
      ];
      const receipt = (event: MessagingEvent) => deliver(channel, messengerInbound({ pageId: page, events: [event] }));

      // Named by its id, with a watermark older than every message.
      await receipt(
        messengerDelivery({
          from: psid,
          to: page,
          mids: [first.platform_message_id as string],
          watermark: Date.parse(first.created_at) - 1000,
        }),
      );
      expect([await statusOf(first), await statusOf(second), await statusOf(third)]).toEqual([
        'delivered',
        'sent',
        'sent',
      ]);

      await receipt(messengerDelivery({ from: psid, to: page, watermark: Date.parse(second.created_at) }));
      expect([await statusOf(first), await statusOf(second), await statusOf(third)]).toEqual([
        'delivered',
        'delivered',
        'sent',
      ]);

      const read = messengerRead({ from: psid, to: page, watermark: Date.parse(second.created_at) });
      await receipt(read);
      await receipt(read);
      expect([await statusOf(first), await statusOf(second), await statusOf(third)]).toEqual(['read', 'read', 'sent']);
      // A delivery after the read changes nothing; one for every message moves the last.
      await receipt(messengerDelivery({ from: psid, to: page, watermark: Date.now() }));
      expect([await statusOf(first), await statusOf(second), await statusOf(third)]).toEqual([
        'read',
        'read',
        'delivered',
      ]);

      expect(await updates(first.id)).toEqual(['sent', 'delivered', 'read']);
      expect(await updates(second.id)).toEqual(['sent', 'delivered', 'read']);
      expect(await updates(third.id)).toEqual(['sent', 'delivered']);
      expect(await payloadErrors(channel)).toEqual([]);
    });

    it('reads an Instagram message and the earlier ones by the mid the read receipt names', async () => {
      const channel = await openChannel('instagram');
      const account = channel.external_id;
      const igsid = newGraphId();
      await deliver(
        channel,
        instagramInbound({ igId: account, events: [messagingText({ from: igsid, to: account, text: 'Hello' })] }),
      );
      const [first, second, third] = (await sendAll(await onlyConversation(channel), ['one', 'two', 'three'])) as [
        Message,
        Message,
        Message,
      ];
      const read = instagramInbound({
        igId: account,
        events: [instagramRead({ from: igsid, to: account, mid: second.platform_message_id as string })],
      });
      await deliver(channel, read);
      await deliver(channel, read);
      expect([await statusOf(first), await statusOf(second), await statusOf(third)]).toEqual(['read', 'read', 'sent']);
      expect(await updates(first.id)).toEqual(['sent', 'read']);
      expect(await updates(second.id)).toEqual(['sent', 'read']);
      expect(await updates(third.id)).toEqual(['sent']);
      expect(await payloadErrors(channel)).toEqual([]);
    });
  },
  testSettings({ graphApiUrl: fake.url, channelPayloadRetryScheduleMs: PAYLOAD_RETRY_MS, channelSendsPerSecond: 1000 }),
);
