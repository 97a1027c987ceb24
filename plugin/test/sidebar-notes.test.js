// The "Save as Note" action under an answer (sidebar/features/notes.js), mounted on a small DOM
// with a fake host: in Zotero a menu of where the note goes, the note written through the host;
// on the web page the answer downloaded as Markdown. And the import (features/import.js) handing
// each paper's provenance note to the host.
import { test } from "node:test";
import assert from "node:assert/strict";
import markdownit from "markdown-it";
import katex from "katex";
import { createRenderer } from "../content/core/render.js";
import { createBus } from "../content/sidebar/context.js";
import { mount } from "../content/sidebar/features/notes.js";
import { fakeDocument } from "./fake-dom.js";
import { RECORD_V2 } from "./fixtures.js";

const RECORD = {
  ...RECORD_V2,
  citations: RECORD_V2.citations.map((c) => (c.index === 2 || c.index === 3 ? { ...c, library_id: "group-4711" } : c)),
  references: { ...RECORD_V2.references, cited: [RECORD_V2.references.cited[0], { ...RECORD_V2.references.cited[1], library_id: "group-4711" }] },
};

function mountWith(host) {
  const document = fakeDocument();
  const bus = createBus();
  const statuses = [];
  bus.on("status", (text, error) => statuses.push([text, Boolean(error)]));
  const unmount = mount({ document, host, renderer: createRenderer({ markdownit, katex }), state: {}, bus });
  const message = (record) => {
    const actions = document.createElement("div");
    actions.innerHTML = '<div class="message-actions-right"><button class="action-btn copy-btn">Copy</button>' +
      '<button class="action-btn info-btn">⋯</button></div>';
    document.body.appendChild(actions);
    bus.emit("message.finalized", { record, actions });
    return actions.querySelector(".message-actions-right");
  };
  return { document, bus, statuses, unmount, message };
}

function zoteroHost({ where = "Lab Papers › Reading", fail = null } = {}) {
  const saved = [];
  return {
    saved,
    canWriteNotes: true,
    noteWhere() {
      if (where instanceof Error) throw where;
      return where;
    },
    async saveNote(html, { parent }) {
      if (fail) throw fail;
      saved.push({ html, parent });
      return { where: parent ? "under “Attention Is All You Need”" : `in ${where}` };
    },
  };
}

test("in Zotero: Save as Note, before ⋯, offers a standalone note where the pane points and each cited item", async () => {
  const host = zoteroHost();
  const { document, statuses, message } = mountWith(host);
  const row = message(RECORD);
  assert.deepEqual(row.children.map((b) => b.textContent), ["Copy", "Save as Note", "⋯"]);
  await row.querySelector(".save-note-btn").click();
  const menu = document.getElementById("save-note");
  assert.ok(menu, "the menu opens");
  const choices = menu.querySelectorAll(".note-target");
  assert.deepEqual(choices.map((b) => b.textContent), [
    "Standalone note in Lab Papers › Reading", "Jonsson & Stefansson (2021) Somatic rates", "Vaswani et al. (2017) Attention Is All You Need"]);

  await choices[2].click();
  assert.equal(document.getElementById("save-note"), null, "the menu closes");
  assert.equal(host.saved.length, 1);
  assert.deepEqual(host.saved[0].parent, { item_key: "ITEMBBBB", library_id: "group-4711" });
  assert.match(host.saved[0].html, /^<h1>What about twins\?<\/h1>/);
  assert.match(host.saved[0].html, /<a href="zotero:\/\/select\/groups\/4711\/items\/ITEMBBBB">Vaswani et al\., 2017<\/a>/);
  assert.match(host.saved[0].html, /<h2>References<\/h2>/);
  assert.deepEqual(statuses.at(-1), ["Saved the answer as a note under “Attention Is All You Need”.", false]);

  await row.querySelector(".save-note-btn").click();
  await document.getElementById("save-note").querySelector(".note-target").click();
  assert.equal(host.saved[1].parent, null);
  assert.deepEqual(statuses.at(-1), ["Saved the answer as a note in Lab Papers › Reading.", false]);
});

test("in Zotero: a read-only library selected offers only child notes and says why; a failed write is said", async () => {
  const host = zoteroHost({ where: new Error("You cannot add notes to “Shared” (it is read-only)."), fail: new Error("disk full") });
  const { document, statuses, message } = mountWith(host);
  await message(RECORD).querySelector(".save-note-btn").click();
  const menu = document.getElementById("save-note");
  assert.match(menu.querySelector(".modal-body p").textContent, /You cannot add notes to “Shared”/);
  const choices = menu.querySelectorAll(".note-target");
  assert.deepEqual(choices.map((b) => b.textContent.split(" (")[0]), ["Jonsson & Stefansson", "Vaswani et al."]);
  await choices[0].click();
  assert.deepEqual(statuses.at(-1), ["Could not save the note: disk full", true]);
});

