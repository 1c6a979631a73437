import { Channel, ChannelList } from '@convo/core';
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { openSecret, sealSecret } from '../secret-box.js';
import { accountsService } from '../services/accounts.js';
import { describeEachDialect, expectBody, expectError, testSettings } from '../testing/harness.js';
import { buildServer } from './server.js';

const ACCESS_TOKEN = 'EAAG-secret-access-token-0123456789';
const APP_SECRET = 'app-secret-abcdef0123456789';

const sign = (secret: string, body: string | Buffer) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('secret box', () => {
  it('opens what it sealed, under that key only, and notices an altered value', () => {
    const key = Buffer.alloc(32, 7);
    const sealed = sealSecret(key, ACCESS_TOKEN);
    expect(sealed).not.toContain(ACCESS_TOKEN);
    expect(sealSecret(key, ACCESS_TOKEN)).not.toBe(sealed);
    expect(openSecret(key, sealed)).toBe(ACCESS_TOKEN);
    expect(() => openSecret(Buffer.alloc(32, 8), sealed)).toThrow();
    const parts = sealed.split('.');
    const flipped = Buffer.from(parts[3] as string, 'base64url');
    flipped[0] = (flipped[0] as number) ^ 1;
    expect(() => openSecret(key, [parts[0], parts[1], parts[2], flipped.toString('base64url')].join('.'))).toThrow();
  });
});

