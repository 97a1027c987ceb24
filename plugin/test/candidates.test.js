import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { CandidateSelection, confirmationSummary, importChoices, importPlan, importReport, parseCreator, zoteroItemData } from "../content/core/candidates.js";

const CANDIDATES = JSON.parse(readFileSync(new URL("../../tests/ui/fixtures/candidates.json", import.meta.url)));

test("all unselected by default; select all / none; ticks survive a re-render", () => {
  const s = new CandidateSelection(CANDIDATES);
  assert.equal(s.selected.size, 0);
  assert.equal(s.summary(), "No papers selected");
  s.selectAll();
  assert.equal(s.allSelected, true);
  s.toggle("cand_03");
  assert.deepEqual(s.chosen().map((c) => c.candidate_id), ["cand_01", "cand_02"]);
  s.update(CANDIDATES.slice(0, 3));
  assert.equal(s.summary(), "2 of 3 selected");
  s.update(CANDIDATES.slice(1));
  assert.deepEqual([...s.selected], ["cand_02"]);
  s.toggle("unknown", true);
  assert.equal(s.selected.size, 1);
  s.selectNone();
  assert.equal(s.selected.size, 0);
});

test("confirmation lists titles and OA status and names the target", () => {
  const c = confirmationSummary(CANDIDATES, "Reading › RAG");
  assert.equal(c.headline, "Import 3 papers into Reading › RAG?");
  assert.deepEqual(c.lines.map((l) => l.oa), ["Open access (green)", "Open access (green)", "No open PDF"]);
  assert.equal(c.pdfNote, "2 with an open-access PDF to download; the others are imported as metadata only.");
  assert.equal(confirmationSummary(CANDIDATES.slice(0, 1), "").target, "My Library (no collection)");
});

test("import dialog choices: per library, '(no collection)' first, the host's selection preselected", () => {
  const targets = [
    { libraryID: 1, libraryId: "user", name: "My Library", filesEditable: true, selected: false, collections: [{ id: "7", name: "Inbox", selected: false }] },
    { libraryID: 3, libraryId: "group-4711", name: "Lab Papers", filesEditable: false, selected: true,
      collections: [{ id: "9", name: "Reading", selected: false }, { id: "10", name: "Reading › Methods", selected: true }] },
  ];
  const { groups, selected } = importChoices(targets);
  assert.deepEqual(groups.map((g) => [g.label, g.choices.map((c) => c.label)]),
    [["My Library", ["My Library (no collection)", "Inbox"]], ["Lab Papers", ["Lab Papers (no collection)", "Reading", "Reading › Methods"]]]);
  assert.deepEqual({ ...selected }, { libraryID: 3, libraryName: "Lab Papers", filesEditable: false, value: "3:10", collectionId: "10",
    label: "Reading › Methods", where: "Lab Papers › Reading › Methods" });
  assert.equal(new Set(groups.flatMap((g) => g.choices.map((c) => c.value))).size, 5, "every choice its own value");
  assert.equal(confirmationSummary(CANDIDATES, selected.where).headline, "Import 3 papers into Lab Papers › Reading › Methods?");
  // The library itself selected: its "(no collection)"; nothing selected: the first choice.
  targets[1].collections[1].selected = false;
  assert.deepEqual([importChoices(targets).selected.value, importChoices(targets).selected.collectionId], ["3:", ""]);
  targets[1].selected = false;
  assert.equal(importChoices(targets).selected.where, "My Library");
  assert.deepEqual(importChoices([]), { groups: [], selected: null });
});

test("Zotero item data: fields, creators, keyword tags, preprints", () => {
  const article = zoteroItemData(CANDIDATES[0]);
  assert.equal(article.itemType, "journalArticle");
  assert.equal(article.fields.DOI, "10.48550/arXiv.2310.11511");
  assert.equal(article.fields.date, "2024");
  assert.equal(article.fields.publicationTitle, "International Conference on Learning Representations");
  assert.deepEqual(article.creators[0], { firstName: "Akari", lastName: "Asai", creatorType: "author" });
  assert.deepEqual(article.tags, ["Retrieval-Augmented Generation", "Self-Reflection"]);
  const preprint = zoteroItemData(CANDIDATES[1]);
  assert.equal(preprint.itemType, "preprint");
  assert.equal(preprint.fields.archiveID, "arXiv:2401.15884");
  assert.equal(preprint.fields.url, "https://arxiv.org/abs/2401.15884");
  assert.deepEqual(parseCreator("Ludwig van Beethoven"), { firstName: "Ludwig", lastName: "van Beethoven", creatorType: "author" });
  assert.deepEqual(parseCreator("Curie, Marie"), { firstName: "Marie", lastName: "Curie", creatorType: "author" });
  assert.deepEqual(parseCreator("Plato"), { name: "Plato", creatorType: "author", fieldMode: 1 });
});

test("import plan pairs staged files; report counts each outcome", () => {
  const plan = importPlan(CANDIDATES, { batch_id: "b", files: [
    { candidate_id: "cand_01", status: "staged", object_name: "o1", sha256: "x", size: 1 },
    { candidate_id: "cand_02", status: "duplicate", reason: "already in your library" },
    { candidate_id: "cand_03", status: "no_pdf" },
  ] });
  assert.deepEqual(plan.map((p) => p.action), ["pdf", "skip", "metadata"]);
  const report = importReport([
    { title: "A", status: "imported" }, { title: "B", status: "skipped", note: "dup" }, { title: "C", status: "metadata" }]);
  assert.equal(report.headline, "1 imported with PDF, 1 imported as metadata only, 1 skipped (already in your library).");
});
