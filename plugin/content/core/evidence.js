// Where a cited passage supports its claim: the verifier's spans of a kept occurrence (offsets
// into its citation's `quote`, TurnRecord version 4) marked in the rendered passage, and what
// tells apart two passages of one item cited in one answer.
//
// Marking survives markdown: the quote is rendered with private-use markers around each span
// (`withMarkers`), and `markHtml` turns the markers in the rendered HTML into <mark> elements,
// closed and reopened around every tag in between, so a span across a line break, a list item
// or a table row stays well-formed. Only our own tags are added to the renderer's output; the
// passage's text is escaped by the renderer as before.

import { escapeHtml, pagesText } from "./format.js";
import { sourceId } from "./citations.js";

export const MARK_OPEN = "\ue011";
export const MARK_CLOSE = "\ue012";
const MARKERS_RE = /[\ue011\ue012]/g;
const MARK_CLASS = "evidence-mark";
const MARK_TAG = `<mark class="${MARK_CLASS}">`;
// Block syntax a marker must not precede (it would stop the line being a list item, heading,
// quote or table row): the marker goes after it.
const LINE_SYNTAX_RE = /^[ \t]*(?:(?:[-*+]|\d+[.)]|#{1,6}|>)[ \t]+|\|[ \t]*)/;

/** An occurrence's spans within `quote`, sorted and merged: [[start, end], ...]. */
export function supportSpans(quote, occurrence) {
  const length = String(quote || "").length;
  const spans = (occurrence?.spans || [])
    .map((s) => [Math.max(0, s.start), Math.min(length, s.end)])
    .filter(([start, end]) => start < end)
    .sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const span of spans) {
    const last = merged[merged.length - 1];
    if (last && span[0] <= last[1]) last[1] = Math.max(last[1], span[1]);
    else merged.push([...span]);
  }
  return merged;
}

/** `quote` with MARK_OPEN and MARK_CLOSE around each span, outside the line's block syntax. */
export function withMarkers(quote, spans) {
  let out = "";
  let cursor = 0;
  for (let [start, end] of spans) {
    const lineStart = quote.lastIndexOf("\n", start - 1) + 1;
    const syntax = LINE_SYNTAX_RE.exec(quote.slice(lineStart, end));
    if (syntax && lineStart + syntax[0].length > start) start = Math.min(end, lineStart + syntax[0].length);
    while (end > start && /[ \t|]/.test(quote[end - 1])) end -= 1; // a table row's closing pipe
    if (start >= end) continue;
    out += quote.slice(cursor, start) + MARK_OPEN + quote.slice(start, end) + MARK_CLOSE;
    cursor = end;
  }
  return out + quote.slice(cursor);
}

/**
 * Rendered HTML of a marked quote with each marked run as <mark class="evidence-mark"> (or
 * the class `cls`), split at element boundaries; a marker the renderer moved into a tag is dropped.
 */
export function markHtml(html, cls = MARK_CLASS) {
  const open = `<mark class="${cls}">`;
  let out = "";
  let inside = false;
  for (const part of html.split(/(<[^>]*>)/)) {
    if (part.startsWith("<")) {
      const tag = part.replace(MARKERS_RE, "");
      out += inside ? `</mark>${tag}${open}` : tag;
      continue;
    }
    for (const ch of part.split(/([\ue011\ue012])/)) {
      if (ch === MARK_OPEN && !inside) [out, inside] = [out + open, true];
      else if (ch === MARK_CLOSE && inside) [out, inside] = [out + "</mark>", false];
      else if (ch !== MARK_OPEN && ch !== MARK_CLOSE) out += ch;
    }
  }
  if (inside) out += "</mark>";
  // Between two tags: only whitespace, nothing to mark.
  return out.replaceAll(new RegExp(`${open}(\\s*)</mark>`, "g"), "$1");
}

/** The quote rendered by `renderMarkdown` with the occurrence's supporting spans marked. */
export function markedQuoteHtml(quote, occurrence, renderMarkdown) {
  const spans = supportSpans(quote, occurrence);
  if (!spans.length) return renderMarkdown(quote || "");
  return markHtml(renderMarkdown(withMarkers(quote, spans)));
}

/** The supporting spans' own text, escaped, each in a <mark> (the inspector shows it first). */
export function spansHtml(quote, occurrence) {
  return supportSpans(quote, occurrence)
    .map(([start, end]) => `${MARK_TAG}${escapeHtml(quote.slice(start, end).replace(/\s+/g, " ").trim())}</mark>`)
    .join(" … ");
}

/**
 * The scrollTop that brings a target (its top `targetTop` and the container's top
 * `containerTop`, both in viewport pixels) a third of the way down a scrolled container.
 */
export function revealScrollTop(scrollTop, containerTop, targetTop, clientHeight) {
  return Math.max(0, Math.round(scrollTop + targetTop - containerTop - clientHeight / 3));
}

/** Where in its item a passage is: `p. 12 · § Methods` (a page when the citation has one: `pagesText`). */
export function passagePlace(citation) {
  return [pagesText(citation.pages), citation.section ? `§ ${citation.section}` : ""].filter(Boolean).join(" · ");
}

/**
 * What tells apart the passages of one item cited in one answer: for each citation index of an
 * item cited from more than one passage, its place (`passagePlace`), or `passage k` of the
 * item when places repeat or are unknown. Citations of an item cited once get none.
 */
export function passageLocators(citations) {
  const byItem = new Map();
  for (const c of [...(citations || [])].sort((a, b) => a.index - b.index)) {
    const id = sourceId(c);
    byItem.set(id, [...(byItem.get(id) || []), c]);
  }
  const locators = new Map();
  for (const group of byItem.values()) {
    if (group.length < 2) continue;
    const places = group.map(passagePlace);
    const distinct = places.every((p, i) => p && places.indexOf(p) === i);
    group.forEach((c, k) => locators.set(c.index, distinct ? places[k] : `passage ${k + 1}`));
  }
  return locators;
}
