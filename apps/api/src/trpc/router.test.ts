import type { Contact, ContactList } from '@convo/core';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { ApiError } from '../errors.js';
import { accountsService } from '../services/accounts.js';
import { defaultSettings } from '../settings.js';
import { RateLimits } from '../edge/rate-limits.js';
import { type AppRouter, createCaller } from './router.js';

describe('the tRPC router built from the endpoint table', () => {
  let database: DatabaseHandle;
  let key: string;
  beforeAll(async () => {
    database = openDatabase('file::memory:');
    await migrateToLatest(database.db);
    const account = await accountsService.createAccount(database, { name: 'T', plan: 'free' });
    key = (await accountsService.createKey(database, { accountId: account.id, type: 'full_access' })).key;
  });
  afterAll(() => database.destroy());

  it('is typed per operation, nested by the operation id', () => {
    type Inputs = inferRouterInputs<AppRouter>;
    type Outputs = inferRouterOutputs<AppRouter>;
    expectTypeOf<Inputs['contacts']['create']['body']['phone']>().toEqualTypeOf<string>();
    expectTypeOf<Outputs['contacts']['tags']['add']>().toEqualTypeOf<Contact>();
    expectTypeOf<Outputs['contacts']['list']>().toEqualTypeOf<ContactList>();
  });

  it('runs the same chain as HTTP: authentication, validation, the service', async () => {
    const caller = createCaller({ database, settings: defaultSettings(), rateLimits: RateLimits.create({ database }), ip: '127.0.0.1', requestId: 'req_test', authorization: `Bearer ${key}` });
    const contact = await caller.contacts.create({ body: { phone: '+14155550123', tags: ['vip'] } });
    expect(contact.tags).toEqual(['vip']);
    const list = await caller.contacts.list({ query: { tag: 'vip' } });
    expect(list.data.map((c) => c.id)).toEqual([contact.id]);

    const anonymous = createCaller({ database, settings: defaultSettings(), rateLimits: RateLimits.create({ database }), ip: '127.0.0.1', requestId: 'req_test', authorization: undefined });
    await expect(anonymous.contacts.list({ query: {} })).rejects.toSatisfy((e: { cause?: unknown }) => e.cause instanceof ApiError && e.cause.code === 'unauthorized');
    await expect(caller.contacts.create({ body: { phone: 'nope' } })).rejects.toSatisfy(
      (e: { cause?: unknown }) => e.cause instanceof ApiError && e.cause.details?.field === 'phone' && e.cause.details.constraint === 'format',
    );
  });
});