test("on the web page: Save as Markdown downloads the answer with its linked citations and references", async () => {
  const files = [];
  const host = { canWriteNotes: false, saveFile: async (name, text, type) => files.push({ name, text, type }) };
  const { message } = mountWith(host);
  const row = message(RECORD);
  const button = row.querySelector(".save-note-btn");
  assert.equal(button.textContent, "Save as Markdown");
  await button.click();
  assert.equal(files.length, 1);
  assert.equal(files[0].name, "answer.md");
  assert.equal(files[0].type, "text/markdown");
  assert.match(files[0].text, /^# What about twins\?\n\nMutation rates were estimated from twins \(\[Jonsson & Stefansson, 2021\]\(zotero:\/\/select\/library\/items\/ITEMAAAA\)\)\./);
  assert.match(files[0].text, /\n## References\n\n- \[Jonsson & Stefansson \(2021\)\]/);
});

test("no action under a turn that ended in an error or has no answer; none after unmount", () => {
  const { message, unmount } = mountWith(zoteroHost());
  assert.equal(message({ ...RECORD, error: { code: "timeout", message: "too slow" } }).querySelector(".save-note-btn"), null);
  assert.equal(message({ ...RECORD, prose: "  ", text: "" }).querySelector(".save-note-btn"), null);
  unmount();
  assert.equal(message(RECORD).querySelector(".save-note-btn"), null);
});

test("import from discovery: each chosen paper goes to the host with its provenance note", async () => {
  const { mount: mountImport } = await import("../content/sidebar/features/import.js");
  const document = fakeDocument();
  const messages = document.createElement("div");
  messages.id = "messages";
  document.body.appendChild(messages);
  const imported = [];
  const host = {
    canImport: true,
    canSyncLibrary: false,
    listImportTargets: async () => [{ libraryID: 1, libraryId: "user", name: "My Library", filesEditable: true, selected: true, collections: [] }],
    async importBatch(plan, options) {
      imported.push({ plan, options });
      return { results: plan.map(({ candidate }) => ({ title: candidate.title, status: "metadata" })), ingest: "" };
    },
  };
  const api = { prepareBatch: async (sessionId, turnId, ids) => ({ batch_id: "b1", files: ids.map((id) => ({ candidate_id: id, status: "no_pdf" })) }) };
  const bus = createBus();
  mountImport({ window: {}, document, host, api, renderer: createRenderer({ markdownit, katex }), state: { sessionId: "s1" }, $: (id) => document.getElementById(id), bus });
  const record = {
    turn_id: "t5", session_id: "s1", intent: "discovery", question: "Find papers on self-reflection", completed_at: "2026-11-30T10:00:00Z",
    prose: "Candidate 1 (Asai, 2024) adds reflection tokens. Candidate 2 grades retrieval.",
    candidates: [
      { candidate_id: "cand_1", title: "Self-RAG", authors: ["Akari Asai"], year: 2024 },
      { candidate_id: "cand_2", title: "CRAG", authors: ["Shi-Qi Yan"], year: 2024 },
    ],
  };
  const extra = document.createElement("div");
  messages.appendChild(extra);
  bus.emit("message.finalized", { record, extra });
  const second = extra.querySelectorAll(".candidate-card")[1].querySelector("input");
  second.checked = true;
  await second.dispatch("change");
  await extra.querySelector(".import-btn").click();
  await new Promise((resolve) => setTimeout(resolve, 0)); // the targets are listed before the dialog opens
  await document.getElementById("import-confirm").parentNode.querySelector(".confirm-btn").click();
  assert.equal(imported.length, 1);
  assert.deepEqual(imported[0].plan.map((p) => p.candidate.candidate_id), ["cand_2"]);
  assert.equal(imported[0].plan[0].note, "<h2>Found with Zocrates</h2>\n<p><strong>Question:</strong> Find papers on self-reflection</p>\n" +
    "<p><strong>Found:</strong> 2026-11-30</p>\n<p><strong>What the overview said:</strong></p>\n" +
    "<blockquote><p>Candidate 2 grades retrieval.</p></blockquote>\n");
});
