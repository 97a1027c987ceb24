// A fake of the subset of Zotero's API the plugin calls, for the Node tests. It keeps the real
// signatures and the behaviours the plugin depends on, read from Zotero's source
// (github.com/zotero/zotero, chrome/content/zotero/xpcom/...); each part names its file. What
// differs between Zotero 7 and 10 follows createFakeZotero({version}).
// Files live on the real disk (a temp data directory) through IOUtils/PathUtils fakes, so
// hashing and uploads read real bytes. Libraries: My Library, group libraries and feeds as
// library records (Zotero.Libraries, Zotero.Groups); feed items are not modelled. Not
// modelled either: sync, relations, the item tree, full-text; what is not here throws rather
// than pretending.

import { mkdirSync, readFileSync, writeFileSync, copyFileSync, rmSync, statSync, existsSync, renameSync } from "node:fs";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { webcrypto } from "node:crypto";

// chrome/content/zotero/xpcom/attachments.js: LINK_MODE_* constants and linkModeToName().
const LINK_MODES = ["imported_file", "imported_url", "linked_file", "linked_url", "embedded_image"];

// A small schema (resource/schema/global/schema.json): the fields and creator types of the
// item types the tests and the import use. isValidForType() answers from it.
const SCHEMA = {
  journalArticle: ["title", "abstractNote", "publicationTitle", "volume", "issue", "pages", "date", "DOI", "ISSN", "url", "accessDate", "extra", "rights", "language"],
  preprint: ["title", "abstractNote", "repository", "archiveID", "date", "DOI", "url", "accessDate", "extra", "rights"],
  conferencePaper: ["title", "abstractNote", "date", "proceedingsTitle", "conferenceName", "publisher", "pages", "DOI", "url", "accessDate", "extra", "rights"],
  book: ["title", "abstractNote", "date", "publisher", "place", "ISBN", "url", "accessDate", "extra", "rights"],
  bookSection: ["title", "abstractNote", "bookTitle", "date", "publisher", "pages", "ISBN", "url", "extra", "rights"],
  report: ["title", "abstractNote", "institution", "date", "url", "accessDate", "extra", "rights"],
  thesis: ["title", "abstractNote", "university", "date", "url", "accessDate", "extra", "rights"],
  webpage: ["title", "abstractNote", "websiteTitle", "date", "url", "accessDate", "extra", "rights"],
  attachment: ["title", "accessDate", "url"],
  note: [],
  annotation: [],
};
const CREATOR_TYPES = new Set(["author", "editor", "contributor", "seriesEditor", "translator", "reviewedAuthor"]);
const TYPE_NAMES = Object.keys(SCHEMA);
const FIELD_NAMES = [...new Set(Object.values(SCHEMA).flat())];

class ZoteroMissingObjectError extends Error {
  constructor(message) {
    super(message);
    this.name = "ZoteroMissingObjectError";
  }
}

/** IOUtils (Firefox's chrome-only file API) over node:fs, with its promise signatures. */
export function fakeIOUtils() {
  const missing = (path) => Object.assign(new Error(`Could not open the file at ${path}`), { name: "NotFoundError" });
  return {
    async read(path) {
      if (!existsSync(path)) throw missing(path);
      return new Uint8Array(readFileSync(path));
    },
    async write(path, data) {
      writeFileSync(path, data);
      return data.byteLength;
    },
    async readUTF8(path) {
      if (!existsSync(path)) throw missing(path);
      return readFileSync(path, "utf8");
    },
    async writeJSON(path, value, { tmpPath } = {}) {
      const text = JSON.stringify(value);
      if (tmpPath) {
        writeFileSync(tmpPath, text);
        renameSync(tmpPath, path);
      } else writeFileSync(path, text);
      return text.length;
    },
    async copy(source, dest) {
      if (!existsSync(source)) throw missing(source);
      copyFileSync(source, dest);
    },
    async remove(path, { ignoreAbsent = true, recursive = false } = {}) {
      if (!existsSync(path)) {
        if (!ignoreAbsent) throw missing(path);
        return;
      }
      rmSync(path, { recursive });
    },
    async exists(path) {
      return existsSync(path);
    },
    async stat(path) {
      if (!existsSync(path)) throw missing(path);
      const s = statSync(path);
      return { path, size: s.size, lastModified: Math.floor(s.mtimeMs), type: s.isDirectory() ? "directory" : "regular" };
    },
    async makeDirectory(path, { createAncestors = true, ignoreExisting = true } = {}) {
      if (existsSync(path) && !ignoreExisting) throw new Error(`${path} exists`);
      mkdirSync(path, { recursive: createAncestors });
    },
  };
}

export function fakePathUtils(tempDir) {
  return { join: (...parts) => join(...parts), parent: (p) => dirname(p), tempDir };
}

/**
 * The Zotero releases the plugin was checked against (docs/plugin.md, "Zotero versions"); the
 * manifest's range must cover them all. The tests of version-dependent code run on each.
 */
export const ZOTERO_VERSIONS = ["7.0.32", "8.0.5", "9.0.6", "10.0.0"];

/**
 * A fresh Zotero with an empty user library in a temp data directory. `version` (default
 * "7.0.32", Zotero 7's behaviour) picks what differs between releases: Zotero.version and the
 * pane of fakeZoteroPane().
 * `fake.errors` collects Zotero.logError() calls (misuse the real Zotero only logs), and
 * `fake.warnings` Zotero.warn() calls (what Zotero warns about still works, but is misuse too).
 */
