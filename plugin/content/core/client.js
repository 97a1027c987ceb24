// The gateway's HTTP API (docs/api.md) over an injected fetch: the plugin, the web page and
// the tests each pass their own. Turns stream over fetch() with a streaming body (EventSource
// cannot send Authorization), resume after a dropped connection with Last-Event-ID, and
// every failure becomes an ApiError whose message says what happened and what to do.

import { SseParser, eventJson } from "./sse.js";

export class ApiError extends Error {
  constructor(code, message, status = 0) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.status = status;
  }
}

const TERMINAL = new Set(["done", "error"]);

export function normaliseBaseUrl(url) {
  const trimmed = String(url || "").trim().replace(/\/+$/, "");
  if (!/^https?:\/\/[^\s/]+/i.test(trimmed)) {
    throw new ApiError("bad_server_url",
      `The server URL "${url}" is not an http(s) address; expected something like http://127.0.0.1:8000.`);
  }
  return trimmed;
}

export class ApiClient {
  /**
   * @param {object} options
   * @param {string} options.baseUrl gateway root, e.g. http://127.0.0.1:8000 ("" = same origin)
   * @param {() => string} options.token current bearer token
   * @param {typeof fetch} options.fetch
   * @param {(ms:number)=>Promise<void>} [options.sleep]
   */
  constructor({ baseUrl, token, fetch, sleep, maxResumes = 5 }) {
    this.baseUrl = baseUrl === "" ? "" : normaliseBaseUrl(baseUrl);
    this.token = token;
    this.fetch = fetch;
    this.sleep = sleep || ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.maxResumes = maxResumes;
  }

  _headers(extra = {}) {
    const headers = { ...extra };
    const token = this.token();
    if (token) headers.Authorization = `Bearer ${token}`;
    return headers;
  }

  /** `body` is sent as JSON; `raw` (bytes) as it is, with the Content-Type in `headers`. */
  async _send(path, { method = "GET", body, raw, headers = {}, signal } = {}) {
    let response;
    try {
      response = await this.fetch(this.baseUrl + path, {
        method,
        headers: this._headers(body !== undefined ? { "Content-Type": "application/json", ...headers } : headers),
        body: raw !== undefined ? raw : body !== undefined ? JSON.stringify(body) : undefined,
        signal,
      });
    } catch (exc) {
      if (exc && exc.name === "AbortError") throw exc;
      throw new ApiError("server_unreachable",
        `Cannot reach the Zocrates server at ${this.baseUrl || "this address"} (${exc?.message || exc}). ` +
        "Is it running? Start it with `make run` and check the server URL in the preferences.");
    }
    if (!response.ok) throw await errorFromResponse(response);
    return response;
  }

  async json(path, options) {
    const response = await this._send(path, options);
    return response.json();
  }

  /** `/health` with the token: `{status, tokenAccepted, services}`. */
  async checkConnection() {
    const health = await this.json("/health");
    if (!this.token()) {
      return { ...health, tokenAccepted: false,
        message: "The server is up, but no access token is set. Paste the token `make run` printed." };
    }
    if (!health.services) {
      return { ...health, tokenAccepted: false,
        message: "The server is up, but it did not accept this token (wrong, revoked or expired). " +
          "Create one with `python -m zocrates_gateway.admin token create --user <name>`." };
    }
    const down = Object.entries(health.services).filter(([, s]) => s.status !== "ok").map(([n]) => n);
    return { ...health, tokenAccepted: true,
      message: down.length ? `Connected; not ready yet: ${down.join(", ")}.` : "Connected; every service is ready." };
  }

  listSessions() {
    return this.json("/sessions").then((r) => r.sessions || []);
  }

  getSession(id) {
    return this.json(`/sessions/${encodeURIComponent(id)}`);
  }

  deleteSession(id) {
    return this.json(`/sessions/${encodeURIComponent(id)}`, { method: "DELETE" });
  }

  cancelTurn(turnId) {
    return this.json(`/chat/${encodeURIComponent(turnId)}/cancel`, { method: "POST" });
  }

  prepareBatch(sessionId, turnId, candidateIds) {
    return this.json("/discover/prepare_batch", {
      method: "POST",
      body: { session_id: sessionId, turn_id: turnId, candidate_ids: candidateIds },
    });
  }

