/**
 * The seeded data set: contacts (names, E.164 phones on seven country codes, emails, tags,
 * attributes), conversations with their messages, and orders. Pure generation: rows come out as
 * arrays in the column order of TABLES, in batches, for a loader to write.
 */
import { faker as fakerDE } from '@faker-js/faker/locale/de';
import { faker as fakerEN_GB } from '@faker-js/faker/locale/en_GB';
import { faker as fakerEN_IN } from '@faker-js/faker/locale/en_IN';
import { faker as fakerEN_US } from '@faker-js/faker/locale/en_US';
import { faker as fakerES_MX } from '@faker-js/faker/locale/es_MX';
import { faker as fakerFR } from '@faker-js/faker/locale/fr';
import { faker as fakerPT_BR } from '@faker-js/faker/locale/pt_BR';
import type { Scale } from './options.js';
import { Rng, seededUlid } from './random.js';

/** Bump when the generated data changes: cached data sets of another version are rebuilt. */
export const GENERATOR_VERSION = 3;

export type ColumnType = 'text' | 'integer' | 'bigint';

/** The columns the loader writes, exactly as the api's migrations define them. */
export const TABLES = {
  contacts: [
    ['account_id', 'text'],
    ['id', 'text'],
    ['name', 'text'],
    ['name_search', 'text'],
    ['phone', 'text'],
    ['phone_digits', 'text'],
    ['email', 'text'],
    ['email_search', 'text'],
    ['tags', 'text'],
    ['attributes', 'text'],
    ['created_at', 'text'],
    ['updated_at', 'text'],
  ],
  contact_tags: [
    ['account_id', 'text'],
    ['contact_id', 'text'],
    ['tag', 'text'],
    ['created_at', 'text'],
  ],
  conversations: [
    ['account_id', 'text'],
    ['id', 'text'],
    ['contact_id', 'text'],
    ['platform', 'text'],
    ['status', 'text'],
    ['message_count', 'integer'],
    ['last_message_content', 'text'],
    ['last_message_at', 'text'],
    ['last_activity_at', 'text'],
    ['event_sequence', 'integer'],
    ['created_at', 'text'],
    ['updated_at', 'text'],
  ],
  messages: [
    ['account_id', 'text'],
    ['id', 'text'],
    ['conversation_id', 'text'],
    ['direction', 'text'],
    ['type', 'text'],
    ['content', 'text'],
    ['status', 'text'],
    ['created_at', 'text'],
  ],
  orders: [
    ['account_id', 'text'],
    ['id', 'text'],
    ['contact_id', 'text'],
    ['number', 'text'],
    ['number_key', 'text'],
    ['status', 'text'],
    ['currency', 'text'],
    ['total_amount', 'bigint'],
    ['items', 'text'],
    ['placed_at', 'text'],
    ['created_at', 'text'],
    ['updated_at', 'text'],
  ],
} as const satisfies Record<string, readonly (readonly [string, ColumnType])[]>;

export type TableName = keyof typeof TABLES;
export type Row = (string | number | null)[];

/** Where the generated rows go (SQLite or Postgres bulk inserts). */
export interface RowSink {
  insert(table: TableName, rows: Row[]): Promise<void>;
}

/** What the scenarios need to know about the data, and what the report says about it. */
export interface Samples {
  /** A 3-letter fragment of names, chosen to match about 2% of contacts. */
  nameFragment: string;
  nameFragmentContacts: number;
  nameFragmentConversations: number;
  /** Seven digits of one contact's phone. */
  phoneDigits: string;
  phoneDigitsContacts: number;
  phoneDigitsConversations: number;
  /** Conversations for GET /v1/conversations/:id (any status). */
  conversationIds: string[];
  /** Conversations that accept messages (not archived), for POST /v1/messages. */
  openConversationIds: string[];
  counts: {
    contacts: number;
    contactTags: number;
    vipContacts: number;
    conversations: number;
    byStatus: Record<string, number>;
    byPlatform: Record<string, number>;
    whatsappResolved: number;
    messages: number;
    orders: number;
  };
}

// The data spans the two years before this instant (fixed, so the data set is reproducible).
const ANCHOR = Date.parse('2026-10-01T00:00:00.000Z');
const SPAN = 2 * 365 * 24 * 3600 * 1000;
const START = ANCHOR - SPAN;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const iso = (ms: number) => new Date(Math.floor(ms)).toISOString();

