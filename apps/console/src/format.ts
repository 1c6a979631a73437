const dateTime = new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeStyle: 'short' });

export function formatDateTime(iso: string | null | undefined, never = 'Never'): string {
  return iso ? dateTime.format(new Date(iso)) : never;
}
