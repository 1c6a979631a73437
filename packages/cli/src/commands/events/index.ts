import type { CommandGroup } from '../index.js';

export const eventsGroup: CommandGroup = {
  name: 'events',
  summary: 'The events of the last 30 days, to catch up on anything missed',
};
