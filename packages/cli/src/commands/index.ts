import type { OperationId } from '@convo/sdk';
import type { Command } from 'commander';
import type { CommandContext, OperationCommand } from '../operation-commands.js';
import { channelsGroup } from './channels/index.js';
import { contactsGroup } from './contacts/index.js';
import { conversationsGroup } from './conversations/index.js';
import { eventsGroup } from './events/index.js';
import { messagesGroup } from './messages/index.js';
import { ordersGroup } from './orders/index.js';
import { sandboxGroup } from './sandbox/index.js';
import { tagsGroup } from './tags/index.js';
import { webhooksGroup } from './webhooks/index.js';
import { workflowsGroup } from './workflows/index.js';

/**
 * Every operation of the endpoint table and its command. Typed over every operation id: an
 * operation added to the contract without a command here fails the build. Options and help
 * come from the operation's schemas; a group without a folder below is created on the fly.
 */
export const OPERATION_COMMANDS = {
  'conversations.list': {
    command: 'conversations list',
    columns: ['id', 'contact.name', 'contact.phone', 'platform', 'status', 'message_count', 'last_message.content'],
  },
  'conversations.retrieve': { command: 'conversations get' },
  'conversations.create': { command: 'conversations create' },
  'conversations.update': { command: 'conversations update' },
  'conversations.listMessages': {
    command: 'conversations messages',
    columns: ['id', 'created_at', 'direction', 'status', 'content'],
  },
  'messages.send': { command: 'messages send', mediaFiles: ['image', 'video', 'audio', 'document'] },
  'messages.retrieve': { command: 'messages get' },
  'files.create': { command: 'files upload' },
  'files.retrieve': { command: 'files get' },
  'files.content': { command: 'files download' },
  'contacts.list': { command: 'contacts list', columns: ['id', 'name', 'phone', 'email', 'tags', 'created_at'] },
  'contacts.retrieve': { command: 'contacts get' },
  'contacts.create': { command: 'contacts create' },
  'contacts.update': { command: 'contacts update' },
  'contacts.delete': { command: 'contacts delete', done: 'Deleted.' },
  'contacts.tags.add': { command: 'contacts tag add', positionalBody: ['tag'] },
  'contacts.tags.remove': { command: 'contacts tag remove' },
  'tags.list': { command: 'tags list' },
  'tags.update': { command: 'tags rename' },
  'tags.delete': { command: 'tags delete', done: 'Deleted.' },
  'orders.list': {
    command: 'orders list',
    columns: ['id', 'number', 'status', 'currency', 'total_amount', 'contact_id', 'placed_at'],
  },
  'orders.retrieve': { command: 'orders get' },
  'orders.create': { command: 'orders create' },
  'orders.update': { command: 'orders update' },
  'workflows.list': { command: 'workflows list' },
  'workflows.retrieve': { command: 'workflows get' },
  'workflows.create': { command: 'workflows create' },
  'workflows.update': { command: 'workflows update' },
  'workflows.delete': { command: 'workflows delete', done: 'Deleted.' },
  'workflows.trigger': { command: 'workflows trigger' },
  'workflows.listRuns': {
    command: 'workflows runs',
    columns: ['id', 'status', 'contact_id', 'created_at', 'finished_at', 'error'],
  },
  'workflows.retrieveRun': { command: 'workflows run get' },
  'workflows.cancelRun': { command: 'workflows run cancel' },
  'events.list': { command: 'events list', columns: ['id', 'type', 'created_at'] },
  'events.stream': { command: 'events stream' },
  'webhookEndpoints.list': { command: 'webhooks list' },
  'webhookEndpoints.retrieve': { command: 'webhooks get' },
  'webhookEndpoints.create': { command: 'webhooks create' },
  'webhookEndpoints.update': { command: 'webhooks update' },
  'webhookEndpoints.delete': { command: 'webhooks delete', done: 'Deleted.' },
  'webhookEndpoints.listDeliveries': { command: 'webhooks deliveries' },
  'webhookEndpoints.retryDelivery': { command: 'webhooks retry' },
  'webhookEndpoints.test': { command: 'webhooks test' },
  'webhookEndpoints.replay': { command: 'webhooks replay' },
  'channels.list': {
    command: 'channels list',
    columns: ['id', 'platform', 'name', 'external_id', 'status', 'webhook_url'],
  },
  'channels.retrieve': { command: 'channels get' },
  'channels.create': { command: 'channels create' },
  'channels.update': { command: 'channels update' },
  'channels.listTemplates': {
    command: 'channels templates',
    columns: ['name', 'language', 'status', 'category'],
  },
  'channels.delete': { command: 'channels delete', done: 'Deleted.' },
  'sandbox.inbound': { command: 'sandbox inbound' },
} as const satisfies Record<OperationId, OperationCommand>;

/** A top-level command group: its help text, sub-groups, and the commands that are not one operation. */
export interface CommandGroup {
  name: string;
  summary: string;
  /** Nested groups and their summaries (`tag` under contacts). */
  subgroups?: Record<string, string>;
  addCommands?(group: Command, context: CommandContext): void;
}

/** In the order `convo --help` lists them. */
export const COMMAND_GROUPS: readonly CommandGroup[] = [
  conversationsGroup,
  messagesGroup,
  contactsGroup,
  tagsGroup,
  ordersGroup,
  workflowsGroup,
  eventsGroup,
  webhooksGroup,
  channelsGroup,
  sandboxGroup,
];
