import { type EndpointDefinition, type Endpoints, type OperationId, type OperationInput, type OperationResult, endpoints, operationIds } from '@convo/core';
import type { TRPCBuiltRouter, TRPCMutationProcedure, TRPCQueryProcedure } from '@trpc/server';
import { contractInput } from './contract-input.js';
import { handlers } from './handlers.js';
import { type AuthedContext, type OperationMeta, operationProcedure, t } from './init.js';

type ProcedureOf<K extends OperationId> = Endpoints[K]['method'] extends 'GET'
  ? TRPCQueryProcedure<{ input: OperationInput<K>; output: OperationResult<K>; meta: OperationMeta }>
  : TRPCMutationProcedure<{ input: OperationInput<K>; output: OperationResult<K>; meta: OperationMeta }>;

type Segments<K extends string> = K extends `${infer Head}.${infer Rest}` ? [Head, ...Segments<Rest>] : [K];
type Nest<P extends string[], V> = P extends [infer Head extends string, ...infer Rest extends string[]]
  ? { [H in Head]: Rest extends [] ? V : Nest<Rest, V> }
  : never;
type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
type RouterRecordOf = UnionToIntersection<{ [K in OperationId]: Nest<Segments<K>, ProcedureOf<K>> }[OperationId]>;

/** The typed router of every operation, for first-party tRPC clients at `/trpc`. */
export type AppRouter = TRPCBuiltRouter<(typeof t)['_config']['$types'], RouterRecordOf & Record<never, never>>;

function procedureFor(operationId: OperationId, operation: EndpointDefinition) {
  const handler = handlers[operationId] as (args: { ctx: AuthedContext; input: unknown }) => Promise<unknown>;
  const procedure = operationProcedure.meta({
    operationId,
    permission: operation.permission,
    method: operation.method,
    parseInput: contractInput(operation).parse,
  });
  const resolve = ({ ctx, input }: { ctx: unknown; input: unknown }) => handler({ ctx: ctx as AuthedContext, input });
  return operation.method === 'GET' ? procedure.query(resolve) : procedure.mutation(resolve);
}

/** Builds the router from the endpoint table: `contacts.tags.add` becomes contacts → tags → add. */
function buildRouter(): AppRouter {
  const record: Record<string, unknown> = {};
  for (const operationId of operationIds) {
    const segments = operationId.split('.');
    let node = record;
    for (const segment of segments.slice(0, -1)) node = (node[segment] ??= {}) as Record<string, unknown>;
    node[segments[segments.length - 1] as string] = procedureFor(operationId, endpoints[operationId]);
  }
  return t.router(record as never) as unknown as AppRouter;
}

export const appRouter = buildRouter();
export const createCaller = t.createCallerFactory(appRouter);
