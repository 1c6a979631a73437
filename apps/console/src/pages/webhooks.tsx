import { CreateWebhookEndpointBody, EVENT_TYPES, UpdateWebhookEndpointBody, type WebhookEndpoint } from '@convo/core';
import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { type FieldError, type UseFormRegisterReturn, useForm } from 'react-hook-form';
import { Link } from 'wouter';
import type * as z from 'zod';
import { FormError, TextField } from '../components/field';
import { ConfirmDialog, ModalDialog } from '../components/modal';
import { ListSection } from '../components/list-section';
import { ShownOnce } from '../components/shown-once';
import { useToast } from '../components/toasts';
import { consoleErrorOf, showServerError } from '../errors';
import { useSignedIn } from '../layout/console-layout';
import { canManage } from '../session';
import { useTRPC } from '../trpc';
import { DataTable } from '../components/data-table';

/** Zod's own wording for the contract's rules, in the console's words. */
const formMessages: z.core.$ZodErrorMap = (issue) => {
  if (issue.code === 'too_small' && issue.origin === 'array') return 'Choose at least one event type';
  if (issue.code === 'invalid_format' || (issue.code === 'invalid_type' && issue.path?.[0] === 'url'))
    return 'Enter an absolute https URL';
  return undefined;
};

export function eventsLabel(events: readonly string[]): string {
  return events.includes('*') ? 'All events' : events.join(', ');
}

function EventsFieldset({ register, error }: { register: UseFormRegisterReturn; error: FieldError | undefined }) {
  return (
    <fieldset className="field">
      <legend>Events</legend>
      <label className="checkbox">
        <input type="checkbox" value="*" {...register} />
        <span>All events, including types added later</span>
      </label>
      {EVENT_TYPES.map((type) => (
        <label key={type} className="checkbox">
          <input type="checkbox" value={type} {...register} />
          <span className="mono">{type}</span>
        </label>
      ))}
      {error ? <p className="field-error">{error.message}</p> : null}
    </fieldset>
  );
}

export function WebhooksPage() {
  const session = useSignedIn();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const endpoints = useQuery(trpc.webhookEndpoints.list.queryOptions({ query: { limit: 100 } }));
  const keys = useQuery(trpc.keys.list.queryOptions());
  // Endpoints but no webhook key: every delivery fails with no_signing_key until one exists.
  const unsigned =
    (endpoints.data?.data.length ?? 0) > 0 &&
    keys.data !== undefined &&
    !keys.data.some((key) => key.type === 'webhook' && key.revoked_at === null);
  const manager = canManage(session);
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<WebhookEndpoint | null>(null);
  const [deleting, setDeleting] = useState<WebhookEndpoint | null>(null);
  const refresh = () => queryClient.invalidateQueries(trpc.webhookEndpoints.list.queryFilter());
  const update = useMutation(
    trpc.webhookEndpoints.update.mutationOptions({
      onSuccess: async (endpoint) => {
        toast(endpoint.status === 'enabled' ? 'Endpoint enabled' : 'Endpoint disabled');
        await refresh();
      },
      onError: (error) => toast(consoleErrorOf(error).message),
    }),
  );
  const remove = useMutation(
    trpc.webhookEndpoints.delete.mutationOptions({
      onSuccess: async () => {
        toast('Endpoint deleted');
        setDeleting(null);
        await refresh();
      },
    }),
  );
  return (
    <>
      <div className="page-header">
        <h1>Webhooks</h1>
        {manager ? (
          <button data-primary-action type="button" className="button button-primary" onClick={() => setCreating(true)}>
            Add endpoint
          </button>
        ) : null}
      </div>
      <p className="lead">
        Convo POSTs each event to every endpoint subscribed to its type. Deliveries are signed with the account's
        webhook keys (<Link href="/api-keys">API keys page</Link>).
      </p>
      {manager ? null : <p className="notice">Only owners and admins can add, change and delete endpoints.</p>}
      {unsigned ? (
        <p className="warning" role="alert">
          The account has no webhook key, so nothing can sign deliveries: each attempt fails with{' '}
          <code>no_signing_key</code> and is retried until a key exists. Generate a webhook key on the{' '}
          <Link href="/api-keys">API keys page</Link>.
        </p>
      ) : null}
      <ListSection query={endpoints} noun="endpoints" empty="No endpoints yet.">
        {(records) => (
          <>
            <DataTable
              caption="Webhook endpoints"
              rows={records}
              rowKey={(endpoint) => endpoint.id}
              columns={[
                {
                  label: 'URL',
                  cell: (endpoint) => (
                    <>
                      <Link href={`/webhooks/${endpoint.id}`} className="mono">
                        {endpoint.url}
                      </Link>
                      {endpoint.description ? <div className="muted">{endpoint.description}</div> : null}
                    </>
                  ),
                },
                { label: 'Events', cell: (endpoint) => eventsLabel(endpoint.events) },
                {
                  label: 'Status',
                  cell: (endpoint) => (
                    <span className={`badge badge-${endpoint.status}`}>
                      {endpoint.status === 'enabled' ? 'Enabled' : 'Disabled'}
                    </span>
                  ),
                },
              ]}
              actions={
                manager &&
                ((endpoint) => (
                  <>
                    <button
                      type="button"
                      className="button button-small"
                      onClick={() => setEditing(endpoint)}
                      aria-label={`Edit events of ${endpoint.url}`}
                    >
                      Edit events
                    </button>
                    <button
                      type="button"
                      className="button button-small"
                      disabled={update.isPending}
                      onClick={() =>
                        update.mutate({
                          params: { id: endpoint.id },
                          body: { status: endpoint.status === 'enabled' ? 'disabled' : 'enabled' },
                        })
                      }
                      aria-label={`${endpoint.status === 'enabled' ? 'Disable' : 'Enable'} ${endpoint.url}`}
                    >
                      {endpoint.status === 'enabled' ? 'Disable' : 'Enable'}
                    </button>
                    <button
                      type="button"
                      className="button button-small"
                      onClick={() => setDeleting(endpoint)}
                      aria-label={`Delete ${endpoint.url}`}
                    >
                      Delete
                    </button>
                  </>
                ))
              }
            />
          </>
        )}
      </ListSection>
      {manager ? (
        <>
          <CreateEndpointDialog isOpen={creating} onClose={() => setCreating(false)} />
          {editing ? <EditEventsDialog endpoint={editing} onClose={() => setEditing(null)} /> : null}
          <ConfirmDialog
            title="Delete endpoint"
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
              Delete the endpoint {deleting?.url}? It receives nothing more, and its deliveries are no longer listed.
            </p>
          </ConfirmDialog>
        </>
      ) : null}
    </>
  );
}

