const dateTime = new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeStyle: 'short' });

export function formatDateTime(iso: string | null | undefined, never = 'Never'): string {
  return iso ? dateTime.format(new Date(iso)) : never;
}

/** An amount in the currency's minor unit (as the API gives it), in that currency: 5700 USD → $57.00, 500 JPY → ¥500. */
export function formatMoney(amount: number, currency: string): string {
  const format = new Intl.NumberFormat('en', { style: 'currency', currency });
  return format.format(amount / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2));
}
