// The pure half of the lab-hosted library sync (docs/api.md, "The lab-hosted library"):
// Zotero item JSON -> SyncedItem, what changed since the last sync, sync pages within the
// gateway's limits, which notifier events to send, retry decisions, and the status line.
// No Zotero and no network here: host/zotero-library.js feeds it and sends what it builds.

import {
  CONTENT_TYPE_PATTERN as CONTENT_TYPE, ITEM_KEY_PATTERN as ITEM_KEY, ITEM_TYPE_PATTERN as ITEM_TYPE, MAX_SYNC_BODY_BYTES,
  MAX_SYNC_COLLECTIONS, MAX_SYNC_DELETED, MAX_SYNC_ITEMS, SHA256_PATTERN, SYNCED_ITEM_MAX as MAX, UPLOAD_TYPES as INDEXED_TYPES,
} from "./limits.js";

/** The gateway's limits for one sync page (limits.js, generated from libs/contracts). */
export const MAX_PAGE_ITEMS = MAX_SYNC_ITEMS;
export const MAX_PAGE_DELETED = MAX_SYNC_DELETED;
// The margin below the body the gateway reads covers the JSON a page's byte count leaves out.
export const MAX_PAGE_BYTES = MAX_SYNC_BODY_BYTES - 68 * 1024;
/** What retrieval converts; the gateway refuses an upload of anything else. */
export const UPLOAD_TYPES = new Set(INDEXED_TYPES);
// Zotero's container fields, in the order a paper most likely uses them.
const PUBLICATION_FIELDS = ["publicationTitle", "proceedingsTitle", "bookTitle", "websiteTitle", "blogTitle",
  "forumTitle", "encyclopediaTitle", "dictionaryTitle", "programTitle", "university", "institution", "publisher"];

const clip = (value, max) => {
  const text = String(value ?? "").trim();
  return text.length > max ? text.slice(0, max) : text;
};
const orNull = (value, max) => clip(value, max) || null;

/** The year in a Zotero date as entered ("2010-02-15", "March 2010", "2010"), or null. */
export function yearOf(date) {
  const match = /(?:^|\D)(\d{4})(?:\D|$)/.exec(String(date || ""));
  return match ? Number(match[1]) : null;
}

/** DOI of an item: its DOI field, or a `DOI: ...` line in Extra (item types without the field). */
function doiOf(json) {
  if (json.DOI) return json.DOI;
  const match = /^DOI:\s*(\S+)\s*$/im.exec(json.extra || "");
  return match ? match[1] : "";
}

function creatorOf(c) {
  const creator = { creator_type: clip(c.creatorType || "author", 64) };
  if (c.name !== undefined && c.name !== null && c.name !== "") creator.name = clip(c.name, 500);
  else Object.assign(creator, { first_name: clip(c.firstName, 500), last_name: clip(c.lastName, 500) });
  return creator;
}

/**
 * One Zotero item (`item.toJSON()`) as a SyncedItem (libs/contracts). `file` is what the
 * adapter learned about an attachment's file: `{contentType, sha256}` (sha256 only when the
 * file exists and its type is one the server indexes). Null for what the server does not keep
 * (annotations, malformed keys).
 */
export function syncedItem(json, file = {}) {
  if (!json || !ITEM_KEY.test(json.key || "") || !ITEM_TYPE.test(json.itemType || "")) return null;
  const type = json.itemType;
  if (type === "annotation") return null;
  const item = { key: json.key, item_type: type, title: clip(json.title, MAX.title) };
  if (type === "attachment" || type === "note") {
    if (json.parentItem && ITEM_KEY.test(json.parentItem) && json.parentItem !== json.key) item.parent_key = json.parentItem;
  } else {
    item.creators = (json.creators || []).slice(0, MAX.creators).map(creatorOf);
    item.date = orNull(json.date, MAX.date);
    item.year = yearOf(json.date);
    item.publication = orNull(PUBLICATION_FIELDS.map((f) => json[f]).find(Boolean), MAX.publication);
    item.doi = orNull(doiOf(json), MAX.doi);
    const abstract = clip(json.abstractNote, MAX.abstract);
    if (abstract) item.abstract = abstract; // left out when empty: such an item's fingerprint is as before
  }
  const url = clip(json.url, MAX.url);
  if (url) item.url = url;
  const extra = clip(json.extra, MAX.extra);
  if (extra) item.extra = extra;
  if (type === "attachment") {
    const contentType = String(file.contentType || json.contentType || "").toLowerCase();
    if (CONTENT_TYPE.test(contentType) && contentType.length <= MAX.content_type) item.content_type = contentType;
    if (json.filename) item.filename = clip(json.filename, MAX.filename);
    if (file.sha256 && SHA256_PATTERN.test(file.sha256)) item.sha256 = file.sha256;
  }
  if (type === "note") item.note = clip(json.note, MAX.note);
  // Where the item sits (a question's scope): its collections (top-level items only, as in
  // Zotero's JSON) and its tags; left out when empty, so such an item's fingerprint is as before.
  const collections = [...new Set((json.collections || []).filter((key) => ITEM_KEY.test(key)))].slice(0, MAX.collections);
  if (collections.length && !item.parent_key) item.collections = collections;
  const tags = [...new Set((json.tags || []).map((t) => String(t?.tag ?? "").trim()).filter((t) => t && t.length <= MAX.tag))];
  if (tags.length) item.tags = tags.slice(0, MAX.tags);
  return item;
}

