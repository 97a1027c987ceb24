// Where a cited passage supports its claim (content/core/evidence.js): the verifier's spans
// marked in the rendered passage, the inspector's supporting sentences first, the quality line,
// and what tells apart two passages of one item cited in one answer.
import { test } from "node:test";
import assert from "node:assert/strict";
import markdownit from "markdown-it";
import katex from "katex";
import { createRenderer } from "../content/core/render.js";
import {
  markedQuoteHtml, markHtml, MARK_CLOSE, MARK_OPEN, passageLocators, revealScrollTop, spansHtml, supportSpans, withMarkers,
} from "../content/core/evidence.js";
import { pillTooltip } from "../content/core/format.js";
import { claimRows, qualityLine } from "../content/core/inspector.js";
import { QUOTED_RECORD, RECORD } from "./fixtures.js";

const r = createRenderer({ markdownit, katex });
const span = (quote, text) => ({ start: quote.indexOf(text), end: quote.indexOf(text) + text.length });
const marked = (html) => [...html.matchAll(/<mark class="evidence-mark">([^]*?)<\/mark>/g)].map((m) => m[1]);

test("the supporting sentence is marked in the rendered passage, its text escaped", () => {
  const quote = "Methods were standard. Warfarin <b>lowered</b> strokes by 64%. Bleeding was rare.";
  const occurrence = { spans: [span(quote, "Warfarin <b>lowered</b> strokes by 64%.")] };
  const html = markedQuoteHtml(quote, occurrence, r.markdown);
  assert.deepEqual(marked(html), ["Warfarin &lt;b&gt;lowered&lt;/b&gt; strokes by 64%."]);
  assert.ok(!html.includes("<b>") && !html.includes(MARK_OPEN) && !html.includes(MARK_CLOSE));
  assert.equal(markedQuoteHtml(quote, { spans: [] }, r.markdown), r.markdown(quote), "no spans: the passage as before");
  assert.equal(markedQuoteHtml(quote, null, r.markdown), r.markdown(quote));
});

test("a span across a line break and into a table row stays well-formed, the row still a table row", () => {
  const quote = "Table 2 (Inhibition constants)\n\n| | Ki, nM |\n|---|---|\n| 33RE | 11.21 ± 0.74 |\n| 34RE | 9.10 |";
  const html = markedQuoteHtml(quote, { spans: [span(quote, "| 33RE | 11.21 ± 0.74 |")] }, r.markdown);
  assert.match(html, /<table>/);
  assert.deepEqual(marked(html), ["33RE", "11.21 ± 0.74"], "one mark per cell, closed and reopened around the cell tags");
  const hyphen = "The anticoagu-\nlant lowered strokes. Other text.";
  const across = markedQuoteHtml(hyphen, { spans: [span(hyphen, "The anticoagu-\nlant lowered strokes.")] }, r.markdown);
  assert.deepEqual(marked(across), ["The anticoagu-\nlant lowered strokes."]);
});

test("spans are clipped to the quote, merged when they overlap, and a list marker stays outside the mark", () => {
  const quote = "- first item\n- second item";
  assert.deepEqual(supportSpans(quote, { spans: [{ start: 14, end: 99 }, { start: 0, end: 5 }, { start: 3, end: 8 }] }), [[0, 8], [14, 26]]);
  assert.equal(withMarkers(quote, [[13, 26]]), `- first item\n- ${MARK_OPEN}second item${MARK_CLOSE}`);
  assert.deepEqual(marked(markedQuoteHtml(quote, { spans: [{ start: 13, end: 26 }] }, r.markdown)), ["second item"]);
  assert.match(markedQuoteHtml(quote, { spans: [{ start: 13, end: 26 }] }, r.markdown), /<li><mark/);
  assert.equal(markHtml(`a${MARK_OPEN}</p>${MARK_CLOSE}b`), "a</p>b", "empty marks are dropped");
});

