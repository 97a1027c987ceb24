// The pure half of the hosted library sync: item JSON -> SyncedItem, plans, pages within the
// gateway's limits, retry decisions, notifier batching.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ChangeSet, Debouncer, MAX_PAGE_BYTES, MAX_PAGE_ITEMS, fingerprint, libraryMode, libraryStatusLine, newSyncId, planSync,
  retryDelay, serverMatches, syncPages, syncedItem, withRetry, yearOf,
} from "../content/core/library-sync.js";
import { ID_PATTERN } from "../content/core/limits.js";

const article = {
  key: "ABCD2345", version: 3, itemType: "journalArticle", title: "  Somatic mutations in twins ",
  creators: [{ creatorType: "author", firstName: "H.", lastName: "Jonsson" }, { creatorType: "editor", name: "deCODE" }],
  date: "2021-03-04", publicationTitle: "Nature Genetics", DOI: "10.1038/x", url: "https://doi.org/10.1038/x",
  extra: "", tags: [{ tag: "genomics" }], collections: [], relations: {},
};

test("a regular item, an attachment and a note become SyncedItems the gateway accepts", () => {
  assert.deepEqual(syncedItem(article), {
    key: "ABCD2345", item_type: "journalArticle", title: "Somatic mutations in twins",
    creators: [{ creator_type: "author", first_name: "H.", last_name: "Jonsson" }, { creator_type: "editor", name: "deCODE" }],
    date: "2021-03-04", year: 2021, publication: "Nature Genetics", doi: "10.1038/x", url: "https://doi.org/10.1038/x",
    tags: ["genomics"],
  });
  // Where it sits: its collections (keys) and tag names, each once; none of either, no field.
  const placed = syncedItem({ ...article, collections: ["COLL2345", "COLL2345", "../x"], tags: [{ tag: " a " }, { tag: "a", type: 1 }, { tag: "" }] });
  assert.deepEqual([placed.collections, placed.tags], [["COLL2345"], ["a"]]);
  const bare = syncedItem({ ...article, tags: [] });
  assert.ok(!("tags" in bare) && !("collections" in bare));
  assert.ok(!("collections" in syncedItem({ key: "JKLM2345", itemType: "note", parentItem: "ABCD2345", collections: ["COLL2345"] })),
    "a child item is in no collection of its own");
  const sha = "a".repeat(64);
  assert.deepEqual(syncedItem({ key: "EFGH6789", itemType: "attachment", parentItem: "ABCD2345", title: "Full Text PDF",
    linkMode: "imported_file", contentType: "application/pdf", filename: "paper.pdf" }, { contentType: "application/pdf", sha256: sha }),
  { key: "EFGH6789", item_type: "attachment", title: "Full Text PDF", parent_key: "ABCD2345", content_type: "application/pdf",
    filename: "paper.pdf", sha256: sha });
  assert.deepEqual(syncedItem({ key: "JKLM2345", itemType: "note", parentItem: "ABCD2345", note: "<p>hi</p>" }),
    { key: "JKLM2345", item_type: "note", title: "", parent_key: "ABCD2345", note: "<p>hi</p>" });
  // A DOI kept in Extra (item types without the field), long text clipped to the contract's limits.
  const report = syncedItem({ key: "NPQR2345", itemType: "report", title: "x".repeat(5000), extra: "DOI: 10.1/abc\nother", institution: "MIT" });
  assert.equal(report.doi, "10.1/abc");
  assert.equal(report.title.length, 2000);
  assert.equal(report.publication, "MIT");
  // A regular item's abstract goes with it (clipped); a note's or attachment's field would not exist.
  assert.equal(syncedItem({ ...article, abstractNote: "We sequenced twins." }).abstract, "We sequenced twins.");
  assert.equal(syncedItem({ ...article, abstractNote: "y".repeat(20000) }).abstract.length, 10000);
  assert.ok(!("abstract" in syncedItem(article)));
  assert.equal(syncedItem({ key: "bad", itemType: "note" }), null);
  assert.equal(syncedItem({ key: "ANNO2345", itemType: "annotation" }), null);
  assert.equal(yearOf("March 2010"), 2010);
  assert.equal(yearOf("n.d."), null);
});

test("a plan is everything the first time, then only what changed and what is gone", () => {
  const a = syncedItem(article);
  const b = syncedItem({ ...article, key: "BBBB2345", title: "Other" });
  assert.deepEqual(planSync(null, [a, b]), { full: true, items: [a, b], deleted: [] });
  const remembered = { [a.key]: fingerprint(a), [b.key]: fingerprint(b), GONE2345: "x" };
  const edited = syncedItem({ ...article, title: "Somatic mutations in twins, revised" });
  assert.deepEqual(planSync(remembered, [edited, b]), { full: false, items: [edited], deleted: ["GONE2345"] });
  assert.notEqual(fingerprint(a), fingerprint(edited));
  assert.equal(fingerprint(a), fingerprint({ ...a }));
});

