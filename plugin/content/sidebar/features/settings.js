// The user's own settings, kept by the server (GET/PUT /settings) so that the plugin and the
// web page agree: how a claim whose every citation failed is shown (the ⋯ menu's "Unsupported
// claims": mark, remove, leave), and the user's verification (Zotero's settings pane). Read on
// every connection, when Zotero's settings pane saved them (the host's onSettingsChange) and
// whenever the window comes back into focus (another client may have changed them). Emits "settings.changed" (settings) when they change. When the threshold
// changes, the library turns on screen are resolved again with it from their stored
// probabilities (POST /citations/resolve; nothing is verified again) and shown in place.

import { unsupportedMode } from "../../core/unsupported.js";
import { disposer } from "../context.js";

export function mount({ window, document, host, api, root, state, bus }) {
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

  for (const b of choices) {
    d.listen(b, "click", async () => {
      try {
        apply(await api.updateSettings({ unsupported_claims: b.dataset.unsupported }));
      } catch (exc) {
        bus.emit("status", `The setting was not saved: ${exc.message}`, true);
      }
    });
  }
  apply(state.settings);
  d.add(bus.on("connected", () => refresh()));
  d.listen(window, "focus", () => refresh());
  host.onSettingsChange?.(d.guard(() => refresh()));
  return d.dispose;
}
