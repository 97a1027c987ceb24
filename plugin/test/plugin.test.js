// The Zotero plugin package (Zotero 7 to 10): manifest, bootstrap entry points, hooks, prefs,
// and the built .xpi.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import vm from "node:vm";
import { build, zipNames } from "../scripts/build.mjs";
import { createFakeZotero, ZOTERO_VERSIONS } from "./fake-zotero.js";

const root = new URL("..", import.meta.url).pathname;
const read = (p) => readFileSync(join(root, p), "utf8");

/**
 * Mozilla's toolkit version order, for the versions Zotero and its manifests use: dotted
 * numbers, a missing part is 0, "*" is above any number ("10.*" is above 10.99.1, below 11.0).
 */
function compareVersions(a, b) {
  const parts = (v) => String(v).split(".").map((p) => (p === "*" ? Infinity : Number(p)));
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i += 1) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d) return Math.sign(d);
  }
  return 0;
}

test("manifest's Zotero range: every version checked (7.0 to 10.x), not an unchecked future major", () => {
  const { strict_min_version: min, strict_max_version: max } = JSON.parse(read("manifest.json")).applications.zotero;
  const inRange = (v) => compareVersions(v, min) >= 0 && compareVersions(v, max) <= 0;
  assert.deepEqual(ZOTERO_VERSIONS, ["7.0.32", "8.0.5", "9.0.6", "10.0.0"]);
  for (const version of [...ZOTERO_VERSIONS, "7.0", "7.0.0", "8.0", "9.1.2", "10.0.1", "10.5"]) assert.ok(inRange(version), `Zotero ${version} refused by ${min}–${max}`);
  assert.equal(max, "10.*", "the newest major checked (docs/plugin.md, Zotero versions)");
  for (const version of ["6.0.30", "11.0", "11.0.0"]) assert.ok(!inRange(version), `Zotero ${version} accepted by ${min}–${max}`);
});

test("hooks register the preferences pane under a fixed id the sidebar opens", async () => {
  const Zotero = createFakeZotero();
  const registered = [];
  const unregistered = [];
  Zotero.PreferencePanes = {
    register: async (options) => { registered.push(options); return options.id || "plugin-pane-random"; },
    unregister: (id) => unregistered.push(id),
  };
  Zotero.Users = { getCurrentUsername: () => "" };
  Zotero.getMainWindows = () => [];
  const scope = { Zotero };
  vm.runInNewContext(`${read("content/zotero/prefs.js")}\n${read("content/zotero/hooks.js")}\nthis.ZocratesHooks = ZocratesHooks;`, scope);
  await scope.ZocratesHooks.onStartup({ pluginID: "zocrates@zocrates.org", rootURI: "jar:file:///zocrates.xpi!/", version: "0.1.0" });
  assert.equal(registered[0].id, "zocrates-prefpane");
  assert.equal(registered[0].pluginID, "zocrates@zocrates.org");
  assert.equal(Zotero.Zocrates.prefPaneID, "zocrates-prefpane");
  scope.ZocratesHooks.onShutdown();
  assert.deepEqual(unregistered, ["zocrates-prefpane"]);
  assert.equal(Zotero.Zocrates, undefined);
});

