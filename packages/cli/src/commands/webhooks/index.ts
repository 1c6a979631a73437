import type { CommandGroup } from '../index.js';

export const webhooksGroup: CommandGroup = {
  name: 'webhooks',
  summary: 'Webhook endpoints: list, get, register, update, delete, their deliveries, retry one',
};
