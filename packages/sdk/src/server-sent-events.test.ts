import { describe, expect, it } from 'vitest';
import { ServerSentEventParser } from './server-sent-events.js';

/** Every event of `chunks` fed one after the other, and the parser after them. */
function parse(chunks: readonly string[]) {
  const parser = new ServerSentEventParser();
  const events = chunks.flatMap((chunk) => parser.push(chunk));
  return { events, parser };
}

describe('the event stream parser', () => {
  it('reads id, event and data, joins data lines, skips comments and unknown fields', () => {
    const { events } = parse([
      ': hello\n\n',
      'id: evt_1\nevent: message.received\ndata: {"a":1}\n\n',
      'data:first\ndata:  second\nfoo: bar\n: keep-alive\ndata\n\n',
    ]);
    expect(events).toEqual([
      { id: 'evt_1', event: 'message.received', data: '{"a":1}' },
      // One space after the colon is dropped, not two; a bare `data` adds an empty line.
      { id: 'evt_1', event: 'message', data: 'first\n second\n' },
    ]);
  });

  it('ends lines at CRLF, LF or CR, wherever the chunks are cut', () => {
    const stream = 'id: 1\r\ndata: a\r\n\r\nid: 2\rdata: b\r\rid: 3\ndata: c\n\n';
    const expected = [
      { id: '1', event: 'message', data: 'a' },
      { id: '2', event: 'message', data: 'b' },
      { id: '3', event: 'message', data: 'c' },
    ];
    expect(parse([stream]).events).toEqual(expected);
    expect(parse([...stream]).events).toEqual(expected);
    for (let cut = 1; cut < stream.length; cut++)
      expect(parse([stream.slice(0, cut), stream.slice(cut)]).events, `cut at ${cut}`).toEqual(expected);
  });

  it('keeps the last event id, takes it from an event without data, and ignores one with NUL', () => {
    const { events, parser } = parse([
      'id: evt_1\ndata: x\n\n',
      'data: y\n\n',
      'id: evt_2\n\n',
      'id: a\0b\ndata: z\n\n',
    ]);
    expect(events.map((event) => event.id)).toEqual(['evt_1', 'evt_1', 'evt_2']);
    expect(parser.lastEventId).toBe('evt_2');
  });

  it('takes a numeric retry and nothing else', () => {
    expect(parse(['retry: 3000\n\n']).parser.retry).toBe(3000);
    expect(parse(['retry: 3000\n\nretry: 2s\n\n']).parser.retry).toBe(3000);
    expect(parse(['retry: -1\n\n']).parser.retry).toBeUndefined();
  });

  it('never dispatches an event the stream cut short', () => {
    const { events, parser } = parse(['id: evt_1\ndata: x\n\n', 'id: evt_2\ndata: {"half":']);
    expect(events.map((event) => event.data)).toEqual(['x']);
    expect(parser.lastEventId).toBe('evt_1');
  });
});
