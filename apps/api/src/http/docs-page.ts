import type { OpenApiDocument } from '@convo/core';

const escapeHtml = (value: unknown): string =>
  String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/** Inline `code` spans of the descriptions, after escaping. */
const prose = (text: unknown): string => escapeHtml(text ?? '').replace(/`([^`]+)`/g, '<code>$1</code>');

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document's JSON Schema, walked key by key.
type Json = Record<string, any>;

/** A schema as a short readable type: `Contact`, `string (e164)`, `array of TagName`… */
function typeOf(schema: Json | undefined): string {
  if (!schema) return '';
  if (schema.$ref) {
    const name = String(schema.$ref).split('/').pop();
    return `<a href="#schema-${escapeHtml(name)}">${escapeHtml(name)}</a>`;
  }
  if (schema.anyOf) return (schema.anyOf as Json[]).map(typeOf).join(' | ');
  if (schema.enum) return (schema.enum as unknown[]).map((v) => `<code>${escapeHtml(JSON.stringify(v))}</code>`).join(' | ');
  if (schema.type === 'array') return `array of ${typeOf(schema.items)}`;
  const bounds = [
    schema.format ? schema.format : '',
    schema.minimum !== undefined || schema.maximum !== undefined ? `${schema.minimum ?? ''}..${schema.maximum ?? ''}` : '',
    schema.minLength !== undefined || schema.maxLength !== undefined ? `length ${schema.minLength ?? 0}..${schema.maxLength ?? ''}` : '',
  ].filter(Boolean);
  return `${escapeHtml(schema.type ?? 'any')}${bounds.length ? ` <small>(${escapeHtml(bounds.join(', '))})</small>` : ''}`;
}

function fieldsTable(schema: Json | undefined): string {
  if (!schema?.properties) return `<p>${typeOf(schema)}</p>`;
  const required = new Set<string>(schema.required ?? []);
  const rows = Object.entries(schema.properties as Record<string, Json>).map(
    ([name, property]) =>
      `<tr><td><code>${escapeHtml(name)}</code>${required.has(name) ? ' <b>required</b>' : ''}</td><td>${typeOf(property)}</td><td>${prose(property.description ?? '')}${
        property.default !== undefined ? ` Default <code>${escapeHtml(JSON.stringify(property.default))}</code>.` : ''
      }</td></tr>`,
  );
  return `<table><tr><th>Field</th><th>Type</th><th></th></tr>${rows.join('')}</table>`;
}

/**
 * The API reference at /docs: one self-contained page rendered on the server from the OpenAPI
 * document, with no scripts and nothing fetched from elsewhere.
 */
export function renderDocsPage(doc: OpenApiDocument): string {
  const operations: string[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods as Record<string, Json>)) {
      const parameters = ((op.parameters ?? []) as Json[]).filter((p) => !p.$ref);
      const body = op.requestBody?.content?.['application/json']?.schema as Json | undefined;
      const responses = Object.entries(op.responses as Record<string, Json>)
        .map(([status, r]) => `<li><code>${escapeHtml(status)}</code> ${prose(r.description)} ${typeOf(r.content?.['application/json']?.schema)}</li>`)
        .join('');
      operations.push(`<section id="op-${escapeHtml(op.operationId)}">
<h3><span class="m ${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span> <code>${escapeHtml(path)}</code></h3>
<p>${prose(op.summary)}. ${prose(op.description ?? '')} <small>Operation <code>${escapeHtml(op.operationId)}</code>.</small></p>
${parameters.length ? `<h4>Parameters</h4><table><tr><th>Name</th><th>In</th><th>Type</th><th></th></tr>${parameters.map((p) => `<tr><td><code>${escapeHtml(p.name)}</code>${p.required ? ' <b>required</b>' : ''}</td><td>${escapeHtml(p.in)}</td><td>${typeOf(p.schema)}</td><td>${prose(p.description ?? '')}</td></tr>`).join('')}</table>` : ''}
${body ? `<h4>Body</h4>${typeOf(body)}` : ''}
<h4>Responses</h4><ul>${responses}</ul>
</section>`);
    }
  }
  const schemas = Object.entries(doc.components.schemas as Record<string, Json>)
    .map(([name, schema]) => `<section id="schema-${escapeHtml(name)}"><h3>${escapeHtml(name)}</h3>${fieldsTable(schema)}</section>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info.title)} reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d2330}
code{background:#f1f3f7;padding:0 .25em;border-radius:3px}table{border-collapse:collapse;width:100%;margin:.5rem 0}
td,th{border-bottom:1px solid #e3e6ec;text-align:left;padding:.3rem .5rem;vertical-align:top}section{margin:1.5rem 0;padding-bottom:1rem;border-bottom:2px solid #eef0f4}
.m{font:bold 12px monospace;padding:.15em .5em;border-radius:3px;color:#fff}.get{background:#2f7d32}.post{background:#1565c0}.patch{background:#b26a00}.delete{background:#b71c1c}
</style></head><body>
<h1>${escapeHtml(doc.info.title)} <small>v${escapeHtml(doc.info.version)}</small></h1>
<p>${prose(doc.info.description)}</p>
<p>The machine-readable description is at <a href="/v1/openapi.json"><code>/v1/openapi.json</code></a> (OpenAPI 3.1).</p>
<h2>Operations</h2>
${operations.join('\n')}
<h2>Schemas</h2>
${schemas}
</body></html>`;
}
