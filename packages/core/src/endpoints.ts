import type * as z from 'zod';
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP } from './common.js';
import type { Constraint } from './errors.js';
import {
  AddTagBody,
  Contact,
  ContactIdParams,
  ContactList,
  ContactTagParams,
  CreateContactBody,
  ListContactsQuery,
  MAX_TAGS_PER_CONTACT,
  UpdateContactBody,
} from './contacts.js';
import {
  Conversation,
  ConversationIdParams,
  ConversationList,
  CreateConversationBody,
  ListConversationsQuery,
  UpdateConversationBody,
} from './conversations.js';
import { ListMessagesQuery, Message, MessageIdParams, MessageList, SendMessageBody } from './messages.js';
import { CreateOrderBody, ListOrdersQuery, Order, OrderIdParams, OrderList, UpdateOrderBody } from './orders.js';
import {
  Channel,
  ChannelIdParams,
  ChannelList,
  CreateChannelBody,
  ListChannelsQuery,
  ListTemplatesQuery,
  UpdateChannelBody,
  WhatsAppTemplateList,
} from './channels.js';
import { Event, EventList, ListEventsQuery, SandboxInboundBody, StreamEventsQuery } from './events.js';
import { CreateFileBody, File, FileIdParams, MAX_FILE_BYTES } from './files.js';
import { ListTagsQuery, Tag, TagList, TagParams, UpdateTagBody } from './tags.js';
import {
  CreateWebhookEndpointBody,
  DeliveryReplay,
  ReplayDeliveriesBody,
  ListDeliveriesQuery,
  ListWebhookEndpointsQuery,
  MAX_WEBHOOK_ENDPOINTS,
  UpdateWebhookEndpointBody,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookDeliveryParams,
  CreatedWebhookEndpoint,
  WebhookEndpoint,
  WebhookEndpointIdParams,
  WebhookEndpointList,
} from './webhooks.js';
import {
  CreateWorkflowBody,
  ListRunsQuery,
  ListWorkflowsQuery,
  MAX_IF_DEPTH,
  MAX_STEPS_IN_ALL,
  TriggerWorkflowBody,
  UpdateWorkflowBody,
  Workflow,
  WorkflowIdParams,
  WorkflowRunParams,
  WorkflowList,
  WorkflowRun,
  WorkflowRunList,
} from './workflows.js';

/**
 * A 400 that a request the operation's JSON Schema accepts may still get, because it depends on stored state, on
 * what the platform takes, or on a count the schema cannot state. The OpenAPI document lists them under the 400
 * (`x-refusals`), and the route fuzz fails on any other 400 to a request the schema accepts.
 */
export interface Refusal {
  /** `details.field`; `*` stands for any run of characters (`steps.*url`: `steps.0.url`, `steps.1.then.0.url`). */
  field: string;
  constraint: Constraint;
  /** When it happens, in a sentence. */
  when: string;
}

/** A phone number another contact of the account has. */
const PHONE_TAKEN: Refusal = {
  field: 'phone',
  constraint: 'unique',
  when: 'Another contact of the account has this phone number (`details.existing_id` names it).',
};

/** What a workflow's steps may not be, beyond each step's schema. */
const STEP_REFUSALS: readonly Refusal[] = [
  {
    field: 'steps*',
    constraint: 'max',
    when: `More than ${MAX_STEPS_IN_ALL} steps in all, counting those inside \`if\` steps, or an \`if\` nested more than ${MAX_IF_DEPTH} deep.`,
  },
  {
    field: 'steps.*url',
    constraint: 'format',
    when: "An `http_request` step's URL is not https or not a public address.",
  },
];

/** A date and time the schema takes as ISO 8601 that falls outside the years 0000 to 9999 once in UTC. */
const dateBounds = (field: string): Refusal[] => [
  { field, constraint: 'min', when: `Earlier than ${EARLIEST_TIMESTAMP} once in UTC.` },
  { field, constraint: 'max', when: `Later than ${LATEST_TIMESTAMP} once in UTC.` },
];

