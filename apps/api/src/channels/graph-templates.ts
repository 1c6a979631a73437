import type { WhatsAppTemplate } from '@convo/core';
import type { Settings } from '../settings.js';
import { type GraphError, networkFailure } from './graph-api.js';
import { fetchJson } from './graph-media.js';

// Lists a WhatsApp Business Account's message templates from the Graph API, every page of them.
// https://developers.facebook.com/documentation/business-messaging/whatsapp/reference/whatsapp-business-account/message-templates-api

/** Meta's largest page for templates; an account has at most a few hundred. */
const PAGE_SIZE = 100;
/** A loop guard: a `next` link that never ends is not followed past this. */
const MAX_PAGES = 50;

const FIELDS = 'name,language,status,category,components';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** One listed template in the contract's shape, or undefined for an entry that is not one. */
function templateOf(item: unknown): WhatsAppTemplate | undefined {
  if (!isRecord(item) || typeof item.name !== 'string' || typeof item.language !== 'string') return undefined;
  return {
    name: item.name,
    language: item.language,
    status: typeof item.status === 'string' ? item.status : 'UNKNOWN',
    category: typeof item.category === 'string' ? item.category : 'UNKNOWN',
    components: Array.isArray(item.components) ? item.components.filter(isRecord) : [],
  };
}

/**
 * Every template of the business account, following Meta's `paging.next` links (only to the Graph API
 * address this server talks to). Never throws: a network failure is a retryable error.
 */
export async function fetchTemplates(
  settings: Pick<Settings, 'graphApiUrl' | 'graphApiVersion'>,
  businessAccountId: string,
  accessToken: string,
): Promise<{ ok: true; templates: WhatsAppTemplate[] } | GraphError> {
  const base = settings.graphApiUrl.replace(/\/+$/, '');
  const first = `${base}/${settings.graphApiVersion}/${encodeURIComponent(businessAccountId)}/message_templates`;
  let url: string | undefined = `${first}?fields=${FIELDS}&limit=${PAGE_SIZE}`;
  const templates: WhatsAppTemplate[] = [];
  for (let pages = 0; url !== undefined && pages < MAX_PAGES; pages++) {
    const answer = await fetchJson(url, accessToken);
    if (!answer.ok) return answer;
    const json = isRecord(answer.json) ? answer.json : {};
    if (!Array.isArray(json.data))
      return networkFailure('permanent', 'unexpected_response', 'The Graph API listed no templates (no data)');
    for (const item of json.data) {
      const template = templateOf(item);
      if (template) templates.push(template);
    }
    const next = isRecord(json.paging) ? json.paging.next : undefined;
    url = typeof next === 'string' && next.startsWith(`${base}/`) ? next : undefined;
  }
  return { ok: true, templates };
}
