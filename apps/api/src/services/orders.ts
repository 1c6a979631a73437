import {
  type CreateOrderBody,
  type ListOrdersQuery,
  ORDER_TRANSITIONS,
  type Order,
  type UpdateOrderBody,
} from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { accountsRepository } from '../repositories/accounts.js';
import { contactsRepository } from '../repositories/contacts.js';
import { ORDER_NUMBER_DIGITS, type OrderRow, orderNumberKey, ordersRepository } from '../repositories/orders.js';
import { type Change, type ServiceContext, transaction, page, scopeOf } from './context.js';
import { emitEvent } from './events.js';

/** Automatic order numbers start here. */
export const FIRST_ORDER_NUMBER = 1001;

export const toOrder = (row: OrderRow): Order => ({
  id: row.id,
  contact_id: row.contact_id,
  number: row.number,
  status: row.status,
  currency: row.currency,
  total_amount: Number(row.total_amount),
  items: JSON.parse(row.items) as Order['items'],
  placed_at: row.placed_at,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** One above the highest all-digits number (`max`, its key), at least FIRST_ORDER_NUMBER; any length. */
function nextNumber(max: string | null): string {
  const first = BigInt(FIRST_ORDER_NUMBER);
  const next = max === null ? first : BigInt(max) + 1n;
  const number = String(next > first ? next : first);
  if (number.length > ORDER_NUMBER_DIGITS) {
    throw ApiError.badRequest(
      'number',
      'required',
      `This account's highest order number has ${ORDER_NUMBER_DIGITS} digits, the most a number may have: give each new order its number`,
    );
  }
  return number;
}

/** Attempts at an automatic number when concurrent orders take the ones read as free. */
const NUMBERING_ATTEMPTS = 6;

const numberTaken = (existingId: string | undefined) =>
  ApiError.badRequest(
    'number',
    'unique',
    'An order with this number already exists',
    existingId === undefined ? undefined : { existing_id: existingId },
  );

export const ordersService = {
  async list(ctx: ServiceContext, query: z.output<typeof ListOrdersQuery>) {
    const { rows, total } = await ordersRepository.list(
      scopeOf(ctx),
      { contactId: query.contact_id, status: query.status },
      query,
    );
    return page(rows.map(toOrder), total, query.limit, query.offset);
  },

  async retrieve(ctx: ServiceContext, id: string): Promise<Order> {
    const row = await ordersRepository.findById(scopeOf(ctx), id);
    if (!row) throw ApiError.notFound('order', id);
    return toOrder(row);
  },

  /** Moves an order along ORDER_TRANSITIONS and emits `order.updated`; its current status changes nothing. */
  async update(ctx: ServiceContext, { id, body }: Change<typeof UpdateOrderBody>): Promise<Order> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const row = await ordersRepository.findByIdForUpdate(scope, id);
      if (!row) throw ApiError.notFound('order', id);
      if (row.status === body.status) return toOrder(row);
      if (!ORDER_TRANSITIONS[row.status].includes(body.status)) {
        const allowed = ORDER_TRANSITIONS[row.status];
        throw ApiError.badRequest(
          'status',
          'transition',
          `An order that is ${row.status} cannot become ${body.status}${allowed.length ? ` (only ${allowed.join(' or ')})` : `: ${row.status} is final`}`,
        );
      }
      const at = now();
      await ordersRepository.setStatus(scope, id, body.status, at);
      const order = toOrder({ ...row, status: body.status, updated_at: at });
      await emitEvent(scope, 'order.updated', order);
      return order;
    });
  },

  async create(ctx: ServiceContext, body: z.output<typeof CreateOrderBody>): Promise<Order> {
    const total = body.items.reduce((sum, item) => sum + item.quantity * item.unit_amount, 0);
    if (!Number.isSafeInteger(total)) {
      throw ApiError.badRequest('items', 'max', 'The order total is larger than the API can represent');
    }
    const at = now();
    const base = {
      contact_id: body.contact_id,
      status: body.status,
      currency: body.currency,
      total_amount: total,
      items: JSON.stringify(body.items.map(({ name, quantity, unit_amount }) => ({ name, quantity, unit_amount }))),
      placed_at: body.placed_at === undefined ? at : new Date(body.placed_at).toISOString(),
      created_at: at,
      updated_at: at,
    };
    // An automatic number may be taken by a concurrent order between reading the maximum and
    // inserting; the unique constraint catches that, and the number is read again, a bounded
    // number of times. A given number that is taken is the client's to change (400 `unique`).
    for (let attempt = 1; ; attempt++) {
      let number = body.number;
      try {
        return await transaction(ctx, async (tx) => {
          const scope = scopeOf(tx);
          const contact = await contactsRepository.findByIdForReference(scope, body.contact_id);
          if (!contact) throw ApiError.notFound('contact', body.contact_id);
          if (number === undefined) {
            await accountsRepository.lock(scope.db, scope.dialect, scope.accountId);
            number = nextNumber(await ordersRepository.maxNumberKey(scope));
          } else {
            const existing = await ordersRepository.findByNumber(scope, number);
            if (existing) throw numberTaken(existing.id);
          }
          const row = { ...base, id: newId('order'), number, number_key: orderNumberKey(number) };
          await ordersRepository.insert(scope, row);
          const order = toOrder({ ...row, account_id: ctx.accountId });
          await emitEvent(scope, 'order.placed', order);
          return order;
        });
      } catch (error) {
        // Inside a caller's transaction nothing can be read after the failed insert: its outermost
        // run starts again (runTransaction), and the number is checked or read again there.
        if (!ctx.database.isUniqueViolation(error) || number === undefined || ctx.database.db.isTransaction)
          throw error;
        if (body.number !== undefined || attempt >= NUMBERING_ATTEMPTS) {
          throw numberTaken((await ordersRepository.findByNumber(scopeOf(ctx), number))?.id);
        }
      }
    }
  },
};
