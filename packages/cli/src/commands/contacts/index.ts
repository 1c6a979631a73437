import type { CommandGroup } from '../index.js';
import { addContactsExportCommand } from './export.js';
import { addImportCommand } from './import.js';

export const contactsGroup: CommandGroup = {
  name: 'contacts',
  summary: 'Contacts: list, get, create, update, delete, tag, import and export as CSV or JSON Lines',
  subgroups: { tag: 'Attach a tag to a contact, or remove one' },
  addCommands: (group, context) => {
    addImportCommand(group, context);
    addContactsExportCommand(group, context);
  },
};
