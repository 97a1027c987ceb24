// Entry point of the sidebar page: picks the host (the Zotero pane or the /ui/ web page),
// loads the vendored markdown-it and KaTeX, and starts the sidebar. `ZocratesPreferences` is
// the preferences pane's helpers (zotero/preferences.js, a classic script sidebar.html loads
// first), shared by the web page's settings dialog.
import markdownit from "../vendor/markdown-it.mjs";
import katex from "../vendor/katex.mjs";
import { startSidebar } from "./app.js";

async function main() {
  const inZotero = window.location.protocol === "chrome:" && window.parent && window.parent !== window && window.parent.Zotero;
  const { createHost } = inZotero ? await import("../host/zotero.js") : await import("../host/web.js");
  const host = createHost(window);
  window.zocrates = startSidebar({ window, host, libs: { markdownit, katex, preferences: window.ZocratesPreferences } });
}

main().catch((exc) => {
  const root = document.getElementById("zocrates-root");
  root.textContent = `Zocrates could not start: ${exc.message}`;
  console.error(exc);
});
