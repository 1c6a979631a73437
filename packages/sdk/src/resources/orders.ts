import type { CreateOrderBody, ListOrdersQuery, Order, UpdateOrderBody } from '../contract.js';
import type { PagePromise } from '../pagination.js';
import type { RequestOptions } from '../request-sender.js';
import { Resource, withOffset } from './resource.js';

export class Orders extends Resource {
  /** Newest `placed_at` first. Filters: `contact_id`, `status`. */
  list(params: ListOrdersQuery = {}, options?: RequestOptions): PagePromise<Order> {
    return this.paginate('orders.list', (offset) => ({ query: withOffset(params, offset) }), options);
  }

  /** Records an order; `total_amount` is computed and `number` assigned when not given. */
  create(body: CreateOrderBody, options?: RequestOptions): Promise<Order> {
    return this.request('orders.create', { body }, options);
  }

  retrieve(id: string, options?: RequestOptions): Promise<Order> {
    return this.request('orders.retrieve', { params: { id } }, options);
  }

  /** Moves the order to `status` (pending → paid → fulfilled; → cancelled; → refunded); emits `order.updated`. */
  update(id: string, body: UpdateOrderBody, options?: RequestOptions): Promise<Order> {
    return this.request('orders.update', { params: { id }, body }, options);
  }
}
