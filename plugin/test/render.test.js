import { test } from "node:test";
import assert from "node:assert/strict";
import markdownit from "markdown-it";
import katex from "katex";
import { createRenderer } from "../content/core/render.js";
import { occurrenceBadge, pagesText, pillTooltip, quoteScores, supportBadge, supportLevel, throttle } from "../content/core/format.js";
import { QUOTED_RECORD, RECORD, RECORD_V2 } from "./fixtures.js";
import { passagePlace } from "../content/core/evidence.js";

const r = createRenderer({ markdownit, katex });

test("pills are author-year with per-occurrence tooltips; demoted occurrences are skipped", () => {
  const html = r.renderTurn(RECORD);
  const pills = [...html.matchAll(/<span class="citation-pill"[^>]*data-citation-idx="(\d+)" data-citation-occ="(\d+)" title="([^"]*)">([^<]*)</g)];
  assert.deepEqual(pills.map((m) => [m[1], m[2], m[4]]), [
    ["1", "1", "Jonsson &amp; Stefansson (2021)"], ["2", "1", "Vaswani et al. (2017)"], ["3", "1", "Vaswani et al. (2017)"],
    ["1", "3", "Jonsson &amp; Stefansson (2021)"]]);
  assert.equal(pills[0][3], "Title: Somatic rates&#10;Section: Methods&#10;Support probability: 0.91");
  assert.equal(pills[3][3], "Title: Somatic rates&#10;Section: Methods&#10;Support probability: 0.65");
  assert.match(pills[1][3], /Support probability: not verified/);
  assert.match(html, /<span class="citation-pill-group"><span class="citation-pill"[^]*?data-citation-idx="2"[^]*?<span class="pill-sep">; <\/span><span class="citation-pill"[^]*?data-citation-idx="3"/);
});

test("a quoted occurrence's pill says it is quoted from its passage, not a support probability; a claim beside it as before", () => {
  const pills = [...r.renderTurn(QUOTED_RECORD).matchAll(/<span class="citation-pill"[^>]*data-citation-idx="(\d+)" data-citation-occ="(\d+)" title="([^"]*)">/g)]
    .map((m) => [m[1], m[2], m[3]]);
  assert.deepEqual(pills, [
    ["1", "1", "Title: Crystal structures of sACE with 33RE&#10;Section: Abstract&#10;Quoted from this passage"],
    ["2", "1", "Title: Crystal structures of sACE with 33RE&#10;Section: Results&#10;Quoted from this passage"],
    ["1", "2", "Title: Crystal structures of sACE with 33RE&#10;Section: Abstract&#10;Quoted from this passage"],
    ["2", "2", "Title: Crystal structures of sACE with 33RE&#10;Section: Results&#10;Support probability: 0.88"],
  ]);
  assert.equal(pillTooltip({ title: "T" }, { probability: 0.81, quoted: true, relevance: 0.93 }), "Title: T\nQuoted from this passage");
  assert.equal(pillTooltip({ title: "T" }, { probability: 0.81, quoted: false, relevance: null }), "Title: T\nSupport probability: 0.81");
  // Escaped like every tooltip: a title cannot close the attribute.
  const html = r.pillHtml({ index: 1, title: 'A "quoted" <title>' }, { occurrence: 1, probability: 0.8, quoted: true });
  assert.match(html, /title="Title: A &quot;quoted&quot; &lt;title&gt;&#10;Quoted from this passage"/);
});

test("a citation names the printed page of its passage, both pages when it runs on", () => {
  const pages = { index: 3, label: "1236", last_index: null, last_label: null, printed: true };
  assert.equal(pagesText(pages), "p. 1236");
  assert.equal(pagesText({ ...pages, last_index: 4, last_label: "1237" }), "pp. 1236–1237");
  assert.equal(pagesText({ index: 4, label: "5", printed: false }), "p. 5"); // no printed number: its place in the file
  assert.equal(pagesText(null), "");
  assert.equal(pagesText(undefined), ""); // a turn stored before pages
  assert.equal(pillTooltip({ title: "T", section: "Results", pages }, { probability: 0.81 }),
    "Title: T\nSection: Results\nPage: p. 1236\nSupport probability: 0.81");
  assert.equal(pillTooltip({ title: "T", pages: null }, { probability: 0.81 }), "Title: T\nSupport probability: 0.81");
  // the popover's page badge, and the locator of pills of one item's passages
  assert.equal(passagePlace({ pages: { ...pages, last_index: 4, last_label: "1237" }, section: "Results" }), "pp. 1236–1237 · § Results");
});

test("sources render from references, considered ones collapsible, keys only in data attributes", () => {
  const html = r.renderTurn(RECORD);
  assert.match(html, /<h3 class="sources-heading">Cited Sources<\/h3>/);
  assert.match(html, /<details class="considered-sources"><summary>1 additional source analyzed by search agent<\/summary>/);
  const visible = html.replace(/<[^>]+>/g, "");
  assert.ok(!visible.includes("ITEM"), "an item key is visible");
  assert.ok(!html.includes("&lt;span"), "the text's own HTML leaked as text");
});

test("an item read only by its abstract says so in its tier", () => {
  const [first, ...rest] = RECORD.references.cited;
  const html = r.renderTurn({ ...RECORD, references: { ...RECORD.references, cited: [{ ...first, abstract_only: true }, ...rest] } });
  const cited = html.split('<ul class="sources-list cited">')[1].split("</ul>")[0];
  assert.equal((cited.match(/class="abstract-only"/g) || []).length, 1);
  assert.match(cited, /^<li>[^]*?\(abstract only\)<\/span><\/span><\/li>/);
  assert.ok(!r.renderTurn(RECORD).includes("abstract only"));
});

