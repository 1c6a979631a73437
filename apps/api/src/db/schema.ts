import type { EventType, MessageType } from '@convo/core';
import type { Generated } from 'kysely';

// Timestamps are fixed-width ISO 8601 UTC strings with milliseconds, so they sort as text; JSON columns are text.
// Every tenant table's primary key starts with account_id.

export interface AccountTable {
  id: string;
  name: string;
  plan: 'free' | 'starter' | 'growth' | 'business' | 'enterprise';
  rate_limit_rpm: number | null;
  created_at: string;
  updated_at: string;
}

export interface ApiKeyTable {
  account_id: string;
  id: string;
  type: 'full_access' | 'read_only' | 'webhook';
  name: string | null;
  /** Start of the key, safe to show (`convo_sk_AbC…`). */
  redacted: string;
  key_hash: string;
  /** Webhook keys only: the secret that signs deliveries (signing needs the secret itself). */
  signing_secret: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  /** Who revoked it: a console user's e-mail address, or `operator`. */
  revoked_by: string | null;
  created_at: string;
}

export interface ContactTable {
  account_id: string;
  id: string;
  name: string | null;
  /** Lower-cased name, for case-insensitive search. */
  name_search: string | null;
  /** Null for a contact known only by a Messenger or Instagram identity. */
  phone: string | null;
  /** The phone's digits only, for digit search ('' without a phone). */
  phone_digits: string;
  email: string | null;
  email_search: string | null;
  /** JSON array of tag names, in the order they were attached. */
  tags: string;
  /** JSON object. */
  attributes: string;
  /** JSON array of {platform, channel_id, external_id}, oldest first: a copy of contact_identities. */
  identities: Generated<string>;
  created_at: string;
  updated_at: string;
  /** The contact's conversations, kept by triggers (migration 0007); not part of the resource. */
  conversation_count: Generated<number>;
}

export interface ContactTagTable {
  account_id: string;
  contact_id: string;
  tag: string;
  created_at: string;
}

export interface ConversationTable {
  account_id: string;
  id: string;
  contact_id: string;
  platform: 'whatsapp' | 'facebook' | 'instagram';
  status: 'active' | 'resolved' | 'archived';
  message_count: number;
  last_message_content: string | null;
  last_message_at: string | null;
  /** last_message_at, else created_at: the default sort key. */
  last_activity_at: string;
  /** The last event sequence number used for this conversation. */
  event_sequence: number;
  created_at: string;
  updated_at: string;
  /** The contact's `name_search`, kept by triggers (migration 0008); never written by the API. */
  contact_name_search: Generated<string | null>;
  /** The channel the conversation runs on; null when opened through the API or the sandbox. */
  channel_id: string | null;
}

export interface MessageTable {
  account_id: string;
  id: string;
  conversation_id: string;
  direction: 'inbound' | 'outbound';
  type: MessageType;
  content: string;
  status: 'queued' | 'sent' | 'delivered' | 'read' | 'failed';
  platform_message_id: string | null;
  /** JSON {code, message}. */
  error: string | null;
  /** JSON {id, mime_type, filename?}. */
  media: string | null;
  created_at: string;
  updated_at: string;
}

export interface OrderTable {
  account_id: string;
  id: string;
  contact_id: string | null;
  number: string;
  /** An all-digits number zero-padded to 64 digits, so text order is numeric order; else null. */
  number_key: string | null;
  status: 'pending' | 'paid' | 'fulfilled' | 'cancelled' | 'refunded';
  currency: string;
  total_amount: number;
  /** JSON array of {name, quantity, unit_amount}. */
  items: string;
  placed_at: string;
  created_at: string;
  updated_at: string;
}

export interface EventTable {
  account_id: string;
  id: string;
  /** `ping`: an endpoint's test (webhook endpoints' `test`), delivered to it alone and never listed. */
  type: EventType | 'ping';
  conversation_id: string | null;
  sequence: number | null;
  /** JSON of the resource as the API returned it when the event happened. */
  data: string;
  created_at: string;
  /** Its place in the account's log, given after it committed; null until then. */
  position: Generated<number | null>;
}

export interface WebhookEndpointTable {
  account_id: string;
  id: string;
  url: string;
  /** JSON array of event types, or ["*"]. */
  events: string;
  description: string | null;
  status: 'enabled' | 'disabled';
  created_at: string;
  updated_at: string;
}

