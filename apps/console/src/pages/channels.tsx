import { type Channel, CreateChannelBody, type Platform } from '@convo/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { useForm } from 'react-hook-form';
import type * as z from 'zod';
import { CopyField } from '../components/copy-field';
import { FormError, TextField } from '../components/field';
import { ConfirmDialog, ModalDialog } from '../components/modal';
import { useToast } from '../components/toasts';
import { consoleErrorOf, showServerError } from '../errors';
import { contractResolver } from '../forms';
import { useSignedIn } from '../layout/console-layout';
import { canManage } from '../session';
import { useTRPC } from '../trpc';
import { DataTable } from '../components/data-table';

export const PLATFORMS: Record<Platform, { label: string; externalId: string; externalIdHint: string; token: string }> =
  {
    whatsapp: {
      label: 'WhatsApp',
      externalId: 'Phone number ID',
      externalIdHint: 'WhatsApp → API Setup in the Meta app (not the phone number itself).',
      token: 'System user access token',
    },
    facebook: {
      label: 'Messenger',
      externalId: 'Page ID',
      externalIdHint: "The Facebook Page's id.",
      token: 'Page access token',
    },
    instagram: {
      label: 'Instagram',
      externalId: 'Instagram account ID',
      externalIdHint: 'The Instagram professional account connected to your Page.',
      token: 'Page access token',
    },
  };

export function ChannelsPage() {
  const session = useSignedIn();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const channels = useQuery(trpc.channels.list.queryOptions({ query: { limit: 100 } }));
  const manager = canManage(session);
  const [connecting, setConnecting] = useState(false);
  const [showing, setShowing] = useState<Channel | null>(null);
  const [deleting, setDeleting] = useState<Channel | null>(null);
  const refresh = () => queryClient.invalidateQueries(trpc.channels.list.queryFilter());
  const update = useMutation(
    trpc.channels.update.mutationOptions({
      onSuccess: async (channel) => {
        toast(channel.status === 'disabled' ? 'Channel disabled' : 'Channel enabled');
        await refresh();
      },
      onError: (error) => toast(consoleErrorOf(error).message),
    }),
  );
  const remove = useMutation(
    trpc.channels.delete.mutationOptions({
      onSuccess: async () => {
        toast('Channel deleted');
        setDeleting(null);
        await refresh();
      },
    }),
  );
  return (
    <>
      <div className="page-header">
        <h1>Channels</h1>
        {manager ? (
          <button
            data-primary-action
            type="button"
            className="button button-primary"
            onClick={() => setConnecting(true)}
          >
            Connect channel
          </button>
        ) : null}
      </div>
      <p className="lead">
        A channel connects the account to a WhatsApp Business number, a Facebook Page (Messenger) or an Instagram
        professional account.
      </p>
      {manager ? null : <p className="notice">Only owners and admins can connect, change and delete channels.</p>}
      {channels.isPending ? (
        <p role="status">Loading channels…</p>
      ) : channels.isError ? (
        <p role="alert">Could not load the channels: {consoleErrorOf(channels.error).message}</p>
      ) : channels.data.data.length === 0 ? (
        <p>No channels yet.</p>
      ) : (
        <DataTable
          caption="Channels"
          rows={channels.data.data}
          rowKey={(channel) => channel.id}
          columns={[
            { label: 'Name', cell: (channel) => channel.name },
            { label: 'Platform', cell: (channel) => PLATFORMS[channel.platform].label },
            { label: 'Meta id', className: 'mono', cell: (channel) => channel.external_id },
            {
              label: 'Status',
              cell: (channel) => (
                <>
                  <span className={`badge badge-${channel.status}`}>{channel.status}</span>
                  {channel.last_error ? <div className="muted">{channel.last_error.message}</div> : null}
                </>
              ),
            },
          ]}
          actions={(channel) => (
            <>
              <button
                type="button"
                className="button button-small"
                onClick={() => setShowing(channel)}
                aria-label={`Webhook settings of ${channel.name}`}
              >
                Webhook settings
              </button>
              {manager ? (
                <>
                  <button
                    type="button"
                    className="button button-small"
                    disabled={update.isPending}
                    onClick={() =>
                      update.mutate({
                        params: { id: channel.id },
                        body: { status: channel.status === 'disabled' ? 'active' : 'disabled' },
                      })
                    }
                    aria-label={`${channel.status === 'disabled' ? 'Enable' : 'Disable'} ${channel.name}`}
                  >
                    {channel.status === 'disabled' ? 'Enable' : 'Disable'}
                  </button>
                  <button
                    type="button"
                    className="button button-small"
                    onClick={() => setDeleting(channel)}
                    aria-label={`Delete ${channel.name}`}
                  >
                    Delete
                  </button>
                </>
              ) : null}
            </>
          )}
        />
      )}
      {connecting ? (
        <ConnectChannelDialog
          onClose={() => setConnecting(false)}
          onConnected={(channel) => {
            setConnecting(false);
            setShowing(channel);
          }}
        />
      ) : null}
      {showing ? <WebhookSettingsDialog channel={showing} onClose={() => setShowing(null)} /> : null}
      <ConfirmDialog
        title="Delete channel"
        isOpen={deleting !== null}
        onCancel={() => {
          remove.reset();
          setDeleting(null);
        }}
        onConfirm={() => deleting && remove.mutate({ params: { id: deleting.id } })}
        confirmLabel="Delete"
        isPending={remove.isPending}
        error={remove.isError ? consoleErrorOf(remove.error).message : undefined}
      >
        <p>
          Delete the channel {deleting?.name}? Its conversations stay, but nothing more is received or sent through it.
        </p>
      </ConfirmDialog>
    </>
  );
}

