import type { Contact } from '@convo/sdk';
import { stringify } from 'csv-stringify/sync';
import { TAG_SEPARATOR_OUT } from './import-file.js';

/**
 * Writing contacts as `convo contacts import` reads them, so an export imports back unchanged:
 * JSON Lines of create bodies, or CSV with the import's columns.
 */
export type ExportFormat = 'csv' | 'jsonl';

/** The fields of a contact that `contacts create` takes (no id, no timestamps). */
export function importableBody(contact: Contact): Record<string, unknown> {
  return {
    name: contact.name,
    phone: contact.phone,
    email: contact.email,
    tags: contact.tags,
    attributes: contact.attributes,
  };
}

/**
 * CSV with a header row: name, phone, email, tags (joined by `;`), then `attr.<key>` for every
 * attribute key any contact has (sorted). An empty field is a blank cell, which import reads as
 * "leave as it is". CSV cells are text: numbers and booleans among the attributes come back as
 * text (JSON Lines keeps them).
 */
export function contactsCsv(contacts: readonly Contact[]): string {
  const attributeKeys = [...new Set(contacts.flatMap((c) => Object.keys(c.attributes)))].sort();
  const header = ['name', 'phone', 'email', 'tags', ...attributeKeys.map((key) => `attr.${key}`)];
  const rows = contacts.map((c) => [
    c.name ?? '',
    c.phone ?? '',
    c.email ?? '',
    c.tags.join(TAG_SEPARATOR_OUT),
    ...attributeKeys.map((key) => (c.attributes[key] === undefined ? '' : String(c.attributes[key]))),
  ]);
  return stringify([header, ...rows]);
}
