// The Zotero 7 plugin package: manifest, bootstrap entry points, prefs, and the built .xpi.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import vm from "node:vm";
import { build, zipNames } from "../scripts/build.mjs";

const root = new URL("..", import.meta.url).pathname;
const read = (p) => readFileSync(join(root, p), "utf8");

test("manifest is valid for Zotero 7", () => {
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
