// Notes written into Zotero: an answer saved as a note, standalone where the Zotero pane points
// (its selected collection, else its selected library's root) or as the child of an item, in
// one transaction. The HTML comes from core/note.js; this module only places it. In the hosted
// deployment the note is written here too, into the local Zotero: Zotero's own sync carries it
// to zotero.org, and the library sync to the server, like any note.

import { selectedCollections, selectedLibraryIDs } from "./zotero-compat.js";

/**
 * `pane()`: the active Zotero pane; `itemByKey(key, libraryId)`: an item looked up in the
 * library a citation names (throws a clear error when it is gone).
 */
export function createNoteWriter(Zotero, { pane, itemByKey }) {
  const path = (c) => (c.parentID ? `${path(Zotero.Collections.get(c.parentID))} › ${c.name}` : c.name);

  /**
   * Where a standalone note goes now: `{libraryID, collectionID, where}`, the first library
   * selected in the pane (My Library when none) and its first selected collection (none when a
   * library row is selected). Throws when that library takes no new items (a feed, a read-only
   * group), so that nothing is written.
   */
  function standaloneTarget() {
    const libraryID = selectedLibraryIDs(pane())[0] ?? Zotero.Libraries.userLibraryID;
    const library = Zotero.Libraries.get(libraryID);
    if (!library) throw new Error("The library selected in Zotero is no longer there. Select another library and save again.");
    if (!["user", "group"].includes(library.libraryType) || !library.editable) {
      throw new Error(`You cannot add notes to “${library.name}” (it is read-only). Select My Library or a collection you may edit, or save the note under a cited item.`);
    }
    const collection = selectedCollections(pane()).find((c) => c.libraryID === libraryID) || null;
    return { libraryID, collectionID: collection?.id ?? null, where: collection ? `${library.name} › ${path(collection)}` : library.name };
  }

  /** The item a child note goes under: a regular item the user may edit. */
  async function parentItem({ item_key: key, library_id: libraryId }) {
    const item = await itemByKey(key, libraryId || "user");
    if (!item.isRegularItem()) throw new Error("A note can only be added under a regular item (not under a file or another note).");
    if (!item.isEditable()) {
      throw new Error(`You cannot add notes to “${Zotero.Libraries.get(item.libraryID).name}” (it is read-only).`);
    }
    return item;
  }

  return {
    /** Where a standalone note would go now: "Lab Papers › Reading", "My Library". */
    standaloneWhere: () => standaloneTarget().where,

    /**
     * Write `html` as a new note in one transaction: as the child of `parent` (a citation's
     * `{item_key, library_id}`) when given, else standalone where the pane points. Resolves
     * with `{key, libraryID, where}`; a target that is gone or read-only is an error and
     * nothing is written.
     */
    async saveNote(html, { parent = null } = {}) {
      const under = parent ? await parentItem(parent) : null;
      const target = under ? null : standaloneTarget();
      const note = new Zotero.Item("note");
      await Zotero.DB.executeTransaction(async () => {
        if (under) {
          note.libraryID = under.libraryID;
          note.parentID = under.id;
        } else {
          note.libraryID = target.libraryID;
          if (target.collectionID) note.setCollections([target.collectionID]);
        }
        note.setNote(html);
        await note.save();
      });
      const where = under ? `under “${under.getField("title") || "an untitled item"}”` : `in ${target.where}`;
      return { key: note.key, libraryID: note.libraryID, where };
    },
  };
}
