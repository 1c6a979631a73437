import type {
  Channel,
  CreateChannelBody,
  ListChannelsQuery,
  ListTemplatesQuery,
  UpdateChannelBody,
  WhatsAppTemplate,
} from '../contract.js';
import type { PagePromise } from '../pagination.js';
import type { RequestOptions } from '../request-sender.js';
import { Resource, withOffset } from './resource.js';

export class Channels extends Resource {
  list(params: ListChannelsQuery = {}, options?: RequestOptions): PagePromise<Channel> {
    return this.paginate('channels.list', (offset) => ({ query: withOffset(params, offset) }), options);
  }

  /**
   * Connects a WhatsApp number, a Facebook Page or an Instagram account; enter the answer's `webhook_url` and
   * `verify_token` in the Meta app.
   */
  create(body: CreateChannelBody, options?: RequestOptions): Promise<Channel> {
    return this.request('channels.create', { body }, options);
  }

  retrieve(id: string, options?: RequestOptions): Promise<Channel> {
    return this.request('channels.retrieve', { params: { id } }, options);
  }

  /** Renames, rotates `access_token` or `app_secret`, disables or re-enables (`status: "active"`). */
  update(id: string, body: UpdateChannelBody, options?: RequestOptions): Promise<Channel> {
    return this.request('channels.update', { params: { id }, body }, options);
  }

  /** A WhatsApp channel's message templates from the Graph API (its `business_account_id`'s), by name then language. */
  listTemplates(id: string, params: ListTemplatesQuery = {}, options?: RequestOptions): PagePromise<WhatsAppTemplate> {
    return this.paginate(
      'channels.listTemplates',
      (offset) => ({ params: { id }, query: withOffset(params, offset) }),
      options,
    );
  }

  async del(id: string, options?: RequestOptions): Promise<void> {
    await this.request('channels.delete', { params: { id } }, options);
  }
}
