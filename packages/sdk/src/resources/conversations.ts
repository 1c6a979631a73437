import type {
  Conversation,
  CreateConversationBody,
  ListConversationsQuery,
  ListMessagesQuery,
  Message,
  UpdateConversationBody,
} from '../contract.js';
import type { PagePromise } from '../pagination.js';
import type { RequestOptions } from '../request-sender.js';
import { Resource, withOffset } from './resource.js';

export class Conversations extends Resource {
  /** Most recent activity first. Filters: `status`, `platform`, `search`. */
  list(params: ListConversationsQuery = {}, options?: RequestOptions): PagePromise<Conversation> {
    return this.paginate('conversations.list', (offset) => ({ query: withOffset(params, offset) }), options);
  }

  create(body: CreateConversationBody, options?: RequestOptions): Promise<Conversation> {
    return this.request('conversations.create', { body }, options);
  }

  retrieve(id: string, options?: RequestOptions): Promise<Conversation> {
    return this.request('conversations.retrieve', { params: { id } }, options);
  }

  /** Changes the status: active → resolved | archived, resolved → active | archived. */
  update(id: string, body: UpdateConversationBody, options?: RequestOptions): Promise<Conversation> {
    return this.request('conversations.update', { params: { id }, body }, options);
  }

  /** The conversation's messages, oldest first. */
  listMessages(id: string, params: ListMessagesQuery = {}, options?: RequestOptions): PagePromise<Message> {
    return this.paginate(
      'conversations.listMessages',
      (offset) => ({ params: { id }, query: withOffset(params, offset) }),
      options,
    );
  }
}
