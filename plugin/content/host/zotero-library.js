// The Zotero half of the lab-hosted library sync: reads the user's libraries through Zotero's
// API (My Library and every group library Zotero has locally; items with their collections and
// tags, attachment files and their SHA-256, each library's collection tree), sends each with
// core/library-sync.js's pages to /library/sync under its own
// library_id ("user", "group-<groupID>"), uploads the files the server asks for, and keeps
// them current from Zotero.Notifier events. What it sent is remembered per library (a small
// JSON file per server), so a restart sends only what changed. Runs inside Zotero; the Node tests drive it with the fake
// Zotero of plugin/test/fake-zotero.js.

import {
  ChangeSet, Debouncer, WATCHED_TYPES, collectionTree, fingerprint, isUploadable, libraryMode, newSyncId, planSync,
  serverMatches, syncPages, syncedItem, treeFingerprint, withRetry,
} from "../core/library-sync.js";

const KIND = { attachment: "attachment", note: "note" };

/** Remembered state in a JSON file (IOUtils), or null when there is none or it is unreadable. */
export function fileStore(IOUtils, path) {
  return {
    async load() {
      try {
        // readUTF8, not readJSON: Zotero 7.0.32 itself uses readUTF8 (osfile.mjs), so Firefox 115 has it.
        return JSON.parse(await IOUtils.readUTF8(path));
      } catch {
        return null;
      }
    },
    async save(state) {
      await IOUtils.writeJSON(path, state, { tmpPath: `${path}.tmp` });
    },
  };
}

/**
 * The server's id of a Zotero library: "user" for My Library, "group-<groupID>" for a group
 * library, null for what is not synced (feeds, a library Zotero no longer has).
 */
export function serverLibraryId(Zotero, libraryID) {
  const library = Zotero.Libraries.get(libraryID);
  if (!library) return null;
  if (library.libraryType === "user") return "user";
  if (library.libraryType === "group") return `group-${library.groupID}`;
  return null;
}

/**
 * The Zotero libraryID of a server library id (a citation's `library_id`; missing means
 * "user", as in turns stored before group libraries). A group this Zotero does not have (left,
 * or not synced to this computer) is a clear error, never a look-up in the wrong library.
 */
export function zoteroLibraryID(Zotero, libraryId) {
  if (!libraryId || libraryId === "user") return Zotero.Libraries.userLibraryID;
  const match = /^group-([0-9]{1,20})$/.exec(libraryId);
  if (!match) throw new Error(`This source names a library Zotero does not know ("${libraryId}").`);
  const libraryID = Zotero.Groups.getLibraryIDFromGroupID(Number(match[1]));
  if (!libraryID) {
    throw new Error(`This source is in a Zotero group library (group ${match[1]}) that is not in this Zotero: ` +
      "you may have left the group, or it is not synced to this computer yet.");
  }
  return libraryID;
}

export function memoryStore(initial = null) {
  let state = initial;
  return { load: async () => (state ? structuredClone(state) : null), save: async (s) => { state = structuredClone(s); } };
}

/**
 * @param {object} o
 * @param {object} o.Zotero the Zotero global
 * @param {object} o.IOUtils @param {object} o.crypto (WebCrypto: crypto.subtle.digest)
 * @param {import("../core/client.js").ApiClient} o.api
 * @param {{load, save}} o.store remembered state
 * @param {Set<number>} [o.suppressed] item ids whose notifier events are ignored (shared with the import)
 * @param {(progress) => void} [o.onProgress] `{phase: reading|syncing|uploading|done|error, done, total, message}`
 */
