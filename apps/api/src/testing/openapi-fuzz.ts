/**
 * Property-based fuzzing of every operation of the OpenAPI document the server serves.
 *
 * For each operation, fast-check generates requests: valid ones derived from the document's own
 * request schemas (JSON Schema 2020-12), mutated and invalid ones (wrong types, boundaries ± 1,
 * unknown and missing fields, malformed JSON, wrong content types, odd path ids and query
 * strings), real ids of resources made first mixed with random and other-tenant ids, and every
 * kind of key. Every response must:
 * - not be a 5xx;
 * - have a status the document lists for the operation (odd paths may also be answered as an
 *   unknown path: 400 for a malformed URL, 401, 403, 404, 429);
 * - be `application/json` whose body validates (Ajv) against the document's schema for that
 *   status, except a 204, which has no body;
 * - when it is a 400, name `details.field` and one of the contract's `details.constraint`s.
 * And, from the contract's order of checks: no key or a bad key is 401, a webhook key 403, a
 * read-only key 403 on writes; a request the document rejects is a 400 for an allowed key; one
 * it accepts is never refused for its syntax; another tenant's resource is a 404.
 *
 * Reproducible: one seed (FUZZ_SEED, printed) drives every operation; FUZZ_RUNS sets the runs per
 * operation (≥ 300), FUZZ_SHRINK=1 shrinks a failure to a smaller request and FUZZ_COLLECT=1 lists
 * every mismatch instead of stopping at the first. Both dialects run at once, five operations at a
 * time (vitest's maxConcurrency); each operation sends its requests one after the other.
 */
import {
  CONSTRAINTS,
  ERROR_STATUS,
  type EndpointDefinition,
  MAX_WEBHOOK_ENDPOINTS,
  type OperationId,
  endpoints,
} from '@convo/core';
import fc from 'fast-check';
import { maxHeaderSize } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import {
  type TestServer,
  answerText,
  describeDialect,
  requestOverTrpc,
  testSettings,
  transportsOf,
} from './harness.js';
import type { Settings } from '../settings.js';
import {
  type Hints,
  type OpenApiDocument,
  type Operation,
  type Schema,
  type Validator,
  arbitraryOf,
  REFUSED_UNITS,
  createAjv,
  differencesFromSent,
  holdsRefusedText,
  operationsOf,
  resolve,
  weighted,
} from './openapi-arbitraries.js';
import { buildServer } from '../http/server.js';

// ---------------------------------------------------------------------------------------------
// Settings

const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const NUM_RUNS = Math.max(300, Number(process.env.FUZZ_RUNS ?? 300));
const SHRINK = process.env.FUZZ_SHRINK === '1';
/** FUZZ_COLLECT=1: go on after a mismatch and list them all at the end of each operation. */
const COLLECT = process.env.FUZZ_COLLECT === '1';
const MiB = 1024 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;
/** What an odd path may also be answered with, as any unknown path would be. */
const UNKNOWN_PATH_STATUSES = [400, 401, 403, 404, 429];

console.log(`fuzz: seed ${SEED}, ${NUM_RUNS} runs per operation (replay with FUZZ_SEED=${SEED})`);

type KeyKind = 'full' | 'readOnly' | 'webhook' | 'none' | 'invalid' | 'other';
/** What the document (and the contract) says of a part of a request. */
type Validity = 'valid' | 'invalid' | 'any';

/**
 * The operations to declare tests for, from the document a server with the test settings serves
 * (each dialect then fuzzes the document its own server serves, and checks it is the same list).
 */
const DECLARED: Operation[] = await (async () => {
  const database = openDatabase('file::memory:');
  const app = await buildServer({ database, settings: testSettings() });
  const doc = (await app.inject({ method: 'GET', url: '/v1/openapi.json' })).json() as OpenApiDocument;
  await app.close();
  await database.destroy();
  return operationsOf(doc);
})();

/** A per-operation seed, so that adding an operation leaves the others' requests as they were. */
const seedOf = (operationId: string) =>
  [...operationId].reduce((h, c) => (Math.imul(h, 31) + c.charCodeAt(0)) | 0, SEED);

// ---------------------------------------------------------------------------------------------
// Mutations: boundaries of every limit in the contract, wrong types, unknown and missing fields

const LENGTHS = [
  0, 1, 2, 63, 64, 65, 100, 101, 199, 200, 201, 254, 255, 500, 501, 1000, 1001, 4096, 4097, 10_000, 10_001,
];
const NUMBERS = [
  -1,
  0,
  1,
  2,
  20,
  49,
  50,
  51,
  99,
  100,
  101,
  10_000,
  10_001,
  2_592_000,
  2_592_001,
  2 ** 31,
  Number.MAX_SAFE_INTEGER,
  2 ** 53,
  1.5,
  -0.5,
  1e21,
  1e308,
  -1e308,
];
const COUNTS = [0, 1, 19, 20, 21, 50, 51, 100, 101];
const STRANGE_VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  '',
  ' ',
  'x',
  '\u0000',
  '😀',
  [],
  [null],
  {},
  { a: 1 },
  '1',
  'true',
  'null',
];

type Path = (string | number)[];

function pathsIn(value: unknown, prefix: Path = []): Path[] {
  const out: Path[] = [prefix];
  if (Array.isArray(value)) {
    for (const [i, inner] of value.entries()) out.push(...pathsIn(inner, [...prefix, i]));
  } else if (value && typeof value === 'object')
    for (const [key, inner] of Object.entries(value)) out.push(...pathsIn(inner, [...prefix, key]));
  return out;
}

const clone = <T>(value: T): T => (value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T));

function getAt(value: unknown, path: Path): unknown {
  let current: any = value;
  for (const key of path) current = current?.[key];
  return current;
}

