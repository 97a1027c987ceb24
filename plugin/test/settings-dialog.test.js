// The web page's verification settings dialog (content/sidebar/features/settings.js) on a fake
// document: it shows the server's settings, snaps the threshold with the preferences pane's own
// helper (content/zotero/preferences.js, loaded as the page loads it), saves every field with
// PUT /settings and shows a refusal in the server's words.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import vm from "node:vm";
import { fakeDocument } from "./fake-dom.js";
import { ApiError } from "../content/core/client.js";
import { createBus } from "../content/sidebar/context.js";
import { mount } from "../content/sidebar/features/settings.js";

const source = readFileSync(new URL("../content/zotero/preferences.js", import.meta.url), "utf8");
const scope = {};
vm.runInNewContext(`${source}\nthis.P = ZocratesPreferences;`, scope);

function dialog(api) {
  const document = { ...fakeDocument(), querySelectorAll: () => [] }; // no ⋯ menu choices here
  const window = new EventTarget();
  const bus = createBus();
  const state = { messages: [], settings: { verification_enabled: true, verification_threshold: null, unsupported_claims: "mark" } };
  const unmount = mount({ window, document, host: {}, api, root: { dataset: { state: "ready" } }, state, bus, libs: { preferences: scope.P } });
  return { document, bus, state, unmount };
}

test("the dialog shows the settings, snaps the threshold, saves every field and says a refusal in the server's words", async () => {
  const sent = [];
  let refuse = false;
  const api = {
    checkConnection: async () => ({ services: { verifier: { status: "ok", provider: "heuristic", model: "h", threshold: 0.65 } } }),
    settings: async () => ({ verification_enabled: true, verification_threshold: null, unsupported_claims: "leave" }),
    async updateSettings(changes) {
      sent.push(changes);
      if (refuse) throw new ApiError("invalid_request", "verification_threshold: expected 0.50 to 0.95 in steps of 0.05", 422);
      return changes;
    },
    testDecisionModel: async () => ({ reachable: true, provider: "heuristic", model: "h", latency_ms: 41.6, sample_probability: 0.97 }),
    resolveTurn: async () => assert.fail("no turn is shown"),
  };
  const { document, bus, state, unmount } = dialog(api);
  await bus.request("settings.open");
  const field = (name) => document.body.querySelector(`.vs-${name}`);
  assert.equal(field("threshold").value, "0.65", "the verifier's while the user has none");
  assert.equal(field("default").disabled, true);
  assert.equal(field("unsupported").value, "leave");
  assert.equal(field("model").textContent, "Decision model: heuristic / h · its threshold 0.65");

  await field("test").click();
  assert.equal(field("test-result").textContent, "Reachable in 42 ms; sample support probability 0.97 (heuristic / h).");
  assert.equal(field("test-result").className, "vs-test-result ok");

  field("threshold").value = "0,83";
  await field("threshold").dispatch("change");
  assert.equal(field("threshold").value, "0.85");
  field("unsupported").value = "remove";
  await document.body.querySelector(".vs-save").click();
  assert.deepEqual(sent.pop(), { verification_enabled: true, verification_threshold: 0.85, unsupported_claims: "remove" });
  assert.equal(field("status").textContent, "Saved for your account on the server.");
  assert.equal(state.settings.verification_threshold, 0.85);

  refuse = true;
  await field("default").click();
  await document.body.querySelector(".vs-save").click();
  assert.equal(sent.pop().verification_threshold, null);
  assert.equal(field("status").textContent, "Not saved: verification_threshold: expected 0.50 to 0.95 in steps of 0.05");
  assert.equal(field("status").className, "settings-status vs-status error");
  assert.equal(state.settings.verification_threshold, 0.85, "a refused save changes nothing");
  unmount();
});
