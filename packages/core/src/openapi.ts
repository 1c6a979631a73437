import * as z from 'zod';
import { codeSamples } from './code-samples.js';
import { ERROR_STATUS, ErrorBody } from './errors.js';
import { type EndpointDefinition, type OperationId, type Refusal, endpoints, toOpenApiPath } from './endpoints.js';
import { quickstart } from './quickstart.js';
import { type OperationExample, STORY_ORIGIN, errorExamples, operationExamples } from './story.js';
import { CONTRACT_VERSION } from './version.js';

type JsonSchema = Record<string, unknown>;

export interface OpenApiOptions {
  /**
   * Where the API is served (a trailing `/v1` is dropped: the paths carry it). Without it the document has no
   * `servers`, so paths are relative to its origin.
   */
  serverUrl?: string;
  /** Operation ids to leave out (features switched off on this server). */
  exclude?: readonly string[];
  /** Extra operations served beside the table. */
  extra?: Record<string, EndpointDefinition>;
}

const REF_PREFIX = '#/components/schemas/';

/**
 * Converts zod schemas to OpenAPI 3.1's JSON Schema and gathers every schema with a meta `id` into
 * `components.schemas`, so each resource is described once.
 */
class SchemaCollector {
  readonly components: Record<string, JsonSchema> = {};
  /** Each component as zod converts it, before withTextRules: what the two sides must agree on. */
  private readonly converted: Record<string, string> = {};

  convert(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const json = z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any' }) as JsonSchema;
    delete json.$schema;
    const defs = (json.$defs ?? {}) as Record<string, JsonSchema>;
    delete json.$defs;
    for (const [id, def] of Object.entries(defs)) this.add(id, rewriteRefs(def) as JsonSchema, io);
    const converted = rewriteRefs(json) as JsonSchema;
    return io === 'input' ? (withTextRules(converted) as JsonSchema) : converted;
  }

  /**
   * A request component keeps the request text rules even where responses share it: what the server accepted
   * holds no string they refuse, so its answers match.
   */
  private add(id: string, def: JsonSchema, io: 'input' | 'output'): void {
    const converted = JSON.stringify(def);
    if (this.converted[id] !== undefined && this.converted[id] !== converted) {
      throw new Error(`Schema "${id}" converts differently as request and response; give the two sides different ids`);
    }
    this.converted[id] = converted;
    if (io === 'input') this.components[id] = withTextRules(def) as JsonSchema;
    else this.components[id] ??= def;
  }
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      out[key] =
        key === '$ref' && typeof inner === 'string' ? inner.replace('#/$defs/', REF_PREFIX) : rewriteRefs(inner);
    }
    return out;
  }
  return value;
}

/**
 * Every request string matches it: no U+0000 and no lone surrogate. It means the same with the `u` flag (a pair
 * is one code point, outside the excluded range) and without it (a pair is two units, the second branch).
 */
export const REQUEST_TEXT_PATTERN = '^(?:[^\\u0000\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])*$';

/** What the server refuses in any string of a request, said once for the document's descriptions. */
const TEXT_RULE =
  'No string of a request (path, query or body, value or key) may hold U+0000 or a lone surrogate (`\\ud800` without its pair), and no key may be `__proto__`: each is a 400 with constraint `pattern`.';

/**
 * Makes the server's string rules explicit in a request schema: REQUEST_TEXT_PATTERN on strings with no syntax of
 * their own, and no `__proto__` map key. Strings keep their own pattern; TEXT_RULE says the rule holds there too.
 */