/** Replaces (or with `undefined`, deletes) the value at `path`; the root is replaced by the result. */
function setAt(root: unknown, path: Path, next: unknown): unknown {
  if (path.length === 0) return next;
  const parent = getAt(root, path.slice(0, -1)) as any;
  const last = path[path.length - 1] as string | number;
  if (next === undefined) {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else parent[last] = next;
  return root;
}

/** One mutation of a value, chosen by what is at a random place in it. */
function mutationOf(valid: unknown): fc.Arbitrary<{ label: string; value: unknown }> {
  const paths = pathsIn(valid);
  return fc
    .tuple(
      fc.constantFrom(...paths),
      fc.nat(),
      fc.constantFrom(...LENGTHS),
      fc.constantFrom(...NUMBERS),
      fc.constantFrom(...COUNTS),
      fc.constantFrom(...STRANGE_VALUES),
      fc.constantFrom('a', '😀', 'é', ' ', '/', '\u0000', '\ud800'),
      fc.string({ minLength: 1, maxLength: 12 }),
      fc.constantFrom(...REFUSED_UNITS),
    )
    .map(([path, choice, length, number, count, strange, char, name, refused]) => {
      const value = clone(valid);
      const at = getAt(value, path);
      const where = path.join('.') || 'body';
      const options: [string, () => unknown][] = [[`${where} ← ${JSON.stringify(strange)}`, () => strange]];
      if (path.length > 0) options.push([`${where} removed`, () => undefined]);
      if (typeof at === 'string') {
        options.push(
          [`${where} ← ${length}×${JSON.stringify(char)}`, () => char.repeat(length)],
          [`${where} ← ${length}×${JSON.stringify(char)}`, () => char.repeat(length)],
        );
        options.push([`${where} ← " ${at} "`, () => ` ${at} `], [`${where} ← number`, () => number]);
        // What no string may hold (400 `pattern`), inside a string that is valid otherwise.
        options.push(
          [`${where} + ${JSON.stringify(refused)}`, () => `${at}${refused}`],
          [`${where} ← ${JSON.stringify(refused)} + it`, () => `${refused}${at}`],
        );
      } else if (typeof at === 'number') {
        options.push(
          [`${where} ← ${number}`, () => number],
          [`${where} ← ${number}`, () => number],
          [`${where} ← "${at}"`, () => String(at)],
        );
      } else if (Array.isArray(at)) {
        options.push([
          `${where} ← ${count} items`,
          () => Array.from({ length: count }, (_, i) => clone(at[i % Math.max(at.length, 1)] ?? `item${i}`)),
        ]);
        options.push([`${where} ← as object`, () => Object.fromEntries(at.map((v, i) => [String(i), v]))]);
      } else if (at && typeof at === 'object') {
        options.push([`${where} + unknown ${JSON.stringify(name)}`, () => ({ ...(at as object), [name]: 'x' })]);
        options.push([`${where} + unknown ${JSON.stringify(name)}`, () => ({ ...(at as object), [name]: strange })]);
        // A computed key makes an own `__proto__` property, which JSON.stringify writes as any other.
        options.push([`${where} + "__proto__"`, () => ({ ...(at as object), ['__proto__']: 'x' })]);
        options.push([
          `${where} + key ${JSON.stringify(`k${refused}`)}`,
          () => ({ ...(at as object), [`k${refused}`]: 'x' }),
        ]);
        const keys = Object.keys(at);
        options.push([
          `${where} ← ${count} keys`,
          () =>
            Object.fromEntries(
              Array.from({ length: count }, (_, i) => [keys[i] ?? `k${i}`, (at as any)[keys[i] ?? ''] ?? 'v']),
            ),
        ]);
      }
      const [label, make] = options[choice % options.length] as [string, () => unknown];
      return { label, value: setAt(value, path, make()) };
    });
}

// ---------------------------------------------------------------------------------------------
// Requests

interface PathParam {
  /** What is put in the path as is (already percent-encoded, or deliberately not). */
  encoded: string;
  /** Whose it is: a resource of the account of key `full`, of the other account, or nobody's. */
  owner: 'a' | 'b' | null;
  odd: boolean;
}
interface QueryPair {
  name: string;
  value: string;
  validity: Validity;
}
type Body =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown; contentType: string; label: string }
  | { kind: 'raw'; bytes: string; binary: boolean; contentType: string | null; label: string; validity: Validity }
  | { kind: 'oversized'; contentType: string };

interface Case {
  key: KeyKind;
  /** The Authorization header for an invalid key (or a variant of a valid one). */
  authorization: string | null;
  params: Record<string, PathParam>;
  pathMutation: string | null;
  query: QueryPair[];
  rawQuery: string | null;
  body: Body;
  requestId: string | null;
  /** POST only. */
  idempotencyKey: string | null;
}

interface Fixtures {
  /** Real ids by pool: `contacts`, `disposableContacts`, `conversations`, … */
  a: Record<string, string[]>;
  /** The other account's ids (one of each kind). */
  b: Record<string, string[]>;
  /** Ids of resources of account A that were deleted. */
  gone: Record<string, string[]>;
  tags: string[];
  ownedByA: Set<string>;
  ownedByB: Set<string>;
}

const RESOURCE_POOLS: Record<string, string> = {
  messages: 'messages',
  contacts: 'contacts',
  conversations: 'conversations',
  orders: 'orders',
  workflows: 'workflows',
  webhook_endpoints: 'endpoints',
  channels: 'channels',
  files: 'files',
};

/** The pool a path parameter draws real ids from. */
function poolFor(operation: Operation, param: string): string {
  if (param === 'delivery_id') return 'deliveries';
  if (param === 'run_id') return 'runs';
  const resource = operation.path.split('/')[2] ?? '';
  const pool = RESOURCE_POOLS[resource] ?? 'contacts';
  // Deletes get resources of their own, so that the others keep finding theirs; status changes too.
  if (operation.method === 'DELETE' && !operation.path.includes('{tag}'))
    return `disposable${pool[0]?.toUpperCase()}${pool.slice(1)}`;
  if (operation.id === 'conversations.update') return 'conversationsToChange';
  // Changes that other operations' twins would see happen between their two requests (a channel's
  // business account set or removed turns its template list from a 400 to a 200 and back).
  if (operation.id === 'workflows.update') return 'workflowsToChange';
  if (operation.id === 'orders.update') return 'ordersToChange';
  if (operation.id === 'channels.update') return 'channelsToChange';
  // Contacts that have every fixture tag, and that nothing but tag removal changes.
  if (operation.path.includes('{tag}')) return 'taggedContacts';
  return pool;
}

const ODD_IDS = [
  '',
  '.',
  '..',
  ' ',
  '%',
  '?',
  '#',
  '/',
  '\\',
  'null',
  'undefined',
  '0',
  '-1',
  "' OR 1=1 --",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal template-looking id, as a client might send.
  '${id}',
  '__proto__',
  'constructor',
  'ct_',
  'CT_01J0000000000000000000000',
  '\u0000',
  '\u202e',
  'a\nb',
  '😀',
  'ct_01J%00',
];
/** Percent-encodings that do not decode: cut short, not hex, not UTF-8, a lone surrogate. */
const MALFORMED_ENCODINGS = ['%', '%E0%A4%A', '%zz', '%ff', '%C0%AF', '%ED%A0%80', 'a%2', '%%30'];

function pathParamArbitrary(operation: Operation, param: string, fixtures: Fixtures): fc.Arbitrary<PathParam> {
  const pool = poolFor(operation, param);
  const real = param === 'tag' ? fixtures.tags : (fixtures.a[pool] ?? []);
  const foreign =
    fixtures.b[pool.replace(/^disposable(.)/, (_, c: string) => c.toLowerCase())] ?? fixtures.b[pool] ?? [];
  const gone = fixtures.gone[pool] ?? [];
  const plain =
    (owner: 'a' | 'b' | null) =>
    (value: string): PathParam => {
      const encoded = encodeURIComponent(value);
      return { encoded, owner, odd: encoded === '' || encoded === '.' || encoded === '..' };
    };
  const prefix =
    {
      contacts: 'ct',
      taggedContacts: 'ct',
      conversations: 'conv',
      messages: 'msg',
      orders: 'ord',
      ordersToChange: 'ord',
      workflows: 'wf',
      workflowsToChange: 'wf',
      runs: 'run',
      endpoints: 'whe',
      deliveries: 'whd',
      channels: 'ch',
      channelsToChange: 'ch',
      files: 'file',
    }[pool.replace(/^disposable(.)/, (_, c: string) => c.toLowerCase())] ?? 'x';
  const options: [number, fc.Arbitrary<PathParam>][] = [
    [2, fc.stringMatching(/^[0-9A-HJKMNP-TV-Z]{26}$/).map((ulid) => plain(null)(`${prefix}_${ulid}`))],
    [1, fc.string({ unit: 'binary', maxLength: 30 }).map(plain(null))],
    [1, fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).map(plain(null))],
    [
      1,
      fc
        .constantFrom(200, 1000, 4095, 4096, 4097, 5000, 9000)
        .chain((n) => fc.constantFrom('x', 'é', '😀').map((c) => plain(null)(c.repeat(n)))),
    ],
    [1, fc.constantFrom(...ODD_IDS).map(plain(null))],
    [1, fc.constantFrom(...MALFORMED_ENCODINGS).map((encoded): PathParam => ({ encoded, owner: null, odd: true }))],
  ];
  if (real.length) options.push([10, fc.constantFrom(...real).map(plain(param === 'tag' ? null : 'a'))]);
  if (foreign.length) options.push([2, fc.constantFrom(...foreign).map(plain(param === 'tag' ? null : 'b'))]);
  if (gone.length) options.push([1, fc.constantFrom(...gone).map(plain(null))]);
  if (param === 'tag')
    options.push([
      3,
      (fc.stringMatching(/^[^/\s](?:[^/]*[^/\s])?$/, { maxLength: 64 }) as fc.Arbitrary<string>).map(plain(null)),
    ]);
  return weighted(...options);
}

