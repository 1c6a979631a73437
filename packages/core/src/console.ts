import * as z from 'zod';
import { Email } from './contacts.js';

// The console's call inputs, outside `/v1`: the server's procedures and the console's forms share them.

export const ROLES = ['owner', 'admin', 'member'] as const;
export const Role = z.enum(ROLES);
export type Role = z.infer<typeof Role>;

export const KEY_TYPES = ['full_access', 'read_only', 'webhook'] as const;
export const KeyType = z.enum(KEY_TYPES);
export type KeyType = z.infer<typeof KeyType>;

export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 200;
export const Password = z
  .string()
  .min(PASSWORD_MIN_LENGTH, { message: `At least ${PASSWORD_MIN_LENGTH} characters` })
  .max(PASSWORD_MAX_LENGTH, { message: `At most ${PASSWORD_MAX_LENGTH} characters` });

const PersonName = z.string().trim().min(1).max(200);
const AccountName = z.string().trim().min(1, { message: 'Name the account' }).max(200);

export const SignUpInput = z.strictObject({
  email: Email,
  password: Password,
  name: PersonName.optional(),
  /** The account to create; not needed when an invitation names one. */
  account_name: AccountName.optional(),
  /** An invitation's token: join that account instead of creating one. */
  invitation: z.string().min(1).max(200).optional(),
});
export type SignUpInput = z.infer<typeof SignUpInput>;

export const SignInInput = z.strictObject({
  email: z.string().trim().min(1, { message: 'Enter your e-mail address' }).max(320),
  password: z.string().min(1, { message: 'Enter your password' }).max(PASSWORD_MAX_LENGTH),
});
export type SignInInput = z.infer<typeof SignInInput>;

export const ChangePasswordInput = z.strictObject({
  current_password: z.string().min(1, { message: 'Enter your current password' }).max(PASSWORD_MAX_LENGTH),
  new_password: Password,
});
export type ChangePasswordInput = z.infer<typeof ChangePasswordInput>;

export const ResetPasswordInput = z.strictObject({ token: z.string().min(1).max(200), new_password: Password });
export type ResetPasswordInput = z.infer<typeof ResetPasswordInput>;

export const SwitchAccountInput = z.strictObject({ account_id: z.string().min(1).max(100) });

export const CreateKeyInput = z.strictObject({
  name: z.string().trim().min(1, { message: 'Name the key' }).max(100),
  type: KeyType,
});
export type CreateKeyInput = z.infer<typeof CreateKeyInput>;

export const ById = z.strictObject({ id: z.string().min(1).max(100) });

export const CreateInvitationInput = z.strictObject({ role: z.enum(['admin', 'member']) });
export type CreateInvitationInput = z.infer<typeof CreateInvitationInput>;

export const InvitationTokenInput = z.strictObject({ token: z.string().min(1).max(200) });

export const RemoveMemberInput = z.strictObject({ user_id: z.string().min(1).max(100) });
