/**
 * Examples for the OpenAPI document and /docs, made from a JSON Schema: its own `example` or `default`, else a
 * first choice, else a value within its bounds. A test parses each with the operation's zod schema.
 */
import { ID_PREFIXES, type IdKind } from './common.js';
import { requiredAlternatives } from './json-schema.js';

type JsonSchema = Record<string, unknown>;

const BY_FORMAT: Record<string, string> = {
  'date-time': '2026-11-22T10:15:30.123Z',
  email: 'ana@example.com',
  e164: '+14155550123',
  uri: 'https://example.com/webhooks/convo',
  url: 'https://example.com/webhooks/convo',
};

const MAX_DEPTH = 12;

const ULID = '01JD5Q3R8Z6X4W2V0T9S7P5N3M';

/** An id that reads as one (`Contact` → `ct_…`); undefined for components that have no id prefix. */
function exampleId(component: string | undefined): string | undefined {
  const kind = component && `${component.charAt(0).toLowerCase()}${component.slice(1)}`;
  return kind && kind in ID_PREFIXES ? `${ID_PREFIXES[kind as IdKind]}_${ULID}` : undefined;
}

/** Plain strings named like these get a value that reads as one. */
const BY_NAME: Record<string, unknown> = {
  contact_id: exampleId('Contact'),
  conversation_id: exampleId('Conversation'),
  endpoint_id: exampleId('WebhookEndpoint'),
  event_id: exampleId('Event'),
  workflow_id: exampleId('Workflow'),
  name: 'Ana Souza',
  phone: '+14155550123',
  content: 'Hi Ana! Your order has shipped.',
  url: 'https://example.com/webhooks/convo',
  description: 'Order notifications',
  number: '1001',
  currency: 'USD',
  events: ['order.placed'],
};

/** An inline object under `contact` is a contact, so its id reads as one; other fields stay in their component. */
function nestedComponent(property: string, component: string | undefined): string | undefined {
  const named = property.charAt(0).toUpperCase() + property.slice(1);
  return exampleId(named) ? named : component;
}

interface Context {
  /** The component whose fields are being filled. */
  component?: string | undefined;
  property?: string | undefined;
}

export function exampleOf(
  schema: JsonSchema | undefined,
  components: Record<string, JsonSchema>,
  depth = 0,
  context: Context = {},
): unknown {
  if (!schema || depth > MAX_DEPTH) return null;
  if (typeof schema.$ref === 'string') {
    const component = schema.$ref.split('/').pop() as string;
    return exampleOf(components[component], components, depth + 1, { component, property: context.property });
  }
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined) return schema.default;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const alternatives = requiredAlternatives(schema);
  const variants = (schema.oneOf ?? schema.anyOf) as JsonSchema[] | undefined;
  if (variants && !alternatives) {
    const chosen = variants.find((v) => v.type !== 'null') ?? variants[0];
    return exampleOf(chosen, components, depth + 1, context);
  }
  const type = Array.isArray(schema.type) ? (schema.type as string[]).find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'string': {
      if (typeof schema.format === 'string' && BY_FORMAT[schema.format]) return BY_FORMAT[schema.format];
      const id = context.property === 'id' ? exampleId(context.component) : undefined;
      if (id) return id;
      const named = context.property === undefined ? undefined : BY_NAME[context.property];
      if (typeof named === 'string') return named;
      const min = typeof schema.minLength === 'number' ? schema.minLength : 1;
      return 'example'.padEnd(min, 'x');
    }
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number'
        ? Math.max(schema.minimum, Math.min(1, Number(schema.maximum ?? 1)))
        : 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array': {
      const named = context.property === undefined ? undefined : BY_NAME[context.property];
      if (Array.isArray(named)) return named;
      const item = exampleOf(schema.items as JsonSchema, components, depth + 1, { component: context.component });
      return Array.from({ length: Math.max(1, Number(schema.minItems ?? 1)) }, () => item);
    }
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      if (!schema.properties && schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        const key = exampleOf((schema.propertyNames as JsonSchema) ?? { type: 'string' }, components, depth + 1);
        return {
          [String(key)]: exampleOf(schema.additionalProperties as JsonSchema, components, depth + 1, {
            component: context.component,
          }),
        };
      }
      // Every required field, and the first of the fields one of which is required.
      const wanted = new Set([...((schema.required as string[] | undefined) ?? []), ...(alternatives?.[0] ?? [])]);
      return Object.fromEntries(
        Object.entries(properties)
          .filter(([name]) => wanted.has(name))
          .map(([name, property]) => [
            name,
            exampleOf(property, components, depth + 1, {
              component: nestedComponent(name, context.component),
              property: name,
            }),
          ]),
      );
    }
    default:
      return null;
  }
}