const PATH_MUTATIONS = ['/', '/extra', '//', '/..', '/%2e%2e', ';x=1', '%20', '/%00'];

function queryArbitrary(
  doc: OpenApiDocument,
  hints: Hints,
  operation: Operation,
  strict: (schema: Schema) => Validator,
): fc.Arbitrary<{ pairs: QueryPair[]; raw: string | null }> {
  const params = (operation.spec.parameters ?? []).filter((p) => p.in === 'query');
  /** The value as the server reads a query string: a plain decimal for an integer parameter is a number. */
  const classify = (param: Schema, value: string): Validity => {
    const schema = resolve(doc, param.schema as Schema);
    const typed =
      (schema.type === 'integer' || schema.type === 'number') && /^-?\d+$/.test(value) ? Number(value) : value;
    return strict(param.schema as Schema)(typed) ? 'valid' : 'invalid';
  };
  const known: fc.Arbitrary<QueryPair>[] = params.map((param) =>
    weighted<string>(
      [6, arbitraryOf(doc, hints, param.schema as Schema, param.name as string).map((v) => String(v))],
      [
        1,
        fc.constantFrom(
          '',
          ' ',
          '-1',
          '0',
          '101',
          '1.5',
          '1e2',
          'abc',
          'true',
          '[]',
          '0x10',
          '00001',
          '-0',
          '99999999999999999999',
          '😀',
        ),
      ],
      [1, fc.tuple(fc.constantFrom(...LENGTHS), fc.constantFrom('a', '😀')).map(([n, c]) => c.repeat(n))],
    ).map((value) => ({ name: param.name as string, value, validity: classify(param, value) })),
  );
  const unknown: fc.Arbitrary<QueryPair> = fc
    .tuple(
      fc.constantFrom(
        'foo',
        'LIMIT',
        'limit[]',
        'page',
        'q',
        '__proto__',
        'constructor',
        'toString',
        'hasOwnProperty',
        'status ',
        '',
      ),
      fc.constantFrom('1', '', 'x'),
    )
    .map(([name, value]) => ({ name, value, validity: name === '' ? 'any' : 'invalid' }));
  const pairs = fc
    .array(known.length ? weighted<QueryPair>([8, fc.oneof(...known)], [1, unknown]) : unknown, {
      maxLength: known.length ? 4 : 2,
    })
    .map((list) => {
      // A parameter given twice reaches the server as an array.
      const seen = new Set<string>();
      return list.map((pair) => {
        const twice = seen.has(pair.name);
        seen.add(pair.name);
        return twice ? { ...pair, validity: 'invalid' as const } : pair;
      });
    });
  const raw = fc.constantFrom(
    '?',
    '?&',
    '?&&=',
    '?=',
    '?limit',
    '?limit=%ZZ',
    '?%ZZ=1',
    '?limit=1&&offset=0',
    '?a=%00',
    '?limit=%31',
    '?%6c%69%6d%69%74=5',
    '?search=%F0%9F%98%80',
    '#frag',
  );
  return weighted<{ pairs: QueryPair[]; raw: string | null }>(
    [5, fc.constant({ pairs: [], raw: null })],
    [10, pairs.map((p) => ({ pairs: p, raw: null }))],
    [1, raw.map((r) => ({ pairs: [], raw: r }))],
  );
}

const deepJson = (depth: number) => `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`;
const MALFORMED_JSON = [
  '{',
  '{"a":',
  "{'a':1}",
  '{"a":1,}',
  'nul',
  '{a:1}',
  '[1,2',
  '{"a":1}}',
  '\u0000',
  '{"a":"\\x"}',
  'NaN',
  '{"a":"\u0001"}',
];
const OTHER_JSON = ['[]', '[{}]', '"text"', '42', 'true', 'null', '1e999', '"\\ud800"'];
const WRONG_CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'text/json',
  'application/jsonx',
  'application/merge-patch+json',
  'application/xml',
  '*/*',
  'json',
  '',
];
const JSON_CONTENT_TYPES = [
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'Application/JSON',
  'application/json;charset=UTF-8',
];

function bodyArbitrary(doc: OpenApiDocument, hints: Hints, operation: Operation): fc.Arbitrary<Body> {
  const schema = operation.spec.requestBody?.content['application/json']?.schema;
  const none = fc.constant<Body>({ kind: 'none' });
  const raw =
    (validity: Validity, label: string, contentType: string | null = 'application/json', binary = false) =>
    (bytes: string): Body => ({ kind: 'raw', bytes, binary, contentType, label, validity });
  const garbage = weighted<Body>(
    [3, fc.constantFrom(...MALFORMED_JSON).map(raw('invalid', 'malformed JSON'))],
    [
      1,
      fc
        .constantFrom('\xff\xfe', '{"a":"\xc3\x28"}', '\xed\xa0\x80')
        .map(raw('invalid', 'not UTF-8', 'application/json', true)),
    ],
    [1, fc.string({ unit: 'binary', maxLength: 30 }).map(raw('any', 'random text'))],
    [2, fc.constantFrom(...OTHER_JSON).map(raw(schema ? 'invalid' : 'any', 'JSON other than an object'))],
    [1, fc.constantFrom(33, 100, 1000).map((d) => raw('invalid', `nested ${d} deep`)(deepJson(d)))],
    [1, fc.constantFrom('', ' ').map(raw('any', 'empty'))],
    [1, fc.constant<Body>({ kind: 'oversized', contentType: 'application/json' })],
  );
  if (!schema) {
    // GET cannot carry a body; DELETE and a body-less POST get one now and then.
    if (operation.method === 'GET') return none;
    return weighted<Body>(
      [10, none],
      [1, fc.constant<Body>({ kind: 'json', value: {}, contentType: 'application/json', label: 'empty object' })],
      [1, garbage],
    );
  }
  const valid = arbitraryOf(doc, hints, schema);
  const json =
    (label: string) =>
    (value: unknown, contentType = 'application/json'): Body => ({ kind: 'json', value, contentType, label });
  return weighted<Body>(
    [8, fc.tuple(valid, fc.constantFrom(...JSON_CONTENT_TYPES)).map(([v, ct]) => json('valid')(v, ct))],
    [8, valid.chain(mutationOf).map(({ label, value }) => json(label)(value))],
    [
      1,
      fc.tuple(valid, fc.constantFrom(...WRONG_CONTENT_TYPES)).map(
        ([v, ct]): Body => ({
          kind: 'raw',
          bytes: JSON.stringify(v),
          binary: false,
          contentType: ct,
          label: `Content-Type ${ct}`,
          validity: 'invalid',
        }),
      ),
    ],
    [
      1,
      valid.map(
        (v): Body => ({
          kind: 'raw',
          bytes: JSON.stringify(v),
          binary: true,
          contentType: null,
          label: 'no Content-Type',
          validity: 'invalid',
        }),
      ),
    ],
    [1, none],
    [2, garbage],
  );
}

