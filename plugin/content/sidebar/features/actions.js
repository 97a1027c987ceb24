// The actions under a finished answer: the citations toggle, the Claim Verification Inspector
// button, how many claims are unsupported (it opens the inspector at the first), Re-verify
// (POST /citations/verify), Copy (author-year citations while they are shown, none when hidden;
// unsupported claims as the user's settings show them), Export (for a manuscript: Pandoc
// citations with BibTeX or CSL-JSON, copied or downloaded) and ⋯ (message information); the
// answer's source list, whose entries select the item in Zotero; and the unsupported-claim
// markers in the answer, which open the inspector at their row.

import { hasCitations, recordWithAuthorYear, recordWithoutCitations, stripCitations, turnParts } from "../../core/citations.js";
import { escapeHtml } from "../../core/format.js";
import { countsLine, inspectorTooltip, probabilityStats, qualityLine, statsLine, verificationCounts } from "../../core/inspector.js";
import { proseAsChosen, unsupportedClaims, unsupportedLine, unsupportedMode } from "../../core/unsupported.js";
import { ICONS } from "../icons.js";
import { openModal } from "../modal.js";
import { selectInLibrary } from "../host-actions.js";
import { disposer } from "../context.js";

// The export's files: what each is called and its media type.
const EXPORT_FILES = {
  markdown: { label: "Markdown", filename: "answer.md", type: "text/markdown" },
  bibtex: { label: "BibTeX", filename: "references.bib", type: "application/x-bibtex" },
  csl_json: { label: "CSL-JSON", filename: "references.json", type: "application/vnd.citationstyles.csl+json" },
};

