import { EventType, WorkflowStep, buildOpenApiDocument, endpoints } from '@convo/core';
import { describe, expect, it } from 'vitest';
import { renderDocsPage } from './docs-page.js';

describe('the /docs page', () => {
  const doc = buildOpenApiDocument();
  const html = renderDocsPage(doc);
  const section = (id: string) => {
    const start = html.indexOf(`<section id="${id}">`);
    expect(start, id).toBeGreaterThanOrEqual(0);
    return html.slice(start, html.indexOf('</section>', start));
  };

  it('renders every schema, parameter, body and response with a type: nothing is "any"', () => {
    expect(html).not.toContain('class="any"');
  });

  it('lists every operation in its table of contents', () => {
    for (const id of Object.keys(endpoints)) expect(html).toContain(`<a href="#op-${id}">`);
  });

  it('says which step types and which events exist, with the fields of each', () => {
    const steps = section('schema-WorkflowStep');
    for (const option of WorkflowStep.options) {
      const type = option.shape.type.value;
      expect(steps).toContain(`<code>type</code>: <code>&quot;${type}&quot;</code>`);
    }
    expect(steps).toContain('<code>content</code> <b>required</b>');
    const events = section('schema-Event');
    for (const type of EventType.options) expect(events).toContain(`<code>&quot;${type}&quot;</code>`);
  });

  it('shows a request body inline, nullables as "| null", and maps as maps', () => {
    const create = section('op-contacts.create');
    expect(create).toContain('<h4>Body: <a href="#schema-CreateContactBody">CreateContactBody</a></h4>');
    expect(create).toContain('<code>phone</code> <b>required</b>');
    expect(create).toMatch(/<code>email<\/code><\/td><td>string <small>\(email[^<]*<\/small> \| null<\/td>/);
    expect(section('schema-Contact')).toContain('map of string');
  });

  it('shows an example request and answer for every operation, from the contract', () => {
    for (const [id, op] of Object.entries(endpoints)) {
      const text = section(`op-${id}`);
      expect(text, id).toContain('<h4>Example</h4>');
      if ('body' in op) expect(text, id).toMatch(/<h4>Example<\/h4><pre>[A-Z]+ [^<]+<\/pre><pre>\{/);
      if ('response' in op) expect(text, id).toMatch(new RegExp(`<p>Answer <code>${op.status}</code></p><pre>\\{`));
    }
    expect(section('op-contacts.create')).toContain('&quot;phone&quot;: &quot;+819012345678&quot;');
  });

  it('names the headers of each response', () => {
    expect(section('op-contacts.create')).toContain('<code>X-RateLimit-Remaining</code>');
  });
});
