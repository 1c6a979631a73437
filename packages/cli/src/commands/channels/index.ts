import type { CommandGroup } from '../index.js';

export const channelsGroup: CommandGroup = {
  name: 'channels',
  summary:
    'WhatsApp numbers, Facebook Pages and Instagram accounts: list, get, connect, update (rotate secrets, disable), delete',
};