export interface WebhookDeliveryTable {
  account_id: string;
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: EventTable['type'];
  status: 'pending' | 'succeeded' | 'failed';
  /** JSON array of {at, status_code, duration_ms, error}, oldest first. */
  attempts: string;
  next_attempt_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface JobTable {
  id: string;
  kind: string;
  account_id: string | null;
  /** JSON. */
  payload: string;
  run_at: string;
  attempts: number;
  locked_by: string | null;
  locked_until: string | null;
  created_at: string;
  /** `endpoint:<id>`, `account:<id>` or `system`: only so many jobs of one lane run at once. */
  lane: string;
}

export interface WorkflowTable {
  account_id: string;
  id: string;
  name: string;
  /** JSON array of steps. */
  steps: string;
  /** 1 or 0: a disabled workflow starts no run. */
  enabled: Generated<number>;
  /** Set by DELETE: the row stays for its runs, out of every list and lookup. */
  deleted_at: Generated<string | null>;
  /** JSON {event, conditions}, or null: runs start only by the API's trigger. */
  trigger: Generated<string | null>;
  /** The trigger's event type, copied for the lookup at every event. */
  trigger_event: Generated<string | null>;
  created_at: string;
  updated_at: string;
}

export interface WorkflowRunTable {
  account_id: string;
  id: string;
  workflow_id: string;
  contact_id: string | null;
  status: 'queued' | 'running' | 'waiting' | 'succeeded' | 'failed' | 'cancelled' | 'skipped';
  /** The event that started the run (its workflow's trigger); null for the API's trigger. */
  event_id: Generated<string | null>;
  /** JSON object. */
  data: string;
  /** JSON array of the workflow's steps when the run started: what the run does. */
  definition: string | null;
  /** JSON array of {index, type, status, error}. */
  steps: string;
  current_step: number;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
}

export interface IdempotencyKeyTable {
  account_id: string;
  key: string;
  request_hash: string;
  state: 'running' | 'done';
  response_status: number | null;
  response_body: string | null;
  created_at: string;
  updated_at: string;
}

export interface ChannelTable {
  account_id: string;
  id: string;
  platform: 'whatsapp' | 'facebook' | 'instagram';
  name: string;
  external_id: string;
  status: 'active' | 'error' | 'disabled';
  /** WhatsApp only: the WhatsApp Business Account, for its message templates. */
  business_account_id: string | null;
  verify_token: string;
  /** Sealed by secret-box.ts; never the plain token. */
  access_token_sealed: string;
  app_secret_sealed: string;
  /** JSON {code, message, at}. */
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

/** A webhook body Meta posted, stored before the 200 and processed by the worker. */
export interface ChannelPayloadTable {
  account_id: string;
  id: string;
  channel_id: string;
  body: string;
  received_at: string;
  processed_at: string | null;
  /** JSON array of {path, error} for the parts that could not be processed, in body order. */
  errors: string | null;
}

export interface ContactIdentityTable {
  account_id: string;
  channel_id: string;
  external_id: string;
  contact_id: string;
  platform: ChannelTable['platform'];
  /** When the contact last wrote on this channel: the 24-hour window starts there. */
  last_inbound_at: string | null;
  created_at: string;
}

export interface RequestLogTable {
  account_id: string;
  id: string;
  request_id: string;
  key_id: string | null;
  method: string;
  path: string;
  query: string | null;
  status: number;
  duration_ms: number;
  request_body: string | null;
  error_body: string | null;
  created_at: string;
}

export interface FileTable {
  account_id: string;
  id: string;
  filename: string | null;
  mime_type: string;
  /** A bigint column: Postgres' driver reads it as a string, SQLite's as a number. */
  size: number | string;
  sha256: string;
  store: 'database' | 'filesystem';
  created_at: string;
}

/** A file's bytes in the database store, in order of `seq`. */
export interface FileChunkTable {
  account_id: string;
  file_id: string;
  seq: number;
  data: Buffer;
}

export interface Database {
  accounts: AccountTable;
  api_keys: ApiKeyTable;
  contacts: ContactTable;
  contact_tags: ContactTagTable;
  conversations: ConversationTable;
  messages: MessageTable;
  orders: OrderTable;
  events: EventTable;
  webhook_endpoints: WebhookEndpointTable;
  webhook_deliveries: WebhookDeliveryTable;
  jobs: JobTable;
  workflows: WorkflowTable;
  workflow_runs: WorkflowRunTable;
  idempotency_keys: IdempotencyKeyTable;
  channels: ChannelTable;
  channel_payloads: ChannelPayloadTable;
  contact_identities: ContactIdentityTable;
  rate_limits: RateLimitTable;
  conversation_counts: ConversationCountTable;
  contact_tag_counts: ContactTagCountTable;
  conversation_name_trigrams: ConversationNameTrigramTable;
  users: UserTable;
  memberships: MembershipTable;
  sessions: SessionTable;
  invitations: InvitationTable;
  password_resets: PasswordResetTable;
  request_logs: RequestLogTable;
  files: FileTable;
  file_chunks: FileChunkTable;
}

export type Role = 'owner' | 'admin' | 'member';

/** A person who signs in to the console; belongs to accounts through memberships. */
export interface UserTable {
  id: string;
  /** Lower case. */
  email: string;
  name: string | null;
  /** scrypt, in passwords.ts's format. */
  password_hash: string;
  created_at: string;
  updated_at: string;
}

export interface MembershipTable {
  account_id: string;
  user_id: string;
  role: Role;
  created_at: string;
}

/** A signed-in browser: the SHA-256 of its cookie's token, never the token. */
export interface SessionTable {
  token_hash: string;
  user_id: string;
  account_id: string;
  created_at: string;
  expires_at: string;
}

export interface InvitationTable {
  account_id: string;
  id: string;
  token_hash: string;
  role: Exclude<Role, 'owner'>;
  created_by: string;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
  accepted_by: string | null;
  revoked_at: string | null;
}

export interface PasswordResetTable {
  token_hash: string;
  user_id: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** rate-limiter-flexible's Postgres counters: one row per `rpm<limit>:<account id>`, its window ending at `expire`. */
export interface RateLimitTable {
  key: string;
  points: number;
  /** Unix milliseconds. */
  expire: number | null;
}

/** Conversations per account, status and platform, kept by triggers (migration 0006). */
export interface ConversationCountTable {
  account_id: string;
  status: ConversationTable['status'];
  platform: ConversationTable['platform'];
  count: number;
}

/** Contacts per account and tag, kept by triggers on contact_tags (migration 0018). */
export interface ContactTagCountTable {
  account_id: string;
  tag: string;
  contacts: number;
}

/** Conversations per account whose contact's `name_search` contains the trigram, kept by triggers (migration 0008). */
export interface ConversationNameTrigramTable {
  account_id: string;
  trigram: string;
  conversations: number;
}

/** Tables whose rows belong to one account: those with an `account_id`, but for the queue and the key stores. */
export type TenantTable = Exclude<
  { [T in keyof Database]: 'account_id' extends keyof Database[T] ? T : never }[keyof Database],
  'jobs' | 'idempotency_keys'
>;

export type { Generated };
