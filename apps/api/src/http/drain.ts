import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';

/**
 * Shutdown without losing a request (CONTRACT.md, Operations: Shutdown). On SIGTERM the server
 * first drains: /readyz answers 503 so that load balancers take it out, and every answer closes
 * its connection so that keep-alive clients reconnect elsewhere, while requests are still served.
 * Then it closes: no new connection is accepted, what is in flight finishes, and a request that
 * still arrives on an open connection is refused with the contract's body (never Fastify's own:
 * the server is built with `return503OnClosing: false`).
 */
export interface DrainState {
  /** Since beginDrain(): /readyz is 503 and every answer carries `Connection: close`. */
  draining: boolean;
  /** Since close() began: new requests are refused. */
  closing: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    drain: DrainState;
    /** Takes the server out of its balancer's rotation while it goes on serving (idempotent). */
    beginDrain(): void;
  }
}

/** How long close() waits for requests in flight before it cuts their connections. */
export const FINISH_IN_FLIGHT_MS = 30_000;

/**
 * A request that arrived after the server stopped accepting: 503 (it was not processed, so any
 * client may send it again, to another instance), in the contract's body with code `server_error`,
 * the contract's code for a failure on the server's side (it has none of its own for 503).
 */
export class ShuttingDown extends ApiError {
  constructor() {
    super('server_error', 'The server is shutting down and did not process this request; send it again', undefined, {
      'retry-after': '1',
      connection: 'close',
    });
  }

  override get status(): number {
    return 503;
  }
}

/**
 * Adds the drain state and its hooks. Register it after the hook that sets X-Request-Id and before
 * admission, so that a refused request is neither authenticated nor counted.
 */
export function installDrain(app: FastifyInstance): void {
  const state: DrainState = { draining: false, closing: false };
  app.decorate('drain', state);
  app.decorate('beginDrain', () => {
    state.draining = true;
  });
  // Callback hooks, not async ones: they run on every request and need no promise.
  app.addHook('onRequest', (_request, _reply, done) => {
    if (state.closing) done(new ShuttingDown());
    else done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (state.draining) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('preClose', async () => {
    state.draining = true;
    state.closing = true;
  });
}

/**
 * The whole shutdown of `serve`: drain for `drainMs`, then close, cutting the connections of
 * requests still in flight after `finishMs`. Resolves once the server is closed.
 */
export async function drainThenClose(app: FastifyInstance, options: { drainMs: number; finishMs?: number }): Promise<void> {
  app.beginDrain();
  if (options.drainMs > 0) await new Promise((resolve) => setTimeout(resolve, options.drainMs));
  const cut = setTimeout(() => {
    app.log.warn({ finishMs: options.finishMs ?? FINISH_IN_FLIGHT_MS }, 'shutdown: requests still in flight; closing their connections');
    app.server.closeAllConnections();
  }, options.finishMs ?? FINISH_IN_FLIGHT_MS);
  try {
    await app.close();
  } finally {
    clearTimeout(cut);
  }
}