function withTextRules(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withTextRules);
  if (!value || typeof value !== 'object') return value;
  const out: JsonSchema = {};
  for (const [key, inner] of Object.entries(value))
    out[key] = key === 'example' || key === 'default' ? inner : withTextRules(inner);
  const types = Array.isArray(out.type) ? out.type : [out.type];
  const free =
    out.format === undefined && out.pattern === undefined && out.enum === undefined && out.const === undefined;
  if (types.includes('string') && free) out.pattern = REQUEST_TEXT_PATTERN;
  if (out.additionalProperties && typeof out.additionalProperties === 'object') {
    const names = (out.propertyNames ?? withTextRules({ type: 'string' })) as JsonSchema;
    out.propertyNames = { ...names, not: { const: '__proto__' } };
  }
  return out;
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: `details.field` and `details.constraint` say what to fix; U+0000, a lone surrogate or a `__proto__` key anywhere in it is `pattern`.',
  401: 'Missing or invalid API key.',
  403: 'The key may not do this: a read-only key writing, or a webhook signing secret used as an API key.',
  404: 'No such record in this account: the one in the path, one the body names, or the event a cursor (`starting_after`, `ending_before`) names.',
  429: 'Too many requests: retry after `Retry-After` seconds.',
  500: 'Internal error: the message names the request id.',
};

/** An operation's 400s beyond its schema, as a list under the 400's description (`x-refusals` has them as data). */
const refusalsText = (refusals: readonly Refusal[]): string =>
  refusals.length === 0
    ? ''
    : `\n\nA request the schema accepts may also be refused:\n${refusals
        .map(({ field, constraint, when }) => `\n- \`${field}\`, \`${constraint}\`: ${when}`)
        .join('')}`;

function parameters(
  collector: SchemaCollector,
  schema: z.ZodType | undefined,
  location: 'path' | 'query',
  examples: Record<string, unknown> = {},
) {
  if (!schema) return [];
  const json = collector.convert(schema, 'input');
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: location,
      required: location === 'path' || required.has(name),
      ...(typeof description === 'string' ? { description } : {}),
      schema: rest,
      ...(examples[name] === undefined ? {} : { example: examples[name] }),
    };
  });
}

/** A body field naming another record (`contact_id`, `conversation_id`): an unknown one is a 404. */
function refersToRecords(collector: SchemaCollector, body: JsonSchema | undefined): boolean {
  const schema = typeof body?.$ref === 'string' ? collector.components[body.$ref.slice(REF_PREFIX.length)] : body;
  return Object.keys((schema?.properties ?? {}) as Record<string, unknown>).some((name) => name.endsWith('_id'));
}

/** A list paged from a record (`starting_after`, `ending_before`): an unknown one is a 404. */
function pagesFromARecord(op: EndpointDefinition): boolean {
  const shape = (op.query as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
  return 'starting_after' in shape || 'ending_before' in shape;
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** Each error status's example, kept once under `components.examples` and referred to by every operation. */
const ERROR_NAMES: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  429: 'RateLimited',
  500: 'ServerError',
};
function errorExampleName(status: number): string {
  const name = ERROR_NAMES[status];
  if (!name) throw new Error(`No error example for status ${status}`);
  return name;
}
const errorExampleRef = (status: number) => ({ $ref: `#/components/examples/${errorExampleName(status)}` });

/** Every response has its request id; all but a 401 the account's rate-limit state; a 429 `Retry-After`. */
function headersOf(status: number): Record<string, unknown> {
  const headers: Record<string, unknown> = { 'X-Request-Id': headerRef('X-Request-Id') };
  if (status === 401) return headers;
  for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'])
    headers[name] = headerRef(name);
  if (status === 429) headers['Retry-After'] = headerRef('Retry-After');
  return headers;
}

