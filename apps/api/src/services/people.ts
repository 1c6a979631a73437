import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '@convo/core';
import { randomBytes } from 'node:crypto';
import type { DatabaseHandle } from '../db/database.js';
import type { Role } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { newId, nextUlid, now } from '../ids.js';
import { hashKey } from '../keys.js';
import { UNKNOWN_USER_HASH, hashPassword, verifyPassword } from '../passwords.js';
import { accountsRepository } from '../repositories/accounts.js';
import type { Executor } from '../repositories/tenant.js';
import {
  invitationsRepository,
  membershipsRepository,
  passwordResetsRepository,
  sessionsRepository,
  usersRepository,
} from '../repositories/people.js';
import { type Plan, rateLimitOf } from './accounts.js';
import { type AccountContext, type UnscopedContext, transaction } from './context.js';

/** How long a session lasts from sign-in; sign-out and a password change end it sooner. */
export const SESSION_TTL_MS = 14 * 24 * 60 * 60 * 1000;
/** How long an invitation link works. */
export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** How long an operator's password-reset link works. */
export const PASSWORD_RESET_TTL_MS = 60 * 60 * 1000;
/** Roles that manage keys, webhook endpoints, channels and members (CONTRACT: Console and people). */
export const MANAGER_ROLES: readonly Role[] = ['owner', 'admin'];

/** A signed-in person as the console sees them, in the account the session is on. */
export interface SessionView {
  user: { id: string; email: string; name: string | null };
  account: { id: string; name: string; plan: Plan; rate_limit: number };
  role: Role;
  accounts: { id: string; name: string; role: Role }[];
}

/** A session found from its cookie: what procedures act with. */
export interface ActiveSession extends SessionView {
  tokenHash: string;
}

/** Random tokens (sessions, invitations, resets): 256 bits, stored as their SHA-256 only. */
const newToken = () => randomBytes(32).toString('base64url');

const newUserId = () => `usr_${nextUlid()}`;
const newInvitationId = () => `inv_${nextUlid()}`;

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

function checkPassword(password: string, field = 'password'): void {
  if (password.length < PASSWORD_MIN_LENGTH)
    throw ApiError.badRequest(
      field,
      'min_length',
      `The password must be at least ${PASSWORD_MIN_LENGTH} characters long`,
    );
  if (password.length > PASSWORD_MAX_LENGTH)
    throw ApiError.badRequest(
      field,
      'max_length',
      `The password must be at most ${PASSWORD_MAX_LENGTH} characters long`,
    );
}

/** A new password ends every session of the person (CONTRACT: Console and people). */
async function replacePassword(db: Executor, userId: string, passwordHash: string): Promise<void> {
  await usersRepository.setPassword(db, userId, passwordHash, now());
  await sessionsRepository.deleteByUser(db, userId);
}

/** Starts a session for `userId` on `accountId`; the token goes into the cookie, its hash into the table. */
async function startSession(database: DatabaseHandle, userId: string, accountId: string): Promise<string> {
  const token = newToken();
  const at = Date.now();
  await sessionsRepository.deleteExpired(database.db, new Date(at).toISOString());
  await sessionsRepository.insert(database.db, {
    token_hash: hashKey(token),
    user_id: userId,
    account_id: accountId,
    created_at: new Date(at).toISOString(),
    expires_at: new Date(at + SESSION_TTL_MS).toISOString(),
  });
  return token;
}

async function viewOf(
  database: DatabaseHandle,
  user: SessionView['user'],
  accountId: string,
): Promise<SessionView | undefined> {
  const memberships = await membershipsRepository.listByUser(database.db, user.id);
  const current = memberships.find((m) => m.account_id === accountId) ?? memberships[0];
  if (!current) return undefined;
  const account = await accountsRepository.findById(database.db, current.account_id);
  if (!account) return undefined;
  return {
    user,
    account: { id: account.id, name: account.name, plan: account.plan, rate_limit: rateLimitOf(account) },
    role: current.role,
    accounts: memberships.map((m) => ({ id: m.account_id, name: m.account_name, role: m.role })),
  };
}

