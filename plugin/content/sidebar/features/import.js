// Import from discovery: a discovery turn's candidates as a checklist (select all, a summary,
// "Import Selected…"), the confirmation dialog with the library and collection to add to, and
// the import report. In Zotero the host imports the papers; on the web page the server stages
// the open-access PDFs as downloads. Each paper imported into Zotero gets a child note saying how
// it was found (core/note.js, provenanceNoteHtml). A candidate pill in the answer scrolls to its card.

import { CandidateSelection, confirmationSummary, importChoices, importPlan, importReport, oaLabel } from "../../core/candidates.js";
import { provenanceNoteHtml } from "../../core/note.js";
import { escapeAttr, escapeHtml } from "../../core/format.js";
import { openModal } from "../modal.js";
import { disposer } from "../context.js";

export function mount({ window, document, host, api, renderer, state, $, bus }) {
  const d = disposer();

  d.listen($("messages"), "click", (e) => {
    const candidatePill = e.target.closest(".candidate-pill");
    if (candidatePill) {
      const wrapper = candidatePill.closest(".message-wrapper");
      const card = wrapper.querySelectorAll(".candidate-card")[Number(candidatePill.dataset.candidateIdx) - 1];
      if (card) {
        card.scrollIntoView({ block: "nearest", behavior: "smooth" });
        card.classList.add("flash");
        window.setTimeout(() => card.classList.remove("flash"), 1200);
      }
    }
  });

  d.add(bus.on("message.finalized", (message) => {
    const record = message.record;
    if (record && (record.candidates || []).length) renderCandidates(message);
  }));

  function renderCandidates(message) {
    const record = message.record;
    if (!message.selection) message.selection = new CandidateSelection(record.candidates);
    else message.selection.update(record.candidates);
    const selection = message.selection;
    const box = document.createElement("div");
    box.className = "candidates";
    box.innerHTML = '<div class="candidates-head"><button class="secondary-btn select-all-btn"></button>' +
      '<span class="candidates-summary"></span><button class="primary-btn import-btn"></button></div><div class="candidate-list"></div>' +
      '<div class="import-report" hidden></div>';
    const list = box.querySelector(".candidate-list");
    for (const c of record.candidates) {
      const card = document.createElement("label");
      card.className = "candidate-card";
      card.dataset.candidateId = c.candidate_id;
      const authors = (c.authors || []).slice(0, 4).join(", ") + ((c.authors || []).length > 4 ? " et al." : "");
      const meta = [authors, c.year, c.venue].filter(Boolean).map((x) => escapeHtml(String(x))).join(" · ");
      const open = c.oa_status && c.oa_status !== "closed";
      card.innerHTML = '<input type="checkbox" class="candidate-check">' +
        `<div class="candidate-body"><div class="candidate-title">${renderer.inlineMarkdown(c.title)}</div>` +
        `<div class="candidate-meta">${meta}<span class="oa-badge${open ? " open" : ""}">${escapeHtml(oaLabel(c))}</span>` +
        `${c.cited_by_count != null ? ` · cited by ${Number(c.cited_by_count)}` : ""}</div>` +
        `<div class="candidate-keywords">${(c.keywords || []).map((k) => `<span class="keyword-chip">${escapeHtml(k)}</span>`).join("")}</div>` +
        (c.abstract ? `<details class="candidate-abstract"><summary>Abstract</summary><div>${renderer.markdown(c.abstract)}</div></details>` : "") +
        "</div>";
      const check = card.querySelector("input");
      check.checked = selection.isSelected(c.candidate_id);
      card.classList.toggle("selected", check.checked);
      check.addEventListener("change", () => {
        selection.toggle(c.candidate_id, check.checked);
        sync();
      });
      list.appendChild(card);
    }
    const selectAll = box.querySelector(".select-all-btn");
    const importBtn = box.querySelector(".import-btn");
    const sync = () => {
      for (const card of list.children) {
        const on = selection.isSelected(card.dataset.candidateId);
        card.querySelector("input").checked = on;
        card.classList.toggle("selected", on);
      }
      selectAll.textContent = selection.allSelected ? "Deselect All" : "Select All";
      box.querySelector(".candidates-summary").textContent = selection.summary();
      importBtn.textContent = host.canImport ? "Import Selected…" : "Stage Selected…";
      importBtn.disabled = selection.selected.size === 0;
    };
    selectAll.addEventListener("click", (e) => {
      e.preventDefault();
      if (selection.allSelected) selection.selectNone();
      else selection.selectAll();
      sync();
    });
    importBtn.addEventListener("click", () => confirmImport(message, box.querySelector(".import-report")));
    sync();
    message.extra.appendChild(box);
  }

  async function confirmImport(message, reportEl) {
    const chosen = message.selection.chosen();
    if (!chosen.length) return;
    // Where the papers go: a library the user may write to, and optionally one of its collections.
    const { groups, selected } = importChoices(host.canImport ? await host.listImportTargets() : []);
    const choices = groups.flatMap((g) => g.choices);
    const summary = confirmationSummary(chosen, selected?.where);
    const m = openModal(document, host.canImport ? summary.headline : summary.headline.replace(/^Import (\d+ papers?) into .*\?$/, "Stage $1 for download?"), { id: "import-confirm" });
    m.body.innerHTML = `<ul class="confirm-list">${summary.lines.map((l) =>
      `<li>${escapeHtml(l.title)}${l.year ? ` (${l.year})` : ""} <span class="oa">— ${escapeHtml(l.oa)}</span></li>`).join("")}</ul>` +
      `<p class="info-muted">${escapeHtml(summary.pdfNote)}</p>` +
      (host.canImport
        ? '<div class="confirm-target"><label for="import-collection">Add to</label><select id="import-collection">' +
          groups.map((g) => `<optgroup label="${escapeAttr(g.label)}">${g.choices.map((c) =>
            `<option value="${escapeAttr(c.value)}"${c === selected ? " selected" : ""}>${escapeHtml(c.label)}</option>`).join("")}</optgroup>`).join("") +
          '</select></div><p class="info-muted import-files-note" hidden></p>'
        : `<p class="info-muted">${escapeHtml(host.importHint)}</p>`);
    const select = m.body.querySelector("#import-collection");
    const choice = () => choices.find((c) => c.value === select?.value) || null;
    // The headline and the note about files follow the choice.
    const showChoice = () => {
      const current = choice();
      if (!current) return;
      m.backdrop.querySelector(".modal-head h2").textContent = confirmationSummary(chosen, current.where).headline;
      const note = m.body.querySelector(".import-files-note");
      note.hidden = current.filesEditable;
      note.textContent = current.filesEditable ? "" : `The group “${current.libraryName}” does not allow files: the papers are imported as metadata only, without PDFs.`;
    };
    select?.addEventListener("change", showChoice);
    showChoice();
    m.foot.hidden = false;
    m.foot.innerHTML = '<button class="secondary-btn cancel-btn">Cancel</button><button class="primary-btn confirm-btn">' +
      (host.canImport ? "Import" : "Stage PDFs") + "</button>";
    m.foot.querySelector(".cancel-btn").addEventListener("click", () => m.close());
    m.foot.querySelector(".confirm-btn").addEventListener("click", async () => {
      const target = choice();
      m.close();
      await runImport(message, chosen, target, reportEl);
    });
  }

  /** `target`: the dialog's choice (`libraryID`, `collectionId`, `where`), null on the web page. */
  async function runImport(message, chosen, target, reportEl) {
    reportEl.hidden = false;
    reportEl.textContent = "Preparing the batch: downloading and checking open-access PDFs on the server…";
    try {
      const batch = await api.prepareBatch(state.sessionId || message.record.session_id, message.record.turn_id,
        chosen.map((c) => c.candidate_id));
      // Each imported item keeps how it was found: the question, the date, what the overview said.
      const plan = importPlan(chosen, batch).map((p) => ({ ...p, note: provenanceNoteHtml(message.record, p.candidate) }));
      reportEl.textContent = host.canImport ? `Importing into ${target?.where || "My Library"}…` : "Fetching staged PDFs…";
      const { results, ingest } = await host.importBatch(plan, { libraryID: target?.libraryID, collectionId: target?.collectionId || "", api });
      const report = importReport(results);
      reportEl.innerHTML = `<strong>${escapeHtml(report.headline)}</strong><ul>${report.lines.map((l) =>
        `<li data-status="${escapeAttr(l.status)}">${escapeHtml(l.title)} — ${escapeHtml(l.status)}${l.note ? `: ${escapeHtml(l.note)}` : ""}` +
        `${l.href ? ` <a href="${escapeAttr(l.href)}" download="${escapeAttr(l.filename || "paper.pdf")}">Download PDF</a>` : ""}</li>`).join("")}</ul>` +
        (ingest ? `<p class="info-muted import-ingest">${escapeHtml(ingest)}</p>` : "");
      if (host.canSyncLibrary) bus.request("library.refresh");
    } catch (exc) {
      reportEl.textContent = exc.code === "not_found"
        ? "This server cannot stage papers yet (no /discover/prepare_batch route). Nothing was imported."
        : `Import failed: ${exc.message}`;
      reportEl.classList.add("error");
    }
  }

  return d.dispose;
}
