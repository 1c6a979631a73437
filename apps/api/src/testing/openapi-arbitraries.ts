import { REQUEST_TEXT_PATTERN, type Refusal } from '@convo/core';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';

/**
 * The served OpenAPI document's schemas for property tests: Ajv validators of its responses and
 * fast-check arbitraries of the requests it accepts (the fuzz and read-back suites).
 */

export type Schema = Record<string, any>;

const DOC_ID = 'https://convo.invalid/v1/openapi.json';
const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options', 'trace'];
const CURRENCIES = new Set(
  (Intl as unknown as { supportedValuesOf(key: string): string[] }).supportedValuesOf('currency'),
);

export interface OpenApiOperation {
  operationId: string;
  parameters?: Schema[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<
    string,
    {
      content?: Record<string, { schema: Schema }>;
      /** The 400s beyond the schema, as the endpoint table declares them. */
      'x-refusals'?: Refusal[];
    }
  >;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { schemas: Record<string, Schema> } & Record<string, unknown>;
}
export interface Operation {
  id: string;
  method: string;
  /** The document's path, e.g. `/v1/contacts/{id}`. */
  path: string;
  spec: OpenApiOperation;
}

/** The /v1 operations (Meta's /hooks routes, outside the API, have their own tests). */
export const operationsOf = (doc: OpenApiDocument): Operation[] =>
  Object.entries(doc.paths)
    .filter(([path]) => path.startsWith('/v1/'))
    .flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => METHODS.includes(method))
        .map(([method, spec]) => ({ id: spec.operationId, method: method.toUpperCase(), path, spec })),
    );

export type Validator = ((value: unknown) => boolean) & { errors?: unknown };

/** Ajv over the document's components; formats asserted or, as JSON Schema 2020-12 has them, annotations. */
export function createAjv(doc: OpenApiDocument, assertFormats: boolean) {
  const ajv = new Ajv2020({
    strict: true,
    strictRequired: false,
    allowUnionTypes: true,
    validateFormats: assertFormats,
  });
  addFormats(ajv);
  ajv.addFormat('e164', /^\+[1-9]\d{6,14}$/);
  ajv.addFormat('iso-4217', { type: 'string', validate: (code: string) => CURRENCIES.has(code) });
  // OpenAPI's own annotation keyword, and the place of the schemas `$ref`s point into.
  ajv.addKeyword('example');
  ajv.addKeyword('components');
  ajv.addSchema({ $id: DOC_ID, components: doc.components });
  const cache = new Map<Schema, Validator>();
  return (schema: Schema): Validator => {
    let validate = cache.get(schema);
    if (!validate) {
      validate = ajv.compile(absoluteRefs(schema) as Schema) as Validator;
      cache.set(schema, validate);
    }
    return validate;
  };
}

/** `#/components/…` → `<document id>#/components/…`, so a schema can be compiled on its own. */
function absoluteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(absoluteRefs);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [
        key,
        key === '$ref' && typeof inner === 'string' && inner.startsWith('#') ? DOC_ID + inner : absoluteRefs(inner),
      ]),
    );
  }
  return value;
}

export function resolve(doc: OpenApiDocument, schema: Schema): Schema {
  let current = schema;
  while (typeof current.$ref === 'string') {
    const { $ref, ...rest } = current;
    const name = ($ref as string).replace('#/components/schemas/', '');
    const target = doc.components.schemas[name];
    if (!target) throw new Error(`Unresolvable $ref ${$ref}`);
    current = { ...target, ...rest };
  }
  return current;
}

export const codePoints = (s: string) => [...s].length;
export const weighted = <T>(...pairs: [number, fc.Arbitrary<T>][]) =>
  fc.oneof(...pairs.map(([weight, arbitrary]) => ({ weight, arbitrary })));

/** An integer in [min, max], often at a bound (bounds may exceed 32 bits). */
export function integerIn(min: number, max: number): fc.Arbitrary<number> {
  const small = Math.min(max, min + 1000);
  return weighted<number>(
    [1, fc.constantFrom(min, max)],
    [8, fc.integer({ min: Math.max(min, -1e9), max: Math.min(small, 1e9) })],
    [1, fc.bigInt({ min: BigInt(min), max: BigInt(max) }).map(Number)],
  );
}

