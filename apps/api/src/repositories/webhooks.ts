import { type Selectable, type SqlBool, type Updateable, sql } from 'kysely';
import { lockedAgainstDelete, lockedForUpdate } from '../db/dialect.js';
import type { WebhookDeliveryTable, WebhookEndpointTable } from '../db/schema.js';
import { signingSecretsOf } from './accounts.js';
import { type TenantScope, withTotal } from './tenant.js';

export type WebhookEndpointRow = Selectable<WebhookEndpointTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>;

/** The account's number of webhook endpoints. */
const countEndpoints = async (scope: TenantScope): Promise<number> =>
  Number(
    (
      await scope
        .selectFrom('webhook_endpoints')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

export const webhookEndpointsRepository = {
  insert: (scope: TenantScope, row: Omit<WebhookEndpointRow, 'account_id'>) => scope.insert('webhook_endpoints', row),

  findById: (scope: TenantScope, id: string) =>
    scope.selectFrom('webhook_endpoints').selectAll().where('webhook_endpoints.id', '=', id).executeTakeFirst(),

  /**
   * Endpoints that receive new deliveries, held against deletion until the transaction ends: one
   * being deleted meanwhile is waited for and left out, so its deliveries are never inserted.
   */
  listEnabled: (scope: TenantScope) =>
    lockedAgainstDelete(
      scope.dialect,
      scope.selectFrom('webhook_endpoints').selectAll().where('webhook_endpoints.status', '=', 'enabled'),
    ).execute(),

  async list(scope: TenantScope, page: { limit: number; offset: number }) {
    const [rows, total] = await Promise.all([
      scope
        .selectFrom('webhook_endpoints')
        .selectAll()
        .orderBy('webhook_endpoints.created_at', 'desc')
        .orderBy('webhook_endpoints.id', 'desc')
        .limit(page.limit)
        .offset(page.offset)
        .execute(),
      countEndpoints(scope),
    ]);
    return { rows, total };
  },

  count: countEndpoints,

  update: (scope: TenantScope, id: string, patch: Updateable<WebhookEndpointTable>) =>
    scope.updateTable('webhook_endpoints').set(patch).where('webhook_endpoints.id', '=', id).execute(),

  delete: (scope: TenantScope, id: string) =>
    scope.deleteFrom('webhook_endpoints').where('webhook_endpoints.id', '=', id).executeTakeFirst(),
};

/**
 * A delivery found by its id is pending, checked on its row: through `coalesce`, which no index
 * serves, because on statistics older than a burst of deliveries Postgres took the status index
 * for selective and read every pending delivery of the account to find a few by id.
 */
const isPending = sql<SqlBool>`coalesce(webhook_deliveries.status, '') = 'pending'`;

/** The statement of webhookDeliveriesRepository.takeForAttempt. */
export function takeStatement(scope: TenantScope, ids: readonly string[], at: { now: string; until: string }) {
  const dialect = scope.dialect;
  const ofEndpoint = <T>(column: 'url' | 'status') =>
    sql<T | null>`(select ${sql.ref(`e.${column}`)} from webhook_endpoints e
      where e.account_id = webhook_deliveries.account_id and e.id = webhook_deliveries.endpoint_id)`;
  const ofEvent = <T>(column: 'data' | 'conversation_id' | 'sequence' | 'created_at') =>
    sql<T | null>`(select ${sql.ref(`ev.${column}`)} from events ev
      where ev.account_id = webhook_deliveries.account_id and ev.id = webhook_deliveries.event_id)`;
  const secrets = sql<
    string[] | string | null
  >`(select ${dialect.listOf('s.signing_secret')} from ${signingSecretsOf(scope.db, scope.accountId).as('s')})`;
  return scope
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: at.until })
    .where(dialect.isOneOf('webhook_deliveries.id', dialect.boundList(ids)))
    .where(isPending)
    .where((eb) =>
      eb.or([
        eb('webhook_deliveries.next_attempt_at', 'is', null),
        eb('webhook_deliveries.next_attempt_at', '<=', at.now),
      ]),
    )
    .returningAll()
    .returning([
      ofEndpoint<string>('url').as('endpoint_url'),
      ofEndpoint<WebhookEndpointRow['status']>('status').as('endpoint_status'),
      ofEvent<string>('data').as('ev_data'),
      ofEvent<string>('conversation_id').as('ev_conversation_id'),
      ofEvent<number>('sequence').as('ev_sequence'),
      ofEvent<string>('created_at').as('ev_created_at'),
      secrets.as('signing_secrets'),
    ]);
}