test("pages stay within the gateway's item and byte limits, parents first, the last one final", () => {
  const items = [];
  for (let i = 0; i < 1203; i++) items.push({ key: `K${String(i).padStart(7, "0")}`, item_type: "journalArticle", title: `t${i}` });
  items.unshift({ key: "CHILD234", item_type: "attachment", title: "", parent_key: "K0000000" });
  const pages = syncPages({ syncId: "s1", items, deleted: ["DEAD2345"], full: true });
  assert.deepEqual(pages.map((p) => p.items.length), [500, 500, 204]);
  assert.deepEqual(pages.map((p) => [p.page, p.final, p.full, p.sync_id]), [[0, false, true, "s1"], [1, false, true, "s1"], [2, true, true, "s1"]]);
  assert.equal(pages[2].items.at(-1).key, "CHILD234", "attachments after the parents they name");
  assert.deepEqual(pages[2].deleted, ["DEAD2345"]);
  const big = Array.from({ length: 60 }, (_, i) => ({ key: `N${String(i).padStart(7, "0")}`, item_type: "note", title: "", note: "n".repeat(32000) }));
  const notePages = syncPages({ syncId: "s2", items: big });
  for (const page of notePages) assert.ok(new TextEncoder().encode(JSON.stringify(page)).length < 768 * 1024);
  assert.ok(notePages.every((p) => p.items.length <= MAX_PAGE_ITEMS) && notePages.length === Math.ceil((60 * 32050) / MAX_PAGE_BYTES));
  assert.deepEqual(syncPages({ syncId: "s3" }), [{ sync_id: "s3", library_id: "user", page: 0, final: true, full: false, items: [], deleted: [] }]);
  assert.match(newSyncId(new Date("2026-01-02T03:04:05.678Z"), () => 0.5), ID_PATTERN);
});

test("retry: a down, busy or slow server is retried with backoff; a refusal is not", async () => {
  assert.equal(retryDelay({ code: "server_unreachable" }, 1), 1000);
  assert.equal(retryDelay({ status: 504, code: "library_timeout" }, 3), 4000);
  assert.equal(retryDelay({ status: 503, code: "library_unavailable" }, 2), 2000);
  assert.equal(retryDelay({ status: 503, code: "library_not_available" }, 1), null, "the server reads zotero.sqlite: no point");
  assert.equal(retryDelay({ status: 422, code: "invalid_request" }, 1), null);
  assert.equal(retryDelay({ status: 413 }, 1), null);
  assert.equal(retryDelay({ code: "server_unreachable" }, 5), null, "gives up after 5 tries");
  const slept = [];
  let calls = 0;
  const value = await withRetry(async () => {
    calls += 1;
    if (calls < 3) throw Object.assign(new Error("down"), { code: "server_unreachable" });
    return "ok";
  }, { sleep: async (ms) => slept.push(ms) });
  assert.equal(value, "ok");
  assert.deepEqual(slept, [1000, 2000]);
  await assert.rejects(withRetry(async () => { throw Object.assign(new Error("bad"), { status: 422 }); }, { sleep: async () => {} }), /bad/);
});

test("notifier events: suppressed ids are ignored, deletes keep their key, one batch per quiet spell", () => {
  const changes = new ChangeSet();
  changes.suppressed.add(7);
  assert.equal(changes.note("add", "item", [7, 8]), true);
  changes.note("modify", "item", 9);
  changes.note("trash", "item", [10]);
  changes.note("delete", "item", [11, 7], { 11: { libraryID: 1, key: "GONE2345" }, 7: { libraryID: 1, key: "MINE2345" } });
  assert.equal(changes.note("add", "collection", [1]), true);
  assert.equal(changes.note("add", "setting", [1]), false);
  changes.note("add", "collection-item", ["4-13", "4-7"]);
  changes.note("remove", "item-tag", ["14-2"]);
  changes.note("delete", "item", [12], { 12: { libraryID: 3, key: "GONE2345" } });
  assert.deepEqual(changes.take(), { ids: [8, 9, 10, 13, 14], deleted: [{ libraryID: 1, key: "GONE2345" }, { libraryID: 3, key: "GONE2345" }], trees: true },
    "the same key deleted in two libraries is two deletions; a collection's or a tag's item is sent again");
  assert.equal(changes.empty, true);

  let now = 0;
  const timers = new Map();
  let nextTimer = 1;
  const flushed = [];
  const debouncer = new Debouncer(() => flushed.push(now), {
    delayMs: 2000, maxWaitMs: 5000, now: () => now,
    setTimeout: (fn, ms) => { timers.set(nextTimer, { fn, at: now + ms }); return nextTimer++; },
    clearTimeout: (id) => timers.delete(id),
  });
  const advance = (ms) => {
    now += ms;
    for (const [id, t] of [...timers]) if (t.at <= now) { timers.delete(id); t.fn(); }
  };
  debouncer.poke();
  advance(1500);
  debouncer.poke();
  advance(1500);
  assert.deepEqual(flushed, [], "still busy: waits");
  advance(600);
  assert.deepEqual(flushed, [3600], "2 s after the last event (checked at 3600)");
  for (let i = 0; i < 10; i++) { debouncer.poke(); advance(1000); }
  assert.deepEqual(flushed, [3600, 8600, 13600], "a long burst flushes every maxWaitMs");
});

