// The user's own settings, kept by the server (GET/PUT /settings) so that the plugin and the
// web page agree: how a claim whose every citation failed is shown (the ⋯ menu's "Unsupported
// claims": mark, remove, leave), and the user's verification (Zotero's settings pane). Read on
// every connection, when Zotero's settings pane saved them (the host's onSettingsChange) and
// whenever the window comes back into focus (another client may have changed them). Emits "settings.changed" (settings) when they change. When the threshold
// changes, the library turns on screen are resolved again with it from their stored
// probabilities (POST /citations/resolve; nothing is verified again) and shown in place.
// Answers "settings.open": the web page's settings dialog (Zotero has its preferences pane),
// the same fields as that pane and its helpers (`libs.preferences`, zotero/preferences.js: the
// threshold stepper's snapping, the decision model line, "Test decision connection"), saved
// together with PUT /settings; a refusal shows the server's message.

import { escapeHtml } from "../../core/format.js";
import { unsupportedMode } from "../../core/unsupported.js";
import { disposer } from "../context.js";
import { openModal } from "../modal.js";

const MODES = [
  ["mark", "Mark it in the answer"],
  ["remove", "Remove it from the answer"],
  ["leave", "Leave it as an uncited statement"],
];

export function mount({ window, document, host, api, root, state, bus, libs }) {
  const d = disposer();
  const choices = [...document.querySelectorAll("[data-unsupported]")];

  function apply(settings) {
    const before = JSON.stringify(state.settings);
    const thresholdChanged = state.settings && settings &&
      state.settings.verification_threshold !== settings.verification_threshold;
    state.settings = settings;
    if (thresholdChanged) resolveShownTurns();
    const mode = unsupportedMode(settings?.unsupported_claims);
    for (const b of choices) b.setAttribute("aria-checked", String(b.dataset.unsupported === mode));
    if (JSON.stringify(settings) !== before) bus.emit("settings.changed", settings);
  }

  async function resolveShownTurns() {
    for (const message of state.messages) {
      const record = message.record;
      if (record?.intent !== "library" || !(record.citations || []).length || record.error) continue;
      try {
        bus.request("chat.replaceRecord", message, await api.resolveTurn(record.session_id, record.turn_id));
      } catch (exc) {
        bus.emit("status", `An answer was not resolved with the new threshold: ${exc.message}`, true);
        return;
      }
    }
  }

  async function refresh() {
    if (root.dataset.state !== "ready") return;
    try {
      apply(await api.settings());
    } catch {
      // A server before /settings: its defaults stand (claims marked).
    }
  }

  /** The settings dialog: its fields show the settings as the server keeps them; Save sends them all. */
  async function openDialog() {
    const P = libs.preferences;
    const { min, max, step } = P.THRESHOLD;
    const { body, foot } = openModal(document, "Verification settings", { id: "verification-settings" });
    body.innerHTML =
      '<label class="settings-check"><input type="checkbox" class="vs-enabled"> Check every citation against the passage it cites</label>' +
      `<label class="settings-field">Support threshold: a citation needs at least this probability (${min.toFixed(2)} to ${max.toFixed(2)})` +
      `<span class="settings-stepper"><input type="number" class="vs-threshold" min="${min}" max="${max}" step="${step}">` +
      '<button type="button" class="link-btn vs-default">Use the verifier\'s</button></span></label>' +
      '<label class="settings-field">A claim whose every citation failed verification<select class="vs-unsupported">' +
      MODES.map(([value, label]) => `<option value="${value}">${escapeHtml(label)}</option>`).join("") + "</select></label>" +
      '<p class="settings-hint vs-model">Asking the server for its decision model…</p>' +
      '<p class="settings-test"><button type="button" class="vs-test">Test decision connection</button> <span class="vs-test-result" role="status"></span></p>' +
      '<p class="settings-status vs-status" role="status"></p>';
    foot.hidden = false;
    foot.innerHTML = '<button type="button" class="primary-btn vs-save">Save</button>';
    const field = (name) => body.querySelector(`.vs-${name}`);
    const say = (el, text, ok) => {
      el.textContent = text;
      el.classList.toggle("ok", ok === true);
      el.classList.toggle("error", ok === false);
    };
    let verifierThreshold = null; // what the verifier reports: the stepper's value while the user has none
    let own = null; // the user's threshold as the dialog holds it; null: the verifier's

    function show(settings) {
      field("enabled").checked = settings.verification_enabled !== false;
      own = settings.verification_threshold ?? null;
      field("threshold").value = (own ?? verifierThreshold ?? 0.6).toFixed(2);
      field("default").disabled = own === null;
      field("unsupported").value = unsupportedMode(settings.unsupported_claims);
    }

    field("threshold").addEventListener("change", () => {
      const value = P.snapThreshold(field("threshold").value);
      if (value !== null) own = value;
      field("threshold").value = (own ?? verifierThreshold ?? 0.6).toFixed(2);
      field("default").disabled = own === null;
    });
    field("default").addEventListener("click", () => {
      own = null;
      field("threshold").value = (verifierThreshold ?? 0.6).toFixed(2);
      field("default").disabled = true;
    });
    field("test").addEventListener("click", async () => {
      say(field("test-result"), "Sending a sample claim to the verifier…");
      try {
        const line = P.decisionTestLine(await api.testDecisionModel());
        say(field("test-result"), line.text, line.ok);
      } catch (exc) {
        say(field("test-result"), exc.message, false);
      }
    });
    foot.querySelector(".vs-save").addEventListener("click", async () => {
      say(field("status"), "Saving…");
      const changes = {
        verification_enabled: field("enabled").checked,
        verification_threshold: own,
        unsupported_claims: field("unsupported").value,
      };
      try {
        const saved = await api.updateSettings(changes);
        show(saved);
        say(field("status"), "Saved for your account on the server.", true);
        apply(saved);
      } catch (exc) {
        say(field("status"), `Not saved: ${exc.message}`, false);
      }
    });

    show(state.settings || {});
    try {
      const health = await api.checkConnection();
      const threshold = health?.services?.verifier?.threshold;
      if (typeof threshold === "number") verifierThreshold = threshold;
      field("model").textContent = P.decisionModelLine(health);
      show(await api.settings());
    } catch (exc) {
      say(field("status"), `Your settings could not be read (${exc.message}).`, false);
    }
  }

  for (const b of choices) {
    d.listen(b, "click", async () => {
      try {
        apply(await api.updateSettings({ unsupported_claims: b.dataset.unsupported }));
      } catch (exc) {
        bus.emit("status", `The setting was not saved: ${exc.message}`, true);
      }
    });
  }
  d.add(bus.handle("settings.open", openDialog));
  apply(state.settings);
  d.add(bus.on("connected", () => refresh()));
  d.listen(window, "focus", () => refresh());
  host.onSettingsChange?.(d.guard(() => refresh()));
  return d.dispose;
}
