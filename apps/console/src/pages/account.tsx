import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { CopyField } from '../components/copy-field';
import { ConfirmDialog, ModalDialog } from '../components/modal';
import { useToast } from '../components/toasts';
import { consoleErrorOf } from '../errors';
import { formatDateTime } from '../format';
import { useSignedIn } from '../layout/console-layout';
import { canManage } from '../session';
import { type Outputs, type Role, useTRPC } from '../trpc';
import { DataTable } from '../components/data-table';

type Member = Outputs['members']['list'][number];
type Invitation = Outputs['invitations']['list'][number];

const ROLE_LABELS: Record<Role, string> = { owner: 'Owner', admin: 'Admin', member: 'Member' };

export function AccountPage() {
  const session = useSignedIn();
  const trpc = useTRPC();
  const account = useQuery(trpc.account.get.queryOptions());
  const manager = canManage(session);
  return (
    <>
      <h1>Account</h1>
      {account.isPending ? (
        <p role="status">Loading…</p>
      ) : account.isError ? (
        <p role="alert">Could not load the account: {consoleErrorOf(account.error).message}</p>
      ) : (
        <dl className="facts">
          <dt>Name</dt>
          <dd>{account.data.name}</dd>
          <dt>Plan</dt>
          <dd className="capitalize">{account.data.plan}</dd>
          <dt>Rate limit</dt>
          <dd>{account.data.rate_limit} requests per minute</dd>
          <dt>Account id</dt>
          <dd className="mono">{account.data.id}</dd>
        </dl>
      )}
      <MembersSection />
      {manager ? <InvitationsSection /> : null}
    </>
  );
}

function MembersSection() {
  const session = useSignedIn();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const members = useQuery(trpc.members.list.queryOptions());
  const [removing, setRemoving] = useState<Member | null>(null);
  const remove = useMutation(
    trpc.members.remove.mutationOptions({
      onSuccess: async () => {
        toast('Member removed');
        setRemoving(null);
        await queryClient.invalidateQueries(trpc.members.list.queryFilter());
      },
    }),
  );
  const manager = canManage(session);
  const owners = members.data?.filter((member) => member.role === 'owner').length ?? 0;
  const removable = (member: Member) =>
    manager && member.user_id !== session.user.id && !(member.role === 'owner' && owners <= 1);
  return (
    <section aria-labelledby="members-heading">
      <h2 id="members-heading">Members</h2>
      {members.isPending ? (
        <p role="status">Loading members…</p>
      ) : members.isError ? (
        <p role="alert">Could not load the members: {consoleErrorOf(members.error).message}</p>
      ) : (
        <DataTable
          caption="Members"
          rows={members.data}
          rowKey={(member) => member.user_id}
          columns={[
            {
              label: 'E-mail',
              cell: (member) => (
                <>
                  {member.email}
                  {member.user_id === session.user.id ? <span className="muted"> (you)</span> : null}
                </>
              ),
            },
            { label: 'Name', cell: (member) => member.name ?? '—' },
            { label: 'Role', cell: (member) => ROLE_LABELS[member.role] },
            { label: 'Joined', cell: (member) => formatDateTime(member.created_at) },
          ]}
          actions={
            manager &&
            ((member) =>
              removable(member) ? (
                <button
                  type="button"
                  className="button button-small"
                  onClick={() => setRemoving(member)}
                  aria-label={`Remove ${member.email}`}
                >
                  Remove
                </button>
              ) : null)
          }
        />
      )}
      <ConfirmDialog
        title="Remove member"
        isOpen={removing !== null}
        onCancel={() => {
          remove.reset();
          setRemoving(null);
        }}
        onConfirm={() => removing && remove.mutate({ user_id: removing.user_id })}
        confirmLabel="Remove"
        isPending={remove.isPending}
        error={remove.isError ? consoleErrorOf(remove.error).message : undefined}
      >
        <p>
          Remove {removing?.email} from {session.account.name}? They lose access to this account at once.
        </p>
      </ConfirmDialog>
    </section>
  );
}

