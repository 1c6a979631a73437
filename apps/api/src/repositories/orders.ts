import { lockedForUpdate } from '../db/dialect.js';
import type { Selectable } from 'kysely';
import type { OrderTable } from '../db/schema.js';
import { type TenantScope, withTotal } from './tenant.js';

export type OrderRow = Selectable<OrderTable>;

/** Digits of the longest all-digits order number (CreateOrderBody's `number` has at most 64 characters). */
export const ORDER_NUMBER_DIGITS = 64;

/** The key automatic numbering counts on: an all-digits number, zero-padded so that text order is numeric order. */
export const orderNumberKey = (number: string): string | null =>
  /^\d+$/.test(number) ? number.padStart(ORDER_NUMBER_DIGITS, '0') : null;

export interface OrderFilter {
  contactId?: string | undefined;
  status?: OrderRow['status'] | undefined;
}

const filtered = (scope: TenantScope, filter: OrderFilter) => {
  let query = scope.selectFrom('orders');
  if (filter.contactId !== undefined) query = query.where('orders.contact_id', '=', filter.contactId);
  if (filter.status) query = query.where('orders.status', '=', filter.status);
  return query;
};

export const ordersRepository = {
  findById: (scope: TenantScope, id: string) =>
    scope.selectFrom('orders').selectAll().where('orders.id', '=', id).executeTakeFirst(),

  /** The order, held until the transaction ends (Postgres) so that status changes take turns. */
  findByIdForUpdate: (scope: TenantScope, id: string) =>
    lockedForUpdate(
      scope.dialect,
      scope.selectFrom('orders').selectAll().where('orders.id', '=', id),
    ).executeTakeFirst(),

  setStatus: (scope: TenantScope, id: string, status: OrderRow['status'], at: string) =>
    scope.updateTable('orders').set({ status, updated_at: at }).where('orders.id', '=', id).execute(),

  findByNumber: (scope: TenantScope, number: string) =>
    scope.selectFrom('orders').select('orders.id').where('orders.number', '=', number).executeTakeFirst(),

  async list(scope: TenantScope, filter: OrderFilter, page: { limit: number; offset: number }) {
    const rows = filtered(scope, filter)
      .selectAll()
      .orderBy('orders.placed_at', 'desc')
      .orderBy('orders.id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return withTotal(rows, filtered(scope, filter));
  },

  /** The highest all-digits order number so far, as its key (zero-padded: see OrderTable). */
  async maxNumberKey(scope: TenantScope): Promise<string | null> {
    const row = await scope
      .selectFrom('orders')
      .select((eb) => eb.fn.max('orders.number_key').as('max'))
      .executeTakeFirst();
    return row?.max ?? null;
  },

  insert: (scope: TenantScope, row: Omit<OrderRow, 'account_id'>) => scope.insert('orders', row),

  /** Orders outlive their contact: they keep their data with contact_id null. */
  detachContact: (scope: TenantScope, contactId: string, at: string) =>
    scope
      .updateTable('orders')
      .set({ contact_id: null, updated_at: at })
      .where('orders.contact_id', '=', contactId)
      .execute(),
};
