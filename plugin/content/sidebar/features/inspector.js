// The Claim Verification Inspector: every evaluated claim of a turn with its source, passage,
// probability and verdict. `renderInspector` draws the table (the in-page dialog here, and the
// Zotero window of inspector-main.js); mount() answers "inspector.open" (record): the host's own
// window where it has one, else a dialog.

import { escapeAttr, escapeHtml, stripMathQuotes, QUOTED_TEXT } from "../../core/format.js";
import {
  claimRows, countsLine, defaultColumnWidths, filterRows, jointLine, nextSort, probabilityStats, qualityLine,
  resizeColumns, rowBadges, scoreText, sortRows, sourceLine, sourceOptions, statsLine, unprintedLine, verificationCounts,
  COLUMNS,
} from "../../core/inspector.js";
import { markedQuoteHtml, spansHtml } from "../../core/evidence.js";
import { attributionKey, attributionsOf, withAttribution } from "../../core/attribution.js";
import { mountAttributionCell } from "../attribution-cell.js";
import { ICONS } from "../icons.js";
import { openModal } from "../modal.js";
import { runHostAction, selectInLibrary } from "../host-actions.js";
import { disposer } from "../context.js";

export function mount(ctx) {
  const { window, document, host, renderer, bus, api, state } = ctx;
  const d = disposer();
  const messageOf = (turnId) => state.messages.find((m) => m.record?.turn_id === turnId);
  /** Ask the gateway for a row's attribution and keep it in the turn the chat holds, so the
   * inspector opened again (a window or the dialog) shows it; the gateway stores it too. */
  const attributeFor = (record) => async (row) => {
    const attribution = await api.sentenceAttribution({ sessionId: record.session_id, turnId: record.turn_id,
      citationIndex: row.index, occurrence: row.occurrence });
    const message = messageOf(record.turn_id);
    if (message) message.record = withAttribution(message.record, attribution);
    return attribution;
  };
  /** `focus`: `{index, occurrence}` of the row to show first (an unsupported claim's). */
  function openInspector(opened, focus = null) {
    const record = messageOf(opened.turn_id)?.record || opened; // with the attributions obtained since
    const attribute = record.session_id && record.turn_id ? attributeFor(record) : null;
    if (host.openInspectorWindow && host.openInspectorWindow(record, { focus, attribute })) return;
    const m = openModal(document, "Claim Verification Inspector", { wide: true, id: "claims-inspector", icon: ICONS.shield });
    renderInspector(m.body, record, {
      renderer,
      host,
      onSelect: (itemKey, libraryId) => selectInLibrary(ctx, itemKey, libraryId),
      onOpen: (row) => runHostAction(ctx, () => host.openInReader(row)),
      attribute,
      window,
      focus,
    });
  }
  d.add(bus.handle("inspector.open", (record, focus) => openInspector(record, focus)));
  return d.dispose;
}

/** A row's passage: the sentences that support its claim first, then the passage with them marked. */
function evidenceCell(row, renderer) {
  const support = spansHtml(row.evidence, row);
  const passage = markedQuoteHtml(row.evidence, row, renderer.markdown);
  return support ? `<p class="evidence-support">${support}</p><div class="evidence-passage">${passage}</div>` : passage;
}

/**
 * The claim verification inspector table into `container`: sortable headers, resizable
 * columns (the right neighbour compensates; double-click resets), a source filter, per-row
 * reader/library actions and sentence-level attribution (`attribute(row)` resolves with a
 * row's; without it the action is disabled). Used by the in-page modal and the Zotero window.
 */
