import type { EndpointDefinition, HttpMethod, OperationId } from '@convo/core';

/**
 * What the CLI needs to know about one operation of the endpoint table, as plain data: its
 * path parameters and the options derived from its query and body schemas. The build computes
 * this from @convo/core and inlines it (see tsup.config.ts), so `convo --help` never loads zod.
 */
export interface OperationSpec {
  id: OperationId;
  method: HttpMethod;
  summary: string;
  description: string | undefined;
  /** Path parameters in path order, each with its help text. */
  pathParams: { name: string; description: string }[];
  /** The response is a list envelope (`data`, `total`, `has_more`…). */
  list: boolean;
  /** Options of the query string; empty without one. */
  query: FieldSpec[];
  /** Options of the body; undefined when the operation takes no body. */
  body: FieldSpec[] | undefined;
  /** An upload: the multipart part the file at the command's path goes in (its body has no options). */
  upload?: string;
  /** A download: the answer is bytes, written to `--output` or stdout. */
  download?: boolean;
  /** A stream of events (Server-Sent Events): printed as JSON Lines until interrupted. */
  stream?: boolean;
}

/**
 * How a field is typed on the command line: scalars as themselves, `strings` as a repeatable
 * singular option, `record` as repeatable `key=value`, `objects` (arrays of objects of scalars)
 * as repeatable `a:b:c`, other arrays as a repeatable option of JSON values, and anything else as JSON.
 */
export type FieldKind =
  | 'string'
  | 'integer'
  | 'number'
  | 'boolean'
  | 'strings'
  | 'record'
  | 'objects'
  | 'json-items'
  | 'json';
export type ScalarKind = 'string' | 'integer' | 'number' | 'boolean';

export interface FieldSpec {
  /** The field as the API names it: `contact_id`. */
  name: string;
  /** The option as typed, without dashes: `contact`. */
  option: string;
  /** The value's name in help: `<id>`. */
  placeholder: string;
  kind: FieldKind;
  required: boolean;
  /** `null` is allowed; the CLI sends it for an empty value (`--email ""`). */
  nullable: boolean;
  choices: string[] | undefined;
  /** The fields of each object of an `objects` field, in the order `a:b:c` gives them. */
  itemFields: { name: string; kind: ScalarKind }[] | undefined;
  description: string;
}

/** Option names the CLI itself uses on operation commands: a schema field must not take them. */
export const RESERVED_OPTIONS = ['json', 'all', 'body', 'api-key', 'base-url', 'profile', 'help', 'version'] as const;

/** The subset of JSON Schema that zod's `toJSONSchema` emits and this module reads. */
interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: boolean | JsonSchema;
  description?: string;
  default?: unknown;
  format?: string;
  example?: unknown;
  const?: unknown;
  deprecated?: boolean;
  minLength?: number;
  maxLength?: number;
}

interface SchemaSource {
  toJSONSchema(params: { io: 'input' | 'output'; unrepresentable: 'any' }): unknown;
}

/** Every operation of the table, keyed by operation id. */
export function describeOperations(
  endpoints: Record<OperationId, EndpointDefinition>,
): Record<OperationId, OperationSpec> {
  const specs = {} as Record<OperationId, OperationSpec>;
  for (const id of Object.keys(endpoints) as OperationId[]) specs[id] = describeOperation(id, endpoints[id]);
  return specs;
}

export function describeOperation(id: OperationId, definition: EndpointDefinition): OperationSpec {
  const body = definition.body && !definition.upload ? fieldsOf(toJsonSchema(definition.body, 'input')) : undefined;
  const query = definition.query ? fieldsOf(toJsonSchema(definition.query, 'input')) : [];
  const taken = new Set<string>();
  for (const field of [...query, ...(body ?? [])]) {
    if ((RESERVED_OPTIONS as readonly string[]).includes(field.option) || taken.has(field.option)) {
      throw new Error(`${id}: the field "${field.name}" would be the option --${field.option}, which is already taken`);
    }
    taken.add(field.option);
  }
  const response = definition.response ? toJsonSchema(definition.response, 'output') : undefined;
  return {
    id,
    method: definition.method,
    summary: definition.summary,
    description: definition.description,
    pathParams: pathParamsOf(definition.path),
    list: Boolean(response?.properties?.data && response.properties.has_more),
    query,
    body,
    ...(definition.upload ? { upload: definition.upload.part } : {}),
    ...(definition.download ? { download: true } : {}),
    ...(definition.stream ? { stream: true } : {}),
  };
}

function toJsonSchema(schema: unknown, io: 'input' | 'output'): JsonSchema {
  const json = (schema as SchemaSource).toJSONSchema({ io, unrepresentable: 'any' }) as JsonSchema;
  return resolve(json, json.$defs ?? {});
}

/**
 * Inlines `$ref`s to `$defs`. A schema met again inside itself (a workflow step's `if` holds
 * steps) stays a JSON value of no particular shape there: the CLI takes such fields as JSON.
 */
