import { type IncomingMessage, get } from 'node:http';

/** One frame of a Server-Sent Events stream: an event (id, event, data) or a comment. */
export interface StreamFrame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/**
 * A test's view of `GET /v1/events/stream` (or the console's subscription): the response, and its frames one at a time as they
 * arrive. Parses what our server writes (one field per line, LF endings), no more.
 */
export interface OpenStream {
  response: { status: number; headers: Headers };
  /** The next frame, waiting for it to arrive; undefined once the stream has ended. */
  next(): Promise<StreamFrame | undefined>;
  /** The next event frame, passing comments. */
  nextEvent(): Promise<StreamFrame & { data: string }>;
  close(): Promise<void>;
}

export async function openEventStream(url: string, headers: Record<string, string>): Promise<OpenStream> {
  // A connection of its own (no agent), closed with the stream: a stream left in fetch's pool would
  // keep connections open past the server's close.
  const incoming = await new Promise<IncomingMessage>((resolve, reject) =>
    get(url, { agent: false, headers }, resolve).on('error', reject),
  );
  incoming.setEncoding('utf8');
  const response = {
    status: incoming.statusCode ?? 0,
    headers: new Headers(
      Object.entries(incoming.headers).flatMap(([name, value]) =>
        value === undefined ? [] : [[name, Array.isArray(value) ? value.join(', ') : value] as [string, string]],
      ),
    ),
  };
  const chunks = incoming[Symbol.asyncIterator]();
  let buffer = '';
  const next = async (): Promise<StreamFrame | undefined> => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame: StreamFrame = {};
        for (const line of block.split('\n')) {
          if (line === '') continue;
          if (line.startsWith(':')) frame.comment = line.slice(1).trim();
          else {
            const colon = line.indexOf(':');
            const field = line.slice(0, colon) as 'id' | 'event' | 'data';
            frame[field] = line.slice(colon + 1).replace(/^ /, '');
          }
        }
        return frame;
      }
      const read = await chunks.next().catch(() => ({ done: true as const, value: undefined }));
      if (read.done) return undefined;
      buffer += read.value as string;
    }
  };
  return {
    response,
    next,
    async nextEvent() {
      for (;;) {
        const frame = await next();
        if (!frame) throw new Error('the stream ended');
        if (frame.data !== undefined) return frame as StreamFrame & { data: string };
      }
    },
    async close() {
      incoming.destroy();
    },
  };
}
