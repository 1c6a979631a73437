import type { OperationId, OperationInput, OperationResult } from '../contract.js';
import { PagePromise } from '../pagination.js';
import type { RequestOptions, RequestSender } from '../request-sender.js';

/** Base of the resource classes: every method is one operation of the endpoint table. */
export abstract class Resource {
  constructor(protected readonly sender: RequestSender) {}

  protected request<K extends OperationId>(
    operationId: K,
    input: OperationInput<K>,
    options?: RequestOptions,
  ): Promise<OperationResult<K>> {
    return this.sender.send(operationId, input, options);
  }

  /** A list operation as a PagePromise: the caller's offset first, then further pages on iteration. */
  protected paginate<K extends OperationId, T>(
    operationId: K,
    input: (offset: number | undefined) => OperationInput<K>,
    options?: RequestOptions,
  ): PagePromise<T> {
    return new PagePromise<T>((offset) => this.sender.send(operationId, input(offset), options) as never);
  }
}

/** The query of the page at `offset` (the first page keeps the caller's own offset). */
export const withOffset = <Q extends { offset?: number | undefined }>(query: Q, offset: number | undefined): Q =>
  offset === undefined ? query : { ...query, offset };