test("the inspector shows the supporting sentence first, escaped, then the passage with it marked", () => {
  const quote = "Methods were standard.\nWarfarin lowered strokes by 64% <i>vs</i> placebo. Bleeding was rare.";
  const occurrence = { spans: [span(quote, "Warfarin lowered strokes by 64% <i>vs</i> placebo.")] };
  assert.equal(spansHtml(quote, occurrence), '<mark class="evidence-mark">Warfarin lowered strokes by 64% &lt;i&gt;vs&lt;/i&gt; placebo.</mark>');
  assert.equal(spansHtml(quote, { spans: [] }), "");
  const record = structuredClone(RECORD);
  record.citations[0].occurrences[0].spans = [span(record.citations[0].quote, "Rates were estimated")];
  const rows = claimRows(record);
  assert.deepEqual(rows.find((row) => row.index === 1 && row.occurrence === 1).spans, record.citations[0].occurrences[0].spans);
  assert.deepEqual(rows.find((row) => row.index === 2).spans, [], "a record before version 4 has none");
});

test("the first mark is scrolled a third of the way down the quote, never above its top", () => {
  assert.equal(revealScrollTop(0, 100, 700, 300), 500);
  assert.equal(revealScrollTop(40, 100, 120, 300), 0);
});

test("the quality line gives recall, precision and uncited sentences, and nothing for a turn without it", () => {
  const quality = { claims: 5, supported: 3, uncited: 1, unverified: 1, citations: 5, supporting: 4, recall: 0.75, precision: 0.8 };
  assert.equal(qualityLine(quality),
    "Citation recall 75% (3 of 4 claim sentences supported) · precision 80% (4 of 5 verified citations support their claim) · " +
    "1 uncited claim sentence · 1 claim sentence not verified");
  assert.equal(qualityLine({ claims: 1, supported: 0, uncited: 0, unverified: 1, citations: 0, supporting: 0, recall: null, precision: null }),
    "Citation recall — (0 of 0 claim sentences supported) · precision — (0 of 0 verified citations support their claim) · " +
    "0 uncited claim sentences · 1 claim sentence not verified");
  assert.equal(qualityLine(null), null);
  assert.equal(qualityLine(undefined), null);
});

test("pills of one item cited from several passages are told apart by section, else by passage", () => {
  assert.deepEqual([...passageLocators(QUOTED_RECORD.citations)], [[1, "§ Abstract"], [2, "§ Results"]]);
  assert.deepEqual([...passageLocators(RECORD.citations)], [[2, "passage 1"], [3, "passage 2"]], "one passage has no section");
  const paged = [{ index: 1, item_key: "ITEMAAAA", pages: { index: 3, label: "4" }, section: "Methods" },
    { index: 2, item_key: "ITEMAAAA", pages: { index: 8, label: "9" }, section: "Methods" }];
  assert.deepEqual([...passageLocators(paged)], [[1, "p. 4 · § Methods"], [2, "p. 9 · § Methods"]]);
  assert.deepEqual([...passageLocators([{ index: 1, item_key: "A", library_id: "user" }, { index: 2, item_key: "A", library_id: "group-1" }])], []);
  const labels = [...r.renderTurn(QUOTED_RECORD).matchAll(/<span class="citation-pill"[^>]*>([^]*?)<\/span><\/span>/g)].map((m) => m[1]);
  assert.equal(labels[0], 'Cozier et al. (2018)<span class="pill-locator"> · § Abstract');
  assert.ok(!r.renderTurn({ ...RECORD, citations: RECORD.citations.slice(0, 1) }).includes("pill-locator"), "an item cited once has none");
});

test("a pill's tooltip names the page and the start of the sentence that supports its claim", () => {
  const quote = "Intro. Warfarin lowered the rate of stroke by 64% compared with placebo in 412 adults with atrial fibrillation over two years.";
  const citation = { title: "T", section: "Results", pages: { index: 6, label: "7" }, quote };
  const occurrence = { probability: 0.9, spans: [{ start: 7, end: quote.length }] };
  assert.equal(pillTooltip(citation, occurrence), "Title: T\nSection: Results\nPage: p. 7\nSupport probability: 0.90\n" +
    "Supported by: “Warfarin lowered the rate of stroke by 64% compared with placebo in 412 adults with atrial…”");
});
