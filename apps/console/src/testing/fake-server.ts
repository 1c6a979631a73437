import { TRPCClientError, type TRPCLink } from '@trpc/client';
import { observable } from '@trpc/server/observable';
import type { ConsoleRouter, Session } from '../trpc';

type Handler = (input: unknown) => unknown;

/**
 * The console's server as a tRPC link: each procedure path answers with what its handler
 * returns (or throws). The components under test run unchanged above it; only the wire is fake.
 */
export function fakeServer(handlers: Record<string, Handler>) {
  const calls: { path: string; input: unknown }[] = [];
  const link: TRPCLink<ConsoleRouter> = () => {
    return ({ op }) =>
      observable((observer) => {
        calls.push({ path: op.path, input: op.input });
        const handler = handlers[op.path];
        Promise.resolve()
          .then(() => {
            if (!handler) throw contractError('not_found', `No procedure ${op.path} in this test`, 404);
            return handler(op.input);
          })
          .then(
            (data) => {
              observer.next({ result: { type: 'data', data } });
              observer.complete();
            },
            (error: unknown) =>
              observer.error(error instanceof TRPCClientError ? error : TRPCClientError.from(error as Error)),
          );
        return () => {};
      });
  };
  return {
    link,
    calls,
    callsOf: (path: string) => calls.filter((call) => call.path === path).map((call) => call.input),
  };
}

const JSON_RPC_CODES: Record<string, number> = {
  bad_request: -32600,
  unauthorized: -32001,
  forbidden: -32003,
  not_found: -32004,
};

/** A refusal as the server sends it: tRPC's envelope with the contract's error body under `data`. */
export function contractError(
  code: string,
  message: string,
  httpStatus = 400,
  details?: { field: string; constraint: string },
): TRPCClientError<ConsoleRouter> {
  return TRPCClientError.from({
    error: {
      code: JSON_RPC_CODES[code] ?? -32603,
      message,
      data: {
        code: code.toUpperCase(),
        httpStatus,
        body: { error: { code, message, ...(details ? { details } : {}) } },
      },
    },
  });
}

export function sessionAs(role: Session['role'], accounts = 1): Session {
  const account = { id: 'acct_1', name: 'Acme', plan: 'free', rate_limit: 60 };
  return {
    user: { id: 'usr_1', email: 'ada@example.com', name: 'Ada' },
    account,
    role,
    accounts: Array.from({ length: accounts }, (_, index) => ({
      id: `acct_${index + 1}`,
      name: index === 0 ? 'Acme' : `Other ${index}`,
      role,
    })),
  } as Session;
}
