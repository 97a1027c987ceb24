/* Zocrates preferences pane: the test-connection button. Loaded by Zotero into the
   preferences window; the fields themselves are bound through their `preference` attributes.
   The check runs /health with the token and says plainly whether the server is down or the
   token is wrong. */
/* global Zotero, document, window */
(function () {
  async function testConnection() {
    const out = document.getElementById("zocrates-connection-result");
    const prefs = Zotero.Zocrates.prefs;
    out.className = "";
    out.textContent = "Checking…";
    const base = String(prefs.get("serverUrl") || "").trim().replace(/\/+$/, "");
    const token = String(prefs.get("token") || "").trim();
    if (!/^https?:\/\/\S+$/i.test(base)) {
      out.className = "error";
      out.textContent = `"${base}" is not an http(s) URL; expected something like http://127.0.0.1:8000.`;
      return;
    }
    let health;
    try {
      const response = await window.fetch(`${base}/health`, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      health = await response.json();
    } catch (exc) {
      out.className = "error";
      out.textContent = `Cannot reach the Zocrates server at ${base} (${exc.message}). Is it running? Start it with \`make run\`.`;
      return;
    }
    if (!token) {
      out.className = "error";
      out.textContent = "The server is up, but no access token is set. Paste the token `make run` printed.";
      return;
    }
    if (!health.services) {
      out.className = "error";
      out.textContent = "The server is up, but it did not accept this token (wrong, revoked or expired).";
      return;
    }
    const down = Object.entries(health.services).filter(([, s]) => s.status !== "ok").map(([n]) => n);
    out.className = down.length ? "error" : "ok";
    out.textContent = down.length ? `Connected; not ready yet: ${down.join(", ")}.` : "Connected; every service is ready.";
  }

  function init() {
    document.getElementById("zocrates-test-connection")?.addEventListener("command", testConnection);
  }
  if (document.getElementById("zocrates-test-connection")) init();
  else window.addEventListener("load", init, { once: true });
})();
