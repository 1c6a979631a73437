import { type EndpointDefinition, type OperationId, endpoints, fillPath } from './endpoints.js';
import { DEFAULT_ORIGIN } from './quickstart.js';
import { type RequestExample, operationExamples } from './story.js';

/**
 * Request samples for every operation in the four clients (`x-codeSamples`, which Redoc shows as tabs), made from
 * the endpoint table and the story's example request. packages/e2e/src/code-samples.test.ts runs each against a live
 * server, so a renamed method, command or option fails there rather than in a reader's terminal.
 */

export interface CodeSample {
  lang: 'Shell' | 'TypeScript' | 'Python';
  label: 'curl' | 'TypeScript SDK' | 'Python' | 'CLI';
  source: string;
}

/**
 * The SDK's method of an operation where it is not the operation id itself; the TypeScript SDK's `SDK_METHODS` is
 * the truth, and packages/cli/src/code-samples.test.ts holds these names to it.
 */
const SDK_METHOD_NAMES: Partial<Record<OperationId, string>> = {
  'contacts.delete': 'contacts.del',
  'tags.delete': 'tags.del',
  'workflows.delete': 'workflows.del',
  'workflows.listRuns': 'workflows.runs',
  'webhookEndpoints.delete': 'webhookEndpoints.del',
  'webhookEndpoints.listDeliveries': 'webhookEndpoints.deliveries',
  'channels.delete': 'channels.del',
};

/** The CLI's command of each operation; the CLI's `OPERATION_COMMANDS` is the truth, held to it by the same test. */
export const CLI_COMMANDS: Record<OperationId, string> = {
  'conversations.list': 'conversations list',
  'conversations.create': 'conversations create',
  'conversations.retrieve': 'conversations get',
  'conversations.update': 'conversations update',
  'conversations.listMessages': 'conversations messages',
  'messages.send': 'messages send',
  'messages.retrieve': 'messages get',
  'files.create': 'files upload',
  'files.retrieve': 'files get',
  'files.content': 'files download',
  'contacts.list': 'contacts list',
  'contacts.create': 'contacts create',
  'contacts.retrieve': 'contacts get',
  'contacts.update': 'contacts update',
  'contacts.delete': 'contacts delete',
  'contacts.tags.add': 'contacts tag add',
  'contacts.tags.remove': 'contacts tag remove',
  'tags.list': 'tags list',
  'tags.update': 'tags rename',
  'tags.delete': 'tags delete',
  'orders.list': 'orders list',
  'orders.create': 'orders create',
  'orders.retrieve': 'orders get',
  'orders.update': 'orders update',
  'workflows.list': 'workflows list',
  'workflows.create': 'workflows create',
  'workflows.retrieve': 'workflows get',
  'workflows.update': 'workflows update',
  'workflows.delete': 'workflows delete',
  'workflows.trigger': 'workflows trigger',
  'workflows.listRuns': 'workflows runs',
  'workflows.retrieveRun': 'workflows run get',
  'workflows.cancelRun': 'workflows run cancel',
  'events.list': 'events list',
  'events.stream': 'events stream',
  'webhookEndpoints.list': 'webhooks list',
  'webhookEndpoints.create': 'webhooks create',
  'webhookEndpoints.retrieve': 'webhooks get',
  'webhookEndpoints.update': 'webhooks update',
  'webhookEndpoints.delete': 'webhooks delete',
  'webhookEndpoints.listDeliveries': 'webhooks deliveries',
  'webhookEndpoints.retryDelivery': 'webhooks retry',
  'webhookEndpoints.test': 'webhooks test',
  'webhookEndpoints.replay': 'webhooks replay',
  'channels.list': 'channels list',
  'channels.create': 'channels create',
  'channels.retrieve': 'channels get',
  'channels.update': 'channels update',
  'channels.listTemplates': 'channels templates',
  'channels.delete': 'channels delete',
  'sandbox.inbound': 'sandbox inbound',
};

/** Where the download samples write a file's bytes. */
const DOWNLOADED_AS = 'receipt.pdf';

/** Body fields both SDKs and the CLI take as positional arguments after the path's (the CLI's `positionalBody`). */
const POSITIONAL_BODY: Partial<Record<OperationId, readonly string[]>> = { 'contacts.tags.add': ['tag'] };

export const sdkMethodOf = (id: OperationId): string => SDK_METHOD_NAMES[id] ?? id;