/** Whether a string is one the document's REQUEST_TEXT_PATTERN allows: valid Unicode without U+0000. */
const REQUEST_TEXT = new RegExp(REQUEST_TEXT_PATTERN, 'u');
export const isRequestText = (s: string) => REQUEST_TEXT.test(s);

/** Characters that break things: controls, direction and byte-order marks, a pair, quotes, template marks. */
const ODD_UNITS = ['a', ' ', '\n', '\t', '\u202e', '\ufeff', '\ud83d\ude00', 'é', '"', '\\', '%', '{{'];
/** What no request string may hold (400 `pattern`): U+0000 and lone surrogates of both halves. */
export const REFUSED_UNITS = ['\u0000', '\ud800', '\udbff', '\udc00', '\udfff'];

/**
 * A string of min..max code points: ASCII, any code point, odd characters, or at a bound. With
 * `refused`, U+0000 and lone surrogates too (a lone surrogate counts as one code point); without,
 * only text REQUEST_TEXT_PATTERN allows.
 */
export function textOf(min: number, max: number, refused = true): fc.Arbitrary<string> {
  const cap = Math.min(max, Math.max(min, 40));
  const units = refused ? [...ODD_UNITS, ...REFUSED_UNITS] : ODD_UNITS;
  return weighted<string>(
    [6, fc.string({ unit: 'grapheme-ascii', minLength: min, maxLength: cap })],
    [3, fc.string({ unit: 'binary', minLength: min, maxLength: cap }).filter((s) => refused || isRequestText(s))],
    [1, fc.string({ unit: fc.constantFrom(...units), minLength: min, maxLength: cap })],
    [
      1,
      fc
        .tuple(fc.constantFrom(min, max), fc.constantFrom('a', 'é', '😀', '字', ' '))
        .map(([n, c]) => (n === 0 ? '' : `b${c.repeat(n - 1)}`)),
    ],
  ).filter((s) => codePoints(s) >= min && codePoints(s) <= max);
}

/** The edges of the years 0000 to 9999, in UTC and at offsets that take them past it. */
const EDGE_DATE_TIMES = [
  '0000-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '0000-01-01T00:00:00+14:00',
  '9999-12-31T23:59:59-14:00',
  '0000-01-01T00:00:00.000+00:01',
  '9999-12-31T23:59:59.999-00:01',
];

/**
 * An ISO 8601 date-time as the document's `date-time` allows it: mostly in this century, else
 * anywhere in the years 0000 to 9999 at any offset, or at their edges; with or without
 * milliseconds.
 */
const dateTime: fc.Arbitrary<string> = weighted<string>(
  [
    4,
    fc
      .tuple(
        weighted<Date>(
          [
            3,
            fc.date({
              min: new Date('1970-01-01T00:00:00Z'),
              max: new Date('2099-12-31T23:59:59Z'),
              noInvalidDate: true,
            }),
          ],
          [
            1,
            fc.date({
              min: new Date('0000-01-01T00:00:00Z'),
              max: new Date('9999-12-31T23:59:59.999Z'),
              noInvalidDate: true,
            }),
          ],
        ),
        fc.constantFrom('Z', 'ms', '+05:30', '-08:00', '+14:00', '-14:00'),
      )
      .map(([date, zone]) => {
        const iso = date.toISOString();
        return zone === 'ms' ? iso : zone === 'Z' ? iso.replace(/\.\d{3}Z$/, 'Z') : iso.replace(/Z$/, zone);
      }),
  ],
  [1, fc.constantFrom(...EDGE_DATE_TIMES)],
);

export interface Hints {
  /** Values for properties and parameters by name (ids of real resources and so on). */
  byName(name: string): fc.Arbitrary<unknown> | undefined;
  url: fc.Arbitrary<string>;
}

/** How many times a schema may hold itself in one value (`if` steps inside `if` steps). */
const MAX_RECURSION = 2;

