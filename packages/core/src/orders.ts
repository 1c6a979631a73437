import * as z from 'zod';
import { Id, Timestamp, dateTimeInput, formatted, listOf, pagination, text } from './common.js';

export const OrderStatus = z
  .enum(['pending', 'paid', 'fulfilled', 'cancelled', 'refunded'])
  .meta({ id: 'OrderStatus' });
export type OrderStatus = z.infer<typeof OrderStatus>;

/** ISO 4217 currency code, upper case (`USD`, `EUR`, `BRL`). */
export const Currency = formatted('iso-4217', /^[A-Z]{3}$/, 'Must be an ISO 4217 currency code in upper case, e.g. USD')
  .check((ctx) => {
    if (/^[A-Z]{3}$/.test(ctx.value) && !isKnownCurrency(ctx.value)) {
      ctx.issues.push({
        code: 'invalid_format',
        format: 'iso-4217',
        input: ctx.value,
        message: `${ctx.value} is not an ISO 4217 currency code`,
      });
    }
  })
  .meta({ example: 'USD' });

let knownCurrencies: Set<string> | undefined;
function isKnownCurrency(code: string): boolean {
  // Intl knows the ISO 4217 list in every current runtime; without it, accept any three letters.
  const supported = (Intl as { supportedValuesOf?: (key: string) => string[] }).supportedValuesOf;
  if (!supported) return true;
  knownCurrencies ??= new Set(supported('currency'));
  return knownCurrencies.has(code);
}

export const OrderItem = z
  .object({
    name: text(1, 200),
    quantity: z.int().min(1).max(10000),
    unit_amount: z
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .meta({ description: 'Price of one unit in minor units (cents).' }),
  })
  .meta({ id: 'OrderItem' });
export type OrderItem = z.infer<typeof OrderItem>;

export const Order = z
  .object({
    id: Id,
    contact_id: Id.nullable(),
    number: z.string(),
    status: OrderStatus,
    currency: z.string(),
    total_amount: z.int().meta({ description: 'Sum of quantity × unit_amount, in minor units.' }),
    items: z.array(OrderItem),
    placed_at: Timestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Order' });
export type Order = z.infer<typeof Order>;

export const OrderList = listOf(Order, 'OrderList');
export type OrderList = z.infer<typeof OrderList>;

export const CreateOrderBody = z
  .strictObject({
    contact_id: Id,
    currency: Currency,
    items: z.array(z.strictObject(OrderItem.shape)).min(1).max(100),
    number: text(1, 64)
      .regex(/^[A-Za-z0-9._#/-]+$/, { message: 'Order numbers use letters, digits and . _ # / -' })
      .optional()
      .meta({ description: 'Your order number; by default the account\'s next number, "1001" upward.' }),
    status: OrderStatus.default('pending'),
    placed_at: dateTimeInput('When the order was placed; by default now.').optional(),
  })
  .meta({ id: 'CreateOrderBody' });
export type CreateOrderBody = z.input<typeof CreateOrderBody>;

export const ListOrdersQuery = z.strictObject({
  ...pagination,
  contact_id: Id.optional(),
  status: OrderStatus.optional(),
});
export type ListOrdersQuery = z.input<typeof ListOrdersQuery>;

export const OrderIdParams = z.strictObject({ id: Id });

/** The statuses an order may move to from each status (CONTRACT: Orders); anything else is 400 `transition`. */
export const ORDER_TRANSITIONS: Record<OrderStatus, readonly OrderStatus[]> = {
  pending: ['paid', 'cancelled'],
  paid: ['fulfilled', 'cancelled', 'refunded'],
  fulfilled: ['refunded'],
  cancelled: [],
  refunded: [],
};

export const UpdateOrderBody = z
  .strictObject({
    status: OrderStatus.meta({
      description: 'pending → paid → fulfilled; pending or paid → cancelled; paid or fulfilled → refunded.',
    }),
  })
  .meta({ id: 'UpdateOrderBody' });
export type UpdateOrderBody = z.input<typeof UpdateOrderBody>;
