import type { CommandGroup } from '../index.js';

export const sandboxGroup: CommandGroup = {
  name: 'sandbox',
  summary: 'Simulate a contact writing in (servers with the sandbox on only)',
};
