/* Zocrates preferences: the one module that knows pref names. Every pref lives under the
   `extensions.zocrates.` prefix; callers use short names (`prefs.get("serverUrl")`).
   A classic script: loaded into the bootstrap scope, exposed as Zotero.Zocrates.prefs to the
   sidebar and the preferences pane, and evaluated in a vm context by the Node tests. */
/* exported ZocratesPrefs */
var ZocratesPrefs = (function () {
  const PREFIX = "extensions.zocrates.";
  const DEFAULTS = {
    serverUrl: "http://127.0.0.1:8000",
    token: "",
    politeEmail: "",
    fontSize: "medium",
    sidebarOpen: true,
    sidebarWidth: 420,
    // Bumped by the settings pane after it saved the user's settings on the server, so that
    // open sidebars read them again (the settings themselves live on the server, not here).
    settingsRevision: 0,
  };
  const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

  /** The contact email for the polite pools: Zotero's sync username when it is an email. */
  function politeEmailFrom(username) {
    const value = String(username || "").trim();
    return EMAIL_RE.test(value) ? value : "";
  }

  function create(zoteroPrefs) {
    const full = (name) => {
      if (!(name in DEFAULTS)) throw new Error(`Unknown Zocrates preference "${name}"; known: ${Object.keys(DEFAULTS).join(", ")}`);
      return PREFIX + name;
    };
    const observers = [];
    return {
      PREFIX,
      DEFAULTS,
      full,
      get(name) {
        const value = zoteroPrefs.get(full(name), true);
        return value === undefined || value === null ? DEFAULTS[name] : value;
      },
      set(name, value) {
        zoteroPrefs.set(full(name), value, true);
      },
      clear(name) {
        zoteroPrefs.clear(full(name), true);
      },
      /** Watch one pref; returns the undo. */
      observe(name, callback) {
        const id = zoteroPrefs.registerObserver(full(name), () => callback(this.get(name)), true);
        observers.push(id);
        return () => zoteroPrefs.unregisterObserver(id);
      },
      unregisterAll() {
        while (observers.length) zoteroPrefs.unregisterObserver(observers.pop());
      },
      /** Fill the polite-pool email from the sync username once, when it is an email and unset. */
      detectPoliteEmail(syncUsername) {
        if (this.get("politeEmail")) return this.get("politeEmail");
        const email = politeEmailFrom(syncUsername);
        if (email) this.set("politeEmail", email);
        return email;
      },
    };
  }

  return { PREFIX, DEFAULTS, create, politeEmailFrom };
})();