type Faker = typeof fakerEN_US;
interface Country {
  code: string;
  weight: number;
  callingCode: string;
  currency: string;
  faker: Faker;
  domains: string[];
  national: (rng: Rng) => string;
}

// Calling codes and national number shapes (mobile ranges) of seven markets.
const COUNTRIES: Country[] = [
  {
    code: 'US',
    weight: 35,
    callingCode: '1',
    currency: 'USD',
    faker: fakerEN_US,
    domains: ['gmail.com', 'yahoo.com', 'outlook.com', 'icloud.com', 'aol.com'],
    national: (r) => `${r.int(2, 9)}${r.digits(2)}${r.int(2, 9)}${r.digits(6)}`,
  },
  {
    code: 'GB',
    weight: 12,
    callingCode: '44',
    currency: 'GBP',
    faker: fakerEN_GB,
    domains: ['gmail.com', 'hotmail.co.uk', 'btinternet.com', 'outlook.com'],
    national: (r) => `7${r.int(1, 9)}${r.digits(8)}`,
  },
  {
    code: 'MX',
    weight: 12,
    callingCode: '52',
    currency: 'MXN',
    faker: fakerES_MX,
    domains: ['gmail.com', 'hotmail.com', 'outlook.com', 'yahoo.com.mx'],
    national: (r) => `${r.pick(['55', '33', '81'])}${r.digits(8)}`,
  },
  {
    code: 'BR',
    weight: 12,
    callingCode: '55',
    currency: 'BRL',
    faker: fakerPT_BR,
    domains: ['gmail.com', 'hotmail.com', 'uol.com.br', 'bol.com.br'],
    national: (r) => `${r.int(1, 9)}${r.int(1, 9)}9${r.digits(8)}`,
  },
  {
    code: 'DE',
    weight: 10,
    callingCode: '49',
    currency: 'EUR',
    faker: fakerDE,
    domains: ['gmail.com', 'web.de', 'gmx.de', 't-online.de'],
    national: (r) =>
      `1${r.pick(['51', '52', '57', '60', '62', '70', '71', '72', '76', '77', '78', '79'])}${r.digits(r.int(7, 8))}`,
  },
  {
    code: 'IN',
    weight: 12,
    callingCode: '91',
    currency: 'INR',
    faker: fakerEN_IN,
    domains: ['gmail.com', 'yahoo.co.in', 'rediffmail.com', 'outlook.com'],
    national: (r) => `${r.int(6, 9)}${r.digits(9)}`,
  },
  {
    code: 'FR',
    weight: 7,
    callingCode: '33',
    currency: 'EUR',
    faker: fakerFR,
    domains: ['gmail.com', 'orange.fr', 'free.fr', 'laposte.net'],
    national: (r) => `${r.int(6, 7)}${r.digits(8)}`,
  },
];

/** Each tag is attached independently with its probability; `vip` is about 6% of contacts. */
const TAGS: [string, number][] = [
  ['vip', 0.06],
  ['newsletter', 0.35],
  ['returning', 0.25],
  ['lead', 0.15],
  ['wholesale', 0.05],
  ['b2b', 0.05],
  ['churn-risk', 0.04],
  ['support-priority', 0.03],
  ['beta', 0.02],
  ['influencer', 0.01],
];

const PRODUCTS: [string, number][] = [
  ['Linen Shirt', 4900],
  ['Trail Runner 2', 12900],
  ['Espresso Grinder', 18900],
  ['Wool Beanie', 2500],
  ['Canvas Tote', 1900],
  ['Desk Lamp', 5900],
  ['Phone Case', 1500],
  ['Yoga Mat', 3900],
  ['Rain Jacket', 9900],
  ['Ceramic Mug', 1200],
  ['Bluetooth Speaker', 7900],
  ['Leather Wallet', 4500],
];

const INBOUND = [
  'Hi, where is my order #{order}?',
  'Hello! Do you have the {product} in stock?',
  'Can I change the delivery address for order #{order}?',
  'Thanks, that worked!',
  'What are your opening hours on Saturday?',
  "I'd like to return the {product}, it doesn't fit.",
  'Is there a discount if I buy two {product}s?',
  'My payment failed, can you help?',
  'Ok, thank you 👍',
  'The tracking link for #{order} does not open',
  'Do you ship to my city?',
  'Hi {first} here, I never got a confirmation email',
];
const OUTBOUND = [
  'Hi {first}! Your order #{order} is on its way. Tracking: {tracking}',
  'Thanks for reaching out, {first}. Let me check that for you.',
  'Yes, the {product} is available in all sizes.',
  "We're open 9:00–18:00, Monday to Saturday.",
  "I've started the return; you'll get a label by email.",
  'Your refund of {amount} has been issued.',
  'Is there anything else I can help with?',
  'Could you send us the order number, please?',
  'Good news: the {product} is back in stock!',
  "Sorry about that, {first}. I've resent the confirmation.",
];

