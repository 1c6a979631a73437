import { type Contact, MAX_TAGS_PER_CONTACT } from '@convo/core';
import type {
  CreateContactBody as CreateSchema,
  ListContactsQuery as ListSchema,
  UpdateContactBody as UpdateSchema,
} from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { type ContactRow, contactsRepository } from '../repositories/contacts.js';
import { ordersRepository } from '../repositories/orders.js';
import type { TenantScope } from '../repositories/tenant.js';
import { workflowRunsRepository } from '../repositories/workflows.js';
import { emitEvent } from './events.js';
import { type Change, type ServiceContext, transaction, page, scopeOf, foldedSearch } from './context.js';

export const toContact = (row: Omit<ContactRow, 'conversation_count'>): Contact => ({
  id: row.id,
  name: row.name,
  phone: row.phone,
  email: row.email,
  tags: JSON.parse(row.tags) as string[],
  attributes: JSON.parse(row.attributes) as Contact['attributes'],
  identities: JSON.parse(row.identities) as Contact['identities'],
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** Duplicates collapse; the first occurrence keeps its place. */
const uniqueTags = (tags: readonly string[]): string[] => [...new Set(tags)];

const searchable = (value: string | null | undefined) => (value == null ? null : value.toLowerCase());
const digitsOf = (phone: string) => phone.replace(/\D/g, '');

async function findOrThrow(scope: TenantScope, id: string): Promise<ContactRow> {
  const row = await contactsRepository.findById(scope, id);
  if (!row) throw ApiError.notFound('contact', id);
  return row;
}

/** In a transaction: the contact, locked against concurrent changes until the transaction ends. */
async function lockOrThrow(scope: TenantScope, id: string): Promise<ContactRow> {
  const row = await contactsRepository.findByIdForUpdate(scope, id);
  if (!row) throw ApiError.notFound('contact', id);
  return row;
}

async function assertPhoneFree(scope: TenantScope, phone: string, exceptId?: string): Promise<void> {
  const existing = await contactsRepository.findByPhone(scope, phone);
  if (existing && existing.id !== exceptId) throw phoneTaken(existing.id);
}

const phoneTaken = (existingId: string) =>
  ApiError.badRequest('phone', 'unique', 'A contact with this phone number already exists', {
    existing_id: existingId,
  });

/**
 * A concurrent writer may take the phone between our check and our insert. Inside a caller's
 * transaction (an idempotent request) nothing can be read after the failed insert: its outermost
 * run starts again (runTransaction), and the check answers.
 */
async function rethrowPhoneRace(ctx: ServiceContext, error: unknown, phone: string): Promise<never> {
  if (ctx.database.isUniqueViolation(error) && !ctx.database.db.isTransaction) {
    const existing = await contactsRepository.findByPhone(scopeOf(ctx), phone);
    if (existing) throw phoneTaken(existing.id);
  }
  throw error;
}

export const contactsService = {
  async list(ctx: ServiceContext, query: z.output<typeof ListSchema>) {
    const { rows, total } = await contactsRepository.list(
      scopeOf(ctx),
      { ...foldedSearch(query.search), tag: query.tag },
      query,
    );
    return page(rows.map(toContact), total, query.limit, query.offset);
  },

  async retrieve(ctx: ServiceContext, id: string): Promise<Contact> {
    return toContact(await findOrThrow(scopeOf(ctx), id));
  },

  async create(ctx: ServiceContext, body: z.output<typeof CreateSchema>): Promise<Contact> {
    const at = now();
    const tags = uniqueTags(body.tags ?? []);
    const row: Omit<ContactRow, 'account_id' | 'conversation_count'> = {
      id: newId('contact'),
      name: body.name ?? null,
      name_search: searchable(body.name),
      phone: body.phone,
      phone_digits: digitsOf(body.phone),
      email: body.email ?? null,
      email_search: searchable(body.email),
      tags: JSON.stringify(tags),
      attributes: JSON.stringify(body.attributes ?? {}),
      identities: '[]',
      created_at: at,
      updated_at: at,
    };
    try {
      await transaction(ctx, async (tx) => {
        const scope = scopeOf(tx);
        await assertPhoneFree(scope, body.phone);
        await contactsRepository.insert(scope, row);
        await contactsRepository.replaceTagIndex(scope, row.id, tags, at);
        await emitEvent(scope, 'contact.created', toContact({ ...row, account_id: ctx.accountId }));
      });
    } catch (error) {
      await rethrowPhoneRace(ctx, error, body.phone);
    }
    return toContact({ ...row, account_id: ctx.accountId });
  },

  async update(ctx: ServiceContext, { id, body }: Change<typeof UpdateSchema>): Promise<Contact> {
    try {
      return await transaction(ctx, async (tx) => {
        const scope = scopeOf(tx);
        const current = await lockOrThrow(scope, id);
        const patch: Partial<ContactRow> = {};
        if (body.name !== undefined) Object.assign(patch, { name: body.name, name_search: searchable(body.name) });
        if (body.email !== undefined) Object.assign(patch, { email: body.email, email_search: searchable(body.email) });
        if (body.attributes !== undefined) patch.attributes = JSON.stringify(body.attributes);
        if (body.phone !== undefined && body.phone !== current.phone) {
          await assertPhoneFree(scope, body.phone, id);
          Object.assign(patch, { phone: body.phone, phone_digits: digitsOf(body.phone) });
        }
        const at = now();
        if (body.tags !== undefined) {
          const tags = uniqueTags(body.tags);
          patch.tags = JSON.stringify(tags);
          await contactsRepository.replaceTagIndex(scope, id, tags, at);
        }
        if (Object.keys(patch).length === 0) return toContact(current);
        patch.updated_at = at;
        await contactsRepository.update(scope, id, patch);
        const contact = toContact({ ...current, ...patch });
        await emitEvent(scope, 'contact.updated', contact);
        return contact;
      });
    } catch (error) {
      if (body.phone !== undefined) await rethrowPhoneRace(ctx, error, body.phone);
      throw error;
    }
  },

  /** Deletes the contact with its conversations and messages; its orders and workflow runs stay, unlinked. */
  async delete(ctx: ServiceContext, id: string): Promise<void> {
    await transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const current = await contactsRepository.findByIdForDelete(scope, id);
      if (!current) throw ApiError.notFound('contact', id);
      const at = now();
      await ordersRepository.detachContact(scope, id, at);
      await workflowRunsRepository.detachContact(scope, id, at);
      await contactsRepository.delete(scope, id);
      await emitEvent(scope, 'contact.deleted', toContact(current));
    });
  },

  async addTag(ctx: ServiceContext, { id, tag }: { id: string; tag: string }): Promise<Contact> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const current = await lockOrThrow(scope, id);
      const tags = JSON.parse(current.tags) as string[];
      if (tags.includes(tag)) return toContact(current);
      if (tags.length >= MAX_TAGS_PER_CONTACT) {
        throw ApiError.badRequest('tags', 'max', `A contact has at most ${MAX_TAGS_PER_CONTACT} tags`);
      }
      const at = now();
      const patch = { tags: JSON.stringify([...tags, tag]), updated_at: at };
      await contactsRepository.update(scope, id, patch);
      await contactsRepository.addToTagIndex(scope, id, tag, at);
      const contact = toContact({ ...current, ...patch });
      await emitEvent(scope, 'contact.updated', contact);
      return contact;
    });
  },

  async removeTag(ctx: ServiceContext, { id, tag }: { id: string; tag: string }): Promise<Contact> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const current = await lockOrThrow(scope, id);
      const tags = JSON.parse(current.tags) as string[];
      if (!tags.includes(tag)) throw new ApiError('not_found', `Contact ${id} has no tag "${tag}"`);
      const at = now();
      const patch = { tags: JSON.stringify(tags.filter((t) => t !== tag)), updated_at: at };
      await contactsRepository.update(scope, id, patch);
      await contactsRepository.removeFromTagIndex(scope, id, tag);
      const contact = toContact({ ...current, ...patch });
      await emitEvent(scope, 'contact.updated', contact);
      return contact;
    });
  },
};
