import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, type Server, createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { accountsService, buildServer, defaultSettings, migrateToLatest, openDatabase } from '@convo/api';
import { startFakeGraphApi } from '@convo/api/testing';
import { STORY_IDS, STORY_TEMPLATES, operationExamples, story } from '@convo/core';
import { Convo } from '@convo/sdk';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from './server.js';

const run = promisify(execFile);
const E2E_DIR = fileURLToPath(new URL('..', import.meta.url));
const PYTHON_SDK = fileURLToPath(new URL('../../sdk-python', import.meta.url));
const CLI_BIN = fileURLToPath(new URL('../../cli/bin/convo.js', import.meta.url));

interface Sample {
  lang: string;
  label: string;
  source: string;
}
interface Operation {
  operationId: string;
  responses: Record<string, unknown>;
  'x-codeSamples'?: Sample[];
}
type StoryKey = keyof typeof STORY_IDS;

/** How long a stream's sample may take to connect, and to print an event. */
const WAIT = { timeout: 30_000, interval: 50 };

const isStream = (op: Operation) =>
  Object.values(op.responses).some((response) =>
    Object.keys((response as { content?: object }).content ?? {}).includes('text/event-stream'),
  );

/** The token the seeded WhatsApp channel holds, which the fake Graph API lists the story's templates to. */
const CHANNEL_TOKEN = 'EAAGm0PX4ZCpsBAK7ZBd2xQ9cZCfW1TnE0ZA4ZBy6ZCZAuhVwQ3XbZB';

/** The bytes of the story's receipt, as the upload samples send and the seeded account holds them. */
const RECEIPT = Buffer.from('%PDF-1.4\n% Tostado receipt 1042\n');

/**
 * Every request sample of the served OpenAPI document (`x-codeSamples`: curl, the TypeScript SDK, the Python library
 * and the CLI) run as a reader copies it, each in an account of its own holding the story's records, and answered
 * with the status the document promises. The samples name the story's ids; each run swaps in the ids its account
 * gave the same records. A proxy in front of the server records each call's status, since the clients print bodies.
 */
