import { createHash, randomBytes } from 'node:crypto';
import { Channel, Contact, type Conversation, File as FileRecord, Message, MessageList } from '@convo/core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { contactIdentitiesRepository } from '../repositories/channels.js';
import { TenantScope } from '../repositories/tenant.js';
import { conversationsService } from '../services/conversations.js';
import { type MetaPlatform, startFakeGraphApi } from '../testing/fake-graph-api.js';
import {
  type TestServer,
  describeEachDialect,
  eventually,
  expectBody,
  expectError,
  testSettings,
} from '../testing/harness.js';

const fake = await startFakeGraphApi();
afterAll(() => fake.close());

const APP_SECRET = 'outbound-media-secret-0123456789';
let sequence = 0;
const externalId = () => `${Date.now()}${String(++sequence).padStart(4, '0')}`;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const MiB = 1024 * 1024;

/** POST /v1/files with one file. */
async function upload(server: TestServer, bytes: Buffer, type: string, filename: string): Promise<FileRecord> {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type }), filename);
  const response = await fetch(`${server.baseUrl}/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.keys.full}` },
    body: form,
  });
  expect(response.status).toBe(201);
  return FileRecord.parse(await response.json());
}

/**
 * Outbound media (CONTRACT: Files and media): a message names a file or a link; each platform's rules
 * are checked before it is accepted; the worker keeps a link as a file and sends the file the
 * platform's own way, byte for byte.
 */