  /**
   * Tell the server the polite-pool contact email (null forgets it):
   * `POST /register` -> `{user_id, contact_email}`.
   */
  register(contactEmail) {
    return this.json("/register", { method: "POST", body: { contact_email: contactEmail || null } });
  }

  /** `GET /settings`: `{unsupported_claims, verification_enabled, verification_threshold}` of this user. */
  settings() {
    return this.json("/settings");
  }

  /** `PUT /settings`: change the keys given (the others stay) -> all of them as stored. */
  updateSettings(changes) {
    return this.json("/settings", { method: "PUT", body: changes });
  }

  /** `POST /citations/verify`: score a stored turn's citations again -> the updated turn. */
  reverify(sessionId, turnId) {
    return this.json("/citations/verify", { method: "POST", body: { session_id: sessionId, turn_id: turnId } });
  }

  /** `POST /citations/resolve`: resolve a stored turn again with the user's threshold (nothing verified again) -> the turn. */
  resolveTurn(sessionId, turnId) {
    return this.json("/citations/resolve", { method: "POST", body: { session_id: sessionId, turn_id: turnId } });
  }

  /** `POST /llm/test_decision_model`: `{reachable, provider, model, latency_ms, sample_probability, error}`. */
  testDecisionModel() {
    return this.json("/llm/test_decision_model", { method: "POST" });
  }

  /** `GET /library/status`: `source` (`zotero_dir`, `hosted`, `none`), counts, ingest progress. */
  libraryStatus() {
    return this.json("/library/status");
  }

  /** `POST /library/rescan`: index the library again now (e.g. after an import) -> its status. */
  rescanLibrary() {
    return this.json("/library/rescan", { method: "POST" });
  }

  /** `GET /library/collections`: `{libraries, collections: [{library_id, key, name, parent_key, items}], truncated}`. */
  libraryCollections() {
    return this.json("/library/collections");
  }

  /** `GET /library/tags`: `{libraries, tags: [{library_id, tag, items}], truncated}`. */
  libraryTags() {
    return this.json("/library/tags");
  }

  /**
   * `GET /sessions/{id}/turns/{turn_id}/export`: the answer for a manuscript,
   * `{markdown, bibtex, csl_json}` (Pandoc citations `[@key]` and the cited items).
   */
  /**
   * The sentence-level attribution of one citation occurrence of a stored turn (docs/api.md,
   * "Sentence-level attribution"); the stored one unless `refresh`.
   */
  sentenceAttribution({ sessionId, turnId, citationIndex, occurrence, refresh = false }) {
    return this.json("/citations/sentence_attribution", {
      method: "POST",
      body: { session_id: sessionId, turn_id: turnId, citation_index: citationIndex, occurrence, refresh },
    });
  }

  exportTurn(sessionId, turnId) {
    return this.json(`/sessions/${encodeURIComponent(sessionId)}/turns/${encodeURIComponent(turnId)}/export`);
  }

  /** One sync page (docs/api.md, "The lab-hosted library") -> `{needs_upload, complete, ...}`. */
  syncLibrary(page) {
    return this.json("/library/sync", { method: "POST", body: page });
  }

  /** The file of a synced attachment -> `{key, sha256, size, status: "queued" | "unchanged"}`. */
  uploadAttachment(key, bytes, contentType, libraryId = "user") {
    return this.json(`/library/attachments/${encodeURIComponent(key)}?library_id=${encodeURIComponent(libraryId)}`,
      { method: "PUT", raw: bytes, headers: { "Content-Type": contentType } });
  }

  /** A staged PDF's bytes (ArrayBuffer). */
  async stagedFile(objectName) {
    const response = await this._send(`/staging/${encodeURIComponent(objectName)}`);
    return response.arrayBuffer();
  }

