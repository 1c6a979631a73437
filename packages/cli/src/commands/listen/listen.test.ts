import { verifyWebhook } from '@convo/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../errors.js';
import { run } from '../../program.js';
import { openEventStream, testEvent, testServer, unauthorized } from '../../test-event-server.js';
import { testTerminal } from '../../test-terminal.js';
import { newSigningSecret, signatureOf } from './deliveries.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function server(...args: Parameters<typeof testServer>) {
  const started = await testServer(...args);
  closers.push(started.close);
  return started;
}

const env = (url: string) => ({ CONVO_API_KEY: 'convo_sk_test', CONVO_BASE_URL: `${url}/v1` });

describe('convo listen', () => {
  it('forwards each event once, signed with the secret it printed, and goes on when the handler is down', async () => {
    const { terminal, stdout, stderr } = testTerminal();
    const secret = () => /whsec_\S+/.exec(stdout.text)?.[0] ?? '';
    const verified: unknown[] = [];
    const handler = await server(async (request, response) => {
      try {
        verified.push(await verifyWebhook(request.body, request.headers as Record<string, string>, secret()));
        response.writeHead(204).end();
      } catch {
        response.writeHead(400).end();
      }
    });
    const [one, two, three] = [testEvent(1), testEvent(2), testEvent(3, 'message.updated')];
    const stream = await server(async (_request, response, index) => {
      if (index === 0) {
        openEventStream(response);
        response.end(one.block + two.block);
      } else if (index === 1) {
        // The handler goes away before the next event.
        await handler.close();
        openEventStream(response);
        response.end(three.block);
      } else unauthorized(response);
    });

    // The reconnections' waits are recorded, not waited out.
    const waits: number[] = [];
    const code = await run(
      ['listen', '--forward-to', `${handler.url}/webhooks`, '--events', 'message.received,message.updated'],
      { ...terminal, env: env(stream.url), sleep: async (ms) => void waits.push(ms) },
    );

    expect(code, stderr.text).toBe(EXIT_CODES.auth);
    const lines = stdout.text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^Webhook signing secret for this run: whsec_[A-Za-z0-9+/]{32}$/);
    expect(lines.slice(2)).toEqual([
      expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z {2}message\.received {2}evt_1 {2}→ 204 \(\d+ ms\)$/),
      expect.stringMatching(/ {2}message\.received {2}evt_2 {2}→ 204 \(\d+ ms\)$/),
      expect.stringMatching(/ {2}message\.updated {2}evt_3 {2}→ error: .*ECONNREFUSED.* \(\d+ ms\)$/),
    ]);
    // The body is the event's JSON, the webhook-id its id.
    expect(verified).toEqual([one.event, two.event]);
    expect(handler.seen.map((request) => request.headers['webhook-id'])).toEqual(['evt_1', 'evt_2']);
    expect(handler.seen[0]?.body).toBe(JSON.stringify(one.event));
    expect(stream.seen.map((request) => request.headers['last-event-id'])).toEqual([undefined, 'evt_2', 'evt_3']);
    expect(stream.seen[0]?.url.searchParams.get('type')).toBe('message.received,message.updated');
    expect(stderr.text).toMatch(/reconnecting in \d+\.\d s/);
    expect(waits).toHaveLength(2);
    for (const ms of waits) expect(ms).toBeGreaterThan(0);
    expect(stderr.text).toMatch(/Invalid API key/);
  });

  it('prints the events as JSON Lines with --print-json', async () => {
    const { terminal, stdout } = testTerminal();
    const [one, two] = [testEvent(1), testEvent(2)];
    const stream = await server((_request, response, index) => {
      if (index > 0) return unauthorized(response);
      openEventStream(response);
      response.end(one.block + two.block);
    });
    expect(await run(['listen', '--print-json'], { ...terminal, env: env(stream.url) })).toBe(EXIT_CODES.auth);
    expect(stdout.text).toBe(`${JSON.stringify(one.event)}\n${JSON.stringify(two.event)}\n`);
  });

  it('needs --forward-to with an http(s) URL, or --print-json', async () => {
    for (const argv of [
      ['listen'],
      ['listen', '--forward-to', 'localhost:4242'],
      ['listen', '--print-json', '--forward-to', 'http://x'],
    ]) {
      const { terminal, stderr } = testTerminal({ env: env('http://127.0.0.1:9') });
      expect(await run(argv, terminal), argv.join(' ')).toBe(EXIT_CODES.usage);
      expect(stderr.text).toMatch(/forward-to/);
    }
  });

  it('makes a new secret of 24 random bytes each run, and signs as Standard Webhooks does', () => {
    const secret = newSigningSecret();
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(24);
    expect(newSigningSecret()).not.toBe(secret);
    // The example of the Standard Webhooks specification.
    expect(
      signatureOf(
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });
});
