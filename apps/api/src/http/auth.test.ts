import {
  ContactList,
  type EndpointDefinition,
  ErrorBody,
  type OperationId,
  endpoints,
  fillPath,
  operationIds,
} from '@convo/core';
import { describe, expect, it } from 'vitest';
import { accountsService } from '../services/accounts.js';
import {
  type RequestOptions,
  TRANSPORTS,
  transportsOf,
  type TestResponse,
  type Transport,
  describeEachDialect,
  expectBody,
  expectExactError,
  requestOverTrpc,
  revokeKeyElsewhere,
} from '../testing/harness.js';

/** A fake id that exists nowhere; every path parameter is filled with it. */
const MISSING = 'x_missing';

const operations = operationIds.map((id) => [id, endpoints[id] as EndpointDefinition] as const);
const writes = operations.filter(([, op]) => op.permission === 'write');
const reads = operations.filter(([, op]) => op.permission === 'read');
/** Writes that take a JSON body. */
const withBody = operations.filter(([, op]) => op.body !== undefined);

const pathOf = (op: EndpointDefinition) =>
  fillPath(op.path, { id: MISSING, tag: 'some-tag', delivery_id: MISSING, run_id: MISSING });

describeEachDialect('authentication and permissions', (server) => {
  /** A request to an operation with an empty JSON body for those that take one, by REST or by tRPC. */
  const callBy = (
    transport: Transport,
    op: EndpointDefinition,
    options: RequestOptions = {},
  ): Promise<TestResponse> => {
    const sent =
      op.body !== undefined && options.rawBody === undefined && options.body === undefined
        ? { body: {}, ...options }
        : options;
    if (transport === 'rest') return server().request(op.method, pathOf(op), sent);
    const operationId = operations.find(([, candidate]) => candidate === op)?.[0] as OperationId;
    return requestOverTrpc(
      server(),
      operationId,
      { id: MISSING, tag: 'some-tag', delivery_id: MISSING, run_id: MISSING },
      sent,
    );
  };

  it('the endpoint table is not empty and has both reads and writes', () => {
    expect(reads.length).toBeGreaterThan(0);
    expect(writes.length).toBeGreaterThan(0);
  });

  for (const transport of TRANSPORTS)
    describe.each(operations.filter(([, op]) => transportsOf(op).includes(transport)))(
      `%s (${transport})`,
      (_operationId: OperationId, op) => {
        const call = (op: EndpointDefinition, options: RequestOptions = {}) => callBy(transport, op, options);
        it('401 without an Authorization header', async () => {
          expectExactError(await call(op, { key: null }), 401, 'unauthorized');
        });

        it('401 with an unknown key', async () => {
          expectExactError(await call(op, { key: 'wrong' }), 401, 'unauthorized');
        });

        it('401 with a revoked key', async () => {
          expectExactError(await call(op, { key: server().keys.revoked }), 401, 'unauthorized');
        });

        it('401 with another scheme (Basic, Token, none) even around a valid key', async () => {
          const full = server().keys.full;
          for (const authorization of [
            `Basic ${Buffer.from(`${full}:`).toString('base64')}`,
            `Basic ${full}`,
            `Token ${full}`,
            full,
          ]) {
            expectExactError(await call(op, { key: null, headers: { authorization } }), 401, 'unauthorized');
          }
        });

        it('401 with "Bearer " and an empty key', async () => {
          for (const authorization of ['Bearer ', 'Bearer', 'Bearer    ']) {
            expectExactError(await call(op, { key: null, headers: { authorization } }), 401, 'unauthorized');
          }
        });

        it('accepts the scheme in any case', async () => {
          for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
            const res = await call(op, { key: null, headers: { authorization: `${scheme} ${server().keys.full}` } });
            expect(res.status, res.text).not.toBe(401);
            expect(res.status, res.text).not.toBe(500);
          }
        });

        it('403 forbidden with a webhook key', async () => {
          expectExactError(await call(op, { key: server().keys.webhook }), 403, 'forbidden');
        });

        if (op.permission === 'write') {
          it('403 forbidden with a read-only key', async () => {
            expectExactError(await call(op, { key: server().keys.readOnly }), 403, 'forbidden');
          });
        } else {
          it('is allowed with a read-only key', async () => {
            const res = await call(op, { key: server().keys.readOnly });
            expect(res.status, res.text).not.toBe(401);
            expect(res.status, res.text).not.toBe(403);
            expect(res.status, res.text).not.toBe(500);
          });
        }

        it('is allowed with a full-access key', async () => {
          const res = await call(op);
          expect(res.status, res.text).not.toBe(401);
          expect(res.status, res.text).not.toBe(403);
          expect(res.status, res.text).not.toBe(500);
        });

        it('checks the key before the query: 401 without a key, 403 with a webhook key, 400 with a full key', async () => {
          const query = { bogus_param: '1' };
          expectExactError(await call(op, { key: null, query }), 401, 'unauthorized');
          expectExactError(await call(op, { key: server().keys.webhook, query }), 403, 'forbidden');
          if (op.permission === 'write')
            expectExactError(await call(op, { key: server().keys.readOnly, query }), 403, 'forbidden');
          // Validation (an unknown query parameter, or the empty body's problems, which are checked
          // first) comes before existence (the fake id).
          const body = expectExactError(await call(op, { query }), 400, 'bad_request');
          if (op.body === undefined)
            expect(body.error.details).toMatchObject({ field: 'bogus_param', constraint: 'unknown' });
        });
      },
    );

  describe('order of checks on bodies', () => {
    const invalidBodies: [string, RequestOptions][] = [
      ['malformed JSON', { rawBody: '{"name": ', headers: { 'content-type': 'application/json' } }],
      ['a text/plain body', { rawBody: 'hello', headers: { 'content-type': 'text/plain' } }],
      ['an unknown field', { body: { bogus_field: 1 } }],
      ['a JSON array', { body: [1, 2] }],
    ];

    for (const transport of TRANSPORTS)
      describe.each(withBody.filter(([, op]) => transportsOf(op).includes(transport)))(
        `%s (${transport})`,
        (_operationId: OperationId, op) => {
          const call = (op: EndpointDefinition, options: RequestOptions = {}) => callBy(transport, op, options);
          it.each(invalidBodies)('without a key, %s is 401 (not 400)', async (_name, options) => {
            expectExactError(await call(op, { ...options, key: null }), 401, 'unauthorized');
            expectExactError(await call(op, { ...options, key: 'wrong' }), 401, 'unauthorized');
          });

          it.each(invalidBodies)('with a webhook key, %s is 403 (not 400)', async (_name, options) => {
            expectExactError(await call(op, { ...options, key: server().keys.webhook }), 403, 'forbidden');
          });

          if (op.permission === 'write') {
            it.each(invalidBodies)('with a read-only key, %s is 403 (not 400)', async (_name, options) => {
              expectExactError(await call(op, { ...options, key: server().keys.readOnly }), 403, 'forbidden');
            });
          }

          it.each(invalidBodies)('with a full key, %s is 400 even on a missing resource', async (_name, options) => {
            expectExactError(await call(op, options), 400, 'bad_request');
          });
        },
      );

    it('names the validation problem on a missing resource rather than answering 404', async () => {
      expectExactError(
        await server().request('PATCH', `/contacts/${MISSING}`, { body: { name: 123 } }),
        400,
        'bad_request',
        {
          field: 'name',
          constraint: 'type',
        },
      );
      expectExactError(
        await server().request('PATCH', `/conversations/${MISSING}`, { body: { status: 'closed' } }),
        400,
        'bad_request',
        {
          field: 'status',
          constraint: 'enum',
        },
      );
      expectExactError(await server().request('POST', `/contacts/${MISSING}/tags`, { body: {} }), 400, 'bad_request', {
        field: 'tag',
        constraint: 'required',
      });
      expectExactError(
        await server().request('POST', `/contacts/${MISSING}/tags`, {
          rawBody: '{',
          headers: { 'content-type': 'application/json' },
        }),
        400,
        'bad_request',
        {
          field: 'body',
          constraint: 'json',
        },
      );
      // And a valid body on a missing resource is 404.
      expectExactError(
        await server().request('PATCH', `/contacts/${MISSING}`, { body: { name: 'Valid' } }),
        404,
        'not_found',
      );
      expectExactError(
        await server().request('POST', `/contacts/${MISSING}/tags`, { body: { tag: 'vip' } }),
        404,
        'not_found',
      );
    });

    it('without a key, a body over 1 MiB is 401 (not 400)', async () => {
      const rawBody = JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) });
      expectExactError(
        await server().request('POST', '/contacts', {
          key: null,
          rawBody,
          headers: { 'content-type': 'application/json' },
        }),
        401,
        'unauthorized',
      );
    });
  });

  describe('unknown paths under /v1', () => {
    const unknown: [string, string][] = [
      ['GET', '/nope'],
      ['POST', '/nope'],
      ['GET', '/contacts/x_missing/nope'],
      ['DELETE', '/conversations'],
      ['PUT', '/contacts/x_missing'],
    ];

    it.each(unknown)('%s %s is 401 without a key or with an invalid one', async (method, path) => {
      expectExactError(await server().request(method, path, { key: null }), 401, 'unauthorized');
      expectExactError(await server().request(method, path, { key: 'wrong' }), 401, 'unauthorized');
      expectExactError(await server().request(method, path, { key: server().keys.revoked }), 401, 'unauthorized');
    });

    it.each(unknown)('%s %s is 404 not_found with every valid key, whatever its type', async (method, path) => {
      for (const key of [server().keys.full, server().keys.readOnly, server().keys.webhook, server().keys.otherFull]) {
        expectExactError(await server().request(method, path, { key }), 404, 'not_found');
      }
    });

    it('GET /v1 itself is 401 without a key and 404 with one', async () => {
      const root = server().baseUrl;
      const noKey = await fetch(root);
      expect(noKey.status).toBe(401);
      const withKey = await fetch(root, { headers: { authorization: `Bearer ${server().keys.webhook}` } });
      expect(withKey.status).toBe(404);
      expect(ErrorBody.parse(await withKey.json()).error.code).toBe('not_found');
    });
  });

  describe('privileged and unknown body fields', () => {
    it.each([
      ['account_id', 'acct_x'],
      ['id', 'ct_x'],
      ['created_at', '2026-01-01T00:00:00.000Z'],
      ['updated_at', '2026-01-01T00:00:00.000Z'],
      ['nickname', 'Zé'],
    ])('POST /contacts with %s is 400 naming the field, constraint unknown', async (field, value) => {
      const res = await server().request('POST', '/contacts', { body: { phone: '+14155559876', [field]: value } });
      expectExactError(res, 400, 'bad_request', { field, constraint: 'unknown' });
    });

    it('PATCH /contacts/:id with account_id is 400 unknown and changes nothing', async () => {
      const created = await server().request('POST', '/contacts', { body: { phone: '+14155559877' } });
      expect(created.status, created.text).toBe(201);
      const id = created.body.id as string;
      expectExactError(
        await server().request('PATCH', `/contacts/${id}`, { body: { account_id: server().otherAccountId } }),
        400,
        'bad_request',
        {
          field: 'account_id',
          constraint: 'unknown',
        },
      );
      expect((await server().request('GET', `/contacts/${id}`)).status).toBe(200);
      expectExactError(
        await server().request('GET', `/contacts/${id}`, { key: server().keys.otherFull }),
        404,
        'not_found',
      );
    });
  });

  describe('revocation', () => {
    it('a key revoked while the server runs fails on the very next request', async () => {
      const { database, accountId } = server();
      const created = await accountsService.createKey({ database }, { accountId, type: 'full_access' });
      expect(created.key).toMatch(/^convo_sk_/);
      expectBody(await server().request('GET', '/contacts', { key: created.key }), 200, ContactList);
      const made = await server().request('POST', '/contacts', { key: created.key, body: { phone: '+14155559878' } });
      expect(made.status, made.text).toBe(201);

      await accountsService.revokeKey({ database }, created.id);

      expectExactError(await server().request('GET', '/contacts', { key: created.key }), 401, 'unauthorized');
      expectExactError(
        await server().request('POST', '/contacts', { key: created.key, body: { phone: '+14155559879' } }),
        401,
        'unauthorized',
      );
      expectExactError(await server().request('GET', '/nope', { key: created.key }), 401, 'unauthorized');
      // Other keys of the account still work.
      expectBody(await server().request('GET', '/contacts'), 200, ContactList);
    });

    it('a key revoked through another connection (the operator command) fails on the very next request', async () => {
      const { database, accountId } = server();
      const created = await accountsService.createKey({ database }, { accountId, type: 'full_access' });
      // Used a few times first: nothing the server remembers of a key may outlive its revocation.
      for (let i = 0; i < 3; i++)
        expectBody(await server().request('GET', '/contacts', { key: created.key }), 200, ContactList);
      await revokeKeyElsewhere(server().databaseUrl, created.id);
      expectExactError(await server().request('GET', '/contacts', { key: created.key }), 401, 'unauthorized');
      expectBody(await server().request('GET', '/contacts'), 200, ContactList);
    });

    it('a key in use has its last use written down at most once a minute', async () => {
      const { database, accountId } = server();
      const created = await accountsService.createKey({ database }, { accountId, type: 'read_only' });
      const lastUsed = async () =>
        (await accountsService.listKeys({ database, accountId: accountId })).find((k) => k.id === created.id)
          ?.last_used_at;
      expect(await lastUsed()).toBeNull();
      expectBody(await server().request('GET', '/contacts', { key: created.key }), 200, ContactList);
      const first = await lastUsed();
      expect(first).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      expectBody(await server().request('GET', '/contacts', { key: created.key }), 200, ContactList);
      expect(await lastUsed()).toBe(first);
    });

    it('revoking a read-only key stops it too, and revoking twice is harmless', async () => {
      const { database, accountId } = server();
      const created = await accountsService.createKey({ database }, { accountId, type: 'read_only' });
      expect(created.key).toMatch(/^convo_rk_/);
      expectBody(await server().request('GET', '/contacts', { key: created.key }), 200, ContactList);
      await accountsService.revokeKey({ database }, created.id);
      await accountsService.revokeKey({ database }, created.id);
      expectExactError(await server().request('GET', '/contacts', { key: created.key }), 401, 'unauthorized');
    });
  });
});
