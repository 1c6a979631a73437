import type { Platform } from '@convo/core';
import { randomBytes } from 'node:crypto';
import type { DatabaseHandle } from '../db/database.js';
import { accountsService } from '../services/accounts.js';
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
 * A demo account with realistic data, written through the services as the API would write it. Returns a new
 * full-access key and owner password, the only time either is shown.
 */
export async function seedDemo(database: DatabaseHandle) {
  let account = await accountsService.findAccountByName(database, DEMO_ACCOUNT_NAME);
  const created = !account;
  if (!account) {
    account = await accountsService.createAccount(database, { name: DEMO_ACCOUNT_NAME, plan: 'growth' });
    await fill({ database, accountId: account.id, settings: defaultSettings() });
  }
  // One demo key at a time: the one printed before stops working when a new one is printed.
  const previous = (await accountsService.listKeys(database, account.id)).filter(
    (k) => k.name === DEMO_KEY_NAME && k.revoked_at === null,
  );
  for (const old of previous) await accountsService.revokeKey(database, old.id);
  const key = await accountsService.createKey(database, {
    accountId: account.id,
    type: 'full_access',
    name: DEMO_KEY_NAME,
  });
  // Like the key, the password is shown once: each start sets a new one and ends the old sessions.
  const password = randomBytes(12).toString('base64url');
  await peopleService.createUser(database, {
    email: DEMO_EMAIL,
    password,
    accountId: account.id,
    role: 'owner',
    name: 'Demo',
  });
  await peopleService.setPassword(database, DEMO_EMAIL, password);
  return { account, key, created, revoked: previous.length, signIn: { email: DEMO_EMAIL, password } };
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
