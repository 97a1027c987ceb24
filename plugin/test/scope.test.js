// The scope chip's options (docs/api.md, "The scope of a question"): in Zotero from what the
// window shows (the reader's PDF, the selected items, collection and library; host/zotero.js
// against the fake Zotero), on the web page from the server's collections and tags
// (core/scope.js), and the scope sent with the question (core/client.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import vm from "node:vm";
import { createFakeZotero, fakeTabs, fakeWindow, fakeZoteroPane, ZOTERO_VERSIONS } from "./fake-zotero.js";
import { createHost } from "../content/host/zotero.js";
import { createHost as createWebHost } from "../content/host/web.js";
import { ApiClient } from "../content/core/client.js";
import { MAX_SCOPE_ITEMS, MAX_SCOPE_LABEL_CHARS } from "../content/core/limits.js";
import { WHOLE_LIBRARY, filterOptions, itemsOption, sameScope, scopeLabel, webScopeOptions } from "../content/core/scope.js";

const PDF = readFileSync(new URL("../../../shared/fixtures/pdfs/cermine/test1.pdf", import.meta.url));

function zoteroWithPlugin(version) {
  const Zotero = createFakeZotero({ version });
  const ctx = {};
  vm.runInNewContext(`${readFileSync(new URL("../content/zotero/prefs.js", import.meta.url), "utf8")}\nthis.ZocratesPrefs = ZocratesPrefs;`, ctx);
  Zotero.Zocrates = { prefs: ctx.ZocratesPrefs.create(Zotero.Prefs), suppressedItemIDs: new Set(), libraryObserverOwner: null };
  const pane = fakeZoteroPane(Zotero);
  Zotero.getActiveZoteroPane = () => pane;
  const tabs = fakeTabs(Zotero);
  return { Zotero, pane, tabs, host: createHost(fakeWindow(Zotero), Zotero) };
}

const byLabel = (options) => Object.fromEntries(options.map((o) => [o.label, o.scope]));

for (const version of ZOTERO_VERSIONS) test(`Zotero ${version}: the whole library, the selected items, collection and library; This PDF in a reader`, async () => {
  const { Zotero, pane, tabs, host } = zoteroWithPlugin(version);
  const lab = Zotero.Libraries.addGroup({ groupID: 4711, name: "Lab Papers" });
  const reading = Zotero.createCollection("Reading", null, lab.libraryID);
  const methods = Zotero.createCollection("Methods", reading.id, lab.libraryID);
  const twins = await Zotero.addItem({ libraryID: lab.libraryID, fields: { title: "Twins" }, file: { bytes: PDF, name: "twins.pdf" } });
  const rag = await Zotero.addItem({ libraryID: lab.libraryID, fields: { title: "RAG" } });

  // Nothing selected in My Library: the whole library, and My Library itself.
  assert.deepEqual(await host.scopeOptions(), [WHOLE_LIBRARY, { label: "My Library", scope: { kind: "library", library_id: "user" } }]);

  // Two rows selected in a group's subcollection, one of them a child attachment.
  await pane.collectionsView.selectCollection(methods.id);
  await pane.itemsView.selectItems([twins.attachment.id, rag.item.id, twins.item.id]);
  let options = byLabel(await host.scopeOptions());
  assert.deepEqual(Object.keys(options), ["Whole library", "2 selected items", "Reading › Methods", "Lab Papers"]);
  assert.deepEqual(options["2 selected items"], { kind: "items", items: [
    { library_id: "group-4711", item_key: twins.item.key }, { library_id: "group-4711", item_key: rag.item.key }] });
  assert.deepEqual(options["Reading › Methods"], { kind: "collection", library_id: "group-4711", collection_key: methods.key, subcollections: false });
  assert.deepEqual(options["Lab Papers"], { kind: "library", library_id: "group-4711" });

  // Zotero shows subcollections' items: so does the scope.
  Zotero.Prefs.set("recursiveCollections", true);
  options = await host.scopeOptions();
  assert.deepEqual(options.find((o) => o.label === "Reading › Methods"), { label: "Reading › Methods", detail: "with subcollections",
    scope: { kind: "collection", library_id: "group-4711", collection_key: methods.key, subcollections: true } });

  // A reader tab: This PDF (its attachment), and no item selection (getSelectedItems would
  // answer the reader's parent item there, which is not what the user selected).
  tabs.openReader(twins.attachment.id);
  options = await host.scopeOptions();
  assert.deepEqual(options[1], { label: "This PDF", detail: "Twins",
    scope: { kind: "attachment", library_id: "group-4711", attachment_key: twins.attachment.key } });
  assert.ok(!options.some((o) => o.scope?.kind === "items"));

  // A reader tab not loaded yet offers no PDF; back on the library tab the selection returns.
  tabs.openReader(twins.attachment.id, { loaded: false });
  assert.ok(!(await host.scopeOptions()).some((o) => o.scope?.kind === "attachment"));
  tabs.select("zotero-pane");
  assert.ok((await host.scopeOptions()).some((o) => o.label === "2 selected items"));
  assert.deepEqual([Zotero.errors, Zotero.warnings], [[], []]);
});