describeEachDialect(
  'outbound media',
  (server) => {
    beforeAll(() => server().startWorker());
    afterEach(() => fake.reset());

    /** A channel and a conversation whose contact wrote a minute ago (free-form messages may go). */
    const openWindow = async (platform: MetaPlatform) => {
      const token = `EAAG${randomBytes(24).toString('base64url')}`;
      const channel = expectBody(
        await server().request('POST', '/channels', {
          body: { platform, external_id: externalId(), access_token: token, app_secret: APP_SECRET },
        }),
        201,
        Channel,
      );
      fake.connect({
        platform,
        externalId: channel.external_id,
        accessToken: token,
        appSecret: APP_SECRET,
        webhookUrl: channel.webhook_url,
      });
      const phone = `+3165${String(1_000_000 + ++sequence).padStart(7, '0')}`;
      const contact = expectBody(await server().request('POST', '/contacts', { body: { phone } }), 201, Contact);
      const ctx = { database: server().database, accountId: server().accountId, settings: server().settings };
      const conversation: Conversation = await conversationsService.create(ctx, {
        contact_id: contact.id,
        platform,
        channelId: channel.id,
      });
      const recipient = platform === 'whatsapp' ? phone.slice(1) : externalId();
      await contactIdentitiesRepository.insert(
        new TenantScope(server().database.db, server().accountId, server().database.capabilities),
        {
          channel_id: channel.id,
          external_id: recipient,
          contact_id: contact.id,
          platform,
          last_inbound_at: new Date(Date.now() - 60_000).toISOString(),
          created_at: new Date().toISOString(),
        },
      );
      return { channel, conversation, recipient };
    };

    const send = (body: Record<string, unknown>) => server().request('POST', '/messages', { body });

    /** The message once it has left `queued`. */
    const settled = (message: Message) =>
      eventually(async () => {
        const page = expectBody(
          await server().request('GET', `/conversations/${message.conversation_id}/messages`, {
            query: { limit: 100 },
          }),
          200,
          MessageList,
        );
        const current = page.data.find((m) => m.id === message.id);
        return current && current.status !== 'queued' && current;
      });

    const content = async (fileId: string) => {
      const response = await fetch(`${server().baseUrl}/files/${fileId}/content`, {
        headers: { authorization: `Bearer ${server().keys.full}` },
      });
      return Buffer.from(await response.arrayBuffer());
    };

    it('uploads an image to WhatsApp and sends it by id with its caption', async () => {
      const { channel, conversation, recipient } = await openWindow('whatsapp');
      const bytes = randomBytes(40_000);
      const file = await upload(server(), bytes, 'image/png', 'receipt.png');
      const message = expectBody(
        await send({
          conversation_id: conversation.id,
          type: 'image',
          content: 'Your receipt',
          media: { file_id: file.id },
        }),
        201,
        Message,
      );
      expect(message).toMatchObject({
        type: 'image',
        content: 'Your receipt',
        direction: 'outbound',
        status: 'queued',
        media: { id: file.id, file_id: file.id, mime_type: 'image/png', status: 'stored', filename: 'receipt.png' },
      });
      const sent = await settled(message);
      expect(sent.status).toBe('sent');
      const [accepted] = fake.sent(channel.external_id);
      expect(accepted?.to).toBe(recipient);
      expect(accepted?.type).toBe('image');
      expect(sha256(accepted?.file?.bytes ?? Buffer.alloc(0))).toBe(file.sha256);
      expect(accepted?.file?.mimeType).toBe('image/png');
      expect(accepted?.body).toMatchObject({ image: { caption: 'Your receipt' } });
      expect(sent.platform_message_id).toBe(accepted?.platformId);
    });

    it('keeps the media of a message in a conversation without a channel, which stays queued', async () => {
      const phone = `+3166${String(1_000_000 + ++sequence).padStart(7, '0')}`;
      const contact = expectBody(await server().request('POST', '/contacts', { body: { phone } }), 201, Contact);
      const conversation = (
        await server().request('POST', '/conversations', { body: { contact_id: contact.id, platform: 'whatsapp' } })
      ).body as Conversation;
      const file = await upload(server(), randomBytes(500), 'image/jpeg', 'cup.jpg');
      const sent = expectBody(
        await send({ conversation_id: conversation.id, type: 'image', media: { file_id: file.id } }),
        201,
        Message,
      );
      const read = expectBody(await server().request('GET', `/messages/${sent.id}`), 200, Message);
      expect(read).toEqual(sent);
      expect(read).toMatchObject({ status: 'queued', media: { file_id: file.id, status: 'stored' } });
    });

    it('fetches a linked document, keeps it as a file and sends it to WhatsApp with its name', async () => {
      const { channel, conversation } = await openWindow('whatsapp');
      const bytes = randomBytes(70_000);
      const { url } = fake.addMedia({ id: 'invoice-7.pdf', bytes, mimeType: 'application/pdf' });
      const message = expectBody(
        await send({ conversation_id: conversation.id, type: 'document', media: { url } }),
        201,
        Message,
      );
      expect(message.media).toMatchObject({
        id: url,
        mime_type: 'application/pdf',
        file_id: null,
        status: 'pending',
        filename: 'invoice-7.pdf',
      });
      const sent = await settled(message);
      expect(sent.status).toBe('sent');
      expect(sent.media).toMatchObject({ status: 'stored', error: null });
      expect(sha256(await content(sent.media?.file_id as string))).toBe(sha256(bytes));
      const [accepted] = fake.sent(channel.external_id);
      expect(sha256(accepted?.file?.bytes ?? Buffer.alloc(0))).toBe(sha256(bytes));
      expect(accepted?.body).toMatchObject({ document: { filename: 'invoice-7.pdf' } });
    });

    it('sends a voice note on Messenger and a PDF on Instagram as attachments, byte for byte', async () => {
      const messenger = await openWindow('facebook');
      const voice = randomBytes(30_000);
      const audio = await upload(server(), voice, 'audio/mpeg', 'note.mp3');
      const first = expectBody(
        await send({ conversation_id: messenger.conversation.id, type: 'audio', media: { file_id: audio.id } }),
        201,
        Message,
      );
      expect((await settled(first)).status).toBe('sent');
      const [onMessenger] = fake.sent(messenger.channel.external_id);
      expect(onMessenger?.type).toBe('attachment');
      expect(sha256(onMessenger?.file?.bytes ?? Buffer.alloc(0))).toBe(audio.sha256);
      expect(onMessenger?.body).toMatchObject({
        recipient: { id: messenger.recipient },
        messaging_type: 'RESPONSE',
        message: { attachment: { type: 'audio' } },
      });

      const instagram = await openWindow('instagram');
      const pdf = randomBytes(20_000);
      const { url } = fake.addMedia({ id: 'terms.pdf', bytes: pdf, mimeType: 'application/pdf' });
      const second = expectBody(
        await send({ conversation_id: instagram.conversation.id, type: 'document', media: { url } }),
        201,
        Message,
      );
      expect((await settled(second)).status).toBe('sent');
      const [onInstagram] = fake.sent(instagram.channel.external_id);
      expect(onInstagram?.body).toMatchObject({ message: { attachment: { type: 'file' } } });
      expect(sha256(onInstagram?.file?.bytes ?? Buffer.alloc(0))).toBe(sha256(pdf));
    });

    it('sends an image and a document on each platform from a file and from a link, byte for byte', async () => {
      for (const platform of ['whatsapp', 'facebook', 'instagram'] as const) {
        const { channel, conversation } = await openWindow(platform);
        for (const [type, mimeType, name] of [
          ['image', 'image/jpeg', 'cup.jpg'],
          ['document', 'application/pdf', 'terms.pdf'],
        ] as const)
          for (const source of ['file', 'url'] as const) {
            const bytes = randomBytes(30_000);
            const media =
              source === 'file'
                ? { file_id: (await upload(server(), bytes, mimeType, name)).id }
                : { url: fake.addMedia({ id: `${platform}-${source}-${name}`, bytes, mimeType }).url };
            const message = expectBody(await send({ conversation_id: conversation.id, type, media }), 201, Message);
            const sent = await settled(message);
            expect(sent.status, `${platform} ${type} from a ${source}`).toBe('sent');
            const accepted = fake.sent(channel.external_id).find((s) => s.platformId === sent.platform_message_id);
            expect(sha256(accepted?.file?.bytes ?? Buffer.alloc(0)), `${platform} ${type} from a ${source}`).toBe(
              sha256(bytes),
            );
            expect(sha256(await content(sent.media?.file_id as string))).toBe(sha256(bytes));
          }
      }
    });

    it('refuses, before accepting, what the platform would not take, and queues nothing', async () => {
      const { conversation } = await openWindow('whatsapp');
      const messenger = await openWindow('facebook');
      const gif = await upload(server(), randomBytes(1000), 'image/gif', 'wave.gif');
      const big = await upload(server(), randomBytes(5 * MiB + 1), 'image/jpeg', 'big.jpg');
      const png = await upload(server(), randomBytes(1000), 'image/png', 'small.png');
      const base = { conversation_id: conversation.id };
      expectError(await send({ ...base, type: 'image', media: { file_id: gif.id } }), 400, 'bad_request', {
        field: 'media.file_id',
        constraint: 'format',
      });
      expectError(await send({ ...base, type: 'image', media: { file_id: big.id } }), 400, 'bad_request', {
        field: 'media.file_id',
        constraint: 'max',
      });
      const gifLink = `${fake.url}/_media/wave.gif`;
      expectError(await send({ ...base, type: 'image', media: { url: gifLink } }), 400, 'bad_request', {
        field: 'media.url',
        constraint: 'format',
      });
      expectError(await send({ ...base, type: 'image', media: { url: 'ftp://x.example/a.png' } }), 400, 'bad_request', {
        field: 'media.url',
        constraint: 'format',
      });
      expectError(await send({ ...base, type: 'image' }), 400, 'bad_request', {
        field: 'media',
        constraint: 'required',
      });
      expectError(await send({ ...base, type: 'image', media: {} }), 400, 'bad_request', {
        field: 'media.file_id',
        constraint: 'required',
      });
      expectError(
        await send({ ...base, type: 'image', media: { file_id: png.id, url: gifLink } }),
        400,
        'bad_request',
        { field: 'media.url', constraint: 'unknown' },
      );
      expectError(await send({ ...base, content: 'Hi', media: { file_id: png.id } }), 400, 'bad_request', {
        field: 'media',
        constraint: 'unknown',
      });
      expectError(
        await send({ ...base, type: 'audio', content: 'Listen', media: { file_id: png.id } }),
        400,
        'bad_request',
        { field: 'content', constraint: 'unknown' },
      );
      expectError(
        await send({
          conversation_id: messenger.conversation.id,
          type: 'image',
          content: 'A caption',
          media: { file_id: png.id },
        }),
        400,
        'bad_request',
        { field: 'content', constraint: 'unknown' },
      );
      expect(
        (await send({ ...base, type: 'image', media: { file_id: 'file_01JDQ2F3G4H5J6K7M8N9P0Q1R2' } })).status,
      ).toBe(404);
      const page = expectBody(
        await server().request('GET', `/conversations/${conversation.id}/messages`),
        200,
        MessageList,
      );
      expect(page.data).toEqual([]);
    });

    it('fails the message when its link cannot be had or is too large, and says why on the media', async () => {
      const { channel, conversation } = await openWindow('whatsapp');
      const missing = expectBody(
        await send({
          conversation_id: conversation.id,
          type: 'document',
          media: { url: `${fake.url}/_media/gone.pdf` },
        }),
        201,
        Message,
      );
      const failed = await settled(missing);
      expect(failed).toMatchObject({ status: 'failed', error: { code: 'http_404' } });
      expect(failed.media).toMatchObject({ status: 'failed', file_id: null, error: { code: 'http_404' } });

      const { url } = fake.addMedia({ id: 'huge.jpg', bytes: randomBytes(5 * MiB + 10), mimeType: 'image/jpeg' });
      const huge = expectBody(
        await send({ conversation_id: conversation.id, type: 'image', media: { url } }),
        201,
        Message,
      );
      const refused = await settled(huge);
      expect(refused).toMatchObject({ status: 'failed', error: { code: 'media_too_large' } });
      expect(refused.media).toMatchObject({ status: 'too_large', file_id: null });
      expect(fake.sent(channel.external_id)).toEqual([]);
    });
  },
  testSettings({ graphApiUrl: fake.url, channelSendRetryScheduleMs: [50, 50], channelSendsPerSecond: 1000 }),
);
