// Default preferences (Zotero 7 and later read this file from the plugin root). The names and
// defaults are defined once, in content/zotero/prefs.js; keep the two in step (a test checks).
pref("extensions.zocrates.serverUrl", "http://127.0.0.1:8000");
pref("extensions.zocrates.token", "");
pref("extensions.zocrates.politeEmail", "");
pref("extensions.zocrates.fontSize", "medium");
pref("extensions.zocrates.sidebarOpen", true);
pref("extensions.zocrates.sidebarWidth", 420);
pref("extensions.zocrates.settingsRevision", 0);
