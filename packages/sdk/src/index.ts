export { Convo, type ConvoOptions, DEFAULT_BASE_URL } from './client.js';
export {
  BadRequestError,
  ConnectionError,
  ConvoError,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from './errors.js';
export { type Page, PagePromise } from './pagination.js';
export type { RequestOptions, RetryEvent, StreamOptions } from './request-sender.js';
export { SDK_METHODS } from './operations.js';
export { WebhookVerificationError, verifyWebhook } from './webhooks.js';
export type { Channels } from './resources/channels.js';
export type { Contacts, ContactTags } from './resources/contacts.js';
export type { Conversations } from './resources/conversations.js';
export type { Messages } from './resources/messages.js';
export type { FileUpload, Files } from './resources/files.js';
export { mediaTypeOf } from './resources/files.js';
export type { ByteStream } from './request-sender.js';
export type { Orders } from './resources/orders.js';
export type { Tags } from './resources/tags.js';
export type { Events, StreamParams } from './resources/events.js';
export type { Sandbox } from './resources/sandbox.js';
export type { WebhookEndpoints } from './resources/webhook-endpoints.js';
export type { Workflows } from './resources/workflows.js';
export type * from './contract.js';
export { fillPath } from './contract.js';
