// Runs the Zotero preferences pane (content/zotero/preferences.js, the whole script as Zotero
// loads it) against a REAL gateway: a fake document (test/fake-dom.js) holding every element
// preferences.xhtml names, Zotero's prefs naming the server and the token, and Node's fetch.
// The pane reads the settings the server keeps; the threshold and the unsupported-claims mode
// are changed through the pane's own listeners, as a user's edits fire them; then "Test
// Decision Connection" and "Test Connection". Run by tests/ui/test_plugin_preferences.py, which
// checks what the server then holds. Prints one JSON line. Env: ZOCRATES_URL, ZOCRATES_TOKEN.
import { readFileSync } from "node:fs";
import vm from "node:vm";
import { fakeDocument } from "../fake-dom.js";

const { ZOCRATES_URL: url, ZOCRATES_TOKEN: token } = process.env;
const content = new URL("../../content/zotero/", import.meta.url);
const document = fakeDocument();
const xhtml = readFileSync(new URL("preferences.xhtml", content), "utf8");
for (const [, tag, id] of xhtml.matchAll(/<(?:html:)?([\w]+)\b[^>]*\bid="(zocrates-[\w-]+)"/g)) {
  const element = document.createElement(tag);
  element.id = id;
  document.body.appendChild(element);
}
const prefs = new Map([["serverUrl", `${url}/`], ["token", token], ["settingsRevision", 0]]);
const Zotero = { Zocrates: { prefs: { get: (name) => prefs.get(name), set: (name, value) => prefs.set(name, value) } } };
const window = { fetch: (...args) => fetch(...args), addEventListener() {} };
vm.runInNewContext(readFileSync(new URL("preferences.js", content), "utf8"), { Zotero, document, window });

const $ = (id) => document.getElementById(id);
const text = (id) => $(id).textContent;
async function until(what, done) {
  for (let i = 0; i < 300 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  if (!done()) throw new Error(`the pane never showed ${what}: ${text("zocrates-verification-status")}`);
}

// Opening the pane reads /health (the decision model) and then GET /settings.
await until("the settings", () => $("zocrates-verification-threshold").value !== undefined);
const loaded = {
  enabled: $("zocrates-verification-enabled").checked,
  threshold: $("zocrates-verification-threshold").value,
  unsupported: $("zocrates-unsupported-claims").value,
  verifiersDefault: $("zocrates-threshold-default").disabled,
  model: text("zocrates-decision-model"),
};

const stepper = $("zocrates-verification-threshold");
stepper.value = "0,83"; // typed off the stepper: snapped to 0.85 before it is sent
await stepper.dispatch("change");
const threshold = { shown: stepper.value, status: text("zocrates-verification-status") };
const select = $("zocrates-unsupported-claims");
select.value = "remove";
await select.dispatch("change");
const unsupported = { shown: select.value, status: text("zocrates-verification-status") };

await $("zocrates-test-decision").dispatch("command");
await $("zocrates-test-connection").dispatch("command");
console.log(JSON.stringify({
  loaded, threshold, unsupported, revision: prefs.get("settingsRevision"),
  decision: { text: text("zocrates-decision-result"), ok: $("zocrates-decision-result").className },
  connection: text("zocrates-connection-result"),
}));
