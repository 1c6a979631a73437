import type { CommandGroup } from '../index.js';

export const workflowsGroup: CommandGroup = {
  name: 'workflows',
  summary: 'Workflows: list, get, create, trigger for a contact, their runs',
};