function keyArbitrary(server: TestServer): fc.Arbitrary<{ key: KeyKind; authorization: string | null }> {
  const { keys } = server;
  return weighted<{ key: KeyKind; authorization: string | null }>(
    [
      45,
      fc
        .constantFrom(`Bearer ${keys.full}`, `bearer ${keys.full}`, `BEARER ${keys.full}`)
        .map((authorization) => ({ key: 'full', authorization })),
    ],
    [12, fc.constant({ key: 'readOnly', authorization: `Bearer ${keys.readOnly}` })],
    [8, fc.constant({ key: 'other', authorization: `Bearer ${keys.otherFull}` })],
    [8, fc.constant({ key: 'webhook', authorization: `Bearer ${keys.webhook}` })],
    [8, fc.constant({ key: 'none', authorization: null })],
    [
      12,
      fc
        .constantFrom(
          `Bearer ${keys.revoked}`,
          `Bearer ${keys.full}x`,
          `Bearer ${keys.full.slice(0, -1)}`,
          `Basic ${keys.full}`,
          `Token ${keys.full}`,
          keys.full,
          'Bearer',
          'Bearer ',
          'Bearer key_live_0000000000000000',
          `Bearer ${'x'.repeat(5000)}`,
          'Bearer \u00e9',
        )
        .map((authorization) => ({ key: 'invalid' as const, authorization })),
    ],
  );
}

function caseArbitrary(
  doc: OpenApiDocument,
  hints: Hints,
  operation: Operation,
  server: TestServer,
  fixtures: Fixtures,
  strict: (schema: Schema) => Validator,
): fc.Arbitrary<Case> {
  const pathParams = (operation.spec.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name as string);
  const params = fc.record(
    Object.fromEntries(pathParams.map((name) => [name, pathParamArbitrary(operation, name, fixtures)])),
  );
  return fc
    .record({
      key: keyArbitrary(server),
      params,
      pathMutation: weighted<string | null>([30, fc.constant(null)], [1, fc.constantFrom(...PATH_MUTATIONS)]),
      query: queryArbitrary(doc, hints, operation, strict),
      body: bodyArbitrary(doc, hints, operation),
      requestId: weighted<string | null>(
        [8, fc.constant(null)],
        [1, fc.constantFrom('fuzz-1', 'a', 'x'.repeat(128), 'x'.repeat(129), 'has space', 'a/b', 'ok.id_-9')],
      ),
      idempotencyKey:
        operation.method === 'POST'
          ? weighted<string | null>(
              [12, fc.constant(null)],
              [3, fc.uuid()],
              // Shared by every operation, so that keys get reused with other requests.
              [2, fc.constantFrom('fuzz-key-1', 'fuzz-key-2', 'k'.repeat(255))],
              [1, fc.constantFrom('', 'k'.repeat(256), 'k'.repeat(1000))],
            )
          : fc.constant(null),
    })
    .map(({ key, params, pathMutation, query, body, requestId, idempotencyKey }) => ({
      key: key.key,
      authorization: key.authorization,
      params,
      pathMutation,
      query: query.pairs,
      rawQuery: query.raw,
      body,
      requestId,
      idempotencyKey,
    }));
}

// ---------------------------------------------------------------------------------------------
// Sending, and what a response must be

interface Sent {
  method: string;
  url: string;
  pathname: string;
  headers: Record<string, string>;
  bodyText: string | undefined;
}
interface Received {
  status: number;
  headers: Headers;
  text: string;
}

function buildRequest(
  baseUrl: string,
  operation: Operation,
  c: Case,
): { sent: Sent; body: string | Buffer | undefined } {
  let path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => c.params[name]?.encoded ?? '');
  if (c.pathMutation) path += c.pathMutation;
  let query = c.query.map((p) => `${encodeURIComponent(p.name)}=${encodeURIComponent(p.value)}`).join('&');
  query = query ? `?${query}` : '';
  if (c.rawQuery) query += c.rawQuery;
  // As fetch sends it: dot segments resolved, the fragment dropped.
  const url = new URL(`${new URL(baseUrl).origin}${path}${query}`).href;
  const headers: Record<string, string> = {};
  if (c.authorization !== null) headers.authorization = c.authorization;
  if (c.requestId !== null) headers['x-request-id'] = c.requestId;
  if (c.idempotencyKey !== null) headers['idempotency-key'] = c.idempotencyKey;
  let body: string | Buffer | undefined;
  let bodyText: string | undefined;
  switch (c.body.kind) {
    case 'json':
      body = JSON.stringify(c.body.value);
      bodyText = body;
      headers['content-type'] = c.body.contentType;
      break;
    case 'raw':
      body = c.body.binary ? Buffer.from(c.body.bytes, 'latin1') : Buffer.from(c.body.bytes, 'utf8');
      bodyText = c.body.bytes;
      if (c.body.contentType !== null) headers['content-type'] = c.body.contentType;
      break;
    case 'oversized':
      body = `{"name":"${'x'.repeat(MiB)}"}`;
      bodyText = `{"name":"x × ${MiB}"}`;
      headers['content-type'] = c.body.contentType;
      break;
  }
  return { sent: { method: operation.method, url, pathname: new URL(url).pathname, headers, bodyText }, body };
}

const clip = (s: string | undefined, n = 600) =>
  s === undefined ? '(none)' : s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s;

function describeExchange(operation: Operation, c: Case, sent: Sent, received: Received | undefined): string {
  const lines = [
    `${operation.id}: ${sent.method} ${clip(sent.url, 300)}`,
    `  key: ${c.key}${c.authorization ? ` (${clip(c.authorization, 40)})` : ''}`,
    `  headers: ${clip(JSON.stringify(sent.headers), 300)}`,
    `  body (${c.body.kind === 'none' ? 'none' : 'label' in c.body ? c.body.label : c.body.kind}): ${clip(sent.bodyText, 400)}`,
  ];
  if (received)
    lines.push(
      `  → ${received.status} ${received.headers.get('content-type') ?? '(no content type)'}: ${clip(received.text)}`,
    );
  return lines.join('\n');
}

class Mismatch extends Error {}

interface Verdict {
  /** The request as a whole: valid for the document and the contract, definitely invalid, or either. */
  validity: Validity;
  /**
   * Bytes of the request line and headers sent (less fetch's own): beyond maxHeaderSize Node refuses the request before
   * routing.
   */
  headBytes: number;
  /** A path parameter names a resource of the account the key is not of. */
  foreignPath: boolean;
  /** A body field (contact_id, conversation_id) names a resource of the other account. */
  foreignBodyId: boolean;
  oddPath: boolean;
  /**
   * Some string or key of the request holds U+0000 or a lone surrogate, or a key is `__proto__`:
   * a 400 `pattern` wherever the document says so (every string without a pattern of its own) and
   * where only its description does (strings with a pattern of their own, such as a tag).
   */
  refusedText: boolean;
}

