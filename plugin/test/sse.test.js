import { test } from "node:test";
import assert from "node:assert/strict";
import { SseParser, parseSse } from "../content/core/sse.js";

test("frames split across chunks at every position parse the same", () => {
  const body = 'id: 1\nevent: turn\ndata: {"turn_id":"t1"}\n\n: ping\n\nid: 2\r\nevent: delta\r\ndata: {"text":"a"}\r\n\r\n';
  const whole = parseSse(body);
  assert.deepEqual(whole.map((e) => [e.id, e.event, e.data]), [["1", "turn", '{"turn_id":"t1"}'], ["2", "delta", '{"text":"a"}']]);
  for (let cut = 0; cut <= body.length; cut += 1) {
    const p = new SseParser();
    const events = [...p.feed(body.slice(0, cut)), ...p.feed(body.slice(cut))];
    assert.deepEqual(events, whole, `cut at ${cut}`);
  }
});

test("a lone CR ends a line, even when the LF might follow in the next chunk", () => {
  const p = new SseParser();
  assert.deepEqual(p.feed("data: a\r"), []);
  assert.deepEqual(p.feed("\rdata: b\r\r").map((e) => e.data), ["a"]);
  assert.deepEqual(p.feed("\n").map((e) => e.data), ["b"]);
});

test("multi-line data joins with newlines; comments and unknown fields are ignored", () => {
  const [e] = parseSse(":hello\ndata: one\ndata:two\nfoo: bar\n\n");
  assert.equal(e.data, "one\ntwo");
  assert.equal(e.event, "message");
});

test("last event id persists across events and survives events without an id", () => {
  const p = new SseParser();
  const events = p.feed("id: 7\ndata: x\n\ndata: y\n\n");
  assert.deepEqual(events.map((e) => e.id), ["7", "7"]);
  assert.equal(p.lastEventId, "7");
});

test("an id containing NUL is ignored; an empty id resets it", () => {
  const p = new SseParser();
  p.feed("id: 3\ndata: a\n\nid: 4\0\ndata: b\n\n");
  assert.equal(p.lastEventId, "3");
  p.feed("id\ndata: c\n\n");
  assert.equal(p.lastEventId, "");
});

test("retry takes digits only; events without data are not dispatched; BOM dropped", () => {
  const p = new SseParser();
  assert.deepEqual(p.feed("\ufeffretry: 1500\nevent: x\n\nretry: 1x\n\n"), []);
  assert.equal(p.retry, 1500);
});

test("a partial event at the end of the stream is discarded", () => {
  const p = new SseParser();
  assert.deepEqual(p.feed("data: complete\n\ndata: partial"), [{ event: "message", data: "complete", id: "" }]);
  assert.deepEqual(p.end(), []);
});
