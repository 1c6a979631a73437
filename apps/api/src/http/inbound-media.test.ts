import { createHash, randomBytes } from 'node:crypto';
import { Channel, type Event, EventList, File as FileRecord, Message } from '@convo/core';
import { decodeTime } from 'ulid';
import { afterAll, afterEach, expect, it, vi } from 'vitest';
import { messagesRepository } from '../repositories/messages.js';
import { filesService } from '../services/files.js';
import { startFakeGraphApi } from '../testing/fake-graph-api.js';
import { describeEachDialect, expectBody, testSettings } from '../testing/harness.js';
import {
  messagingAttachments,
  messengerInbound,
  newGraphId,
  signMetaPayload,
  waDocument,
  waImage,
  whatsappInbound,
} from '../testing/meta-payloads.js';

const fake = await startFakeGraphApi();
afterAll(() => fake.close());

const APP_SECRET = 'media-app-secret-0123456789';
let sequence = 0;
const externalId = () => `${Date.now()}${String(++sequence).padStart(4, '0')}`;
const waId = () => `3163${String(1_000_000 + ++sequence).padStart(7, '0')}`;

/**
 * Inbound media kept as files (CONTRACT: Files and media): `message.received` carries the media
 * `pending`; the worker downloads it as Meta documents it and `message.updated` tells the outcome.
 */
