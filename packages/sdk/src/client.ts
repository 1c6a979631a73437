import { RequestSender, type RetryEvent } from './request-sender.js';
import { Channels } from './resources/channels.js';
import { Contacts } from './resources/contacts.js';
import { Conversations } from './resources/conversations.js';
import { Messages } from './resources/messages.js';
import { Orders } from './resources/orders.js';
import { Events } from './resources/events.js';
import { Files } from './resources/files.js';
import { Sandbox } from './resources/sandbox.js';
import { Tags } from './resources/tags.js';
import { WebhookEndpoints } from './resources/webhook-endpoints.js';
import { Workflows } from './resources/workflows.js';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:3000/v1';

export interface ConvoOptions {
  /** An API key; defaults to the CONVO_API_KEY environment variable where there is one. */
  apiKey?: string;
  /** The API's base address, ending in /v1. Defaults to CONVO_BASE_URL, else http://127.0.0.1:3000/v1. */
  baseUrl?: string;
  /** Per attempt; default 30 s. */
  timeoutMs?: number;
  /** Retries after a network error, a 429 or a 5xx; default 2. */
  maxRetries?: number;
  /** A fetch implementation; default the global one. */
  fetch?: typeof fetch;
  /**
   * Waits `ms` milliseconds between two attempts of a request; default a timer. Replace it to
   * observe the delays or not to wait (tests), or to wait on your own scheduler.
   */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Called before each wait for a retry, with what failed, the attempt to come and the wait: to tell a person
   * why a call is slow (a 429 is waited out for its Retry-After) or to count retries. Default: nothing.
   */
  onRetry?: (retry: RetryEvent) => void;
}

/** Reads an environment variable where the runtime has `process` (Node, Bun, Deno), else undefined. */
const envVar = (name: string): string | undefined =>
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name] || undefined;

/**
 * The Convo API client.
 *
 * ```ts
 * const convo = new Convo({ apiKey: process.env.CONVO_API_KEY });
 * for await (const conversation of convo.conversations.list({ status: 'active' })) { … }
 * ```
 */
export class Convo {
  readonly conversations: Conversations;
  readonly messages: Messages;
  readonly files: Files;
  readonly contacts: Contacts;
  readonly tags: Tags;
  readonly orders: Orders;
  readonly workflows: Workflows;
  readonly events: Events;
  readonly webhookEndpoints: WebhookEndpoints;
  readonly channels: Channels;
  readonly sandbox: Sandbox;

  constructor(options: ConvoOptions = {}) {
    const apiKey = options.apiKey ?? envVar('CONVO_API_KEY');
    if (!apiKey) throw new TypeError('Convo needs an API key: pass { apiKey } or set CONVO_API_KEY');
    const fetchImpl = options.fetch ?? globalThis.fetch?.bind(globalThis);
    if (!fetchImpl) throw new TypeError('No fetch in this runtime: pass { fetch }');
    const sender = new RequestSender({
      apiKey,
      baseUrl: options.baseUrl ?? envVar('CONVO_BASE_URL') ?? DEFAULT_BASE_URL,
      timeoutMs: options.timeoutMs ?? 30_000,
      maxRetries: options.maxRetries ?? 2,
      fetch: fetchImpl,
      sleep: options.sleep,
      onRetry: options.onRetry,
    });
    this.conversations = new Conversations(sender);
    this.messages = new Messages(sender);
    this.files = new Files(sender);
    this.contacts = new Contacts(sender);
    this.tags = new Tags(sender);
    this.orders = new Orders(sender);
    this.workflows = new Workflows(sender);
    this.events = new Events(sender);
    this.webhookEndpoints = new WebhookEndpoints(sender);
    this.channels = new Channels(sender);
    this.sandbox = new Sandbox(sender);
  }
}