/** An event as the stream frames it (http/event-stream.ts on the server). */
export const sseFrameOf = (event: { id: string; type: string }) =>
  `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

/** The success answer of an operation: an event stream, a file's bytes, JSON, or nothing. */
function successResponse(op: EndpointDefinition, collector: SchemaCollector, example: OperationExample | undefined) {
  if (op.stream)
    return {
      description: op.summary,
      headers: headersOf(op.status),
      content: {
        'text/event-stream': {
          schema: {
            type: 'string',
            description: 'Server-Sent Events: `id`, `event` and `data` lines per event, a blank line after each.',
          },
          // What each event's `data` line holds; OpenAPI 3.1 has no place of its own for it.
          'x-event-data': op.response ? collector.convert(op.response, 'output') : undefined,
          ...(example ? { example: sseFrameOf(example.response as { id: string; type: string }) } : {}),
        },
      },
    };
  if (op.download)
    return {
      description: op.summary,
      headers: {
        ...headersOf(op.status),
        ETag: { description: "The file's SHA-256, quoted.", schema: { type: 'string' } },
        'Content-Disposition': {
          description: '`inline` for images, `attachment` otherwise, with the filename when known.',
          schema: { type: 'string' },
        },
      },
      content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
    };
  if (op.response)
    return {
      description: op.summary,
      headers: headersOf(op.status),
      content: {
        'application/json': {
          schema: collector.convert(op.response, 'output'),
          ...(example ? { example: example.response } : {}),
        },
      },
    };
  return { description: `${op.summary}: no content.`, headers: headersOf(op.status) };
}

/** The OpenAPI 3.1 document of /v1, generated from the endpoint table. */
export function buildOpenApiDocument(options: OpenApiOptions = {}) {
  const collector = new SchemaCollector();
  const exclude = new Set(options.exclude ?? []);
  const errorRef = { $ref: `${REF_PREFIX}Error` };
  collector.convert(ErrorBody, 'output');

  const paths: Record<string, Record<string, unknown>> = {};
  const all: Record<string, EndpointDefinition> = { ...endpoints, ...options.extra };
  for (const [operationId, op] of Object.entries(all)) {
    if (exclude.has(operationId)) continue;
    const example: OperationExample | undefined = operationExamples[operationId as OperationId];
    const responses: Record<string, unknown> = {
      [op.status]: successResponse(op, collector, example),
    };
    const body = op.body ? collector.convert(op.body, 'input') : undefined;
    if (op.download)
      responses[304] = { description: 'Not modified: `If-None-Match` named its ETag.', headers: headersOf(304) };
    const errorStatuses = [
      400,
      401,
      403,
      ...(op.params || refersToRecords(collector, body) || pagesFromARecord(op) ? [404] : []),
      429,
      500,
    ];
    for (const status of errorStatuses) {
      const refusals = status === 400 ? (op.refusals ?? []) : [];
      responses[status] = {
        description: ERROR_DESCRIPTIONS[status] + refusalsText(refusals),
        ...(refusals.length > 0 ? { 'x-refusals': refusals } : {}),
        headers: headersOf(status),
        content: {
          'application/json': { schema: errorRef, examples: { [errorExampleName(status)]: errorExampleRef(status) } },
        },
      };
    }
    const path = `/v1${toOpenApiPath(op.path)}`;
    paths[path] ??= {};
    paths[path][op.method.toLowerCase()] = {
      operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: [operationId.split('.')[0]],
      security: [{ bearerAuth: [] }],
      parameters: [
        ...parameters(collector, op.params, 'path', example?.request.params),
        ...parameters(collector, op.query, 'query', example?.request.query),
        ...(op.method === 'POST' ? [{ $ref: '#/components/parameters/Idempotency-Key' }] : []),
        ...(op.stream ? [{ $ref: '#/components/parameters/Last-Event-ID' }] : []),
        { $ref: '#/components/parameters/X-Request-Id' },
      ],
      ...(body
        ? {
            requestBody: {
              required: true,
              content: op.upload
                ? { 'multipart/form-data': { schema: body, encoding: { [op.upload.part]: { contentType: '*/*' } } } }
                : { 'application/json': { schema: body, ...(example ? { example: example.request.body } : {}) } },
            },
          }
        : {}),
      responses,
      ...(example ? { 'x-codeSamples': codeSamples(operationId as OperationId, STORY_ORIGIN) } : {}),
    };
  }

  if (!exclude.has('hooks')) Object.assign(paths, metaHookPaths(errorRef));
  const server = options.serverUrl?.replace(/\/+$/, '').replace(/\/v1$/, '');
  // The story's addresses (a channel's `webhook_url`) are the serving server's.
  const servedPaths: typeof paths = server ? JSON.parse(JSON.stringify(paths).replaceAll(STORY_ORIGIN, server)) : paths;

  return {
    openapi: '3.1.0',
    info: {
      title: 'Convo API',
      version: CONTRACT_VERSION,
      description:
        `${quickstart(server)}\n\n` +
        'Read and answer WhatsApp, Facebook and Instagram conversations, manage contacts, tags and orders. ' +
        'Authenticate with `Authorization: Bearer <key>`. Errors are `{"error": {"code", "message", "details"?}}` with one of the codes ' +
        `${Object.keys(ERROR_STATUS)
          .map((c) => `\`${c}\``)
          .join(', ')}. ` +
        `${TEXT_RULE} The request schemas say so: a \`pattern\` on every string without a syntax of its own, and \`propertyNames\` on maps.`,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Convo' },
    },
    ...(server ? { servers: [{ url: server }] } : {}),
    tags: [
      ...new Set(
        Object.keys(all)
          .filter((id) => !exclude.has(id))
          .map((id) => id.split('.')[0] as string),
      ),
    ]
      .map((name) => ({
        name,
        description: `Operations on ${name}.`,
      }))
      .concat(
        exclude.has('hooks')
          ? []
          : [
              {
                name: 'hooks',
                description:
                  "Meta's webhooks, outside /v1: called by Meta, never by you (enter a channel's `webhook_url` in the Meta app).",
              },
            ],
      ),
    paths: servedPaths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: full access, read-only or webhook.' },
      },
      parameters: {
        'Idempotency-Key': {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Makes a POST safe to retry: for 24 hours the same key with the same body replays the first response byte for byte; ' +
            'with another body it is a 400 (`idempotency_key`). A duplicate that arrives while the first runs waits for it.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
        'Last-Event-ID': {
          name: 'Last-Event-ID',
          in: 'header',
          required: false,
          description:
            'The id of the last event you received (SSE clients send it when they reconnect): the stream starts after it, so nothing is skipped or repeated.',
          schema: { type: 'string', maxLength: 255 },
        },
        'X-Request-Id': {
          name: 'X-Request-Id',
          in: 'header',
          required: false,
          description: 'Your id for this request (at most 128 of `[A-Za-z0-9._-]`); echoed back, else one is made.',
          schema: { type: 'string', maxLength: 128, pattern: '^[A-Za-z0-9._-]{1,128}$' },
        },
      },
      headers: {
        'X-Request-Id': { description: 'The id of this request.', schema: { type: 'string' } },
        'X-RateLimit-Limit': {
          description: "The account's requests per minute (on every response to a known key).",
          schema: { type: 'integer' },
        },
        'X-RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer' } },
        'X-RateLimit-Reset': { description: 'When the window resets, in Unix seconds.', schema: { type: 'integer' } },
        'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' } },
      },
      schemas: collector.components,
      examples: Object.fromEntries(
        Object.entries(errorExamples).map(([status, value]) => [
          ERROR_NAMES[Number(status)],
          { summary: ERROR_DESCRIPTIONS[Number(status)], value },
        ]),
      ),
    },
  };
}
export type OpenApiDocument = ReturnType<typeof buildOpenApiDocument>;