/**
 * A library's collection tree as the sync sends it (`LibrarySyncRequested.collections`):
 * `{key, name, parent_key?}` in key order, the trash left out (with what is under it), at most
 * MAX_SYNC_COLLECTIONS. `collections` are Zotero.Collection objects of one library.
 */
export function collectionTree(collections) {
  const live = collections.filter((c) => !c.deleted && ITEM_KEY.test(c.key || ""));
  const byID = new Map(live.map((c) => [c.id, c]));
  const inTrash = (c) => {
    for (let p = c, seen = 0; p && seen < 1000; p = p.parentID ? byID.get(p.parentID) : null, seen++) {
      if (p.parentID && !byID.has(p.parentID)) return true; // under a trashed (or unknown) parent
    }
    return false;
  };
  return live.filter((c) => !inTrash(c)).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).slice(0, MAX_SYNC_COLLECTIONS)
    .map((c) => {
      const node = { key: c.key, name: clip(c.name, MAX.title) };
      if (c.parentID) node.parent_key = byID.get(c.parentID).key;
      return node;
    });
}

/** Whether the server can index an attachment of this content type. */
export function isUploadable(contentType) {
  return UPLOAD_TYPES.has(String(contentType || "").toLowerCase());
}

/**
 * A short fingerprint of a SyncedItem (FNV-1a over its JSON): what the plugin remembers per
 * key to send only what changed since the last sync.
 */
export function fingerprint(item) {
  return fnv(JSON.stringify(item, Object.keys(item).sort()));
}

/** The fingerprint of a collection tree (`collectionTree`), to send it again only when it changed. */
export function treeFingerprint(tree) {
  return fnv(JSON.stringify(tree));
}

function fnv(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return `${hash.toString(36)}.${text.length.toString(36)}`;
}

/**
 * What to send: everything (a full sync) when nothing is remembered, else the items whose
 * fingerprint changed and the keys that are gone. `remembered` is `{key: fingerprint}` or null.
 */
export function planSync(remembered, current) {
  if (!remembered) return { full: true, items: [...current], deleted: [] };
  const seen = new Set();
  const items = [];
  for (const item of current) {
    seen.add(item.key);
    if (remembered[item.key] !== fingerprint(item)) items.push(item);
  }
  const deleted = Object.keys(remembered).filter((key) => !seen.has(key)).sort();
  return { full: false, items, deleted };
}

/**
 * The pages of one sync: at most MAX_PAGE_ITEMS items, MAX_PAGE_DELETED deleted keys and
 * MAX_PAGE_BYTES of JSON each, numbered from 0, the last one `final`. Parents go before
 * their attachments and notes, so a page never names a parent a later page brings.
 * An empty change is one empty page (the server answers with nothing to do).
 */
export function syncPages({ syncId, libraryId = "user", full = false, items = [], deleted = [], collections = null }) {
  const encoder = new TextEncoder();
  const size = (value) => encoder.encode(JSON.stringify(value)).length;
  const ordered = [...items].sort((a, b) => Number(Boolean(a.parent_key)) - Number(Boolean(b.parent_key)));
  const pages = [];
  let page = { items: [], deleted: [] };
  let bytes = collections ? size(collections) : 0; // the tree goes on the first page
  const flush = () => {
    pages.push(page);
    page = { items: [], deleted: [] };
    bytes = 0;
  };
  for (const item of ordered) {
    const itemBytes = size(item) + 1;
    if (page.items.length >= MAX_PAGE_ITEMS || (page.items.length && bytes + itemBytes > MAX_PAGE_BYTES)) flush();
    page.items.push(item);
    bytes += itemBytes;
  }
  for (const key of deleted) {
    if (page.deleted.length >= MAX_PAGE_DELETED || bytes + 11 > MAX_PAGE_BYTES) flush();
    page.deleted.push(key);
    bytes += 11;
  }
  if (page.items.length || page.deleted.length || !pages.length) flush();
  return pages.map((p, i) => ({ sync_id: syncId, library_id: libraryId, page: i, final: i === pages.length - 1, full,
    items: p.items, deleted: p.deleted, ...(collections && i === 0 ? { collections } : {}) }));
}