export function createFakeZotero({ dataDir = mkdtempSync(join(tmpdir(), "fake-zotero-")), version = "7.0.32" } = {}) {
  const Zotero = { errors: [], warnings: [], debugLog: [], dataDir, version };
  const store = new Map(); // id -> Item
  let nextID = 1;
  Zotero.debug = (msg) => Zotero.debugLog.push(String(msg));
  Zotero.logError = (err) => Zotero.errors.push(err instanceof Error ? err : new Error(String(err)));
  Zotero.warn = (err) => Zotero.warnings.push(err instanceof Error ? err : new Error(String(err)));
  Zotero.Libraries = createLibraries(Zotero);
  Zotero.Groups = createGroups(Zotero);
  Zotero.DataDirectory = { dir: dataDir };
  mkdirSync(join(dataDir, "storage"), { recursive: true });
  Zotero.getStorageDirectory = () => ({ path: join(dataDir, "storage") });
  // xpcom/zotero.js getTempDirectory(): an nsIFile of <system temp>/Zotero, created on demand.
  Zotero.getTempDirectory = () => {
    const path = join(dataDir, "tmp");
    mkdirSync(path, { recursive: true });
    return { path };
  };

  // chrome/content/zotero/xpcom/utilities (Zotero.Utilities.generateObjectKey): 8 characters
  // from an alphabet without 0, 1 and O.
  const KEY_CHARS = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ";
  const generateKey = () => Array.from({ length: 8 }, () => KEY_CHARS[Math.floor(Math.random() * KEY_CHARS.length)]).join("");

  // ---- Zotero.Prefs (chrome/content/zotero/xpcom/prefs.js): get/set/clear(pref, global),
  // registerObserver(name, handler, global) -> Symbol, unregisterObserver(symbol).
  const prefValues = new Map();
  const prefObservers = new Map();
  const prefName = (pref, global) => (global ? pref : `extensions.zotero.${pref}`);
  Zotero.Prefs = {
    get: (pref, global) => prefValues.get(prefName(pref, global)),
    set(pref, value, global) {
      const name = prefName(pref, global);
      prefValues.set(name, value);
      for (const { name: watched, handler } of prefObservers.values()) if (watched === name) handler(value);
      return true;
    },
    clear(pref, global) {
      prefValues.delete(prefName(pref, global));
    },
    registerObserver(name, handler, global) {
      const symbol = Symbol(name);
      prefObservers.set(symbol, { name: prefName(name, global), handler });
      return symbol;
    },
    unregisterObserver(symbol) {
      prefObservers.delete(symbol);
    },
  };

  // ---- Zotero.ItemTypes / Zotero.ItemFields (xpcom/data/cachedTypes.js, itemFields.js)
  Zotero.ItemTypes = {
    getID: (name) => (TYPE_NAMES.includes(name) ? TYPE_NAMES.indexOf(name) + 1 : false),
    getName: (id) => TYPE_NAMES[id - 1] || "",
  };
  Zotero.ItemFields = {
    getID: (name) => (FIELD_NAMES.includes(name) ? FIELD_NAMES.indexOf(name) + 1 : false),
    getName: (id) => FIELD_NAMES[id - 1] || false,
    isValidForType: (fieldID, itemTypeID) => Boolean(SCHEMA[Zotero.ItemTypes.getName(itemTypeID)]?.includes(FIELD_NAMES[fieldID - 1])),
  };

  // ---- Zotero.Notifier (xpcom/notifier.js): observers by hash, events queued while a DB
  // transaction is open and delivered, merged per type and event, when it commits; 'modify'
  // of an item that no longer exists is dropped; a rollback discards the queue.
  const observers = new Map();
  let queue = null;
  const EVENT_ORDER = ["add", "modify", "remove", "move", "delete", "trash"];
  Zotero.Notifier = {
    delivered: [],
    registerObserver(ref, types, id) {
      for (const type of types || []) {
        if (!["item", "collection", "collection-item", "item-tag", "tag", "file", "trash", "setting"].includes(type)) throw new Error(`Invalid type '${type}'`);
      }
      const hash = `${id ? `${id}_` : ""}${Math.random().toString(36).slice(2, 6)}`;
      observers.set(hash, { ref, types: types || null });
      return hash;
    },
    unregisterObserver(hash) {
      observers.delete(hash);
    },
    observerCount: () => observers.size,
    async trigger(event, type, ids, extraData, force) {
      if (queue && !force) return this.queue(event, type, ids, extraData);
      ids = [].concat(ids);
      this.delivered.push({ event, type, ids, extraData });
      for (const { ref, types } of [...observers.values()]) {
        if (types && !types.includes(type)) continue;
        try {
          await ref.notify(event, type, ids, extraData || {});
        } catch (exc) {
          Zotero.logError(exc);
        }
      }
      return true;
    },
    queue(event, type, ids, extraData) {
      if (!queue) throw new Error("Can't queue event outside of a transaction");
      ids = [].concat(ids);
      const slot = ((queue[type] ||= {})[event] ||= { ids: [], data: {} });
      slot.ids.push(...ids);
      if (extraData) {
        if (ids.length === 1) slot.data[ids[0]] = extraData[ids[0]] !== undefined ? extraData[ids[0]] : extraData;
        else for (const id of ids) if (extraData[id] !== undefined) slot.data[id] = extraData[id];
      }
    },
    async _commit() {
      const pending = queue;
      queue = null;
      for (const type of Object.keys(pending)) {
        const events = Object.keys(pending[type]).sort((a, b) => EVENT_ORDER.indexOf(a) - EVENT_ORDER.indexOf(b));
        for (const event of events) {
          const slot = pending[type][event];
          const ids = [...new Set(slot.ids)].filter((id) => !(event === "modify" && type === "item" && !store.has(id)));
          if (ids.length) await this.trigger(event, type, ids, slot.data, true);
        }
      }
    },
  };

  // ---- Zotero.DB.executeTransaction (xpcom/db.js): one transaction at a time; the notifier
  // queues from begin and delivers after the commit (zotero.js registers Notifier.begin /
  // commit / reset as DB callbacks), awaited before executeTransaction resolves; a throw
  // rolls the writes back and rethrows. A transaction opened inside another waits for it in
  // Zotero (and times out after 30 s): the fake throws at once instead.
  let journal = null;
  Zotero.DB = {
    transactions: 0,
    inTransaction: () => journal !== null,
    requireTransaction() {
      if (!journal) throw new Error("Not in transaction");
    },
    async executeTransaction(func) {
      if (journal) throw new Error("Zotero.DB.executeTransaction() inside a transaction: Zotero would wait for itself and time out after 30 s");
      journal = [];
      queue = {};
      this.transactions += 1;
      let result;
      try {
        result = await func();
      } catch (exc) {
        for (const undo of journal.reverse()) undo();
        journal = null;
        queue = null;
        throw exc;
      }
      journal = null;
      await Zotero.Notifier._commit();
      return result;
    },
  };

  // ---- Zotero.Tags (xpcom/data/tags.js): a tag's id by name, assigned on first use.
  const tagIDs = new Map();
  const tagID = (name) => {
    if (!tagIDs.has(name)) tagIDs.set(name, tagIDs.size + 1);
    return tagIDs.get(name);
  };

  // ---- Zotero.Collections (xpcom/data/collections.js)
  const collections = new Map();
  Zotero.Collections = {
    get: (id) => collections.get(id) || false,
    getByLibrary: (libraryID, recursive) => [...collections.values()].filter((c) => c.libraryID === libraryID && (recursive || !c.parentID)),
    getIDFromLibraryAndKey: (libraryID, key) => [...collections.values()].find((c) => c.libraryID === libraryID && c.key === key)?.id || false,
  };
  // Test helpers: createCollection saves a new collection, updateCollection(id, {name,
  // parentID, deleted}) changes one (a rename, a move, the trash); each sends its "collection"
  // event ("add" or "modify"; collection.js _saveData), awaited as saveTx() would be.
  Zotero.createCollection = (name, parentID = null, libraryID = Zotero.Libraries.userLibraryID) => {
    const c = { id: nextID++, key: generateKey(), name, parentID, libraryID, deleted: false };
    collections.set(c.id, c);
    void Zotero.Notifier.trigger("add", "collection", c.id, {});
    return c;
  };
  Zotero.updateCollection = (id, changes) => {
    Object.assign(collections.get(id), changes);
    return Zotero.Notifier.trigger("modify", "collection", id, {});
  };

  // ---- Zotero.Attachments (xpcom/attachments.js): storage directory per key;
  // createDirectoryForItem() deletes and recreates it.
  Zotero.Attachments = {
    LINK_MODE_IMPORTED_FILE: 0,
    LINK_MODE_IMPORTED_URL: 1,
    LINK_MODE_LINKED_FILE: 2,
    LINK_MODE_LINKED_URL: 3,
    LINK_MODE_EMBEDDED_IMAGE: 4,
    linkModeToName: (mode) => LINK_MODES[mode],
    getStorageDirectory(item) {
      if (!(item instanceof Item)) throw new Error("'item' must be a Zotero.Item");
      if (!item.key) throw new Error("Item key must be set");
      return { path: join(dataDir, "storage", item.key) };
    },
    async createDirectoryForItem(item) {
      if (!(item instanceof Item)) throw new Error("'item' must be a Zotero.Item");
      const dir = this.getStorageDirectory(item).path;
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      return dir;
    },
  };

  // ---- Zotero.Item (xpcom/data/item.js, dataObject.js)
  class Item {
    constructor(itemTypeOrID) {
      if (arguments.length > 1) throw new Error("Zotero.Item constructor only takes one parameter");
      this._id = null;
      this._key = null;
      this._libraryID = null;
      this._fields = new Map();
      this._creators = [];
      this._tags = [];
      this._collections = [];
      this._parentID = null;
      this._deleted = false;
      this._note = "";
      this._changed = true;
      this.attachmentLinkMode = null;
      this.attachmentContentType = "";
      this.attachmentCharset = null;
      this.attachmentPath = null;
      this.version = 0;
      this.dateAdded = null;
      this.dateModified = null;
      if (itemTypeOrID !== undefined) {
        const id = typeof itemTypeOrID === "number" ? itemTypeOrID : Zotero.ItemTypes.getID(itemTypeOrID);
        if (!id) throw new Error(`Invalid item type '${itemTypeOrID}'`);
        this.itemTypeID = id;
      }
    }

    get id() { return this._id; }
    get key() { return this._key; }
    get libraryID() { return this._libraryID; }
    set libraryID(value) { this._libraryID = value; }
    get itemType() { return Zotero.ItemTypes.getName(this.itemTypeID); }
    get parentID() { return this._parentID || false; }
    set parentID(id) { this._parentID = id || null; this._changed = true; }
    get parentItemID() { return this.parentID; }
    set parentItemID(id) { this.parentID = id; }
    get parentKey() { return this._parentID ? store.get(this._parentID)?.key || false : false; }
    get parentItem() { return this._parentID ? store.get(this._parentID) : undefined; }
    get deleted() { return this._deleted; }
    set deleted(value) { this._deleted = Boolean(value); this._changed = true; this._trashChanged = true; }
    // Zotero derives the file name from the path (`storage:<name>`).
    get attachmentFilename() {
      const path = this.attachmentPath || "";
      return path.startsWith("storage:") ? path.slice(8) : path.split("/").pop();
    }

    isRegularItem() { return !["note", "attachment", "annotation"].includes(this.itemType); }
    isAttachment() { return this.itemType === "attachment"; }
    isNote() { return this.itemType === "note"; }
    isAnnotation() { return this.itemType === "annotation"; }
    isTopLevelItem() { return this.isRegularItem() || !this.parentKey; }
    isFileAttachment() { return this.isAttachment() && this.attachmentLinkMode !== Zotero.Attachments.LINK_MODE_LINKED_URL; }
    isStoredFileAttachment() { return this.isAttachment() && [0, 1, 4].includes(this.attachmentLinkMode); }

    // dataObject.js isEditable(): the library's `editable` (feeds: true); item.js adds that a
    // stored file (imported file or URL) needs the library's `filesEditable` too. A library
    // Zotero no longer has is `false` in Zotero.Libraries.get(), so nothing is editable there.
    isEditable() {
      const library = Zotero.Libraries.get(this._libraryID);
      if (library.libraryType === "feed") return true;
      if (!library.editable) return false;
      const storedFile = this.isAttachment() && [Zotero.Attachments.LINK_MODE_IMPORTED_FILE, Zotero.Attachments.LINK_MODE_IMPORTED_URL].includes(this.attachmentLinkMode);
      return !(storedFile && !library.filesEditable);
    }

    setField(field, value) {
      if (value === undefined) throw new Error(`'${field}' value cannot be undefined`);
      if (!field) throw new Error("Field not specified");
      if (!this.itemTypeID) throw new Error("Item type must be set before setting field data");
      const fieldID = Zotero.ItemFields.getID(field);
      if (!fieldID) throw new Error(`"${field}" is not a valid itemData field`);
      if (typeof value === "number") value = String(value);
      else if (typeof value === "string") value = value.trim().normalize();
      if (value !== "" && value !== null && value !== false && !Zotero.ItemFields.isValidForType(fieldID, this.itemTypeID)) {
        throw new Error(`'${field}' is not a valid field for type '${this.itemType}'`);
      }
      if (value === "" || value === null || value === false) this._fields.delete(field);
      else this._fields.set(field, value);
      this._changed = true;
      return true;
    }

    getField(field) { return this._fields.get(field) || ""; }

    // Zotero.Creators.cleanData: {firstName, lastName} or {name}, and a creator type of the item type.
    setCreators(data) {
      this._creators = data.map((c, i) => {
        const creatorType = c.creatorType || "author";
        if (!CREATOR_TYPES.has(creatorType)) throw new Error(`Invalid creator type '${creatorType}' for creator ${i}`);
        if (c.name !== undefined) return { creatorType, name: String(c.name).trim() };
        if (c.firstName === undefined && c.lastName === undefined) throw new Error(`Creator ${i} has no name`);
        return { creatorType, firstName: String(c.firstName || "").trim(), lastName: String(c.lastName || "").trim() };
      });
      this._changed = true;
    }

    getCreators() { return this._creators.map((c) => ({ ...c })); }
    getCreatorsJSON() { return this.getCreators(); }

    addTag(name, type) {
      type = type ? parseInt(type, 10) : 0;
      const existing = this._tags.find((t) => t.tag === name);
      if (existing && existing.type === type) return false;
      if (existing) existing.type = type;
      else this._tags.push(type ? { tag: name, type } : { tag: name });
      this._changed = true;
      return true;
    }

    getTags() { return this._tags.map((t) => ({ ...t })); }

    removeTag(name) {
      const before = this._tags.length;
      this._tags = this._tags.filter((t) => t.tag !== name);
      this._changed ||= this._tags.length !== before;
      return this._tags.length !== before;
    }

    setCollections(idsOrKeys) {
      if (!this.libraryID) this.libraryID = Zotero.Libraries.userLibraryID;
      this._collections = [...new Set((idsOrKeys || []).map((v) => {
        if (typeof v === "number") return v;
        const id = Zotero.Collections.getIDFromLibraryAndKey(this.libraryID, v);
        if (!id) throw new ZoteroMissingObjectError(`Collection ${v} not found for item ${this.libraryID}/${this.key}`);
        return id;
      }))];
      this._changed = true;
    }

    getCollections() { return [...this._collections]; }

    // item.js setNote(): notes and attachments only, a string, control characters stripped and
    // trimmed; an unchanged note is no change. getNote() throws for other items too.
    setNote(text) {
      if (!this.isNote() && !this.isAttachment()) throw "updateNote() can only be called on notes and attachments";
      if (typeof text != "string") throw `text must be a string in Zotero.Item.setNote() (was ${typeof text})`;
      text = text.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g, "").trim();
      if (text === this._note) return false;
      this._note = text;
      this._changed = true;
      return true;
    }

    getNote() {
      if (!this.isNote() && !this.isAttachment()) throw new Error(`getNote() can only be called on notes and attachments (${this.libraryID}/${this.key} is a ${this.itemType})`);
      return this._note;
    }

    getAttachments(includeTrashed) {
      return [...store.values()].filter((i) => i._parentID === this.id && i.isAttachment() && (includeTrashed || !i.deleted)).map((i) => i.id);
    }

    getNotes(includeTrashed) {
      return [...store.values()].filter((i) => i._parentID === this.id && i.isNote() && (includeTrashed || !i.deleted)).map((i) => i.id);
    }

    // item.js getBestAttachments(): the item's attachments that are no links, not trashed, PDFs
    // first, then those whose URL is the parent's, then oldest first; getBestAttachment() the
    // first of them, or false.
    async getBestAttachment() {
      if (!this.isRegularItem()) throw new Error(`getBestAttachment() can only be called on regular items. Called on ${this.attachmentContentType}`);
      const url = this.getField("url");
      const rank = (a) => [a.attachmentContentType === "application/pdf" ? 0 : 1, url && a.getField("url") === url ? 0 : 1, a.id];
      const candidates = this.getAttachments(false).map((id) => store.get(id))
        .filter((a) => a.attachmentLinkMode !== Zotero.Attachments.LINK_MODE_LINKED_URL)
        .sort((a, b) => { const [x, y] = [rank(a), rank(b)]; return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; });
      return candidates[0] || false;
    }

    // item.js getFilePathAsync(): `storage:<name>` under the item's storage directory for
    // stored files, the path itself for linked files, false for links or missing files.
    async getFilePathAsync() {
      if (!this.isAttachment()) throw new Error("getFilePathAsync() can only be called on attachment items");
      if (this.attachmentLinkMode === Zotero.Attachments.LINK_MODE_LINKED_URL || !this.attachmentPath) return false;
      let path = this.attachmentPath;
      if (this.isStoredFileAttachment()) {
        if (!path.includes("storage:")) {
          Zotero.logError(`Invalid attachment path '${path}'`);
          return false;
        }
        path = join(Zotero.Attachments.getStorageDirectory(this).path, path.slice(8));
      }
      return existsSync(path) ? path : false;
    }

    /** dataObject.js save(): in the open transaction (or, logged as misuse, in its own). */
    async save(options = {}) {
      if (!options.tx && !Zotero.DB.inTransaction()) {
        Zotero.logError(new Error("save() called on Zotero.Item without a wrapping transaction -- use saveTx() instead"));
        options = { ...options, tx: true };
      }
      if (options.tx) return Zotero.DB.executeTransaction(() => this._save());
      return this._save();
    }

    saveTx(options = {}) { return this.save({ ...options, tx: true }); }

    async _save() {
      if (!this.itemTypeID) throw new Error("Item type must be set before saving");
      const isNew = this._id === null;
      if (!isNew && !this._changed) return false;
      if (this._libraryID === null) this._libraryID = Zotero.Libraries.userLibraryID;
      // dataObject.js _initSave()
      if (!this.isEditable()) throw new Error(`Cannot edit item in library ${Zotero.Libraries.get(this._libraryID).name}`);
      if (this._parentID && !store.has(this._parentID)) throw new ZoteroMissingObjectError(`Parent item ${this._libraryID}/${this._parentID} not found`);
      if (this._parentID && this.isRegularItem()) throw new Error("Only notes, attachments and annotations can have a parent");
      for (const id of this._collections) {
        if (!collections.has(id)) throw new Error(`FOREIGN KEY constraint failed (collection ${id})`); // SQLite refuses it
        // resource/schema/triggers.sql: an item only joins a collection of its own library.
        if (collections.get(id).libraryID !== this._libraryID) {
          throw new Error('insert on table "collectionItems" violates foreign key constraint "fki_collectionItems_libraryID"');
        }
      }
      const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      this.dateModified = now;
      if (isNew) {
        this._id = nextID++;
        if (!this._key) this._key = generateKey();
        this.dateAdded = now;
        store.set(this._id, this);
        const id = this._id;
        journal.push(() => {
          store.delete(id);
          this._id = null;
        });
        Zotero.Notifier.queue("add", "item", this._id, {});
        if (this._parentID) Zotero.Notifier.queue("modify", "item", this._parentID, {});
      } else {
        Zotero.Notifier.queue("modify", "item", this._id, {});
        if (this._trashChanged && this._deleted) Zotero.Notifier.queue("trash", "item", this._id, {});
      }
      // item.js _saveData: a collection joined or left is a "collection-item" event
      // ("<collectionID>-<itemID>"), a tag added or removed an "item-tag" one ("<itemID>-<tagID>").
      const before = this._saved || { collections: [], tags: [] };
      for (const id of this._collections.filter((c) => !before.collections.includes(c))) Zotero.Notifier.queue("add", "collection-item", `${id}-${this._id}`, {});
      for (const id of before.collections.filter((c) => !this._collections.includes(c))) Zotero.Notifier.queue("remove", "collection-item", `${id}-${this._id}`, {});
      const names = this._tags.map((t) => t.tag);
      for (const tag of names.filter((t) => !before.tags.includes(t))) Zotero.Notifier.queue("add", "item-tag", `${this._id}-${tagID(tag)}`, {});
      for (const tag of before.tags.filter((t) => !names.includes(t))) Zotero.Notifier.queue("remove", "item-tag", `${this._id}-${tagID(tag)}`, {});
      this._saved = { collections: [...this._collections], tags: names };
      this._changed = false;
      this._trashChanged = false;
      return isNew ? this._id : true;
    }

    /** dataObject.js erase(): the item and its child items; 'delete' carries {libraryID, key} per id. */
    async erase(options = {}) {
      if (!options.tx && !Zotero.DB.inTransaction()) {
        Zotero.logError(new Error("erase() called on Zotero.Item without a wrapping transaction -- use eraseTx() instead"));
        options = { ...options, tx: true };
      }
      const run = async () => {
        const victims = [this, ...(this.isRegularItem() ? [...this.getAttachments(true), ...this.getNotes(true)].map((id) => store.get(id)) : [])];
        const data = {};
        for (const victim of victims) {
          data[victim.id] = { libraryID: victim.libraryID, key: victim.key };
          store.delete(victim.id);
          journal.push(() => store.set(victim.id, victim));
        }
        Zotero.Notifier.queue("delete", "item", victims.map((v) => v.id), data);
      };
      if (options.tx) return Zotero.DB.executeTransaction(run);
      return run();
    }

    eraseTx(options = {}) { return this.erase({ ...options, tx: true }); }

    /** item.js toJSON(): the API's item JSON. */
    toJSON() {
      const obj = { key: this.key, version: this.version, itemType: this.itemType };
      for (const [field, value] of this._fields) obj[field] = value;
      if (this.isRegularItem()) obj.creators = this.getCreatorsJSON();
      else if (this.parentKey) obj.parentItem = this.parentKey;
      if (this.isAttachment()) {
        obj.linkMode = Zotero.Attachments.linkModeToName(this.attachmentLinkMode);
        obj.contentType = this.attachmentContentType;
        obj.charset = this.attachmentCharset || "";
        if (this.attachmentLinkMode === Zotero.Attachments.LINK_MODE_LINKED_FILE) obj.path = this.attachmentPath;
        else if (this.attachmentLinkMode !== Zotero.Attachments.LINK_MODE_LINKED_URL) obj.filename = this.attachmentFilename;
      }
      if ((this.isAttachment() || this.isNote()) && (this._note || this.isNote())) obj.note = this._note;
      obj.tags = this.getTags();
      // getCollections() leaves trashed collections out (item.js)
      if (this.isTopLevelItem()) obj.collections = this._collections.filter((id) => !collections.get(id).deleted).map((id) => collections.get(id).key);
      obj.relations = {};
      if (this.dateAdded) obj.dateAdded = this.dateAdded;
      if (this.dateModified) obj.dateModified = this.dateModified;
      if (this._deleted) obj.deleted = true;
      return obj;
    }
  }
  Zotero.Item = Item;

  // ---- Zotero.Items (xpcom/data/items.js, dataObjects.js)
  Zotero.Items = {
    get(ids) {
      if (Array.isArray(ids)) return ids.map((id) => store.get(id)).filter(Boolean);
      return store.get(ids) || false;
    },
    async getAsync(ids) {
      if (!ids) throw new Error("No arguments provided");
      return this.get(ids);
    },
    /** getAll(libraryID, onlyTopLevel, includeDeleted, asIDs): trashed items only with includeDeleted. */
    async getAll(libraryID, onlyTopLevel, includeDeleted, asIDs = false) {
      const items = [...store.values()].filter((i) => i.libraryID === libraryID && (!onlyTopLevel || !i._parentID) && (includeDeleted || !i.deleted));
      return asIDs ? items.map((i) => i.id) : items;
    },
    getByLibraryAndKey(libraryID, key) {
      return [...store.values()].find((i) => i.libraryID === libraryID && i.key === key) || false;
    },
    async getByLibraryAndKeyAsync(libraryID, key) {
      return this.getByLibraryAndKey(libraryID, key);
    },
    getIDFromLibraryAndKey(libraryID, key) {
      return this.getByLibraryAndKey(libraryID, key)?.id || false;
    },
  };

  /**
   * Test helper: a regular item with an optional stored PDF/HTML attachment (bytes copied into
   * storage/<key>/), saved with saveTx like Zotero's own UI does.
   */
  Zotero.addItem = async function ({ itemType = "journalArticle", fields = {}, creators = [], file = null, libraryID = null }) {
    const item = new Item(itemType);
    if (libraryID !== null) item.libraryID = libraryID;
    for (const [field, value] of Object.entries(fields)) item.setField(field, value);
    item.setCreators(creators);
    await item.saveTx();
    let attachment = null;
    if (file) {
      attachment = new Item("attachment");
      attachment.libraryID = item.libraryID;
      attachment.parentID = item.id;
      attachment.attachmentLinkMode = Zotero.Attachments.LINK_MODE_IMPORTED_FILE;
      attachment.attachmentContentType = file.contentType || "application/pdf";
      attachment.attachmentPath = `storage:${file.name || "paper.pdf"}`;
      attachment.setField("title", file.title || "Full Text PDF");
      await attachment.saveTx();
      const dir = await Zotero.Attachments.createDirectoryForItem(attachment);
      writeFileSync(join(dir, file.name || "paper.pdf"), file.bytes);
    }
    return { item, attachment };
  };

  /**
   * Test helper: leaving a group (or Zotero removing one the user lost access to) erases its
   * library: library.js _eraseData deletes the rows in SQL, so no item events are sent,
   * and _finalizeErase unregisters it (Zotero.Groups forgets it too).
   */
  Zotero.removeGroup = function (groupID) {
    const libraryID = Zotero.Groups.getLibraryIDFromGroupID(groupID);
    if (!libraryID) throw new Error(`Group ${groupID} does not exist`);
    for (const [id, item] of [...store]) if (item.libraryID === libraryID) store.delete(id);
    for (const [id, collection] of [...collections]) if (collection.libraryID === libraryID) collections.delete(id);
    Zotero.Libraries.unregister(libraryID);
  };

  return Zotero;
}