function resolve(schema: JsonSchema, defs: Record<string, JsonSchema>, inside: readonly string[] = []): JsonSchema {
  let current = schema;
  const names = [...inside];
  while (current.$ref) {
    const name = current.$ref.replace('#/$defs/', '');
    const { $ref: _ref, ...rest } = current;
    const target = defs[name];
    if (!target) throw new Error(`Unresolved $ref ${current.$ref}`);
    if (names.includes(name)) return rest;
    names.push(name);
    current = { ...target, ...rest };
  }
  const inner = (s: JsonSchema) => resolve(s, defs, names);
  const out: JsonSchema = { ...current };
  if (current.properties)
    out.properties = Object.fromEntries(Object.entries(current.properties).map(([k, v]) => [k, inner(v)]));
  if (current.items) out.items = inner(current.items);
  if (current.anyOf) out.anyOf = current.anyOf.map(inner);
  if (current.oneOf) out.oneOf = current.oneOf.map(inner);
  if (typeof current.additionalProperties === 'object') out.additionalProperties = inner(current.additionalProperties);
  return out;
}

/** `/contacts/:id/tags/:tag` → id (of the contact), tag. */
function pathParamsOf(path: string): OperationSpec['pathParams'] {
  const segments = path.split('/').filter(Boolean);
  const params: OperationSpec['pathParams'] = [];
  segments.forEach((segment, index) => {
    if (!segment.startsWith(':')) return;
    const name = segment.slice(1);
    const owner = singular(segments[index - 1] ?? 'record').replaceAll('_', ' ');
    params.push({ name, description: name === 'id' || name.endsWith('_id') ? `Id of the ${owner}` : `The ${owner}` });
  });
  return params;
}

function fieldsOf(schema: JsonSchema): FieldSpec[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {})
    .filter(([, property]) => !property.deprecated)
    .map(([name, property]) => fieldOf(name, property, required.has(name)));
}

const SCALAR_TYPES: readonly string[] = ['string', 'integer', 'number', 'boolean'];

function fieldOf(name: string, property: JsonSchema, required: boolean): FieldSpec {
  // `x.nullable()` is `anyOf: [x, {type: 'null'}]`.
  const variants = property.anyOf ?? [property];
  const nonNull = variants.filter((v) => v.type !== 'null');
  const nullable = nonNull.length < variants.length;
  const schema: JsonSchema = nonNull.length === 1 ? { ...nonNull[0], ...outerOf(property) } : property;

  let kind: FieldKind = 'json';
  let itemFields: FieldSpec['itemFields'];
  let choices = choicesOf(schema);
  const type = typeof schema.type === 'string' ? schema.type : undefined;
  if (choices) kind = 'string';
  else if (type && SCALAR_TYPES.includes(type)) kind = type as ScalarKind;
  else if (type === 'array' && schema.items && isStringLike(schema.items)) {
    kind = 'strings';
    choices = choicesOf(schema.items);
  } else if (type === 'array' && schema.items?.type === 'object' && schema.items.properties) {
    const fields = Object.entries(schema.items.properties).map(([field, s]) => ({
      name: field,
      kind: scalarKindOf(s),
    }));
    if (fields.every((f) => f.kind !== undefined)) {
      kind = 'objects';
      itemFields = fields as { name: string; kind: ScalarKind }[];
    } else kind = 'json-items';
  } else if (type === 'array' && schema.items) kind = 'json-items';
  else if (type === 'object' && isObjectOfScalars(schema)) kind = 'record';

  // `contact_id` → --contact, `contact_ids` → --contact (repeatable); an id of something outside
  // Convo (a channel's `external_id`, Meta's) keeps its whole name.
  const idField = /_ids?$/.test(name) && name !== 'external_id';
  const base = idField ? name.replace(/_ids?$/, '') : name;
  const repeatable = kind === 'strings' || kind === 'record' || kind === 'objects' || kind === 'json-items';
  const option = (repeatable && !idField ? singular(base) : base).replaceAll('_', '-');
  const placeholder = idField
    ? 'id'
    : kind === 'record'
      ? 'key=value'
      : kind === 'objects'
        ? (itemFields ?? []).map((f) => f.name).join(':')
        : kind === 'json' || kind === 'json-items'
          ? 'json'
          : option;

  return {
    name,
    option,
    placeholder,
    kind,
    required,
    nullable,
    choices,
    itemFields,
    description: describeField({ base, idField, kind, schema, nullable, itemFields, choices }),
  };
}

/** Keys written on the nullable wrapper itself (`description`, `default`) rather than on its variants. */
function outerOf(property: JsonSchema): JsonSchema {
  const { anyOf: _anyOf, ...outer } = property;
  return outer;
}

function scalarKindOf(schema: JsonSchema): ScalarKind | undefined {
  const type = typeof schema.type === 'string' ? schema.type : undefined;
  return type && SCALAR_TYPES.includes(type) ? (type as ScalarKind) : undefined;
}

/** A string, an enum of strings, a string constant, or a union of those. */
function isStringLike(schema: JsonSchema): boolean {
  if (schema.anyOf) return schema.anyOf.every(isStringLike);
  if (schema.enum) return schema.enum.every((v) => typeof v === 'string');
  if (schema.const !== undefined) return typeof schema.const === 'string';
  return schema.type === 'string';
}

