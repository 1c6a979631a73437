/** What the service notifies integrations of, and the resource each event carries. */
export const EVENT_TYPES = [
  'conversation.created',
  'message.received',
  'order.placed',
  'conversation.resolved',
  'message.updated',
  'order.updated',
  'contact.created',
  'contact.updated',
  'contact.deleted',
  'conversation.updated',
  'workflow_run.succeeded',
  'workflow_run.failed',
] as const;