function InvitationsSection() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const invitations = useQuery(trpc.invitations.list.queryOptions());
  const [inviting, setInviting] = useState(false);
  const [revoking, setRevoking] = useState<Invitation | null>(null);
  const revoke = useMutation(
    trpc.invitations.revoke.mutationOptions({
      onSuccess: async () => {
        toast('Invitation revoked');
        setRevoking(null);
        await queryClient.invalidateQueries(trpc.invitations.list.queryFilter());
      },
    }),
  );
  return (
    <section aria-labelledby="invitations-heading">
      <div className="page-header">
        <h2 id="invitations-heading">Invitations</h2>
        <button data-primary-action type="button" className="button button-primary" onClick={() => setInviting(true)}>
          Invite
        </button>
      </div>
      {invitations.isPending ? (
        <p role="status">Loading invitations…</p>
      ) : invitations.isError ? (
        <p role="alert">Could not load the invitations: {consoleErrorOf(invitations.error).message}</p>
      ) : invitations.data.length === 0 ? (
        <p>No pending invitations.</p>
      ) : (
        <DataTable
          caption="Pending invitations"
          rows={invitations.data}
          rowKey={(invitation) => invitation.id}
          columns={[
            { label: 'Role', cell: (invitation) => ROLE_LABELS[invitation.role] },
            { label: 'Created', cell: (invitation) => formatDateTime(invitation.created_at) },
            { label: 'Expires', cell: (invitation) => formatDateTime(invitation.expires_at) },
          ]}
          actions={(invitation) => (
            <button
              type="button"
              className="button button-small"
              onClick={() => setRevoking(invitation)}
              aria-label={`Revoke invitation ${invitation.id}`}
            >
              Revoke
            </button>
          )}
        />
      )}
      {inviting ? <InviteDialog onClose={() => setInviting(false)} /> : null}
      <ConfirmDialog
        title="Revoke invitation"
        isOpen={revoking !== null}
        onCancel={() => {
          revoke.reset();
          setRevoking(null);
        }}
        onConfirm={() => revoking && revoke.mutate({ id: revoking.id })}
        confirmLabel="Revoke"
        isPending={revoke.isPending}
        error={revoke.isError ? consoleErrorOf(revoke.error).message : undefined}
      >
        <p>Revoke this invitation? Its link stops working.</p>
      </ConfirmDialog>
    </section>
  );
}

function InviteDialog({ onClose }: { onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [role, setRole] = useState<'admin' | 'member'>('member');
  const create = useMutation(
    trpc.invitations.create.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries(trpc.invitations.list.queryFilter()),
    }),
  );
  return (
    <ModalDialog title="Invite someone" isOpen onOpenChange={(open) => (open ? undefined : onClose())}>
      {create.data ? (
        <>
          <p>
            Send this link to the person you invite. It works once and expires in 7 days (
            {formatDateTime(create.data.expires_at)}).
          </p>
          <CopyField label="Invitation link" value={create.data.url} />
          <div className="dialog-actions">
            <button type="button" className="button button-primary" onClick={onClose}>
              Done
            </button>
          </div>
        </>
      ) : (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            create.mutate({ role });
          }}
        >
          {create.isError ? (
            <p className="form-error" role="alert">
              {consoleErrorOf(create.error).message}
            </p>
          ) : null}
          <fieldset className="field">
            <legend>Role</legend>
            <label className="radio">
              <input
                type="radio"
                name="role"
                value="member"
                checked={role === 'member'}
                onChange={() => setRole('member')}
              />
              <span>
                <strong>Member</strong>{' '}
                <span className="muted">sees keys, webhooks, channels and members, changes nothing.</span>
              </span>
            </label>
            <label className="radio">
              <input
                type="radio"
                name="role"
                value="admin"
                checked={role === 'admin'}
                onChange={() => setRole('admin')}
              />
              <span>
                <strong>Admin</strong> <span className="muted">also manages keys, webhooks, channels and members.</span>
              </span>
            </label>
          </fieldset>
          <div className="dialog-actions">
            <button type="button" className="button" onClick={onClose}>
              Cancel
            </button>
            <button type="submit" className="button button-primary" disabled={create.isPending}>
              Create invitation link
            </button>
          </div>
        </form>
      )}
    </ModalDialog>
  );
}
