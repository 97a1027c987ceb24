// Used by tests/ui/test_citation_parity.py: applies the JS mirror to cases the Python
// citation core produced, so the two can be compared byte for byte.
import { readFileSync, writeFileSync } from "node:fs";
import { mask, recordWithAuthorYear, recordWithoutCitations, stripCitations, toAuthorYear } from "../content/core/citations.js";

// JS strings index UTF-16 units, Python's code points: one masked unit per code point.
function byCodePoint(text, masked) {
  let out = "";
  let i = 0;
  for (const ch of text) {
    out += ch === masked.slice(i, i + ch.length) ? ch : masked[i];
    i += ch.length;
  }
  return out;
}

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = cases.map((c) => ({
  masked: byCodePoint(c.raw, mask(c.raw).masked),
  strip_raw: stripCitations(c.raw),
  author_year: toAuthorYear(c.record.text, c.record.citations, c.record.references),
  strip: stripCitations(c.record.text),
  record_author_year: recordWithAuthorYear(c.record),
  record_strip: recordWithoutCitations(c.record),
}));
writeFileSync(process.argv[3], JSON.stringify(out));