/**
 * Zotero.Libraries (xpcom/data/libraries.js, library.js, group.js, feed.js): library records
 * by libraryID; getAll() lists My Library first, then the others by name; get() answers
 * false for an unknown id. My Library is libraryID 1 (created by the schema's first row).
 * Test helpers addGroup({groupID, name, editable, filesEditable}) and addFeed({name}) register
 * new libraries; as in library.js, a group that is not editable has no editable files either.
 */
function createLibraries(Zotero) {
  const libraries = new Map();
  let nextLibraryID = 1;
  const register = (library) => {
    const record = { editable: true, filesEditable: true, archived: false, ...library, libraryID: nextLibraryID++ };
    // library.js: a library's id is its libraryID; group.js: a Group's id is its groupID.
    Object.defineProperty(record, "id", { get: () => (record.libraryType === "group" ? record.groupID : record.libraryID) });
    Object.defineProperty(record, "isGroup", { get: () => record.libraryType === "group" });
    Object.defineProperty(record, "isFeed", { get: () => record.libraryType === "feed" });
    libraries.set(record.libraryID, record);
    return record;
  };
  const user = register({ libraryType: "user", name: "My Library" });
  return {
    userLibraryID: user.libraryID,
    get: (libraryID) => libraries.get(Number(libraryID)) || false,
    exists: (libraryID) => libraries.has(Number(libraryID)),
    getAll() {
      return [...libraries.values()].sort((a, b) =>
        (a.libraryID === user.libraryID ? -1 : b.libraryID === user.libraryID ? 1 : a.name.localeCompare(b.name)));
    },
    unregister: (libraryID) => libraries.delete(libraryID),
    addGroup({ groupID, name = `Group ${groupID}`, editable = true, filesEditable = editable }) {
      if (Zotero.Groups.exists(groupID)) throw new Error(`Group ${groupID} already exists`);
      return register({ libraryType: "group", name, groupID, editable, filesEditable: editable && filesEditable });
    },
    addFeed({ name = "A feed", url = "https://example.org/feed.xml" } = {}) {
      return register({ libraryType: "feed", name, url, editable: false, filesEditable: false });
    },
  };
}

