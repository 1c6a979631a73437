import type { CommandGroup } from '../index.js';

export const messagesGroup: CommandGroup = {
  name: 'messages',
  summary: 'Send messages into conversations (list them with `conversations messages`)',
};
