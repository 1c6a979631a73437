import { createHmac, timingSafeEqual } from 'node:crypto';
import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeChannelInput, type FakeGraphApi, META_ERRORS, startFakeGraphApi } from './fake-graph-api.js';
import {
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
} from './meta-payloads.js';

/**
 * One webhook as Convo's endpoint would see it: the exact bytes, headers, and whether Meta's HMAC of them checks out.
 */
interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  json: any;
  signatureValid: boolean;
}

/** `fetch` types JSON bodies as unknown; these tests index into Meta's bodies freely. */
const json = (res: Response): Promise<any> => res.json();

const SECRETS: Record<string, string> = { wa: 'wa-secret', fb: 'fb-secret', ig: 'ig-secret' };

/**
 * A tiny stand-in for Convo's `/hooks/meta/:channel_id`: checks the signature of the raw body and refuses the webhook
 * when it fails.
 */
async function startReceiver(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const channel = (req.url ?? '').split('/').pop() ?? '';
      const expected = Buffer.from(
        `sha256=${createHmac('sha256', SECRETS[channel] ?? '')
          .update(raw)
          .digest('hex')}`,
      );
      const given = Buffer.from(String(req.headers['x-hub-signature-256'] ?? ''));
      const signatureValid = given.length === expected.length && timingSafeEqual(given, expected);
      received.push({
        path: req.url ?? '',
        headers: req.headers,
        raw,
        json: JSON.parse(raw.toString('utf8')),
        signatureValid,
      });
      res.writeHead(signatureValid ? 200 : 401).end(signatureValid ? 'EVENT_RECEIVED' : 'bad signature');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('fake Graph API', () => {
  let fake: FakeGraphApi;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let channels: Record<'wa' | 'fb' | 'ig', FakeChannelInput>;

  beforeAll(async () => {
    [fake, receiver] = await Promise.all([startFakeGraphApi(), startReceiver()]);
    channels = {
      wa: {
        platform: 'whatsapp',
        externalId: '106540352242922',
        accessToken: 'wa-token',
        appSecret: SECRETS.wa ?? '',
        webhookUrl: `${receiver.url}/hooks/meta/wa`,
      },
      fb: {
        platform: 'facebook',
        externalId: '682498302938465',
        accessToken: 'fb-token',
        appSecret: SECRETS.fb ?? '',
        webhookUrl: `${receiver.url}/hooks/meta/fb`,
      },
      ig: {
        platform: 'instagram',
        externalId: '17841400000000000',
        accessToken: 'ig-token',
        appSecret: SECRETS.ig ?? '',
        webhookUrl: `${receiver.url}/hooks/meta/ig`,
      },
    };
  });
  afterAll(async () => {
    await fake.close();
    await receiver.close();
  });
  beforeEach(() => {
    fake.reset();
    receiver.received.length = 0;
    for (const channel of Object.values(channels)) fake.connect(channel);
  });

  const send = (id: string, token: string | null, body: unknown, version = 'v21.0') =>
    fetch(`${fake.url}/${version}/${id}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
      body: JSON.stringify(body),
    });
  const waTextBody = (text = 'Hello') => ({
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: '+16505551234',
    type: 'text',
    text: { body: text },
  });
  const fbTextBody = (text = 'Hello') => ({
    recipient: { id: '24036950000000' },
    messaging_type: 'RESPONSE',
    message: { text },
  });

  describe('sends', () => {
    it('answers a WhatsApp text send with the Cloud API body and a fresh wamid, and records the request', async () => {
      const before = Date.now();
      const res = await send(channels.wa.externalId, 'wa-token', waTextBody());
      expect(res.status).toBe(200);
      const body = await json(res);
      expect(body).toEqual({
        messaging_product: 'whatsapp',
        contacts: [{ input: '+16505551234', wa_id: '16505551234' }],
        messages: [{ id: expect.any(String) }],
      });
      expect(body.messages[0].id).toMatch(/^wamid\./);

      expect(fake.requests).toHaveLength(1);
      const [request] = fake.requests;
      const path = `/v21.0/${channels.wa.externalId}/messages`;
      expect(request).toMatchObject({ method: 'POST', path, externalId: channels.wa.externalId, isSend: true });
      expect(request?.headers.authorization).toBe('Bearer wa-token');
      expect(request?.body).toEqual(waTextBody());
      expect(request?.at).toBeGreaterThanOrEqual(before);

      expect(fake.sent()).toEqual([
        expect.objectContaining({
          platform: 'whatsapp',
          externalId: channels.wa.externalId,
          to: '+16505551234',
          type: 'text',
          platformId: body.messages[0].id,
        }),
      ]);
    });

    it('accepts any Graph version and marks template sends accepted', async () => {
      const res = await send(
        channels.wa.externalId,
        'wa-token',
        {
          messaging_product: 'whatsapp',
          to: '16505551234',
          type: 'template',
          template: {
            name: 'order_update',
            language: { code: 'en_US' },
            components: [{ type: 'body', parameters: [{ type: 'text', text: 'A1' }] }],
          },
        },
        'v99.0',
      );
      expect(res.status).toBe(200);
      expect((await json(res)).messages[0]).toEqual({
        id: expect.stringMatching(/^wamid\./),
        message_status: 'accepted',
      });
    });

    it('rejects WhatsApp bodies Meta would reject, with code 100 and WhatsApp error_data', async () => {
      const cases: unknown[] = [
        { to: '16505551234', type: 'text', text: { body: 'x' } },
        { messaging_product: 'whatsapp', type: 'text', text: { body: 'x' } },
        { messaging_product: 'whatsapp', to: '1', type: 'carrier_pigeon' },
        { messaging_product: 'whatsapp', to: '1', type: 'text', text: {} },
        { messaging_product: 'whatsapp', to: '1', type: 'template', template: { name: 'x', language: {} } },
        { messaging_product: 'whatsapp', to: '1', type: 'image', image: { caption: 'no id or link' } },
      ];
      for (const body of cases) {
        const res = await send(channels.wa.externalId, 'wa-token', body);
        expect(res.status).toBe(400);
        const { error } = await json(res);
        expect(error).toMatchObject({ type: 'OAuthException', code: 100, fbtrace_id: expect.any(String) });
      }
      const res = await send(channels.wa.externalId, 'wa-token', {
        messaging_product: 'whatsapp',
        to: '1',
        type: 'image',
        image: {},
      });
      expect((await json(res)).error.error_data).toEqual({
        messaging_product: 'whatsapp',
        details: expect.any(String),
      });
      expect(fake.sent()).toEqual([]);
    });

    it('answers a Messenger send with recipient_id and an m_ message id, JSON or form-encoded', async () => {
      const res = await send(channels.fb.externalId, 'fb-token', fbTextBody());
      expect(res.status).toBe(200);
      const body = await json(res);
      expect(body).toEqual({ recipient_id: '24036950000000', message_id: expect.stringMatching(/^m_/) });

      // Meta's own curl examples post form fields with single-quoted JSON values.
      const form = new URLSearchParams({
        recipient: "{'id':'24036950000001'}",
        messaging_type: 'UPDATE',
        message: "{'text':'hello, world'}",
      });
      const formRes = await fetch(`${fake.url}/v21.0/${channels.fb.externalId}/messages?access_token=fb-token`, {
        method: 'POST',
        body: form,
      });
      expect(formRes.status).toBe(200);
      expect((await json(formRes)).recipient_id).toBe('24036950000001');
      expect(fake.sent(channels.fb.externalId).map((s) => s.to)).toEqual(['24036950000000', '24036950000001']);
    });

    it('requires messaging_type on Messenger but not on Instagram, and resolves /me through the token', async () => {
      const noType = { recipient: { id: '24036950000000' }, message: { text: 'hi' } };
      const fbRes = await send(channels.fb.externalId, 'fb-token', noType);
      expect(fbRes.status).toBe(400);
      expect((await json(fbRes)).error.code).toBe(100);

      const igRes = await send('me', 'ig-token', noType);
      expect(igRes.status).toBe(200);
      expect(fake.sent(channels.ig.externalId)).toHaveLength(1);

      const empty = await send(channels.ig.externalId, 'ig-token', { recipient: { id: '1' }, message: {} });
      expect(empty.status).toBe(400);
      const attachment = await send(channels.fb.externalId, 'fb-token', {
        recipient: { id: '1' },
        messaging_type: 'RESPONSE',
        message: { attachment: { type: 'image', payload: { url: 'https://example.com/a.png', is_reusable: true } } },
      });
      expect(attachment.status).toBe(200);
    });

    it('answers sender actions without a message id and does not count them as sends', async () => {
      const res = await send(channels.fb.externalId, 'fb-token', {
        recipient: { id: '1' },
        sender_action: 'typing_on',
      });
      expect(await json(res)).toEqual({ recipient_id: '1' });
      expect(fake.sent()).toEqual([]);
    });
  });

  describe('auth and unknown objects', () => {
    it("answers a missing or wrong token with Meta's 401 code-190 OAuthException", async () => {
      for (const token of [null, 'nope', 'fb-token']) {
        const res = await send(channels.wa.externalId, token, waTextBody());
        expect(res.status).toBe(401);
        const { error } = await json(res);
        expect(error).toMatchObject({
          type: 'OAuthException',
          code: 190,
          message: expect.any(String),
          fbtrace_id: expect.any(String),
        });
      }
      expect(fake.sent()).toEqual([]);
    });

    it('answers an unknown id with code 100, subcode 33', async () => {
      const res = await send('999999999', 'wa-token', waTextBody());
      expect(res.status).toBe(400);
      expect((await json(res)).error).toMatchObject({ type: 'GraphMethodException', code: 100, error_subcode: 33 });
    });
  });

  describe('scripted failures and delay', () => {
    it('fails the next sends with the scripted errors, one each, then succeeds', async () => {
      fake.failNext(2, META_ERRORS.whatsappThroughput);
      for (let i = 0; i < 2; i++) {
        const res = await send(channels.wa.externalId, 'wa-token', waTextBody());
        expect(res.status).toBe(400);
        expect((await json(res)).error).toMatchObject({
          message: '(#130429) Rate limit hit',
          type: 'OAuthException',
          code: 130429,
          error_data: { messaging_product: 'whatsapp', details: expect.any(String) },
        });
      }
      expect((await send(channels.wa.externalId, 'wa-token', waTextBody())).status).toBe(200);
      expect(fake.requests.filter((r) => r.isSend)).toHaveLength(3);
      expect(fake.sent()).toHaveLength(1);
    });

    it('keeps a failure scoped to one channel for that channel', async () => {
      fake.failNext(1, META_ERRORS.messengerUserUnavailable, { externalId: channels.fb.externalId });
      expect((await send(channels.wa.externalId, 'wa-token', waTextBody())).status).toBe(200);
      const res = await send(channels.fb.externalId, 'fb-token', fbTextBody());
      expect(res.status).toBe(400);
      expect((await json(res)).error).toMatchObject({ code: 551, error_subcode: 1545041 });
    });

    it("makes fetch reject on a 'network' failure, then answers normally", async () => {
      fake.failNext(1, 'network');
      await expect(send(channels.wa.externalId, 'wa-token', waTextBody())).rejects.toThrow();
      expect((await send(channels.wa.externalId, 'wa-token', waTextBody())).status).toBe(200);
      expect(fake.requests).toHaveLength(2);
    });

    it('delays answers by the set delay', async () => {
      fake.setDelay(150);
      const started = Date.now();
      expect((await send(channels.wa.externalId, 'wa-token', waTextBody())).status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    });

    it('records arrival times so a per-channel send rate can be checked', async () => {
      await Promise.all([1, 2, 3].map(() => send(channels.wa.externalId, 'wa-token', waTextBody())));
      await send(channels.fb.externalId, 'fb-token', fbTextBody());
      expect(fake.maxSendsInWindow(channels.wa.externalId, 60_000)).toBe(3);
      expect(fake.maxSendsInWindow(channels.fb.externalId, 60_000)).toBe(1);
      expect(fake.requests.every((r) => typeof r.at === 'number')).toBe(true);
    });
  });

  describe('status webhooks', () => {
    it('posts WhatsApp sent, delivered and read statuses in order, signed with the app secret', async () => {
      fake.autoStatuses(channels.wa.externalId, ['sent', 'delivered', 'read']);
      const res = await send(channels.wa.externalId, 'wa-token', waTextBody());
      const wamid = (await json(res)).messages[0].id;
      await fake.idle();

      expect(receiver.received).toHaveLength(3);
      for (const hook of receiver.received) {
        expect(hook.signatureValid).toBe(true);
        expect(hook.path).toBe('/hooks/meta/wa');
        expect(hook.headers['content-type']).toBe('application/json');
        expect(hook.json.object).toBe('whatsapp_business_account');
        expect(hook.json.entry[0].changes[0].field).toBe('messages');
        expect(hook.json.entry[0].changes[0].value.metadata.phone_number_id).toBe(channels.wa.externalId);
      }
      const statuses = receiver.received.map((h) => h.json.entry[0].changes[0].value.statuses[0]);
      expect(statuses.map((s) => s.status)).toEqual(['sent', 'delivered', 'read']);
      for (const s of statuses)
        expect(s).toMatchObject({
          id: wamid,
          recipient_id: '16505551234',
          timestamp: expect.stringMatching(/^\d{10}$/),
        });
      expect(fake.webhooks.map((w) => w.status)).toEqual([200, 200, 200]);
    });

    it('posts Messenger delivery then read, and Instagram only read (Meta sends Instagram no delivery receipts)', async () => {
      fake.connect({ ...channels.fb, statusesAfterSend: ['sent', 'delivered', 'read'] });
      fake.connect({ ...channels.ig, statusesAfterSend: ['sent', 'delivered', 'read'] });
      const mid = (await json(await send(channels.fb.externalId, 'fb-token', fbTextBody()))).message_id;
      await fake.idle();
      const igMid = (await json(await send(channels.ig.externalId, 'ig-token', fbTextBody()))).message_id;
      await fake.idle();

      expect(receiver.received.map((h) => [h.path, h.signatureValid])).toEqual([
        ['/hooks/meta/fb', true],
        ['/hooks/meta/fb', true],
        ['/hooks/meta/ig', true],
      ]);
      const [delivery, read, igRead] = receiver.received.map((h) => h.json);
      expect(delivery.object).toBe('page');
      expect(delivery.entry[0].messaging[0]).toEqual({
        sender: { id: '24036950000000' },
        recipient: { id: channels.fb.externalId },
        delivery: { mids: [mid], watermark: expect.any(Number) },
      });
      expect(read.entry[0].messaging[0]).toMatchObject({
        sender: { id: '24036950000000' },
        timestamp: expect.any(Number),
        read: { watermark: expect.any(Number) },
      });
      expect(igRead.object).toBe('instagram');
      expect(igRead.entry[0].messaging[0].read).toEqual({ mid: igMid });
    });

    it('signs posted webhooks so a receiver can verify them, and can sign them wrong on purpose', async () => {
      const body = whatsappStatuses({
        phoneNumberId: channels.wa.externalId,
        statuses: [{ id: 'wamid.X', status: 'read', recipientId: '1' }],
      });
      expect(await fake.postWebhook(channels.wa.externalId, body)).toEqual({ status: 200, text: 'EVENT_RECEIVED' });
      expect(receiver.received[0]?.headers['x-hub-signature-256']).toBe(
        signMetaPayload(SECRETS.wa ?? '', receiver.received[0]?.raw ?? ''),
      );
      expect((await fake.postWebhook(channels.wa.externalId, body, { appSecret: 'wrong' })).status).toBe(401);
      expect((await fake.postWebhook(channels.wa.externalId, body, { signature: null })).status).toBe(401);
    });

    it('sends an inbound text in each platform’s shape', async () => {
      const wa = await fake.sendInbound(channels.wa.externalId, {
        from: '16505551234',
        name: 'Sheena Nelson',
        text: 'Hi there',
      });
      const fb = await fake.sendInbound(channels.fb.externalId, {
        from: '24036950000000',
        name: 'Ada Lovelace',
        text: 'Hi page',
      });
      const ig = await fake.sendInbound(channels.ig.externalId, { from: '1789000000', text: 'Hi insta' });
      expect([wa.status, fb.status, ig.status]).toEqual([200, 200, 200]);
      const [waHook, fbHook, igHook] = receiver.received.map((h) => h.json);
      expect(waHook.entry[0].changes[0].value.contacts).toEqual([
        { profile: { name: 'Sheena Nelson' }, wa_id: '16505551234' },
      ]);
      const waMessage = waHook.entry[0].changes[0].value.messages[0];
      expect(waMessage).toMatchObject({
        from: '16505551234',
        id: wa.messageId,
        type: 'text',
        text: { body: 'Hi there' },
      });
      expect(fbHook.entry[0].messaging[0]).toMatchObject({
        sender: { id: '24036950000000' },
        message: { mid: fb.messageId, text: 'Hi page' },
      });
      expect(igHook).toMatchObject({
        object: 'instagram',
        entry: [{ id: channels.ig.externalId, messaging: [{ message: { text: 'Hi insta' } }] }],
      });

      // Messenger webhooks carry no name, so the fake serves the one given through the profile lookup.
      const profile = await fetch(`${fake.url}/v21.0/24036950000000?fields=first_name,last_name`, {
        headers: { authorization: 'Bearer fb-token' },
      });
      expect(await json(profile)).toEqual({ first_name: 'Ada', last_name: 'Lovelace', id: '24036950000000' });
    });
  });

  describe('control API', () => {
    it('connects a channel, posts an inbound message to Convo and lists what was sent', async () => {
      const connect = await fetch(`${fake.url}/_fake/connect`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          platform: 'whatsapp',
          externalId: '555',
          accessToken: 'hand-token',
          appSecret: SECRETS.wa,
          webhookUrl: `${receiver.url}/hooks/meta/wa`,
        }),
      });
      expect(connect.status).toBe(200);

      const inbound = await fetch(`${fake.url}/_fake/inbound`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ external_id: '555', from: '16505551234', name: 'Sheena', text: 'By hand' }),
      });
      expect(inbound.status).toBe(200);
      expect(await json(inbound)).toMatchObject({
        status: 200,
        text: 'EVENT_RECEIVED',
        message_id: expect.stringMatching(/^wamid\./),
      });
      expect(receiver.received[0]?.json.entry[0].changes[0].value.metadata.phone_number_id).toBe('555');

      await send('555', 'hand-token', waTextBody('Reply'));
      const sent = await json(await fetch(`${fake.url}/_fake/sent`));
      expect(sent).toEqual([
        expect.objectContaining({
          externalId: '555',
          to: '+16505551234',
          platformId: expect.stringMatching(/^wamid\./),
        }),
      ]);
      expect(fake.requests.some((r) => r.path.startsWith('/_fake/'))).toBe(false);
    });

    it('refuses bad control input', async () => {
      const headers = { 'content-type': 'application/json' };
      const res = await fetch(`${fake.url}/_fake/connect`, { method: 'POST', headers, body: '{"platform":"sms"}' });
      expect(res.status).toBe(400);
      const nobody = JSON.stringify({ external_id: 'nobody', from: '1', text: 'x' });
      const inbound = await fetch(`${fake.url}/_fake/inbound`, { method: 'POST', headers, body: nobody });
      expect(inbound.status).toBe(404);
    });
  });
});

describe('Meta payload builders', () => {
  const keys = (value: unknown) => Object.keys(value as object).sort();

  it('builds WhatsApp inbound messages with the field names of the messages webhook reference', () => {
    const common = { from: '16505551234', timestamp: '1749416383' };
    const body = whatsappInbound({
      phoneNumberId: '106540352242922',
      contacts: [{ waId: '16505551234', name: 'Sheena Nelson' }],
      messages: [
        waText({ ...common, body: 'hi' }),
        waImage({ ...common, caption: 'Taj Mahal' }),
        waVideo(common),
        waAudio(common),
        waDocument({ ...common, filename: 'receipt.pdf' }),
        waSticker(common),
        waLocation({ ...common, latitude: 37.44, longitude: -122.16, name: 'Philz Coffee', address: '101 Forest Ave' }),
        waReaction({ ...common, messageId: 'wamid.A', emoji: '👍' }),
        waUnsupported({ ...common, unsupportedType: 'poll_creation' }),
      ],
    });
    expect(keys(body)).toEqual(['entry', 'object']);
    expect(body.object).toBe('whatsapp_business_account');
    expect(keys(body.entry[0])).toEqual(['changes', 'id']);
    const change = body.entry[0]?.changes[0];
    expect(change?.field).toBe('messages');
    expect(keys(change?.value)).toEqual(['contacts', 'messages', 'messaging_product', 'metadata']);
    expect(keys(change?.value.metadata)).toEqual(['display_phone_number', 'phone_number_id']);
    expect(change?.value.contacts).toEqual([{ profile: { name: 'Sheena Nelson' }, wa_id: '16505551234' }]);

    const [text, image, video, audio, document, sticker, location, reaction, unsupported] =
      change?.value.messages ?? [];
    expect(keys(text)).toEqual(['from', 'id', 'text', 'timestamp', 'type']);
    expect(text?.timestamp).toBe('1749416383');
    expect(text?.id).toMatch(/^wamid\./);
    expect(keys(image?.image)).toEqual(['caption', 'id', 'mime_type', 'sha256']);
    expect(keys(video?.video)).toEqual(['id', 'mime_type', 'sha256']);
    expect(keys(audio?.audio)).toEqual(['id', 'mime_type', 'sha256', 'voice']);
    expect(keys(document?.document)).toEqual(['filename', 'id', 'mime_type', 'sha256']);
    expect(keys(sticker?.sticker)).toEqual(['animated', 'id', 'mime_type', 'sha256']);
    expect(location?.location).toEqual({
      address: '101 Forest Ave',
      latitude: 37.44,
      longitude: -122.16,
      name: 'Philz Coffee',
    });
    expect(reaction?.reaction).toEqual({ message_id: 'wamid.A', emoji: '👍' });
    expect(unsupported).toMatchObject({ type: 'unsupported', unsupported: { type: 'poll_creation' } });
    expect(unsupported?.errors).toEqual([
      {
        code: 131051,
        title: 'Message type unknown',
        message: 'Message type unknown',
        error_data: { details: 'Message type is currently not supported.' },
      },
    ]);
    expect(waReaction({ from: '1', messageId: 'wamid.A' }).reaction).toEqual({ message_id: 'wamid.A' });
  });

  it('builds WhatsApp statuses, failed ones with errors', () => {
    const body = whatsappStatuses({
      phoneNumberId: '106540352242922',
      statuses: [
        { id: 'wamid.A', status: 'sent', recipientId: '16505551234', timestamp: '1750857384' },
        {
          id: 'wamid.B',
          status: 'failed',
          recipientId: '16505551234',
          errors: [{ code: 131047, title: 'Re-engagement message', details: 'More than 24 hours' }],
        },
      ],
    });
    const value = body.entry[0]?.changes[0]?.value;
    expect(keys(value)).toEqual(['messaging_product', 'metadata', 'statuses']);
    const [sent, failed] = value?.statuses ?? [];
    expect(keys(sent)).toEqual(['id', 'pricing', 'recipient_id', 'status', 'timestamp']);
    expect(keys(failed)).toEqual(['errors', 'id', 'recipient_id', 'status', 'timestamp']);
    expect(keys(failed?.errors?.[0])).toEqual(['code', 'error_data', 'href', 'message', 'title']);
    expect(failed?.errors?.[0]?.error_data).toEqual({ details: 'More than 24 hours' });
  });

  it('batches WhatsApp bodies as separate entries or as changes of one entry', () => {
    const a = whatsappInbound({
      phoneNumberId: '1',
      contacts: [{ waId: '2' }],
      messages: [waText({ from: '2', body: 'a' })],
    });
    const b = whatsappStatuses({ phoneNumberId: '1', statuses: [{ id: 'wamid.A', status: 'read', recipientId: '2' }] });
    expect(batchWebhooks([a, b]).entry).toHaveLength(2);
    const merged = batchWebhooks([a, b], { sameEntry: true });
    expect(merged.entry).toHaveLength(1);
    expect(merged.entry[0]?.changes).toHaveLength(2);
    expect(a.entry[0]?.changes[0]?.value.contacts).toEqual([{ wa_id: '2' }]);
  });

  it('builds Messenger and Instagram events with the field names of their webhook references', () => {
    const at = { from: 'PSID', to: 'PAGE', timestamp: 1458692752478 };
    const body = messengerInbound({
      pageId: 'PAGE',
      time: 1458692752478,
      events: [
        messagingText({ ...at, text: 'hello, world!' }),
        messagingAttachments({
          ...at,
          attachments: [
            { type: 'image', url: 'https://cdn/x.jpg' },
            { type: 'file', url: 'https://cdn/y.pdf' },
          ],
        }),
        messengerSticker({ ...at, stickerId: 369239263222822, url: 'https://cdn/like.png' }),
        messagingReaction({ ...at, mid: 'm_A', emoji: '❤️', reaction: 'love' }),
        messengerDelivery({ from: 'PSID', to: 'PAGE', mids: ['m_A'], watermark: 1458668856253 }),
        messengerRead({ ...at, watermark: 1458668856253 }),
      ],
    });
    expect(body.object).toBe('page');
    expect(body.entry).toHaveLength(6);
    for (const entry of body.entry) {
      expect(keys(entry)).toEqual(['id', 'messaging', 'time']);
      expect(entry.messaging).toHaveLength(1);
    }
    const [text, attachments, sticker, reaction, delivery, read] = body.entry.map((e) => e.messaging[0]);
    expect(keys(text)).toEqual(['message', 'recipient', 'sender', 'timestamp']);
    expect(keys(text?.message)).toEqual(['mid', 'text']);
    expect(attachments?.message).toMatchObject({
      attachments: [
        { type: 'image', payload: { url: 'https://cdn/x.jpg' } },
        { type: 'file', payload: { url: 'https://cdn/y.pdf' } },
      ],
    });
    expect(sticker?.message).toMatchObject({
      sticker_id: 369239263222822,
      attachments: [{ type: 'image', payload: { url: 'https://cdn/like.png', sticker_id: 369239263222822 } }],
    });
    expect(reaction?.reaction).toEqual({ reaction: 'love', emoji: '❤️', action: 'react', mid: 'm_A' });
    expect(delivery).toEqual({
      sender: { id: 'PSID' },
      recipient: { id: 'PAGE' },
      delivery: { mids: ['m_A'], watermark: 1458668856253 },
    });
    expect(read?.read).toEqual({ watermark: 1458668856253 });

    const ig = instagramInbound({
      igId: 'IGID',
      events: [
        messagingText({ from: 'IGSID', to: 'IGID', text: 'hi' }),
        instagramRead({ from: 'IGSID', to: 'IGID', mid: 'm_B' }),
      ],
    });
    expect(ig.object).toBe('instagram');
    const igEvents = ig.entry.map((e) => e.messaging[0]?.read ?? e.messaging[0]?.message);
    expect(igEvents).toEqual([{ mid: expect.stringMatching(/^m_/), text: 'hi' }, { mid: 'm_B' }]);
    expect(typeof ig.entry[0]?.time).toBe('number');
    expect(batchWebhooks([ig, ig]).entry).toHaveLength(4);
    expect(() => batchWebhooks([body, ig])).toThrow();
  });

  it('signs the raw body as sha256=<hex HMAC>', () => {
    expect(signMetaPayload('secret', '{"a":1}')).toBe(
      `sha256=${createHmac('sha256', 'secret').update('{"a":1}').digest('hex')}`,
    );
    expect(signMetaPayload('secret', '{"a":1}')).toMatch(/^sha256=[0-9a-f]{64}$/);
  });
});
