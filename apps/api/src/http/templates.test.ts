import { randomBytes } from 'node:crypto';
import { Channel, Contact, Message, WhatsAppTemplateList } from '@convo/core';
import { afterAll, afterEach, expect, it, vi } from 'vitest';
import { conversationsService } from '../services/conversations.js';
import { TEMPLATE_CACHE_MS } from '../services/templates.js';
import { META_ERRORS, startFakeGraphApi } from '../testing/fake-graph-api.js';
import { describeEachDialect, expectBody, expectError, testSettings } from '../testing/harness.js';

const fake = await startFakeGraphApi();
afterAll(() => fake.close());

let sequence = 0;
const digits = () => `${Date.now()}${String(++sequence).padStart(4, '0')}`;

const body = (text: string) => ({ type: 'BODY', text });
/** 230 templates in no order: three pages of Meta's 100. */
const MANY = Array.from({ length: 230 }, (_, i) => ({
  name: `notice_${String((i * 37) % 115).padStart(3, '0')}`,
  language: i % 2 === 0 ? 'en_US' : 'pt_BR',
  status: i % 5 === 0 ? 'PENDING' : 'APPROVED',
  category: 'UTILITY',
  components: [body('Hello {{1}}')],
}));

const SHIPPED = [
  {
    name: 'order_shipped',
    language: 'en_US',
    status: 'APPROVED',
    category: 'UTILITY',
    components: [
      { type: 'HEADER', format: 'IMAGE' },
      body('Hi {{1}}, order {{2}} is on its way.'),
      { type: 'FOOTER', text: 'Tostado' },
      {
        type: 'BUTTONS',
        buttons: [
          { type: 'URL', text: 'Track', url: 'https://tostado.example/track/{{1}}' },
          { type: 'QUICK_REPLY', text: 'Thanks' },
        ],
      },
    ],
  },
  { name: 'order_shipped', language: 'pt_BR', status: 'APPROVED', category: 'UTILITY', components: [body('Oi {{1}}')] },
  { name: 'spring_sale', language: 'en_US', status: 'PENDING', category: 'MARKETING', components: [body('Sale!')] },
];

/**
 * Templates (CONTRACT: Templates): a WhatsApp channel's business account lists its templates from the
 * Graph API (every page, cached a minute per channel), and a template message is checked against them
 * before it is accepted, unless the list cannot be had.
 */
