/* Zocrates hooks: lifecycle events dispatched from bootstrap.js to the feature modules
   (prefs, the sidebar pane, the preferences pane). Each registration pushes its undo. */
/* global Zotero, ZocratesPrefs, ZocratesPane, rootURI, pluginID, version */
/* exported ZocratesHooks */
var ZocratesHooks = (function () {
  const PREF_PANE_ID = "zocrates-prefpane";
  const undo = [];

  async function onStartup(scope) {
    const prefs = ZocratesPrefs.create(Zotero.Prefs);
    // suppressedItemIDs: items this plugin is importing, whose notifier events the library
    // sync ignores; libraryObserverOwner: the one sidebar that watches the library. Both live
    // here, in the bootstrap scope, because every window's sidebar shares them.
    Zotero.Zocrates = { prefs, version: scope.version, rootURI: scope.rootURI, panes: new Map(),
      suppressedItemIDs: new Set(), libraryObserverOwner: null };
    undo.push(() => {
      prefs.unregisterAll();
      delete Zotero.Zocrates;
    });

    let username = "";
    try {
      username = Zotero.Prefs.get("sync.server.username") || Zotero.Users.getCurrentUsername() || "";
    } catch (exc) {
      Zotero.debug(`Zocrates: no sync username (${exc})`);
    }
    prefs.detectPoliteEmail(username);

    // A fixed id, so "Settings" in the sidebar can open this pane (Zotero makes up a random
    // one otherwise; xpcom/preferencePanes.js, register(), 7.0 to 10.0).
    const paneID = await Zotero.PreferencePanes.register({
      id: PREF_PANE_ID,
      pluginID: scope.pluginID,
      src: scope.rootURI + "content/zotero/preferences.xhtml",
      scripts: [scope.rootURI + "content/zotero/preferences.js"],
      stylesheets: [scope.rootURI + "content/zotero/preferences.css"],
      label: "Zocrates",
      image: scope.rootURI + "content/icons/zocrates.svg",
    });
    Zotero.Zocrates.prefPaneID = paneID;
    undo.push(() => Zotero.PreferencePanes.unregister?.(paneID));

    for (const win of Zotero.getMainWindows()) onMainWindowLoad(win);
  }

  function onMainWindowLoad(win) {
    if (!win.ZoteroPane || Zotero.Zocrates.panes.has(win)) return;
    Zotero.Zocrates.panes.set(win, ZocratesPane.mount(win, Zotero.Zocrates.prefs));
  }

  function onMainWindowUnload(win) {
    const unmount = Zotero.Zocrates?.panes.get(win);
    if (unmount) {
      unmount();
      Zotero.Zocrates.panes.delete(win);
    }
  }

  function onShutdown() {
    for (const win of [...(Zotero.Zocrates?.panes.keys() || [])]) onMainWindowUnload(win);
    while (undo.length) {
      try {
        undo.pop()();
      } catch (exc) {
        Zotero.logError(exc);
      }
    }
  }

  return { onStartup, onMainWindowLoad, onMainWindowUnload, onShutdown };
})();
