// The host's item actions as the sidebar offers them (the evidence popover, source links, the
// inspector's rows): a failure, or an action the host cannot do, is said in the status line.

/** Run a host action; its failure goes to the status line. */
export async function runHostAction({ bus }, action) {
  try {
    await action();
  } catch (exc) {
    bus.emit("status", exc.message, true);
  }
}

/** Select an item in Zotero; `libraryId` is the citation's ("user" when missing: older turns). */
export function selectInLibrary(ctx, itemKey, libraryId = "user") {
  const { host, bus } = ctx;
  if (!host.canSelectInLibrary) {
    bus.emit("status", host.zoteroOnlyHint, true);
    return;
  }
  runHostAction(ctx, () => host.selectInLibrary(itemKey, libraryId || "user"));
}
