// What differs between the Zotero versions the plugin runs on (7.0 to 10.x, the manifest's
// range): one helper per difference, each naming the version and the Zotero source file it was
// read from (github.com/zotero/zotero at tags 7.0.32, 8.0.5, 9.0.6 and 10.0.0). The whole
// inventory of the APIs the plugin calls is in docs/plugin.md, "Zotero versions".

/**
 * The libraries selected in the Zotero pane's collection tree, in tree order ([] when none).
 * Zotero 10 lets several rows be selected: it added getSelectedLibraryIDs(), and
 * getSelectedLibraryID() now throws ("was removed"). Zotero 7 to 9 have only the singular
 * getter (the focused row's library, false when there is none).
 * Source: chrome/content/zotero/zoteroPane.js, collectionTree.jsx.
 */
export function selectedLibraryIDs(pane) {
  if (!pane) return [];
  if (typeof pane.getSelectedLibraryIDs === "function") return pane.getSelectedLibraryIDs();
  const libraryID = pane.getSelectedLibraryID?.();
  return libraryID ? [libraryID] : [];
}

/**
 * The collections selected in the Zotero pane ([] when a library or another row is selected).
 * Zotero 10 added getSelectedCollections(), and getSelectedCollection() now throws. Zotero 7
 * to 9 have only getSelectedCollection(): the focused row's collection, or undefined.
 * Source: chrome/content/zotero/zoteroPane.js, collectionTree.jsx.
 */
export function selectedCollections(pane) {
  if (!pane) return [];
  if (typeof pane.getSelectedCollections === "function") return pane.getSelectedCollections();
  const collection = pane.getSelectedCollection?.();
  return collection ? [collection] : [];
}

/**
 * The tags selected in the Zotero pane's tag selector, in selection order ([] when none, or
 * while the tag selector is hidden: ZoteroPane.tagSelector is null then). The same on 7.0 to
 * 10.0: tagSelector.getTagSelection() is the Set of selected names; they filter the items of the
 * selected rows' libraries (Zotero 10: the first selected row's library is the tag selector's
 * `libraryID`). Source: containers/tagSelectorContainer.jsx, zoteroPane.js (updateTagFilter).
 */
export function selectedTags(pane) {
  const selection = pane?.tagSelector?.getTagSelection?.();
  return selection ? [...selection].filter((tag) => typeof tag === "string" && tag.trim()) : [];
}

/**
 * Select an item in the Zotero pane (switching library when needed, not jumping to the library
 * root). Zotero 8 changed selectItem(itemID, inLibraryRoot) to selectItem(itemID, options) and
 * warns on a boolean; an options object on Zotero 7 would read as inLibraryRoot = true. Passing
 * no second argument means the same on every version.
 * Source: chrome/content/zotero/zoteroPane.js (selectItem, selectItems).
 */
export function selectItemInPane(pane, itemID) {
  return pane.selectItem(itemID);
}
