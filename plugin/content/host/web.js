// The /ui/ web page's host: same-origin gateway, the token (asked for by the page, sent only as
// a Bearer header) and the open session kept in sessionStorage, the browser clipboard, and the
// Zotero-only actions disabled: papers are staged on the server and offered as PDF downloads.

import { webScopeOptions } from "../core/scope.js";

const TOKEN_KEY = "zocrates.token";
const FONT_KEY = "zocrates.fontSize";
const SESSION_KEY = "zocrates.session";

export function createHost(window) {
  const storage = window.sessionStorage;
  const local = window.localStorage;
  return {
    kind: "web",
    canEditServerUrl: false,
    canOpenInReader: false,
    canSelectInLibrary: false,
    canImport: false,
    // No Zotero to write a note into: "Save as Markdown" downloads the answer instead.
    canWriteNotes: false,
    zoteroOnlyHint: "Available in the Zotero plugin; this web page cannot reach your Zotero library.",
    importHint: "This web page cannot write into Zotero: the server stages the open-access PDFs and offers them as downloads. Use the Zotero plugin to import.",
    missingTokenHint: "",
    serverUrl: () => "",
    token: () => storage.getItem(TOKEN_KEY) || "",
    setToken: (token) => (token ? storage.setItem(TOKEN_KEY, token) : storage.removeItem(TOKEN_KEY)),
    // The session the page showed, reopened after a reload (this tab only, like the token).
    lastSession: () => storage.getItem(SESSION_KEY) || "",
    setLastSession: (id) => (id ? storage.setItem(SESSION_KEY, id) : storage.removeItem(SESSION_KEY)),
    fontSize: () => local.getItem(FONT_KEY) || "medium",
    setFontSize: (name) => local.setItem(FONT_KEY, name),
    fetch: (...args) => window.fetch(...args),
    async copyText(text) {
      try {
        await window.navigator.clipboard.writeText(text);
      } catch {
        const area = window.document.createElement("textarea");
        area.value = text;
        area.style.position = "fixed";
        area.style.opacity = "0";
        window.document.body.appendChild(area);
        area.select();
        const ok = window.document.execCommand("copy");
        area.remove();
        if (!ok) throw new Error("the browser refused clipboard access");
      }
    },
    /** Offer `text` as a download named `filename`. */
    async saveFile(filename, text, type) {
      const url = window.URL.createObjectURL(new window.Blob([text], { type }));
      const link = window.document.createElement("a");
      link.href = url;
      link.download = filename;
      window.document.body.appendChild(link);
      link.click();
      link.remove();
      window.setTimeout(() => window.URL.revokeObjectURL(url), 60_000);
    },
    async openInReader() {
      throw new Error(this.zoteroOnlyHint);
    },
    async selectInLibrary() {
      throw new Error(this.zoteroOnlyHint);
    },
    /** The scopes a question may be asked in: the server's lists of collections and tags. */
    async scopeOptions(api) {
      const [collections, tags] = await Promise.all([api.libraryCollections(), api.libraryTags()]);
      return webScopeOptions(collections, tags);
    },
    // No Zotero library to write into: the dialog offers no target here.
    async listImportTargets() {
      return [];
    },
    /** Fetch each staged PDF (with the token) and offer it as a download link. */
    async importBatch(plan, { api }) {
      const results = [];
      for (const { candidate, file, action } of plan) {
        if (action === "skip") {
          results.push({ title: candidate.title, status: "skipped", note: file?.reason || "already in your library" });
        } else if (action === "pdf") {
          try {
            const bytes = await api.stagedFile(file.object_name);
            const url = window.URL.createObjectURL(new window.Blob([bytes], { type: "application/pdf" }));
            results.push({ title: candidate.title, status: "ready", note: `${Math.round(bytes.byteLength / 1024)} KB PDF staged`,
              href: url, filename: `${candidate.title.slice(0, 80).replace(/[^\w.-]+/g, "_")}.pdf` });
          } catch (exc) {
            results.push({ title: candidate.title, status: "failed", note: exc.message });
          }
        } else {
          results.push({ title: candidate.title, status: "metadata", note: file?.reason || "no open-access PDF" });
        }
      }
      return { results, ingest: "" };
    },
  };
}
