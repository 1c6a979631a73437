import type { Insertable } from 'kysely';
import type {
  InvitationTable,
  MembershipTable,
  PasswordResetTable,
  Role,
  SessionTable,
  UserTable,
} from '../db/schema.js';
import type { Executor } from './tenant.js';

// People are the console's tables: a user and a session belong to no account, and a session is
// found by its token's hash before its account is known, as an API key is.

export const usersRepository = {
  insert: (db: Executor, row: Insertable<UserTable>) => db.insertInto('users').values(row).execute(),
  findById: (db: Executor, id: string) => db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst(),
  findByEmail: (db: Executor, email: string) =>
    db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst(),
  setPassword: (db: Executor, id: string, passwordHash: string, at: string) =>
    db.updateTable('users').set({ password_hash: passwordHash, updated_at: at }).where('id', '=', id).execute(),
};

export const membershipsRepository = {
  insert: (db: Executor, row: Insertable<MembershipTable>) => db.insertInto('memberships').values(row).execute(),
  find: (db: Executor, accountId: string, userId: string) =>
    db
      .selectFrom('memberships')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('user_id', '=', userId)
      .executeTakeFirst(),
  /** The accounts of a user, oldest membership first, with their names. */
  listByUser: (db: Executor, userId: string) =>
    db
      .selectFrom('memberships')
      .innerJoin('accounts', 'accounts.id', 'memberships.account_id')
      .select(['memberships.account_id', 'memberships.role', 'memberships.created_at', 'accounts.name as account_name'])
      .where('memberships.user_id', '=', userId)
      .orderBy('memberships.created_at')
      .orderBy('memberships.account_id')
      .execute(),
  /** The members of an account, with their e-mail and name, oldest first. */
  listByAccount: (db: Executor, accountId: string) =>
    db
      .selectFrom('memberships')
      .innerJoin('users', 'users.id', 'memberships.user_id')
      .select(['memberships.user_id', 'memberships.role', 'memberships.created_at', 'users.email', 'users.name'])
      .where('memberships.account_id', '=', accountId)
      .orderBy('memberships.created_at')
      .orderBy('memberships.user_id')
      .execute(),
  countOwners: async (db: Executor, accountId: string) =>
    Number(
      (
        await db
          .selectFrom('memberships')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('account_id', '=', accountId)
          .where('role', '=', 'owner')
          .executeTakeFirstOrThrow()
      ).n,
    ),
  delete: (db: Executor, accountId: string, userId: string) =>
    db.deleteFrom('memberships').where('account_id', '=', accountId).where('user_id', '=', userId).executeTakeFirst(),
  setRole: (db: Executor, accountId: string, userId: string, role: Role) =>
    db
      .updateTable('memberships')
      .set({ role })
      .where('account_id', '=', accountId)
      .where('user_id', '=', userId)
      .execute(),
};

export const sessionsRepository = {
  insert: (db: Executor, row: Insertable<SessionTable>) => db.insertInto('sessions').values(row).execute(),
  /** The unexpired session of a token's hash, with its user. */
  findActive: (db: Executor, tokenHash: string, at: string) =>
    db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .select([
        'sessions.token_hash',
        'sessions.account_id',
        'sessions.expires_at',
        'users.id as user_id',
        'users.email',
        'users.name',
      ])
      .where('sessions.token_hash', '=', tokenHash)
      .where('sessions.expires_at', '>', at)
      .executeTakeFirst(),
  setAccount: (db: Executor, tokenHash: string, accountId: string) =>
    db.updateTable('sessions').set({ account_id: accountId }).where('token_hash', '=', tokenHash).execute(),
  delete: (db: Executor, tokenHash: string) => db.deleteFrom('sessions').where('token_hash', '=', tokenHash).execute(),
  deleteByUser: (db: Executor, userId: string) => db.deleteFrom('sessions').where('user_id', '=', userId).execute(),
  /** Sessions that ended by themselves, swept when a new one starts. */
  deleteExpired: (db: Executor, at: string) => db.deleteFrom('sessions').where('expires_at', '<=', at).execute(),
};

export const invitationsRepository = {
  insert: (db: Executor, row: Insertable<InvitationTable>) => db.insertInto('invitations').values(row).execute(),
  findByTokenHash: (db: Executor, tokenHash: string) =>
    db
      .selectFrom('invitations')
      .innerJoin('accounts', 'accounts.id', 'invitations.account_id')
      .selectAll('invitations')
      .select('accounts.name as account_name')
      .where('invitations.token_hash', '=', tokenHash)
      .executeTakeFirst(),
  /** Invitations not yet accepted, revoked or expired, newest first. */
  listPending: (db: Executor, accountId: string, at: string) =>
    db
      .selectFrom('invitations')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', at)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute(),
  /** Marks it accepted unless something else ended it first; true when this call did. */
  accept: async (db: Executor, accountId: string, id: string, userId: string, at: string) =>
    (
      await db
        .updateTable('invitations')
        .set({ accepted_at: at, accepted_by: userId })
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .where('accepted_at', 'is', null)
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', at)
        .executeTakeFirst()
    ).numUpdatedRows > 0n,
  revoke: async (db: Executor, accountId: string, id: string, at: string) =>
    (
      await db
        .updateTable('invitations')
        .set({ revoked_at: at })
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .where('accepted_at', 'is', null)
        .where('revoked_at', 'is', null)
        .executeTakeFirst()
    ).numUpdatedRows > 0n,
};

export const passwordResetsRepository = {
  insert: (db: Executor, row: Insertable<PasswordResetTable>) => db.insertInto('password_resets').values(row).execute(),
  /** Uses the link once: true when it was unused and unexpired. */
  use: async (db: Executor, tokenHash: string, at: string) =>
    (
      await db
        .updateTable('password_resets')
        .set({ used_at: at })
        .where('token_hash', '=', tokenHash)
        .where('used_at', 'is', null)
        .where('expires_at', '>', at)
        .executeTakeFirst()
    ).numUpdatedRows > 0n,
  find: (db: Executor, tokenHash: string) =>
    db.selectFrom('password_resets').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst(),
};