function judge(
  operation: Operation,
  c: Case,
  sent: Sent,
  fixtures: Fixtures,
  loose: (schema: Schema) => Validator,
  strict: (schema: Schema) => Validator,
): Verdict {
  const expectedPath = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => c.params[name]?.encoded ?? '');
  const oddPath =
    c.pathMutation !== null || Object.values(c.params).some((p) => p.odd) || sent.pathname !== expectedPath;
  const parts: Validity[] = [];
  for (const pair of c.query) parts.push(pair.validity);
  if (c.idempotencyKey !== null)
    parts.push(c.idempotencyKey.length >= 1 && c.idempotencyKey.length <= 255 ? 'valid' : 'invalid');
  if (c.rawQuery) parts.push('any');
  const schema = operation.spec.requestBody?.content['application/json']?.schema;
  // A multipart body is required where the document asks for one, and the fuzz sends none.
  if (operation.spec.requestBody?.content['multipart/form-data']) parts.push('invalid');
  switch (c.body.kind) {
    case 'none':
      // The server reads a missing body as `{}`; the document says a body is required. No claim.
      if (schema) parts.push('any');
      break;
    case 'json':
      if (!schema) parts.push('any');
      else if (strict(schema)(c.body.value)) parts.push('valid');
      else if (!loose(schema)(c.body.value)) parts.push('invalid');
      else parts.push('any');
      break;
    case 'raw':
      parts.push(c.body.validity);
      break;
    case 'oversized':
      parts.push('invalid');
      break;
  }
  const validity: Validity = oddPath
    ? 'any'
    : parts.includes('invalid')
      ? 'invalid'
      : parts.every((p) => p === 'valid')
        ? 'valid'
        : 'any';
  const keyOwner = c.key === 'other' ? 'b' : 'a';
  const foreignPath = Object.values(c.params).some((p) => p.owner !== null && p.owner !== keyOwner);
  const foreignSet = keyOwner === 'a' ? fixtures.ownedByB : fixtures.ownedByA;
  const bodyValue = c.body.kind === 'json' ? (c.body.value as Record<string, unknown> | null) : null;
  const foreignBodyId =
    !!bodyValue &&
    typeof bodyValue === 'object' &&
    ['contact_id', 'conversation_id'].some(
      (field) => typeof bodyValue[field] === 'string' && foreignSet.has(bodyValue[field] as string),
    );
  // Without what fetch adds (host, connection, accept, user-agent, content-length…: a few hundred bytes).
  const headBytes =
    Buffer.byteLength(
      `${sent.method} ${sent.url.slice(new URL(sent.url).origin.length).replace(/#.*$/, '')} HTTP/1.1\r\n`,
    ) +
    Object.entries(sent.headers).reduce((sum, [name, value]) => sum + Buffer.byteLength(`${name}: ${value}\r\n`), 0);
  const decoded = (encoded: string) => {
    try {
      return decodeURIComponent(encoded);
    } catch {
      return encoded;
    }
  };
  const refusedText = holdsRefusedText([
    ...Object.values(c.params).map((p) => decoded(p.encoded)),
    ...c.query.flatMap((p) => [p.name, p.value]),
    c.body.kind === 'json' ? c.body.value : null,
  ]);
  return { validity, headBytes, foreignPath, foreignBodyId, oddPath, refusedText };
}

/**
 * The only 400s a request the document accepts may get: those the document lists for the operation (its 400's
 * `x-refusals`: state, platform rules, counts), and two every operation has.
 */
function semanticRefusal(operation: Operation, field: string, constraint: string, verdict: Verdict): boolean {
  // U+0000, a lone surrogate or `__proto__`, which the document's description rules out everywhere.
  if (constraint === 'pattern' && verdict.refusedText) return true;
  // An Idempotency-Key used before with another request.
  if (constraint === 'idempotency_key' && field === 'Idempotency-Key') return true;
  return (operation.spec.responses['400']?.['x-refusals'] ?? []).some(
    (refusal) => refusal.constraint === constraint && globMatches(refusal.field, field),
  );
}

/** `steps.*url` matches `steps.0.url` and `steps.0.then.1.url`: `*` stands for any run of characters. */
const globMatches = (pattern: string, field: string): boolean =>
  new RegExp(`^${pattern.split('*').map(escapeRegExp).join('.*')}$`).test(field);

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The documented operation a path and method lead to, if any. */
function matchOperation(operations: Operation[], method: string, pathname: string): Operation | undefined {
  return operations.find(
    (op) => op.method === method && new RegExp(`^${op.path.replace(/\{\w+\}/g, '[^/]+')}$`).test(pathname),
  );
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Mismatch(message);
}

function assertResponse(
  operation: Operation,
  operations: Operation[],
  c: Case,
  sent: Sent,
  received: Received,
  verdict: Verdict,
  responseValidator: (schema: Schema) => Validator,
  errorSchema: Schema,
) {
  const { status, headers, text } = received;
  check(status < 500, `a ${status}`);
  const refusedHead = status === 400 && /"field":"headers","constraint":"max_bytes"/.test(text);
  if (verdict.headBytes > maxHeaderSize)
    check(
      refusedHead,
      `a request line and headers of ${verdict.headBytes} bytes answered ${status}, not 400 headers max_bytes`,
    );
  if (refusedHead)
    check(
      verdict.headBytes > maxHeaderSize - 1024,
      `a request line and headers of ${verdict.headBytes} bytes refused as too large`,
    );

  // The status is one the document lists; an odd path may also be answered as an unknown path is.
  const routed = verdict.oddPath ? matchOperation(operations, sent.method, sent.pathname) : operation;
  const documented = Object.keys(routed?.spec.responses ?? {}).map(Number);
  const allowed = verdict.oddPath ? [...new Set([...documented, ...UNKNOWN_PATH_STATUSES])] : documented;
  check(allowed.includes(status), `status ${status} is not one the document lists (${allowed.join(', ')})`);

  const requestId = headers.get('x-request-id');
  check(requestId !== null && REQUEST_ID.test(requestId), `X-Request-Id ${requestId} is missing or malformed`);
  // A request refused before it is parsed has no client id to echo.
  if (c.requestId !== null && REQUEST_ID.test(c.requestId) && !refusedHead)
    check(requestId === c.requestId, `X-Request-Id ${requestId} is not the client's ${c.requestId}`);

  // Content type and body schema.
  const documentedResponse = routed?.spec.responses[String(status)];
  const schema = documentedResponse
    ? documentedResponse.content?.['application/json']?.schema
    : status >= 400
      ? errorSchema
      : undefined;
  if (status === 204 || (documentedResponse && !documentedResponse.content)) {
    check(text === '', `a ${status} has a body`);
    return undefined;
  }
  // A stream is read up to its first frame (answerText): the comment it opens with.
  if (documentedResponse?.content?.['text/event-stream']) {
    check(
      /^text\/event-stream(\s*;|$)/i.test(headers.get('content-type') ?? ''),
      `content type ${headers.get('content-type')} is not text/event-stream`,
    );
    check(/^(id: evt_\w+\n)?: stream open\n\n$/.test(text), `the stream opens with ${JSON.stringify(text)}`);
    return undefined;
  }
  // A download's bytes are the file's own: their length is the documented check.
  if (documentedResponse?.content?.['*/*']) {
    check(headers.get('etag') !== null, `a ${status} download has no ETag`);
    check(Number(headers.get('content-length')) === Buffer.byteLength(text), `a ${status} download is cut short`);
    return undefined;
  }
  check(
    /^application\/json(\s*;|$)/i.test(headers.get('content-type') ?? ''),
    `content type ${headers.get('content-type')} is not application/json`,
  );
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Mismatch('the body is not JSON');
  }
  check(schema, `no schema for a ${status}`);
  const validate = responseValidator(schema);
  check(
    validate(body),
    `the body does not match the document's schema for ${status}: ${JSON.stringify(validate.errors)}`,
  );

  if (status >= 400) {
    const code = body.error.code as keyof typeof ERROR_STATUS;
    check(ERROR_STATUS[code] === status, `error code ${code} is not the one of status ${status}`);
    check(body.error.message.length > 0, 'an empty error message');
  }
  if (status === 400) {
    const details = body.error.details;
    check(details && typeof details.field === 'string' && details.field.length > 0, 'a 400 without details.field');
    check(
      (CONSTRAINTS as readonly string[]).includes(details.constraint),
      `a 400 whose details.constraint ${details.constraint} is not one of the contract's`,
    );
  }
  if (status === 429) check(headers.get('retry-after') !== null, 'a 429 without Retry-After');
  return body;
}