/** A sync id the gateway accepts (ID_PATTERN in limits.js), readable in logs. */
export function newSyncId(now = new Date(), random = Math.random) {
  const stamp = now.toISOString().replace(/[:.]/g, "-").replace(/Z$/, "");
  return `${stamp}-${Math.floor(random() * 36 ** 6).toString(36).padStart(6, "0")}`;
}

/**
 * How the server holds this account's library: `local` when it reads a zotero.sqlite itself
 * (`/library/status` says `source: "zotero_dir"`, or `"demo"`: the bundled demo library, read
 * when the server's machine has no Zotero library), else `hosted`: the plugin sends it.
 */
export function libraryMode(status) {
  return status?.source === "zotero_dir" || status?.source === "demo" ? "local" : "hosted";
}

/**
 * Whether the server still holds what the plugin remembers sending: the counts in
 * `/library/status` must match, or the next sync is a full one (a new server, a wiped one,
 * another account behind the same URL).
 */
export function serverMatches(status, remembered) {
  if (!remembered || status?.source !== "hosted") return false;
  return status.items === remembered.regular && status.attachments === remembered.attachments;
}

/**
 * Milliseconds to wait before trying a request again, or null to give up: a server that is
 * down, busy or slow is retried with exponential backoff (1, 2, 4, 8 s...); a request it
 * refused (4xx) would be refused again.
 */
export function retryDelay(error, attempt, { maxAttempts = 5, baseMs = 1000, capMs = 30000 } = {}) {
  if (attempt >= maxAttempts) return null;
  const status = error?.status || 0;
  const transient = error?.code === "server_unreachable" || status === 429 || status === 502 || status === 504 ||
    (status === 503 && error?.code !== "library_not_available");
  if (!transient) return null;
  return Math.min(capMs, baseMs * 2 ** (attempt - 1));
}

/** Run `attempt()` until it succeeds or retryDelay says to give up (then its last error). */
export async function withRetry(attempt, { sleep, ...options } = {}) {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (exc) {
      const delay = retryDelay(exc, n, options);
      if (delay === null) throw exc;
      await sleep(delay);
    }
  }
}

/** Zotero's notifier types the library watch listens to (xpcom/notifier.js). */
export const WATCHED_TYPES = ["item", "collection", "collection-item", "item-tag"];

/**
 * Zotero notifier events collected between syncs: ids to send again and items deleted for
 * good, as `{libraryID, key}` (keys are unique only within a library, and the item is gone,
 * so its library comes from the event), and whether a collection changed (`trees`: the
 * collection trees are compared again). An item joining or leaving a collection
 * ("collection-item", ids "<collectionID>-<itemID>") or gaining, losing or renaming a tag
 * ("item-tag", ids "<itemID>-<tagID>") is sent again, as Zotero may not report it as an item
 * change. Ids the plugin registered as suppressed (its own import) are ignored; a trashed item
 * is read back at flush time and sent as deleted.
 */
export class ChangeSet {
  constructor() {
    this.ids = new Set();
    this.deleted = new Map(); // "libraryID/key" -> {libraryID, key}
    this.suppressed = new Set();
    this.trees = false;
  }

  /** Record one `notify(event, type, ids, extraData)` call; true when it changed anything. */
  note(event, type, ids, extraData = {}) {
    if (type === "collection") {
      this.trees = true;
      return true;
    }
    if (type === "collection-item" || type === "item-tag") {
      const itemIDs = [].concat(ids).map((pair) => Number(String(pair).split("-")[type === "item-tag" ? 0 : 1]));
      return this.note("modify", "item", itemIDs.filter((id) => Number.isInteger(id) && id > 0));
    }
    if (type !== "item") return false;
    let changed = false;
    for (const id of [].concat(ids)) {
      if (this.suppressed.has(id)) continue;
      if (event === "add" || event === "modify" || event === "trash") {
        this.ids.add(id);
        changed = true;
      } else if (event === "delete") {
        const { libraryID, key } = extraData?.[id] || {};
        this.ids.delete(id);
        if (key && libraryID) this.deleted.set(`${libraryID}/${key}`, { libraryID, key });
        changed = true;
      }
    }
    return changed;
  }

  get empty() {
    return !this.ids.size && !this.deleted.size && !this.trees;
  }