/** The Python client's name for a TypeScript SDK method: snake_case, and `del` is `delete`. */
export const pythonMethodOf = (id: OperationId): string =>
  sdkMethodOf(id)
    .split('.')
    .map((name) => (name === 'del' ? 'delete' : name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)))
    .join('.');

/** The CLI's option for a field, as its operation spec names them: `contact_id` → `contact`, `_` → `-`. */
export const cliOptionOf = (field: string): string =>
  (/_ids?$/.test(field) && field !== 'external_id' ? field.replace(/_ids?$/, '') : field).replaceAll('_', '-');

/** Python keywords, which the Python client's keyword arguments spell with a trailing underscore. */
const PYTHON_KEYWORDS = new Set(['from', 'import', 'class', 'def', 'global', 'in', 'is', 'lambda', 'not', 'or', 'and']);

/** A shell word: bare when it is plain, else single-quoted. */
const shellWord = (text: string) => (/^[\w.:/@+=,-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`);

function pythonLiteral(value: unknown): string {
  if (value === null) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'string' || typeof value === 'number') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((item) => pythonLiteral(item)).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>);
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}: ${pythonLiteral(item)}`).join(', ')}}`;
}

function jsLiteral(value: unknown): string {
  if (typeof value === 'string') return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
  if (Array.isArray(value)) return `[${value.map(jsLiteral).join(', ')}]`;
  if (value === null || typeof value !== 'object') return String(value);
  const key = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : `'${name}'`);
  const entries = Object.entries(value).map(([name, item]) => `${key(name)}: ${jsLiteral(item)}`);
  return entries.length > 0 ? `{ ${entries.join(', ')} }` : '{}';
}

/** A call on one line when it is short, else an argument a line. */
const call = (head: string, args: string[], indent = '  ') => {
  const flat = `${head}(${args.join(', ')})`;
  return flat.length <= 100 ? flat : `${head}(\n${indent}${args.join(`,\n${indent}`)},\n)`;
};

function split(id: OperationId, request: RequestExample) {
  const positionalNames = POSITIONAL_BODY[id] ?? [];
  const body = request.body ? { ...request.body } : undefined;
  const positional = positionalNames.map((name) => String(body?.[name]));
  for (const name of positionalNames) delete body?.[name];
  const pathValues = Object.values(request.params ?? {});
  const rest = body && Object.keys(body).length > 0 ? body : undefined;
  return { args: [...pathValues, ...positional], body: rest, query: request.query };
}

function curl(id: OperationId, request: RequestExample, base: string): string {
  const { method, path, stream } = endpoints[id] as EndpointDefinition;
  const pairs = Object.entries(request.query ?? {}).map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`);
  const query = pairs.length > 0 ? `?${pairs.join('&')}` : '';
  const lines = [`curl${method === 'GET' ? '' : ` -X ${method}`} "${base}${fillPath(path, request.params)}${query}"`];
  lines.push('-H "Authorization: Bearer $CONVO_API_KEY"');
  const { upload, download } = endpoints[id] as EndpointDefinition;
  if (upload) lines.push(`-F ${shellWord(`${upload.part}=@${request.body?.[upload.part]}`)}`);
  else if (download) lines.push(`--output ${shellWord(DOWNLOADED_AS)}`);
  // -N: print each event as it comes, not when a buffer fills.
  else if (stream) lines[0] = `curl -N${(lines[0] as string).slice('curl'.length)}`;
  else if (request.body) {
    lines.push('-H "Content-Type: application/json"');
    lines.push(`-d ${shellWord(JSON.stringify(request.body))}`);
  }
  return lines.join(' \\\n  ');
}

