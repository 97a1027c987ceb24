// The library bar under the header: in the Zotero pane the library's sync (its progress, then
// the server's status line), on the web page the library the server reads itself, if any.
// "Status" refreshes the line, "Sync" sends what changed now.
// Answers "library.start" and "library.refresh" (prefix).

import { libraryMode, libraryStatusLine, syncProgressLine } from "../../core/library-sync.js";
import { disposer } from "../context.js";

/** How often the line follows an indexing run, while one runs. */
export const INDEXING_POLL_MS = 3000;

export function mount({ window, host, api, $, bus }) {
  const d = disposer();
  let poll = null;
  d.add(() => window.clearTimeout(poll));
  /** While the server indexes, ask again shortly: the line shows the pace and time left. */
  function follow(status, again) {
    window.clearTimeout(poll);
    if (status?.state === "running") poll = window.setTimeout(again, INDEXING_POLL_MS);
  }
  const libraryBar = $("library-bar");
  function showLibrary(line, { error = false, progress = null } = {}) {
    libraryBar.hidden = false;
    $("library-line").textContent = line;
    libraryBar.classList.toggle("error", error);
    const bar = $("library-progress");
    bar.hidden = !progress;
    if (progress) {
      bar.max = Math.max(1, progress.total);
      bar.value = progress.done;
    }
  }

  /** Hosted mode: send the library and keep it current; show its progress and status. */
  async function startLibrary() {
    if (!host.canSyncLibrary) return showServerLibrary();
    const onProgress = (p) => {
      if (p.phase === "done") showLibrary(p.message);
      else showLibrary(syncProgressLine(p), { error: p.phase === "error", progress: p.total ? p : null });
    };
    try {
      showLibrary("Checking your library on the server…");
      const outcome = await host.startLibrarySync(api, onProgress);
      await refreshLibraryStatus(outcome.mode === "hosted" ? syncLine(outcome) : "");
    } catch (exc) {
      showLibrary(`Library sync stopped: ${exc.message}`, { error: true });
    }
  }

  function syncLine(outcome) {
    return outcome.failed?.length ? `${outcome.failed.length} files could not be uploaded (${outcome.failed[0].message}). ` : "";
  }

  async function refreshLibraryStatus(prefix = "") {
    try {
      const status = await api.libraryStatus();
      showLibrary(prefix + libraryStatusLine(status));
      follow(status, () => refreshLibraryStatus(prefix));
    } catch (exc) {
      showLibrary(`Library status unavailable: ${exc.message}`, { error: true });
    }
  }

  /** The web page sends no library; it names the one the server reads itself (the demo
   * library on a first run, or a Zotero data directory) and shows nothing otherwise. */
  async function showServerLibrary() {
    $("library-sync-btn").hidden = true;
    try {
      const status = await api.libraryStatus();
      if (libraryMode(status) === "local") showLibrary(libraryStatusLine(status));
      follow(status, () => showServerLibrary());
    } catch {
      // no line then: the chat works without it
    }
  }

  d.listen($("library-refresh"), "click", () => refreshLibraryStatus());
  d.listen($("library-sync-btn"), "click", () => startLibrary());
  d.add(bus.handle("library.start", () => startLibrary()));
  d.add(bus.handle("library.refresh", (prefix) => refreshLibraryStatus(prefix)));
  return d.dispose;
}
