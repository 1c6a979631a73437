import { type Selectable, type SqlBool, type Updateable, sql } from 'kysely';
import type { Dialect } from '../db/dialect.js';
import type { JobRow } from './jobs.js';
import type { ChannelPayloadTable, ChannelTable, ContactIdentityTable, MessageTable } from '../db/schema.js';
import { type Executor, type TenantScope, withTotal } from './tenant.js';

export type ChannelRow = Selectable<ChannelTable>;
export type ChannelPayloadRow = Selectable<ChannelPayloadTable>;
export type ContactIdentityRow = Selectable<ContactIdentityTable>;

export const channelsRepository = {
  insert: (scope: TenantScope, row: Omit<ChannelRow, 'account_id'>) => scope.insert('channels', row),

  findById: (scope: TenantScope, id: string) =>
    scope.selectFrom('channels').selectAll().where('channels.id', '=', id).executeTakeFirst(),

  findMany: (scope: TenantScope, ids: readonly string[]) => {
    const dialect = scope.dialect;
    return scope
      .selectFrom('channels')
      .selectAll()
      .where(dialect.isOneOf('channels.id', dialect.boundList(ids)))
      .execute();
  },

  /** A channel named by Meta's webhook path, whatever its account (ids are unique across accounts). */
  findByIdInAnyAccount: (db: Executor, id: string) =>
    db.selectFrom('channels').selectAll().where('channels.id', '=', id).executeTakeFirst(),

  findByExternalId: (scope: TenantScope, platform: ChannelRow['platform'], externalId: string) =>
    scope
      .selectFrom('channels')
      .selectAll()
      .where('channels.platform', '=', platform)
      .where('channels.external_id', '=', externalId)
      .executeTakeFirst(),

  async list(
    scope: TenantScope,
    filter: { platform?: ChannelRow['platform'] | undefined },
    page: { limit: number; offset: number },
  ) {
    let base = scope.selectFrom('channels');
    if (filter.platform) base = base.where('channels.platform', '=', filter.platform);
    const rows = base
      .selectAll()
      .orderBy('channels.created_at', 'desc')
      .orderBy('channels.id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return withTotal(rows, base);
  },

  update: (scope: TenantScope, id: string, patch: Updateable<ChannelTable>) =>
    scope.updateTable('channels').set(patch).where('channels.id', '=', id).execute(),

  delete: (scope: TenantScope, id: string) =>
    scope.deleteFrom('channels').where('channels.id', '=', id).executeTakeFirst(),
};

export const channelPayloadsRepository = {
  /**
   * Stores a received payload with the job that processes it, both or neither: on Postgres in one
   * statement (the payload inserted in a CTE, the job selecting from it), which the ingress target
   * of bench/README.md (Channels) needs; without data-modifying CTEs in two, which the caller runs
   * in a transaction.
   */
  async insertWithJob(db: Executor, dialect: Dialect, payload: ChannelPayloadRow, job: JobRow): Promise<void> {
    if (!dialect.dataModifyingCtes) {
      await db.insertInto('channel_payloads').values(payload).execute();
      await db.insertInto('jobs').values(job).execute();
      return;
    }
    await db
      .with('stored', (cte) => cte.insertInto('channel_payloads').values(payload).returning('channel_payloads.id'))
      .insertInto('jobs')
      .columns(Object.keys(job) as (keyof JobRow)[])
      .expression((eb) =>
        eb.selectFrom('stored').select(Object.entries(job).map(([column, value]) => eb.val(value).as(column))),
      )
      .execute();
  },

  findMany: (scope: TenantScope, ids: readonly string[]) => {
    const dialect = scope.dialect;
    return scope
      .selectFrom('channel_payloads')
      .selectAll()
      .where(dialect.isOneOf('channel_payloads.id', dialect.boundList(ids)))
      .execute();
  },

  /**
   * Records payloads as processed, with the errors of each (null when it had none): one statement for all that had
   * none.
   */
  async markProcessed(
    scope: TenantScope,
    at: string,
    payloads: readonly { id: string; errors: string | null }[],
  ): Promise<void> {
    const clean = payloads.filter((payload) => payload.errors === null).map((payload) => payload.id);
    if (clean.length > 0) {
      const dialect = scope.dialect;
      await scope
        .updateTable('channel_payloads')
        .set({ processed_at: at, errors: null })
        .where(dialect.isOneOf('channel_payloads.id', dialect.boundList(clean)))
        .execute();
    }
    for (const { id, errors } of payloads) {
      if (errors !== null)
        await scope
          .updateTable('channel_payloads')
          .set({ processed_at: at, errors })
          .where('channel_payloads.id', '=', id)
          .execute();
    }
  },

  /** Processed payloads received before `before` (kept as long as events). */
  prune: (db: Executor, before: string) =>
    db
      .deleteFrom('channel_payloads')
      .where('received_at', '<', before)
      .where('processed_at', 'is not', null)
      .executeTakeFirst(),
};

export const contactIdentitiesRepository = {
  insert: (scope: TenantScope, row: Omit<ContactIdentityRow, 'account_id'>) => scope.insert('contact_identities', row),

  find: (scope: TenantScope, channelId: string, externalId: string) =>
    scope
      .selectFrom('contact_identities')
      .selectAll()
      .where('contact_identities.channel_id', '=', channelId)
      .where('contact_identities.external_id', '=', externalId)
      .executeTakeFirst(),

  /** The contact's identity on a channel (the address its messages go to). */
  findForContact: (scope: TenantScope, contactId: string, channelId: string) =>
    scope
      .selectFrom('contact_identities')
      .selectAll()
      .where('contact_identities.contact_id', '=', contactId)
      .where('contact_identities.channel_id', '=', channelId)
      .orderBy('contact_identities.created_at', 'asc')
      .executeTakeFirst(),

  /** The identities of these senders on the channel, with their contacts' names. */
  findManyWithNames: (scope: TenantScope, channelId: string, externalIds: readonly string[]) => {
    const dialect = scope.dialect;
    return scope
      .selectFrom('contact_identities')
      .innerJoin('contacts', (join) =>
        join
          .onRef('contacts.account_id', '=', 'contact_identities.account_id')
          .onRef('contacts.id', '=', 'contact_identities.contact_id'),
      )
      .select(['contact_identities.external_id', 'contact_identities.contact_id', 'contacts.name'])
      .where('contact_identities.channel_id', '=', channelId)
      .where(dialect.isOneOf('contact_identities.external_id', dialect.boundList(externalIds)))
      .execute();
  },

  /** touchInbound for several senders in one statement. */
  touchInboundAll: (scope: TenantScope, channelId: string, touches: readonly { external_id: string; at: string }[]) => {
    const dialect = scope.dialect;
    return scope
      .updateTable('contact_identities')
      .from(dialect.rowsOf(touches, { external_id: 'text', at: 'text' }).as('v'))
      .set({ last_inbound_at: sql<string>`v.at` })
      .where('contact_identities.channel_id', '=', channelId)
      .where(
        dialect.isOneOf('contact_identities.external_id', dialect.boundList(touches.map((touch) => touch.external_id))),
      )
      .whereRef('contact_identities.external_id', '=', 'v.external_id')
      .where(sql<SqlBool>`(contact_identities.last_inbound_at is null or contact_identities.last_inbound_at < v.at)`)
      .execute();
  },

  touchInbound: (scope: TenantScope, channelId: string, externalId: string, at: string) =>
    scope
      .updateTable('contact_identities')
      .set({ last_inbound_at: at })
      .where('contact_identities.channel_id', '=', channelId)
      .where('contact_identities.external_id', '=', externalId)
      .where((eb) => eb.or([eb('last_inbound_at', 'is', null), eb('last_inbound_at', '<', at)]))
      .execute(),
};

export const channelMessagesRepository = {
  /**
   * The outbound messages to a contact on a channel created at or before `upTo` and in one of
   * `statuses`, oldest first: what a platform's watermark receipt (delivered or read up to a time) covers.
   */
  outboundUpTo: (
    scope: TenantScope,
    channelId: string,
    contactId: string,
    upTo: string,
    statuses: readonly MessageTable['status'][],
  ) =>
    scope
      .selectFrom('messages')
      .innerJoin('conversations', (join) =>
        join
          .onRef('conversations.account_id', '=', 'messages.account_id')
          .onRef('conversations.id', '=', 'messages.conversation_id'),
      )
      .select('messages.id')
      .where('conversations.channel_id', '=', channelId)
      .where('conversations.contact_id', '=', contactId)
      .where('messages.direction', '=', 'outbound')
      .where('messages.status', 'in', statuses)
      .where('messages.created_at', '<=', upTo)
      .orderBy('messages.created_at', 'asc')
      .orderBy('messages.id', 'asc')
      .execute(),
};