describeEachDialect(
  'WhatsApp templates',
  (server) => {
    afterEach(() => {
      vi.useRealTimers();
      fake.reset();
    });

    const openChannel = async (platform: 'whatsapp' | 'facebook', businessAccountId?: string) => {
      const token = `EAAG${randomBytes(24).toString('base64url')}`;
      const channel = expectBody(
        await server().request('POST', '/channels', {
          body: {
            platform,
            external_id: digits(),
            access_token: token,
            app_secret: 'templates-app-secret-0123',
            ...(businessAccountId ? { business_account_id: businessAccountId } : {}),
          },
        }),
        201,
        Channel,
      );
      fake.connect({
        platform,
        externalId: channel.external_id,
        accessToken: token,
        appSecret: 'templates-app-secret-0123',
        webhookUrl: channel.webhook_url,
      });
      return channel;
    };
    const list = (id: string, query: Record<string, string | number> = {}) =>
      server().request('GET', `/channels/${id}/templates`, { query });
    const listRequests = (waba: string) => fake.requests.filter((r) => r.path.endsWith(`/${waba}/message_templates`));

    it('keeps a business account on WhatsApp channels only, set and cleared by PATCH', async () => {
      const waba = digits();
      const channel = await openChannel('whatsapp', waba);
      expect(channel.business_account_id).toBe(waba);
      const cleared = await server().request('PATCH', `/channels/${channel.id}`, {
        body: { business_account_id: null },
      });
      expect(expectBody(cleared, 200, Channel).business_account_id).toBeNull();
      const page = await openChannel('facebook');
      expect(page.business_account_id).toBeNull();
      expectError(
        await server().request('PATCH', `/channels/${page.id}`, { body: { business_account_id: waba } }),
        400,
        'bad_request',
        { field: 'business_account_id', constraint: 'unknown' },
      );
      expectError(
        await server().request('POST', '/channels', {
          body: {
            platform: 'instagram',
            external_id: digits(),
            access_token: 'EAAG-token',
            app_secret: 'secret-secret',
            business_account_id: waba,
          },
        }),
        400,
        'bad_request',
        { field: 'business_account_id', constraint: 'unknown' },
      );
    });

    it('lists every page of the templates by name then language, filtered by status, and keeps them a minute', async () => {
      const waba = digits();
      fake.setTemplates(waba, MANY);
      const channel = await openChannel('whatsapp', waba);
      const first = expectBody(await list(channel.id, { limit: 100 }), 200, WhatsAppTemplateList);
      expect(listRequests(waba)).toHaveLength(3);
      expect(first).toMatchObject({ total: 230, limit: 100, offset: 0, has_more: true });
      const sorted = [...MANY].sort((a, b) =>
        a.name === b.name ? a.language.localeCompare(b.language) : a.name.localeCompare(b.name),
      );
      expect(first.data).toEqual(sorted.slice(0, 100));
      const last = expectBody(await list(channel.id, { limit: 100, offset: 200 }), 200, WhatsAppTemplateList);
      expect(last.data).toEqual(sorted.slice(200));
      expect(last.has_more).toBe(false);
      const pending = expectBody(await list(channel.id, { status: 'PENDING', limit: 100 }), 200, WhatsAppTemplateList);
      expect(pending.total).toBe(46);
      expect(pending.data.every((t) => t.status === 'PENDING')).toBe(true);
      expect(listRequests(waba)).toHaveLength(3);

      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + TEMPLATE_CACHE_MS + 1);
      expectBody(await list(channel.id), 200, WhatsAppTemplateList);
      expect(listRequests(waba)).toHaveLength(6);
    });

    it('answers 400 without a business account or when Meta refuses it, 404 for no channel, 500 when Meta is down', async () => {
      const page = await openChannel('facebook');
      expectError(await list(page.id), 400, 'bad_request', { field: 'business_account_id', constraint: 'required' });
      const bare = await openChannel('whatsapp');
      expectError(await list(bare.id), 400, 'bad_request', { field: 'business_account_id', constraint: 'required' });
      expectError(await list('ch_01JDQ2F3G4H5J6K7M8N9P0Q1R2'), 404, 'not_found');
      expectError(await list(bare.id, { status: 'SOON' }), 400, 'bad_request', { field: 'status', constraint: 'enum' });
      const waba = digits();
      fake.setTemplates(waba, SHIPPED);
      const failing = await openChannel('whatsapp', waba);
      fake.failTemplates(1, META_ERRORS.invalidToken);
      expectError(await list(failing.id), 400, 'bad_request', { field: 'business_account_id', constraint: 'enum' });
      const unknown = await openChannel('whatsapp', digits());
      expectError(await list(unknown.id), 400, 'bad_request', { field: 'business_account_id', constraint: 'enum' });
      fake.failTemplates(1, { httpStatus: 503, code: 2, message: 'Service temporarily unavailable' });
      expectError(await list(failing.id), 500, 'server_error');
      expect(expectBody(await list(failing.id), 200, WhatsAppTemplateList).total).toBe(SHIPPED.length);
    });

    it('checks a template message against the approved template before accepting it', async () => {
      const waba = digits();
      fake.setTemplates(waba, SHIPPED);
      const channel = await openChannel('whatsapp', waba);
      const contact = expectBody(
        await server().request('POST', '/contacts', { body: { phone: `+3167${String(1_000_000 + ++sequence)}` } }),
        201,
        Contact,
      );
      const ctx = { database: server().database, accountId: server().accountId, settings: server().settings };
      const conversation = await conversationsService.create(ctx, {
        contact_id: contact.id,
        platform: 'whatsapp',
        channelId: channel.id,
      });
      const send = (template: Record<string, unknown>) =>
        server().request('POST', '/messages', {
          body: { conversation_id: conversation.id, type: 'template', template },
        });
      const header = { type: 'header', parameters: [{ type: 'image', image: { link: 'https://x.example/a.jpg' } }] };
      const bodyOf = (...values: string[]) => ({
        type: 'body',
        parameters: values.map((text) => ({ type: 'text', text })),
      });
      const button = { type: 'button', sub_type: 'url', index: 0, parameters: [{ type: 'text', text: '1042' }] };
      const refused = (template: Record<string, unknown>, field: string, constraint: string) =>
        send(template).then((response) => expectError(response, 400, 'bad_request', { field, constraint }));

      await refused({ name: 'order_delayed', language: 'en_US' }, 'template.name', 'enum');
      await refused({ name: 'order_shipped', language: 'de' }, 'template.language', 'enum');
      await refused({ name: 'spring_sale', language: 'en_US' }, 'template.name', 'enum');
      await refused(
        { name: 'order_shipped', language: 'en_US', components: [header, bodyOf('Marta'), button] },
        'template.components',
        'min',
      );
      await refused(
        { name: 'order_shipped', language: 'en_US', components: [header, bodyOf('Marta', '1042', 'x'), button] },
        'template.components',
        'max',
      );
      await refused(
        { name: 'order_shipped', language: 'en_US', components: [bodyOf('Marta', '1042'), button] },
        'template.components',
        'min',
      );
      await refused({ name: 'order_shipped', language: 'pt_BR' }, 'template.components', 'min');
      expect(listRequests(waba)).toHaveLength(1);

      const sent = await send({
        name: 'order_shipped',
        language: 'en_US',
        components: [header, bodyOf('Marta', '1042'), button],
      });
      expect(expectBody(sent, 201, Message)).toMatchObject({ type: 'template', content: 'order_shipped' });
    });

    it('accepts a template message as before when the templates cannot be had', async () => {
      const waba = digits();
      fake.setTemplates(waba, SHIPPED);
      const channel = await openChannel('whatsapp', waba);
      const contact = expectBody(
        await server().request('POST', '/contacts', { body: { phone: `+3168${String(1_000_000 + ++sequence)}` } }),
        201,
        Contact,
      );
      const ctx = { database: server().database, accountId: server().accountId, settings: server().settings };
      const conversation = await conversationsService.create(ctx, {
        contact_id: contact.id,
        platform: 'whatsapp',
        channelId: channel.id,
      });
      fake.failTemplates(1, 'network');
      const sent = await server().request('POST', '/messages', {
        body: { conversation_id: conversation.id, type: 'template', template: { name: 'anything', language: 'en' } },
      });
      expect(expectBody(sent, 201, Message).status).toBe('queued');
    });
  },
  testSettings({ graphApiUrl: fake.url }),
);