/** The contract's order of checks and what the document says of the request. */
function assertExpectations(
  operation: Operation,
  c: Case,
  sent: Sent,
  received: Received,
  body: any,
  verdict: Verdict,
) {
  const { status } = received;
  // Refused before it was read (checked in assertResponse), or rate-limited: nothing more to say.
  if (status === 429 || (status === 400 && body?.error?.details?.field === 'headers')) return;
  const underV1 = sent.pathname.startsWith('/v1/');
  const write = operation.method !== 'GET';
  if (underV1 && (c.key === 'none' || c.key === 'invalid'))
    check(status === 401, `expected 401 for key ${c.key}, got ${status}`);
  if (verdict.oddPath) return;
  if (c.key === 'webhook') check(status === 403, `expected 403 for a webhook key, got ${status}`);
  if (c.key === 'readOnly' && write)
    check(status === 403, `expected 403 for a read-only key on a write, got ${status}`);
  const allowedKey = c.key === 'full' || c.key === 'other' || (c.key === 'readOnly' && !write);
  if (!allowedKey) return;
  if (verdict.validity === 'invalid')
    check(status === 400, `the document rejects this request, but the server answered ${status}`);
  if (verdict.validity === 'valid') {
    if (status === 400) {
      const { field, constraint } = body.error.details as { field: string; constraint: string };
      check(
        semanticRefusal(operation, field, constraint, verdict),
        `the document accepts this request, but the server refused ${field} (${constraint}): ${body.error.message}`,
      );
    }
    // Validation (a semantic 400 above) comes before existence.
    if (verdict.foreignPath || verdict.foreignBodyId)
      check(status === 404 || status === 400, `another tenant's resource answered ${status}, not 404`);
  }
}

/**
 * An accepted write answers, and a create then reads back, what it sent: every string, number and
 * boolean of the body at the same place (a lone surrogate stored as U+FFFD would differ). Only a
 * create is read again: no other operation knows its id, so nothing changes it meanwhile.
 */
async function assertReadBack(
  operations: Operation[],
  operation: Operation,
  c: Case,
  sent: Sent,
  received: Received,
  body: any,
): Promise<void> {
  if (
    c.body.kind !== 'json' ||
    received.status >= 300 ||
    !body ||
    typeof body !== 'object' ||
    typeof body.id !== 'string'
  )
    return;
  if (operation.method !== 'POST' && operation.method !== 'PATCH') return;
  // A replay answers the first request's record, which another body may have made.
  if (received.headers.get('idempotent-replayed') === 'true') return;
  const answered = differencesFromSent(c.body.value, body);
  check(answered.length === 0, `the write answered other values than it sent: ${answered.join('; ')}`);
  const retrieve =
    received.status === 201 && operations.find((op) => op.method === 'GET' && op.path === `${operation.path}/{id}`);
  if (!retrieve) return;
  const res = await fetch(`${sent.url.replace(/[?#].*$/, '')}/${encodeURIComponent(body.id)}`, {
    headers: { authorization: sent.headers.authorization ?? '' },
    signal: AbortSignal.timeout(15_000),
  });
  // A delete of the same kind of record cannot reach it: deletes take ids made before the fuzz.
  check(res.status === 200, `${retrieve.id} of the record just made answered ${res.status}`);
  const read = differencesFromSent(c.body.value, await res.json());
  check(read.length === 0, `${retrieve.id} reads back other values than were sent: ${read.join('; ')}`);
}

/**
 * The same case through /trpc, where it can be said there: its JSON body and its query (numbers
 * as REST's coercion makes them) as the procedure's input, the same key. A read is always sent
 * again; a write only when REST refused it (nothing happened, so the twin meets the same state).
 * The two transports must agree on the status and, for an error, on its code, field and constraint.
 */
