import * as z from 'zod';
import { Id, Timestamp, dateTimeInput, listOf, pagination, text } from './common.js';
import { EVENT_TYPES } from './event-types.js';

/** Webhook endpoints per account (Stripe's number): each event fans out to all of them. */
export const MAX_WEBHOOK_ENDPOINTS = 16;

export const WebhookEndpointStatus = z.enum(['enabled', 'disabled']).meta({ id: 'WebhookEndpointStatus' });

/** A subscription: event types, or `["*"]` for all of them. */
export const WebhookEventFilter = z
  .array(z.enum([...EVENT_TYPES, '*']))
  .min(1)
  .max(20)
  .meta({ description: 'Event types to receive, or `["*"]` for every type.' });

/** A host name, or an IPv6 literal in brackets as a URL writes it (whether it is public, the server decides). */
const WEBHOOK_HOST = new RegExp(`${z.regexes.hostname.source}|^\\[[0-9A-Fa-f:.]+\\]$`);

export const WebhookUrl = z
  .string()
  // zod's URL check trims the value and drops tabs and newlines: refused first, so a URL reads back as sent.
  .check((ctx) => {
    if (/\s/.test(ctx.value))
      ctx.issues.push({
        code: 'invalid_format',
        format: 'url',
        input: ctx.value,
        message: 'Must not contain whitespace: send the URL exactly as it is to be called',
      });
  })
  .check(
    z.url({
      protocol: /^https?$/,
      hostname: WEBHOOK_HOST,
      error: 'Must be an absolute URL: https, or plain http where the server accepts private webhooks',
    }),
  )
  .max(2048)
  .meta({
    description:
      'Where deliveries are POSTed. https only (plain http and private addresses only where the server allows them).',
  });

export const WebhookEndpoint = z
  .object({
    id: Id,
    url: z.string(),
    events: z.array(z.string()),
    description: z.string().nullable(),
    status: WebhookEndpointStatus,
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'WebhookEndpoint' });
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

/** The endpoint as its creation returns it: with the signing secret when the creation made one. */
export const CreatedWebhookEndpoint = WebhookEndpoint.extend({
  secret: z.string().optional().meta({
    description:
      'Only when the account had no webhook key: the one this creation made (a webhook key, `whsec_…`), shown this once. Verify deliveries with it; it is listed, rotated and revoked like any other key.',
  }),
}).meta({ id: 'CreatedWebhookEndpoint' });
export type CreatedWebhookEndpoint = z.infer<typeof CreatedWebhookEndpoint>;

export const WebhookEndpointList = listOf(WebhookEndpoint, 'WebhookEndpointList');
export type WebhookEndpointList = z.infer<typeof WebhookEndpointList>;

export const CreateWebhookEndpointBody = z
  .strictObject({
    url: WebhookUrl,
    events: WebhookEventFilter,
    description: text(0, 500).nullable().optional(),
  })
  .meta({ id: 'CreateWebhookEndpointBody' });
export type CreateWebhookEndpointBody = z.input<typeof CreateWebhookEndpointBody>;

export const UpdateWebhookEndpointBody = z
  .strictObject({
    url: WebhookUrl.optional(),
    events: WebhookEventFilter.optional(),
    description: text(0, 500).nullable().optional(),
    status: WebhookEndpointStatus.optional().meta({
      description: '`enabled` re-enables an endpoint that was disabled (by hand or by a 410).',
    }),
  })
  .meta({ id: 'UpdateWebhookEndpointBody' });
export type UpdateWebhookEndpointBody = z.input<typeof UpdateWebhookEndpointBody>;

export const ListWebhookEndpointsQuery = z.strictObject({ ...pagination });
export type ListWebhookEndpointsQuery = z.input<typeof ListWebhookEndpointsQuery>;

export const DeliveryStatus = z.enum(['pending', 'succeeded', 'failed']).meta({ id: 'DeliveryStatus' });

export const DeliveryAttempt = z
  .object({
    at: Timestamp,
    status_code: z.int().nullable().meta({ description: "The receiver's HTTP status; null when no response arrived." }),
    duration_ms: z.int().min(0),
    error: z.string().nullable().meta({ description: 'Why the attempt failed; null for a 2xx.' }),
  })
  .meta({ id: 'DeliveryAttempt' });

/** The event a delivery carries: one of the account's, or the `ping` of an endpoint's test. */
export const DeliveryEventType = z.enum([...EVENT_TYPES, 'ping']).meta({ id: 'DeliveryEventType' });

export const WebhookDelivery = z
  .object({
    id: Id,
    event_id: Id,
    event_type: DeliveryEventType,
    endpoint_id: Id,
    status: DeliveryStatus,
    attempts: z.array(DeliveryAttempt),
    next_attempt_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const WebhookDeliveryList = listOf(WebhookDelivery, 'WebhookDeliveryList');
export type WebhookDeliveryList = z.infer<typeof WebhookDeliveryList>;

export const ListDeliveriesQuery = z.strictObject({ ...pagination, status: DeliveryStatus.optional() });
export type ListDeliveriesQuery = z.input<typeof ListDeliveriesQuery>;

export const WebhookEndpointIdParams = z.strictObject({ id: Id });
export const WebhookDeliveryParams = z.strictObject({ id: Id, delivery_id: Id });

export const ReplayDeliveriesBody = z
  .strictObject({
    since: dateTimeInput('Deliveries created at or after this time.'),
    until: dateTimeInput('Deliveries created before this time.'),
    status: z
      .enum(['failed', 'succeeded'])
      .default('failed')
      .meta({ description: 'Which deliveries of the window to send again (`failed` by default).' }),
  })
  .meta({ id: 'ReplayDeliveriesBody' });
export type ReplayDeliveriesBody = z.input<typeof ReplayDeliveriesBody>;

export const DeliveryReplay = z
  .object({
    endpoint_id: Id,
    since: Timestamp,
    until: Timestamp,
    status: z.enum(['failed', 'succeeded']),
    replayed: z.int().min(0).meta({ description: 'How many deliveries were queued again now.' }),
  })
  .meta({ id: 'DeliveryReplay' });
export type DeliveryReplay = z.infer<typeof DeliveryReplay>;
