/* Zocrates: Zotero bootstrap (Zotero 7 to 10, manifest.json's range). Registers the chrome://
   package, loads the hooks and only dispatches to them; every registration the hooks make is
   undone on shutdown. */
/* global Components, Services, Zotero, ChromeUtils */
var chromeHandle;
var scope;

function install() {}

async function startup({ id, version, rootURI }, reason) {
  await Zotero.initializationPromise;
  const aomStartup = Components.classes["@mozilla.org/addons/addon-manager-startup;1"]
    .getService(Components.interfaces.amIAddonManagerStartup);
  const manifestURI = Services.io.newURI(rootURI + "manifest.json");
  chromeHandle = aomStartup.registerChrome(manifestURI, [["content", "zocrates", "content/"]]);
  scope = { Zotero, rootURI, pluginID: id, version };
  Services.scriptloader.loadSubScript(rootURI + "content/zotero/prefs.js", scope);
  Services.scriptloader.loadSubScript(rootURI + "content/zotero/pane.js", scope);
  Services.scriptloader.loadSubScript(rootURI + "content/zotero/hooks.js", scope);
  await scope.ZocratesHooks.onStartup(scope);
}

function onMainWindowLoad({ window }) {
  scope?.ZocratesHooks.onMainWindowLoad(window);
}

function onMainWindowUnload({ window }) {
  scope?.ZocratesHooks.onMainWindowUnload(window);
}

function shutdown(data, reason) {
  if (reason === APP_SHUTDOWN) return;
  scope?.ZocratesHooks.onShutdown();
  scope = undefined;
  chromeHandle?.destruct();
  chromeHandle = undefined;
}

function uninstall() {}
