import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { buildServer } from '../http/server.js';
import { peopleService } from '../services/people.js';
import { describeEachDialect, testSettings } from '../testing/harness.js';
import { ConsoleClient } from '../testing/console-client.js';
import { openEventStream } from '../testing/event-stream-client.js';

const PASSWORD = 'correct horse battery';
let people = 0;
/** A fresh address per person, so that tests sharing a server never meet. */
const nextEmail = (who: string) => `${who}.${process.pid}.${++people}@example.com`;

describeEachDialect('console', (server) => {
  const origin = () => new URL(server().baseUrl).origin;
  let seq = 0;
  const api = (key: string, method = 'GET', path = '/conversations') =>
    server().request(method, path, { key, ...(method === 'POST' ? { body: {} } : {}) });

  /** A person who signed up with their own account, signed in. */
  async function owner(accountName = 'Acme') {
    const client = new ConsoleClient(origin());
    const email = nextEmail('owner');
    const answer = await client.mutate('session.signUp', {
      email,
      password: PASSWORD,
      name: 'Olive Owner',
      account_name: accountName,
    });
    expect(answer.status, JSON.stringify(answer.error)).toBe(200);
    return { client, email, session: answer.data };
  }

  /** A person invited into `inviter`'s account in `role`, signed in. */
  async function invited(inviter: ConsoleClient, role: 'admin' | 'member') {
    const invitation = await inviter.mutate('invitations.create', { role });
    expect(invitation.status).toBe(200);
    const token = new URL(invitation.data.url).pathname.split('/').pop();
    const client = new ConsoleClient(origin());
    const email = nextEmail(role);
    const answer = await client.mutate('session.signUp', { email, password: PASSWORD, invitation: token });
    expect(answer.status, JSON.stringify(answer.error)).toBe(200);
    return { client, email, session: answer.data, token };
  }

  describe('sign-up, sign-in and sign-out', () => {
    it('creates an account on the free plan and its owner, signed in by an HttpOnly SameSite=Lax cookie', async () => {
      const { client, email, session } = await owner('Sign-up Ltd');
      expect(session).toMatchObject({
        user: { email, name: 'Olive Owner' },
        role: 'owner',
        account: { name: 'Sign-up Ltd', plan: 'free', rate_limit: 60 },
      });
      expect(session.accounts).toEqual([{ id: session.account.id, name: 'Sign-up Ltd', role: 'owner' }]);
      expect(client.lastSetCookie).toMatch(/^convo_session=[A-Za-z0-9_-]{43};/);
      expect(client.lastSetCookie).toMatch(/; HttpOnly/);
      expect(client.lastSetCookie).toMatch(/; SameSite=Lax/);
      expect(client.lastSetCookie).toMatch(/; Path=\/console/);
      expect(client.lastSetCookie).not.toMatch(/; Secure/);
      expect((await client.query('session.get')).data).toEqual(session);
      // Stored hashed: the cookie's token is nowhere in the sessions table.
      const token = client.cookie?.split('=')[1] as string;
      const rows = await server().database.db.selectFrom('sessions').selectAll().execute();
      expect(JSON.stringify(rows)).not.toContain(token);
      const users = await server()
        .database.db.selectFrom('users')
        .select('password_hash')
        .where('email', '=', email)
        .execute();
      expect(users[0]?.password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
      expect(users[0]?.password_hash).not.toContain(PASSWORD);
    });

    it('refuses a taken e-mail, a short password and a missing account name with the field and the constraint', async () => {
      const { email } = await owner();
      const client = new ConsoleClient(origin());
      const taken = await client.mutate('session.signUp', {
        email: email.toUpperCase(),
        password: PASSWORD,
        account_name: 'Again',
      });
      expect(taken.status).toBe(400);
      expect(taken.error.error.details).toMatchObject({ field: 'email', constraint: 'unique' });
      const short = await client.mutate('session.signUp', {
        email: nextEmail('short'),
        password: 'short',
        account_name: 'X',
      });
      expect(short.status).toBe(400);
      expect(short.error.error.details).toMatchObject({ field: 'password', constraint: 'min_length' });
      const invalid = await client.mutate('session.signUp', {
        email: 'not-an-address',
        password: PASSWORD,
        account_name: 'X',
      });
      expect(invalid.error.error.details).toMatchObject({ field: 'email', constraint: 'format' });
      const noAccount = await client.mutate('session.signUp', { email: nextEmail('noaccount'), password: PASSWORD });
      expect(noAccount.status).toBe(400);
      expect(noAccount.error.error.details).toMatchObject({ field: 'account_name', constraint: 'required' });
      expect(client.cookie).toBeUndefined();
    });

    it('signs in with the right password only, and sign-out ends the session on the server', async () => {
      const { email } = await owner();
      const client = new ConsoleClient(origin());
      const wrong = await client.mutate('session.signIn', { email, password: 'wrong password!' });
      expect(wrong.status).toBe(401);
      expect(wrong.error.error.code).toBe('unauthorized');
      const unknown = await client.mutate('session.signIn', { email: nextEmail('nobody'), password: PASSWORD });
      expect(unknown.status).toBe(401);
      expect(unknown.error.error.message).toBe(wrong.error.error.message);
      expect(client.cookie).toBeUndefined();

      const signedIn = await client.mutate('session.signIn', { email: ` ${email.toUpperCase()} `, password: PASSWORD });
      expect(signedIn.status).toBe(200);
      expect(signedIn.data.user.email).toBe(email);
      const cookie = client.cookie;
      expect((await client.mutate('session.signOut')).status).toBe(200);
      expect(client.lastSetCookie).toMatch(/^convo_session=;/);
      // The old cookie, replayed, opens nothing: the session is gone from the server.
      client.cookie = cookie;
      expect((await client.query('session.get')).data).toBeNull();
      expect((await client.query('keys.list')).status).toBe(401);
    });

    it('limits failed sign-ins per e-mail and address: past ten, even the right password is 429 with Retry-After', async () => {
      const { email } = await owner();
      const client = new ConsoleClient(origin());
      for (let i = 0; i < 10; i++)
        expect((await client.mutate('session.signIn', { email, password: `wrong ${i} password` })).status).toBe(401);
      const blocked = await client.mutate('session.signIn', { email, password: PASSWORD });
      expect(blocked.status).toBe(429);
      expect(blocked.error.error.code).toBe('rate_limited');
      expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(client.cookie).toBeUndefined();
    });

    it("a stranger's wrong passwords from another address do not lock the owner out", async () => {
      const { email } = await owner();
      // Distinct loopback addresses: the server sees each as its own client (request.ip).
      const stranger = new ConsoleClient(origin(), { localAddress: '127.0.0.2' });
      for (let i = 0; i < 10; i++)
        expect((await stranger.mutate('session.signIn', { email, password: `guess ${i} password` })).status).toBe(401);
      expect((await stranger.mutate('session.signIn', { email, password: 'guess 10 password' })).status).toBe(429);
      expect((await stranger.mutate('session.signIn', { email, password: PASSWORD })).status).toBe(429);

      const ownerElsewhere = new ConsoleClient(origin(), { localAddress: '127.0.0.3' });
      const signedIn = await ownerElsewhere.mutate('session.signIn', { email, password: PASSWORD });
      expect(signedIn.status, JSON.stringify(signedIn.error)).toBe(200);
      expect(signedIn.data.user.email).toBe(email);
      // The owner's success clears nothing of the stranger's.
      const still = await stranger.mutate('session.signIn', { email, password: PASSWORD });
      expect(still.status).toBe(429);
      expect(Number(still.headers.get('retry-after'))).toBeGreaterThan(0);
    });

    it('a password change ends every session of the person and keeps this browser signed in', async () => {
      const { client, email } = await owner();
      const elsewhere = new ConsoleClient(origin());
      expect((await elsewhere.mutate('session.signIn', { email, password: PASSWORD })).status).toBe(200);
      const wrong = await client.mutate('session.changePassword', {
        current_password: 'not it at all',
        new_password: 'a new password 123',
      });
      expect(wrong.status).toBe(400);
      expect(wrong.error.error.details).toMatchObject({ field: 'current_password' });
      const changed = await client.mutate('session.changePassword', {
        current_password: PASSWORD,
        new_password: 'a new password 123',
      });
      expect(changed.status).toBe(200);
      expect((await client.query('session.get')).data.user.email).toBe(email);
      expect((await elsewhere.query('session.get')).data).toBeNull();
      expect((await new ConsoleClient(origin()).mutate('session.signIn', { email, password: PASSWORD })).status).toBe(
        401,
      );
      expect(
        (await new ConsoleClient(origin()).mutate('session.signIn', { email, password: 'a new password 123' })).status,
      ).toBe(200);
    });

    it("an operator's reset link sets a new password once and ends the old sessions", async () => {
      const { client, email } = await owner();
      const { token } = await peopleService.createPasswordReset({ database: server().database }, email);
      const browser = new ConsoleClient(origin());
      const reset = await browser.mutate('session.resetPassword', { token, new_password: 'reset password 456' });
      expect(reset.status).toBe(200);
      expect(reset.data.user.email).toBe(email);
      expect((await client.query('session.get')).data).toBeNull();
      expect((await browser.mutate('session.resetPassword', { token, new_password: 'another one 789' })).status).toBe(
        404,
      );
      expect(
        (await new ConsoleClient(origin()).mutate('session.signIn', { email, password: 'reset password 456' })).status,
      ).toBe(200);
    });
  });

  describe('API keys', () => {
    it('generates a key shown once that answers the API, lists it without its value, and revokes it for the very next request', async () => {
      const { client, email } = await owner();
      const created = await client.mutate('keys.create', { name: 'Production', type: 'full_access' });
      expect(created.status).toBe(200);
      const { key, ...listed } = created.data;
      expect(key).toMatch(/^convo_sk_/);
      expect(listed.last_four).toBe(key.slice(-4));
      expect((await api(key)).status).toBe(200);

      const list = await client.query('keys.list');
      expect(list.data).toEqual([{ ...listed, last_used_at: expect.any(String) }]);
      expect(JSON.stringify(list.data)).not.toContain(key);
      expect(Object.keys(list.data[0]).sort()).toEqual([
        'created_at',
        'id',
        'last_four',
        'last_used_at',
        'name',
        'redacted',
        'revoked_at',
        'revoked_by',
        'type',
      ]);
      expect(list.data[0]).toMatchObject({ revoked_at: null, revoked_by: null });

      const revoked = await client.mutate('keys.revoke', { id: listed.id });
      expect(revoked.status).toBe(200);
      expect(revoked.data).toEqual({ id: listed.id, revoked_at: expect.any(String), revoked_by: email });
      // The revoked key stays listed, with when and by whom; its 401 says it was revoked, an unknown key's does not.
      const after = await client.query('keys.list');
      expect(after.data).toEqual([{ ...listed, last_used_at: expect.any(String), ...revoked.data }]);
      const refused = await api(key);
      expect(refused.status).toBe(401);
      expect(refused.body.error.message).toBe(
        `This API key (${listed.redacted}) was revoked at ${revoked.data.revoked_at}`,
      );
      const unknown = await api(`${key.slice(0, -4)}0000`);
      expect(unknown.body.error.message).toBe('Invalid API key');
      expect((await client.mutate('keys.revoke', { id: listed.id })).status).toBe(404);
    });

    it('read-only keys cannot write and webhook keys cannot call the API', async () => {
      const { client } = await owner();
      const readOnly = (await client.mutate('keys.create', { name: 'Reports', type: 'read_only' })).data.key;
      expect(readOnly).toMatch(/^convo_rk_/);
      expect((await api(readOnly)).status).toBe(200);
      expect((await api(readOnly, 'POST', '/contacts')).status).toBe(403);
      const webhook = (await client.mutate('keys.create', { name: 'Signing', type: 'webhook' })).data.key;
      expect(webhook).toMatch(/^whsec_/);
      expect((await api(webhook)).status).toBe(403);
    });

    it('refuses a key without a name or of an unknown type with the field and the constraint', async () => {
      const { client } = await owner();
      const unnamed = await client.mutate('keys.create', { name: '  ', type: 'full_access' });
      expect(unnamed.status).toBe(400);
      expect(unnamed.error.error.details).toMatchObject({ field: 'name', constraint: 'min_length' });
      const badType = await client.mutate('keys.create', { name: 'x', type: 'root' });
      expect(badType.error.error.details).toMatchObject({ field: 'type', constraint: 'enum' });
    });

    it('an API key opens no console call, and the API router has none of them', async () => {
      const { client } = await owner();
      const key = (await client.mutate('keys.create', { name: 'k', type: 'full_access' })).data.key;
      const withKey = new ConsoleClient(origin());
      const listed = await withKey.query('keys.list', undefined, { authorization: `Bearer ${key}` });
      expect(listed.status).toBe(401);
      const made = await withKey.mutate(
        'keys.create',
        { name: 'x', type: 'full_access' },
        { headers: { authorization: `Bearer ${key}` } },
      );
      expect(made.status).toBe(401);
      const viaApiRouter = await fetch(`${origin()}/trpc/keys.list`, { headers: { authorization: `Bearer ${key}` } });
      expect(viaApiRouter.status).toBe(404);
      expect((await fetch(`${origin()}/v1/keys`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(404);
    });
  });

  describe('CSRF', () => {
    it('refuses a state-changing call without the console Origin or without its header', async () => {
      const { client } = await owner();
      for (const options of [{ origin: null }, { origin: 'https://evil.example' }, { csrf: false }]) {
        const answer = await client.mutate('keys.create', { name: 'csrf', type: 'full_access' }, options);
        expect(answer.status, JSON.stringify(options)).toBe(403);
        expect(answer.error.error.code).toBe('forbidden');
      }
      const signIn = await new ConsoleClient(origin()).mutate(
        'session.signIn',
        { email: 'a@example.com', password: PASSWORD },
        { origin: 'https://evil.example' },
      );
      expect(signIn.status).toBe(403);
      expect((await client.query('keys.list')).data).toEqual([]);
    });

    it("compares the Origin with the configured public URL's, never with the request's own Host", async () => {
      const { client } = await owner();
      const spoofed = await client.mutate(
        'keys.create',
        { name: 'spoofed', type: 'full_access' },
        { origin: 'http://evil.example', headers: { host: 'evil.example' } },
      );
      expect(spoofed.status).toBe(403);
      expect(spoofed.error).toEqual({
        error: {
          code: 'forbidden',
          message: 'Cross-site request refused: the console only accepts calls from its own pages',
        },
      });
      // The public URL's origin is accepted whatever Host the request names (a proxy may rewrite it).
      const proxied = await client.mutate(
        'keys.create',
        { name: 'proxied', type: 'full_access' },
        { headers: { host: 'internal.example:8080' } },
      );
      expect(proxied.status, JSON.stringify(proxied.error)).toBe(200);
      expect((await client.query('keys.list')).data.map((key: { name: string }) => key.name)).toEqual(['proxied']);
    });
  });

  describe('roles, members and invitations', () => {
    it('an invitation link adds a member once; the member sees keys but cannot generate or revoke them', async () => {
      const { client: ownerClient, session } = await owner('Invites Inc');
      const ownerKey = (await ownerClient.mutate('keys.create', { name: 'Owner key', type: 'full_access' })).data;
      const invitation = await ownerClient.mutate('invitations.create', { role: 'member' });
      expect(invitation.data.url).toMatch(
        new RegExp(`^${server().settings.publicUrl}/console/invite/[A-Za-z0-9_-]{43}$`),
      );
      const token = invitation.data.url.split('/').pop();
      const looked = await new ConsoleClient(origin()).query('invitations.lookup', { token });
      expect(looked.data).toMatchObject({ account_name: 'Invites Inc', role: 'member' });
      expect((await ownerClient.query('invitations.list')).data.map((i: { id: string }) => i.id)).toEqual([
        invitation.data.id,
      ]);

      const member = new ConsoleClient(origin());
      const joined = await member.mutate('session.signUp', {
        email: nextEmail('member'),
        password: PASSWORD,
        invitation: token,
      });
      expect(joined.data).toMatchObject({ role: 'member', account: { id: session.account.id, name: 'Invites Inc' } });
      expect((await new ConsoleClient(origin()).query('invitations.lookup', { token })).status).toBe(404);
      const again = await new ConsoleClient(origin()).mutate('session.signUp', {
        email: nextEmail('late'),
        password: PASSWORD,
        invitation: token,
      });
      expect(again.status).toBe(404);

      expect((await member.query('keys.list')).data.map((k: { id: string }) => k.id)).toEqual([ownerKey.id]);
      expect((await member.mutate('keys.create', { name: 'x', type: 'full_access' })).status).toBe(403);
      expect((await member.mutate('keys.revoke', { id: ownerKey.id })).status).toBe(403);
      expect((await member.query('invitations.list')).status).toBe(403);
      expect((await member.mutate('invitations.create', { role: 'admin' })).status).toBe(403);
      expect(
        (
          await member.mutate('webhookEndpoints.create', {
            body: { url: 'http://127.0.0.1:9/hook', events: ['message.received'] },
          })
        ).status,
      ).toBe(403);
      expect((await member.query('webhookEndpoints.list', { query: {} })).status).toBe(200);
      expect((await api(ownerKey.key)).status).toBe(200);

      const members = (await ownerClient.query('members.list')).data;
      expect(members.map((m: { role: string }) => m.role)).toEqual(['owner', 'member']);
    });

    it('an admin manages keys; an owner removes a member, whose session then opens nothing', async () => {
      const { client: ownerClient, session } = await owner();
      const admin = await invited(ownerClient, 'admin');
      expect(admin.session.role).toBe('admin');
      expect((await admin.client.mutate('keys.create', { name: 'Admin key', type: 'read_only' })).status).toBe(200);
      const member = await invited(ownerClient, 'member');
      // An admin cannot remove the owner; nobody removes the last owner.
      expect((await admin.client.mutate('members.remove', { user_id: session.user.id })).status).toBe(403);
      const last = await ownerClient.mutate('members.remove', { user_id: session.user.id });
      expect(last.status).toBe(400);
      expect(last.error.error.details).toMatchObject({ field: 'user_id' });

      expect((await ownerClient.mutate('members.remove', { user_id: member.session.user.id })).status).toBe(200);
      expect((await member.client.query('session.get')).data).toBeNull();
      expect((await member.client.query('keys.list')).status).toBe(401);
      expect((await ownerClient.query('members.list')).data.map((m: { role: string }) => m.role)).toEqual([
        'owner',
        'admin',
      ]);
    });

    it('a revoked invitation opens nothing; a signed-in person accepts one into a second account and switches', async () => {
      const first = await owner('First');
      const second = await owner('Second');
      const revoked = await second.client.mutate('invitations.create', { role: 'member' });
      expect((await second.client.mutate('invitations.revoke', { id: revoked.data.id })).status).toBe(200);
      expect(
        (await first.client.mutate('invitations.accept', { token: revoked.data.url.split('/').pop() })).status,
      ).toBe(404);

      const invitation = await second.client.mutate('invitations.create', { role: 'admin' });
      const accepted = await first.client.mutate('invitations.accept', { token: invitation.data.url.split('/').pop() });
      expect(accepted.data).toMatchObject({ role: 'admin', account: { name: 'Second' } });
      expect(accepted.data.accounts.map((a: { name: string }) => a.name)).toEqual(['First', 'Second']);
      const back = await first.client.mutate('session.switchAccount', { account_id: first.session.account.id });
      expect(back.data).toMatchObject({ role: 'owner', account: { name: 'First' } });
      const foreign = await first.client.mutate('session.switchAccount', { account_id: server().accountId });
      expect(foreign.status).toBe(404);
    });
  });

  describe("the account's own data", () => {
    it('members read conversations, messages, contacts, orders, events and workflows; owners answer', async () => {
      const { client: ownerClient } = await owner('Data');
      const member = await invited(ownerClient, 'member');
      const key = (await ownerClient.mutate('keys.create', { name: 'k', type: 'full_access' })).data.key;
      const inbound = await server().request('POST', '/sandbox/inbound', {
        key,
        body: { platform: 'whatsapp', from: { phone: '+14155550100', name: 'Marta Oliveira' }, content: 'Hi there!' },
      });
      expect(inbound.status, inbound.text).toBe(201);
      const id = inbound.body.conversation_id as string;

      const listed = await member.client.query('conversations.list', { query: { status: 'active', search: 'marta' } });
      expect(listed.data.data.map((c: { id: string }) => c.id)).toEqual([id]);
      expect((await member.client.query('conversations.retrieve', { params: { id } })).data.id).toBe(id);
      const contacts = await member.client.query('contacts.list', { query: { search: 'marta' } });
      expect(contacts.data.total).toBe(1);
      const contactId = contacts.data.data[0].id as string;
      expect((await member.client.query('contacts.retrieve', { params: { id: contactId } })).data.id).toBe(contactId);
      expect((await member.client.query('orders.list', { query: { contact_id: contactId } })).data.data).toEqual([]);
      expect((await member.client.query('workflows.list', { query: {} })).status).toBe(200);

      const reply = { body: { conversation_id: id, content: 'Hello Marta, how can we help?' } };
      expect((await member.client.mutate('messages.send', reply)).status).toBe(403);
      expect(
        (await member.client.mutate('conversations.update', { params: { id }, body: { status: 'resolved' } })).status,
      ).toBe(403);
      const sent = await ownerClient.mutate('messages.send', reply);
      expect(sent.status, JSON.stringify(sent.error)).toBe(200);
      expect(sent.data).toMatchObject({ direction: 'outbound', status: 'queued', content: reply.body.content });
      const messages = await member.client.query('conversations.listMessages', { params: { id }, query: {} });
      expect(messages.data.data.map((m: { content: string }) => m.content).sort()).toEqual(
        ['Hello Marta, how can we help?', 'Hi there!'].sort(),
      );
      const resolved = await ownerClient.mutate('conversations.update', {
        params: { id },
        body: { status: 'resolved' },
      });
      expect(resolved.data.status).toBe('resolved');
      const events = await member.client.query('events.list', { query: {} });
      expect(events.data.data.map((e: { type: string }) => e.type)).toEqual(
        expect.arrayContaining(['message.received', 'conversation.resolved']),
      );
    });

    it('shows the deliveries an event caused, with their attempts', async () => {
      const { client: ownerClient } = await owner('Deliveries');
      const endpoint = await ownerClient.mutate('webhookEndpoints.create', {
        body: { url: 'http://127.0.0.1:9/hook', events: ['contact.created'] },
      });
      expect(endpoint.status, JSON.stringify(endpoint.error)).toBe(200);
      const key = (await ownerClient.mutate('keys.create', { name: 'k', type: 'full_access' })).data.key;
      expect((await server().request('POST', '/contacts', { key, body: { phone: '+14155550123' } })).status).toBe(201);
      const events = await ownerClient.query('events.list', { query: { type: 'contact.created' } });
      const eventId = events.data.data[0].id as string;
      const deliveries = await ownerClient.query('events.deliveries', { event_id: eventId });
      expect(deliveries.data).toEqual([
        expect.objectContaining({ endpoint_id: endpoint.data.id, event_id: eventId, status: 'pending', attempts: [] }),
      ]);
      const other = await owner('Not theirs');
      expect((await other.client.query('events.deliveries', { event_id: eventId })).data).toEqual([]);
    });

    it("lists the account's API requests, a failed one with its error, and finds one by its request id", async () => {
      const { client: ownerClient } = await owner('Logs');
      const member = await invited(ownerClient, 'member');
      const key = (await ownerClient.mutate('keys.create', { name: 'backend', type: 'full_access' })).data.key;
      await server().request('GET', '/contacts', { key });
      const refused = await server().request('POST', '/contacts', { key, body: { phone: 'nope' } });
      expect(refused.status).toBe(400);
      await server().flushRequestLog();

      const all = await member.client.query('requestLogs.list', {});
      expect(all.status).toBe(200);
      expect(all.data.data.map((line: { method: string; status: number }) => [line.method, line.status])).toEqual([
        ['POST', 400],
        ['GET', 200],
      ]);
      expect(all.data.data[0].key).toMatchObject({ name: 'backend', last_four: key.slice(-4) });
      const failed = await member.client.query('requestLogs.list', { status_class: 4 });
      expect(failed.data.total).toBe(1);
      const requestId = refused.headers.get('x-request-id') as string;
      const found = await member.client.query('requestLogs.retrieve', { request_id: requestId });
      expect(JSON.parse(found.data.error_body)).toEqual(refused.body);
      expect(JSON.parse(found.data.request_body)).toEqual({ phone: 'nope' });
      expect((await member.client.query('requestLogs.list', { status_class: 3 })).status).toBe(400);
      // Another account's request ids are not found.
      const other = await owner('Elsewhere');
      expect((await other.client.query('requestLogs.retrieve', { request_id: requestId })).status).toBe(404);
    });
  });

  describe('live events', () => {
    it("follows the account's new events over tRPC's SSE, and resumes after the last one it saw", async () => {
      const { client } = await owner('Live');
      const member = await invited(client, 'member');
      const key = (await client.mutate('keys.create', { name: 'k', type: 'full_access' })).data.key;
      const live = (input?: object) => {
        const url = new URL('/console/trpc/events.live', origin());
        if (input) url.searchParams.set('input', JSON.stringify(input));
        return openEventStream(url.toString(), { cookie: member.client.cookie as string });
      };
      const stream = await live();
      expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      // tRPC's first frame says the subscription started: what commits after it reaches it.
      expect(await stream.next()).toMatchObject({ event: 'connected' });
      const created = async () =>
        (
          await server().request('POST', '/contacts', {
            key,
            body: { phone: `+1415555${String(seq++).padStart(4, '0')}` },
          })
        ).body.id as string;
      const first = await created();
      const frame = await stream.nextEvent();
      expect(JSON.parse(frame.data)).toMatchObject({ type: 'contact.created', data: { id: first } });
      await stream.close();

      const second = await created();
      const resumed = await live({ lastEventId: frame.id });
      expect(await resumed.next()).toMatchObject({ event: 'connected' });
      const next = await resumed.nextEvent();
      expect(JSON.parse(next.data)).toMatchObject({ type: 'contact.created', data: { id: second } });
      await resumed.close();

      const signedOut = await openEventStream(new URL('/console/trpc/events.live', origin()).toString(), {});
      // tRPC answers a subscription's refusal inside the stream.
      expect(await signedOut.next()).toMatchObject({ event: 'connected' });
      const refusal = await signedOut.next();
      expect(refusal).toMatchObject({ event: 'serialized-error' });
      expect(JSON.parse(refusal?.data as string)).toMatchObject({
        data: { body: { error: { code: 'unauthorized' } } },
      });
      await signedOut.close();
    });
  });

  describe('every call, by role', () => {
    it('owners and admins run the webhook and channel operations; members only read them; signed out, nothing', async () => {
      const { client: ownerClient, session } = await owner('Roles');
      const admin = await invited(ownerClient, 'admin');
      const member = await invited(ownerClient, 'member');
      const signedOut = new ConsoleClient(origin());

      expect((await member.client.query('account.get')).data).toEqual(session.account);
      const endpoint = await admin.client.mutate('webhookEndpoints.create', {
        body: { url: 'http://127.0.0.1:9/hook', events: ['conversation.created'] },
      });
      expect(endpoint.status, JSON.stringify(endpoint.error)).toBe(200);
      const id = endpoint.data.id;
      const updated = await admin.client.mutate('webhookEndpoints.update', {
        params: { id },
        body: { events: ['conversation.created', 'order.placed'], status: 'disabled' },
      });
      expect(updated.data).toMatchObject({ events: ['conversation.created', 'order.placed'], status: 'disabled' });
      expect((await member.client.query('webhookEndpoints.retrieve', { params: { id } })).data.id).toBe(id);
      expect(
        (await member.client.query('webhookEndpoints.listDeliveries', { params: { id }, query: {} })).data.data,
      ).toEqual([]);
      const retry = await ownerClient.mutate('webhookEndpoints.retryDelivery', {
        params: { id, delivery_id: 'whd_nope' },
      });
      expect(retry.status).toBe(404);

      const channel = await ownerClient.mutate('channels.create', {
        body: {
          platform: 'facebook',
          external_id: '4242',
          access_token: 'EAAG-token-abcdefghij',
          app_secret: 'app-secret-abcdef',
        },
      });
      expect(channel.status, JSON.stringify(channel.error)).toBe(200);
      const renamed = await admin.client.mutate('channels.update', {
        params: { id: channel.data.id },
        body: { name: 'Shop page' },
      });
      expect(renamed.data.name).toBe('Shop page');

      const changes: [string, unknown][] = [
        ['keys.create', { name: 'x', type: 'read_only' }],
        ['keys.revoke', { id: 'key_nope' }],
        ['webhookEndpoints.create', { body: { url: 'http://127.0.0.1:9/hook', events: ['conversation.created'] } }],
        ['webhookEndpoints.update', { params: { id }, body: { status: 'enabled' } }],
        ['webhookEndpoints.delete', { params: { id } }],
        ['webhookEndpoints.retryDelivery', { params: { id, delivery_id: 'whd_nope' } }],
        ['webhookEndpoints.test', { params: { id } }],
        [
          'channels.create',
          {
            body: {
              platform: 'instagram',
              external_id: '99',
              access_token: 'EAAG-token-abcdefghij',
              app_secret: 'app-secret-abcdef',
            },
          },
        ],
        ['channels.update', { params: { id: channel.data.id }, body: { name: 'x' } }],
        ['channels.delete', { params: { id: channel.data.id } }],
        ['members.remove', { user_id: admin.session.user.id }],
        ['invitations.create', { role: 'member' }],
        ['invitations.revoke', { id: 'inv_nope' }],
      ];
      for (const [path, input] of changes) {
        expect((await member.client.mutate(path, input)).status, `member ${path}`).toBe(403);
        expect((await signedOut.mutate(path, input)).status, `signed out ${path}`).toBe(401);
      }
      for (const path of ['webhookEndpoints.list', 'channels.list']) {
        expect((await member.client.query(path, { query: {} })).status, path).toBe(200);
        expect((await signedOut.query(path, { query: {} })).status, path).toBe(401);
      }
      // Nothing the member tried changed anything.
      expect((await ownerClient.query('webhookEndpoints.retrieve', { params: { id } })).data.status).toBe('disabled');
      expect((await ownerClient.query('members.list')).data).toHaveLength(3);

      expect((await admin.client.mutate('channels.delete', { params: { id: channel.data.id } })).status).toBe(200);
      expect((await ownerClient.mutate('webhookEndpoints.delete', { params: { id } })).status).toBe(200);
      expect((await ownerClient.query('webhookEndpoints.list', { query: {} })).data.data).toEqual([]);
    });

    it('refuses a malformed call with the field and the constraint, never a 500', async () => {
      const { client } = await owner();
      const cases: [string, unknown, string][] = [
        ['keys.create', { name: 'x', type: 'full_access', extra: 1 }, 'extra'],
        ['invitations.create', { role: 'owner' }, 'role'],
        ['session.switchAccount', {}, 'account_id'],
        ['webhookEndpoints.create', { body: { url: 'not a url', events: ['conversation.created'] } }, 'url'],
        ['webhookEndpoints.create', { nonsense: {} }, 'nonsense'],
      ];
      for (const [path, input, field] of cases) {
        const answer = await client.mutate(path, input);
        expect(answer.status, path).toBe(400);
        expect(answer.error.error.details.field, path).toBe(field);
      }
      const notJson = await fetch(`${origin()}/console/trpc/keys.create`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          origin: origin(),
          'x-convo-csrf': '1',
          cookie: client.cookie as string,
        },
        body: '{"name":',
      });
      expect(notJson.status).toBe(400);
    });
  });

  describe('another account', () => {
    it('is 404, as in the API: its keys, webhook endpoints and channels cannot be read or changed', async () => {
      const mine = await owner('Mine');
      const theirs = await owner('Theirs');
      const theirKey = (await theirs.client.mutate('keys.create', { name: 'Theirs', type: 'full_access' })).data;
      const endpoint = await theirs.client.mutate('webhookEndpoints.create', {
        body: { url: 'http://127.0.0.1:9/hook', events: ['message.received'] },
      });
      expect(endpoint.status, JSON.stringify(endpoint.error)).toBe(200);
      const channel = await theirs.client.mutate('channels.create', {
        body: {
          platform: 'whatsapp',
          external_id: '1065',
          access_token: 'EAAG-token-1234567890',
          app_secret: 'app-secret-123456',
        },
      });
      expect(channel.status, JSON.stringify(channel.error)).toBe(200);
      expect(JSON.stringify(channel.data)).not.toContain('EAAG-token-1234567890');
      expect(channel.data.webhook_url).toBe(`${server().settings.publicUrl}/hooks/meta/${channel.data.id}`);

      expect((await mine.client.mutate('keys.revoke', { id: theirKey.id })).status).toBe(404);
      expect((await api(theirKey.key)).status).toBe(200);
      expect((await mine.client.query('webhookEndpoints.retrieve', { params: { id: endpoint.data.id } })).status).toBe(
        404,
      );
      expect((await mine.client.mutate('webhookEndpoints.delete', { params: { id: endpoint.data.id } })).status).toBe(
        404,
      );
      expect((await mine.client.query('channels.retrieve', { params: { id: channel.data.id } })).status).toBe(404);
      expect((await mine.client.query('channels.list', { query: {} })).data.data).toEqual([]);
      expect((await mine.client.query('keys.list')).data).toEqual([]);
    });
  });

  describe("the account's files", () => {
    it('serves a file to its account signed in, 404 to another account and 401 signed out', async () => {
      const mine = await owner('Files');
      const key = (await mine.client.mutate('keys.create', { name: 'Uploads', type: 'full_access' })).data.key;
      const form = new FormData();
      const bytes = Buffer.from('\x89PNG fake image bytes');
      form.append('file', new Blob([bytes], { type: 'image/png' }), 'photo.png');
      const uploaded = await fetch(`${server().baseUrl}/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: form,
      });
      const file = (await uploaded.json()) as { id: string; sha256: string };
      const url = `${origin()}/console/files/${file.id}/content`;

      const got = await fetch(url, { headers: { cookie: mine.client.cookie as string } });
      expect(got.status).toBe(200);
      expect(got.headers.get('content-type')).toBe('image/png');
      expect(got.headers.get('content-disposition')).toMatch(/^inline; filename="photo.png"/);
      expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
      const cached = await fetch(url, {
        headers: { cookie: mine.client.cookie as string, 'if-none-match': `"${file.sha256}"` },
      });
      expect(cached.status).toBe(304);

      const theirs = await owner('Not files');
      expect((await fetch(url, { headers: { cookie: theirs.client.cookie as string } })).status).toBe(404);
      expect((await fetch(url)).status).toBe(401);
    });

    it("uploads the reply box's file for its account, from its own pages only", async () => {
      const mine = await owner('Attachments');
      const bytes = Buffer.from('%PDF-1.7 a receipt');
      const post = (headers: Record<string, string>) => {
        const form = new FormData();
        form.append('file', new Blob([bytes], { type: 'application/pdf' }), 'receipt.pdf');
        return fetch(`${origin()}/console/files`, { method: 'POST', headers, body: form });
      };
      const sameSite = { origin: new URL(server().settings.publicUrl).origin, 'x-convo-csrf': '1' };
      const made = await post({ ...sameSite, cookie: mine.client.cookie as string });
      expect(made.status).toBe(201);
      const file = (await made.json()) as { id: string; filename: string; size: number };
      expect(file).toMatchObject({ filename: 'receipt.pdf', size: bytes.length });
      const back = await fetch(`${origin()}/console/files/${file.id}/content`, {
        headers: { cookie: mine.client.cookie as string },
      });
      expect(Buffer.from(await back.arrayBuffer()).equals(bytes)).toBe(true);

      expect((await post({ cookie: mine.client.cookie as string })).status).toBe(403);
      expect((await post(sameSite)).status).toBe(401);
    });
  });

  describe('signed out', () => {
    it('every call but sign-up, sign-in, sign-out, reset and an invitation lookup is 401', async () => {
      const client = new ConsoleClient(origin());
      expect((await client.query('session.get')).data).toBeNull();
      for (const path of ['keys.list', 'members.list', 'invitations.list', 'account.get'])
        expect((await client.query(path)).status, path).toBe(401);
      expect((await client.query('webhookEndpoints.list', { query: {} })).status).toBe(401);
      expect((await client.mutate('keys.create', { name: 'x', type: 'full_access' })).status).toBe(401);
      expect(
        (await client.mutate('session.changePassword', { current_password: 'x', new_password: 'yyyyyyyyyyyy' })).status,
      ).toBe(401);
    });
  });
});

describe('console secrets and the log', () => {
  it('never writes a password, a session token or a link token to the request log', async () => {
    const lines: string[] = [];
    const database = openDatabase('file::memory:');
    await migrateToLatest(database.db);
    const settings = testSettings();
    const app = await buildServer({
      database,
      settings,
      logger: { level: 'trace', stream: { write: (line) => lines.push(line) } },
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address() as { port: number };
    const origin = `http://127.0.0.1:${address.port}`;
    // The console's origin is the public URL, known once the server listens.
    settings.publicUrl = origin;
    try {
      const client = new ConsoleClient(origin);
      expect(
        (
          await client.mutate('session.signUp', {
            email: 'logged@example.com',
            password: PASSWORD,
            account_name: 'Logged',
          })
        ).status,
      ).toBe(200);
      const sessionToken = client.cookie?.split('=')[1] as string;
      const invitation = await client.mutate('invitations.create', { role: 'member' });
      expect(invitation.status).toBe(200);
      const token = invitation.data.url.split('/').pop();
      await fetch(`${origin}/console/invite/${token}`);
      await fetch(`${origin}/console/reset-password/${token}`);
      await client.query('invitations.lookup', { token });
      await client.mutate('session.signIn', { email: 'logged@example.com', password: PASSWORD });
      await client.mutate('session.changePassword', { current_password: PASSWORD, new_password: `${PASSWORD} 2` });
      const log = lines.join('\n');
      expect(log).toContain('/console/invite/…');
      for (const secret of [PASSWORD, sessionToken, token]) expect(log).not.toContain(secret);
    } finally {
      await app.close();
      await database.destroy();
    }
  });
});

describe('console pages', () => {
  it('serves the single page for every console path with a strict Content-Security-Policy, and 404 for a missing asset', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'convo-console-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(
      join(dir, 'index.html'),
      '<!doctype html><title>Convo console</title><script type="module" src="/console/assets/app.js"></script>',
    );
    writeFileSync(join(dir, 'assets', 'app.js'), 'console.log(1)');
    const database = openDatabase('file::memory:');
    await migrateToLatest(database.db);
    const app = await buildServer({ database, settings: testSettings({ consoleDir: dir }) });
    try {
      for (const url of ['/console', '/console/', '/console/api-keys', '/console/invite/abc']) {
        const page = await app.inject({ method: 'GET', url });
        expect(page.statusCode, url).toBe(200);
        expect(page.headers['content-type']).toMatch(/^text\/html/);
        expect(page.body).toContain('<title>Convo console</title>');
        const csp = String(page.headers['content-security-policy']);
        expect(csp).toContain("frame-ancestors 'none'");
        expect(csp).toContain("script-src 'self'");
        expect(csp).not.toContain('unsafe');
        expect(page.headers['x-content-type-options']).toBe('nosniff');
      }
      const asset = await app.inject({ method: 'GET', url: '/console/assets/app.js' });
      expect(asset.statusCode).toBe(200);
      expect(asset.headers['content-type']).toMatch(/javascript/);
      expect((await app.inject({ method: 'GET', url: '/console/assets/missing.js' })).statusCode).toBe(404);
    } finally {
      await app.close();
      await database.destroy();
    }
  });
});