export function renderInspector(container, record, { renderer, host, onSelect, onOpen, window, focus = null, attribute = null }) {
  const document = container.ownerDocument;
  const rows = claimRows(record);
  const attributions = attributionsOf(record);
  const remember = attribute && (async (row) => {
    const found = await attribute(row);
    attributions.set(attributionKey(row.index, row.occurrence), found);
    return found;
  });
  const counts = verificationCounts(record);
  let sort = { column: "number", direction: "asc" };
  let filter = "";
  const tableWidth = () => Math.max(600, (container.querySelector(".claims-table-wrap")?.clientWidth || window.innerWidth || 1000) - 2);
  let widths = null;
  let justResized = false;
  const headers = ["#", "Claim", "Source & Section", "Supporting Evidence", "Probability & Verdict"];
  const options = sourceOptions(rows);

  const quality = qualityLine(record.quality);
  container.innerHTML =
    `<p class="info-line counts-line">${escapeHtml(countsLine(counts))}</p>` +
    (quality ? `<p class="info-line quality-line">${escapeHtml(quality)}</p>` : "") +
    '<div class="claims-toolbar"><div id="claims-source-dropdown-wrap">' +
    '<button id="claims-source-btn" aria-haspopup="listbox">All sources ▾</button>' +
    `<div id="claims-source-menu" role="listbox" hidden><button data-key="" aria-selected="true">All sources (${rows.length})</button>${
      options.map((o) => `<button data-key="${escapeAttr(o.sourceId)}" title="${escapeAttr(o.title)}">${escapeHtml(o.label)} (${o.count})</button>`).join("")}</div></div>` +
    `<span class="info-muted">${escapeHtml(statsLine(probabilityStats(record)))}</span></div>` +
    '<div class="claims-table-wrap"><table class="claims-table"><colgroup></colgroup><thead><tr></tr></thead><tbody></tbody></table></div>';
  const table = container.querySelector(".claims-table");
  const wrap = container.querySelector(".claims-table-wrap");
  const colgroup = table.querySelector("colgroup");
  const headRow = table.querySelector("thead tr");
  const tbody = table.querySelector("tbody");

  const applyWidths = () => {
    colgroup.innerHTML = widths.map((w) => `<col style="width:${w}px">`).join("");
    table.style.width = `${widths.reduce((a, b) => a + b, 0)}px`;
  };

  headers.forEach((label, i) => {
    const th = document.createElement("th");
    th.dataset.column = COLUMNS[i];
    th.innerHTML = `${escapeHtml(label)}<span class="sort-mark"></span><span class="col-resizer" title="Drag to resize; double-click to reset"></span>`;
    th.style.position = "sticky";
    th.addEventListener("click", (e) => {
      if (justResized || e.target.classList.contains("col-resizer")) return;
      sort = nextSort(sort, COLUMNS[i]);
      drawRows();
    });
    const resizer = th.querySelector(".col-resizer");
    resizer.addEventListener("dblclick", (e) => {
      e.stopPropagation();
      widths = defaultColumnWidths(tableWidth());
      applyWidths();
    });
    resizer.addEventListener("pointerdown", (e) => {
      e.preventDefault();
      e.stopPropagation();
      const startX = e.clientX;
      const startWidths = [...widths];
      const guide = document.createElement("div");
      guide.className = "col-resize-guide";
      guide.style.height = `${wrap.scrollHeight}px`;
      wrap.appendChild(guide);
      const move = (ev) => {
        widths = resizeColumns(startWidths, i, ev.clientX - startX);
        applyWidths();
        guide.style.left = `${widths.slice(0, i + 1).reduce((a, b) => a + b, 0)}px`;
      };
      const up = () => {
        guide.remove();
        justResized = true;
        window.setTimeout(() => { justResized = false; }, 0);
        window.removeEventListener("pointermove", move);
        window.removeEventListener("pointerup", up);
        window.removeEventListener("blur", up);
      };
      move(e);
      window.addEventListener("pointermove", move);
      window.addEventListener("pointerup", up);
      window.addEventListener("blur", up);
    });
    headRow.appendChild(th);
  });

  function drawRows() {
    for (const th of headRow.children) {
      th.querySelector(".sort-mark").textContent = th.dataset.column === sort.column ? (sort.direction === "asc" ? "▲" : "▼") : "";
    }
    tbody.textContent = "";
    for (const row of sortRows(filterRows(rows, filter), sort.column, sort.direction)) {
      const tr = document.createElement("tr");
      tr.className = row.verdictLabel.toLowerCase() + (row.quoted ? " quoted" : "");
      if (focus && row.index === focus.index && row.occurrence === focus.occurrence) tr.classList.add("focused");
      tr.dataset.number = String(row.number);
      tr.innerHTML =
        `<td>#${row.number}</td>` +
        `<td>${renderer.markdown(stripMathQuotes(row.claim))}` +
        (row.quoted ? `<div class="info-muted quote-note">${escapeHtml(QUOTED_TEXT)}</div>` : "") + "</td>" +
        `<td><div><strong>${renderer.inlineMarkdown(row.title)}</strong></div><div class="info-muted">${escapeHtml(sourceLine(row))}</div>` +
        (row.section ? `<div class="evidence-section-badge">§ ${renderer.inlineMarkdown(row.section)}</div>` : "") +
        `<div class="row-actions"><button class="secondary-btn row-open" ${host.canOpenInReader ? "" : "disabled"} title="${escapeAttr(host.canOpenInReader ? "Open in Reader" : host.zoteroOnlyHint)}">${ICONS.book} Open in Reader</button>` +
        `<button class="secondary-btn row-select" ${host.canSelectInLibrary ? "" : "disabled"} title="${escapeAttr(host.canSelectInLibrary ? "Select in Library" : host.zoteroOnlyHint)}">${ICONS.folder} Select in Library</button></div></td>` +
        '<td><div class="evidence-cell"></div></td>' +
        `<td><span class="probability">${escapeHtml(scoreText(row))}</span>` +
        rowBadges(row).map((b) => `<span class="verdict-badge ${escapeAttr(b.cls)}">${escapeHtml(b.text)}</span>`).join("") +
        (jointLine(row) ? `<div class="info-muted joint-support">${escapeHtml(jointLine(row))}</div>` : "") +
        (unprintedLine(row) ? `<div class="info-muted unprinted-numbers">${escapeHtml(unprintedLine(row))}</div>` : "") + "</td>";
      tr.querySelector(".row-open").addEventListener("click", () => onOpen({ item_key: row.itemKey, library_id: row.libraryId,
        attachment_key: row.attachmentKey, section: row.section, pages: row.pages, title: row.title }));
      tr.querySelector(".row-select").addEventListener("click", () => onSelect(row.itemKey, row.libraryId));
      mountAttributionCell(tr.querySelector(".evidence-cell"), row, {
        renderer,
        plainHtml: evidenceCell(row, renderer),
        attribution: attributions.get(attributionKey(row.index, row.occurrence)) || null,
        attribute: remember,
        unavailable: "Sentence-level attribution needs the turn as the server stored it",
      });
      tbody.appendChild(tr);
    }
  }

  const menu = container.querySelector("#claims-source-menu");
  const menuBtn = container.querySelector("#claims-source-btn");
  menuBtn.addEventListener("click", () => { menu.hidden = !menu.hidden; });
  for (const b of menu.querySelectorAll("button")) {
    b.addEventListener("click", () => {
      filter = b.dataset.key;
      for (const other of menu.querySelectorAll("button")) other.setAttribute("aria-selected", String(other === b));
      menuBtn.textContent = `${filter ? options.find((o) => o.sourceId === filter).label : "All sources"} ▾`;
      menu.hidden = true;
      drawRows();
    });
  }
  widths = defaultColumnWidths(tableWidth());
  applyWidths();
  drawRows();
  tbody.querySelector("tr.focused")?.scrollIntoView?.({ block: "center" });
  return { rows };
}