/** A fast-check arbitrary of the values a JSON Schema (of the document) accepts. */
export function arbitraryOf(doc: OpenApiDocument, hints: Hints, raw: Schema, name?: string): fc.Arbitrary<unknown> {
  const arbitrary = build(doc, hints, raw, name, []);
  if (!arbitrary) throw new Error('The schema has no value without recursing forever');
  return arbitrary;
}

/** The component a schema's `$ref` names, if it is one. */
const refName = (schema: Schema): string | undefined =>
  typeof schema.$ref === 'string' ? (schema.$ref as string).replace('#/components/schemas/', '') : undefined;

/**
 * The arbitrary of `raw`, or undefined when every value of it would hold a schema that already
 * holds itself MAX_RECURSION times on `outer` (the caller then leaves it out).
 */
function build(
  doc: OpenApiDocument,
  hints: Hints,
  raw: Schema,
  name: string | undefined,
  outer: string[],
): fc.Arbitrary<unknown> | undefined {
  const hinted = name === undefined ? undefined : hints.byName(name);
  if (hinted) return hinted;
  const ref = refName(raw);
  if (ref !== undefined && outer.filter((seen) => seen === ref).length >= MAX_RECURSION) return undefined;
  const stack = ref === undefined ? outer : [...outer, ref];
  const schema = resolve(doc, raw);
  const oneOf = (arbitraries: (fc.Arbitrary<unknown> | undefined)[]) => {
    const possible = arbitraries.filter((a): a is fc.Arbitrary<unknown> => a !== undefined);
    return possible.length === 0 ? undefined : fc.oneof(...possible);
  };
  const alternatives = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (
    alternatives &&
    schema.type === 'object' &&
    alternatives.every((alt) => alt.type === undefined && alt.properties === undefined)
  ) {
    // An object with a choice of required properties (a message's `content` or `message`): mostly
    // one choice and not the others' properties, sometimes all of them.
    const { anyOf: _anyOf, oneOf: _oneOf, ...base } = schema;
    const choices = alternatives.map((alt) => (alt.required ?? []) as string[]);
    return fc.oneof(
      ...choices.flatMap((chosen) => {
        const others = choices.flat().filter((key) => !chosen.includes(key));
        const properties = Object.fromEntries(
          Object.entries(base.properties ?? {}).filter(([key]) => !others.includes(key)),
        );
        const required = [...(base.required ?? []), ...chosen];
        return [
          { weight: 3, arbitrary: arbitraryOf(doc, hints, { ...base, properties, required }, name) },
          { weight: 1, arbitrary: arbitraryOf(doc, hints, { ...base, required }, name) },
        ];
      }),
    );
  }
  if (alternatives) return oneOf(alternatives.map((s) => build(doc, hints, s, name, stack)));
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if (Array.isArray(schema.type))
    return oneOf((schema.type as string[]).map((type) => build(doc, hints, { ...schema, type }, name, stack)));
  switch (schema.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return integerIn(schema.minimum ?? -Number.MAX_SAFE_INTEGER, schema.maximum ?? Number.MAX_SAFE_INTEGER);
    case 'number':
      return fc.double({
        noNaN: true,
        noDefaultInfinity: true,
        ...(schema.minimum !== undefined ? { min: schema.minimum } : {}),
        ...(schema.maximum !== undefined ? { max: schema.maximum } : {}),
      });
    case 'string': {
      const min = (schema.minLength as number | undefined) ?? 0;
      const max = (schema.maxLength as number | undefined) ?? 300;
      const fits = (s: string) => codePoints(s) >= min && codePoints(s) <= max;
      switch (schema.format) {
        case 'iso-4217':
          return fc.constantFrom(...[...CURRENCIES].sort());
        case 'uri':
          return hints.url.filter(fits);
        case 'date-time':
          return dateTime;
      }
      // A string with no syntax of its own: any text the server keeps as sent.
      if (schema.pattern === REQUEST_TEXT_PATTERN) return textOf(min, max, false);
      if (typeof schema.pattern === 'string')
        return fc.stringMatching(new RegExp(schema.pattern), { maxLength: max }).filter(fits);
      return textOf(min, max);
    }
    case 'array': {
      const item = build(doc, hints, (schema.items as Schema | undefined) ?? {}, undefined, stack);
      const min = (schema.minItems as number | undefined) ?? 0;
      if (!item) return min === 0 ? fc.constant([]) : undefined;
      const max = (schema.maxItems as number | undefined) ?? 10;
      return weighted<unknown[]>(
        [9, fc.array(item, { minLength: min, maxLength: Math.min(max, Math.max(min, 5)) })],
        [1, fc.array(item, { minLength: max, maxLength: max })],
      );
    }
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      if (Object.keys(properties).length > 0) {
        const required = (schema.required ?? []) as string[];
        const entries = Object.entries(properties).map(([key, s]) => [key, build(doc, hints, s, key, stack)] as const);
        if (entries.some(([key, arbitrary]) => arbitrary === undefined && required.includes(key))) return undefined;
        const model = Object.fromEntries(entries.filter(([, arbitrary]) => arbitrary !== undefined));
        return fc.record(model as Record<string, fc.Arbitrary<unknown>>, { requiredKeys: required });
      }
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        const key = arbitraryOf(doc, hints, {
          type: 'string',
          ...(schema.propertyNames ?? {}),
        }) as fc.Arbitrary<string>;
        const value = build(doc, hints, schema.additionalProperties as Schema, undefined, stack);
        if (!value) return fc.constant({});
        const max = (schema.maxProperties as number | undefined) ?? 10;
        return weighted<Record<string, unknown>>(
          [9, fc.dictionary(key, value, { maxKeys: Math.min(max, 5), noNullPrototype: true })],
          [1, fc.dictionary(key, value, { minKeys: max, maxKeys: max, noNullPrototype: true })],
        );
      }
      return fc.constant({});
    }
    default:
      return fc.jsonValue();
  }
}