describe('the request samples of /v1/openapi.json', () => {
  let origin: string;
  let operations: Operation[];
  let close: () => Promise<void>;
  let scratch: string;
  let newKey: () => Promise<string>;
  /** The statuses answered to each key, in order. */
  const answered = new Map<string, { method: string; path: string; status: number }[]>();

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'convo-samples-'));
    const database = openDatabase(`file:${join(dir, 'convo.db')}`);
    await migrateToLatest(database.db);
    const proxyPort = await freePort();
    origin = `http://127.0.0.1:${proxyPort}`;
    // The channel's templates come from a fake Graph API: the story's, to the seeded channel's token.
    const graph = await startFakeGraphApi();
    const waba = story.channels[0].business_account_id as string;
    graph.setTemplates(waba, STORY_TEMPLATES, { accessToken: CHANNEL_TOKEN });
    const app = await buildServer({
      database,
      logger: false,
      settings: defaultSettings({ sandboxEnabled: true, graphApiUrl: graph.url }),
      publicUrl: origin,
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const proxy = await recordingProxy(proxyPort, (app.server.address() as { port: number }).port, answered);
    const document = (await (await fetch(`${origin}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Operation>>;
    };
    operations = Object.values(document.paths).flatMap((methods) => Object.values(methods));
    newKey = async () => {
      const account = await accountsService.createAccount({ database }, { name: 'Tostado', plan: 'business' });
      return (await accountsService.createKey({ database }, { accountId: account.id, type: 'full_access' })).key;
    };
    // Inside the e2e package, so that the TypeScript samples' `@convo/sdk` resolves as in a project that installed it.
    scratch = mkdtempSync(join(E2E_DIR, '.samples-'));
    // The file the upload samples send, in the folder every sample runs in.
    writeFileSync(join(scratch, String(operationExamples['files.create'].request.body?.file)), RECEIPT);
    close = async () => {
      // Nothing is in flight when the suite ends: connections this process opened and never used
      // (which Node does not count as idle) would hold the closes until they time out.
      const proxyClosed = new Promise((resolve) => proxy.close(resolve));
      proxy.closeAllConnections();
      await proxyClosed;
      const appClosed = app.close();
      app.server.closeAllConnections();
      await appClosed;
      await graph.close();
      await database.destroy();
      rmSync(dir, { recursive: true, force: true });
      rmSync(scratch, { recursive: true, force: true });
    };
  });
  afterAll(() => close?.());

  it('gives every operation of the endpoint table a sample in each of the four clients', () => {
    const apiOperations = operations.filter((op) => !op.operationId.startsWith('hooks.'));
    expect(apiOperations.length).toBeGreaterThan(40);
    for (const op of apiOperations) {
      expect(
        op['x-codeSamples']?.map((s) => s.label),
        op.operationId,
      ).toEqual(['curl', 'TypeScript SDK', 'Python', 'CLI']);
    }
  });

  it('runs every sample against the server and gets the status the document promises', {
    timeout: 600_000,
  }, async () => {
    const runs = operations.flatMap((op) => (op['x-codeSamples'] ?? []).map((sample) => ({ op, sample })));
    const failures: string[] = [];
    await inBatches(runs, 4, async ({ op, sample }) => {
      const key = await newKey();
      const ids = await seedStory(`${origin}/v1`, key);
      let source = sample.source;
      for (const [name, id] of Object.entries(ids)) source = source.replaceAll(STORY_IDS[name as StoryKey], id);
      const unseeded = Object.values(STORY_IDS).filter((id) => source.includes(id));
      const promised = Number(Object.keys(op.responses).find((status) => status.startsWith('2')));
      const where = `${op.operationId} (${sample.label})`;
      if (unseeded.length > 0) return void failures.push(`${where}: names ${unseeded} the test does not seed`);
      const outcome = await (isStream(op)
        ? runStreamSample(sample, source, key, ids)
        : runSample(sample, source, key)
      ).catch((error: { stderr?: string; message: string }) => ({
        error: error.stderr || error.message,
      }));
      const statuses = answered.get(key) ?? [];
      const last = statuses[statuses.length - 1];
      if ('error' in outcome) failures.push(`${where}: ${outcome.error}\n${source}`);
      else if (last?.status !== promised)
        failures.push(`${where}: answered ${JSON.stringify(statuses)}, the document promises ${promised}`);
    });
    expect(failures).toEqual([]);
  });

  /** The program that runs a sample as a reader would, with its arguments and environment. */
  function commandOf(sample: Sample, source: string, key: string, stream: boolean) {
    const env = { PATH: process.env.PATH ?? '', HOME: scratch, CONVO_API_KEY: key };
    const options = { env, cwd: scratch };
    if (sample.label === 'curl') {
      const output = source.includes('--output') || stream ? '' : ' --output /dev/null';
      return { file: 'sh', args: ['-c', `${source} --silent --show-error${output}`], options };
    }
    if (sample.label === 'CLI')
      return {
        file: 'sh',
        args: ['-c', source.replace(/^convo /, `exec "${process.execPath}" "${CLI_BIN}" `)],
        options,
      };
    // Unbuffered, as in a terminal: a stream's sample prints each event as it comes.
    if (sample.label === 'Python')
      return {
        file: 'python3',
        args: ['-c', source],
        options: { ...options, env: { ...env, PYTHONPATH: PYTHON_SDK, PYTHONUNBUFFERED: '1' } },
      };
    const file = join(scratch, `${key.slice(-12)}.mjs`);
    writeFileSync(file, source);
    return { file: process.execPath, args: [file], options };
  }

  async function runSample(sample: Sample, source: string, key: string) {
    const { file, args, options } = commandOf(sample, source, key, false);
    return await run(file, args, options);
  }

  /**
   * A stream's sample follows the events until it is stopped: it runs until it has printed the
   * event of an order placed once its stream was open (the type the sample follows).
   */
  async function runStreamSample(sample: Sample, source: string, key: string, ids: Partial<Record<StoryKey, string>>) {
    const { file, args, options } = commandOf(sample, source, key, true);
    const child = spawn(file, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const following = () => answered.get(key)?.some((a) => a.path.startsWith('/v1/events/stream'));
      await vi.waitFor(() => expect(following() || child.exitCode !== null).toBe(true), WAIT);
      if (child.exitCode !== null) throw Object.assign(new Error('the sample ended'), { stderr });
      const convo = new Convo({ baseUrl: `${origin}/v1`, apiKey: key });
      await convo.orders.create({
        contact_id: ids.marta as string,
        currency: 'EUR',
        items: [{ name: 'Flat white', quantity: 1, unit_amount: 380 }],
      });
      const [placed] = (await convo.events.list({ type: 'order.placed', limit: 1 })).data;
      await vi.waitFor(() => expect(stdout.includes(placed?.id as string) || child.exitCode !== null).toBe(true), WAIT);
      if (!stdout.includes(placed?.id as string)) throw Object.assign(new Error('the sample ended'), { stderr });
      return { stdout };
    } finally {
      child.kill();
      await exited;
    }
  }
});

/** The story's records that requests name, made in the account of `key`: the story's ids → this account's. */
async function seedStory(baseUrl: string, apiKey: string): Promise<Partial<Record<StoryKey, string>>> {
  const convo = new Convo({ baseUrl, apiKey });
  const [channelRecord] = story.channels;
  const [jonasRecord, martaRecord] = story.contacts;
  const [question] = story.messages;
  const [orderRecord] = story.orders;
  const [workflowRecord] = story.workflows;
  const [runRecord] = story.workflowRuns;
  const [endpointRecord] = story.webhookEndpoints;
  const channel = await convo.channels.create({
    platform: channelRecord.platform,
    name: channelRecord.name,
    external_id: channelRecord.external_id,
    access_token: CHANNEL_TOKEN,
    app_secret: '9f8e7d6c5b4a39281706f5e4d3c2b1a0',
    business_account_id: channelRecord.business_account_id ?? undefined,
  });
  const contact = ({ name, phone, email, tags, attributes }: typeof martaRecord | typeof jonasRecord) =>
    convo.contacts.create({
      name: name as string,
      phone: phone as string,
      email: email ?? undefined,
      tags: [...tags],
      attributes,
    });
  const marta = await contact(martaRecord);
  const jonas = await contact(jonasRecord);
  const inbound = await convo.sandbox.inbound({
    platform: 'whatsapp',
    from: { phone: martaRecord.phone as string, name: martaRecord.name as string },
    content: question.content as string,
  });
  const endpoint = await convo.webhookEndpoints.create({
    url: endpointRecord.url,
    events: [...endpointRecord.events] as Parameters<typeof convo.webhookEndpoints.create>[0]['events'],
    description: endpointRecord.description ?? undefined,
  });
  const order = await convo.orders.create({
    contact_id: marta.id,
    currency: orderRecord.currency,
    items: orderRecord.items.map((item) => ({ ...item })),
  });
  const workflow = await convo.workflows.create({
    name: workflowRecord.name,
    steps: JSON.parse(JSON.stringify(workflowRecord.steps)),
    trigger: JSON.parse(JSON.stringify(workflowRecord.trigger)),
  });
  const workflowRun = await convo.workflows.trigger(workflow.id, { contact_id: marta.id, data: { ...runRecord.data } });
  const receipt = await convo.files.create({
    file: new Blob([RECEIPT], { type: story.files[0].mime_type }),
    filename: story.files[0].filename as string,
  });
  const deliveries = await convo.webhookEndpoints.deliveries(endpoint.id);
  const delivery = deliveries.data.find((d) => d.event_type === 'order.placed');
  if (!delivery) throw new Error('the order.placed delivery was not made');
  return {
    whatsappChannel: channel.id,
    marta: marta.id,
    jonas: jonas.id,
    martaConversation: inbound.conversation_id,
    martaQuestion: inbound.id,
    martaOrder: order.id,
    thankYouWorkflow: workflow.id,
    thankYouRun: workflowRun.id,
    fulfilmentEndpoint: endpoint.id,
    orderPlacedDelivery: delivery.id,
    receipt: receipt.id,
  };
}

/** A pass-through to the server that notes each answer's status under the key that asked. */
function recordingProxy(
  listenPort: number,
  port: number,
  answered: Map<string, { method: string; path: string; status: number }[]>,
) {
  const server: Server = createServer((incoming, outgoing) => {
    const forward = httpRequest(
      { host: '127.0.0.1', port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (response: IncomingMessage) => {
        const key = (incoming.headers.authorization ?? '').replace(/^Bearer /, '');
        const list = answered.get(key) ?? [];
        list.push({ method: incoming.method ?? '', path: incoming.url ?? '', status: response.statusCode ?? 0 });
        answered.set(key, list);
        outgoing.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(outgoing);
        // A client that went away (a stream's sample, stopped) ends its stream at the server too.
        outgoing.once('close', () => forward.destroy());
      },
    );
    incoming.pipe(forward);
  });
  return new Promise<Server>((resolve) => server.listen(listenPort, '127.0.0.1', () => resolve(server)));
}

async function inBatches<T>(items: T[], size: number, work: (item: T) => Promise<void>) {
  for (let start = 0; start < items.length; start += size)
    await Promise.all(items.slice(start, start + size).map(work));
}
