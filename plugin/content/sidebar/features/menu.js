// The header's ⋯ menu: the text size (kept by the host), "Verification…" (the host's settings,
// or the settings dialog on the web page) and "Connection…" (the host's settings, or the
// connect panel on the web page).

import { disposer } from "../context.js";

export const FONT_SIZES = { small: "13px", medium: "14px", large: "15.5px" };

export function mount({ document, host, $, bus }) {
  const d = disposer();
  function applyFontSize(name) {
    const size = FONT_SIZES[name] ? name : "medium";
    document.documentElement.style.setProperty("--base-font-size", FONT_SIZES[size]);
    for (const b of document.querySelectorAll("[data-font-size]")) b.setAttribute("aria-checked", String(b.dataset.fontSize === size));
  }
  applyFontSize(host.fontSize());
  host.onFontSizeChange?.(d.guard((name) => applyFontSize(name)));

  const moreMenu = $("more-menu");
  d.listen($("more-btn"), "click", (e) => {
    e.stopPropagation();
    moreMenu.hidden = !moreMenu.hidden;
  });
  d.listen(document, "click", (e) => {
    if (!moreMenu.hidden && !moreMenu.contains(e.target)) moreMenu.hidden = true;
  });
  for (const b of document.querySelectorAll("[data-font-size]")) {
    d.listen(b, "click", () => {
      host.setFontSize(b.dataset.fontSize);
      applyFontSize(b.dataset.fontSize);
      moreMenu.hidden = true;
    });
  }
  d.listen($("verification-btn"), "click", () => {
    moreMenu.hidden = true;
    host.openSettings ? host.openSettings() : bus.request("settings.open");
  });
  d.listen($("settings-btn"), "click", () => {
    moreMenu.hidden = true;
    host.openSettings ? host.openSettings() : bus.request("connection.show", "");
  });
  return d.dispose;
}
