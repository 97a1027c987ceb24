// A modal dialog over the sidebar (message information, the claim inspector, the import
// confirmation): closed by its ✕, a click on the backdrop, or Escape (features/popover.js).

import { escapeHtml } from "../core/format.js";

export function openModal(document, title, { wide = false, id = "", icon = "" } = {}) {
  const backdrop = document.createElement("div");
  backdrop.className = "modal-backdrop";
  backdrop.innerHTML = `<div class="modal${wide ? " wide" : ""}" role="dialog" aria-modal="true"${id ? ` id="${id}"` : ""}>` +
    `<div class="modal-head"><h2>${icon}${escapeHtml(title)}</h2><button class="icon-btn modal-close" aria-label="Close">✕</button></div>` +
    '<div class="modal-body"></div><div class="modal-foot" hidden></div></div>';
  backdrop.addEventListener("pointerdown", (e) => {
    if (e.target === backdrop) backdrop.remove();
  });
  backdrop.querySelector(".modal-close").addEventListener("click", () => backdrop.remove());
  document.body.appendChild(backdrop);
  return { backdrop, body: backdrop.querySelector(".modal-body"), foot: backdrop.querySelector(".modal-foot"), close: () => backdrop.remove() };
}
