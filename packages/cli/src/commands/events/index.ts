import type { CommandGroup } from '../index.js';
import { addEventsTailCommand } from './tail.js';

export const eventsGroup: CommandGroup = {
  name: 'events',
  summary: 'The events of the last 30 days, to catch up on anything missed, and `tail` to follow new ones',
  addCommands: (group, context) => addEventsTailCommand(group, context),
};
