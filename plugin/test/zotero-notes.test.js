// Notes the plugin writes into Zotero (host/zotero-notes.js through host/zotero.js), against the
// fake Zotero: an answer saved standalone where the pane points or under a cited item, in one
// transaction; and the provenance note each item imported from discovery gets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import vm from "node:vm";
import { createFakeZotero, fakeWindow, fakeZoteroPane, ZOTERO_VERSIONS } from "./fake-zotero.js";
import { fakeGateway } from "./fake-gateway.js";
import { createHost } from "../content/host/zotero.js";
import { provenanceNoteHtml } from "../content/core/note.js";

function zoteroWithPlugin({ version } = {}) {
  const Zotero = createFakeZotero({ version });
  const ctx = {};
  vm.runInNewContext(`${readFileSync(new URL("../content/zotero/prefs.js", import.meta.url), "utf8")}\nthis.ZocratesPrefs = ZocratesPrefs;`, ctx);
  Zotero.Zocrates = { prefs: ctx.ZocratesPrefs.create(Zotero.Prefs), suppressedItemIDs: new Set(), libraryObserverOwner: null };
  const pane = fakeZoteroPane(Zotero);
  Zotero.getActiveZoteroPane = () => pane;
  return { Zotero, pane, host: createHost(fakeWindow(Zotero), Zotero) };
}

const HTML = "<h1>What about twins?</h1>\n<p>Rates rose (<a href=\"zotero://select/library/items/ITEMAAAA\">Smith, 2021</a>).</p>\n";

for (const version of ZOTERO_VERSIONS) {
  test(`Zotero ${version}: a standalone note goes into the collection selected in the pane, in one transaction`, async () => {
    const { Zotero, pane, host } = zoteroWithPlugin({ version });
    const lab = Zotero.Libraries.addGroup({ groupID: 4711, name: "Lab Papers" });
    const reading = Zotero.createCollection("Reading", null, lab.libraryID);
    const methods = Zotero.createCollection("Methods", reading.id, lab.libraryID);
    await pane.collectionsView.selectCollection(methods.id);
    assert.equal(host.noteWhere(), "Lab Papers › Reading › Methods");
    const before = Zotero.DB.transactions;
    const saved = await host.saveNote(HTML, { parent: null });
    assert.equal(Zotero.DB.transactions - before, 1);
    assert.equal(saved.where, "in Lab Papers › Reading › Methods");
    const note = Zotero.Items.getByLibraryAndKey(lab.libraryID, saved.key);
    assert.ok(note.isNote() && note.isTopLevelItem());
    assert.equal(note.getNote(), HTML.trim());
    assert.deepEqual(note.getCollections(), [methods.id]);

    // A library row: the note goes to the library's root.
    await pane.collectionsView.selectLibrary(Zotero.Libraries.userLibraryID);
    const root = await host.saveNote(HTML);
    assert.equal(root.where, "in My Library");
    const mine = Zotero.Items.getByLibraryAndKey(Zotero.Libraries.userLibraryID, root.key);
    assert.deepEqual(mine.getCollections(), []);
    assert.deepEqual([Zotero.errors, Zotero.warnings], [[], []]);
  });
}

test("a child note goes under the cited item, looked up in its own library (a group's key is not My Library's)", async () => {
  const { Zotero, host } = zoteroWithPlugin();
  const lab = Zotero.Libraries.addGroup({ groupID: 4711, name: "Lab Papers" });
  const { item: mine } = await Zotero.addItem({ fields: { title: "Mine" } });
  const { item: theirs } = await Zotero.addItem({ fields: { title: "Group paper" }, libraryID: lab.libraryID });
  const before = Zotero.DB.transactions;
  const saved = await host.saveNote(HTML, { parent: { item_key: theirs.key, library_id: "group-4711" } });
  assert.equal(Zotero.DB.transactions - before, 1);
  assert.equal(saved.where, "under “Group paper”");
  assert.deepEqual(theirs.getNotes().map((id) => Zotero.Items.get(id).getNote()), [HTML.trim()]);
  const note = Zotero.Items.get(theirs.getNotes()[0]);
  assert.equal(note.libraryID, lab.libraryID);
  assert.equal(note.parentKey, theirs.key);
  assert.deepEqual(note.getCollections(), []);
  assert.deepEqual(mine.getNotes(), []);
  // A key of another library is not found there: a clear error, nothing written.
  await assert.rejects(host.saveNote(HTML, { parent: { item_key: mine.key, library_id: "group-4711" } }),
    /no longer in the group library “Lab Papers”/);
  await assert.rejects(host.saveNote(HTML, { parent: { item_key: "ZZZZZZZZ", library_id: "user" } }), /no longer in My Library/);
  assert.equal((await Zotero.Items.getAll(lab.libraryID)).length, 2);
});

