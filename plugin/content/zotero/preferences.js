/* Zocrates preferences pane. Loaded by Zotero into the preferences window; the server fields
   are bound to Zotero prefs through their `preference` attributes.
   - "Test Connection" runs /health with the token and says plainly whether the server is down
     or the token is wrong.
   - "Citation verification": the user's own settings, which the server keeps for their account
     (GET/PUT /settings: verification on or off, the threshold stepper from 0.50 to 0.95 in steps
     of 0.05, how unsupported claims are shown), the decision model the verifier reports in
     /health, and "Test Decision Connection" (POST /llm/test_decision_model).
   A classic script: the pure helpers are `ZocratesPreferences` (the threshold stepper, the lines
   shown, the server calls), evaluated in a vm context by the Node tests (plugin/test/
   preferences.test.js, which have no document) and loaded by the sidebar page, whose web
   settings dialog shares them (sidebar/features/settings.js). The pane itself runs only where
   Zotero is (the preferences window, or plugin/test/e2e/preferences.mjs with a fake one). */
/* global Zotero, document, window */
/* exported ZocratesPreferences */
var ZocratesPreferences = (function () {
  // The server's stepper (gateway domain/settings.py); tests/ui/test_plugin_preferences.py holds them equal.
  const THRESHOLD = { min: 0.5, max: 0.95, step: 0.05 };

  /** A typed threshold on the stepper: clamped to 0.50–0.95, rounded to the nearest 0.05; null when not a number. */
  function snapThreshold(value) {
    const x = typeof value === "number" ? value : parseFloat(String(value ?? "").replace(",", "."));
    if (!Number.isFinite(x)) return null;
    const clamped = Math.min(THRESHOLD.max, Math.max(THRESHOLD.min, x));
    const steps = Math.round((clamped - THRESHOLD.min) / THRESHOLD.step);
    return Number((THRESHOLD.min + steps * THRESHOLD.step).toFixed(2));
  }

  /** The verifier as /health (with a token) reports it: its provider, model and own threshold. */
  function decisionModelLine(health) {
    const v = health?.services?.verifier;
    if (!v) return "The decision model is unknown: the server did not report its verifier (is the token accepted?).";
    if (v.status !== "ok") return `The verifier is not ready (${v.status || "unavailable"}).`;
    const threshold = typeof v.threshold === "number" ? ` · its threshold ${v.threshold.toFixed(2)}` : "";
    return `Decision model: ${v.provider || "unknown provider"}${v.model ? ` / ${v.model}` : ""}${threshold}`;
  }

  /** What "Test Decision Connection" says: `{ok, text}`. */
  function decisionTestLine(result) {
    const ms = `${Math.round(result?.latency_ms || 0)} ms`;
    if (!result?.reachable) return { ok: false, text: `Not reachable after ${ms}: ${result?.error || "no answer"}` };
    const p = typeof result.sample_probability === "number" ? result.sample_probability.toFixed(2) : "none";
    const who = [result.provider, result.model].filter(Boolean).join(" / ");
    return { ok: true, text: `Reachable in ${ms}; sample support probability ${p}${who ? ` (${who})` : ""}.` };
  }

  /** A failed request's message: the server's JSON error when it sent one. */
  async function errorText(response) {
    try {
      const body = await response.json();
      if (body?.error?.message) return body.error.message;
    } catch {
      // not JSON
    }
    return `HTTP ${response.status}`;
  }

  /** The server's routes the pane calls, over `fetch` with the token: each resolves to the JSON
      and rejects with a readable message (`status` set when the server answered). */
  function serverApi({ base, token, fetch }) {
    async function call(path, { method = "GET", body } = {}) {
      const headers = token ? { Authorization: `Bearer ${token}` } : {};
      if (body !== undefined) headers["Content-Type"] = "application/json";
      let response;
      try {
        response = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      } catch (exc) {
        throw new Error(`Cannot reach the Zocrates server at ${base} (${exc.message}).`);
      }
      if (!response.ok) {
        const error = new Error(await errorText(response));
        error.status = response.status;
        throw error;
      }
      return response.json();
    }
    return {
      health: () => call("/health"),
      /** `GET /settings`: the user's settings as the server keeps them. */
      settings: () => call("/settings"),
      /** `PUT /settings`: the keys given change, the others stay; resolves to all of them as stored. */
      saveSettings: (changes) => call("/settings", { method: "PUT", body: changes }),
      testDecisionModel: () => call("/llm/test_decision_model", { method: "POST" }),
    };
  }

  return { THRESHOLD, snapThreshold, decisionModelLine, decisionTestLine, errorText, serverApi };
})();