type CreateForm = z.input<typeof CreateWebhookEndpointBody>;

function CreateEndpointDialog({ isOpen, onClose }: { isOpen: boolean; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const form = useForm<CreateForm>({
    resolver: zodResolver(CreateWebhookEndpointBody, { error: formMessages }),
    defaultValues: { url: '', events: [], description: '' },
  });
  const create = useMutation(
    trpc.webhookEndpoints.create.mutationOptions({
      onSuccess: async (created) => {
        toast('Endpoint added');
        // A signing secret made by this creation stays on screen until it is dismissed.
        if (created.secret === undefined) close();
        await queryClient.invalidateQueries(trpc.webhookEndpoints.list.queryFilter());
        if (created.secret !== undefined) await queryClient.invalidateQueries(trpc.keys.list.queryFilter());
      },
      onError: (error) => showServerError(error, form.setError, ['url', 'events', 'description']),
    }),
  );
  const close = () => {
    create.reset();
    form.reset();
    onClose();
  };
  const secret = create.data?.secret;
  const { errors } = form.formState;
  return (
    <ModalDialog
      title={secret ? 'Your signing secret' : 'Add endpoint'}
      isOpen={isOpen}
      onOpenChange={(open) => (open ? undefined : close())}
      isDismissable={!secret}
    >
      {secret ? (
        <ShownOnce
          warning="The account had no webhook key, so one was made to sign deliveries. It is shown only once: store it now and verify deliveries with it."
          label="Signing secret"
          value={secret}
          onDone={close}
        />
      ) : (
        <form
          noValidate
          onSubmit={form.handleSubmit(({ url, events, description }) =>
            create.mutate({ body: { url, events, ...(description ? { description } : {}) } }),
          )}
        >
          <FormError message={errors.root?.server?.message} />
          <TextField
            label="URL"
            type="url"
            placeholder="https://example.com/webhooks/convo"
            error={errors.url?.message}
            {...form.register('url')}
          />
          <EventsFieldset register={form.register('events')} error={errors.events as FieldError | undefined} />
          <TextField
            label="Description (optional)"
            error={errors.description?.message}
            {...form.register('description')}
          />
          <div className="dialog-actions">
            <button type="button" className="button" onClick={close}>
              Cancel
            </button>
            <button type="submit" className="button button-primary" disabled={create.isPending}>
              Add endpoint
            </button>
          </div>
        </form>
      )}
    </ModalDialog>
  );
}

const EditEventsForm = UpdateWebhookEndpointBody.pick({ events: true }).required();
type EditEventsForm = z.input<typeof EditEventsForm>;

function EditEventsDialog({ endpoint, onClose }: { endpoint: WebhookEndpoint; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const form = useForm<EditEventsForm>({
    resolver: zodResolver(EditEventsForm, { error: formMessages }),
    defaultValues: { events: endpoint.events as EditEventsForm['events'] },
  });
  const update = useMutation(
    trpc.webhookEndpoints.update.mutationOptions({
      onSuccess: async () => {
        toast('Events saved');
        onClose();
        await queryClient.invalidateQueries(trpc.webhookEndpoints.list.queryFilter());
      },
      onError: (error) => showServerError(error, form.setError, ['events']),
    }),
  );
  const { errors } = form.formState;
  return (
    <ModalDialog title="Edit events" isOpen onOpenChange={(open) => (open ? undefined : onClose())}>
      <p className="mono">{endpoint.url}</p>
      <form
        noValidate
        onSubmit={form.handleSubmit(({ events }) => update.mutate({ params: { id: endpoint.id }, body: { events } }))}
      >
        <FormError message={errors.root?.server?.message} />
        <EventsFieldset register={form.register('events')} error={errors.events as FieldError | undefined} />
        <div className="dialog-actions">
          <button type="button" className="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={update.isPending}>
            Save events
          </button>
        </div>
      </form>
    </ModalDialog>
  );
}