for (const version of ZOTERO_VERSIONS) test(`Zotero ${version}: the tags selected in the tag selector, each in the selected library`, async () => {
  const { Zotero, pane, host } = zoteroWithPlugin(version);
  const lab = Zotero.Libraries.addGroup({ groupID: 4711, name: "Lab Papers" });
  const reading = Zotero.createCollection("Reading", null, lab.libraryID);
  const methods = Zotero.createCollection("Methods", null, lab.libraryID);
  await pane.collectionsView.selectCollection(reading.id);
  assert.ok(!(await host.scopeOptions()).some((o) => o.scope?.kind === "tag"), "no tag selected: no tag offered");

  pane.tagSelector.handleTagSelected("review");
  pane.tagSelector.handleTagSelected("to-read");
  const options = await host.scopeOptions();
  assert.deepEqual(options.map((o) => [o.group ?? "", o.label]), [
    ["", "Whole library"], ["", "Reading"], ["", "Lab Papers"], ["Selected tags", "review"], ["Selected tags", "to-read"]]);
  assert.deepEqual(options[3].scope, { kind: "tag", library_id: "group-4711", tag: "review" });
  assert.deepEqual(options.map(scopeLabel).slice(3), ["Tag: review", "Tag: to-read"]);

  pane.tagSelector.handleTagSelected("review"); // a second click deselects it
  assert.deepEqual((await host.scopeOptions()).filter((o) => o.scope?.kind === "tag").map((o) => o.label), ["to-read"]);
  await pane.collectionsView.selectCollection(methods.id); // another row clears the tag selection, as in Zotero
  assert.ok(!(await host.scopeOptions()).some((o) => o.scope?.kind === "tag"));
  pane.tagSelector.handleTagSelected("review");
  pane.toggleTagSelector(); // hidden: ZoteroPane.tagSelector is null
  assert.equal(pane.tagSelector, null);
  assert.deepEqual((await host.scopeOptions()).map((o) => o.label), ["Whole library", "Methods", "Lab Papers"]);
  assert.deepEqual([Zotero.errors, Zotero.warnings], [[], []]);
});

test("a selection larger than the server takes is cut to its limit, and says so", () => {
  const refs = Array.from({ length: MAX_SCOPE_ITEMS + 5 }, (_, i) => ({ library_id: "user", item_key: `K${String(i).padStart(7, "0")}` }));
  const option = itemsOption([...refs, refs[0]]);
  assert.equal(option.scope.items.length, MAX_SCOPE_ITEMS);
  assert.equal(option.label, `First ${MAX_SCOPE_ITEMS.toLocaleString("en")} selected items of ${(MAX_SCOPE_ITEMS + 5).toLocaleString("en")}`);
  assert.equal(itemsOption([]), null);
  assert.equal(itemsOption([refs[0], refs[0]]).label, "1 selected item");
});

const COLLECTIONS = {
  libraries: [{ library_id: "user", name: "My Library" }, { library_id: "group-9", name: "Lab" }],
  collections: [
    { library_id: "user", key: "CHILD001", name: "Reviews", parent_key: "PARENT01", items: 2 },
    { library_id: "user", key: "PARENT01", name: "Trauma", parent_key: null, items: 1 },
    { library_id: "group-9", key: "NEURO001", name: "Neuro", parent_key: null, items: 4 },
  ],
  truncated: false,
};
const TAGS = { libraries: COLLECTIONS.libraries, tags: [{ library_id: "user", tag: "to-read", items: 3 }], truncated: false };

