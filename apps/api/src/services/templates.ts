import type { ListTemplatesQuery, MessageTemplate, WhatsAppTemplate } from '@convo/core';
import type * as z from 'zod';
import type { GraphError } from '../channels/graph-api.js';
import { fetchTemplates } from '../channels/graph-templates.js';
import { ApiError } from '../errors.js';
import { type ChannelRow, channelsRepository } from '../repositories/channels.js';
import { openChannelToken } from './channels.js';
import { type ServiceContext, page, scopeOf } from './context.js';

/**
 * WhatsApp message templates (CONTRACT: Templates): listed from the Graph API for a channel's
 * business account, kept briefly per channel, and checked before a template message is accepted.
 */

/** How long a channel's list is used before the Graph API is asked again. */
export const TEMPLATE_CACHE_MS = 60_000;

interface Cached {
  at: number;
  /** What the list was fetched for: another account id or token fetches again. */
  key: string;
  templates: WhatsAppTemplate[];
}

/** Lists by channel id (ids are unique across databases): the instances of a fleet each keep their own, briefly. */
const cache = new Map<string, Cached>();

/**
 * The Graph API could not list the templates: for the list, a 400 when Meta refused the business
 * account or the token (the channel's data is wrong), else a 500 (logged with its cause); a pass for sends.
 */
class TemplatesUnavailable extends Error {
  constructor(readonly error: GraphError | { code: string; message: string }) {
    super(`The Graph API did not list the templates: ${error.code} ${error.message}`);
    this.name = 'TemplatesUnavailable';
  }
}

/** The channel's templates, from the cache while fresh; a channel without a business account has none to list. */
async function templatesOf(ctx: ServiceContext, channel: ChannelRow & { business_account_id: string }) {
  const key = `${channel.business_account_id}:${channel.access_token_sealed}`;
  const cached = cache.get(channel.id);
  if (cached && cached.key === key && Date.now() - cached.at < TEMPLATE_CACHE_MS) return cached.templates;
  const token = openChannelToken(ctx.settings, channel);
  if (typeof token !== 'string') throw new TemplatesUnavailable(token);
  const listed = await fetchTemplates(ctx.settings, channel.business_account_id, token);
  if (!listed.ok) throw new TemplatesUnavailable(listed);
  for (const [id, entry] of cache) if (Date.now() - entry.at >= TEMPLATE_CACHE_MS) cache.delete(id);
  cache.set(channel.id, { at: Date.now(), key, templates: listed.templates });
  return listed.templates;
}

const withBusinessAccount = (channel: ChannelRow): channel is ChannelRow & { business_account_id: string } =>
  channel.platform === 'whatsapp' && channel.business_account_id !== null;

/** `{{1}}`, `{{name}}`: the distinct placeholders of a component's text. */
const placeholders = (text: unknown): number =>
  typeof text === 'string' ? new Set(text.match(/\{\{\s*[^{}]+?\s*\}\}/g) ?? []).size : 0;

/** How many parameters each part of a template takes: `header`, `body`, and `button:<index>` for URL buttons. */
function parametersOf(template: WhatsAppTemplate): Map<string, number> {
  const wanted = new Map<string, number>();
  for (const component of template.components) {
    const type = String(component.type ?? '').toUpperCase();
    if (type === 'BODY') wanted.set('body', placeholders(component.text));
    if (type === 'HEADER') {
      const format = String(component.format ?? 'TEXT').toUpperCase();
      wanted.set('header', format === 'TEXT' ? placeholders(component.text) : 1);
    }
    if (type === 'BUTTONS' && Array.isArray(component.buttons))
      component.buttons.forEach((button: unknown, index) => {
        const { url } = (button ?? {}) as { url?: unknown };
        const count = placeholders(url);
        if (count > 0) wanted.set(`button:${index}`, count);
      });
  }
  return wanted;
}

/** Checks a template message against the template Meta approved; throws the contract's 400s. */
function checkAgainst(templates: WhatsAppTemplate[], sent: MessageTemplate): void {
  const named = templates.filter((t) => t.name === sent.name);
  if (named.length === 0)
    throw ApiError.badRequest('template.name', 'enum', `The channel's business account has no template "${sent.name}"`);
  const template = named.find((t) => t.language === sent.language);
  if (!template)
    throw ApiError.badRequest(
      'template.language',
      'enum',
      `Template "${sent.name}" is in ${named.map((t) => t.language).join(', ')}, not ${sent.language}`,
    );
  if (template.status !== 'APPROVED')
    throw ApiError.badRequest(
      'template.name',
      'enum',
      `Template "${sent.name}" (${sent.language}) is ${template.status}: only APPROVED templates can be sent`,
    );
  const wanted = parametersOf(template);
  const given = new Map<string, number>();
  for (const component of sent.components ?? []) {
    const part = component.type === 'button' ? `button:${component.index ?? 0}` : component.type;
    given.set(part, (given.get(part) ?? 0) + (component.parameters?.length ?? 0));
  }
  for (const part of new Set([...wanted.keys(), ...given.keys()])) {
    const want = wanted.get(part) ?? 0;
    const got = given.get(part) ?? 0;
    if (got === want) continue;
    const where = part.startsWith('button:') ? `button ${part.slice(7)}` : part;
    throw ApiError.badRequest(
      'template.components',
      got < want ? 'min' : 'max',
      `Template "${sent.name}" takes ${want} parameter${want === 1 ? '' : 's'} in its ${where}; ${got} given`,
    );
  }
}

export const templatesService = {
  /** `GET /v1/channels/:id/templates`: filtered by status, by name then language, a page of them. */
  async list(ctx: ServiceContext, input: { id: string; query: z.output<typeof ListTemplatesQuery> }) {
    const channel = await channelsRepository.findById(scopeOf(ctx), input.id);
    if (!channel) throw ApiError.notFound('channel', input.id);
    if (!withBusinessAccount(channel))
      throw ApiError.badRequest(
        'business_account_id',
        'required',
        channel.platform === 'whatsapp'
          ? 'Give the channel its business_account_id (PATCH /v1/channels/:id) to list its templates'
          : 'Only WhatsApp channels have message templates',
      );
    const { status, limit, offset } = input.query;
    let templates: WhatsAppTemplate[];
    try {
      templates = await templatesOf(ctx, channel);
    } catch (error) {
      const refused =
        error instanceof TemplatesUnavailable && !('kind' in error.error && error.error.kind === 'retryable');
      if (!refused) throw error;
      throw ApiError.badRequest(
        'business_account_id',
        'enum',
        `The Graph API refused to list the templates of business account ${channel.business_account_id} with the channel's token: ${error.error.message}`,
      );
    }
    const all = templates
      .filter((t) => status === undefined || t.status === status)
      .sort((a, b) => (a.name === b.name ? cmp(a.language, b.language) : cmp(a.name, b.name)));
    return page(all.slice(offset, offset + limit), all.length, limit, offset);
  },

  /**
   * Before a template message is accepted on a WhatsApp channel with a business account: its name,
   * language, approval and parameter counts. When the list cannot be had, the platform decides.
   */
  async checkSend(ctx: ServiceContext, input: { channelId: string | null; template: MessageTemplate }): Promise<void> {
    if (input.channelId === null) return;
    const channel = await channelsRepository.findById(scopeOf(ctx), input.channelId);
    if (!channel || !withBusinessAccount(channel)) return;
    let templates: WhatsAppTemplate[];
    try {
      templates = await templatesOf(ctx, channel);
    } catch (error) {
      if (error instanceof TemplatesUnavailable) return;
      throw error;
    }
    checkAgainst(templates, input.template);
  },
};

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
