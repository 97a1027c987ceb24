// The Zotero-side code (host/zotero.js, host/zotero-library.js) run against the fake Zotero
// of fake-zotero.js: the import in one transaction with its fallbacks, the notifier
// suppression around it and its one batch ingest, and the hosted library sync.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import vm from "node:vm";
import { createFakeZotero, fakeIOUtils, fakeTabs, fakeWindow, fakeZoteroPane, ZOTERO_VERSIONS } from "./fake-zotero.js";
import { fakeGateway } from "./fake-gateway.js";
import { createHost } from "../content/host/zotero.js";
import { createLibrarySync, fileStore, memoryStore } from "../content/host/zotero-library.js";

const PDF = readFileSync(new URL("../../../shared/fixtures/pdfs/cermine/test1.pdf", import.meta.url));
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

function zoteroWithPlugin({ version } = {}) {
  const Zotero = createFakeZotero({ version });
  const ctx = {};
  vm.runInNewContext(`${readFileSync(new URL("../content/zotero/prefs.js", import.meta.url), "utf8")}\nthis.ZocratesPrefs = ZocratesPrefs;`, ctx);
  // What hooks.js onStartup puts there.
  Zotero.Zocrates = { prefs: ctx.ZocratesPrefs.create(Zotero.Prefs), suppressedItemIDs: new Set(), libraryObserverOwner: null };
  const window = fakeWindow(Zotero);
  return { Zotero, window, host: createHost(window, Zotero) };
}

const candidate = (id, extra = {}) => ({ candidate_id: id, title: `Paper ${id}`, authors: ["Ada Lovelace", "Alan Turing"], year: 2024,
  doi: `10.1000/${id}`, venue: "Journal of Tests", keywords: ["testing", "zotero"], oa_status: "gold", ...extra });

test("the fake keeps Zotero's transaction semantics: events after commit, rollback on a throw", async () => {
  const Zotero = createFakeZotero();
  const seen = [];
  Zotero.Notifier.registerObserver({ notify: (event, type, ids) => seen.push(`${event}:${ids.join(",")}`) }, ["item"], "test");
  let inside;
  await Zotero.DB.executeTransaction(async () => {
    const item = new Zotero.Item("journalArticle");
    item.setField("title", "A");
    await item.save();
    inside = [...seen];
  });
  assert.deepEqual(inside, [], "no event while the transaction is open");
  assert.deepEqual(seen, ["add:1"]);
  await assert.rejects(Zotero.DB.executeTransaction(async () => {
    const item = new Zotero.Item("journalArticle");
    await item.save();
    throw new Error("boom");
  }), /boom/);
  assert.equal((await Zotero.Items.getAll(1)).length, 1, "the rolled-back item is gone");
  assert.deepEqual(seen, ["add:1"], "and so are its events");
  assert.throws(() => new Zotero.Item("journalArticle").setField("repository", "arXiv"), /not a valid field for type 'journalArticle'/);
  await new Zotero.Item("journalArticle").save();
  assert.match(Zotero.errors[0].message, /without a wrapping transaction/);
  await assert.rejects(Zotero.DB.executeTransaction(() => new Zotero.Item("book").saveTx()), /inside a transaction/);
});

