// The evidence popover: a citation pill opens the cited passage with its support badge, the
// reader and library actions, maximize/restore and eight resize handles. The sentences that
// support the claim are marked, and the first is scrolled into view as it opens. It closes on ✕,
// Escape, a pointer-down outside it, or a scroll of the chat (a scroll inside it keeps it).
// Answers "popover.close".

import { bylineOf, escapeAttr, escapeHtml, isQuoted, occurrenceBadge, pagesText, quoteScores } from "../../core/format.js";
import { DIRECTIONS, maximizedRect, placePopover, resizeRect, scrollIsInside } from "../../core/geometry.js";
import { markedQuoteHtml, revealScrollTop } from "../../core/evidence.js";
import { ICONS } from "../icons.js";
import { runHostAction, selectInLibrary } from "../host-actions.js";
import { disposer } from "../context.js";

export function mount(ctx) {
  const { window, document, host, renderer, state, $, bus } = ctx;
  const d = disposer();
  const messagesEl = $("messages");

  d.listen(messagesEl, "click", (e) => {
    const pill = e.target.closest(".citation-pill:not(.pending)");
    if (pill) {
      e.stopPropagation();
      openPopover(pill);
    }
  });
  d.listen(messagesEl, "keydown", (e) => {
    if ((e.key === "Enter" || e.key === " ") && e.target.matches?.(".citation-pill:not(.pending)")) {
      e.preventDefault();
      e.target.click();
    }
  });

  function messageOf(el) {
    return state.messages.find((m) => m.wrapper === el.closest(".message-wrapper"));
  }

  function openPopover(pill) {
    const message = messageOf(pill);
    const record = message?.record;
    if (!record) return;
    const index = Number(pill.dataset.citationIdx);
    const occNumber = Number(pill.dataset.citationOcc);
    const citation = (record.citations || []).find((c) => c.index === index);
    if (!citation) return;
    const occurrence = (citation.occurrences || []).find((o) => o.occurrence === occNumber) || null;
    closePopover();
    pill.classList.add("active");
    const pop = document.createElement("div");
    pop.className = "evidence-popover";
    pop.setAttribute("role", "dialog");
    pop.setAttribute("aria-label", `Evidence from ${citation.title || "source"}`);
    const badge = occurrenceBadge(occurrence);
    // A quote's scores stay a hover away: the badge itself makes no support claim.
    const badgeTitle = isQuoted(occurrence) ? ` title="${escapeAttr(quoteScores(occurrence))}"` : "";
    const page = pagesText(citation.pages);
    const section = (page ? `<span class="evidence-section-badge evidence-page-badge">${escapeHtml(page)}</span>` : "") +
      (citation.section ? `<span class="evidence-section-badge">§ ${renderer.inlineMarkdown(citation.section)}</span>` : "");
    pop.innerHTML =
      '<div class="evidence-popover-header"><div class="evidence-popover-heading">' +
      `<div class="evidence-popover-title">${renderer.inlineMarkdown(citation.title || "Untitled source")}</div>` +
      `<div class="evidence-popover-byline">${escapeHtml(bylineOf(citation))}</div></div>` +
      '<div class="evidence-popover-controls">' +
      '<button class="icon-btn evidence-popover-maximize-btn" title="Maximize" aria-label="Maximize">⤢</button>' +
      '<button class="icon-btn evidence-popover-close-btn" title="Close" aria-label="Close">✕</button></div></div>' +
      `<div class="evidence-popover-badges-row">${section}<span class="evidence-support-badge ${badge.level}"${badgeTitle}>${escapeHtml(badge.text)}</span></div>` +
      `<div class="evidence-quote">${markedQuoteHtml(citation.quote || "", occurrence, renderer.markdown)}</div>` +
      '<div class="evidence-popover-actions">' +
      `<button class="secondary-btn open-reader-btn" ${host.canOpenInReader ? "" : "disabled"} title="${escapeAttr(host.canOpenInReader ? `Open the PDF at ${pagesText(citation.pages) || "this section"}` : host.zoteroOnlyHint)}">${ICONS.book} Open in Reader</button>` +
      `<button class="secondary-btn select-library-btn" ${host.canSelectInLibrary ? "" : "disabled"} title="${escapeAttr(host.canSelectInLibrary ? "Select the item in your library" : host.zoteroOnlyHint)}">${ICONS.folder} Select in Library</button>` +
      "</div>" + DIRECTIONS.map((dir) => `<div class="evidence-resizer ${dir}" data-dir="${dir}"></div>`).join("");
    document.body.appendChild(pop);
    const viewport = () => ({ width: window.innerWidth, height: window.innerHeight });
    const place = placePopover(pill.getBoundingClientRect(), viewport());
    Object.assign(pop.style, { left: `${place.left}px`, top: `${place.top}px`, width: `${place.width}px`, maxHeight: `${place.maxHeight}px` });
    pop.dataset.placement = place.placement;
    if (place.narrow) pop.classList.add("narrow");
    const popState = { el: pop, pill, maximized: false, restore: null, citation };
    state.popover = popState;
    revealFirstMark(pop.querySelector(".evidence-quote"));

    pop.querySelector(".evidence-popover-close-btn").addEventListener("click", () => closePopover());
    pop.querySelector(".evidence-popover-maximize-btn").addEventListener("click", () => {
      const btn = pop.querySelector(".evidence-popover-maximize-btn");
      if (!popState.maximized) {
        popState.restore = { left: pop.style.left, top: pop.style.top, width: pop.style.width, height: pop.style.height, maxHeight: pop.style.maxHeight };
        const r = maximizedRect(viewport());
        Object.assign(pop.style, { left: `${r.left}px`, top: `${r.top}px`, width: `${r.width}px`, height: `${r.height}px`, maxHeight: "none" });
        btn.textContent = "⤡";
        btn.title = "Restore";
      } else {
        Object.assign(pop.style, popState.restore);
        btn.textContent = "⤢";
        btn.title = "Maximize";
      }
      popState.maximized = !popState.maximized;
      pop.classList.toggle("maximized", popState.maximized);
    });
    pop.querySelector(".open-reader-btn").addEventListener("click", () => runHostAction(ctx, () => host.openInReader(citation)));
    pop.querySelector(".select-library-btn").addEventListener("click", () => selectInLibrary(ctx, citation.item_key, citation.library_id));
    for (const handle of pop.querySelectorAll(".evidence-resizer")) {
      handle.addEventListener("pointerdown", (e) => startResize(e, pop, handle.dataset.dir, viewport));
    }
  }

  // Scrolls the quote itself (never the page, whose scroll would close the popover).
  function revealFirstMark(quote) {
    const mark = quote.querySelector("mark.evidence-mark");
    if (!mark) return;
    const top = revealScrollTop(quote.scrollTop, quote.getBoundingClientRect().top, mark.getBoundingClientRect().top, quote.clientHeight);
    quote.scrollTop = top;
  }

  function startResize(e, pop, dir, viewport) {
    e.preventDefault();
    const r = pop.getBoundingClientRect();
    const start = { x: e.clientX, y: e.clientY, rect: { left: r.left, top: r.top, width: r.width, height: r.height } };
    pop.style.maxHeight = "none"; // a resize lifts the initial clamp
    const move = (ev) => {
      const next = resizeRect(start.rect, dir, ev.clientX - start.x, ev.clientY - start.y, viewport());
      Object.assign(pop.style, { left: `${next.left}px`, top: `${next.top}px`, width: `${next.width}px`, height: `${next.height}px` });
    };
    const up = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      window.removeEventListener("blur", up);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
    window.addEventListener("blur", up);
  }

  function closePopover() {
    if (!state.popover) return;
    state.popover.pill.classList.remove("active");
    state.popover.el.remove();
    state.popover = null;
  }

  d.listen(document, "pointerdown", (e) => {
    if (state.popover && !scrollIsInside(e.target, state.popover.el) && !e.target.closest?.(".citation-pill")) closePopover();
  });
  // Escape closes the topmost: an open dialog (modal.js), else the popover.
  d.listen(document, "keydown", (e) => {
    if (e.key === "Escape") {
      if (document.querySelector(".modal-backdrop")) document.querySelector(".modal-backdrop").remove();
      else closePopover();
    }
  });
  // Scroll isolation: scrolling the quote inside the popover keeps it; scrolling the chat closes it.
  d.listen(document, "scroll", (e) => {
    if (state.popover && !state.popover.maximized && !scrollIsInside(e.target, state.popover.el)) closePopover();
  }, true);
  d.listen(window, "resize", () => {
    if (!state.popover || state.popover.maximized) return;
    const pop = state.popover.el;
    const r = pop.getBoundingClientRect();
    const left = Math.max(8, Math.min(r.left, window.innerWidth - r.width - 8));
    const top = Math.max(8, Math.min(r.top, window.innerHeight - r.height - 8));
    Object.assign(pop.style, { left: `${left}px`, top: `${top}px`, maxHeight: `${window.innerHeight - 16}px` });
  });

  d.add(bus.handle("popover.close", () => closePopover()));
  d.add(() => closePopover());
  return d.dispose;
}
