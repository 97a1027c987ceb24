// "Save as Note" under a finished answer. In Zotero a small menu offers a standalone note where
// the Zotero pane points (its selected collection, else its library) or a child note under one
// of the cited items; the host writes it in one transaction (host/zotero-notes.js). The web page
// has no Zotero to write into: the same action downloads the answer as Markdown. The note and
// the Markdown come from core/note.js.

import { answerNoteHtml, answerNoteMarkdown, citedSources } from "../../core/note.js";
import { unsupportedMode } from "../../core/unsupported.js";
import { entryParts } from "../../core/citations.js";
import { openModal } from "../modal.js";
import { disposer } from "../context.js";

export function mount({ document, host, renderer, state, bus }) {
  const d = disposer();

  d.add(bus.on("message.finalized", (message) => {
    const record = message.record;
    if (!record || record.error || !String(record.prose ?? record.text ?? "").trim()) return;
    const right = message.actions.querySelector(".message-actions-right");
    const b = document.createElement("button");
    b.className = "action-btn save-note-btn";
    if (host.canWriteNotes) {
      b.textContent = "Save as Note";
      b.title = "Save this answer as a Zotero note, with its citations linked to their items";
      b.addEventListener("click", () => openNoteMenu(record));
    } else {
      b.textContent = "Save as Markdown";
      b.title = "Download this answer as Markdown, with its citations linked to their Zotero items (this page cannot write into Zotero)";
      b.addEventListener("click", () => downloadMarkdown(record));
    }
    // Before the message information (⋯) when the actions show it.
    right.insertBefore(b, right.querySelector(".info-btn"));
  }));

  /** Unsupported claims are shown in the note as the user chose to see them (⋯ → Unsupported Claims). */
  function markers() {
    return { mode: unsupportedMode(state.settings?.unsupported_claims) };
  }

  async function downloadMarkdown(record) {
    try {
      await host.saveFile("answer.md", answerNoteMarkdown(record, markers()), "text/markdown");
    } catch (exc) {
      bus.emit("status", `Could not save the answer: ${exc.message}`, true);
    }
  }

  function openNoteMenu(record) {
    const m = openModal(document, "Save as a Zotero Note", { id: "save-note" });
    const list = document.createElement("div");
    list.className = "note-targets";
    const choice = (label, detail, parent) => {
      const b = document.createElement("button");
      b.className = "secondary-btn note-target";
      b.textContent = label;
      if (detail) {
        const span = document.createElement("span");
        span.className = "note-target-detail";
        span.textContent = ` ${detail}`;
        b.appendChild(span);
      }
      b.addEventListener("click", async () => {
        m.close();
        await save(record, parent);
      });
      list.appendChild(b);
    };
    let where = "";
    try {
      where = host.noteWhere();
    } catch (exc) {
      where = "";
      const p = document.createElement("p");
      p.className = "info-muted";
      p.textContent = exc.message;
      m.body.appendChild(p);
    }
    if (where) choice(`Standalone note in ${where}`, "", null);
    const sources = citedSources(record);
    if (sources.length) {
      const label = document.createElement("p");
      label.className = "info-muted";
      label.textContent = "Or as a child note of a cited item:";
      list.appendChild(label);
      for (const ref of sources) {
        const [heading, title] = entryParts(ref);
        choice(heading, title, { item_key: ref.item_key, library_id: ref.library_id || "user" });
      }
    }
    m.body.appendChild(list);
  }

  async function save(record, parent) {
    try {
      const html = answerNoteHtml(record, { md: renderer.md, ...markers() });
      const saved = await host.saveNote(html, { parent });
      bus.emit("status", `Saved the answer as a note ${saved.where}.`, false);
    } catch (exc) {
      bus.emit("status", `Could not save the note: ${exc.message}`, true);
    }
  }

  return d.dispose;
}
