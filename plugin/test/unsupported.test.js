import { test } from "node:test";
import assert from "node:assert/strict";
import markdownit from "markdown-it";
import katex from "katex";
import { createRenderer } from "../content/core/render.js";
import { recordWithAuthorYear, recordWithoutCitations } from "../content/core/citations.js";
import {
  proseAsChosen, unsupportedClaims, unsupportedLine, unsupportedMode, unsupportedTooltip, withoutClaims,
} from "../content/core/unsupported.js";
import { RECORD, UNSUPPORTED_RECORD } from "./fixtures.js";

const r = createRenderer({ markdownit, katex });

const TURN = UNSUPPORTED_RECORD;
const visible = (html) => html.replace(/<[^>]+>/g, "");

test("mark: a discreet marker where the citation stood, its tooltip the best probability, pointing at its inspector row", () => {
  const html = r.renderTurn(TURN, { unsupported: "mark" });
  const marker = /<span class="unsupported-marker" role="button" tabindex="0" data-citation-idx="2" data-citation-occ="1" title="([^"]*)">unsupported<\/span>/.exec(html);
  assert.ok(marker, html);
  assert.equal(marker[1], "Not supported by its cited passage (best p = 0.42)");
  assert.match(visible(html), /The rate is ninety percentunsupported\. Costs fell/);
  assert.equal((html.match(/class="citation-pill"/g) || []).length, 2, "the surviving pills are still there");
  assert.deepEqual(r.renderTurn(TURN), html, "mark is the default");
});

test("remove: the claim's sentence is left out, the sentences around it intact", () => {
  const html = r.renderTurn(TURN, { unsupported: "remove" });
  assert.ok(!html.includes("ninety"), html);
  assert.ok(!html.includes("unsupported-marker"));
  assert.match(visible(html), /Twins share rates Jonsson &amp; Stefansson \(2021\)\. Costs fell/);
});

test("leave: the prose as the server pruned it, no marker", () => {
  const html = r.renderTurn(TURN, { unsupported: "leave" });
  assert.match(visible(html), /The rate is ninety percent\. Costs fell/);
  assert.ok(!html.includes("unsupported-marker"));
});

test("a turn without unsupported claims (older records too) renders alike in every mode", () => {
  for (const mode of ["mark", "remove", "leave"]) assert.equal(r.renderTurn(RECORD, { unsupported: mode }), r.renderTurn(RECORD));
});

test("copy follows the setting, with citations shown or hidden", () => {
  const copy = (mode, visibleCitations) => {
    const record = { ...TURN, prose: proseAsChosen(TURN, TURN.prose, mode) };
    return visibleCitations ? recordWithAuthorYear(record) : recordWithoutCitations(record);
  };
  assert.equal(copy("mark", false), "Twins share rates. The rate is ninety percent [unsupported]. Costs fell.");
  assert.equal(copy("remove", false), "Twins share rates. Costs fell.");
  assert.equal(copy("leave", false), "Twins share rates. The rate is ninety percent. Costs fell.");
  assert.match(copy("mark", true), /^Twins share rates \(Jonsson & Stefansson, 2021\)\. The rate is ninety percent \[unsupported\]\. Costs fell/);
});

test("offsets are code points: a character outside the BMP before a claim does not shift it", () => {
  const prose = "Findings:\n\n- Rates vary [1].\n- Rates are fixed 𝑥.\n- Costs fell [1].";
  const CLAIM = TURN.unsupported[0];
  const record = { prose, unsupported: [{ ...CLAIM, start: 29, end: 49, at: 48 }] };
  const [claim] = unsupportedClaims(record, prose);
  assert.equal(prose.slice(claim.start, claim.end), "- Rates are fixed 𝑥.");
  assert.equal(proseAsChosen(record, prose, "remove"), "Findings:\n\n- Rates vary [1].\n- Costs fell [1].", "the emptied list item goes");
  assert.equal(proseAsChosen(record, prose, "mark"), "Findings:\n\n- Rates vary [1].\n- Rates are fixed 𝑥 [unsupported].\n- Costs fell [1].");
  const mid = "𝑥 grows [1] and 𝑦 falls sharply in every region.";
  const cut = proseAsChosen({ unsupported: [{ ...CLAIM, start: 12, end: 47, at: 47 }] }, mid, "remove");
  assert.equal(cut, "𝑥 grows [1].");
});

test("a claim that does not fit the prose is ignored rather than cut in the wrong place", () => {
  const CLAIM = TURN.unsupported[0];
  const prose = "Short.";
  assert.deepEqual(unsupportedClaims({ unsupported: [{ ...CLAIM, start: 2, end: 60, at: 3 }] }, prose), []);
  assert.deepEqual(unsupportedClaims({ unsupported: [{ ...CLAIM, start: 4, end: 5, at: 1 }] }, prose), []);
  assert.equal(withoutClaims("A. B. C.", [{ start: 3, end: 5 }, { start: 4, end: 5 }]), "A. C.");
});

test("the words: tooltip, the message line, and an unknown mode read as the default", () => {
  assert.equal(unsupportedTooltip({ probability: 0.4249 }), "Not supported by its cited passage (best p = 0.42)");
  const one = [{ index: 1, occurrence: 2 }];
  assert.equal(unsupportedTooltip({ probability: 0.2, unprinted_numbers: ["783"], occurrences: one }),
    "Not supported by its cited passage (best p = 0.20): the passage does not print 783");
  assert.equal(unsupportedTooltip({ probability: 0.2, unprinted_numbers: ["35", "120"], occurrences: [...one, ...one] }),
    "Not supported by its cited passage (best p = 0.20): none of its passages prints 35, 120");
  assert.equal(unsupportedLine(0), "");
  assert.equal(unsupportedLine(1), "1 unsupported claim");
  assert.equal(unsupportedLine(3), "3 unsupported claims");
  assert.equal(unsupportedMode("hide"), "mark");
  assert.equal(unsupportedMode("remove"), "remove");
});