test("mode and status: local when the server reads zotero.sqlite; full sync when counts disagree", () => {
  assert.equal(libraryMode({ source: "zotero_dir" }), "local");
  assert.equal(libraryMode({ source: "hosted" }), "hosted");
  assert.equal(libraryMode({ source: "none" }), "hosted");
  const remembered = { regular: 2, attachments: 1 };
  assert.equal(serverMatches({ source: "hosted", items: 2, attachments: 1 }, remembered), true);
  assert.equal(serverMatches({ source: "hosted", items: 1, attachments: 1 }, remembered), false);
  assert.equal(serverMatches({ source: "none", items: 0, attachments: 0 }, remembered), false);
  assert.equal(serverMatches({ source: "hosted", items: 2, attachments: 1 }, null), false);
  assert.equal(libraryStatusLine({ source: "hosted", state: "done", items: 3, attachments: 2, awaiting_upload: 1, indexed: 1,
    failures_by_reason: { scanned: 1 } }), "3 items, 2 attachments on the server; 1 files to upload; 1 indexed; 1 not readable (1 scanned).");
  assert.match(libraryStatusLine({ source: "zotero_dir", state: "running", indexed: 4, sources_done: 4, sources_total: 9 }), /indexing 4 of 9/);
});

test("indexing shows its pace and the time left once known, and the abstracts already searchable (issue 20)", () => {
  const running = { source: "zotero_dir", state: "running", indexed: 5004, abstracts: 5000, sources_done: 5004, sources_total: 9000 };
  assert.equal(libraryStatusLine(running),
    "Library read from Zotero on the server: 5004 sources indexed; 5000 abstracts searchable (indexing 5004 of 9000).");
  assert.match(libraryStatusLine({ ...running, pages_per_s: 6.93, eta_s: 750 }), /\(indexing 5004 of 9000 \(6\.9 pages\/s, about 13 min left\)\)/);
  assert.match(libraryStatusLine({ ...running, pages_per_s: 6.93, eta_s: 12000 }), /about 3\.3 h left/);
  assert.match(libraryStatusLine({ ...running, pages_per_s: 6.93, eta_s: 20 }), /about 20 s left/);
  assert.equal(libraryStatusLine({ ...running, state: "done", failures_by_reason: { scanned: 2, missing_file: 1 } }),
    "Library read from Zotero on the server: 5004 sources indexed; 5000 abstracts searchable; 3 not readable (2 scanned, 1 missing_file).");
  const hosted = { source: "hosted", state: "running", items: 9, attachments: 4, abstracts: 9, sources_done: 10, sources_total: 13, eta_s: 0 };
  assert.equal(libraryStatusLine(hosted), "9 items, 4 attachments on the server; 9 abstracts searchable; indexing 10 of 13 (about 1 s left).");
  // files read ahead of their embedding: their full text is found by its words meanwhile
  assert.equal(libraryStatusLine({ ...running, files_searchable: 40 }),
    "Library read from Zotero on the server: 5004 sources indexed; 5000 abstracts searchable " +
    "(indexing 5004 of 9000; full text of 40 files searchable by its words).");
  assert.equal(libraryStatusLine({ ...hosted, files_searchable: 4 }),
    "9 items, 4 attachments on the server; 9 abstracts searchable; indexing 10 of 13 (about 1 s left); " +
    "full text of 4 files searchable by its words.");
});

test("the bundled demo library is named as the demo, and the plugin sends nothing over it (issue 14)", () => {
  assert.equal(libraryMode({ source: "demo" }), "local");
  assert.equal(libraryStatusLine({ source: "demo", state: "done", items: 3, attachments: 3, indexed: 3 }),
    "Demo library (3 open-access papers) — set ZOCRATES_ZOTERO_DIR for your own.");
  assert.equal(libraryStatusLine({ source: "demo", state: "running", items: 3, sources_done: 1, sources_total: 3 }),
    "Demo library (3 open-access papers; indexing 1 of 3) — set ZOCRATES_ZOTERO_DIR for your own.");
  // before the first read of the library the count is unknown: no "(0 … papers)"
  assert.equal(libraryStatusLine({ source: "demo", state: "idle", items: 0 }),
    "Demo library — set ZOCRATES_ZOTERO_DIR for your own.");
});