function typescript(id: OperationId, request: RequestExample, base: string): string {
  const { upload, download } = endpoints[id] as EndpointDefinition;
  const head = [
    "import { Convo } from '@convo/sdk';",
    '',
    `const convo = new Convo({ baseUrl: '${base}' }); // the key from CONVO_API_KEY`,
  ];
  if (upload) {
    const path = String(request.body?.[upload.part]);
    return [
      "import { openAsBlob } from 'node:fs';",
      ...head,
      `const result = await convo.${sdkMethodOf(id)}({ ${upload.part}: await openAsBlob(${jsLiteral(path)}), filename: ${jsLiteral(path)} });`,
      'console.log(result);',
    ].join('\n');
  }
  if (download)
    return [
      "import { writeFile } from 'node:fs/promises';",
      ...head,
      `await writeFile(${jsLiteral(DOWNLOADED_AS)}, await convo.${sdkMethodOf(id)}(${Object.values(request.params ?? {})
        .map(jsLiteral)
        .join(', ')}));`,
    ].join('\n');
  const { args, body, query } = split(id, request);
  const object = body ?? query;
  if ((endpoints[id] as EndpointDefinition).stream)
    return [
      ...head,
      `for await (const event of ${call(`convo.${sdkMethodOf(id)}`, [...args, ...(object ? [object] : [])].map(jsLiteral))}) {`,
      '  console.log(event.type, event.id);',
      '}',
    ].join('\n');
  const sdkCall = call(`convo.${sdkMethodOf(id)}`, [...args, ...(object ? [object] : [])].map(jsLiteral));
  const answers = endpoints[id].status !== 204;
  return [
    "import { Convo } from '@convo/sdk';",
    '',
    `const convo = new Convo({ baseUrl: '${base}' }); // the key from CONVO_API_KEY`,
    answers ? `const result = await ${sdkCall};\nconsole.log(result);` : `await ${sdkCall};`,
  ].join('\n');
}

function python(id: OperationId, request: RequestExample, base: string): string {
  const { upload, download } = endpoints[id] as EndpointDefinition;
  const head = ['import convo', '', `client = convo.Client(base_url="${base}")  # the key from CONVO_API_KEY`];
  if (upload)
    return [
      ...head,
      `with open(${JSON.stringify(String(request.body?.[upload.part]))}, "rb") as ${upload.part}:`,
      `    result = client.${pythonMethodOf(id)}(${upload.part}=${upload.part})`,
      'print(result)',
    ].join('\n');
  if (download)
    return [
      ...head,
      `with open(${JSON.stringify(DOWNLOADED_AS)}, "wb") as out:`,
      `    out.write(client.${pythonMethodOf(id)}(${Object.values(request.params ?? {})
        .map((v) => JSON.stringify(v))
        .join(', ')}))`,
    ].join('\n');
  const { args, body, query } = split(id, request);
  const keywords = Object.entries(body ?? query ?? {}).map(
    ([key, value]) => `${PYTHON_KEYWORDS.has(key) ? `${key}_` : key}=${pythonLiteral(value)}`,
  );
  const pythonCall = call(
    `client.${pythonMethodOf(id)}`,
    [...args.map((arg) => JSON.stringify(arg)), ...keywords],
    '    ',
  );
  if ((endpoints[id] as EndpointDefinition).stream)
    return [...head, `for event in ${pythonCall}:`, '    print(event["type"], event["id"])'].join('\n');
  const answers = endpoints[id].status !== 204;
  return [
    'import convo',
    '',
    `client = convo.Client(base_url="${base}")  # the key from CONVO_API_KEY`,
    answers ? `result = ${pythonCall}\nprint(result)` : pythonCall,
  ].join('\n');
}

/** Scalars become options; a body with anything else goes whole as `--body` JSON. */
function cli(id: OperationId, request: RequestExample, base: string): string {
  const { upload, download } = endpoints[id] as EndpointDefinition;
  if (upload) return `convo ${CLI_COMMANDS[id]} ${shellWord(String(request.body?.[upload.part]))} --base-url ${base}`;
  const { args, body, query } = split(id, request);
  const words = ['convo', CLI_COMMANDS[id], ...args.map(shellWord)];
  if (download) words.push(`--output ${shellWord(DOWNLOADED_AS)}`);
  const scalar = (value: unknown) => ['string', 'number', 'boolean'].includes(typeof value);
  for (const [key, value] of Object.entries(query ?? {}))
    words.push(`--${cliOptionOf(key)} ${shellWord(String(value))}`);
  if (body && Object.values(body).every(scalar)) {
    for (const [key, value] of Object.entries(body)) words.push(`--${cliOptionOf(key)} ${shellWord(String(value))}`);
  } else if (body) words.push(`--body ${shellWord(JSON.stringify(body))}`);
  words.push(`--base-url ${base}`);
  return words.join(' ');
}

/** The four samples of an operation, against the server at `origin`. */
export function codeSamples(id: OperationId, origin: string = DEFAULT_ORIGIN): CodeSample[] {
  const { request } = operationExamples[id];
  const base = `${origin}/v1`;
  return [
    { lang: 'Shell', label: 'curl', source: curl(id, request, base) },
    { lang: 'TypeScript', label: 'TypeScript SDK', source: typescript(id, request, base) },
    { lang: 'Python', label: 'Python', source: python(id, request, base) },
    { lang: 'Shell', label: 'CLI', source: cli(id, request, base) },
  ];
}
