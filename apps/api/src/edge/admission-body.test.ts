import { expect, it } from 'vitest';
import { recordEscapedErrors } from '../testing/escaped-errors.js';
import { describeEachDialect } from '../testing/harness.js';
import { MAX_BODY_BYTES } from './admission.js';

/** Errors that escaped every handler while this file ran: the process would have died of them. */
const escaped = recordEscapedErrors();

/** `{"body":[[[…]]]}` nested `levels` deep: over the size limit as well as the depth limit. */
const deepBody = (levels: number) => Buffer.from(`{"body":${'['.repeat(levels)}${']'.repeat(levels)}}`);

describeEachDialect('a body the edge refuses while reading leaves the server answering', (server) => {
  const origin = () => new URL(server().baseUrl).origin;

  const cases = [
    ['POST /hooks/meta/<anything> without a key', () => `${origin()}/hooks/meta/ch_nothing`, undefined],
    ['POST /trpc/<procedure> with a valid key', () => `${origin()}/trpc/contacts.create`, () => server().keys.full],
    ['POST /v1/contacts with a valid key', () => `${origin()}/v1/contacts`, () => server().keys.full],
  ] as const;

  for (const [name, url, key] of cases) {
    for (const levels of [64, 2_000_000]) {
      it(`${name}: ${levels} levels of nesting is a 4xx, and the process lives on`, async () => {
        const before = escaped.length;
        const body = deepBody(levels);
        expect(levels < 1000 || body.length > MAX_BODY_BYTES).toBe(true);
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        const given = key?.();
        if (given) headers.authorization = `Bearer ${given}`;
        const res = await fetch(url(), { method: 'POST', headers, body }).catch((error: unknown) => error);
        // The server may close the connection before it has read everything sent: then it answered first.
        if (res instanceof Response) {
          expect(res.status).toBeGreaterThanOrEqual(400);
          expect(res.status).toBeLessThan(500);
          await res.arrayBuffer();
        }
        const health = await fetch(`${origin()}/healthz`);
        expect(health.status).toBe(200);
        // An error emitted on a stream nobody listens to surfaces as uncaughtException on a later tick.
        await new Promise((resolve) => setImmediate(resolve));
        expect(escaped.slice(before)).toEqual([]);
      });
    }
  }
});
