// Sessions: the ☰ panel listing the server's sessions (open, delete), "+" for a new session,
// and which session the chat shows. Answers "sessions.refresh", "sessions.new" and
// "sessions.load" (sessionId). Where the host keeps a last session (the web page, across a
// reload), it is reopened once connected.

import { ApiError } from "../../core/client.js";
import { escapeHtml } from "../../core/format.js";
import { disposer } from "../context.js";

export function mount({ window, document, host, api, state, $, bus }) {
  const d = disposer();
  const sessionsPanel = $("sessions-panel");
  d.listen($("sessions-btn"), "click", async () => {
    sessionsPanel.hidden = !sessionsPanel.hidden;
    $("sessions-btn").setAttribute("aria-expanded", String(!sessionsPanel.hidden));
    if (!sessionsPanel.hidden) await refreshSessions();
  });
  d.listen($("sessions-refresh"), "click", () => refreshSessions());
  d.listen($("new-session-btn"), "click", () => newSession());

  async function refreshSessions() {
    let sessions;
    try {
      sessions = await api.listSessions();
    } catch (exc) {
      handleApiError(exc);
      return;
    }
    const list = $("sessions-list");
    list.textContent = "";
    if (!sessions.length) {
      const li = document.createElement("li");
      li.className = "session-empty";
      li.textContent = "No sessions yet.";
      list.appendChild(li);
    }
    for (const s of sessions) {
      const li = document.createElement("li");
      li.dataset.sessionId = s.session_id;
      li.classList.toggle("active", s.session_id === state.sessionId);
      li.innerHTML = `<span class="session-title">${escapeHtml(s.title || "Untitled session")}</span>` +
        `<span class="session-meta">${s.turns} turn${s.turns === 1 ? "" : "s"}</span>` +
        '<button class="delete-session" title="Delete session" aria-label="Delete session">✕</button>';
      li.addEventListener("click", (e) => {
        if (e.target.closest(".delete-session")) return;
        loadSession(s.session_id);
      });
      li.querySelector(".delete-session").addEventListener("click", async () => {
        if (!window.confirm(`Delete the session "${s.title || "Untitled session"}"?`)) return;
        try {
          await api.deleteSession(s.session_id);
          if (state.sessionId === s.session_id) newSession();
          await refreshSessions();
        } catch (exc) {
          handleApiError(exc);
        }
      });
      list.appendChild(li);
    }
  }

  function remember(sessionId) {
    host.setLastSession?.(sessionId || "");
  }

  function newSession() {
    if (state.running) return;
    state.sessionId = null;
    remember(null);
    bus.request("chat.reset", []);
    bus.request("chat.showEmpty");
    for (const li of document.querySelectorAll("#sessions-list li")) li.classList.remove("active");
    bus.request("chat.focus");
  }

  async function loadSession(sessionId, { quiet = false } = {}) {
    if (state.running) return;
    let session;
    try {
      session = await api.getSession(sessionId);
    } catch (exc) {
      if (quiet && exc instanceof ApiError && exc.status === 404) remember(null); // deleted meanwhile
      else handleApiError(exc);
      return;
    }
    state.sessionId = sessionId;
    remember(sessionId);
    bus.request("chat.reset", session.turns || []);
    for (const li of document.querySelectorAll("#sessions-list li")) li.classList.toggle("active", li.dataset.sessionId === sessionId);
    sessionsPanel.hidden = true;
    bus.request("chat.scrollToEnd");
  }

  function handleApiError(exc) {
    if (exc instanceof ApiError && (exc.code === "unauthorized" || exc.code === "server_unreachable")) bus.request("connection.show", exc.message);
    else bus.emit("status", exc.message, true);
  }

  d.add(bus.on("session.current", (sessionId) => remember(sessionId)));
  d.add(bus.on("connected", () => {
    const last = host.lastSession?.();
    if (last && !state.sessionId && !state.messages.length) loadSession(last, { quiet: true });
  }));
  d.add(bus.handle("sessions.refresh", () => refreshSessions()));
  d.add(bus.handle("sessions.new", () => newSession()));
  d.add(bus.handle("sessions.load", (sessionId) => loadSession(sessionId)));
  return d.dispose;
}
