import type { CommandGroup } from '../index.js';
import { addImportCommand } from './import.js';

export const contactsGroup: CommandGroup = {
  name: 'contacts',
  summary: 'Contacts: list, get, create, update, delete, tag, import from CSV or JSON Lines',
  subgroups: { tag: 'Attach a tag to a contact, or remove one' },
  addCommands: addImportCommand,
};
