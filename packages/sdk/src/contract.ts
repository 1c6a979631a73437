import type { operations } from './generated/contract.js';

/**
 * The /v1 contract as the SDK's types: the schemas and queries generated from @convo/core's
 * OpenAPI document (generated/contract.ts), and the shapes of an operation's input and result
 * built on them. Plain TypeScript, so the published SDK needs neither @convo/core nor zod.
 */
export type * from './generated/contract.js';

export type OperationId = keyof operations;

type Parts<K extends OperationId> = operations[K]['parameters'];
type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : never;

/** The part an operation has: `never` (and `undefined` for an optional one) mean it has none. */
type Part<T> = [NonNullable<T>] extends [never] ? unknown : NonNullable<T>;
type Has<T, Key extends string> = [NonNullable<T>] extends [never] ? unknown : { [P in Key]: NonNullable<T> };

/** What a caller sends for an operation: `{ params?, query?, body? }`, each only where the operation has it. */
export type OperationInput<K extends OperationId> = Has<Parts<K>['path'], 'params'> &
  Has<Parts<K>['query'], 'query'> &
  Has<JsonOf<Part<operations[K]['requestBody']>>, 'body'>;

type Responses<K extends OperationId> = operations[K]['responses'];

/** What a successful call answers (`undefined` for 204). */
export type OperationResult<K extends OperationId> =
  Responses<K> extends { 200: infer R }
    ? JsonOf<R>
    : Responses<K> extends { 201: infer R }
      ? JsonOf<R>
      : Responses<K> extends { 202: infer R }
        ? JsonOf<R>
        : undefined;

/** A page of a list. */
export interface Page<T> {
  data: T[];
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

/** Fill a path template: `fillPath('/contacts/:id', { id: 'ct_1' })` → `/contacts/ct_1` (each value URL-encoded). */
export function fillPath(path: string, params: Record<string, string> = {}): string {
  return path.replace(/:([A-Za-z_]+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`Missing path parameter "${name}"`);
    return encodeURIComponent(value);
  });
}