/**
 * Zotero.Groups (xpcom/data/groups.js): getLibraryIDFromGroupID() answers false for a group
 * this Zotero does not have; getGroupIDFromLibraryID() throws for a library that is no group.
 */
function createGroups(Zotero) {
  const groups = () => [...Zotero.Libraries.getAll()].filter((l) => l.libraryType === "group");
  // Zotero's cache is an object keyed by group id, so "123" finds group 123 too.
  const byGroupID = (groupID) => groups().find((g) => String(g.groupID) === String(groupID));
  return {
    get: (groupID) => Zotero.Libraries.get(Zotero.Groups.getLibraryIDFromGroupID(groupID)),
    getAll: () => groups(),
    exists: (groupID) => Boolean(byGroupID(groupID)),
    getByLibraryID: (libraryID) => Zotero.Libraries.get(libraryID),
    getLibraryIDFromGroupID: (groupID) => byGroupID(groupID)?.libraryID || false,
    getGroupIDFromLibraryID(libraryID) {
      const group = groups().find((g) => String(g.libraryID) === String(libraryID));
      if (!group) throw new Error(`Group with libraryID ${libraryID} does not exist`);
      return group.groupID;
    },
  };
}

/**
 * The Zotero pane's collection-tree selection and item selection, as the `Zotero.version` of
 * the fake Zotero has them (chrome/content/zotero/zoteroPane.js and collectionTree.jsx):
 *
 * - Zotero 7 to 9: one focused row. getSelectedLibraryID() is its library (a library row, or a
 *   collection's library); getSelectedCollection(asID) its Zotero.Collection, undefined on a
 *   library row.
 * - Zotero 10: several rows may be selected. getSelectedLibraryIDs() lists their libraries in
 *   tree order (My Library first, then the groups by name), getSelectedCollections(asID) their
 *   collections; the singular getters throw, word for word as Zotero 10's do.
 * - selectItem: Zotero 7 takes (itemID, inLibraryRoot); Zotero 8 and later (itemID, options)
 *   and warn when given a boolean (then read as {inLibraryRoot}). `pane.selectedItems` records
 *   `{itemID, inLibraryRoot}`.
 *
 * collectionsView.selectLibrary(libraryID) and selectCollection(id) select one row, as in
 * collectionTree.jsx; the test helper collectionsView.addToSelection(collectionID) stands for a
 * Ctrl-click on Zotero 10.
 *
 * The tag selector (containers/tagSelectorContainer.jsx, the same on 7.0.32 to 10.0.0):
 * `pane.tagSelector` while it is shown (the default), null once toggleTagSelector() hides it
 * (zoteroPane.js uninits it); getTagSelection() is its Set of selected tag names (the items view
 * shows the row's items that carry all of them), handleTagSelected(name) toggles one as a click
 * does, clearTagSelection() empties it, and selecting another row clears it (onCollectionSelected;
 * the same row again changes nothing).
 *
 * getSelectedItems(asIDs) follows the selected tab (zoteroPane.js, the same on 7.0.32 and
 * 10.0.0 for these cases; Zotero_Tabs is the main window's, fakeTabs): the items tree's
 * selection on the library tab (itemsView.selectItems(ids) selects, as itemTree.jsx), the
 * reader's attachment's parent item (or the attachment when it has none) on a reader tab, []
 * on any other.
 */
