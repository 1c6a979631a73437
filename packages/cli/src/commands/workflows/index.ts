import type { CommandGroup } from '../index.js';

export const workflowsGroup: CommandGroup = {
  name: 'workflows',
  summary: 'Workflows: list, get, create, update, delete, trigger for a contact, their runs',
};
