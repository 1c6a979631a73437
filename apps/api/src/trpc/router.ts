import { mutation, query, t } from './init.js';

/**
 * Every operation of the endpoint table as a tRPC procedure, nested by its id
 * (`contacts.tags.add` → contacts → tags → add), for first-party typed clients at `/trpc`.
 * router.test.ts fails when an operation of the table is missing here (but for uploads and downloads).
 */
export const appRouter = t.router({
  conversations: {
    list: query('conversations.list'),
    create: mutation('conversations.create'),
    retrieve: query('conversations.retrieve'),
    update: mutation('conversations.update'),
    listMessages: query('conversations.listMessages'),
  },
  messages: { send: mutation('messages.send'), retrieve: query('messages.retrieve') },
  // Uploads and downloads are REST's alone (their bodies are bytes), as is the event stream; the record is read here too.
  files: { retrieve: query('files.retrieve') },
  contacts: {
    list: query('contacts.list'),
    create: mutation('contacts.create'),
    retrieve: query('contacts.retrieve'),
    update: mutation('contacts.update'),
    delete: mutation('contacts.delete'),
    tags: { add: mutation('contacts.tags.add'), remove: mutation('contacts.tags.remove') },
  },
  tags: { list: query('tags.list'), update: mutation('tags.update'), delete: mutation('tags.delete') },
  orders: {
    list: query('orders.list'),
    create: mutation('orders.create'),
    retrieve: query('orders.retrieve'),
    update: mutation('orders.update'),
  },
  workflows: {
    list: query('workflows.list'),
    create: mutation('workflows.create'),
    retrieve: query('workflows.retrieve'),
    update: mutation('workflows.update'),
    delete: mutation('workflows.delete'),
    trigger: mutation('workflows.trigger'),
    listRuns: query('workflows.listRuns'),
    retrieveRun: query('workflows.retrieveRun'),
    cancelRun: mutation('workflows.cancelRun'),
  },
  events: { list: query('events.list') },
  webhookEndpoints: {
    list: query('webhookEndpoints.list'),
    create: mutation('webhookEndpoints.create'),
    retrieve: query('webhookEndpoints.retrieve'),
    update: mutation('webhookEndpoints.update'),
    delete: mutation('webhookEndpoints.delete'),
    listDeliveries: query('webhookEndpoints.listDeliveries'),
    retryDelivery: mutation('webhookEndpoints.retryDelivery'),
    test: mutation('webhookEndpoints.test'),
    replay: mutation('webhookEndpoints.replay'),
  },
  channels: {
    list: query('channels.list'),
    create: mutation('channels.create'),
    retrieve: query('channels.retrieve'),
    update: mutation('channels.update'),
    listTemplates: query('channels.listTemplates'),
    delete: mutation('channels.delete'),
  },
  sandbox: { inbound: mutation('sandbox.inbound') },
});

export type AppRouter = typeof appRouter;