const fold = (value: string) =>
  value
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');

interface ContactInfo {
  id: string;
  createdAt: number;
  first: string;
  nameSearch: string | null;
  phoneDigits: string;
  country: Country;
}

export type GenerateProgress = (message: string) => void;

/**
 * Generates the data set for `scale` and `seed` into `sink`, for the account `accountId`.
 * Deterministic: the same scale and seed give the same rows (ids included).
 */
export async function generateData(
  sink: RowSink,
  accountId: string,
  scale: Scale,
  seed: number,
  progress: GenerateProgress = () => {},
): Promise<Samples> {
  for (const [i, country] of COUNTRIES.entries()) country.faker.seed(seed * 1000 + i);
  const rng = new Rng(seed, 1);
  const sampleRng = new Rng(seed, 2);
  const BATCH = 5000;

  // Contacts, oldest first: creation times rise with the index.
  const contacts: ContactInfo[] = [];
  const phones = new Set<string>();
  let contactRows: Row[] = [];
  let tagRows: Row[] = [];
  let contactTags = 0;
  let vipContacts = 0;
  for (let i = 0; i < scale.contacts; i++) {
    const country = rng.weighted(COUNTRIES.map((c) => [c, c.weight] as const));
    const createdAt = START + (SPAN * (i + rng.next())) / scale.contacts;
    let phone: string;
    do phone = `+${country.callingCode}${country.national(rng)}`;
    while (phones.has(phone));
    phones.add(phone);
    const first = country.faker.person.firstName();
    const last = country.faker.person.lastName();
    const named = rng.chance(0.97);
    const name = named ? `${first} ${last}` : null;
    let email: string | null = null;
    if (rng.chance(0.75)) {
      const f = fold(first) || 'user';
      const l = fold(last) || 'mail';
      const local = rng.weighted<string>([
        [`${f}.${l}`, 4],
        [`${f}${l}${rng.int(1, 99)}`, 3],
        [`${f[0]}${l}`, 2],
        [`${f}_${l}${rng.int(60, 99)}`, 1],
      ]);
      email = `${local}@${rng.pick(country.domains)}`;
    }
    const tags = TAGS.filter(([, p]) => rng.chance(p)).map(([tag]) => tag);
    const attributes: Record<string, string | number | boolean> = {
      country: country.code,
      source: rng.pick(['whatsapp_ad', 'website', 'instagram', 'referral', 'import', 'facebook']),
    };
    if (rng.chance(0.5)) attributes.lifetime_value = rng.int(0, 250_000);
    if (rng.chance(0.4)) attributes.marketing_opt_in = rng.chance(0.7);
    const id = `ct_${seededUlid(createdAt, rng)}`;
    const updatedAt = createdAt + rng.next() * Math.min(90 * DAY, ANCHOR - createdAt);
    const created = iso(createdAt);
    contactRows.push([
      accountId,
      id,
      name,
      name?.toLowerCase() ?? null,
      phone,
      phone.slice(1),
      email,
      email,
      JSON.stringify(tags),
      JSON.stringify(attributes),
      created,
      iso(updatedAt),
    ]);
    for (const tag of tags) tagRows.push([accountId, id, tag, created]);
    contactTags += tags.length;
    if (tags.includes('vip')) vipContacts++;
    contacts.push({
      id,
      createdAt,
      first,
      nameSearch: name?.toLowerCase() ?? null,
      phoneDigits: phone.slice(1),
      country,
    });
    if (contactRows.length >= BATCH) {
      await sink.insert('contacts', contactRows);
      await sink.insert('contact_tags', tagRows);
      contactRows = [];
      tagRows = [];
    }
  }
  if (contactRows.length) await sink.insert('contacts', contactRows);
  if (tagRows.length) await sink.insert('contact_tags', tagRows);
  progress(`contacts: ${scale.contacts} (${contactTags} tags)`);

  // The search samples: a name fragment that matches about 2% of contacts, and seven digits of a phone.
  const fragmentContacts = new Map<string, number>();
  for (const contact of contacts) {
    if (!contact.nameSearch) continue;
    const seen = new Set<string>();
    for (let i = 0; i + 3 <= contact.nameSearch.length; i++) {
      const gram = contact.nameSearch.slice(i, i + 3);
      if (/^[a-z]{3}$/.test(gram) && !seen.has(gram)) {
        seen.add(gram);
        fragmentContacts.set(gram, (fragmentContacts.get(gram) ?? 0) + 1);
      }
    }
  }
  const target = 0.02 * contacts.length;
  let nameFragment = '';
  let best = Number.POSITIVE_INFINITY;
  for (const [gram, count] of [...fragmentContacts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (Math.abs(count - target) < best) {
      best = Math.abs(count - target);
      nameFragment = gram;
    }
  }
  const phoneDigits = sampleRng.pick(contacts).phoneDigits.slice(-7);
  const matchesName = (c: ContactInfo) => c.nameSearch?.includes(nameFragment) ?? false;
  const matchesPhone = (c: ContactInfo) => c.phoneDigits.includes(phoneDigits);

  // Conversations: who and when first, then sorted by time so ids and rows go in as they would have.
  const M = scale.conversations;
  const times = new Float64Array(M);
  const owners = new Int32Array(M);
  for (let k = 0; k < M; k++) {
    // Half of the traffic from a long tail of regulars (older contacts), half from anyone.
    const u = rng.next();
    const index = rng.chance(0.5) ? Math.floor(contacts.length * u * u * u) : Math.floor(contacts.length * u);
    const contact = contacts[index] as ContactInfo;
    owners[k] = index;
    times[k] = contact.createdAt + rng.next() * (ANCHOR - contact.createdAt);
  }
  const order = Uint32Array.from({ length: M }, (_, k) => k).sort(
    (a, b) => (times[a] as number) - (times[b] as number),
  );

  const byStatus: Record<string, number> = { active: 0, resolved: 0, archived: 0 };
  const byPlatform: Record<string, number> = { whatsapp: 0, facebook: 0, instagram: 0 };
  let whatsappResolved = 0;
  let messages = 0;
  let nameFragmentConversations = 0;
  let phoneDigitsConversations = 0;
  const conversationIds: string[] = [];
  const openConversationIds: string[] = [];
  let openSeen = 0;
  const SAMPLE = 1000;
  let conversationRows: Row[] = [];
  let messageRows: Row[] = [];
  for (let n = 0; n < M; n++) {
    const k = order[n] as number;
    const contact = contacts[owners[k] as number] as ContactInfo;
    const createdAt = times[k] as number;
    const platform = rng.weighted<string>([
      ['whatsapp', 50],
      ['facebook', 30],
      ['instagram', 20],
    ]);
    const status = rng.weighted<string>([
      ['resolved', 60],
      ['active', 25],
      ['archived', 15],
    ]);
    const id = `conv_${seededUlid(createdAt, rng)}`;
    const count = rng.chance(0.05) ? 0 : 1 + Math.min(29, Math.floor(-Math.log(1 - rng.next()) * 1.8));
    let at = createdAt + rng.int(0, 2000);
    let inbound = true;
    let inboundCount = 0;
    let lastContent: string | null = null;
    let lastAt: number | null = null;
    for (let m = 0; m < count; m++) {
      if (m > 0) {
        const [lo, hi] = rng.weighted<[number, number]>([
          [[10_000, 5 * MINUTE], 4],
          [[5 * MINUTE, 2 * HOUR], 4],
          [[2 * HOUR, 3 * DAY], 2],
        ]);
        at += lo + rng.next() * (hi - lo);
        if (rng.chance(0.7)) inbound = !inbound;
      }
      const template = inbound ? rng.pick(INBOUND) : rng.pick(OUTBOUND);
      const content = template
        .replace('{order}', String(1001 + rng.int(0, 99_999)))
        .replace('{product}', rng.pick(PRODUCTS)[0])
        .replace('{first}', contact.first)
        .replace('{tracking}', `1Z${rng.digits(16)}`)
        .replace('{amount}', `${(rng.int(500, 30_000) / 100).toFixed(2)} ${contact.country.currency}`);
      const messageStatus = inbound
        ? rng.weighted<string>([
            ['read', 7],
            ['delivered', 3],
          ])
        : rng.weighted<string>([
            ['read', 60],
            ['delivered', 30],
            ['sent', 8],
            ['failed', 2],
          ]);
      messageRows.push([
        accountId,
        `msg_${seededUlid(at, rng)}`,
        id,
        inbound ? 'inbound' : 'outbound',
        'text',
        content,
        messageStatus,
        iso(at),
      ]);
      if (inbound) inboundCount++;
      lastContent = content;
      lastAt = at;
    }
    messages += count;
    const activity = lastAt ?? createdAt;
    const statusChanged = status === 'active' ? 0 : rng.int(MINUTE, 2 * DAY);
    const sequence = 1 + inboundCount + (status === 'resolved' ? 1 : status === 'archived' && rng.chance(0.5) ? 1 : 0);
    conversationRows.push([
      accountId,
      id,
      contact.id,
      platform,
      status,
      count,
      lastContent,
      lastAt === null ? null : iso(lastAt),
      iso(activity),
      sequence,
      iso(createdAt),
      iso(activity + statusChanged),
    ]);
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    byPlatform[platform] = (byPlatform[platform] ?? 0) + 1;
    if (platform === 'whatsapp' && status === 'resolved') whatsappResolved++;
    if (matchesName(contact)) nameFragmentConversations++;
    if (matchesPhone(contact)) phoneDigitsConversations++;
    // Reservoir samples (their own random stream, so sampling never changes the data).
    if (conversationIds.length < SAMPLE) conversationIds.push(id);
    else {
      const j = Math.floor(sampleRng.next() * (n + 1));
      if (j < SAMPLE) conversationIds[j] = id;
    }
    if (status !== 'archived') {
      openSeen++;
      if (openConversationIds.length < SAMPLE) openConversationIds.push(id);
      else {
        const j = Math.floor(sampleRng.next() * openSeen);
        if (j < SAMPLE) openConversationIds[j] = id;
      }
    }
    if (conversationRows.length >= BATCH) {
      await sink.insert('conversations', conversationRows);
      await sink.insert('messages', messageRows);
      conversationRows = [];
      messageRows = [];
    }
    if ((n + 1) % 100_000 === 0) progress(`conversations: ${n + 1} of ${M} (${messages} messages)`);
  }
  if (conversationRows.length) await sink.insert('conversations', conversationRows);
  if (messageRows.length) await sink.insert('messages', messageRows);
  progress(`conversations: ${M} (${messages} messages)`);

  // Orders: about 0.6 per contact, numbered in the order they were placed.
  const orderCount = Math.round(contacts.length * 0.6);
  const placed = Float64Array.from({ length: orderCount }, () => START + rng.next() * SPAN).sort();
  let orderRows: Row[] = [];
  for (let i = 0; i < orderCount; i++) {
    const placedAt = placed[i] as number;
    // A contact that existed by then (contacts are in creation order).
    const existing = Math.max(1, Math.min(contacts.length, Math.ceil(((placedAt - START) / SPAN) * contacts.length)));
    const contact = contacts[rng.int(0, existing - 1)] as ContactInfo;
    const contactId = rng.chance(0.02) ? null : contact.id;
    const items = Array.from({ length: rng.int(1, 3) }, () => {
      const [name, unit] = rng.pick(PRODUCTS);
      return { name, quantity: rng.int(1, 3), unit_amount: unit };
    });
    const total = items.reduce((sum, item) => sum + item.quantity * item.unit_amount, 0);
    const status = rng.weighted<string>([
      ['fulfilled', 55],
      ['paid', 15],
      ['pending', 12],
      ['cancelled', 10],
      ['refunded', 8],
    ]);
    const number = 1001 + i;
    orderRows.push([
      accountId,
      `ord_${seededUlid(placedAt, rng)}`,
      contactId,
      String(number),
      String(number).padStart(64, '0'),
      status,
      contact.country.currency,
      total,
      JSON.stringify(items),
      iso(placedAt),
      iso(placedAt),
      iso(placedAt + (status === 'pending' ? 0 : rng.int(MINUTE, 10 * DAY))),
    ]);
    if (orderRows.length >= BATCH) {
      await sink.insert('orders', orderRows);
      orderRows = [];
    }
  }
  if (orderRows.length) await sink.insert('orders', orderRows);
  progress(`orders: ${orderCount}`);

  return {
    nameFragment,
    nameFragmentContacts: contacts.filter(matchesName).length,
    nameFragmentConversations,
    phoneDigits,
    phoneDigitsContacts: contacts.filter(matchesPhone).length,
    phoneDigitsConversations,
    conversationIds,
    openConversationIds,
    counts: {
      contacts: contacts.length,
      contactTags,
      vipContacts,
      conversations: M,
      byStatus,
      byPlatform,
      whatsappResolved,
      messages,
      orders: orderCount,
    },
  };
}
