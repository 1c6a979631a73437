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
const AccessToken = text(1, 4096).meta({
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

export const CreateChannelBody = z
  .strictObject({
    platform: Platform,
    name: ChannelName.optional().meta({ description: 'Defaults to the platform and the external id.' }),
    external_id: ExternalId,
    access_token: AccessToken,
    app_secret: AppSecret,
    verify_token: VerifyToken.optional(),
  })
  .meta({ id: 'CreateChannelBody' });
export type CreateChannelBody = z.input<typeof CreateChannelBody>;

export const UpdateChannelBody = z
  .strictObject({
    name: ChannelName.optional(),
    access_token: AccessToken.optional(),
    app_secret: AppSecret.optional(),
    verify_token: VerifyToken.optional(),
    status: z.enum(['active', 'disabled']).optional().meta({
      description: '`disabled` stops sending and receiving; `active` re-enables a disabled channel or one in `error`.',
    }),
  })
  .meta({ id: 'UpdateChannelBody' });
export type UpdateChannelBody = z.input<typeof UpdateChannelBody>;

export const ListChannelsQuery = z.strictObject({ ...pagination, platform: Platform.optional() });
export type ListChannelsQuery = z.input<typeof ListChannelsQuery>;

export const ChannelIdParams = z.strictObject({ id: Id });