export function createLibrarySync({ Zotero, IOUtils, crypto, api, store, suppressed = new Set(), onProgress = () => {},
  sleep = (ms) => new Promise((r) => setTimeout(r, ms)), debounce = {} }) {
  const changes = new ChangeSet();
  changes.suppressed = suppressed;
  let queue = Promise.resolve();
  const engine = { mode: null, status: null, lastError: null };
  const retry = (fn) => withRetry(fn, { sleep });

  /** Jobs run one after the other: a notifier batch waits for a running full sync. */
  function enqueue(job) {
    const run = queue.then(job, job);
    queue = run.catch(() => {});
    return run;
  }

  async function sha256Of(path, cached) {
    const info = await IOUtils.stat(path);
    const mtime = info.lastModified;
    if (cached && cached.path === path && cached.size === info.size && cached.mtime === mtime) return cached;
    const bytes = await IOUtils.read(path);
    const digest = await crypto.subtle.digest("SHA-256", bytes);
    const sha256 = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
    return { path, size: info.size, mtime, sha256 };
  }

  /** One Zotero item as `{item: SyncedItem, path, contentType}`, or null (annotations...). */
  async function describe(item, remembered) {
    const json = item.toJSON();
    const file = {};
    if (item.isAttachment()) {
      file.contentType = item.attachmentContentType || "";
      if (isUploadable(file.contentType)) {
        const path = await item.getFilePathAsync();
        if (path) {
          const hashed = await sha256Of(path, remembered.files?.[item.key]);
          Object.assign(file, { path, sha256: hashed.sha256, hashed });
        }
      }
    }
    const synced = syncedItem(json, file);
    return synced && { item: synced, path: file.path || null, contentType: file.contentType || "", hashed: file.hashed };
  }

  /** An item in the trash, or a child of one: the server should not keep it. */
  function isGone(item) {
    if (item.deleted) return true;
    const parent = item.parentID ? Zotero.Items.get(item.parentID) : null;
    return Boolean(parent && parent.deleted);
  }

  function childKeys(item) {
    if (!item.isRegularItem()) return [];
    const ids = [...item.getAttachments(true), ...item.getNotes(true)];
    return Zotero.Items.get(ids).map((child) => child.key);
  }

  /** My Library and every group library, as `{libraryID, libraryId, name}`; feeds are not sent. */
  function syncedLibraries() {
    return Zotero.Libraries.getAll()
      .map((library) => ({ libraryID: library.libraryID, libraryId: serverLibraryId(Zotero, library.libraryID), name: library.name }))
      .filter((library) => library.libraryId);
  }

  /** A library's collection tree now, and its fingerprint. */
  function treeOf(libraryID) {
    const tree = collectionTree(Zotero.Collections.getByLibrary(libraryID, true));
    return { tree, fp: treeFingerprint(tree) };
  }

  /** The fingerprint of the tree last sent for a library; none sent: the server has an empty one. */
  const sentTree = (library) => library?.tree ?? treeFingerprint([]);

  async function readLibrary(libraryID, remembered) {
    const items = await Zotero.Items.getAll(libraryID, false, false);
    const described = [];
    for (const item of items) {
      if (isGone(item)) continue;
      const d = await describe(item, remembered);
      if (d) described.push(d);
    }
    return described;
  }

  /** What was sent, per library id: `{libraries: {user: {items: {key: {fp, kind}}, files}}}`. */
  function emptyState() {
    return { libraries: {} };
  }

  function emptyLibrary() {
    return { items: {}, files: {} };
  }

  /** The remembered state; one written before group libraries (a single library) is My Library's. */
  async function loadState() {
    const state = await store.load();
    if (state && !state.libraries && state.items) {
      return { libraries: { user: { items: state.items, files: state.files || {} } }, regular: state.regular, attachments: state.attachments };
    }
    return state;
  }

  function emptySummary(full) {
    return { full, sent: 0, deleted: 0, uploaded: 0, unchanged: 0, failed: [], libraries: [] };
  }

  function addSummary(total, libraryId, part) {
    total.libraries.push(libraryId);
    for (const field of ["sent", "deleted", "uploaded", "unchanged"]) total[field] += part[field];
    total.failed.push(...part.failed.map((f) => ({ ...f, library_id: libraryId })));
    return total;
  }

  /**
   * Send a plan (items and deleted keys, and the collection tree when it changed) as pages,
   * then upload the files the server asked for. What the server accepted is remembered; an
   * attachment whose file could not be uploaded is marked, so the next sync offers it again.
   */
  async function send(libraryId, plan, described, state, name = "") {
    const byKey = new Map(described.map((d) => [d.item.key, d]));
    const pages = syncPages({ syncId: newSyncId(), libraryId, ...plan });
    const needs = [];
    const summary = { full: plan.full, sent: plan.items.length, deleted: plan.deleted.length, uploaded: 0, unchanged: 0, failed: [] };
    for (const [i, page] of pages.entries()) {
      onProgress({ phase: "syncing", done: i, total: pages.length, library: name });
      const reply = await retry(() => api.syncLibrary(page));
      for (const item of page.items) {
        const d = byKey.get(item.key);
        state.items[item.key] = { fp: fingerprint(item), kind: KIND[item.item_type] || "item" };
        if (d?.hashed) state.files[item.key] = d.hashed;
      }
      for (const key of page.deleted) {
        delete state.items[key];
        delete state.files[key];
      }
      if (page.collections) state.tree = treeFingerprint(page.collections);
      needs.push(...(reply.needs_upload || []));
    }
    for (const [i, key] of needs.entries()) {
      onProgress({ phase: "uploading", done: i, total: needs.length, library: name });
      const d = byKey.get(key);
      try {
        if (!d?.path) throw new Error("the file is not in this Zotero library's storage");
        const bytes = await IOUtils.read(d.path);
        const reply = await retry(() => api.uploadAttachment(key, bytes, d.contentType, libraryId));
        if (reply.status === "unchanged") summary.unchanged += 1;
        else summary.uploaded += 1;
      } catch (exc) {
        // Still on the server (the counts stay right), but marked so the next sync offers it again.
        if (state.items[key]) state.items[key].fp = "upload-failed";
        delete state.files[key];
        summary.failed.push({ key, title: d?.item.title || key, message: exc.message });
      }
    }
    onProgress({ phase: "uploading", done: needs.length, total: needs.length, library: name });
    return summary;
  }

  /** Saved with the totals over all libraries, which `/library/status` counts too. */
  async function save(state) {
    const kinds = Object.values(state.libraries).flatMap((library) => Object.values(library.items).map((v) => v.kind));
    state.regular = kinds.filter((k) => k === "item").length;
    state.attachments = kinds.filter((k) => k === "attachment").length;
    await store.save(state);
  }

  /** `/library/status`, and from it the mode: `local` (the server reads zotero.sqlite) or `hosted`. */
  async function refreshStatus() {
    engine.status = await api.libraryStatus();
    engine.mode = libraryMode(engine.status);
    return engine.status;
  }

  /**
   * Bring the server up to date with every library, each under its own library_id: a full
   * sync of all when the server does not hold what was remembered (first connection, new
   * server), else only what changed; a library never sent before (a group joined since) goes
   * in full. A library sent before that Zotero no longer has (a group the user left) is
   * emptied on the server by an empty full sync.
   */
  function syncLibrary({ forceFull = false } = {}) {
    return enqueue(async () => {
      const status = await refreshStatus();
      if (engine.mode === "local") return { mode: "local" };
      const remembered = await loadState();
      const full = forceFull || !serverMatches(status, remembered);
      const state = full ? emptyState() : remembered;
      const total = emptySummary(full);
      onProgress({ phase: "reading" });
      try {
        const libraries = syncedLibraries();
        for (const { libraryID, libraryId, name } of libraries) {
          const before = remembered?.libraries[libraryId] || emptyLibrary();
          const described = await readLibrary(libraryID, before);
          const previous = full || !remembered.libraries[libraryId] ? null
            : Object.fromEntries(Object.entries(before.items).map(([k, v]) => [k, v.fp]));
          const plan = planSync(previous, described.map((d) => d.item));
          const { tree, fp } = treeOf(libraryID);
          if (plan.full || fp !== sentTree(before)) plan.collections = tree;
          if (!plan.full && !plan.items.length && !plan.deleted.length && !plan.collections) continue;
          state.libraries[libraryId] = full ? emptyLibrary() : state.libraries[libraryId] || emptyLibrary();
          addSummary(total, libraryId, await send(libraryId, plan, described, state.libraries[libraryId], name));
        }
        const present = new Set(libraries.map((l) => l.libraryId));
        for (const [libraryId, gone] of Object.entries(remembered?.libraries || {})) {
          if (present.has(libraryId)) continue;
          const part = await send(libraryId, { full: true, items: [], deleted: [] }, [], emptyLibrary());
          addSummary(total, libraryId, { ...part, deleted: Object.keys(gone.items).length });
          delete state.libraries[libraryId];
        }
        return synced(total, total.libraries.length ? summaryLine(total) : "Your library on the server is up to date.");
      } catch (exc) {
        throw failed(exc);
      } finally {
        await save(state);
        await refreshStatus().catch(() => {});
      }
    });
  }

  /** A hosted sync's result from its summary, said as done with `message` when there is one. */
  function synced(total, message) {
    if (message) onProgress({ phase: "done", message });
    return { mode: "hosted", ...total };
  }

  /** Remember and show a sync's failure; returns it to be rethrown. */
  function failed(exc) {
    engine.lastError = exc;
    onProgress({ phase: "error", message: exc.message });
    return exc;
  }

  /**
   * Send a batch of changed item ids and deleted items (`{libraryID, key}`, from the notifier,
   * or from an import) as one sync per library they belong to, with the uploads it calls for;
   * with `trees`, also each library's collection tree that changed since it was sent.
   * Unchanged items, and items of libraries that are not synced (feeds), are not sent.
   */
  function syncChanges({ ids = [], deleted = [], trees = false }) {
    return enqueue(async () => {
      if (engine.mode === null) await refreshStatus();
      if (engine.mode !== "hosted") return { mode: engine.mode };
      const state = (await loadState()) || emptyState();
      const changes = new Map(); // library id -> {libraryID, described, deleted (keys), explicit (keys)}
      const changesOf = (libraryID) => {
        const libraryId = serverLibraryId(Zotero, libraryID);
        if (!libraryId) return null;
        if (!changes.has(libraryId)) changes.set(libraryId, { libraryID, described: [], deleted: new Set(), explicit: new Set() });
        return changes.get(libraryId);
      };
      for (const { libraryID, key } of deleted) {
        const change = changesOf(libraryID);
        change?.deleted.add(key);
        change?.explicit.add(key);
      }
      for (const item of await Zotero.Items.getAsync(ids)) {
        const change = item && changesOf(item.libraryID);
        if (!change) continue;
        if (isGone(item)) {
          change.deleted.add(item.key);
          for (const key of childKeys(item)) change.deleted.add(key);
          continue;
        }
        const remembered = state.libraries[serverLibraryId(Zotero, item.libraryID)] || emptyLibrary();
        const d = await describe(item, remembered);
        if (d && remembered.items[d.item.key]?.fp !== fingerprint(d.item)) change.described.push(d);
      }
      if (trees) {
        for (const { libraryID, libraryId } of syncedLibraries()) {
          const { tree, fp } = treeOf(libraryID);
          if (fp !== sentTree(state.libraries[libraryId])) changesOf(libraryID).collections = tree;
        }
      }
      const total = emptySummary(false);
      try {
        for (const [libraryId, change] of changes) {
          const library = (state.libraries[libraryId] ||= emptyLibrary());
          const gone = [...change.deleted].filter((key) => key in library.items || change.explicit.has(key));
          if (!change.described.length && !gone.length && !change.collections) continue;
          const name = Zotero.Libraries.get(change.libraryID)?.name || "";
          const plan = { full: false, items: change.described.map((d) => d.item), deleted: gone, collections: change.collections || null };
          addSummary(total, libraryId, await send(libraryId, plan, change.described, library, name));
        }
        return synced(total, total.libraries.length ? summaryLine(total) : null);
      } catch (exc) {
        throw failed(exc);
      } finally {
        await save(state);
      }
    });
  }

  /**
   * Watch the library (Zotero.Notifier: items, collections, items joining or leaving a
   * collection, tags on items) and send what changed once activity settles. Events of
   * suppressed ids (the plugin's own import) are ignored. Returns the undo.
   */
  function observe() {
    const flush = () => {
      if (changes.empty) return Promise.resolve();
      return syncChanges(changes.take()).catch((exc) => Zotero.debug(`Zocrates: library change not sent (${exc.message})`));
    };
    const debouncer = new Debouncer(flush, debounce);
    const observer = {
      notify(event, type, ids, extraData) {
        if (changes.note(event, type, ids, extraData)) debouncer.poke();
      },
    };
    const id = Zotero.Notifier.registerObserver(observer, WATCHED_TYPES, "zocrates-library-sync");
    engine.flush = () => debouncer.fire();
    return () => {
      Zotero.Notifier.unregisterObserver(id);
      debouncer.cancel();
    };
  }

  return Object.assign(engine, { changes, refreshStatus, syncLibrary, syncChanges, observe, idle: () => queue });
}

export function summaryLine(summary) {
  const parts = [];
  parts.push(summary.full ? `Library sent in full (${summary.sent} items)` : `${summary.sent} changed items sent`);
  if (summary.deleted) parts.push(`${summary.deleted} removed`);
  if (summary.uploaded) parts.push(`${summary.uploaded} files uploaded`);
  if (summary.failed.length) parts.push(`${summary.failed.length} files not uploaded (${summary.failed[0].message})`);
  if (summary.libraries?.length > 1) parts.push(`${summary.libraries.length} libraries`);
  return `${parts.join(", ")}.`;
}