test("importBatch: one transaction, PDFs in storage, checksum mismatch and no PDF as metadata, duplicates skipped", async () => {
  const { Zotero, host } = zoteroWithPlugin();
  const collection = Zotero.createCollection("Reading");
  const other = new Uint8Array(Buffer.from("%PDF-1.4 other bytes"));
  const api = fakeGateway({ source: "zotero_dir", staged: new Map([["ok.pdf", new Uint8Array(PDF)], ["bad.pdf", other]]) });
  const plan = [
    { candidate: candidate("A"), file: { status: "staged", object_name: "ok.pdf", sha256: sha256(PDF) }, action: "pdf" },
    { candidate: candidate("B"), file: { status: "staged", object_name: "bad.pdf", sha256: "0".repeat(64) }, action: "pdf" },
    { candidate: candidate("C"), file: { status: "no_pdf" }, action: "metadata" },
    { candidate: candidate("D"), file: { status: "duplicate", reason: "already in your library (DOI)" }, action: "skip" },
  ];
  const before = Zotero.DB.transactions;
  const { results, ingest } = await host.importBatch(plan, { collectionId: String(collection.id), api });
  assert.equal(Zotero.DB.transactions - before, 1, "every item and attachment record in ONE transaction");
  assert.deepEqual(results.map((r) => r.status), ["imported", "metadata", "metadata", "skipped"]);
  assert.match(results[1].note, /does not match the server's checksum/);
  assert.equal(results[2].note, "no open-access PDF");
  assert.equal(results[3].note, "already in your library (DOI)");

  const items = await Zotero.Items.getAll(1, true);
  assert.deepEqual(items.map((i) => i.getField("title")).sort(), ["Paper A", "Paper B", "Paper C"]);
  const a = items.find((i) => i.getField("title") === "Paper A");
  assert.equal(a.getField("DOI"), "10.1000/A");
  assert.equal(a.getField("publicationTitle"), "Journal of Tests");
  assert.deepEqual(a.getCreators()[0], { creatorType: "author", firstName: "Ada", lastName: "Lovelace" });
  assert.deepEqual(a.getTags(), [{ tag: "testing", type: 1 }, { tag: "zotero", type: 1 }]);
  assert.deepEqual(a.getCollections(), [collection.id]);
  const [attachmentID] = a.getAttachments();
  const attachment = Zotero.Items.get(attachmentID);
  const path = await attachment.getFilePathAsync();
  assert.ok(path.startsWith(`${Zotero.dataDir}/storage/${attachment.key}/`));
  assert.equal(sha256(readFileSync(path)), sha256(PDF));
  for (const title of ["Paper B", "Paper C"]) assert.deepEqual(items.find((i) => i.getField("title") === title).getAttachments(), []);
  // Local mode: nothing to send; the server is asked once to rescan now.
  assert.deepEqual(api.routes("sync"), []);
  assert.equal(api.routes("rescan").length, 1);
  assert.match(ingest, /indexing your library again now/);
  assert.equal(Zotero.Zocrates.suppressedItemIDs.size, 0);
  assert.deepEqual(Zotero.errors, []);
});

test("importBatch: a PDF that cannot be copied into storage leaves a metadata-only item", async () => {
  const { Zotero, window, host } = zoteroWithPlugin();
  const api = fakeGateway({ source: "zotero_dir", staged: new Map([["ok.pdf", new Uint8Array(PDF)]]) });
  window.IOUtils.copy = async () => { throw new Error("disk full"); };
  const { results } = await host.importBatch([{ candidate: candidate("A"), file: { object_name: "ok.pdf", sha256: sha256(PDF) }, action: "pdf" }],
    { collectionId: "", api });
  assert.equal(results[0].status, "metadata");
  assert.match(results[0].note, /PDF not attached: disk full/);
  const items = await Zotero.Items.getAll(1);
  assert.deepEqual(items.map((i) => i.itemType), ["journalArticle"], "the attachment record is erased");
});

test("hosted import: its own notifier events are suppressed and ONE batch ingest sends items and PDFs", async () => {
  const { Zotero, host } = zoteroWithPlugin();
  await Zotero.addItem({ fields: { title: "Already here" }, file: { bytes: PDF, name: "here.pdf" } });
  const api = fakeGateway({ staged: new Map([["ok.pdf", new Uint8Array(PDF)]]) });
  const first = await host.startLibrarySync(api, () => {});
  assert.equal(first.full, true);
  assert.equal(first.uploaded, 1);
  assert.equal(Zotero.Notifier.observerCount(), 1, "the sidebar watches the library");
  const sync = host.librarySync();
  api.calls.length = 0;

  const { results, ingest } = await host.importBatch([
    { candidate: candidate("A"), file: { object_name: "ok.pdf", sha256: sha256(PDF) }, action: "pdf" },
    { candidate: candidate("C"), file: null, action: "metadata" },
  ], { collectionId: "", api });
  assert.deepEqual(results.map((r) => r.status), ["imported", "metadata"]);
  const pages = api.routes("sync");
  assert.equal(pages.length, 1, "one sync page for the whole import");
  assert.deepEqual(pages[0].page.items.map((i) => i.item_type).sort(), ["attachment", "journalArticle", "journalArticle"]);
  assert.equal(api.routes("upload").length, 1, "the imported PDF, uploaded once");
  assert.deepEqual(api.routes("rescan"), [], "hosted: the sync itself starts the indexing");
  assert.match(ingest, /Sent to the server for indexing: 3 changed items sent, 1 files uploaded/);
  // The import's add events reached the observer, which ignored them: flushing sends nothing.
  const added = Zotero.Notifier.delivered.filter((d) => d.event === "add").flatMap((d) => d.ids);
  assert.ok(added.length >= 3);
  assert.equal(sync.changes.empty, true);
  await sync.flush();
  await sync.idle();
  assert.equal(api.routes("sync").length, 1);
  assert.equal(Zotero.Zocrates.suppressedItemIDs.size, 0, "suppression ends with the import");

  // An ordinary edit afterwards is sent by the observer.
  const [imported] = (await Zotero.Items.getAll(1, true)).filter((i) => i.getField("title") === "Paper C");
  imported.setField("title", "Paper C, revised");
  await imported.saveTx();
  assert.equal(sync.changes.empty, false);
  await sync.flush();
  await sync.idle();
  const edits = api.routes("sync").slice(1);
  assert.deepEqual(edits.map((c) => c.page.items.map((i) => i.title)), [["Paper C, revised"]]);
});

/** A lab group with collections "Reading" and "Reading › Methods", and the Zotero pane. */
function withLab(Zotero, group = {}) {
  const pane = fakeZoteroPane(Zotero);
  Zotero.getActiveZoteroPane = () => pane;
  const lab = Zotero.Libraries.addGroup({ groupID: 4711, name: "Lab Papers", ...group });
  const reading = Zotero.createCollection("Reading", null, lab.libraryID);
  const methods = Zotero.createCollection("Methods", reading.id, lab.libraryID);
  return { pane, lab, reading, methods };
}

/** A restart (a fresh engine from `make`) whose remembered state matches the server sends nothing. */
async function assertRestartSendsNothing(api, make) {
  api.calls.length = 0;
  const again = await make().syncLibrary();
  assert.equal(again.sent, 0);
  assert.deepEqual(api.routes("sync"), []);
}

for (const version of ZOTERO_VERSIONS) test(`import targets on Zotero ${version}: My Library and editable groups with their collections; the pane's selection is the default`, async () => {
  const { Zotero, host } = zoteroWithPlugin({ version });
  const { pane, lab, methods } = withLab(Zotero);
  const mine = Zotero.createCollection("Inbox");
  const shared = Zotero.Libraries.addGroup({ groupID: 12, name: "Read-only club", editable: false });
  const sharedCollection = Zotero.createCollection("Picks", null, shared.libraryID);
  Zotero.Libraries.addFeed({ name: "arXiv cs.CL" });

  let targets = await host.listImportTargets();
  assert.deepEqual(targets.map((t) => [t.libraryID, t.libraryId, t.name, t.selected]),
    [[1, "user", "My Library", true], [lab.libraryID, "group-4711", "Lab Papers", false]], "no read-only group, no feed");
  assert.deepEqual(targets[0].collections, [{ id: String(mine.id), name: "Inbox", selected: false }]);
  assert.deepEqual(targets[1].collections.map((c) => c.name), ["Reading", "Reading › Methods"]);
  assert.deepEqual(targets.map((t) => t.filesEditable), [true, true]);

  await pane.collectionsView.selectCollection(methods.id);
  targets = await host.listImportTargets();
  assert.deepEqual(targets.map((t) => t.selected), [false, true]);
  assert.deepEqual(targets[1].collections.map((c) => c.selected), [false, true]);
  await pane.collectionsView.selectLibrary(lab.libraryID);
  targets = await host.listImportTargets();
  assert.deepEqual(targets.map((t) => t.selected), [false, true]);
  assert.ok(targets.flatMap((t) => t.collections).every((c) => !c.selected), "the library itself, no collection");

  // A read-only library selected in the pane: My Library, no collection.
  await pane.collectionsView.selectCollection(sharedCollection.id);
  targets = await host.listImportTargets();
  assert.deepEqual(targets.map((t) => t.selected), [true, false]);
  assert.ok(targets.flatMap((t) => t.collections).every((c) => !c.selected));
  assert.ok(!targets.flatMap((t) => t.collections).some((c) => c.id === String(sharedCollection.id)), "a read-only group's collection is never offered");
  assert.deepEqual([Zotero.errors, Zotero.warnings], [[], []]);
});

test("the fake pane of Zotero 10: the singular getters throw as Zotero 10's do, the plural ones answer", async () => {
  const Zotero = createFakeZotero({ version: "10.0.0" });
  const { pane, lab, reading } = withLab(Zotero);
  assert.throws(() => pane.getSelectedLibraryID(), /^Error: ZoteroPane\.getSelectedLibraryID\(\) was removed -- use ZoteroPane\.getSelectedLibraryIDs\(\)$/);
  assert.throws(() => pane.getSelectedCollection(), /^Error: ZoteroPane\.getSelectedCollection\(\) was removed -- use ZoteroPane\.getSelectedCollections\(\)$/);
  await pane.collectionsView.selectCollection(reading.id);
  assert.deepEqual([pane.getSelectedLibraryIDs(), pane.getSelectedCollections(true)], [[lab.libraryID], [reading.id]]);
  const seven = fakeZoteroPane(createFakeZotero({ version: "7.0.32" }));
  assert.equal(seven.getSelectedLibraryIDs, undefined, "Zotero 7 has no plural getters");
  assert.equal(seven.getSelectedLibraryID(), 1);
});

test("import targets on Zotero 10 with several rows selected: the first offered library in tree order, its first selected collection", async () => {
  const { Zotero, host } = zoteroWithPlugin({ version: "10.0.0" });
  const { pane, lab, reading, methods } = withLab(Zotero);
  const club = Zotero.Libraries.addGroup({ groupID: 12, name: "A read-only club", editable: false });
  const picks = Zotero.createCollection("Picks", null, club.libraryID);
  const inbox = Zotero.createCollection("Inbox");

  // A lab collection, then one of My Library: My Library comes first in the tree.
  await pane.collectionsView.selectCollection(methods.id);
  pane.collectionsView.addToSelection(inbox.id);
  let targets = await host.listImportTargets();
  assert.deepEqual(targets.map((t) => t.selected), [true, false]);
  assert.deepEqual(targets[0].collections.filter((c) => c.selected).map((c) => c.name), ["Inbox"]);
  assert.ok(targets[1].collections.every((c) => !c.selected));

  // A read-only group first in the tree (not offered), then two lab collections: the lab, its first.
  await pane.collectionsView.selectCollection(picks.id);
  pane.collectionsView.addToSelection(reading.id);
  pane.collectionsView.addToSelection(methods.id);
  targets = await host.listImportTargets();
  assert.deepEqual(targets.map((t) => t.selected), [false, true]);
  assert.deepEqual(targets[1].collections.filter((c) => c.selected).map((c) => c.name), ["Reading"]);
  assert.deepEqual([Zotero.errors, Zotero.warnings], [[], []]);
});

test("import into a group library's collection: items, collection membership and PDFs in the group", async () => {
  const { Zotero, host } = zoteroWithPlugin();
  const { lab, methods } = withLab(Zotero);
  const api = fakeGateway({ source: "zotero_dir", staged: new Map([["ok.pdf", new Uint8Array(PDF)]]) });
  const before = Zotero.DB.transactions;
  const { results } = await host.importBatch([
    { candidate: candidate("A"), file: { status: "staged", object_name: "ok.pdf", sha256: sha256(PDF) }, action: "pdf" },
    { candidate: candidate("C"), file: { status: "no_pdf" }, action: "metadata" },
  ], { libraryID: lab.libraryID, collectionId: String(methods.id), api });
  assert.equal(Zotero.DB.transactions - before, 1);
  assert.deepEqual(results.map((r) => r.status), ["imported", "metadata"]);
  assert.deepEqual(await Zotero.Items.getAll(Zotero.Libraries.userLibraryID), [], "nothing in My Library");
  const items = await Zotero.Items.getAll(lab.libraryID, true);
  assert.deepEqual(items.map((i) => i.getField("title")).sort(), ["Paper A", "Paper C"]);
  for (const item of items) assert.deepEqual(item.getCollections(), [methods.id]);
  const a = items.find((i) => i.getField("title") === "Paper A");
  const attachment = Zotero.Items.get(a.getAttachments()[0]);
  assert.equal(attachment.libraryID, lab.libraryID);
  assert.equal(sha256(readFileSync(await attachment.getFilePathAsync())), sha256(PDF));
  assert.deepEqual(Zotero.errors, []);
});

test("hosted import into a group: the one batch ingest sends the items and the PDF under group-<groupID>", async () => {
  const { Zotero, host } = zoteroWithPlugin();
  const { lab, reading } = withLab(Zotero);
  await Zotero.addItem({ fields: { title: "Already here" } });
  const api = fakeGateway({ staged: new Map([["ok.pdf", new Uint8Array(PDF)]]) });
  await host.startLibrarySync(api, () => {});
  api.calls.length = 0;
  const { results, ingest } = await host.importBatch([
    { candidate: candidate("A"), file: { object_name: "ok.pdf", sha256: sha256(PDF) }, action: "pdf" },
    { candidate: candidate("C"), file: null, action: "metadata" },
  ], { libraryID: lab.libraryID, collectionId: String(reading.id), api });
  assert.deepEqual(results.map((r) => r.status), ["imported", "metadata"]);
  const pages = api.routes("sync").map((c) => c.page);
  assert.deepEqual(pages.map((p) => [p.library_id, p.items.length]), [["group-4711", 3]], "one page, under the group's library_id");
  assert.deepEqual(pages[0].items.filter((i) => i.item_type === "journalArticle").map((i) => i.title).sort(), ["Paper A", "Paper C"]);
  const imported = await Zotero.Items.getAll(lab.libraryID, true);
  assert.deepEqual(imported.map((i) => i.getCollections()), [[reading.id], [reading.id]]);
  const [attachment] = pages[0].items.filter((i) => i.item_type === "attachment");
  assert.deepEqual(api.routes("upload").map((u) => [u.libraryId, u.key]), [["group-4711", attachment.key]]);
  assert.equal(api.library("group-4711").files.get(attachment.key), sha256(PDF));
  assert.equal(api.items.size, 1, "My Library on the server: only what was there");
  assert.match(ingest, /Sent to the server for indexing: 3 changed items sent, 1 files uploaded/);
});

test("import into a group that takes no files: metadata only, no PDF downloaded", async () => {
  const { Zotero, host } = zoteroWithPlugin();
  const { lab } = withLab(Zotero, { filesEditable: false });
  assert.deepEqual((await host.listImportTargets()).map((t) => t.filesEditable), [true, false]);
  const api = fakeGateway({ source: "zotero_dir", staged: new Map([["ok.pdf", new Uint8Array(PDF)]]) });
  const { results } = await host.importBatch([
    { candidate: candidate("A"), file: { object_name: "ok.pdf", sha256: sha256(PDF) }, action: "pdf" },
    { candidate: candidate("C"), file: null, action: "metadata" },
  ], { libraryID: lab.libraryID, collectionId: "", api });
  assert.deepEqual(results.map((r) => r.status), ["metadata", "metadata"]);
  assert.match(results[0].note, /the group “Lab Papers” does not allow files/);
  assert.equal(results[1].note, "no open-access PDF");
  assert.deepEqual(api.routes("staged"), [], "no download attempted");
  const items = await Zotero.Items.getAll(lab.libraryID);
  assert.deepEqual(items.map((i) => i.itemType), ["journalArticle", "journalArticle"]);
  // What Zotero itself refuses in such a group, and why the import never tries.
  const pdf = new Zotero.Item("attachment");
  pdf.libraryID = lab.libraryID;
  pdf.attachmentLinkMode = Zotero.Attachments.LINK_MODE_IMPORTED_FILE;
  await assert.rejects(pdf.saveTx(), /Cannot edit item in library Lab Papers/);
});

test("import: a collection of another library, a read-only or vanished library is an error and nothing is written", async () => {
  const { Zotero, host } = zoteroWithPlugin();
  const { lab, reading } = withLab(Zotero);
  const inbox = Zotero.createCollection("Inbox");
  const club = Zotero.Libraries.addGroup({ groupID: 12, name: "Read-only club", editable: false });
  const api = fakeGateway({ source: "zotero_dir", staged: new Map([["ok.pdf", new Uint8Array(PDF)]]) });
  const plan = () => [{ candidate: candidate("A"), file: { object_name: "ok.pdf", sha256: sha256(PDF) }, action: "pdf" }];
  const nothingWritten = async () => {
    for (const library of Zotero.Libraries.getAll()) assert.deepEqual(await Zotero.Items.getAll(library.libraryID, false, true), []);
    assert.deepEqual(api.routes("rescan"), []);
    assert.equal(Zotero.Zocrates.suppressedItemIDs.size, 0);
  };

  await assert.rejects(host.importBatch(plan(), { libraryID: lab.libraryID, collectionId: String(inbox.id), api }),
    /The collection “Inbox” is in “My Library”, not in “Lab Papers”\. Nothing was imported/);
  await assert.rejects(host.importBatch(plan(), { libraryID: Zotero.Libraries.userLibraryID, collectionId: String(reading.id), api }),
    /The collection “Reading” is in “Lab Papers”, not in “My Library”/);
  await assert.rejects(host.importBatch(plan(), { libraryID: club.libraryID, collectionId: "", api }), /You cannot add items to “Read-only club” \(it is read-only\)/);
  assert.deepEqual(api.routes("staged"), [], "refused before any download");
  await nothingWritten();

  // The group left while the PDFs were downloading: the transaction refuses it, nothing stays.
  const stagedFile = api.stagedFile;
  api.stagedFile = async (name) => {
    Zotero.removeGroup(4711);
    return stagedFile(name);
  };
  await assert.rejects(host.importBatch(plan(), { libraryID: lab.libraryID, collectionId: String(reading.id), api }),
    /The library chosen for the import is no longer in Zotero \(you may have left the group\)/);
  await nothingWritten();
  // And a group left before the import started.
  await assert.rejects(host.importBatch(plan(), { libraryID: lab.libraryID, collectionId: "", api }), /no longer in Zotero/);
  await nothingWritten();
});

test("library sync: full at first, nothing when unchanged, edits, trash and deletes as they happen", async () => {
  const Zotero = createFakeZotero();
  const { item: paper, attachment: pdf } = await Zotero.addItem({ fields: { title: "Twins", date: "2021", DOI: "10.1/t" },
    creators: [{ creatorType: "author", firstName: "H.", lastName: "Jonsson" }], file: { bytes: PDF, name: "twins.pdf" } });
  const { attachment: html } = await Zotero.addItem({ itemType: "webpage", fields: { title: "A blog" },
    file: { bytes: Buffer.from("<html><body>Snapshot</body></html>"), name: "snap.html", contentType: "text/html", title: "Snapshot" } });
  const note = new Zotero.Item("note");
  note.parentID = paper.id;
  note.setNote("<p>Read this</p>");
  await note.saveTx();
  const link = new Zotero.Item("attachment");
  link.parentID = paper.id;
  link.attachmentLinkMode = Zotero.Attachments.LINK_MODE_LINKED_URL;
  link.setField("url", "https://example.org");
  await link.saveTx();
  const { item: trashed } = await Zotero.addItem({ fields: { title: "In the trash" } });
  trashed.deleted = true;
  await trashed.saveTx();

  const api = fakeGateway();
  const storePath = `${Zotero.dataDir}/zocrates-sync.json`;
  const progress = [];
  const make = () => createLibrarySync({ Zotero, IOUtils: fakeIOUtils(), crypto: globalThis.crypto, api,
    store: fileStore(fakeIOUtils(), storePath), onProgress: (p) => progress.push(p.phase), sleep: async () => {} });
  const sync = make();
  const first = await sync.syncLibrary();
  assert.equal(first.full, true);
  const [page] = api.routes("sync").map((c) => c.page);
  assert.equal(page.full, true);
  const byKey = new Map(page.items.map((i) => [i.key, i]));
  assert.equal(byKey.size, 6, "2 items, 3 attachments, 1 note; the trashed item is left out");
  assert.ok(!byKey.has(trashed.key));
  assert.equal(byKey.get(pdf.key).sha256, sha256(PDF));
  assert.equal(byKey.get(html.key).content_type, "text/html");
  assert.equal(byKey.get(link.key).sha256, undefined, "a link has no file to upload");
  assert.equal(byKey.get(note.key).note, "<p>Read this</p>");
  assert.deepEqual(api.routes("upload").map((u) => u.key).sort(), [pdf.key, html.key].sort());
  assert.ok(progress.includes("reading") && progress.includes("syncing") && progress.includes("uploading"));

  // A restart: the remembered state matches the server, nothing is sent again.
  await assertRestartSendsNothing(api, make);

  // Live changes through the notifier, batched.
  const live = make();
  live.observe();
  paper.setField("title", "Twins, revised");
  await paper.saveTx();
  await live.flush();
  await live.idle();
  let sent = api.routes("sync").at(-1).page;
  assert.deepEqual(sent.items.map((i) => i.title), ["Twins, revised"]);
  assert.deepEqual(api.routes("upload"), [], "the file did not change");

  const { item: blog } = { item: Zotero.Items.get(html.parentID) };
  blog.deleted = true;
  await blog.saveTx();
  await live.flush();
  await live.idle();
  sent = api.routes("sync").at(-1).page;
  assert.deepEqual(sent.deleted.sort(), [blog.key, html.key].sort(), "a trashed item leaves with its attachment");
  assert.ok(!api.items.has(html.key));

  const noteKey = note.key;
  await note.eraseTx();
  await live.flush();
  await live.idle();
  assert.deepEqual(api.routes("sync").at(-1).page.deleted, [noteKey]);

  // The server lost the library (counts disagree): the next sync is a full one again.
  api.items.clear();
  api.files.clear();
  const rebuilt = await make().syncLibrary();
  assert.equal(rebuilt.full, true);
  assert.equal(api.items.size, 3, "paper, its PDF and its link");
});

test("library sync: uploads are retried when the server is busy; a refused one is offered again next time", async () => {
  const Zotero = createFakeZotero();
  const { attachment } = await Zotero.addItem({ fields: { title: "Twins" }, file: { bytes: PDF, name: "twins.pdf" } });
  const api = fakeGateway();
  const slept = [];
  const store = memoryStore();
  const make = () => createLibrarySync({ Zotero, IOUtils: fakeIOUtils(), crypto: globalThis.crypto, api, store, sleep: async (ms) => slept.push(ms) });
  api.failUploads.push({ status: 503, code: "library_unavailable" }, { status: 504, code: "library_timeout" });
  const first = await make().syncLibrary();
  assert.equal(first.uploaded, 1);
  assert.deepEqual(slept, [1000, 2000]);

  // A new PDF version the server refuses (415): reported, and forgotten so the next sync offers it again.
  const path = await attachment.getFilePathAsync();
  const { writeFileSync } = await import("node:fs");
  writeFileSync(path, Buffer.concat([PDF, Buffer.from("\n% new version")]));
  api.failUploads.push({ status: 415, code: "not_a_pdf" });
  const second = await make().syncLibrary();
  assert.equal(second.failed.length, 1);
  assert.equal(second.failed[0].key, attachment.key);
  const retried = await make().syncLibrary();
  assert.equal(retried.sent, 1, "the attachment is offered again");
  assert.equal(retried.uploaded, 1);
  assert.equal(api.files.get(attachment.key), sha256(readFileSync(path)));
});

test("local mode: the server reads zotero.sqlite, so the plugin sends nothing", async () => {
  const { Zotero, host } = zoteroWithPlugin();
  await Zotero.addItem({ fields: { title: "Twins" }, file: { bytes: PDF } });
  const api = fakeGateway({ source: "zotero_dir" });
  assert.deepEqual(await host.startLibrarySync(api, () => {}), { mode: "local" });
  assert.deepEqual(api.routes("sync"), []);
  assert.equal(Zotero.Notifier.observerCount(), 0, "no observer in local mode");
});

/** The UI parts openInReader/selectInLibrary reach (reader tabs, the items pane), recorded. */
function withPane(Zotero) {
  const seen = { opened: [], tabs: [] };
  const pane = fakeZoteroPane(Zotero);
  Zotero.Reader = { open: async (itemID) => { seen.opened.push(itemID); return null; } };
  Zotero.getActiveZoteroPane = () => pane;
  Zotero.getMainWindow = () => ({ Zotero_Tabs: { select: (id) => seen.tabs.push(id) } });
  Object.defineProperty(seen, "selected", { get: () => pane.selectedItems.map((s) => s.itemID) });
  seen.pane = pane;
  return seen;
}

for (const version of ZOTERO_VERSIONS) test(`select in library on Zotero ${version}: the item in its library, never the library root, no warning`, async () => {
  const { Zotero, host } = zoteroWithPlugin({ version });
  const seen = withPane(Zotero);
  const { item, attachment } = await Zotero.addItem({ fields: { title: "Mine" }, file: { bytes: PDF, name: "mine.pdf" } });
  await host.selectInLibrary(attachment.key);
  assert.deepEqual(seen.pane.selectedItems, [{ itemID: item.id, inLibraryRoot: false }]);
  assert.deepEqual(seen.tabs, ["zotero-pane"]);
  assert.deepEqual([Zotero.errors, Zotero.warnings], [[], []], "Zotero 8+ warns when selectItem gets a boolean");
});

test("Settings opens the plugin's own preferences pane, by the id it was registered under", () => {
  const { Zotero, host } = zoteroWithPlugin();
  const opened = [];
  Zotero.Utilities = { Internal: { openPreferences: (paneID, options) => opened.push([paneID, options]) } };
  Zotero.Zocrates.prefPaneID = "zocrates-prefpane";
  host.openSettings();
  assert.deepEqual(opened, [["zocrates-prefpane", undefined]]);
});

test("citations open and select in their own library: My Library, a group, a group left since", async () => {
  const { Zotero, host } = zoteroWithPlugin();
  const seen = withPane(Zotero);
  const group = Zotero.Libraries.addGroup({ groupID: 4711, name: "Lab papers" });
  const mine = await Zotero.addItem({ fields: { title: "Mine" }, file: { bytes: PDF, name: "mine.pdf" } });
  const theirs = await Zotero.addItem({ libraryID: group.libraryID, fields: { title: "Theirs" }, file: { bytes: PDF, name: "theirs.pdf" } });
  assert.equal(theirs.attachment.libraryID, group.libraryID);
  assert.equal(Zotero.Groups.getLibraryIDFromGroupID(4711), group.libraryID);
  assert.equal(Zotero.Groups.getLibraryIDFromGroupID(9999), false);

  // A citation without library_id (a turn stored before group libraries) is in My Library.
  await host.openInReader({ item_key: mine.item.key, section: "" });
  await host.openInReader({ item_key: theirs.item.key, attachment_key: theirs.attachment.key, library_id: "group-4711" });
  await host.openInReader({ item_key: theirs.item.key, library_id: "group-4711" }); // the best attachment of the parent
  assert.deepEqual(seen.opened, [mine.attachment.id, theirs.attachment.id, theirs.attachment.id]);
  await host.selectInLibrary(theirs.attachment.key, "group-4711");
  await host.selectInLibrary(mine.item.key);
  assert.deepEqual(seen.selected, [theirs.item.id, mine.item.id], "an attachment selects its parent, in its library");

  // Keys are unique only within a library: the group's key is not looked up in My Library.
  await assert.rejects(host.openInReader({ item_key: theirs.item.key, library_id: "user" }), /no longer in My Library/);
  await assert.rejects(host.selectInLibrary(mine.item.key, "group-4711"), /no longer in the group library “Lab papers”/);
  Zotero.removeGroup(4711);
  await assert.rejects(host.openInReader({ item_key: theirs.item.key, library_id: "group-4711" }),
    /group library \(group 4711\) that is not in this Zotero: you may have left the group/);
  await assert.rejects(host.selectInLibrary(theirs.item.key, "feed-3"), /names a library Zotero does not know/);
  assert.equal(seen.opened.length, 3);
  assert.equal(seen.selected.length, 2);
});

test("Open in Reader opens the PDF at the cited page (the reader's 0-based pageIndex); an open reader goes there", async () => {
  const { Zotero, host } = zoteroWithPlugin();
  const tabs = fakeTabs(Zotero);
  const { item, attachment } = await Zotero.addItem({ fields: { title: "ACE" }, file: { bytes: PDF, name: "ace.pdf" } });
  const pages = { index: 1, label: "306", last_index: null, last_label: null, printed: true };
  await host.openInReader({ item_key: item.key, section: "RESULTS", pages });
  const reader = Zotero.Reader.getByTabID(tabs.selectedID);
  assert.equal(reader.itemID, attachment.id);
  assert.deepEqual(reader.locations, [{ pageIndex: 1 }], "page 306 is the file's second page");
  tabs.select("zotero-pane");
  await host.openInReader({ item_key: item.key, attachment_key: attachment.key, pages: { ...pages, index: 4, label: "309" } });
  assert.equal(Zotero.Reader.getByTabID(tabs.selectedID), reader, "the open reader, not a second tab");
  assert.deepEqual(reader.locations, [{ pageIndex: 1 }, { pageIndex: 4 }]);
  // A citation without pages (a snapshot, a turn stored before them) opens the file where it is.
  await host.openInReader({ item_key: item.key, section: "" });
  assert.deepEqual(reader.locations, [{ pageIndex: 1 }, { pageIndex: 4 }]);
});

test("library sync: every group library under its own library_id, its own state and uploads; feeds are not sent", async () => {
  const Zotero = createFakeZotero();
  const lab = Zotero.Libraries.addGroup({ groupID: 4711, name: "Lab papers" });
  const club = Zotero.Libraries.addGroup({ groupID: 12, name: "Journal club" });
  const feed = Zotero.Libraries.addFeed({ name: "arXiv cs.CL" });
  const mine = await Zotero.addItem({ fields: { title: "Mine" }, file: { bytes: PDF, name: "mine.pdf" } });
  const theirs = await Zotero.addItem({ libraryID: lab.libraryID, fields: { title: "Theirs" }, file: { bytes: PDF, name: "theirs.pdf" } });
  await Zotero.addItem({ libraryID: club.libraryID, fields: { title: "Club pick" } });
  await Zotero.addItem({ libraryID: feed.libraryID, fields: { title: "A feed entry" } });

  const api = fakeGateway();
  const storePath = `${Zotero.dataDir}/zocrates-sync.json`;
  const progress = [];
  const make = () => createLibrarySync({ Zotero, IOUtils: fakeIOUtils(), crypto: globalThis.crypto, api,
    store: fileStore(fakeIOUtils(), storePath), onProgress: (p) => progress.push(p), sleep: async () => {} });
  const first = await make().syncLibrary();
  assert.equal(first.full, true);
  assert.deepEqual(first.libraries, ["user", "group-12", "group-4711"], "My Library first, then groups by name; no feed");
  assert.equal(first.uploaded, 2);
  const pages = api.routes("sync").map((c) => c.page);
  assert.deepEqual(pages.map((p) => [p.library_id, p.full, p.items.length]), [["user", true, 2], ["group-12", true, 1], ["group-4711", true, 2]]);
  assert.equal(new Set(pages.map((p) => p.sync_id)).size, 3, "one sync per library");
  assert.deepEqual(api.routes("upload").map((u) => [u.libraryId, u.key]), [["user", mine.attachment.key], ["group-4711", theirs.attachment.key]]);
  assert.deepEqual([...api.library("group-4711").items.keys()].sort(), [theirs.item.key, theirs.attachment.key].sort());
  assert.ok(progress.some((p) => p.phase === "syncing" && p.library === "Lab papers"));
  const saved = JSON.parse(readFileSync(storePath, "utf8"));
  assert.deepEqual(Object.keys(saved.libraries).sort(), ["group-12", "group-4711", "user"]);
  assert.deepEqual([saved.regular, saved.attachments], [3, 2], "totals over all libraries, as /library/status counts them");

  // A restart: nothing changed in any library.
  await assertRestartSendsNothing(api, make);

  // Notifier changes go to the library of the changed item; a delete keeps its library.
  const live = make();
  live.observe();
  theirs.item.setField("title", "Theirs, revised");
  await theirs.item.saveTx();
  mine.item.setField("title", "Mine, revised");
  await mine.item.saveTx();
  await live.flush();
  await live.idle();
  assert.deepEqual(api.routes("sync").map((c) => [c.page.library_id, c.page.items.map((i) => i.title)]),
    [["group-4711", ["Theirs, revised"]], ["user", ["Mine, revised"]]]);
  const theirKeys = [theirs.item.key, theirs.attachment.key];
  await theirs.item.eraseTx();
  await live.flush();
  await live.idle();
  const erased = api.routes("sync").at(-1).page;
  assert.deepEqual([erased.library_id, erased.deleted.sort()], ["group-4711", theirKeys.sort()]);
  assert.equal(api.library("group-4711").items.size, 0, "the group's paper left with its attachment");
  assert.equal(api.items.size, 2, "My Library untouched");

  // A group the user left (Zotero erased its library, without item events): emptied on the server.
  Zotero.removeGroup(12);
  api.calls.length = 0;
  const after = await make().syncLibrary();
  assert.deepEqual(api.routes("sync").map((c) => [c.page.library_id, c.page.full, c.page.items.length]), [["group-12", true, 0]]);
  assert.equal(after.deleted, 1);
  assert.equal(api.library("group-12").items.size, 0);
  assert.deepEqual(Object.keys(JSON.parse(readFileSync(storePath, "utf8")).libraries).sort(), ["group-4711", "user"]);
  assert.equal((await make().syncLibrary()).sent, 0, "and then the state matches the server again");
});

test("library sync: a group joined later goes in full by itself; state saved before groups is My Library's", async () => {
  const Zotero = createFakeZotero();
  const mine = await Zotero.addItem({ fields: { title: "Mine" }, file: { bytes: PDF, name: "mine.pdf" } });
  const api = fakeGateway();
  // What a plugin version without group libraries remembered after its first sync.
  const old = memoryStore();
  await createLibrarySync({ Zotero, IOUtils: fakeIOUtils(), crypto: globalThis.crypto, api, store: old, sleep: async () => {} }).syncLibrary();
  const state = await old.load();
  const legacy = { items: state.libraries.user.items, files: state.libraries.user.files, regular: 1, attachments: 1 };
  const store = memoryStore(legacy);
  const make = () => createLibrarySync({ Zotero, IOUtils: fakeIOUtils(), crypto: globalThis.crypto, api, store, sleep: async () => {} });
  api.calls.length = 0;
  assert.equal((await make().syncLibrary()).sent, 0, "the old state is read as My Library's: no full sync again");

  const lab = Zotero.Libraries.addGroup({ groupID: 4711, name: "Lab papers" });
  await Zotero.addItem({ libraryID: lab.libraryID, fields: { title: "Theirs" }, file: { bytes: PDF, name: "theirs.pdf" } });
  const joined = await make().syncLibrary();
  assert.equal(joined.full, false);
  assert.deepEqual(api.routes("sync").map((c) => [c.page.library_id, c.page.full, c.page.items.length]), [["group-4711", true, 2]]);
  assert.equal(joined.uploaded, 1);
  assert.equal(api.items.get(mine.item.key).title, "Mine");
});

test("library sync: items carry their collections and tags, the library its collection tree; a move, a retag or a rename is sent alone", async () => {
  const Zotero = createFakeZotero();
  const trauma = Zotero.createCollection("Trauma");
  const reviews = Zotero.createCollection("Reviews", trauma.id);
  const old = Zotero.createCollection("Old");
  const { item: paper, attachment: pdf } = await Zotero.addItem({ fields: { title: "Twins" }, file: { bytes: PDF, name: "twins.pdf" } });
  paper.setCollections([reviews.id]);
  paper.addTag("to-read");
  await paper.saveTx();
  const { item: other } = await Zotero.addItem({ fields: { title: "Other" } });
  await Zotero.updateCollection(old.id, { deleted: true }); // in the trash: not in the tree
  const api = fakeGateway();
  const sync = createLibrarySync({ Zotero, IOUtils: fakeIOUtils(), crypto: globalThis.crypto, api, store: memoryStore(), sleep: async () => {} });
  await sync.syncLibrary();
  const [first] = api.routes("sync").map((c) => c.page);
  const tree = [{ key: reviews.key, name: "Reviews", parent_key: trauma.key }, { key: trauma.key, name: "Trauma" }]
    .sort((a, b) => (a.key < b.key ? -1 : 1));
  assert.deepEqual(first.collections, tree);
  const byKey = new Map(first.items.map((i) => [i.key, i]));
  assert.deepEqual([byKey.get(paper.key).collections, byKey.get(paper.key).tags], [[reviews.key], ["to-read"]]);
  assert.ok(!("collections" in byKey.get(pdf.key)) && !("tags" in byKey.get(other.key)));

  // Watching: a move and a retag send the item again (not its file); a rename sends the tree alone.
  sync.observe();
  api.calls.length = 0;
  paper.setCollections([trauma.id]);
  paper.removeTag("to-read");
  paper.addTag("done");
  await paper.saveTx();
  await sync.flush();
  await sync.idle();
  let [page] = api.routes("sync").map((c) => c.page);
  assert.deepEqual(page.items.map((i) => [i.key, i.collections, i.tags]), [[paper.key, [trauma.key], ["done"]]]);
  assert.equal(page.collections, undefined, "the tree did not change");
  assert.deepEqual(api.routes("upload"), []);

  api.calls.length = 0;
  await Zotero.updateCollection(reviews.id, { name: "Systematic reviews" });
  await sync.flush();
  await sync.idle();
  [page] = api.routes("sync").map((c) => c.page);
  assert.deepEqual([page.items, page.deleted], [[], []]);
  assert.equal(page.collections.find((c) => c.key === reviews.key).name, "Systematic reviews");

  api.calls.length = 0;
  await sync.syncLibrary();
  assert.deepEqual(api.routes("sync"), [], "nothing changed since: nothing is sent");
  assert.deepEqual([Zotero.errors, Zotero.warnings], [[], []]);
});

test("the settings pane's save reaches open sidebars through the settingsRevision pref, until the window unloads", () => {
  const { Zotero, window, host } = zoteroWithPlugin();
  const seen = [];
  host.onSettingsChange(() => seen.push("read them again"));
  const prefs = Zotero.Zocrates.prefs;
  assert.equal(prefs.get("settingsRevision"), 0);
  prefs.set("settingsRevision", prefs.get("settingsRevision") + 1); // what preferences.js does after a PUT /settings
  assert.deepEqual(seen, ["read them again"]);
  window.dispatchEvent(new window.Event("unload"));
  prefs.set("settingsRevision", 2);
  assert.deepEqual(seen, ["read them again"]);
});