const WHATSAPP_WEBHOOK_EXAMPLE = {
  object: 'whatsapp_business_account',
  entry: [
    {
      id: '102290129340398',
      changes: [
        {
          field: 'messages',
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: '15550783881', phone_number_id: '106540352242922' },
            contacts: [{ profile: { name: 'Ana Souza' }, wa_id: '14155550123' }],
            messages: [
              {
                from: '14155550123',
                id: 'wamid.HBgLMTQxNTU1NTAxMjMVAgASGBQzQTdBRTc2QUMyQjlBNzk2NjA2MgA=',
                timestamp: '1764110130',
                type: 'text',
                text: { body: 'Hi! Where is my order?' },
              },
            ],
          },
        },
      ],
    },
  ],
};

/** What the server refuses of any request on these routes before it looks at the channel. */
const MALFORMED_HOOK_REQUEST =
  'a path that is not validly percent-encoded (`field: path`, constraint `format`), a `channel_id` holding U+0000 or a lone surrogate (`pattern`), or a request line and headers over 16 KiB (`field: headers`, `max_bytes`)';

/**
 * The two routes Meta calls for a channel: the subscription handshake and the signed webhooks. No API key: the
 * channel's verify token and app secret stand in for one.
 */
function metaHookPaths(errorRef: { $ref: string }): Record<string, Record<string, unknown>> {
  const error = (description: string) => ({ description, content: { 'application/json': { schema: errorRef } } });
  const channelId = {
    name: 'channel_id',
    in: 'path',
    required: true,
    description: 'The channel, as its `webhook_url` names it.',
    schema: { type: 'string' },
    example: 'ch_01JD5Q3R8Z6X4W2V0T9S7P5N3M',
  };
  const query = (name: string, description: string, example: string) => ({
    name,
    in: 'query',
    required: true,
    description,
    schema: { type: 'string' },
    example,
  });
  return {
    '/hooks/meta/{channel_id}': {
      get: {
        operationId: 'hooks.meta.verify',
        summary: "Meta's subscription handshake",
        description:
          "Meta calls it when you save the channel's `webhook_url` and `verify_token` in the Meta app: the challenge is echoed when the token matches.",
        tags: ['hooks'],
        security: [],
        parameters: [
          channelId,
          query('hub.mode', 'Always `subscribe`.', 'subscribe'),
          query('hub.verify_token', "The channel's `verify_token`.", 'q8sd7f6g5h4j3k2l1'),
          query('hub.challenge', 'Echoed back.', '1158201444'),
        ],
        responses: {
          200: {
            description: 'The challenge.',
            content: { 'text/plain': { schema: { type: 'string' }, example: '1158201444' } },
          },
          400: error(`Malformed: ${MALFORMED_HOOK_REQUEST}.`),
          403: error('Not `subscribe`, or not the verify token.'),
          404: error('No such channel.'),
        },
      },
      post: {
        operationId: 'hooks.meta.receive',
        summary: "Meta's webhooks for a channel",
        description:
          '`X-Hub-Signature-256` (`sha256=` and the hex HMAC-SHA256 of the raw body under the app secret) is checked before anything else; ' +
          'a signed body is stored and answered 200 at once, and processed in the background: messages, statuses, deliveries and reads ' +
          '(WhatsApp `entry[].changes[].value`, Messenger and Instagram `entry[].messaging[]`). A disabled channel stores nothing.',
        tags: ['hooks'],
        security: [],
        parameters: [
          channelId,
          {
            name: 'X-Hub-Signature-256',
            in: 'header',
            required: true,
            description: 'Set by Meta.',
            schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
            example: 'sha256=6f0bd2c6a2a5d1b2e0b8c7d2b49b7d3f0c1e4e1b2e5d8a4f7c3b9e2d1a0f5c7e',
          },
        ],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: { type: 'object', description: "Meta's webhook body, as Meta documents it." },
              example: WHATSAPP_WEBHOOK_EXAMPLE,
            },
          },
        },
        responses: {
          200: {
            description: 'Stored.',
            content: { 'text/plain': { schema: { type: 'string' }, example: 'EVENT_RECEIVED' } },
          },
          400: error(
            `The body is not a JSON object (constraint \`json\`) or is over 1 MiB (\`max_bytes\`); or malformed: ${MALFORMED_HOOK_REQUEST}.`,
          ),
          401: error('Missing or wrong signature: nothing is stored.'),
          404: error('No such channel.'),
        },
      },
    },
  };
}
