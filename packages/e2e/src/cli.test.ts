import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  File as FileRecord,
  Channel,
  ChannelList,
  Contact,
  ContactList,
  Conversation,
  ConversationList,
  EventList,
  Message,
  MessageList,
  Order,
  OrderList,
  Tag,
  TagList,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
  Workflow,
  WorkflowList,
  WorkflowRun,
  STORY_TEMPLATES,
  WhatsAppTemplateList,
  WorkflowRunList,
  endpoints,
} from '@convo/core';
import { accountsService } from '@convo/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestServer, freePort, startServer } from './server.js';

/** The built CLI (`cd packages/cli && npx tsup`), run as a user runs it. */
const BIN = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('the convo CLI against a real server', () => {
  let server: TestServer;
  let home: string;
  const called = new Set<string>();

  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build the CLI first (cd packages/cli && npx tsup)`);
    server = await startServer();
    home = mkdtempSync(join(tmpdir(), 'convo-cli-home-'));
  });
  afterAll(async () => {
    await server?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  /**
   * Runs `convo …` with a clean environment: no profile, the full-access key and the server's URL unless told
   * otherwise.
   */
  function convo(
    args: string[],
    options: {
      env?: Record<string, string | undefined>;
      input?: string;
      stopWhen?: RegExp;
      stopWhenOutput?: RegExp;
    } = {},
  ): Promise<Result & { stopped?: boolean }> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: home,
      XDG_CONFIG_HOME: join(home, 'config'),
    };
    const settings = { CONVO_API_KEY: server.keys.full, CONVO_BASE_URL: server.baseUrl, ...options.env };
    for (const [name, value] of Object.entries(settings)) if (value !== undefined) env[name] = value;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      // Stopped as soon as stderr (or stdout) says what the test waits for, while the command still runs.
      let stopped = false;
      const stopIf = (reached: boolean | undefined) => {
        if (reached && !stopped && child.exitCode === null) {
          stopped = true;
          child.kill();
        }
      };
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
        stopIf(options.stopWhenOutput?.test(stdout));
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        stopIf(options.stopWhen?.test(stderr));
      });
      child.on('error', reject);
      child.on('close', (code) =>
        resolve({ code, stdout, stderr, ...(options.stopWhen || options.stopWhenOutput ? { stopped } : {}) }),
      );
      child.stdin.end(options.input ?? '');
    });
  }

  /** Runs an operation's command with --json, expects success, and parses the output with the contract's schema. */
  async function operation<T>(
    id: keyof typeof endpoints,
    args: string[],
    schema: { parse(value: unknown): T },
  ): Promise<T> {
    const result = await convo([...args, '--json']);
    expect(result.stderr, `${args.join(' ')}`).toBe('');
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    called.add(id);
    return schema.parse(JSON.parse(result.stdout));
  }

  const lines = (text: string) => text.split('\n').filter((line) => line !== '');

  // A CLI process per operation and more, one after the other: 54 s in one CI run with the other
  // suites beside it, over the default 60 s in the next; 240 s.
  it('runs every operation of the endpoint table', async () => {
    const ana = await operation(
      'contacts.create',
      [
        'contacts',
        'create',
        '--name',
        'Ana Souza',
        '--phone',
        '+5511987654321',
        '--tag',
        'vip',
        '--tag',
        'new',
        '--attribute',
        'tier=gold',
        '--attribute',
        'visits:=3',
      ],
      Contact,
    );
    expect(ana).toMatchObject({ name: 'Ana Souza', tags: ['vip', 'new'], attributes: { tier: 'gold', visits: 3 } });
    expect(await operation('contacts.retrieve', ['contacts', 'get', ana.id], Contact)).toEqual(ana);
    const updated = await operation(
      'contacts.update',
      ['contacts', 'update', ana.id, '--email', 'ana@example.com', '--body', '{"name":"Ana S."}'],
      Contact,
    );
    expect(updated).toMatchObject({ email: 'ana@example.com', name: 'Ana S.' });
    expect(
      (await operation('contacts.update', ['contacts', 'update', ana.id, '--email', ''], Contact)).email,
    ).toBeNull();
    expect(
      (await operation('contacts.tags.add', ['contacts', 'tag', 'add', ana.id, 'café vip'], Contact)).tags,
    ).toEqual(['vip', 'new', 'café vip']);
    expect(
      (await operation('contacts.tags.remove', ['contacts', 'tag', 'remove', ana.id, 'café vip'], Contact)).tags,
    ).toEqual(['vip', 'new']);
    expect(
      (await operation('contacts.list', ['contacts', 'list', '--tag', 'vip'], ContactList)).data.map((c) => c.id),
    ).toEqual([ana.id]);
    expect((await operation('tags.list', ['tags', 'list'], TagList)).data).toEqual([
      { name: 'new', contact_count: 1 },
      { name: 'vip', contact_count: 1 },
    ]);
    expect(await operation('tags.update', ['tags', 'rename', 'new', '--name', 'fresh'], Tag)).toEqual({
      name: 'fresh',
      contact_count: 1,
    });
    expect(await convo(['tags', 'delete', 'fresh', '--json'])).toEqual({ code: 0, stdout: '', stderr: '' });
    called.add('tags.delete');
    expect((await operation('contacts.retrieve', ['contacts', 'get', ana.id], Contact)).tags).toEqual(['vip']);

    const conversation = await operation(
      'conversations.create',
      ['conversations', 'create', '--contact', ana.id, '--platform', 'whatsapp'],
      Conversation,
    );
    const message = await operation(
      'messages.send',
      ['messages', 'send', '--conversation', conversation.id, '--content', 'Olá Ana!'],
      Message,
    );
    expect(message).toMatchObject({ direction: 'outbound', content: 'Olá Ana!' });
    expect(await operation('messages.retrieve', ['messages', 'get', message.id], Message)).toEqual(message);

    // A file: uploaded from a path (its type from the extension), read back by id, written to --output.
    const folder = mkdtempSync(join(tmpdir(), 'convo-cli-files-'));
    const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 13) % 256));
    writeFileSync(join(folder, 'recibo 7.pdf'), bytes);
    const file = await operation('files.create', ['files', 'upload', join(folder, 'recibo 7.pdf')], FileRecord);
    expect(file).toMatchObject({ filename: 'recibo 7.pdf', mime_type: 'application/pdf', size: bytes.length });
    expect(await operation('files.retrieve', ['files', 'get', file.id], FileRecord)).toEqual(file);
    const downloaded = await convo(['files', 'download', file.id, '--output', join(folder, 'back.pdf')]);
    expect(downloaded, downloaded.stderr).toMatchObject({ code: 0, stdout: '' });
    expect(readFileSync(join(folder, 'back.pdf')).equals(bytes)).toBe(true);
    called.add('files.content');
    // A photo: --image uploads it and sends its file.
    writeFileSync(join(folder, 'beans.png'), bytes.subarray(0, 20_000));
    const other = await operation(
      'conversations.create',
      ['conversations', 'create', '--contact', ana.id, '--platform', 'facebook'],
      Conversation,
    );
    const photo = await operation(
      'messages.send',
      ['messages', 'send', '--conversation', other.id, '--image', join(folder, 'beans.png')],
      Message,
    );
    expect(photo).toMatchObject({
      type: 'image',
      media: { mime_type: 'image/png', status: 'stored', filename: 'beans.png' },
    });
    const sentFile = await operation('files.retrieve', ['files', 'get', photo.media?.file_id as string], FileRecord);
    expect(sentFile.size).toBe(20_000);
    rmSync(folder, { recursive: true, force: true });
    expect(
      await operation('conversations.retrieve', ['conversations', 'get', conversation.id], Conversation),
    ).toMatchObject({
      message_count: 1,
      last_message: { content: 'Olá Ana!' },
    });
    expect(
      (await operation('conversations.listMessages', ['conversations', 'messages', conversation.id], MessageList)).data,
    ).toEqual([message]);
    expect(
      (
        await operation(
          'conversations.update',
          ['conversations', 'update', conversation.id, '--status', 'resolved'],
          Conversation,
        )
      ).status,
    ).toBe('resolved');
    const resolved = await operation(
      'conversations.list',
      ['conversations', 'list', '--status', 'resolved', '--platform', 'whatsapp', '--search', 'ana'],
      ConversationList,
    );
    expect(resolved.data.map((c) => c.id)).toEqual([conversation.id]);

    const order = await operation(
      'orders.create',
      [
        'orders',
        'create',
        '--contact',
        ana.id,
        '--currency',
        'BRL',
        '--item',
        'Denim jacket:1:18990',
        '--item',
        'Belt: black:2:500',
        '--number',
        'A-1',
        '--status',
        'paid',
        '--placed-at',
        '2026-11-20T10:00:00Z',
      ],
      Order,
    );
    expect(order).toMatchObject({
      number: 'A-1',
      status: 'paid',
      total_amount: 19990,
      items: [{ name: 'Denim jacket' }, { name: 'Belt: black', quantity: 2 }],
    });
    expect(await operation('orders.retrieve', ['orders', 'get', order.id], Order)).toEqual(order);
    expect((await operation('orders.list', ['orders', 'list', '--contact', ana.id], OrderList)).data).toEqual([order]);
    expect(
      await operation('orders.update', ['orders', 'update', order.id, '--status', 'fulfilled'], Order),
    ).toMatchObject({
      id: order.id,
      status: 'fulfilled',
    });

    const workflow = await operation(
      'workflows.create',
      ['workflows', 'create', '--name', 'Welcome', '--step', '{"type":"add_tag","tag":"welcomed"}'],
      Workflow,
    );
    expect(await operation('workflows.retrieve', ['workflows', 'get', workflow.id], Workflow)).toEqual(workflow);
    expect((await operation('workflows.list', ['workflows', 'list'], WorkflowList)).data.map((w) => w.id)).toEqual([
      workflow.id,
    ]);
    const run = await operation(
      'workflows.trigger',
      ['workflows', 'trigger', workflow.id, '--contact', ana.id, '--data', 'source=cli', '--data', 'order:=1001'],
      WorkflowRun,
    );
    expect(run).toMatchObject({ workflow_id: workflow.id, contact_id: ana.id, data: { source: 'cli', order: 1001 } });
    expect(
      (await operation('workflows.listRuns', ['workflows', 'runs', workflow.id], WorkflowRunList)).data.map(
        (r) => r.id,
      ),
    ).toEqual([run.id]);
    expect(
      (await operation('workflows.retrieveRun', ['workflows', 'run', 'get', workflow.id, run.id], WorkflowRun)).id,
    ).toBe(run.id);
    const later = await operation(
      'workflows.create',
      ['workflows', 'create', '--name', 'Later', '--step', '{"type":"wait","seconds":3600}'],
      Workflow,
    );
    const waiting = await operation(
      'workflows.trigger',
      ['workflows', 'trigger', later.id, '--contact', ana.id],
      WorkflowRun,
    );
    expect(
      (await operation('workflows.cancelRun', ['workflows', 'run', 'cancel', later.id, waiting.id], WorkflowRun))
        .status,
    ).toBe('cancelled');
    expect(
      (
        await operation(
          'workflows.update',
          ['workflows', 'update', later.id, '--name', 'Renamed', '--enabled', 'false'],
          Workflow,
        )
      ).enabled,
    ).toBe(false);
    expect(await convo(['workflows', 'delete', later.id, '--json'])).toEqual({ code: 0, stdout: '', stderr: '' });
    called.add('workflows.delete');

    const inbound = await operation(
      'sandbox.inbound',
      ['sandbox', 'inbound', '--platform', 'instagram', '--from', 'phone=+5511987654321', '--content', 'Oi!'],
      Message,
    );
    expect(inbound).toMatchObject({ direction: 'inbound', content: 'Oi!' });
    expect(
      (await operation('events.list', ['events', 'list', '--type', 'message.received'], EventList)).data[0]?.data,
    ).toEqual(inbound);
    // A stream runs until interrupted (SIGTERM here, once it has printed the message's event): it
    // catches up from the event before the message's.
    const received = EventList.parse(
      JSON.parse((await convo(['events', 'list', '--type', 'message.received', '--limit', '1', '--json'])).stdout),
    ).data[0];
    const before = EventList.parse(
      JSON.parse((await convo(['events', 'list', '--starting-after', String(received?.id), '--limit', '1'])).stdout),
    ).data[0];
    const streamed = await convo(
      ['events', 'stream', '--type', 'message.received', '--starting-after', String(before?.id)],
      { stopWhenOutput: /\n/ },
    );
    expect(streamed, streamed.stderr).toMatchObject({ code: 0, stderr: '', stopped: true });
    expect(lines(streamed.stdout).map((line) => JSON.parse(line))).toEqual([received]);
    called.add('events.stream');

    const endpoint = await operation(
      'webhookEndpoints.create',
      ['webhooks', 'create', '--url', 'https://example.com/hooks', '--event', 'order.placed'],
      WebhookEndpoint,
    );
    expect(await operation('webhookEndpoints.retrieve', ['webhooks', 'get', endpoint.id], WebhookEndpoint)).toEqual(
      endpoint,
    );
    expect(
      (
        await operation(
          'webhookEndpoints.update',
          ['webhooks', 'update', endpoint.id, '--description', 'orders'],
          WebhookEndpoint,
        )
      ).description,
    ).toBe('orders');
    expect((await operation('webhookEndpoints.list', ['webhooks', 'list'], WebhookEndpointList)).total).toBe(1);
    await operation(
      'orders.create',
      ['orders', 'create', '--contact', ana.id, '--currency', 'BRL', '--item', 'Cap:1:50'],
      Order,
    );
    const deliveries = await operation(
      'webhookEndpoints.listDeliveries',
      ['webhooks', 'deliveries', endpoint.id],
      WebhookDeliveryList,
    );
    expect(deliveries.data[0]).toMatchObject({ event_type: 'order.placed', endpoint_id: endpoint.id });
    const retried = await operation(
      'webhookEndpoints.retryDelivery',
      ['webhooks', 'retry', endpoint.id, String(deliveries.data[0]?.id)],
      WebhookDelivery,
    );
    expect(retried.status).toBe('pending');
    expect(await operation('webhookEndpoints.test', ['webhooks', 'test', endpoint.id], WebhookDelivery)).toMatchObject({
      event_type: 'ping',
    });
    const replayed = await convo([
      'webhooks',
      'replay',
      endpoint.id,
      '--since',
      '2026-01-01T00:00:00Z',
      '--until',
      '2099-01-01T00:00:00Z',
      '--json',
    ]);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(JSON.parse(replayed.stdout)).toMatchObject({ endpoint_id: endpoint.id, status: 'failed' });
    called.add('webhookEndpoints.replay');
    const deletedEndpoint = await convo(['webhooks', 'delete', endpoint.id, '--json']);
    expect(deletedEndpoint).toEqual({ code: 0, stdout: '', stderr: '' });
    called.add('webhookEndpoints.delete');

    const channel = await operation(
      'channels.create',
      [
        'channels',
        'create',
        '--platform',
        'facebook',
        '--external-id',
        '104827365012345',
        '--access-token',
        'cli-token',
        '--app-secret',
        'cli-secret',
      ],
      Channel,
    );
    expect(channel).toMatchObject({ platform: 'facebook', external_id: '104827365012345', status: 'active' });
    expect(await operation('channels.retrieve', ['channels', 'get', channel.id], Channel)).toEqual(channel);
    expect(
      (await operation('channels.update', ['channels', 'update', channel.id, '--name', 'Support page'], Channel)).name,
    ).toBe('Support page');
    expect((await operation('channels.list', ['channels', 'list'], ChannelList)).data.map((c) => c.id)).toEqual([
      channel.id,
    ]);
    expect(await convo(['channels', 'delete', channel.id, '--json'])).toEqual({ code: 0, stdout: '', stderr: '' });
    called.add('channels.delete');

    // A WhatsApp number's templates, from its business account.
    const number = await operation(
      'channels.create',
      [
        'channels',
        'create',
        '--platform',
        'whatsapp',
        '--external-id',
        '106540352242922',
        '--access-token',
        'cli-token',
        '--app-secret',
        'cli-secret',
        '--business-account',
        '102290129340398',
      ],
      Channel,
    );
    server.graph.setTemplates('102290129340398', STORY_TEMPLATES, { accessToken: 'cli-token' });
    const templates = await operation(
      'channels.listTemplates',
      ['channels', 'templates', number.id, '--status', 'APPROVED'],
      WhatsAppTemplateList,
    );
    expect(templates.data).toEqual(STORY_TEMPLATES);

    // 204: no JSON to print.
    expect(await convo(['contacts', 'delete', ana.id, '--json'])).toEqual({ code: 0, stdout: '', stderr: '' });
    called.add('contacts.delete');
    expect((await convo(['contacts', 'get', ana.id])).code).toBe(4);

    expect([...called].sort()).toEqual(Object.keys(endpoints).sort());
  }, 240_000);

  it('prints JSON when stdout is not a terminal, even without --json', async () => {
    const result = await convo(['tags', 'list']);
    expect(result.code).toBe(0);
    expect(TagList.parse(JSON.parse(result.stdout))).toMatchObject({ limit: 20, offset: 0 });
  });

  it('pages through everything with --all as JSON Lines', async () => {
    const created: string[] = [];
    for (let i = 0; i < 5; i++) {
      const result = await convo(['contacts', 'create', '--phone', `+1415555${1000 + i}`, '--tag', 'paged', '--json']);
      created.push(Contact.parse(JSON.parse(result.stdout)).id);
    }
    const all = await convo(['contacts', 'list', '--tag', 'paged', '--limit', '2', '--all']);
    expect(all.code).toBe(0);
    const records = lines(all.stdout).map((line) => Contact.parse(JSON.parse(line)));
    expect(records.map((c) => c.id)).toEqual([...created].reverse());
    const page = ContactList.parse(
      JSON.parse((await convo(['contacts', 'list', '--tag', 'paged', '--limit', '2', '--json'])).stdout),
    );
    expect(page).toMatchObject({ total: 5, has_more: true });
    expect(page.data).toHaveLength(2);
  });

  it('maps each class of error to its exit code and one line on stderr', async () => {
    const unauthorized = await convo(['tags', 'list'], { env: { CONVO_API_KEY: 'convo_sk_wrong' } });
    expect(unauthorized.code).toBe(3);
    expect(unauthorized.stderr).toMatch(/^convo: .+ \(request req_\w+\)\n$/);
    expect(unauthorized.stdout).toBe('');

    const forbidden = await convo(['contacts', 'create', '--phone', '+14155550000'], {
      env: { CONVO_API_KEY: server.keys.readOnly },
    });
    expect(forbidden.code).toBe(3);
    expect(forbidden.stderr).toMatch(/^convo: .+ \(request req_\w+\)\n$/);

    const notFound = await convo(['conversations', 'get', 'conv_missing']);
    expect(notFound.code).toBe(4);
    expect(notFound.stderr).toMatch(/^convo: .+ \(request req_\w+\)\n$/);

    const badRequest = await convo(['contacts', 'create', '--phone', 'nope']);
    expect(badRequest.code).toBe(1);
    expect(badRequest.stderr).toMatch(/^convo: .+ \[phone: format\] \(request req_\w+\)\n$/);

    const usage = await convo(['contacts', 'list', '--bogus']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe("convo: unknown option '--bogus'\n");
    expect((await convo(['conversations', 'list', '--status', 'closed'])).code).toBe(2);
    expect((await convo(['orders', 'create', '--currency', 'BRL'])).code).toBe(2);
    expect((await convo(['nope'])).code).toBe(2);

    const closedPort = await freePort();
    const network = await convo(['tags', 'list'], { env: { CONVO_BASE_URL: `http://127.0.0.1:${closedPort}/v1` } });
    expect(network.code).toBe(6);
    expect(network.stderr).toMatch(/^convo: Could not reach http:\/\/127\.0\.0\.1:\d+.*ECONNREFUSED.*\n$/);

    const noKey = await convo(['tags', 'list'], { env: { CONVO_API_KEY: undefined } });
    expect(noKey.code).toBe(3);
    expect(noKey.stderr).toContain('convo login');
  });

  it('logs in to a 0600 profile that later commands use with no flags or environment', async () => {
    const profileHome = mkdtempSync(join(tmpdir(), 'convo-cli-login-'));
    const env = { CONVO_API_KEY: undefined, CONVO_BASE_URL: undefined, XDG_CONFIG_HOME: profileHome };
    try {
      const login = await convo(['login', '--api-key', server.keys.full, '--base-url', server.baseUrl], { env });
      expect(login.code, login.stderr).toBe(0);
      expect(login.stdout).toContain(server.keys.full.slice(0, 12));
      expect(login.stdout).not.toContain(server.keys.full);
      const file = join(profileHome, 'convo', 'config.json');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
        profiles: { default: { api_key: server.keys.full, base_url: server.baseUrl } },
      });

      const list = await convo(['tags', 'list', '--json'], { env });
      expect(list.code, list.stderr).toBe(0);
      TagList.parse(JSON.parse(list.stdout));

      // The key piped on stdin, into a second profile; flags still beat the profile.
      const piped = await convo(['login', '--profile', 'reader', '--base-url', server.baseUrl], {
        env,
        input: `${server.keys.readOnly}\n`,
      });
      expect(piped.code, piped.stderr).toBe(0);
      expect(
        (await convo(['contacts', 'create', '--phone', '+14155550001', '--profile', 'reader'], { env })).code,
      ).toBe(3);
      expect((await convo(['tags', 'list', '--profile', 'reader', '--api-key', 'convo_sk_wrong'], { env })).code).toBe(
        3,
      );

      const badLogin = await convo(
        ['login', '--api-key', 'convo_sk_wrong', '--base-url', server.baseUrl, '--profile', 'bad'],
        { env },
      );
      expect(badLogin.code).toBe(3);
      expect(JSON.parse(readFileSync(file, 'utf8')).profiles.bad).toBeUndefined();

      expect((await convo(['logout'], { env })).code).toBe(0);
      expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')).profiles)).toEqual(['reader']);
      expect((await convo(['tags', 'list'], { env })).code).toBe(3);
    } finally {
      rmSync(profileHome, { recursive: true, force: true });
    }
  });

  it('imports contacts from CSV, reporting bad rows by line, and a rerun creates no duplicates', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'convo-cli-import-'));
    try {
      const csv = join(dir, 'contacts.csv');
      writeFileSync(
        csv,
        [
          'name,phone,email,tags,attr.tier',
          'Bea Lima,+5521900000001,bea@example.com,imported;vip,gold',
          '"Caio',
          'Rocha",+5521900000002,,imported|new,',
          'Broken,12345,,imported,',
          'Dora,+5521900000004,dora@example.com,imported,silver',
        ].join('\n'),
      );
      const first = await convo(['contacts', 'import', csv]);
      expect(first.code).toBe(1);
      expect(JSON.parse(first.stdout)).toEqual({ created: 3, updated: 0, unchanged: 0, failed: 1 });
      expect(first.stderr).toMatch(/^convo: line 5: .*\[phone: format\]/m);
      expect(first.stderr).toContain('convo: 1 of 4 rows failed');
      const total = async () =>
        ContactList.parse(JSON.parse((await convo(['contacts', 'list', '--tag', 'imported', '--json'])).stdout)).total;
      expect(await total()).toBe(3);
      const everyone = ContactList.parse(JSON.parse((await convo(['contacts', 'list', '--json'])).stdout)).total;

      const rerun = await convo(['contacts', 'import', csv, '--json']);
      expect(rerun.code).toBe(1);
      expect(JSON.parse(rerun.stdout)).toEqual({ created: 0, updated: 0, unchanged: 3, failed: 1 });
      expect(await total()).toBe(3);
      expect(ContactList.parse(JSON.parse((await convo(['contacts', 'list', '--json'])).stdout)).total).toBe(everyone);

      // A changed row updates the existing contact; JSON Lines works the same way.
      const jsonl = join(dir, 'contacts.jsonl');
      writeFileSync(
        jsonl,
        `${JSON.stringify({ phone: '+5521900000004', name: 'Dora Reis', tags: ['imported'] })}\n\n${JSON.stringify({ phone: '+5521900000005', tags: ['imported'] })}\n`,
      );
      const changed = await convo(['contacts', 'import', jsonl]);
      expect(changed.code, changed.stderr).toBe(0);
      expect(JSON.parse(changed.stdout)).toEqual({ created: 1, updated: 1, unchanged: 0, failed: 0 });
      const dora = ContactList.parse(
        JSON.parse((await convo(['contacts', 'list', '--search', 'Dora', '--json'])).stdout),
      ).data;
      expect(dora.map((c) => [c.name, c.email, c.attributes])).toEqual([
        ['Dora Reis', 'dora@example.com', { tier: 'silver' }],
      ]);
      expect(await total()).toBe(4);

      expect((await convo(['contacts', 'import', join(dir, 'missing.csv')])).code).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says on stderr when an import waits out a 429, instead of looking stalled', async () => {
    // An account of its own with a limit of 3 requests a minute: the fourth row is refused with a Retry-After.
    const account = await accountsService.createAccount(
      { database: server.database },
      {
        name: 'Slow importer',
        plan: 'enterprise',
        rateLimitRpm: 3,
      },
    );
    const { key } = await accountsService.createKey(
      { database: server.database },
      { accountId: account.id, type: 'full_access' },
    );
    const dir = mkdtempSync(join(tmpdir(), 'convo-cli-429-'));
    try {
      const csv = join(dir, 'contacts.csv');
      const rows = Array.from({ length: 6 }, (_, i) => `Row ${i},+55219100000${String(i).padStart(2, '0')}`);
      writeFileSync(csv, ['name,phone', ...rows].join('\n'));
      const notice = /^convo: rate limited; retrying in \d+\.\d s \(attempt 2 of 3\)$/m;
      // The wait lasts until the minute is over: the line is what the person sees meanwhile.
      const result = await convo(['contacts', 'import', csv, '--concurrency', '1'], {
        env: { CONVO_API_KEY: key },
        stopWhen: notice,
      });
      expect(result.stopped, result.stderr).toBe(true);
      expect(result.stderr.match(new RegExp(notice.source, 'gm'))).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('imports with one rule for every column (blank leaves a field, "-" clears it) and exports what it imports back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'convo-cli-roundtrip-'));
    try {
      const first = join(dir, 'first.csv');
      writeFileSync(
        first,
        [
          'name,phone,email,tags,attr.tier,attr.city',
          'Eva,+5521900000011,eva@example.com,roundtrip;vip,gold,Recife',
        ].join('\n'),
      );
      expect((await convo(['contacts', 'import', first])).code).toBe(0);
      const second = join(dir, 'second.csv');
      writeFileSync(second, ['name,phone,email,tags,attr.tier,attr.city', ',+5521900000011,-,,,Rio'].join('\n'));
      const changed = await convo(['contacts', 'import', second, '--json']);
      expect(JSON.parse(changed.stdout)).toEqual({ created: 0, updated: 1, unchanged: 0, failed: 0 });
      const [eva] = ContactList.parse(
        JSON.parse((await convo(['contacts', 'list', '--tag', 'roundtrip', '--json'])).stdout),
      ).data;
      expect(eva).toMatchObject({
        name: 'Eva',
        email: null,
        tags: ['roundtrip', 'vip'],
        attributes: { tier: 'gold', city: 'Rio' },
      });

      for (const format of ['jsonl', 'csv'] as const) {
        const exported = await convo(['contacts', 'export', '--tag', 'roundtrip', '--format', format]);
        expect(exported.code, exported.stderr).toBe(0);
        const file = join(dir, `export.${format}`);
        writeFileSync(file, exported.stdout);
        if (format === 'jsonl') {
          expect(lines(exported.stdout).map((line) => JSON.parse(line))).toEqual([
            {
              name: 'Eva',
              phone: '+5521900000011',
              email: null,
              tags: ['roundtrip', 'vip'],
              attributes: { city: 'Rio', tier: 'gold' },
            },
          ]);
        } else {
          expect(exported.stdout).toBe(
            'name,phone,email,tags,attr.city,attr.tier\nEva,+5521900000011,,roundtrip;vip,Rio,gold\n',
          );
        }
        const back = await convo(['contacts', 'import', file, '--json']);
        expect(JSON.parse(back.stdout), format).toEqual({ created: 0, updated: 0, unchanged: 1, failed: 0 });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exports conversations with their messages', async () => {
    const contact = Contact.parse(
      JSON.parse((await convo(['contacts', 'create', '--phone', '+4420700000099', '--json'])).stdout),
    );
    const conversation = Conversation.parse(
      JSON.parse(
        (await convo(['conversations', 'create', '--contact', contact.id, '--platform', 'instagram', '--json'])).stdout,
      ),
    );
    for (const content of ['first', 'second'])
      await convo(['messages', 'send', '--conversation', conversation.id, '--content', content]);
    const exported = await convo(['conversations', 'export', '--platform', 'instagram', '--messages']);
    expect(exported.code, exported.stderr).toBe(0);
    const records = lines(exported.stdout).map((line) => JSON.parse(line) as { id: string; messages: unknown[] });
    const mine = records.find((r) => r.id === conversation.id);
    const messages = MessageList.parse(
      JSON.parse((await convo(['conversations', 'messages', conversation.id, '--json'])).stdout),
    ).data;
    expect(mine?.messages).toEqual(messages);
    expect(messages.map((m) => m.content)).toEqual(['first', 'second']);
    for (const record of records) expect(Array.isArray(record.messages)).toBe(true);
  });

  it('exports every matching conversation as JSON Lines', async () => {
    for (let i = 0; i < 3; i++) {
      const contact = Contact.parse(
        JSON.parse((await convo(['contacts', 'create', '--phone', `+4420700000${10 + i}`, '--json'])).stdout),
      );
      await convo(['conversations', 'create', '--contact', contact.id, '--platform', 'facebook']);
    }
    const exported = await convo(['conversations', 'export', '--platform', 'facebook', '--limit', '2']);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toBe('');
    const conversations = lines(exported.stdout).map((line) => Conversation.parse(JSON.parse(line)));
    expect(conversations.every((c) => c.platform === 'facebook')).toBe(true);
    const list = ConversationList.parse(
      JSON.parse((await convo(['conversations', 'list', '--platform', 'facebook', '--json'])).stdout),
    );
    expect(conversations).toHaveLength(list.total);
    expect(conversations.map((c) => c.id)).toEqual(list.data.map((c) => c.id));

    const everything = await convo(['conversations', 'export']);
    const total = ConversationList.parse(JSON.parse((await convo(['conversations', 'list', '--json'])).stdout)).total;
    expect(lines(everything.stdout)).toHaveLength(total);
  });

  it('keeps --help light: it loads neither the SDK nor zod', async () => {
    // No file of the build imports them statically: they load inside actions, with import().
    const dist = dirname(BIN);
    for (const file of readdirSync(dist).filter((name) => name.endsWith('.js'))) {
      expect(readFileSync(join(dist, file), 'utf8'), file).not.toMatch(
        /^import [^;]*from ["'](@convo\/sdk|@convo\/core|zod)["']/m,
      );
    }
    // And none is loaded: a module hook refuses to resolve them, so a command that loads one fails.
    // (How fast the CLI starts is a figure for a benchmark, not an assertion of a test.)
    const hooks = join(home, 'refuse-sdk-hooks.mjs');
    writeFileSync(
      hooks,
      `export async function resolve(specifier, context, next) {
        if (/^(zod|@convo\\/sdk|@convo\\/core)(\\/|$)/.test(specifier)) throw new Error('refused to load ' + specifier);
        return next(specifier, context);
      }\n`,
    );
    const register = join(home, 'refuse-sdk.mjs');
    writeFileSync(
      register,
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
    );
    const refusing = { NODE_OPTIONS: `--import ${pathToFileURL(register).href}` };
    const help = await convo(['--help'], { env: refusing });
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
    const list = await convo(['contacts', 'list', '--json'], { env: refusing });
    expect(list.code).not.toBe(0);
    expect(list.stderr).toMatch(/refused to load (zod|@convo\/sdk|@convo\/core)/);
  });
});
