// Drives the plugin's library sync (host/zotero-library.js) against a REAL gateway: a fake
// Zotero (test/fake-zotero.js) holds a paper with a real PDF in My Library and another in a
// group library (and a feed, which is not sent); the sync sends both libraries over HTTP with
// the plugin's ApiClient. Run by tests/ui/test_plugin_library_sync.py, which starts the stack
// and checks what the server indexed. Prints one JSON line.
// Env: ZOCRATES_URL, ZOCRATES_TOKEN, ZOCRATES_PDF, ZOCRATES_GROUP_PDF, ZOCRATES_GROUP_ID.
import { readFileSync } from "node:fs";
import { createFakeZotero, fakeIOUtils } from "../fake-zotero.js";
import { ApiClient } from "../../content/core/client.js";
import { createLibrarySync, fileStore } from "../../content/host/zotero-library.js";

const { ZOCRATES_URL: url, ZOCRATES_TOKEN: token, ZOCRATES_PDF: pdfPath, ZOCRATES_GROUP_PDF: groupPdfPath,
  ZOCRATES_GROUP_ID: groupID } = process.env;
const Zotero = createFakeZotero();
const { item, attachment } = await Zotero.addItem({
  fields: { title: "Complications related to deep venous thrombosis prophylaxis in trauma", date: "2010", DOI: "10.1186/1752-2897-4-1" },
  creators: [{ creatorType: "author", firstName: "Indraneel", lastName: "Datta" }],
  file: { bytes: readFileSync(pdfPath), name: "datta.pdf" },
});
const group = Zotero.Libraries.addGroup({ groupID: Number(groupID), name: "Lab papers" });
const { attachment: groupAttachment } = await Zotero.addItem({
  libraryID: group.libraryID,
  fields: { title: "A paper shared in the lab's group library", date: "2012" },
  file: { bytes: readFileSync(groupPdfPath), name: "group.pdf" },
});
const feed = Zotero.Libraries.addFeed({ name: "A feed" });
await Zotero.addItem({ libraryID: feed.libraryID, fields: { title: "A feed entry, never sent" } });
const api = new ApiClient({ baseUrl: url, token: () => token, fetch });
const store = fileStore(fakeIOUtils(), `${Zotero.dataDir}/zocrates-sync.json`);
const phases = [];
const make = () => createLibrarySync({ Zotero, IOUtils: fakeIOUtils(), crypto: globalThis.crypto, api, store, onProgress: (p) => phases.push(p.phase) });

const sync = make();
const first = await sync.syncLibrary();
// A change while the plugin watches: a note added to the paper reaches the server.
sync.observe();
const note = new Zotero.Item("note");
note.parentID = item.id;
note.setNote("<p>Read the methods.</p>");
await note.saveTx();
await sync.flush();
await sync.idle();
// A restart with the same remembered state: nothing to send.
const restart = await make().syncLibrary();
const status = await api.libraryStatus();
console.log(JSON.stringify({ first, restart, status, phases: [...new Set(phases)],
  keys: { item: item.key, attachment: attachment.key, note: note.key, groupAttachment: groupAttachment.key } }));
