// The Zotero host: the sidebar iframe inside a Zotero main window. Settings from the
// extensions.zocrates.* prefs (Zotero.Zocrates.prefs), the clipboard through Zotero, the
// reader and library actions, the import of staged candidates into the library, and answers
// saved as notes (host/zotero-notes.js).

import { findOutlineTarget } from "../core/outline.js";
import { zoteroItemData } from "../core/candidates.js";
import { WHOLE_LIBRARY, itemsOption } from "../core/scope.js";
import { createLibrarySync, fileStore, serverLibraryId, summaryLine, zoteroLibraryID } from "./zotero-library.js";
import { createNoteWriter } from "./zotero-notes.js";
import { selectedCollections, selectedLibraryIDs, selectedTags, selectItemInPane } from "./zotero-compat.js";

export function createHost(window, Zotero = window.parent.Zotero) {
  const prefs = Zotero.Zocrates.prefs;
  const mainWindow = () => Zotero.getMainWindow();
  const pane = () => Zotero.getActiveZoteroPane();
  // Item ids whose notifier events the library sync ignores (this plugin's own import); the
  // set lives in the bootstrap scope (hooks.js), shared by every window's sidebar.
  const suppressed = Zotero.Zocrates.suppressedItemIDs;
  let librarySync = null;
  const notes = createNoteWriter(Zotero, { pane, itemByKey });

  /** The library sync for this sidebar (one per server URL's remembered state). */
  function librarySyncFor(api, onProgress = () => {}) {
    if (!librarySync) {
      const server = String(prefs.get("serverUrl") || "").replace(/[^A-Za-z0-9]+/g, "_").slice(0, 80);
      const path = window.PathUtils.join(Zotero.DataDirectory.dir, `zocrates-sync-${server}.json`);
      librarySync = createLibrarySync({ Zotero, IOUtils: window.IOUtils, crypto: window.crypto, api, suppressed,
        store: fileStore(window.IOUtils, path), onProgress: (p) => librarySync?.onProgress?.(p) });
    }
    if (onProgress) librarySync.onProgress = onProgress;
    return librarySync;
  }

  /**
   * After an import: ONE batch ingest of what it created. Hosted: one sync of the new items
   * and the uploads of their PDFs. Local: the server reads zotero.sqlite itself; ask it to
   * rescan now (POST /library/rescan) rather than at its next periodic check.
   */
  async function ingestImported(api, ids) {
    if (!ids.length) return "";
    try {
      const outcome = await librarySyncFor(api, null).syncChanges({ ids });
      if (outcome.mode === "local") {
        try {
          await api.rescanLibrary();
          return "The server is indexing your library again now; the new papers become searchable when it is done.";
        } catch (exc) {
          return `The server re-reads your Zotero library within a minute of a change; the new papers become searchable then (rescan now: ${exc.message}).`;
        }
      }
      return `Sent to the server for indexing: ${summaryLine(outcome)}`;
    } catch (exc) {
      return `Imported into Zotero, but not sent to the server yet (${exc.message}); the next library sync sends it.`;
    }
  }

  /**
   * A cited item, looked up in the library it was retrieved from: keys are unique only within
   * one library. `libraryId` is the server's ("user", "group-<groupID>"); missing is "user".
   */
  async function itemByKey(key, libraryId) {
    const id = zoteroLibraryID(Zotero, libraryId);
    const item = await Zotero.Items.getByLibraryAndKeyAsync(id, key);
    if (!item) {
      const where = id === Zotero.Libraries.userLibraryID ? "My Library" : `the group library “${Zotero.Libraries.get(id).name}”`;
      throw new Error(`This item is no longer in ${where} (it may have been deleted or moved to another library).`);
    }
    return item;
  }

  return {
    kind: "zotero",
    canEditServerUrl: true,
    canOpenInReader: true,
    canSelectInLibrary: true,
    canImport: true,
    zoteroOnlyHint: "",
    importHint: "",
    missingTokenHint: "Set the server URL and access token in Zotero → Settings → Zocrates, or paste the token here.",
    serverUrl: () => prefs.get("serverUrl"),
    token: () => prefs.get("token"),
    setToken: (token) => prefs.set("token", token),
    fontSize: () => prefs.get("fontSize"),
    setFontSize: (name) => prefs.set("fontSize", name),
    // Docked pane and detached windows follow the same pref.
    onFontSizeChange: (callback) => {
      const undo = prefs.observe("fontSize", callback);
      window.addEventListener("unload", undo, { once: true });
    },
    // The pane's id, which hooks.js registered it under (a plugin id is no pane id).
    openSettings: () => Zotero.Utilities.Internal.openPreferences(Zotero.Zocrates.prefPaneID),
    politeEmail: () => prefs.get("politeEmail"),
    onPoliteEmailChange: (callback) => {
      const undo = prefs.observe("politeEmail", callback);
      window.addEventListener("unload", undo, { once: true });
    },
    /** The settings pane saved the user's settings on the server (it bumps `settingsRevision`). */
    onSettingsChange: (callback) => {
      const undo = prefs.observe("settingsRevision", callback);
      window.addEventListener("unload", undo, { once: true });
    },
    canSyncLibrary: true,

    /**
     * Connect the library to the server: read `/library/status`; in the hosted mode send
     * the library (full the first time, then what changed) and, in one window only, watch
     * Zotero for changes. Resolves with the sync's outcome (`{mode: "local"}` when the server
     * reads zotero.sqlite itself).
     */
    async startLibrarySync(api, onProgress) {
      const sync = librarySyncFor(api, onProgress);
      const outcome = await sync.syncLibrary();
      if (outcome.mode === "hosted" && !Zotero.Zocrates.libraryObserverOwner) {
        const owner = `window-${Math.random().toString(36).slice(2)}`;
        Zotero.Zocrates.libraryObserverOwner = owner;
        const stop = sync.observe();
        window.addEventListener("unload", () => {
          stop();
          if (Zotero.Zocrates?.libraryObserverOwner === owner) Zotero.Zocrates.libraryObserverOwner = null;
        }, { once: true });
      }
      return outcome;
    },
    librarySync: () => librarySync,
    fetch: (...args) => window.fetch(...args),
    async copyText(text) {
      Zotero.Utilities.Internal.copyTextToClipboard(text);
    },

    /** Save `text` where the user chooses, `filename` proposed (Zotero's own file picker). */
    async saveFile(filename, text) {
      const { FilePicker } = ChromeUtils.importESModule("chrome://zotero/content/modules/filePicker.mjs");
      const picker = new FilePicker();
      picker.init(window, `Save ${filename}`, picker.modeSave);
      picker.defaultString = filename;
      const chosen = await picker.show();
      if (chosen === picker.returnOK || chosen === picker.returnReplace) await Zotero.File.putContentsAsync(picker.file, text);
    },

    canWriteNotes: true,
    /** Where a standalone note would go now (the pane's selected collection or library); throws when read-only. */
    noteWhere: () => notes.standaloneWhere(),
    /** An answer's note (HTML) written in one transaction: standalone, or under `parent` (`{item_key, library_id}`). */
    saveNote: (html, options) => notes.saveNote(html, options),

    /**
     * Open the cited attachment, in its library, at the passage's page (`pages.index`, the
     * reader's 0-based `pageIndex`); a passage without a page (a snapshot, a turn stored before
     * pages) goes to its section instead (best effort, highlight-free). The page comes first: a
     * section's heading can be pages before the passage cited.
     */
    async openInReader(citation) {
      let item = await itemByKey(citation.attachment_key || citation.item_key, citation.library_id);
      if (item.isRegularItem()) item = await item.getBestAttachment();
      if (!item || !item.isAttachment()) throw new Error("This item has no PDF or snapshot to open.");
      const pageIndex = citation.pages?.index;
      const location = Number.isInteger(pageIndex) && pageIndex >= 0 ? { pageIndex } : undefined;
      const reader = await Zotero.Reader.open(item.id, location);
      if (reader && !location && citation.section) await navigateToSection(reader, citation.section).catch((exc) => Zotero.debug(`Zocrates: section navigation skipped (${exc})`));
    },

    /** Select an item in the library pane; `libraryId` as in a citation ("user" when missing). */
    async selectInLibrary(itemKey, libraryId = "user") {
      let item = await itemByKey(itemKey, libraryId);
      if (item.isAttachment() && item.parentItemID) item = Zotero.Items.get(item.parentItemID);
      mainWindow().Zotero_Tabs?.select("zotero-pane");
      await selectItemInPane(pane(), item.id);
    },

    /**
     * Where an import may go: My Library and every group library the user may edit (no feeds,
     * no read-only groups), each with its collections ("Parent › Child"). Selected by default:
     * the first library selected in the Zotero pane that is one of these (Zotero 10 allows
     * several), and its first selected collection; else My Library without a collection.
     * `libraryId` is the server's form ("user", "group-<groupID>"); `filesEditable` false
     * means the group takes no files.
     */
    async listImportTargets() {
      const libraries = importLibraries();
      const offered = (libraryID) => libraries.some((l) => l.libraryID === libraryID);
      const defaultID = selectedLibraryIDs(pane()).find(offered) ?? Zotero.Libraries.userLibraryID;
      const defaultCollection = selectedCollections(pane()).find((c) => c.libraryID === defaultID);
      const path = (c) => (c.parentID ? `${path(Zotero.Collections.get(c.parentID))} › ${c.name}` : c.name);
      return libraries.map((library) => ({
        libraryID: library.libraryID,
        libraryId: serverLibraryId(Zotero, library.libraryID),
        name: library.name,
        filesEditable: Boolean(library.filesEditable),
        selected: library.libraryID === defaultID,
        collections: Zotero.Collections.getByLibrary(library.libraryID, true).map((c) => ({
          id: String(c.id),
          name: path(c),
          selected: c.id === defaultCollection?.id,
        })),
      }));
    },

    /**
     * The scopes a question may be asked in, from what Zotero shows now (core/scope.js): the
     * whole library; "This PDF" while the selected tab is a reader (Zotero_Tabs.selectedType
     * "reader", its attachment from Zotero.Reader.getByTabID); "N selected items" while the
     * library tab shows selected items (a child attachment or note stands for its parent
     * item, whose key its passages carry); the selected collection, with its subcollections
     * when Zotero shows their items too (the recursiveCollections pref); the selected library;
     * each tag selected in the tag selector, in the selected library (zotero-compat.js).
     */
    async scopeOptions() {
      const options = [WHOLE_LIBRARY];
      const tabs = mainWindow()?.Zotero_Tabs;
      const zoteroPane = pane();
      const ref = (item) => ({ library_id: serverLibraryId(Zotero, item.libraryID), item_key: item.key });
      if (tabs?.selectedType === "reader") {
        const reader = Zotero.Reader.getByTabID(tabs.selectedID);
        const item = reader ? Zotero.Items.get(reader.itemID) : null;
        if (item && item.isAttachment() && serverLibraryId(Zotero, item.libraryID)) {
          const title = item.parentItem?.getField("title") || item.getField("title");
          const kind = item.attachmentContentType === "application/pdf" ? "PDF" : "file";
          options.push({ label: `This ${kind}`, detail: title,
            scope: { kind: "attachment", library_id: serverLibraryId(Zotero, item.libraryID), attachment_key: item.key } });
        }
      } else if (zoteroPane) {
        const items = zoteroPane.getSelectedItems().map((item) => (item.parentItem ? item.parentItem : item));
        const selected = itemsOption(items.filter((item) => serverLibraryId(Zotero, item.libraryID)).map(ref));
        if (selected) options.push(selected);
      }
      const collection = selectedCollections(zoteroPane)[0];
      const path = (c) => (c.parentID ? `${path(Zotero.Collections.get(c.parentID))} › ${c.name}` : c.name);
      if (collection && serverLibraryId(Zotero, collection.libraryID)) {
        const subcollections = Boolean(Zotero.Prefs.get("recursiveCollections"));
        options.push({ label: path(collection), detail: subcollections ? "with subcollections" : "",
          scope: { kind: "collection", library_id: serverLibraryId(Zotero, collection.libraryID), collection_key: collection.key, subcollections } });
      }
      const library = Zotero.Libraries.get(selectedLibraryIDs(zoteroPane)[0]);
      if (library && serverLibraryId(Zotero, library.libraryID)) {
        options.push({ label: library.name, scope: { kind: "library", library_id: serverLibraryId(Zotero, library.libraryID) } });
        for (const tag of selectedTags(zoteroPane)) {
          options.push({ group: "Selected tags", label: tag, name: tag,
            scope: { kind: "tag", library_id: serverLibraryId(Zotero, library.libraryID), tag } });
        }
      }
      return options;
    },

    openInspectorWindow(record, { focus = null, attribute = null } = {}) {
      const args = { record, focus, attribute, wrappedJSObject: null };
      args.wrappedJSObject = args;
      mainWindow().openDialog("chrome://zocrates/content/inspector.html", "zocrates-inspector",
        "chrome,resizable,centerscreen,dialog=no,width=1200,height=760", args);
      return true;
    },

    /**
     * Download the staged PDFs, then create every item, its tags, collection membership, its
     * PDF attachment record and its provenance note (a plan entry's `note`, HTML) in one
     * transaction, in the library `libraryID` (My Library when missing) and its collection
     * `collectionId` (none when empty); attachment files are copied
     * into storage after the commit (as Zotero.Attachments does), and a file that fails to copy
     * leaves a metadata-only item behind, reported as such. A group that takes no files gets
     * metadata-only items, and no PDF is downloaded for it. A library that is gone or
     * read-only, or a collection of another library, is an error before anything is written.
     * The new items' notifier events are suppressed (the library sync would send them one by
     * one); one batch ingest follows. Resolves with `{results, ingest}`: a report line per
     * candidate, and one about the ingest.
     */
    async importBatch(plan, { libraryID = Zotero.Libraries.userLibraryID, collectionId = "", api }) {
      const target = importTarget(libraryID, collectionId);
      const results = new Map();
      const staged = await downloadStaged(plan, api, results, target);
      const mine = [];
      try {
        const created = await writeItems(plan, staged, target, mine);
        await attachFiles(created, results);
        const kept = created.flatMap(({ item, attachment, note }) => [item.id, ...(note ? [note.id] : []),
          ...(attachment && Zotero.Items.get(attachment.id) ? [attachment.id] : [])]);
        const ingest = await ingestImported(api, kept);
        return {
          results: plan.map(({ candidate }) => results.get(candidate.candidate_id) || { title: candidate.title, status: "failed", note: "not processed" }),
          ingest,
        };
      } finally {
        for (const id of mine) suppressed.delete(id);
        for (const path of staged.values()) await window.IOUtils.remove(path, { ignoreAbsent: true });
      }
    },
  };

  /** The libraries an import may write into: My Library and editable groups (never feeds). */
  function importLibraries() {
    return Zotero.Libraries.getAll().filter((library) => ["user", "group"].includes(library.libraryType) && library.editable);
  }

  /**
   * The import's target, checked: `{library, collectionID}`. Throws, so nothing is written,
   * when the library is gone (a group left since the dialog) or read-only, or the collection
   * is gone or belongs to another library.
   */
  function importTarget(libraryID, collectionId) {
    const library = Zotero.Libraries.get(libraryID);
    if (!library) {
      throw new Error("The library chosen for the import is no longer in Zotero (you may have left the group). Nothing was imported; choose another library.");
    }
    if (!importLibraries().some((l) => l.libraryID === library.libraryID)) {
      throw new Error(`You cannot add items to “${library.name}” (it is read-only). Nothing was imported; choose another library.`);
    }
    if (!collectionId) return { library, collectionID: null };
    const collection = Zotero.Collections.get(Number(collectionId));
    if (!collection) throw new Error("The collection chosen for the import no longer exists. Nothing was imported; choose another.");
    if (collection.libraryID !== library.libraryID) {
      const owner = Zotero.Libraries.get(collection.libraryID)?.name || "another library";
      throw new Error(`The collection “${collection.name}” is in “${owner}”, not in “${library.name}”. Nothing was imported.`);
    }
    return { library, collectionID: collection.id };
  }

  /** The staged PDFs, checked against the server's SHA-256, in temp files: candidate id -> path. */
  async function downloadStaged(plan, api, results, { library }) {
    const staged = new Map();
    for (const { candidate, file, action } of plan) {
      if (action === "skip") {
        results.set(candidate.candidate_id, { title: candidate.title, status: "skipped", note: file?.reason || "already in your library" });
        continue;
      }
      if (action !== "pdf") continue;
      if (!library.filesEditable) {
        results.set(candidate.candidate_id, { title: candidate.title, status: "metadata", note: `the group “${library.name}” does not allow files, so no PDF was added` });
        continue;
      }
      try {
        const bytes = new Uint8Array(await api.stagedFile(file.object_name));
        if (file.sha256) {
          const digest = [...new Uint8Array(await window.crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
          if (digest !== file.sha256) throw new Error("the downloaded PDF does not match the server's checksum");
        }
        // Zotero's temp directory: a Zotero API on every version checked (docs/plugin.md).
        const path = window.PathUtils.join(Zotero.getTempDirectory().path, `zocrates-${file.sha256 || candidate.candidate_id}.pdf`);
        await window.IOUtils.write(path, bytes);
        staged.set(candidate.candidate_id, path);
      } catch (exc) {
        results.set(candidate.candidate_id, { title: candidate.title, status: "metadata", note: `PDF not downloaded: ${exc.message}` });
      }
    }
    return staged;
  }

  /** Every item, attachment record and provenance note in ONE transaction; their ids go into `suppressed` (and `mine`). */
  async function writeItems(plan, staged, target, mine) {
    const created = [];
    const suppress = (id) => {
      // Notifications wait for the commit, so the observer already sees these ids as suppressed.
      suppressed.add(id);
      mine.push(id);
    };
    await Zotero.DB.executeTransaction(async () => {
      // Checked again: the downloads took a while, and the group may have been left meanwhile.
      const { library, collectionID } = importTarget(target.library.libraryID, target.collectionID);
      for (const { candidate, action, note: noteHtml } of plan) {
        if (action === "skip") continue;
        const data = zoteroItemData(candidate);
        const item = new Zotero.Item(data.itemType);
        item.libraryID = library.libraryID;
        for (const [field, value] of Object.entries(data.fields)) {
          if (Zotero.ItemFields.isValidForType(Zotero.ItemFields.getID(field), item.itemTypeID)) item.setField(field, value);
        }
        item.setCreators(data.creators);
        for (const tag of data.tags) item.addTag(tag, 1);
        if (collectionID) item.setCollections([collectionID]);
        await item.save();
        suppress(item.id);
        let attachment = null;
        const path = staged.get(candidate.candidate_id);
        if (path) {
          attachment = new Zotero.Item("attachment");
          attachment.libraryID = item.libraryID;
          attachment.parentID = item.id;
          attachment.attachmentLinkMode = Zotero.Attachments.LINK_MODE_IMPORTED_FILE;
          attachment.attachmentContentType = "application/pdf";
          attachment.attachmentPath = "storage:" + fileName(candidate);
          attachment.setField("title", "Full Text PDF");
          await attachment.save();
          suppress(attachment.id);
        }
        let note = null;
        if (noteHtml) {
          note = new Zotero.Item("note");
          note.libraryID = item.libraryID;
          note.parentID = item.id;
          note.setNote(noteHtml);
          await note.save();
          suppress(note.id);
        }
        created.push({ candidate, item, attachment, path, note });
      }
    });
    return created;
  }

  /** Copy each staged PDF into its attachment's storage directory; a failure erases the record. */
  async function attachFiles(created, results) {
    for (const { candidate, attachment, path } of created) {
      if (!attachment) {
        if (!results.has(candidate.candidate_id)) results.set(candidate.candidate_id, { title: candidate.title, status: "metadata", note: "no open-access PDF" });
        continue;
      }
      try {
        const dir = await Zotero.Attachments.createDirectoryForItem(attachment);
        await window.IOUtils.copy(path, window.PathUtils.join(dir, fileName(candidate)));
        results.set(candidate.candidate_id, { title: candidate.title, status: "imported", note: "" });
      } catch (exc) {
        await attachment.eraseTx();
        results.set(candidate.candidate_id, { title: candidate.title, status: "metadata", note: `PDF not attached: ${exc.message}` });
      }
    }
  }
}

function fileName(candidate) {
  const base = `${candidate.year || ""} ${candidate.title}`.trim().replace(/[^\p{L}\p{N} ._-]+/gu, "").slice(0, 100).trim();
  return `${base || candidate.candidate_id}.pdf`;
}

/** Go to a section: the PDF outline (scored match, parent fallback) or a snapshot heading. */
async function navigateToSection(reader, section) {
  await reader._initPromise;
  const internal = reader._internalReader;
  const view = internal?._primaryView;
  const pdfApp = view?._iframeWindow?.wrappedJSObject?.PDFViewerApplication;
  if (pdfApp?.pdfDocument) {
    const outline = internal._state?.outline?.length ? internal._state.outline : await pdfApp.pdfDocument.getOutline();
    const target = findOutlineTarget(outline || [], section);
    if (!target) return;
    if (target.location && internal.navigate) internal.navigate(target.location);
    else if (target.dest) await pdfApp.pdfLinkService.goToDestination(target.dest);
    return;
  }
  const doc = view?._iframeWindow?.document;
  if (doc) {
    const headings = [...doc.querySelectorAll("h1, h2, h3, h4, h5, h6, [role=heading]")].map((el) => ({ title: el.textContent, el }));
    const target = findOutlineTarget(headings, section);
    target?.el.scrollIntoView({ behavior: "smooth", block: "start" });
  }
}
