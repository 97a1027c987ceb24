// Sentence-level attribution of a citation occurrence (TurnRecord `attributions`, docs/api.md
// "Sentence-level attribution"): which sentences and table rows of the cited passage state the
// claim, marked in place, and the facts of the claim none of them states.

import { escapeHtml } from "./format.js";
import { markHtml, withMarkers } from "./evidence.js";

export const OBTAIN_LABEL = "🔍 Obtain Sentence-Level Attribution";
export const SHOWN_LABEL = "✨ Attribution: Shown";
export const HIDDEN_LABEL = "🔍 Attribution: Hidden";
export const HIGHLIGHT = "sentence-attr-highlight";

const HIGHLIGHT_MARK = `<mark class="${HIGHLIGHT}">`;

/** `index/occurrence`: one attribution per citation occurrence. */
export function attributionKey(index, occurrence) {
  return `${index}/${occurrence}`;
}

/** The record's attributions by `attributionKey`. */
export function attributionsOf(record) {
  return new Map((record?.attributions || []).map((a) => [attributionKey(a.citation_index, a.occurrence), a]));
}

/** A copy of `record` holding `attribution` in place of the one of the same occurrence. */
export function withAttribution(record, attribution) {
  const key = attributionKey(attribution.citation_index, attribution.occurrence);
  const others = (record.attributions || []).filter((a) => attributionKey(a.citation_index, a.occurrence) !== key);
  return { ...record, attributions: [...others, attribution] };
}

/** The supporting spans within `quote`: [[start, end], ...] in reading order. */
export function supportingRanges(quote, attribution) {
  const length = String(quote || "").length;
  const wanted = new Set(attribution?.supporting || []);
  return (attribution?.spans || [])
    .filter((s) => wanted.has(s.index))
    .map((s) => [Math.max(0, s.start), Math.min(length, s.end)])
    .filter(([start, end]) => start < end)
    .sort((a, b) => a[0] - b[0]);
}

/**
 * The passage rendered by `renderMarkdown` with each supporting sentence in
 * <mark class="sentence-attr-highlight">, and each table row holding one marked as a whole:
 * <tr class="sentence-attr-highlight" data-attr-highlight-tr="true">.
 */
export function attributedPassageHtml(quote, attribution, renderMarkdown) {
  const ranges = supportingRanges(quote, attribution);
  if (!ranges.length) return renderMarkdown(quote || "");
  const html = markHtml(renderMarkdown(withMarkers(quote, ranges)), HIGHLIGHT);
  return html.replace(/<tr>([\s\S]*?)<\/tr>/g, (row, cells) =>
    cells.includes(HIGHLIGHT_MARK) ? `<tr class="${HIGHLIGHT}" data-attr-highlight-tr="true">${cells}</tr>` : row);
}

/** What the claim says that the passage does not: a line for the researcher, never about "spans". */
export function factsLine(attribution) {
  const facts = attribution?.unsupported_facts || [];
  if (!(attribution?.supporting || []).length) {
    return facts.length ? `No sentence of this passage states the claim; not found: ${facts.join(", ")}.` :
      "No sentence of this passage states the claim.";
  }
  return facts.length ? `Not stated in the highlighted sentences: ${facts.join(", ")}.` :
    "Every fact of the claim is in the highlighted sentences.";
}

/** Who judged: the language model, or the verifier sentence by sentence. */
export function judgedLine(attribution) {
  if (attribution?.method === "llm") return `Judged by ${attribution.model || "the language model"}.`;
  const model = attribution?.model ? ` (${attribution.model})` : "";
  return `Judged by the verifier${model}, sentence by sentence.`;
}

/** The attribution's lines under the passage, escaped: the facts, the model's explanation, who judged, a note. */
export function attributionNotesHtml(attribution) {
  const lines = [
    ["attribution-facts", factsLine(attribution)],
    ["attribution-explanation", attribution?.explanation || ""],
    ["attribution-judged info-muted", judgedLine(attribution)],
    ["attribution-note info-muted", attribution?.note || ""],
  ];
  return lines.filter(([, text]) => text).map(([cls, text]) => `<p class="${cls}">${escapeHtml(text)}</p>`).join("");
}
