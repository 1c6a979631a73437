import { CreateKeyInput, KeyType } from '@convo/core';
import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { FormError, TextField } from '../components/field';
import { ConfirmDialog, ModalDialog } from '../components/modal';
import { ShownOnce } from '../components/shown-once';
import { useToast } from '../components/toasts';
import { consoleErrorOf, showServerError } from '../errors';
import { formatDateTime } from '../format';
import { useSignedIn } from '../layout/console-layout';
import { KEY_TYPE_LABELS } from '../schemas';
import { canManage } from '../session';
import { type Outputs, useTRPC } from '../trpc';
import { DataTable } from '../components/data-table';

type ApiKey = Outputs['keys']['list'][number];

const KEY_TYPE_HINTS: Record<KeyType, string> = {
  full_access: 'Reads and writes everything in the account through /v1.',
  read_only: 'Reads only: every write is refused.',
  webhook: 'Signs webhook deliveries (whsec_…); it cannot call the API.',
};

/** Which keys the page lists: those that work, the revoked ones (kept, as Stripe keeps them), or both. */
const KEY_FILTERS = { active: 'Active', revoked: 'Revoked', all: 'All' } as const;
type KeyFilter = keyof typeof KEY_FILTERS;

/** How often the list is read again while the page is open, so that "Last used" follows the key's use. */
const REFRESH_MS = 5_000;

export function ApiKeysPage() {
  const session = useSignedIn();
  const trpc = useTRPC();
  const keys = useQuery({ ...trpc.keys.list.queryOptions(), refetchInterval: REFRESH_MS });
  const manager = canManage(session);
  const [generating, setGenerating] = useState(false);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const [filter, setFilter] = useState<KeyFilter>('active');
  const shown = (keys.data ?? []).filter(
    (key) => filter === 'all' || (filter === 'revoked') === (key.revoked_at !== null),
  );
  return (
    <>
      <div className="page-header">
        <h1>API keys</h1>
        {manager ? (
          <button
            data-primary-action
            type="button"
            className="button button-primary"
            onClick={() => setGenerating(true)}
          >
            Generate key
          </button>
        ) : null}
      </div>
      <p className="lead">
        Keys let your apps call the Convo API (<code>/v1</code>). Full-access keys read and write, read-only keys only
        read. Webhook keys are the signing secrets of webhook deliveries: every delivery is signed with each of the
        account's webhook keys.
      </p>
      {manager ? null : <p className="notice">Only owners and admins can generate and revoke keys.</p>}
      <fieldset className="segmented">
        <legend className="visually-hidden">Show</legend>
        {Object.entries(KEY_FILTERS).map(([value, label]) => (
          <label key={value}>
            <input
              type="radio"
              name="key-filter"
              value={value}
              checked={filter === value}
              onChange={() => setFilter(value as KeyFilter)}
            />
            <span>{label}</span>
          </label>
        ))}
      </fieldset>
      {keys.isPending ? (
        <p role="status">Loading keys…</p>
      ) : keys.isError ? (
        <p role="alert">Could not load the keys: {consoleErrorOf(keys.error).message}</p>
      ) : shown.length === 0 ? (
        <p>{filter === 'revoked' ? 'No revoked keys.' : 'No keys yet.'}</p>
      ) : (
        <DataTable
          caption={`API keys of ${session.account.name}`}
          rows={shown}
          rowKey={(key) => key.id}
          columns={[
            { label: 'Name', cell: (key) => key.name },
            { label: 'Type', cell: (key) => KEY_TYPE_LABELS[key.type] },
            { label: 'Key', className: 'mono', cell: (key) => `…${key.last_four}` },
            { label: 'Created', cell: (key) => formatDateTime(key.created_at) },
            { label: 'Last used', cell: (key) => formatDateTime(key.last_used_at) },
            {
              label: 'Status',
              className: 'actions',
              cell: (key) =>
                key.revoked_at !== null ? (
                  <span>
                    Revoked {formatDateTime(key.revoked_at)}
                    {key.revoked_by ? ` by ${key.revoked_by}` : ''}
                  </span>
                ) : manager ? (
                  <button
                    type="button"
                    className="button button-small"
                    onClick={() => setRevoking(key)}
                    aria-label={`Revoke ${key.name}`}
                  >
                    Revoke
                  </button>
                ) : (
                  'Active'
                ),
            },
          ]}
        />
      )}
      {manager ? <GenerateKeyDialog isOpen={generating} onClose={() => setGenerating(false)} /> : null}
      {manager ? <RevokeKeyDialog apiKey={revoking} onClose={() => setRevoking(null)} /> : null}
    </>
  );
}

