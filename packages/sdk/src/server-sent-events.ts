/** One event of a `text/event-stream`, as the WHATWG HTML standard dispatches it. */
export interface ServerSentEvent {
  /** The last event ID when the event was dispatched: its own `id:`, or the one before it. */
  id: string;
  /** `event:`, else `message`. */
  event: string;
  /** Its `data:` lines, joined by line feeds. */
  data: string;
}

const LINE_END = /\r\n|\r|\n/g;

/**
 * The event stream interpretation of the WHATWG HTML standard (§ 9.2.6), fed text as it arrives:
 * lines end in CRLF, LF or CR, even split across chunks; comments are skipped; an event is only
 * dispatched at its blank line, so one cut short by a dropped connection never is.
 */
export class ServerSentEventParser {
  /** The last event ID of the stream, set when an event is dispatched, with or without data. */
  lastEventId = '';
  /** The reconnection time the server asked for (`retry:`), in milliseconds. */
  retry: number | undefined;

  private pending = '';
  /** The previous chunk ended in CR: an LF opening this one belongs to the same line end. */
  private afterCarriageReturn = false;
  private data = '';
  private eventType = '';
  private idBuffer = '';

  /** The events completed by `text`, in order. */
  push(text: string): ServerSentEvent[] {
    let chunk = text;
    if (this.afterCarriageReturn && chunk.startsWith('\n')) chunk = chunk.slice(1);
    this.afterCarriageReturn = false;
    this.pending += chunk;
    const events: ServerSentEvent[] = [];
    let start = 0;
    LINE_END.lastIndex = 0;
    for (let match = LINE_END.exec(this.pending); match; match = LINE_END.exec(this.pending)) {
      // A CR ending the text may be the first half of a CRLF: the next chunk says.
      if (match[0] === '\r' && match.index === this.pending.length - 1) this.afterCarriageReturn = true;
      const event = this.line(this.pending.slice(start, match.index));
      if (event) events.push(event);
      start = LINE_END.lastIndex;
    }
    this.pending = this.pending.slice(start);
    return events;
  }

  private line(line: string): ServerSentEvent | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.eventType = value;
    else if (field === 'data') this.data += `${value}\n`;
    else if (field === 'id' && !value.includes('\0')) this.idBuffer = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.retry = Number(value);
    return undefined;
  }

  private dispatch(): ServerSentEvent | undefined {
    this.lastEventId = this.idBuffer;
    const { data, eventType } = this;
    this.data = '';
    this.eventType = '';
    if (data === '') return undefined;
    return { id: this.lastEventId, event: eventType || 'message', data: data.slice(0, -1) };
  }
}