  /** Hand over what was collected and start afresh (the suppression set stays). */
  take() {
    const taken = { ids: [...this.ids], deleted: [...this.deleted.values()], trees: this.trees };
    this.ids.clear();
    this.deleted.clear();
    this.trees = false;
    return taken;
  }
}

/**
 * Call `flush` once activity settles: `delayMs` after the last `poke()`, but no later than
 * `maxWaitMs` after the first (a long burst still syncs). Timers are injected for the tests.
 */
export class Debouncer {
  constructor(flush, { delayMs = 2000, maxWaitMs = 15000, setTimeout = globalThis.setTimeout, clearTimeout = globalThis.clearTimeout, now = Date.now } = {}) {
    Object.assign(this, { flush, delayMs, maxWaitMs, setTimeout, clearTimeout, now });
    this.timer = null;
    this.firstAt = null;
  }

  poke() {
    const now = this.now();
    if (this.firstAt === null) this.firstAt = now;
    if (this.timer !== null) this.clearTimeout(this.timer);
    const wait = Math.max(0, Math.min(this.delayMs, this.firstAt + this.maxWaitMs - now));
    this.timer = this.setTimeout(() => this.fire(), wait);
  }

  fire() {
    if (this.timer !== null) this.clearTimeout(this.timer);
    this.timer = null;
    this.firstAt = null;
    return this.flush();
  }

  cancel() {
    if (this.timer !== null) this.clearTimeout(this.timer);
    this.timer = null;
    this.firstAt = null;
  }
}

/** The sidebar's one line for `/library/status`. */
export function libraryStatusLine(status) {
  if (!status) return "";
  const indexing = status.state === "running" ? indexingProgress(status) : "";
  if (status.source === "demo") {
    const notes = [status.items ? `${status.items} open-access papers` : "", indexing].filter(Boolean);
    return `Demo library${notes.length ? ` (${notes.join("; ")})` : ""} — set ZOCRATES_ZOTERO_DIR for your own.`;
  }
  if (status.source === "zotero_dir") {
    const abstracts = status.abstracts ? `; ${status.abstracts} abstracts searchable` : "";
    const failed = unreadable(status);
    return `Library read from Zotero on the server: ${status.indexed} sources indexed${abstracts}${failed ? `; ${failed}` : ""}` +
      `${indexing ? ` (${indexing})` : ""}.`;
  }
  if (status.source === "none") return "Your library is not on the server yet.";
  const parts = [`${status.items} items, ${status.attachments} attachments on the server`];
  if (status.awaiting_upload) parts.push(`${status.awaiting_upload} files to upload`);
  if (status.abstracts) parts.push(`${status.abstracts} abstracts searchable`);
  if (status.state === "running") parts.push(indexing);
  else parts.push(`${status.indexed} indexed`);
  const failed = unreadable(status);
  if (failed) parts.push(failed);
  return `${parts.join("; ")}.`;
}

/** "3 not readable (2 scanned, 1 encrypted)", or "" when every file was read. */
function unreadable(status) {
  const failed = Object.entries(status.failures_by_reason || {});
  if (!failed.length) return "";
  const total = failed.reduce((n, [, count]) => n + count, 0);
  return `${total} not readable (${failed.map(([reason, count]) => `${count} ${reason}`).join(", ")})`;
}

/**
 * "indexing 120 of 5000 (6.9 pages/s, about 12 min left)": the pace and time left once known;
 * while files are read ahead of their embedding, how many are searchable by their words.
 */
export function indexingProgress(status) {
  const pace = [];
  if (status.pages_per_s) pace.push(`${status.pages_per_s.toFixed(1)} pages/s`);
  if (status.eta_s != null) pace.push(`about ${duration(status.eta_s)} left`);
  const read = status.files_searchable ? `; full text of ${status.files_searchable} files searchable by its words` : "";
  return `indexing ${status.sources_done} of ${status.sources_total}${pace.length ? ` (${pace.join(", ")})` : ""}${read}`;
}

function duration(seconds) {
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

/** The sidebar's line while a sync runs. */
export function syncProgressLine(progress) {
  if (!progress) return "";
  const { phase, done = 0, total = 0, message = "", library = "" } = progress;
  if (phase === "reading") return "Reading your Zotero library…";
  if (phase === "syncing") return `Sending ${library ? `“${library}”` : "library metadata"}: page ${done + 1} of ${total}…`;
  if (phase === "uploading") return `Uploading files${library ? ` of “${library}”` : ""}: ${done} of ${total}…`;
  if (phase === "error") return `Library sync stopped: ${message}`;
  return message;
}
