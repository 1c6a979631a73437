import { type Contact, type ContactList, ErrorBody, endpoints, operationIds } from '@convo/core';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { describeEachDialect, transportsOf } from '../testing/harness.js';
import type { AppRouter } from './router.js';

describe('the tRPC router', () => {
  it('is typed per operation, nested by the operation id', () => {
    type Inputs = inferRouterInputs<AppRouter>;
    type Outputs = inferRouterOutputs<AppRouter>;
    expectTypeOf<Inputs['contacts']['create']['body']['phone']>().toEqualTypeOf<string>();
    expectTypeOf<Inputs['contacts']['list']['query']>().toEqualTypeOf<{
      limit?: number | undefined;
      offset?: number | undefined;
      search?: string | undefined;
      tag?: string | undefined;
    }>();
    expectTypeOf<Outputs['contacts']['tags']['add']>().toEqualTypeOf<Contact>();
    expectTypeOf<Outputs['contacts']['list']>().toEqualTypeOf<ContactList>();
  });
});

describeEachDialect('the tRPC router over HTTP', (server) => {
  const trpcUrl = (procedure: string, input?: unknown) => {
    const url = new URL(`/trpc/${procedure}`, server().baseUrl);
    if (input !== undefined) url.searchParams.set('input', JSON.stringify(input));
    return url;
  };

  it('serves every operation of the endpoint table', async () => {
    for (const operationId of operationIds.filter((id) => transportsOf(endpoints[id]).includes('trpc'))) {
      const res = await fetch(trpcUrl(operationId), {
        method: 'POST',
        headers: { authorization: `Bearer ${server().keys.full}` },
      });
      const body = (await res.json()) as { error?: { data: { body: unknown } } };
      // Any answer but "no such procedure": a query refuses POST, a mutation its missing input.
      expect(`${operationId}: ${JSON.stringify(body.error?.data.body)}`).not.toContain('No such procedure');
    }
  });

  it('runs the operation: a mutation, then a query of what it made', async () => {
    const headers = { authorization: `Bearer ${server().keys.full}`, 'content-type': 'application/json' };
    const created = await fetch(trpcUrl('contacts.create'), {
      method: 'POST',
      headers,
      body: JSON.stringify({ body: { phone: '+14155550987', tags: ['trpc'] } }),
    });
    expect(created.status).toBe(200);
    const contact = ((await created.json()) as { result: { data: Contact } }).result.data;
    const listed = await fetch(trpcUrl('contacts.list', { query: { tag: 'trpc' } }), { headers });
    const list = ((await listed.json()) as { result: { data: ContactList } }).result.data;
    expect(list.data.map((c) => c.id)).toEqual([contact.id]);
  });

  it('answers an unknown procedure with 404 of the contract inside', async () => {
    const res = await fetch(trpcUrl('contacts.nope'), { headers: { authorization: `Bearer ${server().keys.full}` } });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: { data: { body: unknown } } };
    expect(ErrorBody.parse(body.error.data.body).error.code).toBe('not_found');
  });
});