const NOT_WHATSAPP: Refusal = {
  field: 'business_account_id',
  constraint: 'unknown',
  when: 'The channel is not a WhatsApp channel.',
};

/** What a key must be allowed to do to call an operation. */
export type Permission = 'read' | 'write';
export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface EndpointDefinition {
  method: HttpMethod;
  /** Relative to `/v1`, with `:name` path parameters. */
  path: string;
  permission: Permission;
  summary: string;
  description?: string;
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
  /** Success status; 204 has no body. */
  status: 200 | 201 | 202 | 204;
  response?: z.ZodType;
  /**
   * The body is `multipart/form-data` (the one exception to JSON bodies): the part `part`, at most
   * `maxBytes`, streamed to storage before the operation runs.
   */
  upload?: { part: string; maxBytes: number };
  /** The answer is a file's bytes (with its own Content-Type), not JSON; `response` describes the file. */
  download?: true;
  /**
   * The answer is a stream of Server-Sent Events (`text/event-stream`) that stays open: each event's
   * `data` is a `response`; `Last-Event-ID` resumes after an event.
   */
  stream?: true;
  /** The 400s beyond the schema (Refusal). */
  refusals?: readonly Refusal[];
}

const endpoint = <const E extends EndpointDefinition>(definition: E): E => definition;

/**
 * The /v1 contract, one entry per operation: the server's routes, the OpenAPI document, the SDK and the CLI all
 * come from it. Operation ids are `<resource>.<verb>` (`contacts.tags.add` for a sub-resource).
 */
