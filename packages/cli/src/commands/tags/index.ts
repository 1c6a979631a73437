import type { CommandGroup } from '../index.js';

export const tagsGroup: CommandGroup = {
  name: 'tags',
  summary: 'The tags in use, with how many contacts have each (attach them with `contacts tag`)',
};