/**
 * Whether a value holds what no request may (400 `pattern`): a string or key REQUEST_TEXT_PATTERN refuses, or a
 * `__proto__` key.
 */
export function holdsRefusedText(value: unknown): boolean {
  if (typeof value === 'string') return !isRequestText(value);
  if (Array.isArray(value)) return value.some(holdsRefusedText);
  if (!value || typeof value !== 'object') return false;
  return Object.entries(value).some(
    ([key, inner]) => key === '__proto__' || !isRequestText(key) || holdsRefusedText(inner),
  );
}

/**
 * What the contract does to a value it accepts, for differencesFromSent: fields it keeps in
 * another form (`placed_at` in UTC) are not compared, and lists it keeps as sets (a contact's
 * tags) are compared with their first occurrences.
 */
export const CONTRACT_NORMALIZATIONS = { skip: ['placed_at'], sets: ['tags'] } as const;
type Normalizations = { skip: readonly string[]; sets: readonly string[] };

/**
 * Where a record differs from the body of the write that made or changed it: each string, number
 * and boolean the body sent must be found again at the same place, each array with as many items.
 * A field the record does not show (a secret) is not compared.
 */
export function differencesFromSent(
  sent: unknown,
  record: unknown,
  rules: Normalizations = CONTRACT_NORMALIZATIONS,
  path: string[] = [],
): string[] {
  const at = path.join('.') || 'body';
  // Nothing sent (a write without a body) is nothing to find again.
  if (sent === undefined || rules.skip.includes(at)) return [];
  if (Array.isArray(sent)) {
    const kept = rules.sets.includes(at) ? [...new Set(sent)] : sent;
    if (!Array.isArray(record) || record.length !== kept.length)
      return [`${at}: sent ${JSON.stringify(sent)}, read ${JSON.stringify(record)}`];
    return kept.flatMap((inner, i) => differencesFromSent(inner, record[i], rules, [...path, String(i)]));
  }
  if (sent !== null && typeof sent === 'object') {
    if (record === null || typeof record !== 'object' || Array.isArray(record))
      return [`${at}: sent an object, read ${JSON.stringify(record)}`];
    return Object.entries(sent).flatMap(([key, inner]) =>
      Object.hasOwn(record, key)
        ? differencesFromSent(inner, (record as Record<string, unknown>)[key], rules, [...path, key])
        : [],
    );
  }
  return sent === record ? [] : [`${at}: sent ${JSON.stringify(sent)}, read ${JSON.stringify(record)}`];
}
