import { type OpenApiDocument, requiredAlternatives } from '@convo/core';

const escapeHtml = (value: unknown): string =>
  String(value).replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );

/** Inline `code` spans of the descriptions, after escaping. */
const prose = (text: unknown): string => escapeHtml(text ?? '').replace(/`([^`]+)`/g, '<code>$1</code>');

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document's JSON Schema, walked key by key.
type Json = Record<string, any>;

/** The component a `$ref` names: `#/components/schemas/Contact` → `Contact`. */
const refName = (schema: Json): string => String(schema.$ref).split('/').pop() as string;

const literal = (value: unknown) => `<code>${escapeHtml(JSON.stringify(value))}</code>`;

/** The value of the property every variant of a union fixes with `const` (`type` of a step or an event). */
function discriminatorOf(variants: Json[]): string | undefined {
  const [first] = variants;
  if (!first?.properties) return undefined;
  return Object.keys(first.properties).find((name) => variants.every((v) => v.properties?.[name]?.const !== undefined));
}

/**
 * A schema as a short readable type: `Contact`, `string (e164)`, `array of TagName`, `Contact |
 * null`, `map of string to …`. Unions use `|` throughout, `null` among them for a nullable value.
 * A schema that says nothing renders as `any` (marked, and a test keeps the document free of it).
 */
function typeOf(schema: Json | undefined): string {
  if (!schema) return '';
  if (schema.$ref) {
    const name = refName(schema);
    return `<a href="#schema-${escapeHtml(name)}">${escapeHtml(name)}</a>`;
  }
  const variants = requiredAlternatives(schema) ? undefined : ((schema.anyOf ?? schema.oneOf) as Json[] | undefined);
  if (variants) {
    const key = discriminatorOf(variants);
    return variants
      .map((v) => (key ? `{${escapeHtml(key)}: ${literal(v.properties[key].const)}, …}` : typeOf(v)))
      .join(' | ');
  }
  if (schema.const !== undefined) return literal(schema.const);
  if (schema.enum) return (schema.enum as unknown[]).map(literal).join(' | ');
  if (Array.isArray(schema.type))
    return (schema.type as string[]).map((type) => typeOf({ ...schema, type })).join(' | ');
  if (schema.type === 'array') return `array of ${typeOf(schema.items)}`;
  if (
    schema.type === 'object' &&
    !schema.properties &&
    schema.additionalProperties &&
    typeof schema.additionalProperties === 'object'
  ) {
    return `map of ${typeOf(schema.propertyNames ?? { type: 'string' })} to ${typeOf(schema.additionalProperties)}`;
  }
  if (!schema.type) return '<span class="any">any</span>';
  const bounds = [
    schema.format ? schema.format : '',
    schema.minimum !== undefined || schema.maximum !== undefined
      ? `${schema.minimum ?? ''}..${schema.maximum ?? ''}`
      : '',
    schema.minLength !== undefined || schema.maxLength !== undefined
      ? `length ${schema.minLength ?? 0}..${schema.maxLength ?? ''}`
      : '',
    schema.minItems !== undefined || schema.maxItems !== undefined
      ? `${schema.minItems ?? 0}..${schema.maxItems ?? ''} items`
      : '',
  ].filter(Boolean);
  return `${escapeHtml(schema.type)}${bounds.length ? ` <small>(${escapeHtml(bounds.join(', '))})</small>` : ''}`;
}

/** Rows of an object's fields; an inline object's own fields follow as `parent.child`. */
function fieldRows(schema: Json, prefix = ''): string[] {
  const required = new Set<string>(schema.required ?? []);
  return Object.entries((schema.properties ?? {}) as Record<string, Json>).flatMap(([name, property]) => {
    const path = `${prefix}${name}`;
    const row = `<tr><td><code>${escapeHtml(path)}</code>${required.has(name) ? ' <b>required</b>' : ''}</td><td>${typeOf(property)}</td><td>${prose(property.description ?? '')}${
      property.default !== undefined ? ` Default ${literal(property.default)}.` : ''
    }</td></tr>`;
    return property.type === 'object' && property.properties ? [row, ...fieldRows(property, `${path}.`)] : [row];
  });
}

const table = (rows: string[]) => `<table><tr><th>Field</th><th>Type</th><th></th></tr>${rows.join('')}</table>`;

/** A schema's fields; a union's variants one after another, each under the value that picks it. */
function fieldsOf(schema: Json | undefined): string {
  if (!schema) return '';
  const alternatives = requiredAlternatives(schema);
  if (alternatives) {
    const needed = alternatives
      .map((fields) => fields.map((f) => `<code>${escapeHtml(f)}</code>`).join(' and '))
      .join(' or ');
    return `${table(fieldRows(schema))}<p>Also required: ${needed}.</p>`;
  }
  const variants = (schema.oneOf ?? schema.anyOf) as Json[] | undefined;
  if (variants) {
    const key = discriminatorOf(variants);
    if (!key) return `<p>One of: ${typeOf(schema)}</p>`;
    return `<p>One of these, by <code>${escapeHtml(key)}</code>:</p>${variants
      .map((v) => `<h4><code>${escapeHtml(key)}</code>: ${literal(v.properties[key].const)}</h4>${table(fieldRows(v))}`)
      .join('')}`;
  }
  if (!schema.properties) return `<p>${typeOf(schema)}</p>`;
  return table(fieldRows(schema));
}

