import type { CommandGroup } from '../index.js';
import { addExportCommand } from './export.js';

export const conversationsGroup: CommandGroup = {
  name: 'conversations',
  summary: 'Conversations with contacts: list, get, open, change status, their messages, export',
  addCommands: addExportCommand,
};
