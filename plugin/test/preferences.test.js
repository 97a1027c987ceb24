// The preferences pane's helpers (content/zotero/preferences.js), evaluated as Zotero loads the
// script, minus the document: the threshold stepper, the decision model line, the connection test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import vm from "node:vm";

const source = readFileSync(new URL("../content/zotero/preferences.js", import.meta.url), "utf8");
const scope = {};
vm.runInNewContext(`${source}\nthis.P = ZocratesPreferences;`, scope);
const P = scope.P;

test("the threshold stepper: 0.50 to 0.95 in steps of 0.05, what is typed snapped onto it", () => {
  assert.deepEqual({ ...P.THRESHOLD }, { min: 0.5, max: 0.95, step: 0.05 });
  assert.equal(P.snapThreshold("0.75"), 0.75);
  assert.equal(P.snapThreshold(0.6500000001), 0.65);
  assert.equal(P.snapThreshold("0,62"), 0.6);
  assert.equal(P.snapThreshold(0.63), 0.65);
  assert.equal(P.snapThreshold(0.2), 0.5);
  assert.equal(P.snapThreshold(1), 0.95);
  assert.equal(P.snapThreshold(""), null);
  assert.equal(P.snapThreshold("high"), null);
  const steps = [];
  for (let x = 0.5; x <= 0.951; x += 0.05) steps.push(P.snapThreshold(x));
  assert.deepEqual(steps, [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]);
});

test("the decision model is shown as /health reports the verifier", () => {
  const health = { services: { verifier: { status: "ok", provider: "local_torch", model: "zocrates-verifier-minilm", threshold: 0.6 } } };
  assert.equal(P.decisionModelLine(health), "Decision model: local_torch / zocrates-verifier-minilm · its threshold 0.60");
  assert.equal(P.decisionModelLine({ services: { verifier: { status: "unavailable" } } }), "The verifier is not ready (unavailable).");
  assert.match(P.decisionModelLine({ status: "ok" }), /did not report its verifier \(is the token accepted\?\)/);
});

test("Test Decision Connection says the latency and the sample probability, or why it failed", () => {
  assert.deepEqual({ ...P.decisionTestLine({ reachable: true, provider: "heuristic", model: "h", latency_ms: 312.4, sample_probability: 0.971 }) },
    { ok: true, text: "Reachable in 312 ms; sample support probability 0.97 (heuristic / h)." });
  assert.deepEqual({ ...P.decisionTestLine({ reachable: false, latency_ms: 10000, error: "The verifier did not answer within 10 s. Is it running?" }) },
    { ok: false, text: "Not reachable after 10000 ms: The verifier did not answer within 10 s. Is it running?" });
});

test("a refused request reads as the server's own message", async () => {
  const json = (body, status) => ({ status, json: async () => body });
  assert.equal(await P.errorText(json({ error: { code: "invalid_request", message: "verification_threshold: expected 0.50 to 0.95" } }, 422)),
    "verification_threshold: expected 0.50 to 0.95");
  assert.equal(await P.errorText({ status: 502, json: async () => { throw new SyntaxError("not JSON"); } }), "HTTP 502");
});
