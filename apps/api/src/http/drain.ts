import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';

// Shutdown without losing a request: first drain (still serving, but out of the balancer and closing kept-alive
// connections), then close, refusing late requests with the contract's body rather than Fastify's own.

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
 * 503 for a request that arrived after the server stopped accepting, so a client may resend it elsewhere.
 * Its code is `server_error`: the contract has none of its own for 503.
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

/** Register after the hook that sets X-Request-Id and before admission, so a refused request is not counted. */
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

/** Drains for `drainMs`, then closes, cutting connections of requests still in flight after `finishMs`. */
export async function drainThenClose(
  app: FastifyInstance,
  options: { drainMs: number; finishMs?: number },
): Promise<void> {
  app.beginDrain();
  if (options.drainMs > 0) await new Promise((resolve) => setTimeout(resolve, options.drainMs));
  const cut = setTimeout(() => {
    app.log.warn(
      { finishMs: options.finishMs ?? FINISH_IN_FLIGHT_MS },
      'shutdown: requests still in flight; closing their connections',
    );
    app.server.closeAllConnections();
  }, options.finishMs ?? FINISH_IN_FLIGHT_MS);
  try {
    await app.close();
  } finally {
    clearTimeout(cut);
  }
}