test("manifest is valid for Zotero", () => {
  const m = JSON.parse(read("manifest.json"));
  assert.equal(m.manifest_version, 2);
  assert.ok(m.name && /^\d+\.\d+\.\d+$/.test(m.version));
  const z = m.applications?.zotero;
  assert.ok(z, "applications.zotero is required");
  assert.match(z.id, /^[\w.-]+@[\w.-]+$/);
  assert.match(z.update_url, /^https:\/\//);
  assert.equal(z.strict_min_version, "6.999");
  for (const icon of Object.values(m.icons || {})) assert.ok(existsSync(join(root, icon)), `icon ${icon} missing`);
});

test("bootstrap defines the entry points Zotero calls and loads files that exist", () => {
  const src = read("bootstrap.js");
  for (const fn of ["install", "startup", "shutdown", "uninstall", "onMainWindowLoad", "onMainWindowUnload"]) {
    assert.match(src, new RegExp(`function ${fn}\\(`), `${fn} missing`);
  }
  for (const [, path] of src.matchAll(/rootURI \+ "([^"]+)"/g)) assert.ok(existsSync(join(root, path)), `${path} missing`);
  assert.match(src, /registerChrome\(manifestURI, \[\["content", "zocrates", "content\/"\]\]\)/);
  assert.match(src, /chromeHandle\?\.destruct\(\)/);
});

test("prefs: one namespaced module, defaults in step with prefs.js, email from the sync username", () => {
  const ctx = {};
  vm.runInNewContext(`${read("content/zotero/prefs.js")}\nthis.ZocratesPrefs = ZocratesPrefs;`, ctx);
  const { PREFIX, DEFAULTS, create, politeEmailFrom } = ctx.ZocratesPrefs;
  assert.equal(PREFIX, "extensions.zocrates.");
  const declared = Object.fromEntries([...read("prefs.js").matchAll(/pref\("([^"]+)", (.+)\);/g)].map((m) => [m[1], JSON.parse(m[2])]));
  assert.deepEqual(declared, Object.fromEntries(Object.entries(DEFAULTS).map(([k, v]) => [PREFIX + k, v])));
  assert.equal(DEFAULTS.serverUrl, "http://127.0.0.1:8000");
  const store = new Map();
  const prefs = create({ get: (k) => store.get(k), set: (k, v) => store.set(k, v), clear: (k) => store.delete(k) });
  assert.equal(prefs.get("fontSize"), "medium");
  prefs.set("fontSize", "large");
  assert.equal(store.get("extensions.zocrates.fontSize"), "large");
  assert.throws(() => prefs.get("nope"), /Unknown Zocrates preference "nope"/);
  assert.equal(politeEmailFrom("ada@uni.edu"), "ada@uni.edu");
  assert.equal(politeEmailFrom("ada"), "");
  assert.equal(prefs.detectPoliteEmail("ada@uni.edu"), "ada@uni.edu");
  prefs.set("politeEmail", "edited@uni.edu");
  assert.equal(prefs.detectPoliteEmail("ada@uni.edu"), "edited@uni.edu");
});

test("the .xpi holds what bootstrap, the pane and the sidebar need", () => {
  const out = join(mkdtempSync(join(tmpdir(), "zocrates-xpi-")), "zocrates.xpi");
  build(out);
  const names = new Set(zipNames(readFileSync(out)));
  for (const required of ["manifest.json", "bootstrap.js", "prefs.js", "content/zotero/hooks.js", "content/zotero/prefs.js",
    "content/zotero/pane.js", "content/zotero/preferences.xhtml", "content/zotero/preferences.js", "content/sidebar.html",
    "content/sidebar/main.js", "content/inspector.html", "content/vendor/markdown-it.mjs", "content/vendor/katex.mjs",
    "content/vendor/katex.min.css", "content/vendor/LICENSE.katex", "content/vendor/LICENSE.markdown-it"]) {
    assert.ok(names.has(required), `${required} missing from the .xpi`);
  }
  // Every relative module import and stylesheet in the sidebar resolves inside the package.
  for (const name of names) {
    if (!/\.(m?js|html)$/.test(name) || name.startsWith("content/vendor/")) continue;
    const text = read(name);
    for (const [, spec] of text.matchAll(/(?:from |import\(|src=|href=)["'](\.{0,2}\/?[\w./-]+\.(?:m?js|css))["']/g)) {
      const base = name.split("/").slice(0, -1);
      const parts = [...base];
      for (const part of spec.split("/")) {
        if (part === "..") parts.pop();
        else if (part !== "." && part) parts.push(part);
      }
      assert.ok(names.has(parts.join("/")), `${name} refers to ${spec}, not in the .xpi`);
    }
  }
  assert.ok([...names].some((n) => n.startsWith("content/vendor/fonts/") && n.endsWith(".woff2")));
});