export const endpoints = {
  'conversations.list': endpoint({
    method: 'GET',
    path: '/conversations',
    permission: 'read',
    summary: 'List conversations',
    description: 'Most recent activity first (last message, else creation), ties by id descending.',
    query: ListConversationsQuery,
    status: 200,
    response: ConversationList,
  }),
  'conversations.create': endpoint({
    method: 'POST',
    path: '/conversations',
    permission: 'write',
    summary: 'Open a conversation with a contact',
    body: CreateConversationBody,
    status: 201,
    response: Conversation,
  }),
  'conversations.retrieve': endpoint({
    method: 'GET',
    path: '/conversations/:id',
    permission: 'read',
    summary: 'Retrieve a conversation',
    params: ConversationIdParams,
    status: 200,
    response: Conversation,
  }),
  'conversations.update': endpoint({
    method: 'PATCH',
    path: '/conversations/:id',
    permission: 'write',
    summary: 'Change the status of a conversation',
    description:
      'Allowed: active → resolved, active → archived, resolved → active, resolved → archived. `archived` is final. Setting the current status is a no-op.',
    params: ConversationIdParams,
    body: UpdateConversationBody,
    status: 200,
    response: Conversation,
    refusals: [
      {
        field: 'status',
        constraint: 'transition',
        when: "The conversation's status cannot move to the one asked (an archived conversation stays archived).",
      },
    ],
  }),
  'conversations.listMessages': endpoint({
    method: 'GET',
    path: '/conversations/:id/messages',
    permission: 'read',
    summary: 'List the messages of a conversation',
    description: 'Oldest first, ties by id ascending.',
    params: ConversationIdParams,
    query: ListMessagesQuery,
    status: 200,
    response: MessageList,
  }),
  'messages.send': endpoint({
    method: 'POST',
    path: '/messages',
    permission: 'write',
    summary: 'Send a message into a conversation',
    description:
      'Stored `queued`. In a conversation on a channel it is sent to the platform in the background and moves to `sent`, `delivered` and `read` (or `failed`), ' +
      "each change emitting `message.updated`. `text` may be sent only within 24 hours of the contact's last inbound message on that channel " +
      '(else 400 `window`); a WhatsApp `template` at any time. Without a channel the message stays `queued`.',
    body: SendMessageBody,
    status: 201,
    response: Message,
    refusals: [
      { field: 'message', constraint: 'unique', when: '`content` and its alias `message` are both given, and differ.' },
      {
        field: 'conversation_id',
        constraint: 'transition',
        when: 'The conversation is archived, or its channel was deleted or is disabled.',
      },
      {
        field: 'type',
        constraint: 'enum',
        when: 'A `template` message in a conversation on a channel other than WhatsApp.',
      },
      {
        field: 'type',
        constraint: 'window',
        when: 'A message other than a `template` when the contact has not written on the channel within 24 hours.',
      },
      {
        field: 'content',
        constraint: 'unknown',
        when: 'A caption on Messenger or Instagram, whose attachments carry none.',
      },
      {
        field: 'media.file_id',
        constraint: 'format',
        when: "The file's type is not one the platform takes for this message type.",
      },
      {
        field: 'media.file_id',
        constraint: 'max',
        when: 'The file is larger than the platform takes for this message type.',
      },
      {
        field: 'media.url',
        constraint: 'format',
        when: 'The link is not https or not a public address, or its extension names a type the platform does not take.',
      },
      {
        field: 'media.url',
        constraint: 'max',
        when: 'The link is larger than the platform takes for this message type.',
      },
      {
        field: 'template.name',
        constraint: 'enum',
        when: "The channel's business account has no such template, or it is not `APPROVED`.",
      },
      { field: 'template.language', constraint: 'enum', when: 'The template exists, but not in this language.' },
      {
        field: 'template.components',
        constraint: 'min',
        when: "Fewer parameters than the template's placeholders in a component.",
      },
      {
        field: 'template.components',
        constraint: 'max',
        when: "More parameters than the template's placeholders in a component.",
      },
    ],
  }),
  'messages.retrieve': endpoint({
    method: 'GET',
    path: '/messages/:id',
    permission: 'read',
    summary: 'Retrieve a message',
    description: 'Any message of the account, inbound or outbound, with its current delivery status.',
    params: MessageIdParams,
    status: 200,
    response: Message,
  }),
  'files.create': endpoint({
    method: 'POST',
    path: '/files',
    permission: 'write',
    summary: 'Upload a file',
    description:
      "Takes `multipart/form-data` with one part, `file` (at most 100 MiB), and keeps its bytes: send it as a message's media (`media: {file_id}`) or read it back. Inbound media is stored the same way.",
    body: CreateFileBody,
    upload: { part: 'file', maxBytes: MAX_FILE_BYTES },
    status: 201,
    response: File,
  }),
  'files.retrieve': endpoint({
    method: 'GET',
    path: '/files/:id',
    permission: 'read',
    summary: 'Retrieve a file',
    params: FileIdParams,
    status: 200,
    response: File,
  }),
  'files.content': endpoint({
    method: 'GET',
    path: '/files/:id/content',
    permission: 'read',
    summary: "Download a file's bytes",
    description:
      'The bytes with their `Content-Type`, `Content-Length`, `Content-Disposition` (`inline` for images, `attachment` otherwise, with the filename when known) and `ETag` (the SHA-256); `If-None-Match` with that ETag answers 304.',
    params: FileIdParams,
    status: 200,
    response: File,
    download: true,
  }),
  'contacts.list': endpoint({
    method: 'GET',
    path: '/contacts',
    permission: 'read',
    summary: 'List contacts',
    description: 'Newest first, ties by id descending.',
    query: ListContactsQuery,
    status: 200,
    response: ContactList,
  }),
  'contacts.create': endpoint({
    method: 'POST',
    path: '/contacts',
    permission: 'write',
    summary: 'Create a contact',
    body: CreateContactBody,
    status: 201,
    response: Contact,
    refusals: [PHONE_TAKEN],
  }),
  'contacts.retrieve': endpoint({
    method: 'GET',
    path: '/contacts/:id',
    permission: 'read',
    summary: 'Retrieve a contact',
    params: ContactIdParams,
    status: 200,
    response: Contact,
  }),
  'contacts.update': endpoint({
    method: 'PATCH',
    path: '/contacts/:id',
    permission: 'write',
    summary: 'Update a contact',
    description: 'Partial: only the fields sent change. `email: null` clears it; `tags` replaces the whole set.',
    params: ContactIdParams,
    body: UpdateContactBody,
    status: 200,
    response: Contact,
    refusals: [PHONE_TAKEN],
  }),
  'contacts.delete': endpoint({
    method: 'DELETE',
    path: '/contacts/:id',
    permission: 'write',
    summary: 'Delete a contact',
    description: 'Deletes the contact with its conversations and messages; its orders stay, with `contact_id: null`.',
    params: ContactIdParams,
    status: 204,
  }),
  'contacts.tags.add': endpoint({
    method: 'POST',
    path: '/contacts/:id/tags',
    permission: 'write',
    summary: 'Attach a tag to a contact',
    description: 'Attaching a tag the contact already has changes nothing. A contact has at most 50 tags.',
    params: ContactIdParams,
    body: AddTagBody,
    status: 200,
    response: Contact,
    refusals: [{ field: 'tags', constraint: 'max', when: `The contact already has ${MAX_TAGS_PER_CONTACT} tags.` }],
  }),
  'contacts.tags.remove': endpoint({
    method: 'DELETE',
    path: '/contacts/:id/tags/:tag',
    permission: 'write',
    summary: 'Remove a tag from a contact',
    description: 'The tag is URL-encoded in the path. 404 when the contact does not have the tag.',
    params: ContactTagParams,
    status: 200,
    response: Contact,
  }),
  'tags.list': endpoint({
    method: 'GET',
    path: '/tags',
    permission: 'read',
    summary: 'List the tags in use',
    description: 'By name (code-point order), with the number of contacts that have each.',
    query: ListTagsQuery,
    status: 200,
    response: TagList,
  }),
  'tags.update': endpoint({
    method: 'PATCH',
    path: '/tags/:tag',
    permission: 'write',
    summary: 'Rename a tag on every contact',
    description:
      'Each contact keeps the tag in its place under the new name; a contact that already has the new name keeps it once (the tags merge). ' +
      'Renaming to the current name is a no-op. 404 when no contact has the tag.',
    params: TagParams,
    body: UpdateTagBody,
    status: 200,
    response: Tag,
  }),
  'tags.delete': endpoint({
    method: 'DELETE',
    path: '/tags/:tag',
    permission: 'write',
    summary: 'Remove a tag from every contact',
    description: 'The tag is URL-encoded in the path. 404 when no contact has the tag.',
    params: TagParams,
    status: 204,
  }),
  'orders.list': endpoint({
    method: 'GET',
    path: '/orders',
    permission: 'read',
    summary: 'List orders',
    description: 'Newest `placed_at` first, ties by id descending.',
    query: ListOrdersQuery,
    status: 200,
    response: OrderList,
  }),
  'orders.create': endpoint({
    method: 'POST',
    path: '/orders',
    permission: 'write',
    summary: 'Record an order',
    description: "`total_amount` is computed from the items. Without `number`, the account's next number is assigned.",
    body: CreateOrderBody,
    status: 201,
    response: Order,
    refusals: [
      {
        field: 'number',
        constraint: 'unique',
        when: 'Another order of the account has this number (`details.existing_id` names it).',
      },
      {
        field: 'number',
        constraint: 'required',
        when: "No number was given and the account's highest number already has the most digits a number may have.",
      },
      { field: 'items', constraint: 'max', when: "The order's total is larger than the API can represent (2^53 − 1)." },
      ...dateBounds('placed_at'),
    ],
  }),
  'orders.retrieve': endpoint({
    method: 'GET',
    path: '/orders/:id',
    permission: 'read',
    summary: 'Retrieve an order',
    params: OrderIdParams,
    status: 200,
    response: Order,
  }),
  'orders.update': endpoint({
    method: 'PATCH',
    path: '/orders/:id',
    permission: 'write',
    summary: 'Change the status of an order',
    description:
      'Allowed: pending → paid → fulfilled, pending or paid → cancelled, paid or fulfilled → refunded; anything else is 400 `transition`. ' +
      'Each change emits `order.updated`; setting the current status is a no-op.',
    params: OrderIdParams,
    body: UpdateOrderBody,
    status: 200,
    response: Order,
    refusals: [
      {
        field: 'status',
        constraint: 'transition',
        when: "The order's status cannot move to the one asked (see `status`).",
      },
    ],
  }),
  'workflows.list': endpoint({
    method: 'GET',
    path: '/workflows',
    permission: 'read',
    summary: 'List workflows',
    description: 'Newest first, ties by id descending.',
    query: ListWorkflowsQuery,
    status: 200,
    response: WorkflowList,
  }),
  'workflows.create': endpoint({
    method: 'POST',
    path: '/workflows',
    permission: 'write',
    summary: 'Create a workflow',
    description:
      "Steps run in order: `send_message` (into the contact's open conversation with the latest activity; `{{contact.name}}` and `{{data.<key>}}` are substituted), `add_tag`, `remove_tag`, `set_conversation_status`, `wait`.",
    body: CreateWorkflowBody,
    status: 201,
    response: Workflow,
    refusals: STEP_REFUSALS,
  }),
  'workflows.retrieve': endpoint({
    method: 'GET',
    path: '/workflows/:id',
    permission: 'read',
    summary: 'Retrieve a workflow',
    params: WorkflowIdParams,
    status: 200,
    response: Workflow,
  }),
  'workflows.update': endpoint({
    method: 'PATCH',
    path: '/workflows/:id',
    permission: 'write',
    summary: 'Change a workflow',
    description:
      'Its name, its steps or whether it is enabled. Runs already started keep the steps they started with; a disabled workflow starts no run.',
    params: WorkflowIdParams,
    body: UpdateWorkflowBody,
    status: 200,
    response: Workflow,
    refusals: STEP_REFUSALS,
  }),
  'workflows.delete': endpoint({
    method: 'DELETE',
    path: '/workflows/:id',
    permission: 'write',
    summary: 'Delete a workflow',
    description:
      'The workflow leaves the lists and its runs still queued, running or waiting are cancelled. Its runs are kept: they stay readable at `/workflows/{id}/runs`.',
    params: WorkflowIdParams,
    status: 204,
  }),
  'workflows.trigger': endpoint({
    method: 'POST',
    path: '/workflows/:id/trigger',
    permission: 'write',
    summary: 'Run a workflow for a contact',
    description: 'Answers 202 with the queued run; the steps run in the background.',
    params: WorkflowIdParams,
    body: TriggerWorkflowBody,
    status: 202,
    response: WorkflowRun,
    refusals: [{ field: 'enabled', constraint: 'transition', when: 'The workflow is disabled.' }],
  }),
  'workflows.listRuns': endpoint({
    method: 'GET',
    path: '/workflows/:id/runs',
    permission: 'read',
    summary: 'List the runs of a workflow',
    description: 'Newest first, ties by id descending.',
    params: WorkflowIdParams,
    query: ListRunsQuery,
    status: 200,
    response: WorkflowRunList,
  }),
  'workflows.retrieveRun': endpoint({
    method: 'GET',
    path: '/workflows/:id/runs/:run_id',
    permission: 'read',
    summary: 'Retrieve a workflow run',
    params: WorkflowRunParams,
    status: 200,
    response: WorkflowRun,
  }),
  'workflows.cancelRun': endpoint({
    method: 'POST',
    path: '/workflows/:id/runs/:run_id/cancel',
    permission: 'write',
    summary: 'Cancel a workflow run',
    description:
      'A run still `queued` or `waiting` becomes `cancelled` and its remaining steps `skipped`; any other run is 400 `transition`.',
    params: WorkflowRunParams,
    status: 200,
    response: WorkflowRun,
    refusals: [{ field: 'run_id', constraint: 'transition', when: 'The run is neither `queued` nor `waiting`.' }],
  }),
  'events.list': endpoint({
    method: 'GET',
    path: '/events',
    permission: 'read',
    summary: 'List the events of the last 30 days',
    description:
      'Newest first, in the order they were recorded. Lets an integration catch up on anything it missed: `starting_after` and `ending_before` page from an event id ' +
      'without gaps or repeats while new events arrive (an event is listed once its change has committed).',
    query: ListEventsQuery,
    status: 200,
    response: EventList,
  }),
  'events.stream': endpoint({
    method: 'GET',
    path: '/events/stream',
    permission: 'read',
    summary: 'Follow the events as they happen',
    description:
      'Server-Sent Events (`text/event-stream`), open until you close it: each event as `id: evt_…`, `event: <type>` and `data: <the event JSON>`, in the order `GET /v1/events` lists them (oldest first here). ' +
      'It starts after `Last-Event-ID` (the header browsers and SSE clients send when they reconnect) or `starting_after`, catching up first; without either, from now. ' +
      'A comment line (`: keep-alive`) at least every 15 seconds keeps idle connections open. Opening it counts as one request; an account has at most 5 streams open (the 6th is a 429). ' +
      'Every event of the account comes, whichever server or worker recorded it.',
    query: StreamEventsQuery,
    status: 200,
    response: Event,
    stream: true,
  }),
  'webhookEndpoints.list': endpoint({
    method: 'GET',
    path: '/webhook_endpoints',
    permission: 'read',
    summary: 'List webhook endpoints',
    description: 'Newest first, ties by id descending.',
    query: ListWebhookEndpointsQuery,
    status: 200,
    response: WebhookEndpointList,
  }),
  'webhookEndpoints.create': endpoint({
    method: 'POST',
    path: '/webhook_endpoints',
    permission: 'write',
    summary: 'Register a webhook endpoint',
    description:
      'Deliveries follow Standard Webhooks: `webhook-id`, `webhook-timestamp` and `webhook-signature` (one `v1,` signature per active webhook key of the account). ' +
      'Signing needs a webhook key (`whsec_…`): when the account has none, this creation makes one and returns it once as `secret`; verify deliveries with it. ' +
      "Should every webhook key be revoked later, each attempt fails with `no_signing_key` in the delivery's `attempts` and is retried on schedule until a key exists again.",
    body: CreateWebhookEndpointBody,
    status: 201,
    response: CreatedWebhookEndpoint,
    refusals: [
      { field: 'url', constraint: 'format', when: 'The URL is not https or not a public address.' },
      { field: 'body', constraint: 'max', when: `The account already has ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints.` },
    ],
  }),
  'webhookEndpoints.retrieve': endpoint({
    method: 'GET',
    path: '/webhook_endpoints/:id',
    permission: 'read',
    summary: 'Retrieve a webhook endpoint',
    params: WebhookEndpointIdParams,
    status: 200,
    response: WebhookEndpoint,
  }),
  'webhookEndpoints.update': endpoint({
    method: 'PATCH',
    path: '/webhook_endpoints/:id',
    permission: 'write',
    summary: 'Update a webhook endpoint',
    params: WebhookEndpointIdParams,
    body: UpdateWebhookEndpointBody,
    status: 200,
    response: WebhookEndpoint,
    refusals: [{ field: 'url', constraint: 'format', when: 'The URL is not https or not a public address.' }],
  }),
  'webhookEndpoints.delete': endpoint({
    method: 'DELETE',
    path: '/webhook_endpoints/:id',
    permission: 'write',
    summary: 'Delete a webhook endpoint',
    params: WebhookEndpointIdParams,
    status: 204,
  }),
  'webhookEndpoints.listDeliveries': endpoint({
    method: 'GET',
    path: '/webhook_endpoints/:id/deliveries',
    permission: 'read',
    summary: 'List the deliveries of a webhook endpoint',
    description: 'Newest first, ties by id descending; each with every attempt, oldest first.',
    params: WebhookEndpointIdParams,
    query: ListDeliveriesQuery,
    status: 200,
    response: WebhookDeliveryList,
  }),
  'webhookEndpoints.retryDelivery': endpoint({
    method: 'POST',
    path: '/webhook_endpoints/:id/deliveries/:delivery_id/retry',
    permission: 'write',
    summary: 'Retry a delivery now',
    description:
      'Answers 202 with the delivery, `pending` with an attempt due at once. Works for a disabled endpoint too.',
    params: WebhookDeliveryParams,
    status: 202,
    response: WebhookDelivery,
  }),
  'webhookEndpoints.test': endpoint({
    method: 'POST',
    path: '/webhook_endpoints/:id/test',
    permission: 'write',
    summary: 'Send a test ping to a webhook endpoint',
    description:
      'Sends a signed `ping` event (`{"type": "ping", "data": {"endpoint_id": …}}`) to the endpoint now, even a disabled one, and answers with its delivery and the attempt made; a failed ping is retried as any delivery is. Pings are not listed by `GET /events`.',
    params: WebhookEndpointIdParams,
    status: 200,
    response: WebhookDelivery,
  }),
  'webhookEndpoints.replay': endpoint({
    method: 'POST',
    path: '/webhook_endpoints/:id/replay',
    permission: 'write',
    summary: 'Send again every delivery of a time window',
    description:
      "After a receiver's outage: every delivery of the endpoint created in [`since`, `until`) with `status` (`failed` by default) is queued again at once, and the answer says how many. A second call while they are still pending queues nothing twice.",
    params: WebhookEndpointIdParams,
    body: ReplayDeliveriesBody,
    status: 202,
    response: DeliveryReplay,
    refusals: [...dateBounds('since'), ...dateBounds('until')],
  }),
  'channels.list': endpoint({
    method: 'GET',
    path: '/channels',
    permission: 'read',
    summary: 'List channels',
    description: 'Newest first, ties by id descending.',
    query: ListChannelsQuery,
    status: 200,
    response: ChannelList,
  }),
  'channels.create': endpoint({
    method: 'POST',
    path: '/channels',
    permission: 'write',
    summary: 'Connect a WhatsApp number, a Facebook Page or an Instagram account',
    description:
      "Enter the answer's `webhook_url` and `verify_token` in the Meta app's webhook settings. `access_token` and `app_secret` are stored encrypted and never returned. " +
      '`external_id` is unique per account and platform.',
    body: CreateChannelBody,
    status: 201,
    response: Channel,
    refusals: [
      {
        field: 'external_id',
        constraint: 'unique',
        when: 'The account already has a channel for this id on this platform (`details.existing_id` names it).',
      },
      NOT_WHATSAPP,
    ],
  }),
  'channels.retrieve': endpoint({
    method: 'GET',
    path: '/channels/:id',
    permission: 'read',
    summary: 'Retrieve a channel',
    params: ChannelIdParams,
    status: 200,
    response: Channel,
  }),
  'channels.update': endpoint({
    method: 'PATCH',
    path: '/channels/:id',
    permission: 'write',
    summary: 'Update a channel',
    description:
      'Renames it, rotates its `access_token` or `app_secret`, disables it or re-enables it (`status: "active"` also clears an `error`).',
    params: ChannelIdParams,
    body: UpdateChannelBody,
    status: 200,
    response: Channel,
    refusals: [NOT_WHATSAPP],
  }),
  'channels.listTemplates': endpoint({
    method: 'GET',
    path: '/channels/:id/templates',
    permission: 'read',
    summary: "List a WhatsApp channel's message templates",
    description:
      "The templates of the channel's `business_account_id`, as the Graph API lists them (every page of `/{business_account_id}/message_templates`, kept for a minute per channel), by name then language. " +
      'A channel of another platform or without `business_account_id` is a 400 (`business_account_id`, `required`); when the Graph API cannot be asked, a 500.',
    params: ChannelIdParams,
    query: ListTemplatesQuery,
    status: 200,
    response: WhatsAppTemplateList,
    refusals: [
      {
        field: 'business_account_id',
        constraint: 'required',
        when: 'The channel is not a WhatsApp channel, or has no `business_account_id`.',
      },
      {
        field: 'business_account_id',
        constraint: 'enum',
        when: "The Graph API refused to list the business account's templates with the channel's token.",
      },
    ],
  }),
  'channels.delete': endpoint({
    method: 'DELETE',
    path: '/channels/:id',
    permission: 'write',
    summary: 'Delete a channel',
    description:
      'Its conversations and messages stay (with their `channel_id`); nothing more is sent or received through it. Messages still queued for it fail with `channel_deleted`.',
    params: ChannelIdParams,
    status: 204,
  }),
  'sandbox.inbound': endpoint({
    method: 'POST',
    path: '/sandbox/inbound',
    permission: 'write',
    summary: 'Simulate a message arriving from a contact',
    description:
      'Behaves exactly as a message arriving from the platform: finds or creates the contact and the conversation (reopening a resolved one, opening a new one after an archived one), stores the inbound message and emits `message.received` (and `conversation.created` when it opens one). Served only where the sandbox is enabled.',
    body: SandboxInboundBody,
    status: 201,
    response: Message,
    refusals: [
      {
        field: 'conversation_id',
        constraint: 'transition',
        when: "The contact's conversation was archived while the message was stored.",
      },
    ],
  }),
} as const satisfies Record<string, EndpointDefinition>;

