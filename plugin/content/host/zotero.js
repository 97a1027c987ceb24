// The Zotero host: the sidebar iframe inside a Zotero main window. Settings from the
// extensions.zocrates.* prefs (Zotero.Zocrates.prefs), the clipboard through Zotero, the
// reader and library actions, and the import of staged candidates into the library.

import { findOutlineTarget } from "../core/outline.js";
import { zoteroItemData } from "../core/candidates.js";

export function createHost(window, Zotero = window.parent.Zotero) {
  const prefs = Zotero.Zocrates.prefs;
  const mainWindow = () => Zotero.getMainWindow();
  const pane = () => Zotero.getActiveZoteroPane();
  const libraryID = () => Zotero.Libraries.userLibraryID;

  async function itemByKey(key) {
    const item = await Zotero.Items.getByLibraryAndKeyAsync(libraryID(), key);
    if (!item) throw new Error("This item is no longer in your Zotero library (it may have been deleted or moved to a group).");
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
    openSettings: () => Zotero.Utilities.Internal.openPreferences("zocrates@zocrates.org"),
    fetch: (...args) => window.fetch(...args),
    async copyText(text) {
      Zotero.Utilities.Internal.copyTextToClipboard(text);
    },

    /** Open the cited attachment and go to the chunk's section (best effort, highlight-free). */
    async openInReader(citation) {
      let item = await itemByKey(citation.attachment_key || citation.item_key);
      if (item.isRegularItem()) item = await item.getBestAttachment();
      if (!item || !item.isAttachment()) throw new Error("This item has no PDF or snapshot to open.");
      const reader = await Zotero.Reader.open(item.id);
      if (reader && citation.section) await navigateToSection(reader, citation.section).catch((exc) => Zotero.debug(`Zocrates: section navigation skipped (${exc})`));
    },

    async selectInLibrary(itemKey) {
      let item = await itemByKey(itemKey);
      if (item.isAttachment() && item.parentItemID) item = Zotero.Items.get(item.parentItemID);
      mainWindow().Zotero_Tabs?.select("zotero-pane");
      await pane().selectItem(item.id, false, true);
    },

    async listCollections() {
      const selected = pane().getSelectedCollection?.();
      const collections = Zotero.Collections.getByLibrary(libraryID(), true);
      const path = (c) => (c.parentID ? `${path(Zotero.Collections.get(c.parentID))} › ${c.name}` : c.name);
      return collections.map((c) => ({ id: String(c.id), name: path(c), selected: Boolean(selected && selected.id === c.id) }));
    },

    openInspectorWindow(record) {
      const args = { record, wrappedJSObject: null };
      args.wrappedJSObject = args;
      mainWindow().openDialog("chrome://zocrates/content/inspector.html", "zocrates-inspector",
        "chrome,resizable,centerscreen,dialog=no,width=1200,height=760", args);
      return true;
    },

    /**
     * Download the staged PDFs, then create every item, its tags, collection membership and
     * its PDF attachment record in one transaction; attachment files are copied into storage
     * after the commit (as Zotero.Attachments does), and a file that fails to copy leaves a
     * metadata-only item behind, reported as such.
     */
    async importBatch(plan, { collectionId, api }) {
      const results = new Map();
      const staged = new Map();
      for (const entry of plan) {
        const { candidate, file, action } = entry;
        if (action === "skip") {
          results.set(candidate.candidate_id, { title: candidate.title, status: "skipped", note: file?.reason || "already in your library" });
          continue;
        }
        if (action !== "pdf") continue;
        try {
          const bytes = new Uint8Array(await api.stagedFile(file.object_name));
          if (file.sha256) {
            const digest = [...new Uint8Array(await window.crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
            if (digest !== file.sha256) throw new Error("the downloaded PDF does not match the server's checksum");
          }
          const path = window.PathUtils.join(window.PathUtils.tempDir, `zocrates-${file.sha256 || candidate.candidate_id}.pdf`);
          await window.IOUtils.write(path, bytes);
          staged.set(candidate.candidate_id, path);
        } catch (exc) {
          results.set(candidate.candidate_id, { title: candidate.title, status: "metadata", note: `PDF not downloaded: ${exc.message}` });
        }
      }
      const created = [];
      await Zotero.DB.executeTransaction(async () => {
        for (const { candidate, action } of plan) {
          if (action === "skip") continue;
          const data = zoteroItemData(candidate);
          const item = new Zotero.Item(data.itemType);
          item.libraryID = libraryID();
          for (const [field, value] of Object.entries(data.fields)) {
            if (Zotero.ItemFields.isValidForType(Zotero.ItemFields.getID(field), item.itemTypeID)) item.setField(field, value);
          }
          item.setCreators(data.creators);
          for (const tag of data.tags) item.addTag(tag, 1);
          if (collectionId) item.setCollections([Number(collectionId)]);
          await item.save();
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
          }
          created.push({ candidate, item, attachment, path });
        }
      });
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
        } finally {
          await window.IOUtils.remove(path, { ignoreAbsent: true });
        }
      }
      return plan.map(({ candidate }) => results.get(candidate.candidate_id) || { title: candidate.title, status: "failed", note: "not processed" });
    },
  };
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
