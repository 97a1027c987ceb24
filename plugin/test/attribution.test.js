// Sentence-level attribution in the inspector: the supporting sentences and table rows marked
// in place (core/attribution.js), the evidence cell's action and Shown / Hidden toggle
// (sidebar/attribution-cell.js) on a small DOM, and the sidebar keeping what the gateway
// answered with the turn, so the inspector opened again shows it (features/inspector.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import markdownit from "markdown-it";
import katex from "katex";
import { createRenderer } from "../content/core/render.js";
import {
  attributedPassageHtml, attributionsOf, factsLine, supportingRanges, withAttribution, HIDDEN_LABEL, OBTAIN_LABEL, SHOWN_LABEL,
} from "../content/core/attribution.js";
import { mountAttributionCell } from "../content/sidebar/attribution-cell.js";
import { createBus } from "../content/sidebar/context.js";
import { mount } from "../content/sidebar/features/inspector.js";
import { fakeDocument } from "./fake-dom.js";

const renderer = createRenderer({ markdownit, katex });
const PASSAGE = "## Results\nThe rate was estimated from 387 twin pairs. Early mutations were common.\n\n" +
  "| cohort | pairs |\n| --- | --- |\n| Iceland | 387 |\n| Denmark | 120 |";
const at = (text) => [PASSAGE.indexOf(text), PASSAGE.indexOf(text) + text.length];
const span = (index, text, kind = "sentence") => ({ index, start: at(text)[0], end: at(text)[1], kind, probability: null });
const ATTRIBUTION = {
  citation_index: 1, occurrence: 1, claim: "The rate was estimated from 412 pairs in Iceland.", method: "verifier",
  model: "lexical-logistic-v1", explanation: null, note: null,
  spans: [span(1, "## Results", "heading"), span(2, "The rate was estimated from 387 twin pairs."),
    span(3, "Early mutations were common."), span(4, "| cohort | pairs |", "table_row"),
    span(5, "| Iceland | 387 |", "table_row"), span(6, "| Denmark | 120 |", "table_row")],
  supporting: [5, 2],
  unsupported_facts: ["412"],
};
const ROW = { index: 1, occurrence: 1, evidence: PASSAGE };

test("the supporting sentence and table row are marked in place; the others are not", () => {
  assert.deepEqual(supportingRanges(PASSAGE, ATTRIBUTION), [at("The rate was estimated from 387 twin pairs."), at("| Iceland | 387 |")]);
  const html = attributedPassageHtml(PASSAGE, ATTRIBUTION, renderer.markdown);
  assert.match(html, /<mark class="sentence-attr-highlight">The rate was estimated from 387 twin pairs.<\/mark> Early mutations/);
  assert.match(html, /<tr class="sentence-attr-highlight" data-attr-highlight-tr="true">\s*<td><mark class="sentence-attr-highlight">Iceland/);
  assert.equal((html.match(/<tr class="sentence-attr-highlight"/g) || []).length, 1, "Denmark's row stays plain");
  assert.doesNotMatch(html, /Early mutations were common.<\/mark>/);
  // Nothing supporting: the passage as it is.
  assert.equal(attributedPassageHtml(PASSAGE, { ...ATTRIBUTION, supporting: [] }, renderer.markdown), renderer.markdown(PASSAGE));
});

test("the facts line speaks of sentences, never of spans", () => {
  assert.equal(factsLine(ATTRIBUTION), "Not stated in the highlighted sentences: 412.");
  assert.equal(factsLine({ ...ATTRIBUTION, unsupported_facts: [] }), "Every fact of the claim is in the highlighted sentences.");
  assert.equal(factsLine({ ...ATTRIBUTION, supporting: [] }), "No sentence of this passage states the claim; not found: 412.");
});

test("an attribution replaces the one of the same occurrence in the turn and keeps the others", () => {
  const other = { ...ATTRIBUTION, occurrence: 2 };
  const record = withAttribution(withAttribution({ turn_id: "t" }, ATTRIBUTION), other);
  const again = withAttribution(record, { ...ATTRIBUTION, supporting: [2] });
  assert.deepEqual([...attributionsOf(again).keys()], ["1/2", "1/1"]);
  assert.deepEqual(attributionsOf(again).get("1/1").supporting, [2]);
});

function cellIn(document) {
  const cell = document.createElement("div");
  document.body.appendChild(cell);
  return cell;
}

