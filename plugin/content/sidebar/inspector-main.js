// The standalone inspector window in Zotero: the record comes in window.arguments, the
// table is the same renderInspector the web page shows in a modal.
import markdownit from "../vendor/markdown-it.mjs";
import katex from "../vendor/katex.mjs";
import { createRenderer } from "../core/render.js";
import { FONT_SIZES } from "./features/menu.js";
import { renderInspector } from "./features/inspector.js";
import { createHost } from "../host/zotero.js";

const args = window.arguments?.[0]?.wrappedJSObject || window.arguments?.[0];
const Zotero = window.opener?.Zotero;
const host = createHost(window, Zotero);
document.documentElement.style.setProperty("--base-font-size", FONT_SIZES[host.fontSize()] || FONT_SIZES.medium);
const report = (exc) => Zotero?.logError?.(exc);
renderInspector(document.getElementById("inspector"), args.record, {
  renderer: createRenderer({ markdownit, katex }),
  host,
  window,
  onSelect: (key, libraryId) => host.selectInLibrary(key, libraryId).catch(report),
  onOpen: (row) => host.openInReader(row).catch(report),
  focus: args.focus || null,
  attribute: args.attribute || null, // the sidebar's: it asks the gateway and keeps the result with the turn
});