test("a refusal lists no cited sources, only what was searched", () => {
  const refused = {
    ...RECORD, text: "I could not find a passage in your library that addresses this question.", citations: [],
    references: { cited: [], considered: [...RECORD.references.cited, ...RECORD.references.considered],
                  considered_summary: "Searched 12 passages from 2 items" },
  };
  const html = r.renderTurn(refused);
  assert.ok(!html.includes("Cited Sources"), "a refusal shows a cited tier");
  assert.match(html, /<details class="considered-sources"><summary>Searched 12 passages from 2 items<\/summary>/);
  const hostile = { ...refused, references: { ...refused.references, considered_summary: "<b>x</b>" } };
  assert.ok(!r.renderTurn(hostile).includes("<b>x</b>"), "the summary line is escaped");
});

test("source links name their library (\"user\" for references stored before group libraries)", () => {
  const record = structuredClone(RECORD);
  record.references.cited[1].library_id = "group-4711";
  const links = [...r.renderTurn(record).matchAll(/data-item-key="([^"]*)" data-library-id="([^"]*)"/g)].map((m) => [m[1], m[2]]);
  assert.deepEqual(links, [["ITEMAAAA", "user"], ["ITEMBBBB", "group-4711"], ["ITEMDDDD", "user"]]);
});

test("raw HTML from the model is escaped, never rendered", () => {
  const html = r.renderTurn({ ...RECORD, text: "<img src=x onerror=alert(1)> [1]", references: {} });
  assert.ok(!html.includes("<img"));
  assert.match(html, /&lt;img/);
});

test("math renders with KaTeX inline and display; prices are not math", () => {
  assert.match(r.markdown("Rate $\\mu = 10^{-8}$ per site."), /class="katex"/);
  assert.match(r.markdown("$$\n\\sum_i x_i\n$$"), /class="math-block"><span class="katex-display"/);
  assert.match(r.markdown("Inline \\(a^2\\) too"), /class="katex"/);
  assert.ok(!/katex/.test(r.markdown("It costs $5 and $10.")));
  assert.match(r.markdown("```\n$x$ [1]\n```"), /<code>\$x\$ \[1\]/);
});

test("streaming text shows neutral pending pills", () => {
  const html = r.renderStreaming("A claim [1] and [2, 3]");
  assert.match(html, /<span class="citation-pill pending" title="Being verified">1<\/span>/);
  assert.match(html, />2, 3</);
});

test("discovery turns link [n] to candidate cards", () => {
  const html = r.renderTurn({ intent: "discovery", text: "See [1].", candidates: [{ candidate_id: "c", title: "Self-RAG", authors: ["Akari Asai", "B"], year: 2024 }] });
  assert.match(html, /<span class="candidate-pill"[^>]*data-candidate-idx="1"[^>]*>Asai et al\. \(2024\)<\/span>/);
});

test("support badges at 0.80 / 0.50", () => {
  assert.deepEqual([0.8, 0.79, 0.5, 0.49, null].map(supportLevel), ["high", "moderate", "moderate", "low", "unverified"]);
  assert.deepEqual(supportBadge(0.98), { level: "high", text: "✓ Support Probability: 0.98" });
  assert.deepEqual(supportBadge(0.65), { level: "moderate", text: "ⓘ Support Probability: 0.65" });
  assert.deepEqual(supportBadge(0.42), { level: "low", text: "Support Probability: 0.42" });
  assert.equal(pillTooltip({ title: "T" }, { probability: 0.5 }), "Title: T\nSupport probability: 0.50");
});

test("a quote's badge is the neutral quote badge whatever the verifier said; a claim's (or an old turn's) its support badge", () => {
  const [kept, failOpen, demoted] = QUOTED_RECORD.citations[0].occurrences;
  for (const occ of [kept, failOpen, demoted]) assert.deepEqual(occurrenceBadge(occ), { level: "quote", text: "Quoted from this passage" });
  assert.deepEqual(occurrenceBadge(QUOTED_RECORD.citations[1].occurrences[1]), supportBadge(0.88));
  assert.deepEqual(occurrenceBadge(RECORD.citations[0].occurrences[0]), { level: "high", text: "✓ Support Probability: 0.91" });
  assert.deepEqual(occurrenceBadge(RECORD.citations[1].occurrences[0]), { level: "unverified", text: "Support not verified" });
  assert.deepEqual(occurrenceBadge(null), { level: "unverified", text: "Support not verified" });
  assert.deepEqual(occurrenceBadge({ probability: 0.9, quoted: "yes" }), supportBadge(0.9), "only quoted: true marks a quote");
  assert.equal(quoteScores(kept), "verifier p = 0.810 · relevance 0.930");
  assert.equal(quoteScores(failOpen), "verifier p = — · relevance 1.210");
  assert.equal(quoteScores(demoted), "verifier p = 0.300");
});

test("throttle runs at most once per window and always runs the last call", () => {
  let now = 0;
  const timers = [];
  let runs = 0;
  const t = throttle(() => { runs += 1; }, 50, { now: () => now, schedule: (fn, ms) => timers.push([fn, now + ms]), cancel: () => {} });
  t(); t(); t();
  assert.equal(timers.length, 1);
  now = 0; timers.shift()[0]();
  assert.equal(runs, 1);
  t(); t();
  assert.equal(timers[0][1], 50);
  now = 50; timers.shift()[0]();
  assert.equal(runs, 2);
});

test("a turn renders its prose field; only a record without one has its text split", () => {
  assert.equal(r.renderTurn({ ...RECORD_V2, text: "not read" }), r.renderTurn(RECORD));
  const ownHeading = { ...RECORD_V2, prose: "A model's own\n\n# Cited Sources\nheading stays [1].", sources: "" };
  assert.match(r.renderTurn(ownHeading), /heading stays/);
});
