// core/note.js: an answer as a Zotero note (HTML in the note editor's subset) and as Markdown,
// and the provenance note of an item imported from discovery.
import { test } from "node:test";
import assert from "node:assert/strict";
import markdownit from "markdown-it";
import katex from "katex";
import { createRenderer } from "../content/core/render.js";
import {
  answerNoteHtml, answerNoteMarkdown, candidateMentions, citedSources,
  provenanceNoteHtml, zoteroSelectUri,
} from "../content/core/note.js";
import { RECORD, RECORD_V2 } from "./fixtures.js";

const { md } = createRenderer({ markdownit, katex });
const ALLOWED = new Set(["p", "h1", "h2", "h3", "ul", "ol", "li", "a", "strong", "em", "blockquote"]);
const tagsOf = (html) => new Set([...html.matchAll(/<\/?([a-z0-9]+)/g)].map((m) => m[1]));

// A record citing one item of My Library and one of a group library, with markup everywhere.
const GROUP_RECORD = {
  turn_id: "t9", session_id: "s9", intent: "library", question: "Does <script>alert(1)</script> & co. matter?",
  prose: "## Findings\n\nTwins differ [1]. Groups agree [2]; both do [1, 2]. Code `[1]` stays.\n\n" +
    "- A <b>raw</b> claim [2]\n- $x^2$ rises\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\ncode [1]\n```\n",
  sources: "",
  citations: [
    { index: 1, chunk_id: "c1", item_key: "ITEMAAAA", library_id: "user", title: "Rates & <i>twins</i>", authors: "O'Brien & Smith", year: 2021,
      quote: "q", survives: true, occurrences: [] },
    { index: 2, chunk_id: "c2", item_key: "GRPKEY22", library_id: "group-4711", title: "Group paper", authors: "Lee et al.", year: null,
      publication: "J. <Tests>", quote: "q", survives: true, occurrences: [] },
  ],
  references: {
    cited: [
      { item_key: "ITEMAAAA", library_id: "user", title: "Rates & <i>twins</i>", authors: "O'Brien & Smith", year: 2021 },
      { item_key: "GRPKEY22", library_id: "group-4711", title: "Group paper", authors: "Lee et al.", year: null, publication: "J. <Tests>" },
    ],
    considered: [{ item_key: "ITEMCCCC", library_id: "user", title: "Considered only", authors: "Doe", year: 2000 }],
  },
};

test("zotero:// links select an item in My Library, or in its group library by group id", () => {
  assert.equal(zoteroSelectUri({ item_key: "ABCD2345", library_id: "user" }), "zotero://select/library/items/ABCD2345");
  assert.equal(zoteroSelectUri({ item_key: "ABCD2345" }), "zotero://select/library/items/ABCD2345");
  assert.equal(zoteroSelectUri({ item_key: "ABCD2345", library_id: "group-4711" }), "zotero://select/groups/4711/items/ABCD2345");
});