async function assertTrpcTwin(
  server: TestServer,
  operation: Operation,
  c: Case,
  sent: Sent,
  rest: Received,
): Promise<void> {
  const definition = endpoints[operation.id as OperationId] as EndpointDefinition | undefined;
  if (!definition || c.pathMutation !== null || c.rawQuery !== null) return;
  // An upload or a download has no JSON twin (harness.ts transportsOf).
  if (!transportsOf(definition).includes('trpc')) return;
  if (c.body.kind !== 'none' && c.body.kind !== 'json') return;
  if (definition.method !== 'GET' && rest.status < 400) return;
  // Keys are claimed per account across transports, so a twin with the same key meets the first's.
  if (c.idempotencyKey !== null) return;
  const params: Record<string, string> = {};
  for (const [name, param] of Object.entries(c.params)) {
    if (param.odd || /%(?![0-9A-F]{2})/i.test(param.encoded)) return;
    try {
      params[name] = decodeURIComponent(param.encoded);
    } catch {
      return;
    }
  }
  // A name sent twice is an array in REST's query string and has no JSON twin.
  if (new Set(c.query.map(({ name }) => name)).size < c.query.length) return;
  const query = Object.fromEntries(
    c.query.map(({ name, value }) => [
      name,
      (name === 'limit' || name === 'offset') && /^-?\d+$/.test(value) ? Number(value) : value,
    ]),
  );
  // A request line over Node's limit is refused before either transport.
  if (rest.status === 400 && rest.text.includes('"field":"headers"')) return;
  const headers: Record<string, string> = {};
  if (c.authorization !== null) headers.authorization = c.authorization;
  const twin = await requestOverTrpc(server, operation.id as OperationId, params, {
    key: null,
    headers,
    ...(c.query.length > 0 ? { query: query as Record<string, string | number> } : {}),
    // REST reads no body of an operation that takes none.
    ...(c.body.kind === 'json' && definition.body ? { body: c.body.value } : {}),
  });
  const restBody = rest.text
    ? (JSON.parse(rest.text) as { error?: { code: string; details?: { field?: string; constraint?: string } } })
    : undefined;
  const twinError = twin.body as
    | { error?: { code: string; details?: { field?: string; constraint?: string } } }
    | undefined;
  const describe = `tRPC twin: REST ${rest.status} ${rest.text.slice(0, 300)}, tRPC ${twin.status} ${twin.text.slice(0, 300)}`;
  check(twin.status < 500, `the tRPC twin answered ${twin.status}: ${describe}`);
  if (rest.status >= 400) {
    // An account's number of webhook endpoints is state the other operations change meanwhile: a
    // delete between the two may free the slot the twin then takes. The cap must hold all the same.
    const details = restBody?.error?.details;
    if (
      details?.field === 'body' &&
      details.constraint === 'max' &&
      twin.status === 200 &&
      operation.id === 'webhookEndpoints.create'
    ) {
      const list = await server.request('GET', '/webhook_endpoints', { key: null, headers, query: { limit: 100 } });
      check(
        list.status === 200 && list.body.total <= MAX_WEBHOOK_ENDPOINTS,
        `the twin went past the endpoint cap: ${describe}; ${list.text.slice(0, 200)}`,
      );
      return;
    }
    check(twin.status === rest.status, `the transports disagree: ${describe}`);
    check(twinError?.error?.code === restBody?.error?.code, `the transports' error codes differ: ${describe}`);
    if (rest.status === 400) {
      check(
        twinError?.error?.details?.field === restBody?.error?.details?.field &&
          twinError?.error?.details?.constraint === restBody?.error?.details?.constraint,
        `the transports name another problem: ${describe}`,
      );
    }
  } else if (twin.status !== 200) {
    // The operations run concurrently: a change of the same resource (a delete, a channel's business
    // account removed) may come between the two. Then REST answers as the twin did.
    const again = await fetch(sent.url, { method: 'GET', headers: sent.headers, signal: AbortSignal.timeout(15_000) });
    check(
      again.status === twin.status,
      `REST served the read, tRPC answered ${twin.status} and REST then ${again.status}: ${describe}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Resources to aim at

async function createFixtures(server: TestServer): Promise<Fixtures> {
  let phoneSeq = 0;
  const phone = () => `+1555${String(7_000_000 + phoneSeq++)}`;
  const call = async (method: string, path: string, body: unknown, key = server.keys.full) => {
    const res = await server.request(method, path, { key, ...(body === undefined ? {} : { body }) });
    if (res.status >= 300) throw new Error(`fixture ${method} ${path}: ${res.status} ${res.text}`);
    return res.body;
  };
  const tags = ['vip', 'fuzz tag', 'café ☕', 'a.b-c_d', '😀', '%2F', 'x'.repeat(64)];
  const a: Record<string, string[]> = {};
  const b: Record<string, string[]> = {};
  const gone: Record<string, string[]> = {};
  const push = (into: Record<string, string[]>, pool: string, id: string) => {
    into[pool] ??= [];
    into[pool].push(id);
  };

  // Endpoints first, so that the events below leave deliveries.
  for (let i = 0; i < 3; i++)
    push(
      a,
      'endpoints',
      (await call('POST', '/webhook_endpoints', { url: `http://127.0.0.1:9/hooks/${i}`, events: ['*'] })).id,
    );
  // With the three above and one made and deleted below, within the account's 16.
  for (let i = 0; i < 12; i++)
    push(
      a,
      'disposableEndpoints',
      (await call('POST', '/webhook_endpoints', { url: `https://example.com/${i}`, events: ['order.placed'] })).id,
    );
  for (let i = 0; i < 4; i++) {
    const contact = await call('POST', '/contacts', {
      name: `Fuzz ${i}`,
      phone: phone(),
      email: `fuzz${i}@example.com`,
      tags: tags.slice(i, i + 4),
      attributes: { plan: 'pro', seats: i, trial: true },
    });
    push(a, 'contacts', contact.id);
    const platforms = ['whatsapp', 'facebook', 'instagram'];
    const conversation = await call('POST', '/conversations', { contact_id: contact.id, platform: platforms[i % 3] });
    push(a, 'conversations', conversation.id);
    push(
      a,
      'messages',
      (await call('POST', '/messages', { conversation_id: conversation.id, content: `Hello ${i}` })).id,
    );
    const inbound = await call('POST', '/sandbox/inbound', {
      platform: platforms[(i + 1) % 3],
      from: { phone: phone(), name: `Inbound ${i}` },
      content: 'Hi there',
    });
    push(a, 'conversationsToChange', inbound.conversation_id);
    push(
      a,
      'orders',
      (
        await call('POST', '/orders', {
          contact_id: contact.id,
          currency: 'EUR',
          items: [{ name: 'Widget', quantity: 2, unit_amount: 1250 }],
        })
      ).id,
    );
  }
  for (let i = 0; i < 25; i++) push(a, 'disposableContacts', (await call('POST', '/contacts', { phone: phone() })).id);
  const channel = (i: number, key?: string) =>
    call(
      'POST',
      '/channels',
      {
        platform: 'whatsapp',
        external_id: String(900_000 + i),
        access_token: `token-${i}`,
        app_secret: `secret-${i}`,
        // Some with a business account, whose templates can be listed; channels.update changes channels of its own.
        ...(i % 2 === 0 ? { business_account_id: String(800_000 + i) } : {}),
      },
      key,
    );
  for (let i = 0; i < 3; i++) push(a, 'channels', (await channel(i)).id);
  for (let i = 3; i < 15; i++) push(a, 'disposableChannels', (await channel(i)).id);
  for (let i = 15; i < 18; i++) push(a, 'channelsToChange', (await channel(i)).id);
  for (let i = 0; i < 4; i++) push(a, 'taggedContacts', (await call('POST', '/contacts', { phone: phone(), tags })).id);
  push(
    a,
    'workflows',
    (
      await call('POST', '/workflows', {
        name: 'Welcome',
        steps: [
          { type: 'send_message', content: 'Hi {{contact.name}}' },
          { type: 'add_tag', tag: 'welcomed' },
        ],
      })
    ).id,
  );
  push(
    a,
    'workflows',
    (
      await call('POST', '/workflows', {
        name: 'Wait',
        steps: [
          { type: 'wait', seconds: 60 },
          { type: 'set_conversation_status', status: 'resolved' },
        ],
      })
    ).id,
  );
  await call('POST', `/workflows/${a.workflows?.[0]}/trigger`, { contact_id: a.contacts?.[0], data: { order: 'A-1' } });
  // Runs of the waiting workflow stay queued (no worker here): there to read and to cancel.
  for (let i = 0; i < 6; i++)
    push(
      a,
      'runs',
      (await call('POST', `/workflows/${a.workflows?.[1]}/trigger`, { contact_id: a.contacts?.[i % 4] })).id,
    );
  for (let i = 0; i < 3; i++)
    push(
      a,
      'workflowsToChange',
      (await call('POST', '/workflows', { name: `Change ${i}`, steps: [{ type: 'wait', seconds: 5 }] })).id,
    );
  for (let i = 0; i < 6; i++)
    push(
      a,
      'disposableWorkflows',
      (await call('POST', '/workflows', { name: `Delete ${i}`, steps: [{ type: 'wait', seconds: 5 }] })).id,
    );
  for (let i = 0; i < 4; i++)
    push(
      a,
      'ordersToChange',
      (
        await call('POST', '/orders', {
          contact_id: a.contacts?.[i],
          currency: 'EUR',
          items: [{ name: 'Changeable', quantity: 1, unit_amount: 100 }],
        })
      ).id,
    );
  for (const endpoint of a.endpoints ?? []) {
    for (const delivery of (await call('GET', `/webhook_endpoints/${endpoint}/deliveries`, undefined)).data)
      push(a, 'deliveries', delivery.id);
  }
  if (!a.deliveries?.length) throw new Error('fixtures: no webhook delivery was made');

  // Deleted resources of account A.
  const goneContact = (await call('POST', '/contacts', { phone: phone() })).id;
  await call('DELETE', `/contacts/${goneContact}`, undefined);
  push(gone, 'contacts', goneContact);
  push(gone, 'disposableContacts', goneContact);
  push(gone, 'taggedContacts', goneContact);
  const goneEndpoint = (await call('POST', '/webhook_endpoints', { url: 'https://example.com/gone', events: ['*'] }))
    .id;
  await call('DELETE', `/webhook_endpoints/${goneEndpoint}`, undefined);
  push(gone, 'endpoints', goneEndpoint);
  push(gone, 'disposableEndpoints', goneEndpoint);
  // Files are uploaded as multipart/form-data, which the JSON helper above does not send.
  const file = async (i: number, key = server.keys.full) => {
    const form = new FormData();
    form.append('file', new Blob([`fuzz file ${i}`], { type: 'text/plain' }), `fuzz-${i}.txt`);
    const res = await fetch(`${server.baseUrl}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    if (res.status !== 201) throw new Error(`fixture POST /files: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  };
  for (let i = 0; i < 3; i++) push(a, 'files', await file(i));
  push(b, 'files', await file(0, server.keys.otherFull));
  const goneChannel = (await channel(99)).id;
  await call('DELETE', `/channels/${goneChannel}`, undefined);
  push(gone, 'channels', goneChannel);
  push(gone, 'disposableChannels', goneChannel);

  // The other account: one of each.
  const other = server.keys.otherFull;
  push(
    b,
    'endpoints',
    (await call('POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/b', events: ['*'] }, other)).id,
  );
  const bContact = (await call('POST', '/contacts', { name: 'B', phone: phone(), tags: ['vip'] }, other)).id;
  push(b, 'contacts', bContact);
  push(b, 'taggedContacts', bContact);
  const bConversation = (await call('POST', '/conversations', { contact_id: bContact, platform: 'whatsapp' }, other))
    .id;
  push(b, 'conversations', bConversation);
  push(b, 'conversationsToChange', bConversation);
  push(
    b,
    'orders',
    (
      await call(
        'POST',
        '/orders',
        { contact_id: bContact, currency: 'USD', items: [{ name: 'B', quantity: 1, unit_amount: 1 }] },
        other,
      )
    ).id,
  );
  push(b, 'messages', (await call('POST', '/messages', { conversation_id: bConversation, content: 'B' }, other)).id);
  push(
    b,
    'workflows',
    (await call('POST', '/workflows', { name: 'B', steps: [{ type: 'wait', seconds: 1 }] }, other)).id,
  );
  push(b, 'channels', (await channel(0, other)).id);
  for (const delivery of (await call('GET', `/webhook_endpoints/${b.endpoints?.[0]}/deliveries`, undefined, other))
    .data)
    push(b, 'deliveries', delivery.id);

  const ownedByA = new Set(Object.values(a).flat());
  const ownedByB = new Set(Object.values(b).flat());
  return { a, b, gone, tags, ownedByA, ownedByB };
}

function hintsFor(fixtures: Fixtures): Hints {
  const ids = (pool: string, prefix: string) =>
    weighted<string>(
      [6, fc.constantFrom(...(fixtures.a[pool] ?? [`${prefix}_none`]))],
      [1, fc.constantFrom(...(fixtures.b[pool] ?? [`${prefix}_none`]))],
      [1, fc.constantFrom(...(fixtures.gone[pool] ?? [`${prefix}_gone`]))],
      [1, fc.stringMatching(/^[0-9A-HJKMNP-TV-Z]{26}$/).map((ulid) => `${prefix}_${ulid}`)],
      [1, fc.string({ unit: 'binary', maxLength: 40 })],
    );
  const byName: Record<string, fc.Arbitrary<unknown>> = {
    contact_id: ids('contacts', 'ct'),
    conversation_id: ids('conversations', 'conv'),
  };
  const url = weighted<string>(
    [
      3,
      fc
        .tuple(
          fc.constantFrom(
            'http://127.0.0.1:9',
            'https://example.com',
            'https://hooks.example.org:8443',
            'http://localhost',
          ),
          fc.webPath(),
        )
        .map(([origin, path]) => `${origin}${path}`),
    ],
    [1, fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: true })],
  );
  return { byName: (name) => byName[name], url };
}

