import { type Selectable, type Updateable, sql } from 'kysely';
import { dialectOf, lockedForUpdate } from '../db/dialect.js';
import type { WebhookDeliveryTable, WebhookEndpointTable } from '../db/schema.js';
import { signingSecretsOf } from './accounts.js';
import type { TenantScope } from './tenant.js';

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

  findById: (scope: TenantScope, id: string) => scope.selectFrom('webhook_endpoints').selectAll().where('webhook_endpoints.id', '=', id).executeTakeFirst(),

  /** Endpoints that receive new deliveries. */
  listEnabled: (scope: TenantScope) => scope.selectFrom('webhook_endpoints').selectAll().where('webhook_endpoints.status', '=', 'enabled').execute(),

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

  delete: (scope: TenantScope, id: string) => scope.deleteFrom('webhook_endpoints').where('webhook_endpoints.id', '=', id).executeTakeFirst(),
};

export const webhookDeliveriesRepository = {
  insert: (scope: TenantScope, rows: Omit<WebhookDeliveryRow, 'account_id'> | Omit<WebhookDeliveryRow, 'account_id'>[]) =>
    scope.insert('webhook_deliveries', rows),

  findById: (scope: TenantScope, endpointId: string, id: string) =>
    scope
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook_deliveries.endpoint_id', '=', endpointId)
      .where('webhook_deliveries.id', '=', id)
      .executeTakeFirst(),

  async list(scope: TenantScope, endpointId: string, filter: { status?: WebhookDeliveryRow['status'] | undefined }, page: { limit: number; offset: number }) {
    let base = scope.selectFrom('webhook_deliveries').where('webhook_deliveries.endpoint_id', '=', endpointId);
    if (filter.status) base = base.where('webhook_deliveries.status', '=', filter.status);
    const [rows, count] = await Promise.all([
      base
        .selectAll()
        .orderBy('webhook_deliveries.created_at', 'desc')
        .orderBy('webhook_deliveries.id', 'desc')
        .limit(page.limit)
        .offset(page.offset)
        .execute(),
      base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
    ]);
    return { rows, total: Number(count.total) };
  },

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
   * Takes the delivery's attempt if it is pending and due (its `next_attempt_at` moved to `until`,
   * the end of the job's claim), and returns what the attempt needs, in one statement: the
   * delivery, its endpoint's URL and status (null when the endpoint is gone), its event (null once
   * pruned) and the secrets that sign it (those of the account's active webhook keys, oldest
   * first). Undefined when the attempt is not there to take: another job has it, it is not due, or
   * the delivery is finished.
   */
  async takeForAttempt(scope: TenantScope, id: string, at: { now: string; until: string }) {
    const dialect = dialectOf(scope.db);
    const ofEndpoint = <T>(column: 'url' | 'status') =>
      sql<T | null>`(select ${sql.ref(`e.${column}`)} from webhook_endpoints e
        where e.account_id = webhook_deliveries.account_id and e.id = webhook_deliveries.endpoint_id)`;
    const ofEvent = <T>(column: 'data' | 'conversation_id' | 'sequence' | 'created_at') =>
      sql<T | null>`(select ${sql.ref(`ev.${column}`)} from events ev
        where ev.account_id = webhook_deliveries.account_id and ev.id = webhook_deliveries.event_id)`;
    const secrets = sql<string[] | string | null>`(select ${dialect.listOf('s.signing_secret')} from ${signingSecretsOf(scope.db, scope.accountId).as('s')})`;
    const row = await scope
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: at.until })
      .where('webhook_deliveries.id', '=', id)
      .where('webhook_deliveries.status', '=', 'pending')
      .where((eb) => eb.or([eb('webhook_deliveries.next_attempt_at', 'is', null), eb('webhook_deliveries.next_attempt_at', '<=', at.now)]))
      .returningAll()
      .returning([
        ofEndpoint<string>('url').as('endpoint_url'),
        ofEndpoint<WebhookEndpointRow['status']>('status').as('endpoint_status'),
        ofEvent<string>('data').as('ev_data'),
        ofEvent<string>('conversation_id').as('ev_conversation_id'),
        ofEvent<number>('sequence').as('ev_sequence'),
        ofEvent<string>('created_at').as('ev_created_at'),
        secrets.as('signing_secrets'),
      ])
      .executeTakeFirst();
    if (!row) return undefined;
    const { endpoint_url, endpoint_status, ev_data, ev_conversation_id, ev_sequence, ev_created_at, signing_secrets, ...delivery } = row;
    return {
      delivery,
      // An array on Postgres, the JSON text of one on SQLite (dialect.listOf); null without keys.
      secrets: (typeof signing_secrets === 'string' ? JSON.parse(signing_secrets) : (signing_secrets ?? [])) as string[],
      endpoint: endpoint_url === null || endpoint_status === null ? null : { url: endpoint_url, status: endpoint_status },
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
  },

  /** The delivery, locked until the transaction ends, to record an attempt without losing another. */
  findByIdForUpdate: (scope: TenantScope, id: string) =>
    lockedForUpdate(scope.db, scope.selectFrom('webhook_deliveries').selectAll().where('webhook_deliveries.id', '=', id)).executeTakeFirst(),

  /**
   * Changes a pending delivery only if its `next_attempt_at` still has the value that was read
   * (nobody took or rescheduled the attempt since). False when another job or a retry did.
   */
  async updateIfUnchanged(scope: TenantScope, id: string, expectedNextAttemptAt: string | null, patch: Updateable<WebhookDeliveryTable>): Promise<boolean> {
    const result = await scope
      .updateTable('webhook_deliveries')
      .set(patch)
      .where('webhook_deliveries.id', '=', id)
      .where('webhook_deliveries.status', '=', 'pending')
      .where('webhook_deliveries.next_attempt_at', expectedNextAttemptAt === null ? 'is' : '=', expectedNextAttemptAt)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  },
};
