import { test } from "node:test";
import assert from "node:assert/strict";
import {
  findTokens, hasCitations, mask, recordWithAuthorYear, recordWithoutCitations, splitSources, stripCitations, toAuthorYear,
} from "../content/core/citations.js";
import { RECORD, RECORD_V2 } from "./fixtures.js";

test("author-year copy replaces tokens and appends a clean two-tier bibliography", () => {
  const out = toAuthorYear(RECORD.text, RECORD.citations, RECORD.references);
  assert.equal(out,
    "Mutation rates were estimated from twins (Jonsson & Stefansson, 2021). Attention maps queries (Vaswani et al., 2017). " +
    "Again twins (Jonsson & Stefansson, 2021).\n\n# Cited Sources\n" +
    "- **Jonsson & Stefansson (2021)**. *Somatic rates*. Nature Genetics.\n- **Vaswani et al. (2017)**. *Attention Is All You Need*.\n\n" +
    "## Other Considered Sources\n- **Doe (n.d.)**.");
  assert.ok(!/ITEM/.test(out));
});

test("strip removes tokens and source sections, keeps code byte for byte", () => {
  assert.equal(stripCitations(RECORD.text), "Mutation rates were estimated from twins. Attention maps queries. Again twins.");
  assert.equal(stripCitations("Use `a[1]` here [2].\n```\nx[1]\n```"), "Use `a[1]` here.\n```\nx[1]\n```");
  assert.equal(stripCitations("[1] opens a line"), "opens a line");
});

test("tokens: compound, prefixed and fullwidth forms; links and code are not tokens", () => {
  const t = (s) => findTokens(mask(s).masked, 99).map((x) => x.indices);
  assert.deepEqual(t("a [1, 2] b [E3] c [Chunk 4] d 【5】 e [1;1]"), [[1, 2], [3], [4], [5], [1]]);
  assert.deepEqual(t("[1](http://x) `[2]` ![i](x[3].png)"), []);
});

test("sources are split only outside code", () => {
  assert.deepEqual(splitSources("```\n# Cited Sources\n```\nx"), ["```\n# Cited Sources\n```\nx", ""]);
  assert.equal(splitSources("x\n# Cited Sources\n- a")[1], "# Cited Sources\n- a");
});

test("hasCitations gates the toggle", () => {
  assert.equal(hasCitations(RECORD), true);
  assert.equal(hasCitations({ text: "Hello there." }), false);
  assert.equal(hasCitations({ text: "Code `[1]` only." }), false);
});

test("author-year copy finds a group library's source by its key and data-library-id", () => {
  const record = structuredClone(RECORD);
  Object.assign(record.citations[2], { item_key: "ITEMGGGG", library_id: "group-4711", authors: "Group Author", title: "Another paper", year: 2019 });
  // A My Library item with the same key must not be taken for the group's.
  record.references.cited.push({ item_key: "ITEMGGGG", title: "Not this one", authors: "Wrong Author", year: 2001 });
  record.references.cited.push({ library_id: "group-4711", item_key: "ITEMGGGG", title: "Another paper", authors: "Group Author", year: 2019 });
  record.text = record.text.replace("</span>\n\n## Other",
    "</span>\n- <span class=\"zotero-source-link\" data-item-key=\"ITEMGGGG\" data-library-id=\"group-4711\">**Group Author (2019)**.</span>\n\n## Other");
  const out = toAuthorYear(record.text, record.citations, record.references);
  assert.match(out, /Attention maps queries \(Vaswani et al\., 2017; Group Author, 2019\)\./);
  assert.match(out, /- \*\*Vaswani et al\. \(2017\)\*\*\. \*Attention Is All You Need\*\.\n- \*\*Group Author \(2019\)\*\*\. \*Another paper\*\.\n/);
  assert.ok(!out.includes("Wrong Author"));
});

test("a record is copied from its prose and sources, never by splitting its text (issue 15)", () => {
  const parts = { ...RECORD_V2, text: "not read" };
  assert.equal(recordWithAuthorYear(parts), toAuthorYear(RECORD.text, RECORD.citations, RECORD.references));
  assert.equal(recordWithoutCitations(parts), stripCitations(RECORD.text));
  assert.equal(hasCitations({ ...parts, citations: [], references: {} }), true);  // its sources
  assert.equal(hasCitations({ prose: "Hello there.", sources: "", text: "[1]" }), false);
});

test("a record from a gateway before TurnRecord version 2 (text only) is split as before", () => {
  assert.equal(recordWithAuthorYear(RECORD), recordWithAuthorYear(RECORD_V2));
  assert.equal(recordWithoutCitations(RECORD), recordWithoutCitations(RECORD_V2));
});