/** A change to a pending delivery, made only if its `next_attempt_at` is still `expected_next_attempt_at`. */
export interface DeliveryChange {
  id: string;
  expected_next_attempt_at: string;
  /** Left as it is when absent. */
  attempts?: string | undefined;
  status: WebhookDeliveryRow['status'];
  next_attempt_at: string | null;
  updated_at: string;
}

/** The statement of webhookDeliveriesRepository.updateIfUnchanged. */
export function updateIfUnchangedStatement(scope: TenantScope, changes: readonly DeliveryChange[]) {
  const dialect = scope.dialect;
  const values = dialect.rowsOf(
    changes.map((change) => ({ ...change, attempts: change.attempts ?? null })),
    {
      id: 'text',
      expected_next_attempt_at: 'text',
      attempts: 'text',
      status: 'text',
      next_attempt_at: 'text',
      updated_at: 'text',
    },
  );
  return scope
    .updateTable('webhook_deliveries')
    .from(values.as('v'))
    .set({
      attempts: sql<string>`coalesce(v.attempts, webhook_deliveries.attempts)`,
      status: sql<WebhookDeliveryRow['status']>`v.status`,
      next_attempt_at: sql<string | null>`v.next_attempt_at`,
      updated_at: sql<string>`v.updated_at`,
    })
    .where(dialect.isOneOf('webhook_deliveries.id', dialect.boundList(changes.map((change) => change.id))))
    .whereRef('webhook_deliveries.id', '=', 'v.id')
    .where(isPending)
    .whereRef('webhook_deliveries.next_attempt_at', '=', 'v.expected_next_attempt_at')
    .returning('webhook_deliveries.id');
}

/** More than an event can have deliveries (one per endpoint, and an account has at most 16). */
const MAX_WEBHOOK_ENDPOINTS_EVER = 100;