test("a read-only library takes no note, standalone or child: a clear error before anything is written", async () => {
  const { Zotero, pane, host } = zoteroWithPlugin();
  const shared = Zotero.Libraries.addGroup({ groupID: 99, name: "Shared" });
  const { item } = await Zotero.addItem({ fields: { title: "Shared paper" }, libraryID: shared.libraryID });
  shared.editable = false; // the group's owner made it read-only since
  await pane.collectionsView.selectLibrary(shared.libraryID);
  assert.throws(() => host.noteWhere(), /You cannot add notes to “Shared” \(it is read-only\)/);
  const before = Zotero.DB.transactions;
  await assert.rejects(host.saveNote(HTML), /You cannot add notes to “Shared”/);
  await assert.rejects(host.saveNote(HTML, { parent: { item_key: item.key, library_id: "group-99" } }), /You cannot add notes to “Shared”/);
  assert.equal(Zotero.DB.transactions, before, "no transaction was opened");
  assert.deepEqual(item.getNotes(), []);
});

test("import: each item gets its provenance note as a child, in the import's one transaction, sent with the items", async () => {
  const { Zotero, host } = zoteroWithPlugin();
  const api = fakeGateway({ staged: new Map() });
  await host.startLibrarySync(api, () => {});
  api.calls.length = 0;
  const record = {
    intent: "discovery", question: "Find papers on self-reflection", completed_at: "2026-11-30T10:00:00Z",
    prose: "Candidate 1 (Asai, 2024) adds reflection tokens. Candidate 2 grades retrieval.",
    candidates: [
      { candidate_id: "cand_1", title: "Self-RAG", authors: ["Akari Asai"], year: 2024 },
      { candidate_id: "cand_2", title: "CRAG", authors: ["Shi-Qi Yan"], year: 2024 },
    ],
  };
  const plan = record.candidates.map((candidate) => ({ candidate, file: { status: "no_pdf" }, action: "metadata",
    note: provenanceNoteHtml(record, candidate) }));
  const before = Zotero.DB.transactions;
  const { results } = await host.importBatch(plan, { collectionId: "", api });
  assert.equal(Zotero.DB.transactions - before, 1, "items and their notes in ONE transaction");
  assert.deepEqual(results.map((r) => r.status), ["metadata", "metadata"]);
  const items = await Zotero.Items.getAll(1, true);
  for (const [i, title] of ["Self-RAG", "CRAG"].entries()) {
    const item = items.find((it) => it.getField("title") === title);
    const notes = item.getNotes().map((id) => Zotero.Items.get(id).getNote());
    assert.equal(notes.length, 1);
    assert.match(notes[0], /<p><strong>Question:<\/strong> Find papers on self-reflection<\/p>/);
    assert.match(notes[0], /<p><strong>Found:<\/strong> 2026-11-30<\/p>/);
    assert.match(notes[0], i === 0 ? /<blockquote><p>Candidate 1 \(Asai, 2024\) adds reflection tokens\.<\/p><\/blockquote>/
      : /<blockquote><p>Candidate 2 grades retrieval\.<\/p><\/blockquote>/);
  }
  // Hosted: the one batch ingest sends the notes with their items.
  const sent = api.routes("sync").flatMap((c) => c.page.items);
  assert.deepEqual(sent.filter((i) => i.item_type === "note").length, 2);
  assert.equal(Zotero.Zocrates.suppressedItemIDs.size, 0);
  assert.deepEqual(Zotero.errors, []);
});