test("Obtain asks once, highlights in place, and the toggle switches to the clean passage and back", async () => {
  const document = fakeDocument();
  const cell = cellIn(document);
  const asked = [];
  mountAttributionCell(cell, ROW, {
    renderer, plainHtml: "<p>plain passage</p>", attribute: async (row) => { asked.push(row); return ATTRIBUTION; },
  });
  const obtain = cell.querySelector(".attribution-obtain");
  assert.equal(obtain.textContent, OBTAIN_LABEL);
  assert.equal(obtain.disabled, false);
  assert.equal(cell.querySelectorAll("mark").length, 0);
  await obtain.click();
  assert.deepEqual(asked, [ROW]);
  const toggle = cell.querySelector(".attribution-toggle");
  assert.equal(toggle.textContent, SHOWN_LABEL);
  assert.equal(toggle.getAttribute("aria-pressed"), "true");
  // The sentence, and the row's two cells (a mark never spans an element boundary).
  assert.equal(cell.querySelectorAll("mark.sentence-attr-highlight").length, 3);
  assert.equal(cell.querySelectorAll("tr.sentence-attr-highlight").length, 1);
  assert.equal(cell.querySelector(".attribution-facts").textContent, "Not stated in the highlighted sentences: 412.");
  assert.equal(cell.querySelector(".attribution-judged").textContent, "Judged by the verifier (lexical-logistic-v1), sentence by sentence.");
  await cell.querySelector(".attribution-toggle").click();
  assert.equal(cell.querySelector(".attribution-toggle").textContent, HIDDEN_LABEL);
  assert.equal(cell.querySelectorAll("mark").length + cell.querySelectorAll("tr.sentence-attr-highlight").length, 0);
  assert.match(cell.querySelector(".evidence-passage").textContent, /Early mutations were common/);
  await cell.querySelector(".attribution-toggle").click();
  assert.equal(cell.querySelector(".attribution-toggle").textContent, SHOWN_LABEL);
  assert.equal(cell.querySelectorAll("mark.sentence-attr-highlight").length, 3);
  assert.equal(asked.length, 1, "the toggle never asks again");
});

test("an attribution the turn holds is shown at once; a failure says why and leaves the action", async () => {
  const document = fakeDocument();
  const held = cellIn(document);
  mountAttributionCell(held, ROW, { renderer, plainHtml: "<p>plain</p>", attribution: { ...ATTRIBUTION, method: "llm", model: "attributor", explanation: "It says 387." } });
  assert.equal(held.querySelector(".attribution-toggle").textContent, SHOWN_LABEL);
  assert.equal(held.querySelector(".attribution-explanation").textContent, "It says 387.");
  assert.equal(held.querySelector(".attribution-judged").textContent, "Judged by attributor.");

  const failing = cellIn(document);
  mountAttributionCell(failing, ROW, {
    renderer, plainHtml: "<p>plain</p>", attribute: async () => { throw new Error("The verifier did not answer within 10 s."); },
  });
  await failing.querySelector(".attribution-obtain").click();
  assert.equal(failing.querySelector(".attribution-error").textContent, "The verifier did not answer within 10 s.");
  assert.equal(failing.querySelector(".attribution-obtain").disabled, false);
  assert.equal(failing.querySelector("p").textContent, "plain");

  const offline = cellIn(document);
  mountAttributionCell(offline, ROW, { renderer, plainHtml: "<p>plain</p>", unavailable: "needs the server" });
  assert.equal(offline.querySelector(".attribution-obtain").disabled, true);
  assert.equal(offline.querySelector(".attribution-obtain").title, "needs the server");
});

test("the sidebar asks the gateway for the row's occurrence and keeps the answer with the turn for the next opening", async () => {
  const record = { session_id: "s1", turn_id: "t1", citations: [], attributions: [] };
  const state = { messages: [{ record }] };
  const opened = [];
  const sent = [];
  const host = { openInspectorWindow: (r, options) => { opened.push([r, options]); return true; } };
  const api = { sentenceAttribution: async (body) => { sent.push(body); return ATTRIBUTION; } };
  const bus = createBus();
  const unmount = mount({ window: {}, document: fakeDocument(), host, renderer, bus, api, state });
  bus.request("inspector.open", record);
  const [[, { attribute }]] = opened;
  assert.deepEqual(await attribute({ index: 1, occurrence: 1 }), ATTRIBUTION);
  assert.deepEqual(sent, [{ sessionId: "s1", turnId: "t1", citationIndex: 1, occurrence: 1 }]);
  assert.deepEqual(state.messages[0].record.attributions, [ATTRIBUTION]);
  // Opened again from the answer's button (which holds the record as it streamed): the turn as kept now.
  bus.request("inspector.open", record);
  assert.deepEqual(opened[1][0].attributions, [ATTRIBUTION]);
  // An unsupported claim's marker opens it at its row: the window gets that row too.
  bus.request("inspector.open", record, { index: 1, occurrence: 1 });
  assert.deepEqual(opened[2][1].focus, { index: 1, occurrence: 1 });
  unmount();
});
