import { CreateOrderBody, CreateWebhookEndpointBody, text } from '@convo/core';
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { toValidationIssues } from './validation.js';

const issuesOf = (schema: z.ZodType, input: unknown) => {
  const result = schema.safeParse(input);
  if (result.success) throw new Error('expected the input to be refused');
  return toValidationIssues(result.error.issues, input);
};

describe('validation messages', () => {
  it('count items and characters in the singular for one and the plural otherwise', () => {
    const order = { contact_id: 'ct_01J0000000000000000000000', currency: 'EUR', items: [] };
    expect(issuesOf(CreateOrderBody, order)).toEqual([
      { field: 'items', constraint: 'min', message: 'items must hold at least 1 item' },
    ]);
    expect(issuesOf(z.object({ tags: z.array(z.string()).max(2) }), { tags: ['a', 'b', 'c'] })).toEqual([
      { field: 'tags', constraint: 'max', message: 'tags must hold at most 2 items' },
    ]);
    expect(issuesOf(z.object({ name: text(1, 3) }), { name: '' })).toEqual([
      { field: 'name', constraint: 'min_length', message: 'name must have at least 1 character' },
    ]);
    expect(issuesOf(z.object({ name: text(1, 3) }), { name: 'long' })).toEqual([
      { field: 'name', constraint: 'max_length', message: 'name must have at most 3 characters' },
    ]);
    expect(issuesOf(z.object({ n: z.number().min(1) }), { n: 0 })).toEqual([
      { field: 'n', constraint: 'min', message: 'n must be at least 1' },
    ]);
  });

  it('say a webhook URL may be https, or plain http where the server accepts it, not that it must be https', () => {
    const [issue] = issuesOf(CreateWebhookEndpointBody, { url: 'ftp://example.com/hook', events: ['*'] });
    expect(issue).toMatchObject({ field: 'url', constraint: 'format' });
    expect(issue?.message).toMatch(/https, or plain http where the server accepts private webhooks/);
  });
});
