import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiClient, turnErrorMessage } from "../content/core/client.js";

function sseResponse(chunks, { breakAfter = false } = {}) {
  const enc = new TextEncoder();
  let i = 0;
  return {
    ok: true, status: 200,
    body: { getReader: () => ({
      read: async () => {
        if (i < chunks.length) return { done: false, value: enc.encode(chunks[i++]) };
        if (breakAfter) throw new TypeError("network error");
        return { done: true };
      },
      cancel: async () => {},
    }) },
  };
}
const frame = (id, event, data) => `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

test("a turn streams with the bearer token and resumes after a drop with Last-Event-ID", async () => {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    if (calls.length === 1) {
      return sseResponse([frame(1, "turn", { turn_id: "T1", session_id: "S1" }), frame(2, "delta", { text: "Hel" })], { breakAfter: true });
    }
    return sseResponse([": ping\n\n", frame(3, "delta", { text: "lo" }), frame(4, "done", { text: "Hello" })]);
  };
  const client = new ApiClient({ baseUrl: "http://h:1/", token: () => "tok", fetch, sleep: async () => {} });
  const seen = [];
  const terminal = await client.streamTurn({ message: "hi", onEvent: (e) => seen.push(`${e.id}:${e.event}`) });
  assert.equal(terminal.event, "done");
  assert.deepEqual(seen, ["1:turn", "2:delta", "3:delta", "4:done"]);
  assert.equal(calls[0].url, "http://h:1/chat");
  assert.equal(calls[0].init.headers.Authorization, "Bearer tok");
  assert.equal(JSON.parse(calls[0].init.body).message, "hi");
  assert.equal(calls[1].url, "http://h:1/chat/T1/events");
  assert.equal(calls[1].init.headers["Last-Event-ID"], "2");
  assert.ok(!calls.some((c) => c.url.includes("tok")), "the token must never be in a URL");
});

test("401 and an unreachable server become clear messages", async () => {
  const unauthorized = new ApiClient({ baseUrl: "http://h:1", token: () => "bad", fetch: async () => ({ ok: false, status: 401, json: async () => ({ error: { code: "unauthorized", message: "x" } }) }) });
  await assert.rejects(unauthorized.listSessions(), /did not accept the access token/);
  const down = new ApiClient({ baseUrl: "http://h:1", token: () => "t", fetch: async () => { throw new TypeError("fetch failed"); } });
  await assert.rejects(down.listSessions(), (e) => e.code === "server_unreachable" && /Is it running\?/.test(e.message));
  assert.throws(() => new ApiClient({ baseUrl: "ftp://x", token: () => "", fetch }), /not an http\(s\) address/);
});

test("checkConnection tells a wrong token from a good one", async () => {
  const health = (body) => async () => ({ ok: true, status: 200, json: async () => body });
  const wrong = await new ApiClient({ baseUrl: "http://h:1", token: () => "t", fetch: health({ status: "ok" }) }).checkConnection();
  assert.equal(wrong.tokenAccepted, false);
  assert.match(wrong.message, /did not accept this token/);
  const good = await new ApiClient({ baseUrl: "http://h:1", token: () => "t", fetch: health({ status: "ok", services: { retrieval: { status: "ok" } } }) }).checkConnection();
  assert.equal(good.tokenAccepted, true);
  const none = await new ApiClient({ baseUrl: "http://h:1", token: () => "", fetch: health({ status: "ok" }) }).checkConnection();
  assert.match(none.message, /no access token is set/);
});

test("turn error lines", () => {
  assert.equal(turnErrorMessage({ code: "cancelled", message: "Stopped." }), "Stopped.");
  assert.match(turnErrorMessage({ code: "discovery_not_available", message: "" }), /not available on this server yet/);
});

test("register, library status, sync pages and raw uploads go to the documented routes", async () => {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    return { ok: true, status: 200, json: async () => ({ user_id: "ada", contact_email: "ada@uni.edu" }) };
  };
  const client = new ApiClient({ baseUrl: "http://h:1", token: () => "tok", fetch });
  assert.deepEqual(await client.register("ada@uni.edu"), { user_id: "ada", contact_email: "ada@uni.edu" });
  await client.register("");
  await client.libraryStatus();
  await client.rescanLibrary();
  await client.syncLibrary({ sync_id: "s", items: [], deleted: [] });
  const bytes = new Uint8Array([37, 80, 68, 70, 45]);
  await client.uploadAttachment("ABCD2345", bytes, "application/pdf");
  assert.deepEqual(calls.map((c) => `${c.init.method} ${c.url}`), ["POST http://h:1/register", "POST http://h:1/register",
    "GET http://h:1/library/status", "POST http://h:1/library/rescan", "POST http://h:1/library/sync", "PUT http://h:1/library/attachments/ABCD2345?library_id=user"]);
  assert.deepEqual(JSON.parse(calls[0].init.body), { contact_email: "ada@uni.edu" });
  assert.deepEqual(JSON.parse(calls[1].init.body), { contact_email: null }, "no email forgets it");
  const upload = calls.at(-1).init;
  assert.equal(upload.body, bytes, "the file goes as raw bytes");
  assert.equal(upload.headers["Content-Type"], "application/pdf");
  assert.equal(upload.headers.Authorization, "Bearer tok");
});

test("an answer's export is asked of its session and turn, with the token", async () => {
  const calls = [];
  const exported = { markdown: "Rates [@jonsson2021].\n\n# References\n", bibtex: "@article{jonsson2021,\n}\n", csl_json: [] };
  const fetch = async (url, init) => {
    calls.push({ url, init });
    return { ok: true, status: 200, json: async () => exported };
  };
  const client = new ApiClient({ baseUrl: "http://h:1", token: () => "tok", fetch });
  assert.deepEqual(await client.exportTurn("S1", "T/1"), exported);
  assert.equal(`${calls[0].init.method} ${calls[0].url}`, "GET http://h:1/sessions/S1/turns/T%2F1/export");
  assert.equal(calls[0].init.headers.Authorization, "Bearer tok");
});