export function mount(ctx) {
  const { window, document, host, api, state, $, bus } = ctx;
  const d = disposer();
  const messagesEl = $("messages");

  d.add(bus.on("message.finalized", (message) => renderActions(message)));

  function renderActions(message) {
    const record = message.record;
    const left = message.actions.querySelector(".message-actions-left");
    const right = message.actions.querySelector(".message-actions-right");
    left.textContent = "";
    right.textContent = "";
    if (!record && !message.text) return;
    message.actions.hidden = false;
    const button = (cls, label, title, onClick) => {
      const b = document.createElement("button");
      b.className = `action-btn ${cls}`;
      b.textContent = label;
      if (title) b.title = title;
      b.addEventListener("click", onClick);
      return b;
    };
    if (record && hasCitations(record)) {
      const toggle = button("citations-toggle", "", "", () => {
        message.citationsVisible = !message.citationsVisible;
        updateToggle();
      });
      const updateToggle = () => {
        const on = message.citationsVisible;
        message.wrapper.classList.toggle("citations-hidden", !on);
        toggle.setAttribute("aria-pressed", String(on));
        toggle.innerHTML = on ? `${ICONS.eye} Citations: Visible` : `${ICONS.eyeOff} Citations: Hidden`;
        toggle.title = on ? "Hide citations" : "Show citations";
        if (!on) bus.request("popover.close");
      };
      updateToggle();
      left.appendChild(toggle);
      if ((record.citations || []).length) {
        const counts = verificationCounts(record);
        const inspector = button("claims-inspector-btn", "", inspectorTooltip(counts), () => bus.request("inspector.open", record));
        inspector.innerHTML = `${ICONS.shield} Claim Verification Inspector`;
        left.appendChild(inspector);
      }
      const [prose] = turnParts(record);
      const unsupported = unsupportedClaims(record, prose);
      if (unsupported.length) {
        const first = unsupported[0].occurrences?.[0] || null;
        left.appendChild(button("unsupported-count", unsupportedLine(unsupported.length),
          "Claims whose every citation failed verification: open them in the inspector",
          () => bus.request("inspector.open", record, first)));
      }
      if (record.intent === "library" && (record.citations || []).length) {
        const again = button("reverify-btn", "Re-verify", "Check every citation of this answer against its passage again",
          async () => {
            again.disabled = true;
            again.textContent = "Re-verifying…";
            try {
              bus.request("chat.replaceRecord", message, await api.reverify(record.session_id, record.turn_id));
            } catch (exc) {
              again.disabled = false;
              again.textContent = "Re-verify";
              bus.emit("status", `Re-verification failed: ${exc.message}`, true);
            }
          });
        left.appendChild(again);
      }
    }
    const copy = button("copy-btn", "Copy", "Copy the answer", async () => {
      const text = copyText(message);
      try {
        await host.copyText(text);
        copy.textContent = "Copied";
        copy.classList.add("copied");
        window.setTimeout(() => {
          copy.textContent = "Copy";
          copy.classList.remove("copied");
        }, 1500);
      } catch (exc) {
        bus.emit("status", `Could not copy: ${exc.message}`, true);
      }
    });
    right.appendChild(copy);
    if (record?.intent === "library" && (record.citations || []).length) {
      right.appendChild(button("export-btn", "Export", "Export for a manuscript: Pandoc citations with BibTeX or CSL-JSON",
        () => openExport(record)));
    }
    if (record) right.appendChild(button("info-btn", "⋯", "Message information", () => openMessageInfo(record)));
  }

  function copyText(message) {
    if (!message.record) return stripCitations(message.text);
    const [prose] = turnParts(message.record);
    const mode = unsupportedMode(state.settings?.unsupported_claims);
    const record = { ...message.record, prose: proseAsChosen(message.record, prose, mode) };
    return message.citationsVisible ? recordWithAuthorYear(record) : recordWithoutCitations(record);
  }

  async function openExport(record) {
    const m = openModal(document, "Export for a Manuscript", { id: "export-dialog" });
    m.body.innerHTML = '<p class="info-muted">Preparing the export…</p>';
    let exported;
    try {
      exported = await api.exportTurn(record.session_id, record.turn_id);
    } catch (exc) {
      m.body.innerHTML = `<p class="info-line">Could not export: ${escapeHtml(exc.message)}</p>`;
      return;
    }
    m.body.innerHTML =
      '<p class="info-muted">Citations become Pandoc\'s <code>[@key]</code>: the Better BibTeX key an item\'s Extra pins, ' +
      "else the one Better BibTeX would generate. Render with " +
      "<code>pandoc --citeproc --bibliography references.bib answer.md</code>.</p>" +
      '<p class="export-actions"></p>';
    const row = m.body.querySelector(".export-actions");
    const action = (cls, label, run) => {
      const b = document.createElement("button");
      b.className = `action-btn ${cls}`;
      b.textContent = label;
      b.addEventListener("click", async () => {
        try {
          await run();
        } catch (exc) {
          bus.emit("status", `Could not export: ${exc.message}`, true);
        }
      });
      row.appendChild(b);
    };
    const text = (part) => (part === "csl_json" ? JSON.stringify(exported.csl_json, null, 2) + "\n" : exported[part]);
    action("export-copy", "Copy Markdown", () => host.copyText(exported.markdown));
    for (const [part, file] of Object.entries(EXPORT_FILES)) {
      action(`export-${part}`, `Download ${file.label}`, () => host.saveFile(file.filename, text(part), file.type));
    }
  }

  function openMessageInfo(record) {
    const m = openModal(document, "Message Information", { id: "message-info" });
    const counts = verificationCounts(record);
    const v = record.verification;
    const stats = probabilityStats(record);
    let html = `<p class="info-muted">Turn: ${escapeHtml(record.intent)} · ${new Date(record.completed_at || Date.now()).toLocaleString()}</p>`;
    if ((record.citations || []).length || counts.total) {
      html += '<h3>Citation Support</h3>' +
        `<p class="info-line stats-line">${escapeHtml(statsLine(stats))}</p>` +
        `<p class="info-line counts-line">${escapeHtml(countsLine(counts))}</p>`;
      const quality = qualityLine(record.quality);
      if (quality) html += `<p class="info-line quality-line">${escapeHtml(quality)}</p>`;
      const unsupported = unsupportedClaims(record, turnParts(record)[0]).length;
      if (unsupported) {
        const shown = { mark: "marked in the answer", remove: "left out of the answer", leave: "left in the answer unmarked" };
        html += `<p class="info-line unsupported-line">${escapeHtml(unsupportedLine(unsupported))}, ` +
          `${shown[unsupportedMode(state.settings?.unsupported_claims)]} (⋯ → Unsupported Claims)</p>`;
      }
      if (v) {
        html += `<p class="info-muted">Decision model: ${escapeHtml(v.provider || "—")}${v.model ? ` / ${escapeHtml(v.model)}` : ""} · ` +
          `threshold ${Number(v.threshold ?? 0.6).toFixed(2)} · ${Math.round(v.latency_ms || 0)} ms${v.note ? ` · ${escapeHtml(v.note)}` : ""}</p>`;
      }
    } else {
      html += '<p class="info-muted">This answer has no verified citations.</p>';
    }
    const refs = record.references || {};
    html += `<p class="info-muted">Sources: ${(refs.cited || []).length} cited, ${(refs.considered || []).length} considered.</p>`;
    m.body.innerHTML = html;
  }

  // The source list under an answer: an entry selects its item in Zotero (Enter or Space too).
  // An unsupported claim's marker opens the inspector at its row.
  d.listen(messagesEl, "click", (e) => {
    const source = e.target.closest(".zotero-source-link");
    if (source) selectInLibrary(ctx, source.dataset.itemKey, source.dataset.libraryId);
    const marker = e.target.closest(".unsupported-marker");
    const message = marker && state.messages.find((m) => m.wrapper.contains(marker));
    if (message?.record) {
      bus.request("inspector.open", message.record,
        { index: Number(marker.dataset.citationIdx), occurrence: Number(marker.dataset.citationOcc) });
    }
  });
  d.listen(messagesEl, "keydown", (e) => {
    if ((e.key === "Enter" || e.key === " ") && e.target.matches?.(".zotero-source-link, .unsupported-marker")) {
      e.preventDefault();
      e.target.click();
    }
  });

  return d.dispose;
}