export type Endpoints = typeof endpoints;
export type OperationId = keyof Endpoints;
/** The operations whose answer is a stream of events (`stream: true`), not one response. */
export type StreamOperationId = {
  [K in OperationId]: Endpoints[K] extends { stream: true } ? K : never;
}[OperationId];
export const operationIds = Object.keys(endpoints) as OperationId[];

type InputPart = 'params' | 'query' | 'body';
type PartsOf<E> = {
  [P in InputPart as E extends Record<P, z.ZodType> ? P : never]: E extends Record<P, infer S extends z.ZodType>
    ? S
    : never;
};

/** What a caller sends for an operation: `{ params?, query?, body? }` as the contract accepts them. */
export type OperationInput<K extends OperationId> = {
  [P in keyof PartsOf<Endpoints[K]>]: z.input<PartsOf<Endpoints[K]>[P]>;
};
/** The same after validation, with defaults applied. */
export type OperationParsedInput<K extends OperationId> = {
  [P in keyof PartsOf<Endpoints[K]>]: z.output<PartsOf<Endpoints[K]>[P]>;
};
/** What a successful call answers (`undefined` for 204). */
export type OperationResult<K extends OperationId> = Endpoints[K] extends { response: infer S extends z.ZodType }
  ? z.output<S>
  : undefined;

/** `/contacts/:id/tags/:tag` → `/contacts/{id}/tags/{tag}` */
export const toOpenApiPath = (path: string): string => path.replace(/:([A-Za-z_]+)/g, '{$1}');

/** Fill a path template: `fillPath('/contacts/:id', { id: 'ct_1' })` → `/contacts/ct_1` (each value URL-encoded). */
export function fillPath(path: string, params: Record<string, string> = {}): string {
  return path.replace(/:([A-Za-z_]+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`Missing path parameter "${name}"`);
    return encodeURIComponent(value);
  });
}