/** Name and type, then the value, once: it is not kept anywhere once the dialog closes. */
export function GenerateKeyDialog({ isOpen, onClose }: { isOpen: boolean; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const form = useForm<CreateKeyInput>({
    resolver: zodResolver(CreateKeyInput),
    defaultValues: { name: '', type: 'full_access' },
  });
  const create = useMutation(
    trpc.keys.create.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries(trpc.keys.list.queryFilter()),
      onError: (error) => showServerError(error, form.setError, ['name', 'type']),
    }),
  );
  const close = () => {
    create.reset();
    form.reset();
    onClose();
  };
  const created = create.data;
  const { errors } = form.formState;
  return (
    <ModalDialog
      title={created ? 'Your new key' : 'Generate key'}
      isOpen={isOpen}
      onOpenChange={(open) => (open ? undefined : close())}
      isDismissable={!created}
    >
      {created ? (
        <ShownOnce
          warning="This key is shown only once. Store it now; you cannot see it again."
          label={`Key ${created.name}`}
          value={created.key}
          onDone={close}
        />
      ) : (
        <form noValidate onSubmit={form.handleSubmit((values) => create.mutate(values))}>
          <FormError message={errors.root?.server?.message} />
          <TextField
            label="Name"
            maxLength={100}
            autoComplete="off"
            hint="What uses it, e.g. “backend” or “Zapier”."
            error={errors.name?.message}
            {...form.register('name')}
          />
          <fieldset className="field">
            <legend>Type</legend>
            {KeyType.options.map((type) => (
              <label key={type} className="radio">
                <input type="radio" value={type} {...form.register('type')} />
                <span>
                  <strong>{KEY_TYPE_LABELS[type]}</strong> <span className="muted">{KEY_TYPE_HINTS[type]}</span>
                </span>
              </label>
            ))}
            {errors.type ? <p className="field-error">{errors.type.message}</p> : null}
          </fieldset>
          <div className="dialog-actions">
            <button type="button" className="button" onClick={close}>
              Cancel
            </button>
            <button type="submit" className="button button-primary" disabled={create.isPending}>
              Generate key
            </button>
          </div>
        </form>
      )}
    </ModalDialog>
  );
}

export function RevokeKeyDialog({ apiKey, onClose }: { apiKey: ApiKey | null; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const revoke = useMutation(
    trpc.keys.revoke.mutationOptions({
      onSuccess: async () => {
        toast('Key revoked');
        close();
        await queryClient.invalidateQueries(trpc.keys.list.queryFilter());
      },
    }),
  );
  const close = () => {
    revoke.reset();
    onClose();
  };
  return (
    <ConfirmDialog
      title="Revoke key"
      isOpen={apiKey !== null}
      onCancel={close}
      onConfirm={() => apiKey && revoke.mutate({ id: apiKey.id })}
      confirmLabel="Revoke"
      isPending={revoke.isPending}
      error={revoke.isError ? consoleErrorOf(revoke.error).message : undefined}
    >
      <p>Revoke key {apiKey?.name}? Apps using it stop working immediately.</p>
    </ConfirmDialog>
  );
}
