// The connection: the connect panel and its form, the check of server and token, and the
// polite-pool email sent on every connection and whenever it changes.
// Answers "connection.show" (message, ok) and "connection.connect" (resolves true when connected).

import { disposer } from "../context.js";

export function mount({ window, host, api, root, $, bus }) {
  const d = disposer();
  function showConnect(message, ok = false) {
    $("connect-panel").hidden = false;
    $("connect-url").value = host.serverUrl() || window.location.origin;
    $("connect-url").disabled = !host.canEditServerUrl;
    $("connect-message").textContent = message;
    $("connect-message").classList.toggle("ok", ok);
    root.dataset.state = "connect";
  }

  d.listen($("connect-form"), "submit", async (e) => {
    e.preventDefault();
    host.setToken($("connect-token").value.trim());
    await connect();
  });

  async function connect() {
    $("connect-message").textContent = "Checking…";
    try {
      const result = await api.checkConnection();
      if (!result.tokenAccepted) {
        showConnect(result.message);
        return false;
      }
      $("connect-panel").hidden = true;
      root.dataset.state = "ready";
      bus.emit("status", result.message);
      registerContact(); // neither of these blocks the chat
      bus.request("library.start");
      await bus.request("sessions.refresh");
      bus.emit("connected");
      return true;
    } catch (exc) {
      showConnect(exc.message);
      return false;
    }
  }

  /** Send the polite-pool email (POST /register); a failure is said, never blocks the chat. */
  async function registerContact() {
    if (!host.politeEmail) return; // the web page has no email of its own to send
    try {
      await api.register(host.politeEmail() || null);
    } catch (exc) {
      const why = exc.status === 404 ? "this server has no /register route yet" : exc.message;
      bus.emit("status", `Your contact email for the scholarly APIs was not sent (${why}). Chat works without it.`, true);
    }
  }
  host.onPoliteEmailChange?.(d.guard(() => registerContact()));

  d.add(bus.handle("connection.show", showConnect));
  d.add(bus.handle("connection.connect", connect));
  return d.dispose;
}
