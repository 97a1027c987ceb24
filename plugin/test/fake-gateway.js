// An in-memory stand-in for the gateway's library routes, with the semantics docs/api.md
// gives them (needs_upload by SHA-256, full syncs remove what they did not list, deletes take
// children along, uploads only for synced attachments), each library_id ("user",
// "group-<id>") its own catalog as in retrieval's, for the Node tests of the sync flow.
// The real gateway is exercised by tests/ui/test_plugin_library_sync.py.
import { createHash } from "node:crypto";
import { ApiError } from "../content/core/client.js";

const LIBRARY_ID = /^(user|group-[0-9]{1,20})$/;

export function fakeGateway({ source = "hosted", staged = new Map() } = {}) {
  // library id -> {items: key -> item, files: key -> sha256}; `items` and `files` are My Library's.
  const libraries = new Map();
  const library = (libraryId) => {
    if (!libraries.has(libraryId)) libraries.set(libraryId, { items: new Map(), files: new Map() });
    return libraries.get(libraryId);
  };
  const { items, files } = library("user");
  const all = (what) => [...libraries.values()].flatMap((l) => [...l[what]]);
  const calls = [];
  const failUploads = [];
  const fail = (status, code, message) => { throw new ApiError(code, message, status); };
  const api = {
    calls,
    items,
    files,
    library,
    failUploads, // queued errors for the next uploads: {status, code}
    source,
    async libraryStatus() {
      calls.push({ route: "status" });
      // Counts over all the user's libraries, as retrieval's catalog gives them.
      const stored = all("items").map(([, item]) => item);
      const uploaded = all("files").length;
      const attachments = stored.filter((i) => i.item_type === "attachment");
      return {
        source: api.source === "zotero_dir" ? "zotero_dir" : stored.length ? "hosted" : "none",
        state: "done", ready: true,
        items: stored.filter((i) => !["attachment", "note", "annotation"].includes(i.item_type)).length,
        attachments: attachments.length,
        uploaded,
        awaiting_upload: attachments.filter((a) => a.sha256 && library(a.libraryId).files.get(a.key) !== a.sha256).length,
        indexed: uploaded, failures_by_reason: {},
      };
    },
    async rescanLibrary() {
      calls.push({ route: "rescan" });
      if (!all("items").length && api.source !== "zotero_dir") fail(404, "no_library", "no library to rescan");
      return api.libraryStatus();
    },
    async syncLibrary(page) {
      calls.push({ route: "sync", page });
      if (api.source === "zotero_dir") fail(503, "library_not_available", "read from the Zotero data directory");
      if (page.items.length > 500) fail(422, "invalid_request", "items: at most 500");
      if (new TextEncoder().encode(JSON.stringify(page)).length > 768 * 1024) fail(413, "sync_page_too_large", "too large");
      if (!LIBRARY_ID.test(page.library_id)) fail(422, "invalid_request", `bad library_id ${page.library_id}`);
      const { items, files } = library(page.library_id);
      for (const item of page.items) {
        if (!/^[A-Z0-9]{8}$/.test(item.key)) fail(422, "invalid_request", `bad key ${item.key}`);
        items.set(item.key, { ...item, syncId: page.sync_id, libraryId: page.library_id });
      }
      const remove = (key) => {
        for (const child of [...items.values()].filter((i) => i.parent_key === key)) remove(child.key);
        items.delete(key);
        files.delete(key);
      };
      page.deleted.forEach(remove);
      if (page.full && page.final) for (const item of [...items.values()]) if (item.syncId !== page.sync_id) remove(item.key);
      const needs = page.items.filter((i) => i.item_type === "attachment" && i.sha256 && files.get(i.key) !== i.sha256).map((i) => i.key);
      return { library_id: page.library_id, sync_id: page.sync_id, page: page.page, stored: page.items.length, deleted: page.deleted.length, needs_upload: needs, complete: page.final };
    },
    async uploadAttachment(key, bytes, contentType, libraryId = "user") {
      calls.push({ route: "upload", key, contentType, size: bytes.byteLength, libraryId });
      const queued = failUploads.shift();
      if (queued) fail(queued.status, queued.code, queued.message || `HTTP ${queued.status}`);
      if (!LIBRARY_ID.test(libraryId)) fail(422, "invalid_request", `bad library_id ${libraryId}`);
      const { items, files } = library(libraryId);
      const item = items.get(key);
      if (!item || item.item_type !== "attachment") fail(404, "unknown_attachment", `${key} is no attachment of your synced library`);
      if (contentType === "application/pdf" && new TextDecoder().decode(bytes.slice(0, 5)) !== "%PDF-") fail(415, "not_a_pdf", "not a PDF");
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      const unchanged = files.get(key) === sha256;
      files.set(key, sha256);
      return { library_id: libraryId, key, sha256, size: bytes.byteLength, status: unchanged ? "unchanged" : "queued" };
    },
    async stagedFile(objectName) {
      calls.push({ route: "staged", objectName });
      if (!staged.has(objectName)) fail(404, "not_found", "no such staged file");
      const bytes = staged.get(objectName);
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    },
    routes: (route) => calls.filter((c) => c.route === route),
  };
  return api;
}
