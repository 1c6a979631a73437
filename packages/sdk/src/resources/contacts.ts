import type { Contact, CreateContactBody, ListContactsQuery, UpdateContactBody } from '../contract.js';
import type { PagePromise } from '../pagination.js';
import type { RequestOptions, RequestSender } from '../request-sender.js';
import { Resource, withOffset } from './resource.js';

export class ContactTags extends Resource {
  /** Attaches a tag; attaching one the contact has changes nothing. */
  add(contactId: string, tag: string, options?: RequestOptions): Promise<Contact> {
    return this.request('contacts.tags.add', { params: { id: contactId }, body: { tag } }, options);
  }

  /** Removes a tag (NotFoundError when the contact does not have it). */
  remove(contactId: string, tag: string, options?: RequestOptions): Promise<Contact> {
    return this.request('contacts.tags.remove', { params: { id: contactId, tag } }, options);
  }
}

export class Contacts extends Resource {
  readonly tags: ContactTags;

  constructor(sender: RequestSender) {
    super(sender);
    this.tags = new ContactTags(sender);
  }

  /** Newest first. Filters: `search` (name, email, phone digits), `tag`. */
  list(params: ListContactsQuery = {}, options?: RequestOptions): PagePromise<Contact> {
    return this.paginate('contacts.list', (offset) => ({ query: withOffset(params, offset) }), options);
  }

  create(body: CreateContactBody, options?: RequestOptions): Promise<Contact> {
    return this.request('contacts.create', { body }, options);
  }

  retrieve(id: string, options?: RequestOptions): Promise<Contact> {
    return this.request('contacts.retrieve', { params: { id } }, options);
  }

  /** Partial update: `email: null` clears, `tags` replaces the set. */
  update(id: string, body: UpdateContactBody, options?: RequestOptions): Promise<Contact> {
    return this.request('contacts.update', { params: { id }, body }, options);
  }

  /** Deletes the contact with its conversations and messages; its orders stay. */
  async del(id: string, options?: RequestOptions): Promise<void> {
    await this.request('contacts.delete', { params: { id } }, options);
  }
}
