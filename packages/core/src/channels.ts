import * as z from 'zod';
import { Id, Platform, Timestamp, listOf, pagination, text } from './common.js';

export const ChannelStatus = z.enum(['active', 'error', 'disabled']).meta({ id: 'ChannelStatus' });
export type ChannelStatus = z.infer<typeof ChannelStatus>;

/** What the platform said the last time it refused the channel's token or a send failed for the channel's sake. */
export const ChannelError = z
  .object({
    code: z.string().meta({ description: "The Graph API error's code, as a string (`190` for an invalid token)." }),
    message: z.string(),
    at: Timestamp,
  })
  .meta({ id: 'ChannelError' });

export const Channel = z
  .object({
    id: Id,
    platform: Platform,
    name: z.string(),
    external_id: z
      .string()
      .meta({ description: 'The WhatsApp phone number id, the Facebook Page id or the Instagram account id.' }),
    status: ChannelStatus,
    business_account_id: z.string().nullable().meta({
      description:
        'The WhatsApp Business Account that owns the number, whose message templates `GET /channels/{id}/templates` lists; `null` when not given (and on Messenger and Instagram).',
    }),
    webhook_url: z.string().meta({ description: "The callback URL to enter in the Meta app's webhook settings." }),
    verify_token: z.string().meta({ description: 'The verify token to enter beside `webhook_url`.' }),
    last_error: ChannelError.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Channel' });
export type Channel = z.infer<typeof Channel>;

export const ChannelList = listOf(Channel, 'ChannelList');
export type ChannelList = z.infer<typeof ChannelList>;

/** Meta's ids are decimal numbers written as strings. */
export const ExternalId = text(1, 64)
  .regex(/^[0-9]+$/, { message: 'Must be the numeric id Meta shows (digits only)' })
  .meta({ example: '106540352242922' });
// It travels in an Authorization header: printable ASCII only, as Meta's tokens are.
const AccessToken = text(1, 4096)
  .regex(/^[\x21-\x7e]+$/, { message: 'Printable ASCII without spaces, as Meta issues tokens' })
  .meta({
    description: 'A system-user or page access token. Write-only: never returned.',
    writeOnly: true,
  });
const AppSecret = text(1, 256).meta({
  description: "The Meta app's secret, which signs its webhooks. Write-only: never returned.",
  writeOnly: true,
});
const VerifyToken = text(8, 200)
  .regex(/^[\x21-\x7e]+$/, { message: 'Printable ASCII without spaces' })
  .meta({ description: 'Generated when not given.' });
const ChannelName = text(1, 200);
const BusinessAccountId = ExternalId.meta({
  description: 'WhatsApp only: the WhatsApp Business Account id, for its message templates.',
  example: '102290129340398',
});

export const CreateChannelBody = z
  .strictObject({
    platform: Platform,
    name: ChannelName.optional().meta({ description: 'Defaults to the platform and the external id.' }),
    external_id: ExternalId,
    access_token: AccessToken,
    app_secret: AppSecret,
    verify_token: VerifyToken.optional(),
    business_account_id: BusinessAccountId.optional(),
  })
  .check((ctx) => {
    if (ctx.value.business_account_id !== undefined && ctx.value.platform !== 'whatsapp')
      ctx.issues.push({
        code: 'unrecognized_keys',
        keys: ['business_account_id'],
        input: ctx.value,
        message: 'Only WhatsApp channels belong to a WhatsApp Business Account',
      });
  })
  .meta({
    id: 'CreateChannelBody',
    // The check above in JSON Schema terms.
    if: { properties: { platform: { const: 'whatsapp' } } },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's own keyword, not a thenable.
    then: {},
    else: { properties: { business_account_id: false } },
  });
export type CreateChannelBody = z.input<typeof CreateChannelBody>;

export const UpdateChannelBody = z
  .strictObject({
    name: ChannelName.optional(),
    access_token: AccessToken.optional(),
    app_secret: AppSecret.optional(),
    verify_token: VerifyToken.optional(),
    business_account_id: BusinessAccountId.nullable().optional().meta({ description: '`null` removes it.' }),
    status: z.enum(['active', 'disabled']).optional().meta({
      description: '`disabled` stops sending and receiving; `active` re-enables a disabled channel or one in `error`.',
    }),
  })
  .meta({ id: 'UpdateChannelBody' });
export type UpdateChannelBody = z.input<typeof UpdateChannelBody>;

export const ListChannelsQuery = z.strictObject({ ...pagination, platform: Platform.optional() });
export type ListChannelsQuery = z.input<typeof ListChannelsQuery>;

export const ChannelIdParams = z.strictObject({ id: Id });

/** The statuses Meta gives a message template; only `APPROVED` ones can be sent. */
export const TemplateStatus = z
  .enum([
    'APPROVED',
    'PENDING',
    'REJECTED',
    'PAUSED',
    'DISABLED',
    'IN_APPEAL',
    'PENDING_DELETION',
    'DELETED',
    'LIMIT_EXCEEDED',
    'ARCHIVED',
  ])
  .meta({ id: 'TemplateStatus' });

/** A WhatsApp message template as the Graph API lists it (`/{business_account_id}/message_templates`). */
export const WhatsAppTemplate = z
  .object({
    name: z.string(),
    language: z.string().meta({ description: 'As WhatsApp writes it: `en_US`, `pt_BR`.' }),
    status: z.string().meta({ description: '`APPROVED`, `PENDING`, `REJECTED`, `PAUSED`, … as Meta gives it.' }),
    category: z.string().meta({ description: '`MARKETING`, `UTILITY` or `AUTHENTICATION`.' }),
    components: z.array(z.record(z.string(), z.unknown())).meta({
      description:
        'Meta\'s own: `{type: "BODY", text: "Hi {{1}}"}`, a `HEADER` with a `format`, `FOOTER`, `BUTTONS`. Each `{{n}}` is a parameter a send must fill.',
    }),
  })
  .meta({ id: 'WhatsAppTemplate' });
export type WhatsAppTemplate = z.infer<typeof WhatsAppTemplate>;

export const WhatsAppTemplateList = listOf(WhatsAppTemplate, 'WhatsAppTemplateList');
export type WhatsAppTemplateList = z.infer<typeof WhatsAppTemplateList>;

export const ListTemplatesQuery = z.strictObject({ ...pagination, status: TemplateStatus.optional() });
export type ListTemplatesQuery = z.input<typeof ListTemplatesQuery>;