interface ConnectForm {
  platform: Platform;
  name: string;
  external_id: string;
  access_token: string;
  app_secret: string;
  verify_token: string;
}
function ConnectChannelDialog({
  onClose,
  onConnected,
}: {
  onClose: () => void;
  onConnected: (channel: Channel) => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const platformId = useId();
  const form = useForm<ConnectForm, unknown, z.output<typeof CreateChannelBody>>({
    resolver: contractResolver<ConnectForm, z.output<typeof CreateChannelBody>>(CreateChannelBody, [
      'name',
      'verify_token',
    ]),
    defaultValues: {
      platform: 'whatsapp',
      name: '',
      external_id: '',
      access_token: '',
      app_secret: '',
      verify_token: '',
    },
  });
  const create = useMutation(
    trpc.channels.create.mutationOptions({
      onSuccess: async (channel) => {
        onConnected(channel);
        await queryClient.invalidateQueries(trpc.channels.list.queryFilter());
      },
      onError: (error) =>
        showServerError(error, form.setError, [
          'platform',
          'name',
          'external_id',
          'access_token',
          'app_secret',
          'verify_token',
        ]),
    }),
  );
  const platform = PLATFORMS[form.watch('platform')];
  const { errors } = form.formState;
  return (
    <ModalDialog title="Connect channel" isOpen onOpenChange={(open) => (open ? undefined : onClose())}>
      <form noValidate onSubmit={form.handleSubmit((body) => create.mutate({ body }))}>
        <FormError message={errors.root?.server?.message} />
        <div className="field">
          <label htmlFor={platformId}>Platform</label>
          <select id={platformId} {...form.register('platform')}>
            {(Object.keys(PLATFORMS) as Platform[]).map((value) => (
              <option key={value} value={value}>
                {PLATFORMS[value].label}
              </option>
            ))}
          </select>
        </div>
        <TextField
          label={platform.externalId}
          inputMode="numeric"
          autoComplete="off"
          hint={platform.externalIdHint}
          error={errors.external_id?.message}
          {...form.register('external_id')}
        />
        <TextField
          label={platform.token}
          type="password"
          autoComplete="off"
          hint="Stored sealed; never shown again."
          error={errors.access_token?.message}
          {...form.register('access_token')}
        />
        <TextField
          label="App secret"
          type="password"
          autoComplete="off"
          hint="App settings → Basic in the Meta app."
          error={errors.app_secret?.message}
          {...form.register('app_secret')}
        />
        <TextField
          label="Name (optional)"
          autoComplete="off"
          hint="Defaults to the platform and the id."
          error={errors.name?.message}
          {...form.register('name')}
        />
        <TextField
          label="Verify token (optional)"
          autoComplete="off"
          hint="Generated when left empty."
          error={errors.verify_token?.message}
          {...form.register('verify_token')}
        />
        <div className="dialog-actions">
          <button type="button" className="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={create.isPending}>
            Connect channel
          </button>
        </div>
      </form>
    </ModalDialog>
  );
}

function WebhookSettingsDialog({ channel, onClose }: { channel: Channel; onClose: () => void }) {
  return (
    <ModalDialog
      title={`Webhook settings: ${channel.name}`}
      isOpen
      onOpenChange={(open) => (open ? undefined : onClose())}
    >
      <p>
        In the Meta app's dashboard, open the webhook configuration of {PLATFORMS[channel.platform].label}, paste these
        two values and choose “Verify and save”, then subscribe to the messages field.
      </p>
      <CopyField label="Callback URL" value={channel.webhook_url} />
      <CopyField label="Verify token" value={channel.verify_token} />
      <div className="dialog-actions">
        <button type="button" className="button button-primary" onClick={onClose}>
          Done
        </button>
      </div>
    </ModalDialog>
  );
}
