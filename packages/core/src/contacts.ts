import * as z from 'zod';
import { Id, Phone, Platform, Search, Timestamp, listOf, pagination, text } from './common.js';

export const MAX_TAGS_PER_CONTACT = 50;

/** No `/`, and no leading or trailing white space. */
export const TagName = text(1, 64)
  .regex(/^[^/\s](?:[^/]*[^/\s])?$/, { message: 'Must not contain "/" nor start or end with white space' })
  .meta({ id: 'TagName', example: 'vip' });

export const ContactName = text(1, 200);
export const Email = z
  .string()
  .max(254)
  .check(z.email({ message: 'Must be a valid e-mail address' }))
  .meta({ format: 'email', example: 'ana@example.com' });

export const AttributeValue = z.union([text(0, 1000), z.number(), z.boolean()]);
export const Attributes = z
  .record(
    text(1, 64).regex(/^[A-Za-z0-9_.-]+$/, { message: 'Attribute keys use letters, digits, "_", "." and "-"' }),
    AttributeValue,
  )
  .check((ctx) => {
    const count = Object.keys(ctx.value).length;
    if (count > 50)
      ctx.issues.push({
        code: 'too_big',
        origin: 'object',
        maximum: 50,
        inclusive: true,
        input: ctx.value,
        message: 'At most 50 attributes',
      });
  })
  .meta({ description: 'Free-form attributes: up to 50 keys, values string, number or boolean.', maxProperties: 50 });

/** Who the contact is on a channel: its WhatsApp id, page-scoped id or Instagram-scoped id. */
export const ContactIdentity = z
  .object({ platform: Platform, channel_id: Id, external_id: z.string() })
  .meta({ id: 'ContactIdentity' });
export type ContactIdentity = z.infer<typeof ContactIdentity>;

export const Contact = z
  .object({
    id: Id,
    name: z.string().nullable(),
    phone: z
      .string()
      .nullable()
      .meta({ description: '`null` for a contact known only by a Messenger or Instagram identity.' }),
    email: z.string().nullable(),
    tags: z.array(z.string()),
    attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    identities: z
      .array(ContactIdentity)
      .meta({ description: 'The channels the contact has written from, oldest first.' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Contact' });
export type Contact = z.infer<typeof Contact>;

export const ContactList = listOf(Contact, 'ContactList');
export type ContactList = z.infer<typeof ContactList>;

const Tags = z.array(TagName).max(50, { message: 'At most 50 tags per contact' });

export const CreateContactBody = z
  .strictObject({
    name: ContactName.nullable().optional(),
    phone: Phone,
    email: Email.nullable().optional(),
    tags: Tags.optional(),
    attributes: Attributes.optional(),
  })
  .meta({ id: 'CreateContactBody' });
export type CreateContactBody = z.input<typeof CreateContactBody>;

export const UpdateContactBody = z
  .strictObject({
    name: ContactName.nullable().optional(),
    phone: Phone.optional(),
    email: Email.nullable().optional(),
    tags: Tags.optional().meta({ description: 'Replaces the whole set of tags.' }),
    attributes: Attributes.optional().meta({ description: 'Replaces the whole set of attributes.' }),
  })
  .meta({ id: 'UpdateContactBody' });
export type UpdateContactBody = z.input<typeof UpdateContactBody>;

export const ListContactsQuery = z.strictObject({
  ...pagination,
  search: Search.optional(),
  tag: z.string().max(64).optional().meta({ description: 'Only contacts that have this tag.' }),
});
export type ListContactsQuery = z.input<typeof ListContactsQuery>;

export const AddTagBody = z.strictObject({ tag: TagName }).meta({ id: 'AddTagBody' });
export type AddTagBody = z.input<typeof AddTagBody>;

export const ContactIdParams = z.strictObject({ id: Id });
export const ContactTagParams = z.strictObject({ id: Id, tag: z.string() });
