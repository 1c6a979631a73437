import { Channel, type Conversation, ConversationList, Message, MessageList } from '@convo/core';
import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { ensureBuilt, spawnWorker as spawnBinWorker } from '../testing/built-bin.js';
import { type FakeGraphApi, startFakeGraphApi } from '../testing/fake-graph-api.js';
import { describeEachDialect, expectBody } from '../testing/harness.js';
import { signMetaPayload, waText, whatsappInbound } from '../testing/meta-payloads.js';

const APP_SECRET = 'crash-app-secret';
const TOKEN = 'crash-access-token';

/**
 * A `convo-server worker` killed with SIGKILL in the middle of a channel's work: while it turns a
 * stored webhook into messages, and after Meta took a send but before `sent` was recorded. What
 * another worker does once the dead one's claim runs out is what the README promises.
 */
describeEachDialect('channels: a worker killed mid-work', (server) => {
  let fake: FakeGraphApi;
  const children: ChildProcess[] = [];

  const spawnWorker = () => {
    const child = spawnBinWorker(server().databaseUrl, {
      CONVO_SECRET_KEY: server().settings.secretKey().toString('hex'),
      CONVO_GRAPH_API_URL: fake.url,
      CONVO_CHANNEL_SEND_RETRY_SCHEDULE: '100ms,200ms,400ms',
    });
    children.push(child);
    return child;
  };
  const kill = async (child: ChildProcess) => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };

  beforeAll(async () => {
    ensureBuilt();
    fake = await startFakeGraphApi();
  });
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) await kill(child);
  });
  afterAll(async () => {
    await fake.close();
  });

  let externalSeq = 500_000;
  async function whatsappChannel() {
    const externalId = String(externalSeq++);
    const channel = expectBody(
      await server().request('POST', '/channels', {
        body: { platform: 'whatsapp', external_id: externalId, access_token: TOKEN, app_secret: APP_SECRET },
      }),
      201,
      Channel,
    );
    fake.connect({
      platform: 'whatsapp',
      externalId,
      accessToken: TOKEN,
      appSecret: APP_SECRET,
      webhookUrl: channel.webhook_url,
    });
    return { channel, externalId };
  }

  const messagesOfChannel = async (channelId: string) => {
    const conversations = expectBody(
      await server().request('GET', '/conversations', { query: { limit: 100 } }),
      200,
      ConversationList,
    ).data.filter((c: Conversation) => c.channel_id === channelId);
    const all: Message[] = [];
    for (const conversation of conversations) {
      for (let offset = 0; ; offset += 100) {
        const page = expectBody(
          await server().request('GET', `/conversations/${conversation.id}/messages`, {
            query: { limit: 100, offset },
          }),
          200,
          MessageList,
        );
        all.push(...page.data);
        if (!page.has_more) break;
      }
    }
    return all;
  };

  it('a stored webhook whose processing was cut short is finished by the next worker, each message once', async () => {
    const { channel, externalId } = await whatsappChannel();
    const customers = Array.from({ length: 40 }, (_, i) => ({
      waId: `1415555${String(2000 + i)}`,
      name: `Customer ${i}`,
    }));
    const messages = Array.from({ length: 300 }, (_, i) =>
      waText({ from: (customers[i % 40] as { waId: string }).waId, body: `message ${i}` }),
    );
    const raw = JSON.stringify(whatsappInbound({ phoneNumberId: externalId, contacts: customers, messages }));
    const response = await fetch(channel.webhook_url, {
      method: 'POST',
      body: raw,
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signMetaPayload(APP_SECRET, raw) },
    });
    expect(response.status).toBe(200);

    const first = spawnWorker();
    await vi.waitFor(async () => expect((await messagesOfChannel(channel.id)).length).toBeGreaterThan(0), {
      timeout: 30_000,
      interval: 20,
    });
    await kill(first);
    const before = (await messagesOfChannel(channel.id)).length;

    spawnWorker();
    await vi.waitFor(async () => expect((await messagesOfChannel(channel.id)).length).toBe(300), {
      timeout: 180_000,
      interval: 200,
    });
    const stored = await messagesOfChannel(channel.id);
    expect(new Set(stored.map((m) => m.platform_message_id)).size).toBe(300);
    expect(new Set(stored.map((m) => m.content))).toEqual(new Set(messages.map((_, i) => `message ${i}`)));
    const payload = await server()
      .database.db.selectFrom('channel_payloads')
      .selectAll()
      .where('channel_id', '=', channel.id)
      .executeTakeFirstOrThrow();
    await vi.waitFor(
      async () => {
        const row = await server()
          .database.db.selectFrom('channel_payloads')
          .select('processed_at')
          .where('id', '=', payload.id)
          .executeTakeFirstOrThrow();
        expect(row.processed_at).not.toBeNull();
      },
      { timeout: 10_000, interval: 100 },
    );
    // Say whether the kill landed mid-way (it usually does); either way nothing was lost or doubled.
    expect(before).toBeLessThanOrEqual(300);
  }, 300_000);

  it('a send Meta took before the worker died is sent again by the next worker: one message, at least once to Meta', async () => {
    const { channel, externalId } = await whatsappChannel();
    const worker = spawnWorker();
    expect((await fake.sendInbound(externalId, { from: '14155553001', name: 'Ana', text: 'Hello?' })).status).toBe(200);
    let conversationId = '';
    await vi.waitFor(
      async () => {
        const found = expectBody(
          await server().request('GET', '/conversations', { query: { limit: 100 } }),
          200,
          ConversationList,
        ).data.find((c: Conversation) => c.channel_id === channel.id);
        expect(found).toBeDefined();
        conversationId = (found as Conversation).id;
      },
      { timeout: 30_000, interval: 50 },
    );

    fake.setDelay(60_000);
    const sent = expectBody(
      await server().request('POST', '/messages', {
        body: { conversation_id: conversationId, content: 'It ships today' },
      }),
      201,
      Message,
    );
    await vi.waitFor(
      () => expect(fake.requests.filter((r) => r.isSend && r.externalId === externalId)).toHaveLength(1),
      { timeout: 30_000, interval: 20 },
    );
    await kill(worker);
    fake.setDelay(0);

    spawnWorker();
    await vi.waitFor(
      async () => {
        const message = expectBody(
          await server().request('GET', `/conversations/${conversationId}/messages`),
          200,
          MessageList,
        ).data.find((m: Message) => m.id === sent.id);
        expect(message?.status).toBe('sent');
      },
      { timeout: 30_000, interval: 100 },
    );
    const outbound = expectBody(
      await server().request('GET', `/conversations/${conversationId}/messages`),
      200,
      MessageList,
    ).data.filter((m: Message) => m.direction === 'outbound');
    expect(outbound).toHaveLength(1);
    const sends = fake.requests.filter((r) => r.isSend && r.externalId === externalId);
    // Meta's Send API takes no idempotency key: the send went out again (README: at least once).
    expect(sends.length).toBeGreaterThanOrEqual(2);
    expect(fake.sent(externalId).map((s) => s.platformId)).toContain(outbound[0]?.platform_message_id);
  }, 120_000);
});