export function fakeZoteroPane(Zotero) {
  const major = Number(String(Zotero.version || "7").split(".")[0]);
  let rows = [{ libraryID: Zotero.Libraries.userLibraryID, collectionID: null }];
  const treeOrder = (libraryID) => Zotero.Libraries.getAll().findIndex((l) => l.libraryID === libraryID);
  const collectionOf = (row, asID) => (asID ? row.collectionID : Zotero.Collections.get(row.collectionID));
  let selectedIDs = [];
  const tagSelector = () => {
    const selector = {
      selectedTags: new Set(),
      getTagSelection() { return this.selectedTags; },
      clearTagSelection() { this.selectedTags = new Set(); },
      handleTagSelected: (name) => {
        if (selector.selectedTags.has(name)) selector.selectedTags.delete(name);
        else selector.selectedTags.add(name);
      },
    };
    return selector;
  };
  // Another row: the tag selection is cleared; the same row again changes nothing.
  const select = (next) => {
    if (JSON.stringify(next) !== JSON.stringify(rows)) pane.tagSelector?.clearTagSelection();
    rows = next;
  };
  const pane = {
    tagSelector: tagSelector(),
    toggleTagSelector() {
      this.tagSelector = this.tagSelector ? null : tagSelector();
    },
    selectedItems: [],
    itemsView: {
      getSelectedItems: (asIDs) => (asIDs ? [...selectedIDs] : Zotero.Items.get(selectedIDs)),
      async selectItems(ids) {
        selectedIDs = ids.filter((id) => Zotero.Items.get(id));
        return selectedIDs.length;
      },
    },
    getSelectedItems(asIDs) {
      const tabs = Zotero.getMainWindow().Zotero_Tabs;
      if (tabs.selectedType === "library") return this.itemsView.getSelectedItems(asIDs);
      if (tabs.selectedType === "reader") {
        const reader = Zotero.Reader.getByTabID(tabs.selectedID);
        if (!reader) return [];
        let item = Zotero.Items.get(reader.itemID);
        if (item.parentItem) item = item.parentItem;
        return asIDs ? [item.id] : [item];
      }
      return [];
    },
    collectionsView: {
      async selectLibrary(libraryID = 1) {
        if (!Zotero.Libraries.get(libraryID)) return false;
        select([{ libraryID, collectionID: null }]);
        return true;
      },
      async selectCollection(id) {
        const collection = Zotero.Collections.get(id);
        if (!collection) return false;
        select([{ libraryID: collection.libraryID, collectionID: id }]);
        return true;
      },
      addToSelection(id) {
        if (major < 10) throw new Error(`Zotero ${Zotero.version}'s collection tree selects one row`);
        const collection = Zotero.Collections.get(id);
        rows.push({ libraryID: collection.libraryID, collectionID: id });
      },
    },
  };
  if (major >= 10) {
    pane.getSelectedLibraryID = () => {
      throw new Error("ZoteroPane.getSelectedLibraryID() was removed "
        + "-- use ZoteroPane.getSelectedLibraryIDs()");
    };
    pane.getSelectedLibraryIDs = () => [...new Set(rows.map((r) => r.libraryID))].sort((a, b) => treeOrder(a) - treeOrder(b));
    pane.getSelectedCollection = () => {
      throw new Error("ZoteroPane.getSelectedCollection() was removed "
        + "-- use ZoteroPane.getSelectedCollections()");
    };
    pane.getSelectedCollections = (asID) => rows.filter((r) => r.collectionID).map((r) => collectionOf(r, asID));
  } else {
    pane.getSelectedLibraryID = () => rows[0].libraryID;
    pane.getSelectedCollection = (asID) => (rows[0].collectionID ? collectionOf(rows[0], asID) : undefined);
  }
  if (major >= 8) {
    pane.selectItem = async (itemID, options = {}) => {
      if (typeof options === "boolean") {
        Zotero.warn("ZoteroPane.selectItems() now takes an 'options' object -- update your code");
        options = { inLibraryRoot: options };
      }
      pane.selectedItems.push({ itemID, inLibraryRoot: Boolean(options.inLibraryRoot) });
      return true;
    };
  } else {
    pane.selectItem = async (itemID, inLibraryRoot) => {
      pane.selectedItems.push({ itemID, inLibraryRoot: Boolean(inLibraryRoot) });
    };
  }
  return pane;
}

