import type { KeyType } from '@convo/core';

export const KEY_TYPE_LABELS: Record<KeyType, string> = {
  full_access: 'Full access',
  read_only: 'Read-only',
  webhook: 'Webhook',
};
