import type { Message, SendMessageBody } from '../contract.js';
import type { RequestOptions } from '../request-sender.js';
import { Resource } from './resource.js';

export class Messages extends Resource {
  /** Sends a message into a conversation (outbound): text, a WhatsApp template, or a file or link as media. */
  send(body: SendMessageBody, options?: RequestOptions): Promise<Message> {
    return this.request('messages.send', { body }, options);
  }

  /** Any message of the account, with its current delivery status. */
  retrieve(id: string, options?: RequestOptions): Promise<Message> {
    return this.request('messages.retrieve', { params: { id } }, options);
  }
}