/**
 * The main window's tabs (chrome/content/zotero/tabs.js) and the readers in them
 * (xpcom/reader.js): Zotero_Tabs.selectedID, and selectedType, the selected tab's type
 * ("library" for the library tab "zotero-pane", "reader" for a reader, "reader-unloaded" for
 * one not loaded yet); select(id). Zotero.Reader.getByTabID(tabID) is the reader of a tab
 * (undefined for any other tab), its itemID the attachment's id. Zotero.Reader.open(itemID,
 * location) as in xpcom/reader.js: an unloaded tab of the item is selected (to load there at
 * `location`) and nothing returned; a loaded reader of the item is selected and, given a
 * location, `navigate(location)`d; else a reader tab opens at `location` and is returned. A
 * location is `{pageIndex}` (0-based), `{annotationID}` or `{position}`; each reader records
 * the locations it was shown in `locations`. Test helper openReader(itemID, {loaded}) adds a
 * reader tab and selects it, as opening a file does.
 * Installs Zotero.getMainWindow() (with Zotero_Tabs) and Zotero.Reader; returns Zotero_Tabs.
 */
export function fakeTabs(Zotero) {
  const tabs = [{ id: "zotero-pane", type: "library" }];
  const readers = [];
  let selectedID = "zotero-pane";
  let next = 1;
  const Zotero_Tabs = {
    get selectedID() { return selectedID; },
    get selectedType() { return tabs.find((t) => t.id === selectedID).type; },
    select(id) {
      if (tabs.some((t) => t.id === id)) selectedID = id;
    },
    openReader(itemID, { loaded = true, location = null } = {}) {
      const item = Zotero.Items.get(itemID);
      if (!item || !item.isAttachment()) throw new Error(`Item ${itemID} is not an attachment`);
      const id = `tab-${next++}`;
      tabs.push({ id, type: loaded ? "reader" : "reader-unloaded", itemID: item.id });
      if (loaded) {
        readers.push({
          tabID: id,
          get itemID() { return item.id; },
          locations: location ? [location] : [],
          _initPromise: Promise.resolve(),
          navigate(to) { this.locations.push(to); },
        });
      }
      selectedID = id;
      return id;
    },
  };
  async function open(itemID, location) {
    if (!Zotero.Items.get(itemID)) throw new Error("Item does not exist");
    let reader = readers.find((r) => r.itemID === itemID);
    if (!reader) {
      const unloaded = tabs.find((t) => t.type === "reader-unloaded" && t.itemID === itemID);
      if (unloaded) {
        Zotero_Tabs.select(unloaded.id);
        return undefined;
      }
      Zotero_Tabs.openReader(itemID, { location });
      return readers.at(-1);
    }
    Zotero_Tabs.select(reader.tabID);
    if (location) reader.navigate(location);
    return reader;
  }
  Zotero.Reader = { ...(Zotero.Reader || {}), open, getByTabID: (tabID) => readers.find((r) => r.tabID === tabID) };
  Zotero.getMainWindow = () => ({ Zotero_Tabs });
  return Zotero_Tabs;
}

/** The `window` a host module sees inside Zotero: IOUtils, PathUtils, WebCrypto, fetch. */
export function fakeWindow(Zotero, { fetch = globalThis.fetch } = {}) {
  const temp = mkdtempSync(join(tmpdir(), "fake-zotero-tmp-"));
  const events = new EventTarget(); // `unload` undoes what the host registered for the window
  return {
    parent: { Zotero }, IOUtils: fakeIOUtils(), PathUtils: fakePathUtils(temp), crypto: webcrypto, fetch, Event,
    addEventListener: events.addEventListener.bind(events), dispatchEvent: events.dispatchEvent.bind(events),
  };
}
