import type { Insertable, Selectable } from 'kysely';
import { type Dialect, lockedForUpdate } from '../db/dialect.js';
import type { AccountTable, ApiKeyTable } from '../db/schema.js';
import { prepared } from './prepared.js';
import type { Executor } from './tenant.js';

export type AccountRow = Selectable<AccountTable>;
export type ApiKeyRow = Selectable<ApiKeyTable>;

// Accounts and keys are the operator's tables: they are looked up across accounts
// (a key is found by its hash before its account is known).

export const accountsRepository = {
  insert: (db: Executor, row: Insertable<AccountTable>) => db.insertInto('accounts').values(row).execute(),

  findById: (db: Executor, id: string) => db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst(),

  findByName: (db: Executor, name: string) =>
    db.selectFrom('accounts').selectAll().where('name', '=', name).orderBy('created_at').executeTakeFirst(),

  /**
   * Holds the account's row until the transaction ends, so that changes that count the account's
   * records first (its next order number, its number of webhook endpoints) take turns (Postgres;
   * SQLite's write transactions already run one at a time). Without a key lock: every insert of
   * the account's rows checks its foreign key on this row, and must not wait for, or deadlock with, it.
   */
  lock: (db: Executor, dialect: Dialect, id: string) =>
    lockedForUpdate(dialect, db.selectFrom('accounts').select('accounts.id').where('accounts.id', '=', id), {
      keysKept: true,
    }).execute(),
};

/** The query of signingSecrets, for a statement that reads them with other things (a delivery's take). */
export const signingSecretsOf = (db: Executor, accountId: string) =>
  db
    .selectFrom('api_keys')
    .select('signing_secret')
    .where('account_id', '=', accountId)
    .where('type', '=', 'webhook')
    .where('revoked_at', 'is', null)
    .where('signing_secret', 'is not', null)
    .orderBy('created_at')
    .orderBy('id');

export const apiKeysRepository = {
  insert: (db: Executor, row: Insertable<ApiKeyTable>) => db.insertInto('api_keys').values(row).execute(),

  /** The active key with this hash, with its account (every request: compiled once). */
  findActiveByHash: async (db: Executor, dialect: Dialect, keyHash: string) =>
    (await findActiveByHashQuery({ db, dialect }, keyHash)).rows[0],

  findById: (db: Executor, id: string) => db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst(),

  listByAccount: (db: Executor, accountId: string) =>
    db
      .selectFrom('api_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute(),

  touch: (db: Executor, id: string, at: string) =>
    db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute(),

  /** The secrets of the account's active webhook keys, oldest first: what signs what Convo POSTs. */
  signingSecrets: async (db: Executor, accountId: string) =>
    (await signingSecretsOf(db, accountId).execute()).map((row) => row.signing_secret as string),

  /** Any key with this hash, revoked or not: what a refused key's 401 says. */
  findByHash: (db: Executor, keyHash: string) =>
    db.selectFrom('api_keys').select(['redacted', 'revoked_at']).where('key_hash', '=', keyHash).executeTakeFirst(),

  revoke: (db: Executor, id: string, at: string, by: string) =>
    db
      .updateTable('api_keys')
      .set({ revoked_at: at, revoked_by: by })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst(),
};

const accountColumns = [
  'accounts.name as account_name',
  'accounts.plan as account_plan',
  'accounts.rate_limit_rpm as account_rate_limit_rpm',
] as const;

const activeKey = (db: Executor, keyHash: string) =>
  db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .where('api_keys.key_hash', '=', keyHash)
    .where('api_keys.revoked_at', 'is', null);

const findActiveByHashQuery = prepared((db: Executor, _dialect: Dialect, keyHash: string) =>
  activeKey(db, keyHash).selectAll('api_keys').select(accountColumns),
);
