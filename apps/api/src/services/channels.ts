import { randomBytes } from 'node:crypto';
import type { Channel, CreateChannelBody, ListChannelsQuery, Platform, UpdateChannelBody } from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { type ChannelRow, channelsRepository } from '../repositories/channels.js';
import { openSecret, sealSecret } from '../secret-box.js';
import type { TenantScope } from '../repositories/tenant.js';
import type { Settings } from '../settings.js';
import { type Change, type ServiceContext, transaction, page, scopeOf } from './context.js';

const PLATFORM_NAMES: Record<Platform, string> = {
  whatsapp: 'WhatsApp',
  facebook: 'Messenger',
  instagram: 'Instagram',
};

/** Where Meta posts a channel's webhooks: outside /v1, named by the channel's id. */
export const channelWebhookUrl = (settings: Settings, id: string) => `${settings.publicUrl}/hooks/meta/${id}`;

export const toChannel = (row: ChannelRow, settings: Settings): Channel => ({
  id: row.id,
  platform: row.platform,
  name: row.name,
  external_id: row.external_id,
  status: row.status,
  business_account_id: row.business_account_id,
  webhook_url: channelWebhookUrl(settings, row.id),
  verify_token: row.verify_token,
  last_error: row.last_error === null ? null : (JSON.parse(row.last_error) as Channel['last_error']),
  created_at: row.created_at,
  updated_at: row.updated_at,
});

const externalIdTaken = (existingId: string) =>
  ApiError.badRequest('external_id', 'unique', 'This account already has a channel for this id on this platform', {
    existing_id: existingId,
  });

const onlyWhatsApp = () =>
  ApiError.badRequest(
    'business_account_id',
    'unknown',
    'Only WhatsApp channels belong to a WhatsApp Business Account; Messenger and Instagram have no templates',
  );

async function findOrThrow(scope: TenantScope, id: string): Promise<ChannelRow> {
  const row = await channelsRepository.findById(scope, id);
  if (!row) throw ApiError.notFound('channel', id);
  return row;
}

/** A channel's access token in clear, or the error when this server's key cannot open it (sends and downloads). */
export function openChannelToken(settings: Settings, channel: ChannelRow): string | { code: string; message: string } {
  try {
    return openSecret(settings.secretKey(), channel.access_token_sealed);
  } catch {
    return {
      code: 'channel_token_unreadable',
      message:
        "The channel's access token cannot be opened with this server's secret key; set it again with PATCH /v1/channels/:id",
    };
  }
}

export const channelsService = {
  async list(ctx: ServiceContext, query: z.output<typeof ListChannelsQuery>) {
    const { rows, total } = await channelsRepository.list(scopeOf(ctx), { platform: query.platform }, query);
    return page(
      rows.map((row) => toChannel(row, ctx.settings)),
      total,
      query.limit,
      query.offset,
    );
  },

  async retrieve(ctx: ServiceContext, id: string): Promise<Channel> {
    return toChannel(await findOrThrow(scopeOf(ctx), id), ctx.settings);
  },

  async create(ctx: ServiceContext, body: z.output<typeof CreateChannelBody>): Promise<Channel> {
    const key = ctx.settings.secretKey();
    const at = now();
    const row: Omit<ChannelRow, 'account_id'> = {
      id: newId('channel'),
      platform: body.platform,
      name: body.name ?? `${PLATFORM_NAMES[body.platform]} ${body.external_id}`,
      external_id: body.external_id,
      status: 'active',
      business_account_id: body.business_account_id ?? null,
      verify_token: body.verify_token ?? randomBytes(24).toString('base64url'),
      access_token_sealed: sealSecret(key, body.access_token),
      app_secret_sealed: sealSecret(key, body.app_secret),
      last_error: null,
      created_at: at,
      updated_at: at,
    };
    try {
      await transaction(ctx, async (tx) => {
        const scope = scopeOf(tx);
        const existing = await channelsRepository.findByExternalId(scope, body.platform, body.external_id);
        if (existing) throw externalIdTaken(existing.id);
        await channelsRepository.insert(scope, row);
      });
    } catch (error) {
      // Taken meanwhile; inside a caller's transaction nothing can be read now, and its run again answers.
      if (ctx.database.isUniqueViolation(error) && !ctx.database.db.isTransaction) {
        const existing = await channelsRepository.findByExternalId(scopeOf(ctx), body.platform, body.external_id);
        if (existing) throw externalIdTaken(existing.id);
      }
      throw error;
    }
    return toChannel({ ...row, account_id: ctx.accountId }, ctx.settings);
  },

  /** Renames, rotates secrets, disables or re-enables (`active` also clears an `error` and its last error). */
  async update(ctx: ServiceContext, { id, body }: Change<typeof UpdateChannelBody>): Promise<Channel> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const current = await findOrThrow(scope, id);
      const patch: Partial<ChannelRow> = {};
      if (body.name !== undefined && body.name !== current.name) patch.name = body.name;
      if (body.verify_token !== undefined && body.verify_token !== current.verify_token)
        patch.verify_token = body.verify_token;
      if (body.business_account_id !== undefined && body.business_account_id !== current.business_account_id) {
        if (current.platform !== 'whatsapp' && body.business_account_id !== null) throw onlyWhatsApp();
        patch.business_account_id = body.business_account_id;
      }
      if (body.access_token !== undefined)
        patch.access_token_sealed = sealSecret(ctx.settings.secretKey(), body.access_token);
      if (body.app_secret !== undefined)
        patch.app_secret_sealed = sealSecret(ctx.settings.secretKey(), body.app_secret);
      if (body.status === 'disabled' && current.status !== 'disabled') patch.status = 'disabled';
      if (body.status === 'active' && current.status !== 'active')
        Object.assign(patch, { status: 'active', last_error: null });
      // A new token may be the fix for the error that stopped the channel.
      if (body.access_token !== undefined && current.status === 'error' && body.status === undefined)
        Object.assign(patch, { status: 'active', last_error: null });
      if (Object.keys(patch).length === 0) return toChannel(current, ctx.settings);
      patch.updated_at = now();
      await channelsRepository.update(scope, id, patch);
      return toChannel({ ...current, ...patch }, ctx.settings);
    });
  },

  /**
   * The platform refused the channel's token: the channel goes to `error` with the platform's
   * reason. A token replaced meanwhile (PATCH) is not the one refused, so the channel is then
   * left as it is; a disabled channel stays disabled.
   */
  async refuseToken(
    ctx: ServiceContext,
    input: { channel: ChannelRow; error: { code: string; message: string } },
  ): Promise<void> {
    await transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const current = await channelsRepository.findById(scope, input.channel.id);
      if (!current || current.access_token_sealed !== input.channel.access_token_sealed) return;
      const at = now();
      await channelsRepository.update(scope, current.id, {
        status: current.status === 'disabled' ? 'disabled' : 'error',
        last_error: JSON.stringify({ code: input.error.code, message: input.error.message, at }),
        updated_at: at,
      });
    });
  },

  async delete(ctx: ServiceContext, id: string): Promise<void> {
    const deleted = await channelsRepository.delete(scopeOf(ctx), id);
    if (Number(deleted.numDeletedRows) === 0) throw ApiError.notFound('channel', id);
  },
};
