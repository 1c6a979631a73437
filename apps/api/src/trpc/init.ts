import {
  type EndpointDefinition,
  type OperationId,
  type ValidationIssue,
  type OperationInput,
  type OperationParsedInput,
  type OperationResult,
  endpoints,
} from '@convo/core';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { StandardSchemaV1Error, initTRPC } from '@trpc/server';
import type { FastifyReply } from 'fastify';
import { ApiError } from '../errors.js';
import { type CalledOperationId, runOperation } from '../operations.js';
import type { ServiceContext } from '../services/context.js';
import { querySchemaOf, validatePart } from '../validation.js';
import { trpcErrorShape } from './error-shape.js';

/** What a procedure gets from the edge, which has already admitted the call (edge/admission.ts). */
export interface TrpcContext {
  service: ServiceContext;
  idempotencyKey: string | undefined;
  requestId: string;
  reply: FastifyReply;
}

/** The ApiError a tRPC error stands for: the one a procedure threw, or tRPC's own refusal. */
export function apiErrorOf(
  error: { code: string; message: string; cause?: unknown },
  path: string | undefined,
  requestId: string | undefined,
): ApiError {
  if (error.cause instanceof ApiError) return error.cause;
  if (error.cause instanceof StandardSchemaV1Error) {
    const issues = error.cause.issues as readonly ContractIssue[];
    return ApiError.validation(issues.map(({ field, constraint, message }) => ({ field, constraint, message })));
  }
  switch (error.code) {
    case 'NOT_FOUND':
      return ApiError.notFound('procedure', path);
    case 'PARSE_ERROR':
      return ApiError.badRequest('input', 'json', 'The input is not valid JSON');
    case 'METHOD_NOT_SUPPORTED':
      return ApiError.badRequest('method', 'enum', 'Queries are called with GET, mutations with POST');
    // tRPC refuses a mutation without a JSON Content-Type itself, before any procedure runs.
    case 'UNSUPPORTED_MEDIA_TYPE':
      return ApiError.badRequest('body', 'content_type', 'Send the body as JSON with "Content-Type: application/json"');
    case 'PAYLOAD_TOO_LARGE':
      return ApiError.badRequest('body', 'max_bytes', 'The body is larger than 1 MiB');
    case 'BAD_REQUEST':
      return new ApiError('bad_request', error.message);
    default:
      return ApiError.serverError(requestId ?? 'unknown');
  }
}

export const t = initTRPC.context<TrpcContext>().create({
  errorFormatter: ({ error, path, ctx }) => trpcErrorShape(apiErrorOf(error, path, ctx?.requestId), path),
});

/**
 * An operation's input as tRPC parses it: `{ params?, query?, body? }`, each part validated by
 * the contract exactly as REST validates it, in REST's order (params, body, query: Fastify's),
 * the first part with a problem answering for all. A Standard Schema, which tRPC takes as an
 * input validator, typed for tRPC clients as the operation's input and parsed input.
 */
export function operationInput<K extends OperationId>(
  operationId: K,
): StandardSchemaV1<OperationInput<K>, OperationParsedInput<K>> {
  const operation: EndpointDefinition = endpoints[operationId];
  const parts = { params: operation.params, body: operation.body, query: querySchemaOf(operation) };
  const validate = (raw: unknown): StandardSchemaV1.Result<OperationParsedInput<K>> => {
    const input = (raw ?? {}) as Record<string, unknown>;
    const unknownParts = Object.keys(input).filter(
      (name) => !Object.hasOwn(parts, name) || parts[name as keyof typeof parts] === undefined,
    );
    if (unknownParts.length > 0) {
      return refused(
        unknownParts.map(
          (name): ValidationIssue => ({ field: name, constraint: 'unknown', message: `Unknown input part "${name}"` }),
        ),
      );
    }
    const out: Record<string, unknown> = {};
    for (const [name, schema] of Object.entries(parts)) {
      if (!schema) continue;
      // Only a missing part is empty: a part sent as null is refused as REST refuses a null body.
      const result = validatePart(
        schema,
        input[name] === undefined ? (name === 'params' ? undefined : {}) : input[name],
      );
      if ('error' in result) return refused(result.error.details?.issues ?? []);
      out[name] = result.value;
    }
    return { value: out as OperationParsedInput<K> };
  };
  return { '~standard': { version: 1, vendor: 'convo', validate } };
}

/** A Standard Schema issue that carries the contract's field and constraint, for apiErrorOf to answer with. */
type ContractIssue = StandardSchemaV1.Issue & ValidationIssue;

const refused = (issues: readonly ValidationIssue[]): StandardSchemaV1.FailureResult => ({
  issues: issues.map((issue): ContractIssue => ({ ...issue, path: issue.field.split('.') })),
});

/** Runs the operation as REST does; a replayed refusal is thrown again. */
export async function call<K extends CalledOperationId>(
  operationId: K,
  ctx: Pick<TrpcContext, 'service' | 'idempotencyKey' | 'reply'>,
  input: OperationParsedInput<K>,
): Promise<OperationResult<K>> {
  const response = await runOperation(operationId, { service: ctx.service, input, idempotencyKey: ctx.idempotencyKey });
  if (response.replayed) ctx.reply.header('Idempotent-Replayed', 'true');
  if (response.status >= 400) throw ApiError.fromBody(JSON.parse(response.body));
  return (response.body === '' ? undefined : JSON.parse(response.body)) as OperationResult<K>;
}

type MethodOf<K extends OperationId> = (typeof endpoints)[K]['method'];
export type QueryId = { [K in CalledOperationId]: MethodOf<K> extends 'GET' ? K : never }[CalledOperationId];
export type MutationId = Exclude<CalledOperationId, QueryId>;

/** The procedure of a read operation (GET in REST). */
export const query = <K extends QueryId>(operationId: K) =>
  t.procedure
    .input(operationInput(operationId))
    .query(({ ctx, input }) => call(operationId, ctx, input as OperationParsedInput<K>));

/** The procedure of any other operation. */
export const mutation = <K extends MutationId>(operationId: K) =>
  t.procedure
    .input(operationInput(operationId))
    .mutation(({ ctx, input }) => call(operationId, ctx, input as OperationParsedInput<K>));