test("the note: the question as heading, each token an author-year link to its item, a linked References list", () => {
  const html = answerNoteHtml(GROUP_RECORD, { md });
  assert.ok(html.startsWith("<h1>Does &lt;script&gt;alert(1)&lt;/script&gt; &amp; co. matter?</h1>\n<h2>Findings</h2>\n"));
  assert.match(html, /<p>Twins differ \(<a href="zotero:\/\/select\/library\/items\/ITEMAAAA">O&#39;Brien &amp; Smith, 2021<\/a>\)\. /);
  assert.match(html, /Groups agree \(<a href="zotero:\/\/select\/groups\/4711\/items\/GRPKEY22">Lee et al\., n\.d\.<\/a>\); /);
  assert.match(html, /both do \(<a href="[^"]*ITEMAAAA">O&#39;Brien &amp; Smith, 2021<\/a>; <a href="[^"]*GRPKEY22">Lee et al\., n\.d\.<\/a>\)\./);
  assert.match(html, /Code \[1\] stays\./, "a token in code is text, not a citation");
  assert.match(html, /<li>A &lt;b&gt;raw&lt;\/b&gt; claim \(<a /, "raw HTML in the prose is escaped");
  assert.match(html, /<li>\$x\^2\$ rises<\/li>/, "math as its TeX");
  assert.match(html, /<p>a \| b<\/p>\n<p>1 \| 2<\/p>/, "a table row as a paragraph");
  assert.match(html, /<p>code \[1\]<\/p>/);
  assert.match(html, /<h2>References<\/h2>\n<ul>\n<li><a href="zotero:\/\/select\/library\/items\/ITEMAAAA">O&#39;Brien &amp; Smith \(2021\)<\/a>\. <em>Rates &amp; &lt;i&gt;twins&lt;\/i&gt;<\/em>\.<\/li>\n/);
  assert.match(html, /<li><a href="zotero:\/\/select\/groups\/4711\/items\/GRPKEY22">Lee et al\. \(n\.d\.\)<\/a>\. <em>Group paper<\/em>\. J\. &lt;Tests&gt;\.<\/li>/);
  assert.doesNotMatch(html, /Considered only/, "the bibliography is of the cited sources");
  assert.deepEqual([...tagsOf(html)].filter((t) => !ALLOWED.has(t)), [], "only the note editor's subset");
  assert.doesNotMatch(html, /<script|<b>|<i>|[\ue001\ue002]/);
});

test("a cited passage's page joins its citation; a source read only by its abstract says so in References", () => {
  const record = {
    ...GROUP_RECORD, prose: "Twins differ [1]. Groups agree [2].",
    citations: [{ ...GROUP_RECORD.citations[0], pages: { index: 4, label: "1236", last_index: 5, last_label: "1237", printed: true } },
      GROUP_RECORD.citations[1]],
    references: { cited: [GROUP_RECORD.references.cited[0], { ...GROUP_RECORD.references.cited[1], abstract_only: true }] },
  };
  const html = answerNoteHtml(record, { md });
  assert.match(html, /Twins differ \(<a href="[^"]*ITEMAAAA">O&#39;Brien &amp; Smith, 2021, pp\. 1236–1237<\/a>\)\. Groups agree \(<a href="[^"]*GRPKEY22">Lee et al\., n\.d\.<\/a>\)\./);
  assert.match(html, /J\. &lt;Tests&gt;\. \(abstract only\)<\/li>/);
  const text = answerNoteMarkdown(record);
  assert.match(text, /\(\[O'Brien & Smith, 2021, pp\. 1236–1237\]\(zotero:\/\/select\/library\/items\/ITEMAAAA\)\)/);
  assert.match(text, /J\. <Tests>\. \(abstract only\)\n$/);
});

test("a compound token of one item's two passages is one link; a record without references lists its citations' items", () => {
  const html = answerNoteHtml(RECORD_V2, { md });
  assert.match(html, /Attention maps queries \(<a href="zotero:\/\/select\/library\/items\/ITEMBBBB">Vaswani et al\., 2017<\/a>\)\./);
  assert.equal((html.match(/<li>/g) || []).length, 2);
  const bare = { ...RECORD_V2, references: { cited: [], considered: [] } };
  assert.deepEqual(citedSources(bare).map((s) => s.item_key), ["ITEMAAAA", "ITEMBBBB"]);
  assert.match(answerNoteHtml(bare, { md }), /<h2>References<\/h2>[^]*Jonsson &amp; Stefansson \(2021\)[^]*Vaswani et al\. \(2017\)/);
  // A version 1 record (text only): its prose is split from its source sections.
  assert.match(answerNoteHtml(RECORD, { md }), /^<h1>What about twins\?<\/h1>\n<p>Mutation rates[^]*<\/p>\n<h2>References<\/h2>/);
  assert.doesNotMatch(answerNoteHtml(RECORD, { md }), /Cited Sources|data-item-key/);
});

test("unsupported claims: none marked by default; marked where their citation stood, or removed, as the setting says", () => {
  const prose = "Rates rose in twins [1]. Nobody checked this. Attention works [2].";
  const record = { ...RECORD_V2, prose, unsupported: [{ start: 25, end: 45, at: 44, probability: 0.2, occurrences: [] }] };
  assert.match(answerNoteHtml(record, { md }), /Nobody checked this\. Attention/);
  assert.match(answerNoteHtml(record, { md, mode: "mark" }), /Nobody checked this \[unsupported\]\. Attention/);
  assert.doesNotMatch(answerNoteHtml(record, { md, mode: "remove" }), /Nobody/);
  assert.match(answerNoteMarkdown(record, { mode: "mark" }), /Nobody checked this \[unsupported\]\./);
  assert.match(answerNoteMarkdown(record, { mode: "remove" }), /Rates rose in twins[^]*Attention works/);
  assert.doesNotMatch(answerNoteMarkdown(record, { mode: "remove" }), /Nobody/);
});

test("the Markdown download: heading, author-year links (group libraries too), a References list", () => {
  const text = answerNoteMarkdown(GROUP_RECORD);
  assert.ok(text.startsWith("# Does <script>alert(1)</script> & co. matter?\n\n## Findings\n\n"));
  assert.match(text, /Twins differ \(\[O'Brien & Smith, 2021\]\(zotero:\/\/select\/library\/items\/ITEMAAAA\)\)\./);
  assert.match(text, /both do \(\[O'Brien & Smith, 2021\]\([^)]*ITEMAAAA\); \[Lee et al\., n\.d\.\]\(zotero:\/\/select\/groups\/4711\/items\/GRPKEY22\)\)\./);
  assert.match(text, /Code `\[1\]` stays\./);
  assert.match(text, /\n## References\n\n- \[O'Brien & Smith \(2021\)\]\(zotero:\/\/select\/library\/items\/ITEMAAAA\)\. \*Rates & <i>twins<\/i>\*\.\n/);
  assert.match(text, /- \[Lee et al\. \(n\.d\.\)\]\(zotero:\/\/select\/groups\/4711\/items\/GRPKEY22\)\. \*Group paper\*\. J\. <Tests>\.\n$/);
  // Brackets in a label cannot end its link early.
  const odd = { ...GROUP_RECORD, citations: [{ ...GROUP_RECORD.citations[0], authors: "[Anon]" }], prose: "X [1]." };
  assert.match(answerNoteMarkdown(odd), /X \(\[\\\[Anon\\\], 2021\]\(zotero:/);
  // An answer without citations is its prose alone.
  assert.equal(answerNoteMarkdown({ question: "Hi?", prose: "Hello.", citations: [], references: {} }), "# Hi?\n\nHello.\n");
});

test("what an overview says about each candidate: sentences naming or citing it; else its numbered line", () => {
  const llm = "Candidate 2 (Smith et al. (2021)) introduces **reflection** tokens. Candidates 1 and 3 compare retrievers.\n\n" +
    "The field moves fast. Only one cites [3]; candidate 9 does not exist.\n\n_Note: Searched for “rag”, candidate 1._";
  assert.deepEqual(candidateMentions(llm, 3), [
    ["Candidates 1 and 3 compare retrievers."],
    ["Candidate 2 (Smith et al. (2021)) introduces reflection tokens."],
    ["Candidates 1 and 3 compare retrievers.", "Only one cites; candidate 9 does not exist."],
  ]);
  const offline = "I found 2 candidate papers not yet in your library:\n\n1. **Self-RAG** (Asai; 2024; ICLR) — open access PDF available\n" +
    "2. **CRAG** (Yan; 2024)\n\nTick the papers you want and import them into Zotero.";
  assert.deepEqual(candidateMentions(offline, 2), [["Self-RAG (Asai; 2024; ICLR) — open access PDF available"], ["CRAG (Yan; 2024)"]]);
  assert.deepEqual(candidateMentions("Nothing about them.", 2), [[], []]);
});

test("the provenance note: the question, the date found (ISO), what the overview said, all escaped", () => {
  const record = {
    intent: "discovery", question: "Find <recent> papers on RAG & co", completed_at: "2026-11-30T23:10:00Z",
    prose: "Candidate 1 is <b>the</b> best. Candidate 2 is older.",
    candidates: [{ candidate_id: "cand_1", title: "A" }, { candidate_id: "cand_2", title: "B" }, { candidate_id: "cand_3", title: "C" }],
  };
  const html = provenanceNoteHtml(record, record.candidates[0]);
  assert.equal(html, "<h2>Found with Zocrates</h2>\n<p><strong>Question:</strong> Find &lt;recent&gt; papers on RAG &amp; co</p>\n" +
    "<p><strong>Found:</strong> 2026-11-30</p>\n<p><strong>What the overview said:</strong></p>\n" +
    "<blockquote><p>Candidate 1 is &lt;b&gt;the&lt;/b&gt; best.</p></blockquote>\n");
  assert.match(provenanceNoteHtml(record, record.candidates[2]), /<p>The overview did not discuss it beyond finding it\.<\/p>/);
  const undated = provenanceNoteHtml({ ...record, completed_at: undefined }, record.candidates[1], new Date("2027-01-02T10:00:00Z"));
  assert.match(undated, /<strong>Found:<\/strong> 2027-01-02<\/p>/);
  assert.deepEqual([...tagsOf(html)].filter((t) => !ALLOWED.has(t)), []);
});