  /**
   * Run one turn: POST /chat, then, if the connection drops before `done` or `error`,
   * GET /chat/{turn_id}/events with Last-Event-ID until the turn ends. `onEvent({event,
   * data, id})` sees each event once, in order. Resolves with the terminal event. `scope`
   * (core/scope.js) limits a library question to part of the library; null: all of it.
   * `scopeLabel` names it as the user chose it; the turn keeps both.
   */
  async streamTurn({ message, sessionId, scope = null, scopeLabel = "", onEvent, signal }) {
    const body = { message };
    if (sessionId) body.session_id = sessionId;
    if (scope) body.scope = scope;
    if (scope && scopeLabel) body.scope_label = scopeLabel;
    let turnId = null;
    let lastId = "";
    let resumes = 0;
    let request = () => this._send("/chat", { method: "POST", body, headers: { Accept: "text/event-stream" }, signal });
    for (;;) {
      let terminal = null;
      try {
        const response = await request();
        terminal = await this._readStream(response, (event) => {
          if (event.event === "turn") turnId = event.data.turn_id;
          lastId = event.id;
          onEvent(event);
        }, signal);
      } catch (exc) {
        if (exc && exc.name === "AbortError") throw exc;
        if (exc instanceof ApiError && exc.code !== "stream_interrupted" && exc.code !== "server_unreachable") throw exc;
        if (!turnId || resumes >= this.maxResumes) {
          throw exc instanceof ApiError && exc.code === "stream_interrupted" && !turnId
            ? new ApiError("stream_interrupted", "The connection closed before the turn started. Try again.")
            : exc;
        }
      }
      if (terminal) return terminal;
      if (!turnId) throw new ApiError("stream_interrupted", "The stream ended before the turn started. Try again.");
      if (resumes >= this.maxResumes) {
        throw new ApiError("stream_interrupted",
          `The connection to the server dropped ${resumes + 1} times during this turn; the answer is ` +
          "stored and will appear when you reload the session.");
      }
      resumes += 1;
      await this.sleep(Math.min(250 * 2 ** (resumes - 1), 4000));
      const resumeFrom = lastId;
      request = () => this._send(`/chat/${encodeURIComponent(turnId)}/events`, {
        headers: { Accept: "text/event-stream", ...(resumeFrom ? { "Last-Event-ID": resumeFrom } : {}) },
        signal,
      });
    }
  }

  /** Read an SSE body; returns the terminal event, or null when the body ended without one. */
  async _readStream(response, deliver, signal) {
    const parser = new SseParser();
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    const handle = (events) => {
      for (const raw of events) {
        const event = { event: raw.event, id: raw.id, data: eventJson(raw) };
        deliver(event);
        if (TERMINAL.has(event.event)) return event;
      }
      return null;
    };
    try {
      for (;;) {
        let chunk;
        try {
          chunk = await reader.read();
        } catch (exc) {
          if (signal?.aborted || exc?.name === "AbortError") throw exc;
          throw new ApiError("stream_interrupted", `The stream broke off: ${exc?.message || exc}`);
        }
        if (chunk.done) {
          const tail = handle(parser.feed(decoder.decode()));
          return tail;
        }
        const terminal = handle(parser.feed(decoder.decode(chunk.value, { stream: true })));
        if (terminal) return terminal;
      }
    } finally {
      try {
        reader.cancel().catch(() => {});
      } catch {
        /* already released */
      }
    }
  }
}

/** An ApiError from a non-2xx response and its JSON error body (docs/api.md). */
export async function errorFromResponse(response) {
  let code = `http_${response.status}`;
  let detail = "";
  try {
    const body = await response.json();
    if (body && body.error) {
      code = body.error.code || code;
      detail = body.error.message || "";
    } else if (body && body.detail) {
      detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    }
  } catch {
    /* not JSON */
  }
  if (response.status === 401) {
    return new ApiError("unauthorized",
      "The server did not accept the access token (missing, wrong, revoked or expired). " +
      "Set the token `make run` printed, or create one with `python -m zocrates_gateway.admin token create --user <name>`.",
      401);
  }
  if (response.status === 404 && !detail) {
    return new ApiError("not_found", `The server has no ${response.url ? new URL(response.url).pathname : "such"} route; it may be older than this plugin.`, 404);
  }
  return new ApiError(code, detail || `The server answered ${response.status} ${response.statusText || ""}`.trim(), response.status);
}

/** The human line for a turn's `error` event. */
export function turnErrorMessage(data) {
  const known = {
    cancelled: "Stopped.",
    discovery_not_available: "Online discovery is not available on this server yet.",
    retrieval_not_available: "Library search is not available on this server right now.",
    timeout: "The server took too long to answer.",
  };
  const head = known[data?.code];
  const message = data?.message || "";
  if (head && message && head !== message) return `${head} ${message}`;
  return head || message || "The turn failed without an explanation from the server.";
}