(function () {
  // The Node tests and the sidebar page load the helpers only; the pane needs Zotero's prefs
  // and its own document (Zotero's sidebar frame may see `Zotero` too, but holds no pane).
  if (typeof document === "undefined" || typeof Zotero === "undefined") return;
  if (!document.getElementById("zocrates-prefs")) return;
  const P = ZocratesPreferences;
  const $ = (id) => document.getElementById(id);

  function server() {
    const prefs = Zotero.Zocrates.prefs;
    return {
      base: String(prefs.get("serverUrl") || "").trim().replace(/\/+$/, ""),
      token: String(prefs.get("token") || "").trim(),
    };
  }

  /** The server as the prefs name it now (they may have just been edited). */
  function api() {
    return P.serverApi({ ...server(), fetch: (...args) => window.fetch(...args) });
  }

  function say(id, text, ok) {
    const out = $(id);
    out.className = ok === undefined ? "" : ok ? "ok" : "error";
    out.textContent = text;
  }

  async function testConnection() {
    const { base, token } = server();
    say("zocrates-connection-result", "Checking…");
    if (!/^https?:\/\/\S+$/i.test(base)) {
      say("zocrates-connection-result", `"${base}" is not an http(s) URL; expected something like http://127.0.0.1:8000.`, false);
      return;
    }
    let health;
    try {
      health = await api().health();
    } catch (exc) {
      say("zocrates-connection-result", `Cannot reach the Zocrates server at ${base} (${exc.message}). Is it running? Start it with \`make run\`.`, false);
      return;
    }
    if (!token) {
      say("zocrates-connection-result", "The server is up, but no access token is set. Paste the token `make run` printed.", false);
      return;
    }
    if (!health.services) {
      say("zocrates-connection-result", "The server is up, but it did not accept this token (wrong, revoked or expired).", false);
      return;
    }
    const down = Object.entries(health.services).filter(([, s]) => s.status !== "ok").map(([n]) => n);
    say("zocrates-connection-result", down.length ? `Connected; not ready yet: ${down.join(", ")}.` : "Connected; every service is ready.", !down.length);
    showVerification(health);
  }

  // --- citation verification: the user's settings on the server ---------------------------

  let verifierThreshold = null; // what the verifier reports: the stepper's value while the user has none

  function showSettings(settings) {
    $("zocrates-verification-enabled").checked = settings.verification_enabled !== false;
    const own = settings.verification_threshold;
    $("zocrates-verification-threshold").value = (own ?? verifierThreshold ?? 0.6).toFixed(2);
    $("zocrates-threshold-default").disabled = own === null || own === undefined;
    $("zocrates-unsupported-claims").value = settings.unsupported_claims || "mark";
  }

  async function save(changes) {
    say("zocrates-verification-status", "Saving…");
    try {
      showSettings(await api().saveSettings(changes));
      say("zocrates-verification-status", "Saved for your account on the server.", true);
      const prefs = Zotero.Zocrates.prefs;
      prefs.set("settingsRevision", (Number(prefs.get("settingsRevision")) + 1) % 1e9); // open sidebars read them again
    } catch (exc) {
      say("zocrates-verification-status", `Not saved: ${exc.message}`, false);
      await loadSettings();
    }
  }

  async function loadSettings() {
    try {
      showSettings(await api().settings());
    } catch (exc) {
      const why = exc.status === 404 ? "this server keeps no per-user settings yet" : exc.message;
      say("zocrates-verification-status", `Your settings could not be read (${why}).`, false);
    }
  }

  function showVerification(health) {
    const threshold = health?.services?.verifier?.threshold;
    if (typeof threshold === "number") verifierThreshold = threshold;
    $("zocrates-decision-model").textContent = P.decisionModelLine(health);
  }

  async function loadVerification() {
    try {
      showVerification(await api().health());
    } catch (exc) {
      $("zocrates-decision-model").textContent = `The decision model is unknown: ${exc.message}`;
    }
    await loadSettings();
  }

  async function testDecision() {
    say("zocrates-decision-result", "Sending a sample claim to the verifier…");
    try {
      const line = P.decisionTestLine(await api().testDecisionModel());
      say("zocrates-decision-result", line.text, line.ok);
    } catch (exc) {
      say("zocrates-decision-result", exc.message, false);
    }
  }

  function init() {
    $("zocrates-test-connection")?.addEventListener("command", testConnection);
    $("zocrates-verification-enabled")?.addEventListener("command", (e) => save({ verification_enabled: e.target.checked }));
    const stepper = $("zocrates-verification-threshold");
    stepper?.addEventListener("change", () => {
      const value = P.snapThreshold(stepper.value);
      return value === null ? loadSettings() : save({ verification_threshold: value });
    });
    $("zocrates-threshold-default")?.addEventListener("command", () => save({ verification_threshold: null }));
    $("zocrates-unsupported-claims")?.addEventListener("change", (e) => save({ unsupported_claims: e.target.value }));
    $("zocrates-test-decision")?.addEventListener("command", testDecision);
    if ($("zocrates-verification")) loadVerification();
  }
  if ($("zocrates-test-connection")) init();
  else window.addEventListener("load", init, { once: true });
})();