/** The allowed strings of an enum, a constant or a union of them; undefined when any string goes. */
function choicesOf(schema: JsonSchema): string[] | undefined {
  if (schema.anyOf) {
    const parts = schema.anyOf.filter((s) => s.type !== 'null').map(choicesOf);
    return parts.length > 0 && parts.every((p) => p !== undefined) ? parts.flat() : undefined;
  }
  if (schema.enum?.every((v) => typeof v === 'string')) return schema.enum as string[];
  if (typeof schema.const === 'string') return [schema.const];
  return undefined;
}

/** A map of scalar values (`attributes`), or an object whose properties are all scalars (`from: {phone, name}`). */
function isObjectOfScalars(schema: JsonSchema): boolean {
  const scalarOrNull = (s: JsonSchema): boolean =>
    s.anyOf ? s.anyOf.every(scalarOrNull) : s.type === 'null' || scalarKindOf(s) !== undefined || isStringLike(s);
  if (schema.properties)
    return Object.values(schema.properties).every(scalarOrNull) && typeof schema.additionalProperties !== 'object';
  return typeof schema.additionalProperties === 'object' && scalarOrNull(schema.additionalProperties);
}

function describeField(field: {
  base: string;
  idField: boolean;
  kind: FieldKind;
  schema: JsonSchema;
  nullable: boolean;
  itemFields: FieldSpec['itemFields'];
  choices: string[] | undefined;
}): string {
  const { schema } = field;
  const parts: string[] = [];
  if (schema.description) parts.push(trimPeriod(schema.description));
  else if (field.idField) parts.push(`Id of the ${field.base.replaceAll('_', ' ')}`);
  if (schema.format)
    parts.push(`format ${schema.format}${schema.example !== undefined ? `, e.g. ${String(schema.example)}` : ''}`);
  else if (
    !schema.description &&
    !field.idField &&
    schema.type === 'string' &&
    !schema.enum &&
    schema.maxLength !== undefined
  ) {
    parts.push(
      schema.minLength
        ? `${schema.minLength} to ${schema.maxLength} characters`
        : `at most ${schema.maxLength} characters`,
    );
  }
  if (!schema.format && schema.example !== undefined) parts.push(`e.g. ${String(schema.example)}`);
  if (field.kind === 'strings') {
    const item = schema.items;
    const values = field.choices
      ? ` (one of: ${field.choices.join(', ')})`
      : item?.example !== undefined
        ? ` (e.g. ${String(item.example)})`
        : '';
    parts.push(`repeatable, one ${singular(field.base)} each${values}`);
  }
  if (field.kind === 'record') {
    const keys = schema.properties ? ` (keys: ${Object.keys(schema.properties).join(', ')})` : '';
    parts.push(`repeatable key=value${keys} (key:=JSON for a number, boolean or null)`);
  }
  if (field.kind === 'objects') {
    const item = schema.items?.properties ?? {};
    const notes = Object.entries(item).flatMap(([name, s]) =>
      s.description ? [`${name}: ${trimPeriod(s.description)}`] : [],
    );
    parts.push(
      `repeatable ${(field.itemFields ?? []).map((f) => f.name).join(':')}${notes.length ? ` (${notes.join('; ')})` : ''}`,
    );
  }
  if (field.kind === 'json-items') {
    const types = (schema.items?.oneOf ?? schema.items?.anyOf ?? [])
      .map((v) => v.properties?.type?.const)
      .filter((t) => typeof t === 'string');
    parts.push(`repeatable, one JSON value each${types.length ? ` (type: ${types.join(', ')})` : ''}`);
  }
  if (field.kind === 'json') parts.push('as JSON');
  if (field.nullable) parts.push('"" sends null');
  if (schema.default !== undefined) parts.push(`default: ${String(schema.default)}`);
  return parts.join('; ');
}

const trimPeriod = (text: string) => text.replace(/\.\s*$/, '');

/** `tags` → `tag`, `categories` → `category`, `addresses` → `address`; `status` stays. */
export function singular(word: string): string {
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (/(?:ss|x|ch|sh)es$/.test(word)) return word.slice(0, -2);
  if (/(?:ss|us|is)$/.test(word)) return word;
  if (word.endsWith('s')) return word.slice(0, -1);
  return word;
}

declare const __CONVO_OPERATION_SPECS__: Record<OperationId, OperationSpec> | undefined;

let computedSpecs: Promise<Record<OperationId, OperationSpec>> | undefined;

/**
 * The operation specs: inlined by the build, or computed from @convo/core when running from
 * source (tests, `tsx src/bin.ts`), once per process rather than at every command.
 */
export function loadOperationSpecs(): Promise<Record<OperationId, OperationSpec>> {
  if (typeof __CONVO_OPERATION_SPECS__ !== 'undefined') return Promise.resolve(__CONVO_OPERATION_SPECS__);
  computedSpecs ??= import('@convo/core').then(({ endpoints }) => describeOperations(endpoints));
  return computedSpecs;
}