const pretty = (value: unknown) => `<pre>${escapeHtml(JSON.stringify(value, null, 2))}</pre>`;

/** The operation's example request (path parameters as placeholders) and its successful answer. */
function exampleOf(method: string, path: string, op: Json): string {
  const body = op.requestBody?.content?.['application/json']?.example;
  const [status, success] = Object.entries(op.responses as Record<string, Json>)[0] ?? [];
  const answer = success?.content?.['application/json']?.example;
  return `<h4>Example</h4><pre>${escapeHtml(`${method.toUpperCase()} ${path}`)}</pre>${body === undefined ? '' : pretty(body)}<p>Answer <code>${escapeHtml(status)}</code></p>${
    answer === undefined ? '' : pretty(answer)
  }`;
}

/**
 * The API reference at /docs: one self-contained page rendered on the server from the OpenAPI
 * document, with no scripts and nothing fetched from elsewhere.
 */
export function renderDocsPage(doc: OpenApiDocument): string {
  const schemasById = doc.components.schemas as Record<string, Json>;
  const resolve = (schema: Json | undefined): Json | undefined =>
    schema?.$ref ? schemasById[refName(schema)] : schema;
  const operations: string[] = [];
  const contents = new Map<string, string[]>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods as Record<string, Json>)) {
      const tag = String(op.tags?.[0] ?? 'other');
      contents.set(tag, [
        ...(contents.get(tag) ?? []),
        `<li><a href="#op-${escapeHtml(op.operationId)}">${escapeHtml(method.toUpperCase())} ${escapeHtml(path)}</a> ${prose(op.summary)}</li>`,
      ]);
      const parameters = ((op.parameters ?? []) as Json[]).map((p) =>
        p.$ref ? (doc.components.parameters as Record<string, Json>)[refName(p)] : p,
      ) as Json[];
      const body = op.requestBody?.content?.['application/json']?.schema as Json | undefined;
      const responses = Object.entries(op.responses as Record<string, Json>)
        .map(([status, r]) => {
          const headers = Object.keys(r.headers ?? {});
          return `<li><code>${escapeHtml(status)}</code> ${prose(r.description)} ${typeOf(r.content?.['application/json']?.schema)}${
            headers.length
              ? ` <small>Headers: ${headers.map((h) => `<code>${escapeHtml(h)}</code>`).join(', ')}</small>`
              : ''
          }</li>`;
        })
        .join('');
      operations.push(`<section id="op-${escapeHtml(op.operationId)}">
<h3><span class="m ${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span> <code>${escapeHtml(path)}</code></h3>
<p>${prose(op.summary)}. ${prose(op.description ?? '')} <small>Operation <code>${escapeHtml(op.operationId)}</code>.</small></p>
${parameters.length ? `<h4>Parameters</h4><table><tr><th>Name</th><th>In</th><th>Type</th><th></th></tr>${parameters.map((p) => `<tr><td><code>${escapeHtml(p.name)}</code>${p.required ? ' <b>required</b>' : ''}</td><td>${escapeHtml(p.in)}</td><td>${typeOf(p.schema)}</td><td>${prose(p.description ?? '')}</td></tr>`).join('')}</table>` : ''}
${body ? `<h4>Body: ${typeOf(body)}</h4>${fieldsOf(resolve(body))}` : ''}
<h4>Responses</h4><ul>${responses}</ul>
${exampleOf(method, path, op)}
</section>`);
    }
  }
  const schemas = Object.entries(schemasById)
    .map(
      ([name, schema]) =>
        `<section id="schema-${escapeHtml(name)}"><h3>${escapeHtml(name)}</h3>${schema.description ? `<p>${prose(schema.description)}</p>` : ''}${fieldsOf(schema)}</section>`,
    )
    .join('\n');
  const toc = [...contents].map(([tag, items]) => `<li>${escapeHtml(tag)}<ul>${items.join('')}</ul></li>`).join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info.title)} reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d2330;overflow-wrap:anywhere}
code{background:#f1f3f7;padding:0 .25em;border-radius:3px}table{border-collapse:collapse;width:100%;margin:.5rem 0;display:block;overflow-x:auto}
td,th{border-bottom:1px solid #e3e6ec;text-align:left;padding:.3rem .5rem;vertical-align:top}section{margin:1.5rem 0;padding-bottom:1rem;border-bottom:2px solid #eef0f4}
.m{font:bold 12px monospace;padding:.15em .5em;border-radius:3px;color:#fff}.get{background:#2f7d32}.post{background:#1565c0}.patch{background:#b26a00}.delete{background:#b71c1c}
nav ul{padding-left:1.2rem}pre{background:#f6f8fa;padding:.5rem;overflow-x:auto;font-size:13px}
</style></head><body>
<h1>${escapeHtml(doc.info.title)} <small>v${escapeHtml(doc.info.version)}</small></h1>
<p>${prose(doc.info.description)}</p>
<p>The machine-readable description is at <a href="/v1/openapi.json"><code>/v1/openapi.json</code></a> (OpenAPI 3.1).</p>
<nav><h2>Contents</h2><ul>${toc}<li><a href="#schemas">Schemas</a></li></ul></nav>
<h2>Operations</h2>
${operations.join('\n')}
<h2 id="schemas">Schemas</h2>
${schemas}
</body></html>`;
}