test("web page: libraries, collections by path (with subcollections where they have any) and tags, from the server", () => {
  const options = webScopeOptions(COLLECTIONS, TAGS);
  assert.deepEqual(options.map((o) => [o.group ?? "", o.label, o.detail ?? ""]), [
    ["", "Whole library", ""],
    ["Libraries", "My Library", ""],
    ["Libraries", "Lab", ""],
    ["Collections", "My Library: Trauma", "1 item"],
    ["Collections", "My Library: Trauma, with subcollections", ""],
    ["Collections", "My Library: Trauma › Reviews", "2 items"],
    ["Collections", "Lab: Neuro", "4 items"],
    ["Tags", "My Library: to-read", "3 items"],
  ]);
  assert.deepEqual(options[4].scope, { kind: "collection", library_id: "user", collection_key: "PARENT01", subcollections: true });
  assert.deepEqual(options[7].scope, { kind: "tag", library_id: "user", tag: "to-read" });
  assert.deepEqual(filterOptions(options, "trauma REV").map((o) => o.label), ["My Library: Trauma › Reviews"]);
  const one = webScopeOptions({ ...COLLECTIONS, libraries: COLLECTIONS.libraries.slice(0, 1) }, { tags: [] });
  assert.deepEqual(one.map((o) => o.label), ["Whole library", "Trauma", "Trauma, with subcollections", "Trauma › Reviews"],
    "one library: no library options, no prefixes (the group's collection has no library here)");
  assert.ok(sameScope(options[4].scope, { ...options[4].scope }) && !sameScope(options[3].scope, options[4].scope));
});

test("the web host asks the server for collections and tags; a question carries its scope", async () => {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    const body = url.endsWith("/library/collections") ? COLLECTIONS : TAGS;
    return { ok: true, status: 200, json: async () => body };
  };
  const api = new ApiClient({ baseUrl: "http://h:1", token: () => "tok", fetch });
  const window = { sessionStorage: new Map(), localStorage: new Map() };
  const options = await createWebHost(window).scopeOptions(api);
  assert.deepEqual(calls.map((c) => c.url).sort(), ["http://h:1/library/collections", "http://h:1/library/tags"]);
  assert.ok(calls.every((c) => c.init.headers.Authorization === "Bearer tok"));
  assert.equal(options.length, 8);

  const sent = [];
  const streaming = async (url, init) => {
    sent.push(JSON.parse(init.body));
    const frame = `id: 1\nevent: done\ndata: {}\n\n`;
    let done = false;
    return { ok: true, status: 200, body: { getReader: () => ({
      read: async () => (done ? { done: true } : ((done = true), { done: false, value: new TextEncoder().encode(frame) })),
      cancel: async () => {},
    }) } };
  };
  const chat = new ApiClient({ baseUrl: "http://h:1", token: () => "tok", fetch: streaming });
  await chat.streamTurn({ message: "q", scope: options[7].scope, scopeLabel: scopeLabel(options[7]), onEvent: () => {} });
  await chat.streamTurn({ message: "q", scope: null, scopeLabel: "", onEvent: () => {} });
  assert.deepEqual(sent, [
    { message: "q", scope: { kind: "tag", library_id: "user", tag: "to-read" }, scope_label: "Tag: to-read (My Library)" },
    { message: "q" },
  ]);
});

test("the line under a question names its scope by kind, as the turn keeps it (scope_label)", async () => {
  const several = webScopeOptions(COLLECTIONS, TAGS);
  assert.deepEqual(several.map(scopeLabel), ["", "Library: My Library", "Library: Lab", "Collection: My Library › Trauma",
    "Collection: My Library › Trauma (with subcollections)", "Collection: My Library › Trauma › Reviews",
    "Collection: Lab › Neuro", "Tag: to-read (My Library)"]);
  const one = webScopeOptions({ ...COLLECTIONS, libraries: COLLECTIONS.libraries.slice(0, 1) }, { tags: [TAGS.tags[0]] });
  assert.deepEqual(one.map(scopeLabel), ["", "Collection: Trauma", "Collection: Trauma (with subcollections)",
    "Collection: Trauma › Reviews", "Tag: to-read"]);
  assert.equal(scopeLabel(itemsOption([{ library_id: "user", item_key: "ABCD2345" }, { library_id: "user", item_key: "EFGH6789" }])), "2 selected items");
  assert.equal(scopeLabel({ label: "This PDF", detail: "Twins", scope: { kind: "attachment", library_id: "user", attachment_key: "ABCD2345" } }), "This PDF");
  const long = scopeLabel({ label: "x".repeat(400), scope: { kind: "collection", library_id: "user", collection_key: "ABCD2345", subcollections: true } });
  assert.equal(long.length, MAX_SCOPE_LABEL_CHARS);
  assert.ok(long.startsWith("Collection: xxx") && long.endsWith("…"));

  const { Zotero, pane, host } = zoteroWithPlugin(ZOTERO_VERSIONS.at(-1));
  const reading = Zotero.createCollection("Reading", null, Zotero.Libraries.userLibraryID);
  await pane.collectionsView.selectCollection(reading.id);
  assert.deepEqual((await host.scopeOptions()).map(scopeLabel), ["", "Collection: Reading", "Library: My Library"]);
});
