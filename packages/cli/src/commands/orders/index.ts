import type { CommandGroup } from '../index.js';

export const ordersGroup: CommandGroup = {
  name: 'orders',
  summary: 'Orders placed by contacts: list, get, record',
};