describeEachDialect(
  'inbound media',
  (server) => {
    afterEach(() => {
      vi.useRealTimers();
      fake.reset();
    });

    const openChannel = async (platform: 'whatsapp' | 'facebook') => {
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
      return { channel, token };
    };

    const post = async (channel: Channel, body: object) => {
      const raw = JSON.stringify(body);
      const response = await fetch(channel.webhook_url, {
        method: 'POST',
        body: raw,
        headers: { 'content-type': 'application/json', 'x-hub-signature-256': signMetaPayload(APP_SECRET, raw) },
      });
      expect(response.status).toBe(200);
    };

    const eventsOf = async (type: 'message.received' | 'message.updated', messageId: string) =>
      expectBody(await server().request('GET', '/events', { query: { type, limit: 100 } }), 200, EventList)
        .data.filter((event: Event) => (event.data as Message).id === messageId)
        .map((event) => (event.data as Message).media);

    const messageByPlatformId = async (platformMessageId: string) => {
      const rows = await server()
        .database.db.selectFrom('messages')
        .select('id')
        .where('platform_message_id', '=', platformMessageId)
        .execute();
      expect(rows).toHaveLength(1);
      return expectBody(await server().request('GET', `/messages/${rows[0]?.id}`), 200, Message);
    };

    const bytesOf = async (fileId: string) => {
      const got = await fetch(`${server().baseUrl}/files/${fileId}/content`, {
        headers: { authorization: `Bearer ${server().keys.full}` },
      });
      expect(got.status).toBe(200);
      return Buffer.from(await got.arrayBuffer());
    };

    it('downloads a WhatsApp image with the channel token and keeps it, after message.received', async () => {
      const { channel, token } = await openChannel('whatsapp');
      const mediaId = newGraphId();
      const bytes = randomBytes(50_000);
      fake.addMedia({ id: mediaId, bytes, mimeType: 'image/jpeg', accessToken: token });
      const from = waId();
      const image = waImage({ from, mediaId, mimeType: 'image/jpeg', caption: 'Broken box' });
      await post(
        channel,
        whatsappInbound({ phoneNumberId: channel.external_id, contacts: [{ waId: from }], messages: [image] }),
      );
      // Stored first, the download still to come.
      await server().runJobsUntil(
        async () =>
          (await server()
            .database.db.selectFrom('messages')
            .select('id')
            .where('platform_message_id', '=', image.id)
            .executeTakeFirst()) !== undefined,
      );
      await server().drainJobs();

      const message = await messageByPlatformId(image.id);
      expect(message.media).toMatchObject({ id: mediaId, mime_type: 'image/jpeg', status: 'stored', error: null });
      const fileId = message.media?.file_id as string;
      const file = expectBody(await server().request('GET', `/files/${fileId}`), 200, FileRecord);
      expect(file).toMatchObject({
        mime_type: 'image/jpeg',
        size: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
      });
      expect((await bytesOf(fileId)).equals(bytes)).toBe(true);
      expect(await eventsOf('message.received', message.id)).toEqual([
        { id: mediaId, mime_type: 'image/jpeg', file_id: null, status: 'pending', error: null },
      ]);
      expect(await eventsOf('message.updated', message.id)).toEqual([message.media]);
      // Its record, then its bytes from the URL the record gave, both with the channel's token.
      const asked = fake.requests.filter((r) => r.path.endsWith(`/${mediaId}`));
      expect(asked.map((r) => [r.path.startsWith('/_media/'), r.headers.authorization])).toEqual([
        [false, `Bearer ${token}`],
        [true, `Bearer ${token}`],
      ]);
    });

    it("keeps a WhatsApp document's filename, and a Messenger attachment with the type its download gives", async () => {
      const { channel: wa, token } = await openChannel('whatsapp');
      const docId = newGraphId();
      fake.addMedia({ id: docId, bytes: Buffer.from('%PDF-1.4'), mimeType: 'application/pdf', accessToken: token });
      const from = waId();
      const doc = waDocument({ from, mediaId: docId, filename: 'invoice-42.pdf' });
      await post(wa, whatsappInbound({ phoneNumberId: wa.external_id, contacts: [{ waId: from }], messages: [doc] }));

      const { channel: page } = await openChannel('facebook');
      const attachmentId = newGraphId();
      const { url } = fake.addMedia({ id: attachmentId, bytes: randomBytes(900), mimeType: 'image/png' });
      const event = messagingAttachments({
        from: newGraphId(),
        to: page.external_id,
        attachments: [{ type: 'image', url }],
      });
      await post(page, messengerInbound({ pageId: page.external_id, events: [event] }));
      await server().drainJobs();

      const pdf = await messageByPlatformId(doc.id);
      expect(pdf.media).toMatchObject({ status: 'stored', filename: 'invoice-42.pdf' });
      expect(expectBody(await server().request('GET', `/files/${pdf.media?.file_id}`), 200, FileRecord).filename).toBe(
        'invoice-42.pdf',
      );
      const png = await messageByPlatformId((event as unknown as { message: { mid: string } }).message.mid);
      expect(png.media).toMatchObject({ id: url, mime_type: 'image/*', status: 'stored' });
      expect(expectBody(await server().request('GET', `/files/${png.media?.file_id}`), 200, FileRecord).mime_type).toBe(
        'image/png',
      );
    });

    it('tries again after a failure that may pass, and fails at once on one that cannot', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const { channel, token } = await openChannel('whatsapp');
      const kept = newGraphId();
      fake.addMedia({ id: kept, bytes: randomBytes(100), mimeType: 'audio/ogg', accessToken: token });
      fake.failMedia(2, { httpStatus: 500, code: 2, message: 'Service temporarily unavailable', isTransient: true });
      const from = waId();
      const later = waImage({ from, mediaId: kept });
      await post(
        channel,
        whatsappInbound({ phoneNumberId: channel.external_id, contacts: [{ waId: from }], messages: [later] }),
      );
      const stored = await server().runJobsUntil(async () => {
        const message = await messageByPlatformId(later.id).catch(() => undefined);
        return message?.media?.status === 'stored' ? message : undefined;
      });
      expect(stored.media?.error).toBeNull();
      // Two refused tries of its record, then its record and its bytes.
      expect(fake.requests.filter((r) => r.path.endsWith(`/${kept}`))).toHaveLength(4);

      const gone = waImage({ from, mediaId: newGraphId() });
      await post(
        channel,
        whatsappInbound({ phoneNumberId: channel.external_id, contacts: [{ waId: from }], messages: [gone] }),
      );
      await server().drainJobs();
      const failed = await messageByPlatformId(gone.id);
      expect(failed.media).toMatchObject({ status: 'failed', file_id: null, error: { code: '100' } });
      expect(await eventsOf('message.updated', failed.id)).toHaveLength(1);
    });

    it('keeps one file when the worker dies after storing the bytes and before recording them', async () => {
      const { channel, token } = await openChannel('whatsapp');
      const mediaId = newGraphId();
      const bytes = randomBytes(700_000);
      fake.addMedia({ id: mediaId, bytes, mimeType: 'image/png', accessToken: token });
      const from = waId();
      const image = waImage({ from, mediaId, mimeType: 'image/png' });
      const orphansBefore = await server()
        .database.db.selectFrom('file_chunks')
        .select('file_id')
        .distinct()
        .where('file_id', 'not in', server().database.db.selectFrom('files').select('id'))
        .execute();
      // The first try's record never commits, as if its process died there: its bytes are kept, named by no file.
      const died = vi
        .spyOn(messagesRepository, 'setMedia')
        .mockRejectedValueOnce(new Error('the worker died before recording the file'));
      // Nor does a dead process clean up after itself.
      const cleanup = vi.spyOn(filesService, 'discard').mockRejectedValueOnce(new Error('the worker is dead'));
      vi.useFakeTimers({ toFake: ['Date'] });
      await post(
        channel,
        whatsappInbound({ phoneNumberId: channel.external_id, contacts: [{ waId: from }], messages: [image] }),
      );
      const message = await server().runJobsUntil(async () => {
        const row = await server()
          .database.db.selectFrom('messages')
          .select(['id', 'media'])
          .where('platform_message_id', '=', image.id)
          .executeTakeFirst();
        return row?.media?.includes('"stored"') && row;
      });
      expect(died).toHaveBeenCalledTimes(2);
      died.mockRestore();
      cleanup.mockRestore();

      const stored = expectBody(await server().request('GET', `/messages/${message.id}`), 200, Message);
      expect((await bytesOf(stored.media?.file_id as string)).equals(bytes)).toBe(true);
      const orphans = async () => {
        const db = server().database.db;
        const owners = await db.selectFrom('file_chunks').select('file_id').distinct().execute();
        const recorded = new Set((await db.selectFrom('files').select('id').execute()).map((row) => row.id));
        return owners.map((row) => row.file_id).filter((id) => !recorded.has(id));
      };
      const known = new Set(orphansBefore.map((row) => row.file_id));
      const left = (await orphans()).filter((id) => !known.has(id));
      expect(left).toHaveLength(1);
      // A day after their upload began (the id's time) the prune job deletes the bytes no file claimed.
      vi.setSystemTime(decodeTime((left[0] as string).slice('file_'.length)) + 25 * 60 * 60 * 1000);
      await filesService.pruneUnclaimed({ database: server().database, settings: server().settings });
      expect(await orphans()).not.toContain(left[0]);
      expect((await bytesOf(stored.media?.file_id as string)).equals(bytes)).toBe(true);
    });

    it('marks media over 100 MiB too_large without downloading it', async () => {
      const { channel, token } = await openChannel('whatsapp');
      const huge = newGraphId();
      fake.addMedia({
        id: huge,
        bytes: Buffer.from('x'),
        mimeType: 'video/mp4',
        accessToken: token,
        declaredSize: 200 * 1024 * 1024,
      });
      const from = waId();
      const video = waImage({ from, mediaId: huge, mimeType: 'video/mp4' });
      await post(
        channel,
        whatsappInbound({ phoneNumberId: channel.external_id, contacts: [{ waId: from }], messages: [video] }),
      );
      await server().drainJobs();
      expect((await messageByPlatformId(video.id)).media).toMatchObject({ status: 'too_large', file_id: null });
      expect(fake.requests.some((r) => r.path.startsWith('/_media/'))).toBe(false);
    });
  },
  testSettings({ graphApiUrl: fake.url, channelSendRetryScheduleMs: [1_000, 5_000, 30_000] }),
);