/** What a verb a signed-in person calls gets: their session (the console's procedures pass their context). */
export interface SessionContext extends UnscopedContext {
  session: ActiveSession;
}

export const peopleService = {
  /**
   * Sign-up: a new user and either a new account on the `free` plan that they own, or, with an
   * invitation's token, a membership of the inviting account in the invitation's role.
   */
  async signUp(
    { database }: UnscopedContext,
    input: {
      email: string;
      password: string;
      name?: string | undefined;
      accountName?: string | undefined;
      invitation?: string | undefined;
    },
  ): Promise<{ token: string }> {
    const email = normalizeEmail(input.email);
    checkPassword(input.password);
    if (!input.invitation && !input.accountName?.trim())
      throw ApiError.badRequest('account_name', 'required', 'Name the account to create');
    const passwordHash = await hashPassword(input.password);
    return transaction({ database }, async ({ database: tx }) => {
      const trx = tx.db;
      if (await usersRepository.findByEmail(trx, email))
        throw ApiError.badRequest('email', 'unique', 'An account already uses this e-mail address; sign in instead');
      const at = now();
      const user = {
        id: newUserId(),
        email,
        name: input.name?.trim() || null,
        password_hash: passwordHash,
        created_at: at,
        updated_at: at,
      };
      await usersRepository.insert(trx, user);
      let accountId: string;
      if (input.invitation) {
        accountId = await acceptInvitation(tx, user.id, input.invitation);
      } else {
        accountId = newId('account');
        await accountsRepository.insert(trx, {
          id: accountId,
          name: (input.accountName as string).trim(),
          plan: 'free',
          rate_limit_rpm: null,
          created_at: at,
          updated_at: at,
        });
        await membershipsRepository.insert(trx, {
          account_id: accountId,
          user_id: user.id,
          role: 'owner',
          created_at: at,
        });
      }
      return { token: await startSession(tx, user.id, accountId) };
    });
  },

  /** Sign-in with e-mail and password; 401 for either wrong, after the same work either way. */
  async signIn({ database }: UnscopedContext, input: { email: string; password: string }): Promise<{ token: string }> {
    const user = await usersRepository.findByEmail(database.db, normalizeEmail(input.email));
    const matches = await verifyPassword(input.password, user?.password_hash ?? UNKNOWN_USER_HASH);
    if (!user || !matches) throw ApiError.unauthorized('Wrong e-mail address or password');
    const memberships = await membershipsRepository.listByUser(database.db, user.id);
    const first = memberships[0];
    if (!first) throw ApiError.forbidden('This person is a member of no account any more');
    return { token: await startSession(database, user.id, first.account_id) };
  },

  /** The session of a cookie's token, or undefined when it is unknown, expired or has no account left. */
  async resolve({ database }: UnscopedContext, token: string | undefined): Promise<ActiveSession | undefined> {
    if (!token) return undefined;
    const tokenHash = hashKey(token);
    const row = await sessionsRepository.findActive(database.db, tokenHash, now());
    if (!row) return undefined;
    const view = await viewOf(database, { id: row.user_id, email: row.email, name: row.name }, row.account_id);
    return view && { ...view, tokenHash };
  },

  signOut: ({ database, session }: SessionContext) => sessionsRepository.delete(database.db, session.tokenHash),

  /** Changes the password and ends every session of the person; the caller gets a new one. */
  async changePassword(
    { database, session }: SessionContext,
    input: { currentPassword: string; newPassword: string },
  ): Promise<{ token: string }> {
    checkPassword(input.newPassword, 'new_password');
    const user = await usersRepository.findById(database.db, session.user.id);
    if (!user || !(await verifyPassword(input.currentPassword, user.password_hash)))
      throw ApiError.badRequest('current_password', 'format', 'The current password is wrong');
    const passwordHash = await hashPassword(input.newPassword);
    return transaction({ database }, async ({ database: tx }) => {
      const trx = tx.db;
      await replacePassword(trx, user.id, passwordHash);
      return { token: await startSession(tx, user.id, session.account.id) };
    });
  },

  async switchAccount({ database, session }: SessionContext, accountId: string): Promise<void> {
    if (!(await membershipsRepository.find(database.db, accountId, session.user.id)))
      throw ApiError.notFound('account', accountId);
    await sessionsRepository.setAccount(database.db, session.tokenHash, accountId);
  },

  /** A link the owner copies; the token is in it and nowhere else. */
  async createInvitation({ database, session }: SessionContext, role: Exclude<Role, 'owner'>) {
    const token = newToken();
    const at = Date.now();
    const row = {
      account_id: session.account.id,
      id: newInvitationId(),
      token_hash: hashKey(token),
      role,
      created_by: session.user.id,
      created_at: new Date(at).toISOString(),
      expires_at: new Date(at + INVITATION_TTL_MS).toISOString(),
      accepted_at: null,
      accepted_by: null,
      revoked_at: null,
    };
    await invitationsRepository.insert(database.db, row);
    return { row, token };
  },

  listInvitations: ({ database, accountId }: AccountContext) =>
    invitationsRepository.listPending(database.db, accountId, now()),

  async revokeInvitation({ database, accountId }: AccountContext, id: string): Promise<void> {
    if (!(await invitationsRepository.revoke(database.db, accountId, id, now())))
      throw ApiError.notFound('invitation', id);
  },

  /** What an invitation link offers, for the page that opens it; 404 once it is used, revoked or expired. */
  async lookupInvitation({ database }: UnscopedContext, token: string) {
    const row = await invitationsRepository.findByTokenHash(database.db, hashKey(token));
    if (!row || row.accepted_at !== null || row.revoked_at !== null || row.expires_at <= now())
      throw ApiError.notFound('invitation');
    return { account_name: row.account_name, role: row.role, expires_at: row.expires_at };
  },

  /** A signed-in person accepts an invitation; the session moves to that account. */
  async acceptInvitation({ database, session }: SessionContext, token: string): Promise<void> {
    await transaction({ database }, async ({ database: tx }) => {
      const trx = tx.db;
      const accountId = await acceptInvitation(tx, session.user.id, token);
      await sessionsRepository.setAccount(trx, session.tokenHash, accountId);
    });
  },

  listMembers: ({ database, accountId }: AccountContext) => membershipsRepository.listByAccount(database.db, accountId),

  /** Removes a member and ends their sessions on that account; the last owner stays. */
  async removeMember({ database, session }: SessionContext, userId: string): Promise<void> {
    await transaction({ database }, async ({ database: tx }) => {
      const trx = tx.db;
      const membership = await membershipsRepository.find(trx, session.account.id, userId);
      if (!membership) throw ApiError.notFound('member', userId);
      if (membership.role === 'owner' && session.role !== 'owner')
        throw ApiError.forbidden('Only an owner can remove an owner');
      if (membership.role === 'owner' && (await membershipsRepository.countOwners(trx, session.account.id)) <= 1)
        throw ApiError.badRequest('user_id', 'format', 'The last owner of an account cannot be removed');
      await membershipsRepository.delete(trx, session.account.id, userId);
    });
  },

  // The operator's commands (convo-server users …).

  /** A person with a password and a role in an existing account (or that role added to an existing person). */
  async createUser(
    { database }: UnscopedContext,
    input: { email: string; password: string; accountId: string; role: Role; name?: string | undefined },
  ) {
    const email = normalizeEmail(input.email);
    if (!(await accountsRepository.findById(database.db, input.accountId)))
      throw new Error(`No such account: ${input.accountId}`);
    const existing = await usersRepository.findByEmail(database.db, email);
    const at = now();
    const user = existing ?? {
      id: newUserId(),
      email,
      name: input.name ?? null,
      password_hash: await hashPassword(input.password),
      created_at: at,
      updated_at: at,
    };
    await transaction({ database }, async ({ database: tx }) => {
      const trx = tx.db;
      if (!existing) await usersRepository.insert(trx, user);
      if (await membershipsRepository.find(trx, input.accountId, user.id))
        await membershipsRepository.setRole(trx, input.accountId, user.id, input.role);
      else
        await membershipsRepository.insert(trx, {
          account_id: input.accountId,
          user_id: user.id,
          role: input.role,
          created_at: at,
        });
    });
    return { id: user.id, email, created: !existing };
  },

  findUserByEmail: ({ database }: UnscopedContext, email: string) =>
    usersRepository.findByEmail(database.db, normalizeEmail(email)),

  /** Sets a person's password (the demo's, printed at each start) and ends their sessions. */
  async setPassword({ database }: UnscopedContext, { email, password }: { email: string; password: string }) {
    checkPassword(password);
    const user = await usersRepository.findByEmail(database.db, normalizeEmail(email));
    if (!user) throw new Error(`No such user: ${email}`);
    const passwordHash = await hashPassword(password);
    await transaction({ database }, async ({ database: tx }) => {
      const trx = tx.db;
      await replacePassword(trx, user.id, passwordHash);
    });
  },

  /** A one-time link to set a new password; the token is in it and nowhere else. */
  async createPasswordReset(
    { database }: UnscopedContext,
    email: string,
  ): Promise<{ token: string; expiresAt: string }> {
    const user = await usersRepository.findByEmail(database.db, normalizeEmail(email));
    if (!user) throw new Error(`No such user: ${email}`);
    const token = newToken();
    const at = Date.now();
    const expiresAt = new Date(at + PASSWORD_RESET_TTL_MS).toISOString();
    await passwordResetsRepository.insert(database.db, {
      token_hash: hashKey(token),
      user_id: user.id,
      created_at: new Date(at).toISOString(),
      expires_at: expiresAt,
      used_at: null,
    });
    return { token, expiresAt };
  },

  /** Sets a new password from a reset link (once), ends every session and signs this browser in. */
  async resetPassword(
    { database }: UnscopedContext,
    input: { token: string; newPassword: string },
  ): Promise<{ token: string }> {
    checkPassword(input.newPassword, 'new_password');
    const passwordHash = await hashPassword(input.newPassword);
    const tokenHash = hashKey(input.token);
    return transaction({ database }, async ({ database: tx }) => {
      const trx = tx.db;
      const reset = await passwordResetsRepository.find(trx, tokenHash);
      if (!reset || !(await passwordResetsRepository.use(trx, tokenHash, now())))
        throw ApiError.notFound('password reset link');
      await replacePassword(trx, reset.user_id, passwordHash);
      const first = (await membershipsRepository.listByUser(trx, reset.user_id))[0];
      if (!first) throw ApiError.forbidden('This person is a member of no account any more');
      return { token: await startSession(tx, reset.user_id, first.account_id) };
    });
  },
};

/** Uses an invitation for `userId` (in the caller's transaction): their membership, and the account's id. */
async function acceptInvitation(database: DatabaseHandle, userId: string, token: string): Promise<string> {
  const invitation = await invitationsRepository.findByTokenHash(database.db, hashKey(token));
  const at = now();
  if (
    !invitation ||
    !(await invitationsRepository.accept(database.db, invitation.account_id, invitation.id, userId, at))
  )
    throw ApiError.notFound('invitation');
  if (!(await membershipsRepository.find(database.db, invitation.account_id, userId)))
    await membershipsRepository.insert(database.db, {
      account_id: invitation.account_id,
      user_id: userId,
      role: invitation.role,
      created_at: at,
    });
  return invitation.account_id;
}