// ---------------------------------------------------------------------------------------------
// The suite

interface Tally {
  requests: number;
  statuses: Record<number, number>;
  validity: Record<Validity, number>;
}

/**
 * Declares the fuzz of every operation on one database. Each database has a test file of its own
 * (http/fuzz.sqlite.test.ts, http/fuzz.postgres.test.ts), so that the two halves run in two of vitest's
 * workers, side by side.
 */
/** `settings`: the server's, e.g. a fake Graph API so that operations that ask Meta get its answers. */
export function describeFuzz(dialect: 'sqlite' | 'postgres', settings?: Settings): void {
  describe.concurrent('fuzz', () =>
    describeDialect(
      dialect,
      'every operation of the served OpenAPI document',
      (server) => {
        let doc: OpenApiDocument;
        let operations: Operation[];
        let fixtures: Fixtures;
        let hints: Hints;
        let strict: (schema: Schema) => Validator;
        let loose: (schema: Schema) => Validator;
        const tallies = new Map<string, Tally>();
        let started = 0;

        beforeAll(async () => {
          started = Date.now();
          const res = await fetch(`${server().baseUrl}/openapi.json`);
          doc = (await res.json()) as OpenApiDocument;
          operations = operationsOf(doc);
          strict = createAjv(doc, true);
          loose = createAjv(doc, false);
          fixtures = await createFixtures(server());
          hints = hintsFor(fixtures);
          // The fixtures are made through the API, request by request: over 60 s on Postgres in a CI run
          // with the other packages' suites beside it.
        }, 180_000);

        it('fuzzes exactly the operations the served document lists', () => {
          expect(operations.map((op) => `${op.method} ${op.path}`).sort()).toEqual(
            DECLARED.map((op) => `${op.method} ${op.path}`).sort(),
          );
          expect(operations.length).toBeGreaterThan(0);
        });

        // A few operations at a time (vitest's maxConcurrency, 5); each sends its requests one after the other.
        describe.concurrent('operations', () => {
          for (const declared of DECLARED) {
            it(`${declared.id}: ${declared.method} ${declared.path}`, async ({ expect }) => {
              const operation = operations.find((op) => op.method === declared.method && op.path === declared.path);
              expect(operation, 'the served document lists the operation').toBeDefined();
              if (!operation) return;
              const tally: Tally = { requests: 0, statuses: {}, validity: { valid: 0, invalid: 0, any: 0 } };
              tallies.set(operation.id, tally);
              const errorSchema = { $ref: '#/components/schemas/Error' };
              const arbitrary = caseArbitrary(doc, hints, operation, server(), fixtures, strict);
              const seed = seedOf(operation.id);
              const mismatches: string[] = [];

              await fc.assert(
                fc.asyncProperty(arbitrary, async (c) => {
                  const { sent, body } = buildRequest(server().baseUrl, operation, c);
                  const verdict = judge(operation, c, sent, fixtures, loose, strict);
                  let received: Received | undefined;
                  try {
                    const res = await fetch(sent.url, {
                      method: sent.method,
                      headers: sent.headers,
                      body,
                      redirect: 'manual',
                      signal: AbortSignal.timeout(15_000),
                    });
                    received = { status: res.status, headers: res.headers, text: await answerText(res) };
                    tally.requests++;
                    tally.statuses[received.status] = (tally.statuses[received.status] ?? 0) + 1;
                    tally.validity[verdict.validity]++;
                    const parsed = assertResponse(
                      operation,
                      operations,
                      c,
                      sent,
                      received,
                      verdict,
                      strict,
                      errorSchema,
                    );
                    assertExpectations(operation, c, sent, received, parsed, verdict);
                    await assertReadBack(operations, operation, c, sent, received, parsed);
                    await assertTrpcTwin(server(), operation, c, sent, received);
                  } catch (error) {
                    const reason = error instanceof Mismatch ? error.message : `the request failed: ${String(error)}`;
                    const report = `${reason}\n${describeExchange(operation, c, sent, received)}\n  (document validity: ${verdict.validity}; seed ${seed})`;
                    if (!COLLECT) throw new Error(report);
                    mismatches.push(report);
                    console.log(`FUZZ-MISMATCH ${report.replace(/\n/g, '\n  | ')}`);
                  }
                }),
                { seed, numRuns: NUM_RUNS, endOnFailure: !SHRINK },
              );

              expect(mismatches.length, `${mismatches.length} mismatches, the first:\n${mismatches[0]}`).toBe(0);
              expect(tally.requests).toBeGreaterThanOrEqual(NUM_RUNS);
              // Some generated requests are valid, with a key and ids that make them succeed.
              const successes = Object.entries(tally.statuses).filter(([status]) => Number(status) < 300);
              // The fuzz sends JSON, never the multipart body an upload takes (files.test.ts sends those).
              if (!operation.spec.requestBody?.content['multipart/form-data'])
                expect(successes.length, 'some request succeeded').toBeGreaterThan(0);
              // With too many 429s the suite would fuzz the rate limiter and nothing else.
              expect(tally.statuses[429] ?? 0, 'rate-limited requests').toBeLessThan(tally.requests / 2);
            }, 120_000);
          }
        });

        afterAll(() => {
          const rows = [...tallies.entries()].sort(([x], [y]) => x.localeCompare(y));
          const total = rows.reduce((sum, [, t]) => sum + t.requests, 0);
          const lines = rows.map(
            ([id, t]) =>
              `  ${id.padEnd(34)} ${String(t.requests).padStart(4)}  valid ${String(t.validity.valid).padStart(3)} invalid ${String(t.validity.invalid).padStart(3)} either ${String(t.validity.any).padStart(3)}  ${Object.entries(
                t.statuses,
              )
                .map(([s, n]) => `${s}×${n}`)
                .join(' ')}`,
          );
          console.log(
            `fuzz [${server().dialect}]: ${total} requests over ${rows.length} operations in ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${SEED})\n${lines.join('\n')}`,
          );
        });
      },
      settings,
    ));
}
