import { expect, it } from 'vitest';
import { FULL_BATCH_LINES, requestLogsService } from '../services/request-logs.js';
import { describeEachDialect } from '../testing/harness.js';

describeEachDialect('the request log', (server) => {
  const ctx = () => ({ database: server().database, accountId: server().accountId });
  const list = (filter = {}) => requestLogsService.list(ctx(), { filter, limit: 50, offset: 0 });

  it("keeps each API request of the account's keys, a failed one with its body (secrets redacted) and error", async () => {
    const ok = await server().request('GET', '/contacts', { query: { limit: 2 } });
    expect(ok.status).toBe(200);
    const body = {
      platform: 'telegram',
      external_id: '123',
      access_token: 'EAAG-very-secret-token',
      app_secret: 'shh-app-secret',
    };
    const failed = await server().request('POST', '/channels', { body });
    expect(failed.status).toBe(400);
    const unknown = await server().request('GET', '/contacts', { key: 'convo_sk_nobody' });
    expect(unknown.status).toBe(401);
    await server().flushRequestLog();

    const lines = (await list()).data;
    expect(lines.map((line) => [line.method, line.path, line.status])).toEqual([
      ['POST', '/v1/channels', 400],
      ['GET', '/v1/contacts', 200],
    ]);
    const [post, get] = lines as [(typeof lines)[0], (typeof lines)[0]];
    expect(get).toMatchObject({ query: 'limit=2', request_body: null, error_body: null });
    expect(get.request_id).toBe(ok.headers.get('x-request-id'));
    expect(get.key).toMatchObject({ id: expect.stringMatching(/^key_/), last_four: server().keys.full.slice(-4) });
    expect(get.duration_ms).toBeGreaterThanOrEqual(0);
    expect(JSON.parse(post.request_body as string)).toEqual({
      ...body,
      access_token: '[redacted]',
      app_secret: '[redacted]',
    });
    expect(post.request_body).not.toContain('very-secret');
    expect(JSON.parse(post.error_body as string)).toEqual(failed.body);
  });

  it('filters by status class, path prefix, key and request id, and is scoped to the account', async () => {
    await server().request('GET', '/orders');
    const miss = await server().request('GET', '/orders/ord_nope');
    expect(miss.status).toBe(404);
    await server().request('GET', '/tags', { key: server().keys.readOnly });
    await server().flushRequestLog();

    expect((await list({ statusClass: 4, path: '/v1/orders' })).data.map((line) => line.path)).toEqual([
      '/v1/orders/ord_nope',
    ]);
    expect((await list({ path: '/v1/orders' })).total).toBe(2);
    const byKey = (await list({ path: '/v1/tags' })).data[0];
    expect(byKey?.key?.last_four).toBe(server().keys.readOnly.slice(-4));
    expect((await list({ keyId: byKey?.key?.id })).data.every((line) => line.key?.id === byKey?.key?.id)).toBe(true);
    const requestId = miss.headers.get('x-request-id') as string;
    expect((await requestLogsService.retrieve(ctx(), requestId)).status).toBe(404);
    await expect(
      requestLogsService.retrieve({ database: server().database, accountId: server().otherAccountId }, requestId),
    ).rejects.toMatchObject({ code: 'not_found' });
  });

  it('forgets requests older than the retention', async () => {
    await server().request('GET', '/events');
    await server().flushRequestLog();
    expect((await list({ path: '/v1/events' })).total).toBe(1);
    // A retention that ends a minute from now takes every line there is.
    await requestLogsService.prune({ database: server().database }, -1 / 1_440);
    expect((await list({ path: '/v1/events' })).total).toBe(0);
  });

  it('writes full batches and partial ones field for field', async () => {
    const lineOf = (i: number) => ({
      account_id: server().accountId,
      id: `rl_batch${String(i).padStart(6, '0')}`,
      request_id: `req_batch_${i}`,
      key_id: i % 2 ? null : 'key_batch',
      method: 'POST',
      path: '/v1/batch',
      query: i % 3 ? `n=${i}` : null,
      status: 400 + (i % 3),
      duration_ms: i,
      request_body: i % 2 ? `{"n":${i}}` : null,
      error_body: i % 2 ? null : `{"error":${i}}`,
      created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString(),
    });
    const lines = Array.from({ length: FULL_BATCH_LINES * 2 + 7 }, (_, i) => lineOf(i));
    // Twice the full batch's statement (kept after its first use), then a partial one.
    for (let start = 0; start < lines.length; start += FULL_BATCH_LINES)
      await requestLogsService.record({ database: server().database }, lines.slice(start, start + FULL_BATCH_LINES));

    const page = await list({ path: '/v1/batch' });
    expect(page.total).toBe(lines.length);
    for (const i of [lines.length - 1, FULL_BATCH_LINES + 3, 2]) {
      const { account_id, key_id, id, ...line } = lineOf(i);
      const read = await requestLogsService.retrieve(ctx(), line.request_id);
      expect(read).toMatchObject({ ...line, id, key: key_id ? { id: key_id } : null });
    }
  });
});