describe('channel secrets and the log', () => {
  it('never writes an access token or an app secret to the request log, whatever the request', async () => {
    const lines: string[] = [];
    const database = openDatabase('file::memory:');
    await migrateToLatest(database.db);
    const app = await buildServer({
      database,
      settings: testSettings(),
      logger: { level: 'trace', stream: { write: (line) => lines.push(line) } },
    });
    const account = await accountsService.createAccount({ database }, { name: 'Logged', plan: 'free' });
    const { key } = await accountsService.createKey({ database }, { accountId: account.id, type: 'full_access' });
    const call = (method: 'POST' | 'PATCH' | 'GET', url: string, payload?: unknown) =>
      app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${key}` },
        ...(payload === undefined ? {} : { payload: payload as object }),
      });

    const created = await call('POST', '/v1/channels', {
      platform: 'whatsapp',
      external_id: '123',
      access_token: ACCESS_TOKEN,
      app_secret: APP_SECRET,
    });
    expect(created.statusCode).toBe(201);
    const id = (created.json() as { id: string }).id;
    // Refused bodies carry the secrets too: their errors must not repeat them.
    for (const body of [
      { platform: 'whatsapp', external_id: 'x', access_token: ACCESS_TOKEN, app_secret: APP_SECRET },
      { platform: 'whatsapp', external_id: '123', access_token: ACCESS_TOKEN, app_secret: APP_SECRET },
      {
        platform: 'whatsapp',
        external_id: '124',
        access_token: ACCESS_TOKEN,
        app_secret: APP_SECRET,
        extra: ACCESS_TOKEN,
      },
    ]) {
      const refused = await call('POST', '/v1/channels', body);
      expect(refused.statusCode).toBe(400);
      expect(refused.body).not.toContain(ACCESS_TOKEN);
      expect(refused.body).not.toContain(APP_SECRET);
    }
    expect(
      (await call('PATCH', `/v1/channels/${id}`, { access_token: `${ACCESS_TOKEN}-2`, app_secret: `${APP_SECRET}-2` }))
        .statusCode,
    ).toBe(200);
    expect((await call('PATCH', `/v1/channels/${id}`, { access_token: '' })).statusCode).toBe(400);
    const hook = await app.inject({
      method: 'POST',
      url: `/hooks/meta/${id}`,
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign('wrong', '{}') },
      payload: '{}',
    });
    expect(hook.statusCode).toBe(401);
    expect(hook.body).not.toContain(APP_SECRET);
    await app.close();
    await database.destroy();

    expect(lines.length).toBeGreaterThan(5);
    const log = lines.join('\n');
    expect(log).not.toContain(ACCESS_TOKEN);
    expect(log).not.toContain(APP_SECRET);
  });
});

describeEachDialect('channels', (server) => {
  let externalSeq = 100_000_000_000;
  const externalId = () => String(externalSeq++);

  const create = async (body: Record<string, unknown> = {}, key?: string) =>
    server().request('POST', '/channels', {
      body: {
        platform: 'whatsapp',
        external_id: externalId(),
        access_token: ACCESS_TOKEN,
        app_secret: APP_SECRET,
        ...body,
      },
      ...(key ? { key } : {}),
    });

  const hookPath = (id: string) => `${server().baseUrl.replace(/\/v1$/, '')}/hooks/meta/${id}`;
  const postHook = (id: string, raw: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(hookPath(id), { method: 'POST', body: raw, headers: { 'content-type': 'application/json', ...headers } });

  it('creates a channel with its webhook address and a generated verify token, and never returns or stores the secrets in clear', async () => {
    const id = externalId();
    const response = await create({ external_id: id, name: 'Support line' });
    const channel = expectBody(response, 201, Channel);
    expect(channel).toMatchObject({
      platform: 'whatsapp',
      name: 'Support line',
      external_id: id,
      status: 'active',
      last_error: null,
    });
    expect(channel.id).toMatch(/^ch_/);
    expect(channel.webhook_url).toBe(hookPath(channel.id));
    expect(channel.verify_token.length).toBeGreaterThanOrEqual(16);
    expect(response.text).not.toContain(ACCESS_TOKEN);
    expect(response.text).not.toContain(APP_SECRET);
    expect(response.text).not.toMatch(/access_token|app_secret/);

    const row = await server()
      .database.db.selectFrom('channels')
      .selectAll()
      .where('id', '=', channel.id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(ACCESS_TOKEN);
    expect(JSON.stringify(row)).not.toContain(APP_SECRET);
    expect(openSecret(server().settings.secretKey(), row.access_token_sealed)).toBe(ACCESS_TOKEN);

    for (const path of [`/channels/${channel.id}`, '/channels']) {
      const read = await server().request('GET', path);
      expect(read.status).toBe(200);
      expect(read.text).not.toContain(ACCESS_TOKEN);
      expect(read.text).not.toContain(APP_SECRET);
    }
  });

  it('names a channel after its platform and id when no name is given, and keeps a given verify token', async () => {
    const id = externalId();
    const channel = expectBody(
      await create({ platform: 'instagram', external_id: id, verify_token: 'my-verify-token' }),
      201,
      Channel,
    );
    expect(channel.name).toBe(`Instagram ${id}`);
    expect(channel.verify_token).toBe('my-verify-token');
  });

  it('refuses a second channel for the same platform and id in the account, and bad input field by field', async () => {
    const id = externalId();
    const first = expectBody(await create({ external_id: id }), 201, Channel);
    const again = await create({ external_id: id });
    expectError(again, 400, 'bad_request', { field: 'external_id', constraint: 'unique' });
    expect(again.body.error.details.existing_id).toBe(first.id);
    // The same id on another platform, or in another account, is another channel.
    expect((await create({ external_id: id, platform: 'facebook' })).status).toBe(201);
    expect((await create({ external_id: id }, server().keys.otherFull)).status).toBe(201);

    expectError(await create({ platform: 'telegram' }), 400, 'bad_request', { field: 'platform', constraint: 'enum' });
    expectError(await create({ external_id: 'abc' }), 400, 'bad_request', {
      field: 'external_id',
      constraint: 'pattern',
    });
    expectError(await create({ access_token: '' }), 400, 'bad_request', {
      field: 'access_token',
      constraint: 'min_length',
    });
    expectError(await create({ verify_token: 'short' }), 400, 'bad_request', {
      field: 'verify_token',
      constraint: 'min_length',
    });
    expectError(await create({ status: 'active' }), 400, 'bad_request', { field: 'status', constraint: 'unknown' });
    const missing = await server().request('POST', '/channels', {
      body: { platform: 'whatsapp', external_id: externalId(), access_token: 'x' },
    });
    expectError(missing, 400, 'bad_request', { field: 'app_secret', constraint: 'required' });
  });

  it('lists newest first with a platform filter, and keeps other accounts out', async () => {
    const a = expectBody(await create({ platform: 'facebook' }), 201, Channel);
    const b = expectBody(await create({ platform: 'facebook' }), 201, Channel);
    const list = expectBody(
      await server().request('GET', '/channels', { query: { platform: 'facebook', limit: 100 } }),
      200,
      ChannelList,
    );
    expect(list.data.every((channel) => channel.platform === 'facebook')).toBe(true);
    const ids = list.data.map((channel) => channel.id);
    expect(ids.indexOf(b.id)).toBeLessThan(ids.indexOf(a.id));
    expect(list.total).toBe(list.data.length);

    const other = expectBody(
      await server().request('GET', '/channels', { key: server().keys.otherFull, query: { limit: 100 } }),
      200,
      ChannelList,
    );
    expect(other.data.map((channel) => channel.id)).not.toContain(a.id);
    expectError(await server().request('GET', `/channels/${a.id}`, { key: server().keys.otherFull }), 404, 'not_found');
    expectError(
      await server().request('PATCH', `/channels/${a.id}`, { key: server().keys.otherFull, body: { name: 'x' } }),
      404,
      'not_found',
    );
    expectError(
      await server().request('DELETE', `/channels/${a.id}`, { key: server().keys.otherFull }),
      404,
      'not_found',
    );
  });

  it('needs a full-access key to create, change or delete, and a read-only key may read', async () => {
    const channel = expectBody(await create(), 201, Channel);
    expectError(await create({}, server().keys.readOnly), 403, 'forbidden');
    expectError(
      await server().request('PATCH', `/channels/${channel.id}`, { key: server().keys.readOnly, body: { name: 'x' } }),
      403,
      'forbidden',
    );
    expect((await server().request('GET', `/channels/${channel.id}`, { key: server().keys.readOnly })).status).toBe(
      200,
    );
  });

  it('renames, rotates secrets, disables and re-enables; rotation takes effect on the next webhook', async () => {
    const channel = expectBody(await create(), 201, Channel);
    const renamed = expectBody(
      await server().request('PATCH', `/channels/${channel.id}`, { body: { name: 'Sales' } }),
      200,
      Channel,
    );
    expect(renamed).toMatchObject({ name: 'Sales', status: 'active' });
    expect(renamed.updated_at >= channel.updated_at).toBe(true);

    const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [] });
    expect((await postHook(channel.id, body, { 'x-hub-signature-256': sign(APP_SECRET, body) })).status).toBe(200);
    const rotated = await server().request('PATCH', `/channels/${channel.id}`, {
      body: { app_secret: 'the-new-app-secret' },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.text).not.toContain('the-new-app-secret');
    expect((await postHook(channel.id, body, { 'x-hub-signature-256': sign(APP_SECRET, body) })).status).toBe(401);
    expect((await postHook(channel.id, body, { 'x-hub-signature-256': sign('the-new-app-secret', body) })).status).toBe(
      200,
    );

    const disabled = expectBody(
      await server().request('PATCH', `/channels/${channel.id}`, { body: { status: 'disabled' } }),
      200,
      Channel,
    );
    expect(disabled.status).toBe('disabled');
    expectError(
      await server().request('PATCH', `/channels/${channel.id}`, { body: { status: 'error' } }),
      400,
      'bad_request',
      {
        field: 'status',
        constraint: 'enum',
      },
    );
    const enabled = expectBody(
      await server().request('PATCH', `/channels/${channel.id}`, { body: { status: 'active' } }),
      200,
      Channel,
    );
    expect(enabled.status).toBe('active');
  });

  it('deletes a channel: 204, then 404, and its webhooks are refused', async () => {
    const channel = expectBody(await create(), 201, Channel);
    const deleted = await server().request('DELETE', `/channels/${channel.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expectError(await server().request('GET', `/channels/${channel.id}`), 404, 'not_found');
    expectError(await server().request('DELETE', `/channels/${channel.id}`), 404, 'not_found');
    const body = '{"object":"page","entry":[]}';
    expect((await postHook(channel.id, body, { 'x-hub-signature-256': sign(APP_SECRET, body) })).status).toBe(404);
  });

  describe('webhook ingress', () => {
    const payloads = async (channelId: string) =>
      server()
        .database.db.selectFrom('channel_payloads')
        .select(['body'])
        .where('channel_id', '=', channelId)
        .execute();

    it('answers the subscription handshake with the challenge, and 403 to a wrong token or mode', async () => {
      const channel = expectBody(await create({ verify_token: 'verify-me-please' }), 201, Channel);
      const url = (query: string) => `${hookPath(channel.id)}?${query}`;
      const ok = await fetch(url('hub.mode=subscribe&hub.verify_token=verify-me-please&hub.challenge=1158201444'));
      expect(ok.status).toBe(200);
      expect(ok.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await ok.text()).toBe('1158201444');
      expect((await fetch(url('hub.mode=subscribe&hub.verify_token=wrong-token-here&hub.challenge=1'))).status).toBe(
        403,
      );
      expect((await fetch(url('hub.mode=unsubscribe&hub.verify_token=verify-me-please&hub.challenge=1'))).status).toBe(
        403,
      );
      expect((await fetch(url('hub.mode=subscribe&hub.challenge=1'))).status).toBe(403);
      expect(
        (await fetch(`${hookPath('ch_unknown')}?hub.mode=subscribe&hub.verify_token=verify-me-please&hub.challenge=1`))
          .status,
      ).toBe(404);
    });

    it('stores a signed body as it came and answers 200; refuses and stores nothing unsigned, wrongly signed or altered', async () => {
      const channel = expectBody(await create(), 201, Channel);
      const other = expectBody(await create({ app_secret: 'another-channels-secret' }), 201, Channel);
      const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: '1', changes: [] }] });

      expect((await postHook(channel.id, body)).status).toBe(401);
      expect((await postHook(channel.id, body, { 'x-hub-signature-256': 'sha256=' })).status).toBe(401);
      expect((await postHook(channel.id, body, { 'x-hub-signature-256': sign('not-the-secret', body) })).status).toBe(
        401,
      );
      expect(
        (await postHook(channel.id, body, { 'x-hub-signature-256': sign('another-channels-secret', body) })).status,
      ).toBe(401);
      expect(
        (
          await postHook(channel.id, body, {
            'x-hub-signature-256': sign(APP_SECRET, body).replace('sha256=', 'sha1='),
          })
        ).status,
      ).toBe(401);
      const altered = body.replace('"1"', '"2"');
      expect((await postHook(channel.id, altered, { 'x-hub-signature-256': sign(APP_SECRET, body) })).status).toBe(401);
      expect(await payloads(channel.id)).toEqual([]);
      expect(await payloads(other.id)).toEqual([]);

      const accepted = await postHook(channel.id, body, { 'x-hub-signature-256': sign(APP_SECRET, body) });
      expect(accepted.status).toBe(200);
      expect(await payloads(channel.id)).toEqual([{ body }]);
      expect((await postHook('ch_unknown', body, { 'x-hub-signature-256': sign(APP_SECRET, body) })).status).toBe(404);
    });

    it('refuses malformed JSON after a good signature with 400 and stores nothing', async () => {
      const channel = expectBody(await create(), 201, Channel);
      for (const raw of ['{"object":', '[1,2]', '"text"', Buffer.from([0x7b, 0xff, 0x7d])]) {
        const response = await postHook(channel.id, raw, { 'x-hub-signature-256': sign(APP_SECRET, raw) });
        expect(response.status).toBe(400);
        expect(((await response.json()) as { error: { details: unknown } }).error.details).toMatchObject({
          field: 'body',
          constraint: 'json',
        });
      }
      expect(await payloads(channel.id)).toEqual([]);
    });

    it('accepts nothing from a disabled channel but still answers Meta 200', async () => {
      const channel = expectBody(await create(), 201, Channel);
      await server().request('PATCH', `/channels/${channel.id}`, { body: { status: 'disabled' } });
      const body = '{"object":"whatsapp_business_account","entry":[]}';
      expect((await postHook(channel.id, body, { 'x-hub-signature-256': sign(APP_SECRET, body) })).status).toBe(200);
      expect(await payloads(channel.id)).toEqual([]);
    });
  });
});
