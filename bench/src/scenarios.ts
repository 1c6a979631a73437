import type { Samples } from './data.js';
import type { Dialect } from './options.js';

export type ScenarioKind = 'list' | 'search' | 'get' | 'write';

export interface Scenario {
  name: string;
  /** The request as the report shows it. */
  title: string;
  kind: ScenarioKind;
  method: 'GET' | 'POST';
  /** Requests rotate through these paths (and bodies), one after the other across all connections. */
  paths: string[];
  bodies?: string[];
  /** What it measures, for the README and the report. */
  measures: string;
}

/** The seven scenarios of the issue, with the data set's samples filled in. */
export function buildScenarios(samples: Samples): Scenario[] {
  return [
    {
      name: 'list_active',
      title: 'GET /v1/conversations?status=active',
      kind: 'list',
      method: 'GET',
      paths: ['/v1/conversations?status=active'],
      measures: 'first page of a status filter, newest activity first, with the exact total',
    },
    {
      name: 'list_offset',
      title: 'GET /v1/conversations?platform=whatsapp&status=resolved&offset=2000',
      kind: 'list',
      method: 'GET',
      paths: ['/v1/conversations?platform=whatsapp&status=resolved&offset=2000'],
      measures: 'a deep page (offset 2000) of two filters combined, with the exact total',
    },
    {
      name: 'search_name',
      title: `GET /v1/conversations?search=${samples.nameFragment}`,
      kind: 'search',
      method: 'GET',
      paths: [`/v1/conversations?search=${encodeURIComponent(samples.nameFragment)}`],
      measures: `substring of the contact's name (3 letters, ${samples.nameFragmentContacts} contacts, ${samples.nameFragmentConversations} conversations match), with the total`,
    },
    {
      name: 'search_phone',
      title: `GET /v1/conversations?search=${samples.phoneDigits}`,
      kind: 'search',
      method: 'GET',
      paths: [`/v1/conversations?search=${encodeURIComponent(samples.phoneDigits)}`],
      measures: `substring of the phone's digits (7 digits, ${samples.phoneDigitsConversations} conversations match), with the total`,
    },
    {
      name: 'get_by_id',
      title: 'GET /v1/conversations/:id',
      kind: 'get',
      method: 'GET',
      paths: samples.conversationIds.map((id) => `/v1/conversations/${id}`),
      measures: `one conversation with its contact, rotating over ${samples.conversationIds.length} ids`,
    },
    {
      name: 'contacts_tag',
      title: 'GET /v1/contacts?tag=vip',
      kind: 'list',
      method: 'GET',
      paths: ['/v1/contacts?tag=vip'],
      measures: `first page of contacts with a tag (${samples.counts.vipContacts} have it), newest first, with the exact total`,
    },
    {
      name: 'post_message',
      title: 'POST /v1/messages',
      kind: 'write',
      method: 'POST',
      paths: ['/v1/messages'],
      bodies: samples.openConversationIds.map((id, i) =>
        JSON.stringify({ conversation_id: id, content: `Your order is on its way (bench ${i})` }),
      ),
      measures: `an outbound text message into one of ${samples.openConversationIds.length} open conversations (insert + conversation update in one transaction)`,
    },
  ];
}

export interface TargetCheck {
  /** What the target says, e.g. `≥ 3× reference`. */
  rule: string;
  met: boolean | null;
}

export interface Measured {
  rps: number;
  p99: number;
}

/** The targets: ratios to the reference in the same run, and two absolute bounds. */
export function checkTarget(kind: ScenarioKind, dialect: Dialect, real: Measured, reference: Measured): TargetCheck {
  const ratio = reference.rps > 0 ? real.rps / reference.rps : Number.POSITIVE_INFINITY;
  switch (kind) {
    case 'get':
      return { rule: '≥ 0.7× reference', met: ratio >= 0.7 };
    case 'list':
      return { rule: '≥ 3× reference', met: ratio >= 3 };
    case 'search':
      return { rule: '≥ 10× reference, p99 < 50 ms', met: ratio >= 10 && real.p99 < 50 };
    case 'write':
      return dialect === 'postgres'
        ? { rule: '≥ 1,000 req/s', met: real.rps >= 1000 }
        : { rule: '(Postgres only: ≥ 1,000 req/s)', met: null };
  }
}

/** Server RSS must stay under this during the runs. */
export const RSS_LIMIT_MB = 150;