export const webhookDeliveriesRepository = {
  insert: (
    scope: TenantScope,
    rows: Omit<WebhookDeliveryRow, 'account_id'> | Omit<WebhookDeliveryRow, 'account_id'>[],
  ) => scope.insert('webhook_deliveries', rows),

  findById: (scope: TenantScope, endpointId: string, id: string) =>
    scope
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook_deliveries.endpoint_id', '=', endpointId)
      .where('webhook_deliveries.id', '=', id)
      .executeTakeFirst(),

  async list(
    scope: TenantScope,
    endpointId: string,
    filter: { status?: WebhookDeliveryRow['status'] | undefined },
    page: { limit: number; offset: number },
  ) {
    let base = scope.selectFrom('webhook_deliveries').where('webhook_deliveries.endpoint_id', '=', endpointId);
    if (filter.status) base = base.where('webhook_deliveries.status', '=', filter.status);
    const rows = base
      .selectAll()
      .orderBy('webhook_deliveries.created_at', 'desc')
      .orderBy('webhook_deliveries.id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return withTotal(rows, base);
  },

  /**
   * The deliveries an event caused, one per endpoint it went to, oldest first. No index leads to them: one on
   * (account_id, event_id) took Postgres' plans of the delivery batches off the primary key, and this is read only
   * when someone opens an event in the console.
   */
  listByEvent: (scope: TenantScope, eventId: string) =>
    scope
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook_deliveries.event_id', '=', eventId)
      .orderBy('webhook_deliveries.created_at')
      .orderBy('webhook_deliveries.id')
      .limit(MAX_WEBHOOK_ENDPOINTS_EVER)
      .execute(),

  update: (scope: TenantScope, id: string, patch: Updateable<WebhookDeliveryTable>) =>
    scope.updateTable('webhook_deliveries').set(patch).where('webhook_deliveries.id', '=', id).execute(),

  /**
   * Makes the endpoint's deliveries of [since, until) with `status` pending again, due at `at`, and
   * returns their ids: one statement, so two replays of one window never both take a delivery.
   */
  takeForReplay: async (
    scope: TenantScope,
    endpointId: string,
    window: { since: string; until: string; status: 'failed' | 'succeeded' },
    at: string,
  ): Promise<string[]> =>
    (
      await scope
        .updateTable('webhook_deliveries')
        .set({ status: 'pending', next_attempt_at: at, updated_at: at })
        .where('webhook_deliveries.endpoint_id', '=', endpointId)
        .where('webhook_deliveries.status', '=', window.status)
        .where('webhook_deliveries.created_at', '>=', window.since)
        .where('webhook_deliveries.created_at', '<', window.until)
        .returning('webhook_deliveries.id')
        .execute()
    ).map((row) => row.id),

  /** The delivery, whatever its endpoint (the worker knows only the delivery id). */
  findByIdAnyEndpoint: (scope: TenantScope, id: string) =>
    scope.selectFrom('webhook_deliveries').selectAll().where('webhook_deliveries.id', '=', id).executeTakeFirst(),

  /**
   * Takes the attempts of these deliveries that are pending and due (their `next_attempt_at` moved
   * to `until`, the end of the jobs' claim), and returns what each attempt needs, in one statement:
   * the delivery, its endpoint's URL and status (null when the endpoint is gone), its event (null
   * once pruned) and the secrets that sign it (those of the account's active webhook keys, oldest
   * first). A delivery whose attempt is not there to take (another job has it, it is not due, or
   * it is finished) is not among them.
   */
  async takeForAttempt(scope: TenantScope, ids: readonly string[], at: { now: string; until: string }) {
    const rows = await takeStatement(scope, ids, at).execute();
    return rows.map((row) => {
      const {
        endpoint_url,
        endpoint_status,
        ev_data,
        ev_conversation_id,
        ev_sequence,
        ev_created_at,
        signing_secrets,
        ...delivery
      } = row;
      return {
        delivery,
        // An array on Postgres, the JSON text of one on SQLite (dialect.listOf); null without keys.
        secrets: (typeof signing_secrets === 'string'
          ? JSON.parse(signing_secrets)
          : (signing_secrets ?? [])) as string[],
        endpoint:
          endpoint_url === null || endpoint_status === null ? null : { url: endpoint_url, status: endpoint_status },
        event:
          ev_data === null || ev_created_at === null
            ? null
            : {
                account_id: delivery.account_id,
                id: delivery.event_id,
                type: delivery.event_type,
                conversation_id: ev_conversation_id,
                sequence: ev_sequence,
                data: ev_data,
                created_at: ev_created_at,
              },
      };
    });
  },

  /** The delivery, locked until the transaction ends, to record an attempt without losing another. */
  findByIdForUpdate: (scope: TenantScope, id: string) =>
    lockedForUpdate(
      scope.dialect,
      scope.selectFrom('webhook_deliveries').selectAll().where('webhook_deliveries.id', '=', id),
    ).executeTakeFirst(),

  /**
   * Changes pending deliveries, each only if its `next_attempt_at` still has the value that was read
   * (nobody took or rescheduled the attempt since), in one statement. The ids of those changed;
   * another job or a retry changed the others.
   */
  async updateIfUnchanged(scope: TenantScope, changes: readonly DeliveryChange[]): Promise<Set<string>> {
    if (changes.length === 0) return new Set();
    const rows = await updateIfUnchangedStatement(scope, changes).execute();
    return new Set(rows.map((row) => row.id));
  },
};
