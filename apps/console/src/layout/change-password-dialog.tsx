import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import * as z from 'zod';
import { ChangePasswordInput } from '@convo/core';
import { FormError, TextField } from '../components/field';
import { ModalDialog } from '../components/modal';
import { useToast } from '../components/toasts';
import { showServerError } from '../errors';
import { useTRPC } from '../trpc';

const ChangePasswordForm = ChangePasswordInput.extend({ confirm_password: z.string() }).refine(
  (form) => form.new_password === form.confirm_password,
  {
    path: ['confirm_password'],
    message: 'The two new passwords differ',
  },
);
type ChangePasswordForm = z.infer<typeof ChangePasswordForm>;

export function ChangePasswordDialog({ isOpen, onClose }: { isOpen: boolean; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const form = useForm<ChangePasswordForm>({
    resolver: zodResolver(ChangePasswordForm),
    defaultValues: { current_password: '', new_password: '', confirm_password: '' },
  });
  const close = () => {
    form.reset();
    onClose();
  };
  const changePassword = useMutation(
    trpc.session.changePassword.mutationOptions({
      onSuccess: (session) => {
        queryClient.setQueryData(trpc.session.get.queryKey(), session);
        toast('Password changed. Other sessions were signed out.');
        close();
      },
      onError: (error) => showServerError(error, form.setError, ['current_password', 'new_password']),
    }),
  );
  const { errors } = form.formState;
  return (
    <ModalDialog title="Change password" isOpen={isOpen} onOpenChange={(open) => (open ? undefined : close())}>
      <form
        noValidate
        onSubmit={form.handleSubmit(({ current_password, new_password }) =>
          changePassword.mutate({ current_password, new_password }),
        )}
      >
        <FormError message={errors.root?.server?.message} />
        <TextField
          label="Current password"
          type="password"
          autoComplete="current-password"
          error={errors.current_password?.message}
          {...form.register('current_password')}
        />
        <TextField
          label="New password"
          type="password"
          autoComplete="new-password"
          hint="At least 10 characters."
          error={errors.new_password?.message}
          {...form.register('new_password')}
        />
        <TextField
          label="Repeat the new password"
          type="password"
          autoComplete="new-password"
          error={errors.confirm_password?.message}
          {...form.register('confirm_password')}
        />
        <div className="dialog-actions">
          <button type="button" className="button" onClick={close}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={changePassword.isPending}>
            Change password
          </button>
        </div>
      </form>
    </ModalDialog>
  );
}
