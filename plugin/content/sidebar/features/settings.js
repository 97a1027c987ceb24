// The user's own settings, kept by the server (GET/PUT /settings) so that the plugin and the
// web page agree: how a claim whose every citation failed is shown (the ⋯ menu's "Unsupported
// claims": mark, remove, leave), and the user's verification (Zotero's settings pane). Read on
// every connection and whenever the window comes back into focus (the settings pane may have
// changed them). Emits "settings.changed" (settings) when they change.

import { unsupportedMode } from "../../core/unsupported.js";
import { disposer } from "../context.js";

export function mount({ window, document, api, root, state, bus }) {
  const d = disposer();
  const choices = [...document.querySelectorAll("[data-unsupported]")];

  function apply(settings) {
    const before = JSON.stringify(state.settings);
    state.settings = settings;
    const mode = unsupportedMode(settings?.unsupported_claims);
    for (const b of choices) b.setAttribute("aria-checked", String(b.dataset.unsupported === mode));
    if (JSON.stringify(settings) !== before) bus.emit("settings.changed", settings);
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
  return d.dispose;
}
