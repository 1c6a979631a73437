/** A recorded request of the fake fetch used by the unit tests. */
export interface SentRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: unknown;
}

type Reply = { status: number; body?: unknown; headers?: Record<string, string> } | Error;

/** A fetch that records each request and answers from a script, one reply per call. */
export function fakeFetch(replies: Reply[]) {
  const sent: SentRequest[] = [];
  const fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const headers = Object.fromEntries(
      Object.entries((init.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]),
    );
    sent.push({
      method: init.method ?? 'GET',
      url: new URL(String(input)),
      headers,
      body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
    });
    const reply = replies.shift();
    if (!reply) throw new Error('fakeFetch: no reply scripted');
    if (reply instanceof Error) throw reply;
    return new Response(reply.body === undefined ? null : JSON.stringify(reply.body), {
      status: reply.status,
      headers: { 'content-type': 'application/json', 'x-request-id': 'req_test', ...reply.headers },
    });
  };
  return { fetch: fetch as typeof globalThis.fetch, sent };
}
