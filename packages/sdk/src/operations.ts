import type { OperationId } from './contract.js';

/**
 * Where each operation of the endpoint table lives on the client. Typed over every operation id:
 * an operation added to the contract without an entry here fails the build, and a test checks
 * that each entry names a real method.
 */
export const SDK_METHODS: Record<OperationId, string> = {
  'conversations.list': 'conversations.list',
  'conversations.create': 'conversations.create',
  'conversations.retrieve': 'conversations.retrieve',
  'conversations.update': 'conversations.update',
  'conversations.listMessages': 'conversations.listMessages',
  'messages.send': 'messages.send',
  'messages.retrieve': 'messages.retrieve',
  'contacts.list': 'contacts.list',
  'contacts.create': 'contacts.create',
  'contacts.retrieve': 'contacts.retrieve',
  'contacts.update': 'contacts.update',
  'contacts.delete': 'contacts.del',
  'contacts.tags.add': 'contacts.tags.add',
  'contacts.tags.remove': 'contacts.tags.remove',
  'tags.list': 'tags.list',
  'tags.update': 'tags.update',
  'tags.delete': 'tags.del',
  'orders.list': 'orders.list',
  'orders.create': 'orders.create',
  'orders.retrieve': 'orders.retrieve',
  'orders.update': 'orders.update',
  'workflows.list': 'workflows.list',
  'workflows.create': 'workflows.create',
  'workflows.retrieve': 'workflows.retrieve',
  'workflows.trigger': 'workflows.trigger',
  'workflows.listRuns': 'workflows.runs',
  'events.list': 'events.list',
  'webhookEndpoints.list': 'webhookEndpoints.list',
  'webhookEndpoints.create': 'webhookEndpoints.create',
  'webhookEndpoints.retrieve': 'webhookEndpoints.retrieve',
  'webhookEndpoints.update': 'webhookEndpoints.update',
  'webhookEndpoints.delete': 'webhookEndpoints.del',
  'webhookEndpoints.listDeliveries': 'webhookEndpoints.deliveries',
  'webhookEndpoints.retryDelivery': 'webhookEndpoints.retryDelivery',
  'channels.list': 'channels.list',
  'channels.create': 'channels.create',
  'channels.retrieve': 'channels.retrieve',
  'channels.update': 'channels.update',
  'channels.delete': 'channels.del',
  'sandbox.inbound': 'sandbox.inbound',
};
