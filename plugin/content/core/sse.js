// Server-sent events: an incremental frame parser (WHATWG "interpreting an event stream").
//
// Pure: feed it decoded text in any chunking, get complete events back. Lines end in CRLF,
// LF or CR (a CR at the end of a chunk waits for the next chunk to see whether LF follows);
// a leading BOM is dropped; comment lines (": ping") are ignored; `id` persists across
// events as `lastEventId` (an id containing NUL is ignored, as the spec says), which is what a
// reconnect sends as `Last-Event-ID`; `retry` with ASCII digits only sets `retry`; an event
// with no data lines is not dispatched.

export class SseParser {
  constructor() {
    this.buffer = "";
    this.started = false;
    this.lastEventId = "";
    this.retry = null;
    this._reset();
  }

  _reset() {
    this.eventType = "";
    this.data = [];
    this.hasData = false;
    this.eventId = null;
  }

  /** Feed decoded text; returns the events completed by it: {event, data, id}. */
  feed(text) {
    if (!this.started && text.length) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      this.started = true;
    }
    this.buffer += text;
    const events = [];
    let start = 0;
    for (;;) {
      let i = start;
      while (i < this.buffer.length && this.buffer[i] !== "\n" && this.buffer[i] !== "\r") i += 1;
      if (i >= this.buffer.length) break;
      if (this.buffer[i] === "\r" && i + 1 >= this.buffer.length) break; // CR: wait for a LF
      const line = this.buffer.slice(start, i);
      start = this.buffer[i] === "\r" && this.buffer[i + 1] === "\n" ? i + 2 : i + 1;
      const event = this._line(line);
      if (event) events.push(event);
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** End of stream: a trailing partial event is discarded, as the spec requires. */
  end() {
    if (this.buffer === "\r") this.feed("\n");
    this.buffer = "";
    this._reset();
    return [];
  }

  _line(line) {
    if (line === "") return this._dispatch();
    if (line[0] === ":") return null;
    const colon = line.indexOf(":");
    let field = line;
    let value = "";
    if (colon >= 0) {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value[0] === " ") value = value.slice(1);
    }
    if (field === "event") this.eventType = value;
    else if (field === "data") {
      this.data.push(value);
      this.hasData = true;
    } else if (field === "id") {
      if (!value.includes("\0")) {
        this.eventId = value;
        this.lastEventId = value;
      }
    } else if (field === "retry") {
      if (/^[0-9]+$/.test(value)) this.retry = Number(value);
    }
    return null;
  }

  _dispatch() {
    if (!this.hasData) {
      this._reset();
      return null;
    }
    const event = { event: this.eventType || "message", data: this.data.join("\n"), id: this.lastEventId };
    this._reset();
    return event;
  }
}

/** Parse a whole SSE body at once (tests, recorded streams). */
export function parseSse(text) {
  const parser = new SseParser();
  const events = parser.feed(text);
  parser.end();
  return events;
}

/** The JSON payload of an event, or an `invalid_event` error naming the event. */
export function eventJson(event) {
  try {
    return JSON.parse(event.data);
  } catch (exc) {
    throw new Error(`The server sent a "${event.event}" event whose data is not JSON (${exc.message}).`);
  }
}
