// The inspector's evidence cell with sentence-level attribution: an action bar over the passage
// with "Obtain Sentence-Level Attribution" until there is one, then the passage with its
// supporting sentences and table rows highlighted in place, the facts it does not state, and a
// Shown / Hidden toggle back to the clean passage.

import { escapeAttr, escapeHtml } from "../core/format.js";
import {
  attributedPassageHtml, attributionNotesHtml, HIDDEN_LABEL, OBTAIN_LABEL, SHOWN_LABEL,
} from "../core/attribution.js";

/**
 * Draw the cell for `row` into `cell`. `plainHtml`: the passage as the inspector shows it
 * without attribution; `attribution`: the one the turn holds (or null); `attribute(row)`: asks
 * for one and resolves with it (absent: the button is disabled with `unavailable` as its hint).
 */
export function mountAttributionCell(cell, row, { renderer, plainHtml, attribution = null, attribute = null, unavailable = "" }) {
  let current = attribution;
  let shown = true;
  let error = "";

  function draw() {
    if (!current) {
      const hint = attribute ? "Which sentences of this passage state the claim, and what it does not state" : unavailable;
      cell.innerHTML =
        `<div class="attribution-bar"><button class="secondary-btn attribution-obtain" title="${escapeAttr(hint)}">${escapeHtml(OBTAIN_LABEL)}</button>` +
        (error ? `<span class="attribution-error">${escapeHtml(error)}</span>` : "") + `</div>${plainHtml}`;
      const button = cell.querySelector(".attribution-obtain");
      button.disabled = !attribute;
      if (attribute) button.addEventListener("click", () => obtain(button));
      return;
    }
    cell.innerHTML =
      `<div class="attribution-bar"><button class="secondary-btn attribution-toggle${shown ? " active" : ""}" aria-pressed="${shown}" ` +
      `title="${shown ? "Show the passage without highlights" : "Highlight the sentences that state the claim"}">${escapeHtml(shown ? SHOWN_LABEL : HIDDEN_LABEL)}</button></div>` +
      (shown ?
        `<div class="evidence-passage attributed">${attributedPassageHtml(row.evidence, current, renderer.markdown)}</div>${attributionNotesHtml(current)}` :
        `<div class="evidence-passage">${renderer.markdown(row.evidence || "")}</div>`);
    cell.querySelector(".attribution-toggle").addEventListener("click", () => {
      shown = !shown;
      draw();
    });
  }

  async function obtain(button) {
    button.disabled = true;
    button.textContent = "Obtaining attribution…";
    try {
      current = await attribute(row);
      shown = true;
      error = "";
    } catch (exc) {
      error = exc?.message || String(exc);
    }
    draw();
  }

  draw();
  return { get attribution() { return current; } };
}
