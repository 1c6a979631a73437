import type { Platform } from '@convo/core';
import { randomBytes } from 'node:crypto';
import type { DatabaseHandle } from '../db/database.js';
import { ApiError } from '../errors.js';
import { type KeyRecord, accountsService } from '../services/accounts.js';
import { defaultSettings } from '../settings.js';
import { contactsService } from '../services/contacts.js';
import type { ServiceContext } from '../services/context.js';
import { conversationsService } from '../services/conversations.js';
import { messagesService } from '../services/messages.js';
import { ordersService } from '../services/orders.js';
import { peopleService } from '../services/people.js';

export const DEMO_ACCOUNT_NAME = 'Convo Demo';
const DEMO_KEY_NAME = 'demo';
/** The demo account's owner, who signs in to the console; a new password is printed at each start. */
export const DEMO_EMAIL = 'demo@example.com';

const CONTACTS: { name: string; phone: string; email?: string; tags: string[] }[] = [
  { name: 'Ana Souza', phone: '+5511987654321', email: 'ana.souza@example.com', tags: ['vip', 'returning'] },
  { name: 'Bruno Lima', phone: '+5521998877665', tags: ['new'] },
  { name: 'Chloé Martin', phone: '+33612345678', email: 'chloe@example.fr', tags: ['vip'] },
  { name: 'David Okafor', phone: '+2348031234567', tags: [] },
  { name: 'Emma Johnson', phone: '+14155550123', email: 'emma.j@example.com', tags: ['wholesale'] },
  { name: 'Farah Haddad', phone: '+971501234567', tags: ['vip', 'wholesale'] },
  { name: 'Giulia Rossi', phone: '+393471234567', email: 'giulia@example.it', tags: ['returning'] },
  { name: 'Hiro Tanaka', phone: '+819012345678', tags: ['new'] },
  { name: 'Isabel García', phone: '+34612345678', email: 'isabel@example.es', tags: [] },
  { name: 'Jonas Becker', phone: '+4915123456789', tags: ['returning'] },
  { name: 'Kavya Iyer', phone: '+919876543210', email: 'kavya@example.in', tags: ['vip'] },
  { name: 'Liam Murphy', phone: '+353871234567', tags: [] },
];

const PLATFORMS: Platform[] = ['whatsapp', 'facebook', 'instagram'];
const THREADS = [
  [
    'Hi! Is the blue jacket still in stock in size M?',
    'Hi! Yes, we have 3 left in M. Shall I reserve one for you?',
    'Yes please 🙏',
  ],
  ['My order has not arrived yet', 'Sorry about that! Could you share your order number?', 'It is 1002'],
  ['Do you ship to Portugal?', 'We do: 3 to 5 working days, free over €50.'],
  ['Can I change the delivery address?', 'Of course, what is the new address?'],
];

/**
 * A demo account with realistic data, written through the services as the API would write it, its full-access
 * key and a new owner password (shown once). `storedKey`, the demo key printed before, is the key again while it
 * still authenticates as the demo account's, so what was set up with it keeps working; otherwise a new key is
 * made and the demo keys before it are revoked.
 */
export async function seedDemo(database: DatabaseHandle, options: { storedKey?: string | undefined } = {}) {
  let account = await accountsService.findAccountByName({ database }, DEMO_ACCOUNT_NAME);
  const created = !account;
  if (!account) {
    account = await accountsService.createAccount({ database }, { name: DEMO_ACCOUNT_NAME, plan: 'growth' });
    await fill({ database, accountId: account.id, settings: defaultSettings() });
  }
  const demoKeys = (await accountsService.listKeys({ database, accountId: account.id })).filter(
    (k) => k.name === DEMO_KEY_NAME && k.type === 'full_access' && k.revoked_at === null,
  );
  const storedId = options.storedKey ? await keyIdOf(database, options.storedKey) : undefined;
  const stored = demoKeys.find((k) => k.id === storedId);
  let key: KeyRecord & { key: string };
  let revoked = 0;
  if (stored && options.storedKey) key = { ...stored, key: options.storedKey };
  else {
    // One demo key at a time: one nobody kept is revoked.
    for (const old of demoKeys) await accountsService.revokeKey({ database }, old.id);
    revoked = demoKeys.length;
    key = await accountsService.createKey(
      { database },
      {
        accountId: account.id,
        type: 'full_access',
        name: DEMO_KEY_NAME,
      },
    );
  }
  // The password, unlike the key, is new at each start and ends the old console sessions: it is never stored.
  const password = randomBytes(12).toString('base64url');
  await peopleService.createUser(
    { database },
    {
      email: DEMO_EMAIL,
      password,
      accountId: account.id,
      role: 'owner',
      name: 'Demo',
    },
  );
  await peopleService.setPassword({ database }, { email: DEMO_EMAIL, password: password });
  return { account, key, created, reused: stored !== undefined, revoked, signIn: { email: DEMO_EMAIL, password } };
}

/** The id of the active key `value` is, or undefined when it no longer authenticates. */
async function keyIdOf(database: DatabaseHandle, value: string): Promise<string | undefined> {
  try {
    return (await accountsService.authenticate({ database }, `Bearer ${value}`)).key.id;
  } catch (error) {
    if (error instanceof ApiError && error.code === 'unauthorized') return undefined;
    throw error;
  }
}

async function fill(ctx: ServiceContext) {
  const contacts = [];
  for (const contact of CONTACTS)
    contacts.push(await contactsService.create(ctx, { ...contact, email: contact.email ?? null }));

  for (const [index, contact] of contacts.entries()) {
    const platform = PLATFORMS[index % PLATFORMS.length] as Platform;
    const conversation = await conversationsService.create(ctx, { contact_id: contact.id, platform });
    const thread = THREADS[index % THREADS.length] as string[];
    for (const [turn, content] of thread.entries()) {
      if (turn % 2 === 0) await messagesService.receive(ctx, { conversationId: conversation.id, content });
      else await messagesService.send(ctx, { conversation_id: conversation.id, content, type: 'text' });
    }
    if (index % 3 === 1) await conversationsService.update(ctx, { id: conversation.id, body: { status: 'resolved' } });
    if (index % 6 === 5) await conversationsService.update(ctx, { id: conversation.id, body: { status: 'archived' } });
  }

  const day = 24 * 60 * 60 * 1000;
  const statuses = ['paid', 'fulfilled', 'pending', 'cancelled', 'refunded'] as const;
  for (const [index, contact] of contacts.slice(0, 8).entries()) {
    await ordersService.create(ctx, {
      contact_id: contact.id,
      currency: index % 2 === 0 ? 'BRL' : 'EUR',
      items: [
        { name: 'Denim jacket', quantity: 1, unit_amount: 18990 },
        ...(index % 3 === 0 ? [{ name: 'Cotton T-shirt', quantity: 2, unit_amount: 4990 }] : []),
      ],
      status: statuses[index % statuses.length] as (typeof statuses)[number],
      placed_at: new Date(Date.now() - (index + 1) * day).toISOString(),
    });
  }
}
