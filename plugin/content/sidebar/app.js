// The sidebar: thin DOM glue over the pure modules in ../core. The same code runs in the
// Zotero pane and in the gateway's /ui/ page; `host` supplies what differs (settings,
// clipboard, reader and library actions, import into Zotero).

import { ApiClient, ApiError, turnErrorMessage } from "../core/client.js";
import { hasCitations, stripCitations, toAuthorYear } from "../core/citations.js";
import { createRenderer } from "../core/render.js";
import { bylineOf, escapeAttr, escapeHtml, isQuoted, occurrenceBadge, quoteScores, stripMathQuotes, throttle, QUOTED_TEXT } from "../core/format.js";
import {
  claimRows, countsLine, defaultColumnWidths, filterRows, inspectorTooltip, nextSort, probabilityStats,
  resizeColumns, rowBadges, scoreText, sortRows, sourceOptions, statsLine, verificationCounts, COLUMNS,
} from "../core/inspector.js";
import { CandidateSelection, confirmationSummary, importChoices, importPlan, importReport, oaLabel } from "../core/candidates.js";
import { DIRECTIONS, maximizedRect, placePopover, resizeRect, scrollIsInside } from "../core/geometry.js";
import { libraryMode, libraryStatusLine, syncProgressLine } from "../core/library-sync.js";
import { morphHtml } from "./morph.js";
import { ICONS } from "./icons.js";

export const FONT_SIZES = { small: "13px", medium: "14px", large: "15.5px" };
const RENDER_THROTTLE_MS = 50;

export function startSidebar({ window, host, libs }) {
  const document = window.document;
  const $ = (id) => document.getElementById(id);
  const renderer = createRenderer(libs);
  const api = new ApiClient({
    baseUrl: host.serverUrl(),
    token: () => host.token(),
    fetch: (...args) => host.fetch(...args),
  });
  const root = $("zocrates-root");
  const messagesEl = $("messages");
  const state = {
    sessionId: null,
    running: null, // {turnId, controller, message}
    messages: [],
    popover: null,
  };

  // ---- text size and menus ------------------------------------------------------------
  function applyFontSize(name) {
    const size = FONT_SIZES[name] ? name : "medium";
    document.documentElement.style.setProperty("--base-font-size", FONT_SIZES[size]);
    for (const b of document.querySelectorAll("[data-font-size]")) b.setAttribute("aria-checked", String(b.dataset.fontSize === size));
  }
  applyFontSize(host.fontSize());
  host.onFontSizeChange?.((name) => applyFontSize(name));

  const moreMenu = $("more-menu");
  $("more-btn").addEventListener("click", (e) => {
    e.stopPropagation();
    moreMenu.hidden = !moreMenu.hidden;
  });
  document.addEventListener("click", (e) => {
    if (!moreMenu.hidden && !moreMenu.contains(e.target)) moreMenu.hidden = true;
  });
  for (const b of document.querySelectorAll("[data-font-size]")) {
    b.addEventListener("click", () => {
      host.setFontSize(b.dataset.fontSize);
      applyFontSize(b.dataset.fontSize);
      moreMenu.hidden = true;
    });
  }
  $("settings-btn").addEventListener("click", () => {
    moreMenu.hidden = true;
    host.openSettings ? host.openSettings() : showConnect("");
  });

  // ---- connection ---------------------------------------------------------------------
  function showConnect(message, ok = false) {
    $("connect-panel").hidden = false;
    $("connect-url").value = host.serverUrl() || window.location.origin;
    $("connect-url").disabled = !host.canEditServerUrl;
    $("connect-message").textContent = message;
    $("connect-message").classList.toggle("ok", ok);
    root.dataset.state = "connect";
  }

  $("connect-form").addEventListener("submit", async (e) => {
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
      setStatus(result.message);
      registerContact(); // neither of these blocks the chat
      startLibrary();
      await refreshSessions();
      return true;
    } catch (exc) {
      showConnect(exc.message);
      return false;
    }
  }

  // ---- contact email (polite pools) and the library --------------------------------
  /** Send the polite-pool email (POST /register); a failure is said, never blocks the chat. */
  async function registerContact() {
    if (!host.politeEmail) return; // the web page has no email of its own to send
    try {
      await api.register(host.politeEmail() || null);
    } catch (exc) {
      const why = exc.status === 404 ? "this server has no /register route yet" : exc.message;
      setStatus(`Your contact email for the scholarly APIs was not sent (${why}). Chat works without it.`, true);
    }
  }
  host.onPoliteEmailChange?.(() => registerContact());

  const libraryBar = $("library-bar");
  function showLibrary(line, { error = false, progress = null } = {}) {
    libraryBar.hidden = false;
    $("library-line").textContent = line;
    libraryBar.classList.toggle("error", error);
    const bar = $("library-progress");
    bar.hidden = !progress;
    if (progress) {
      bar.max = Math.max(1, progress.total);
      bar.value = progress.done;
    }
  }

  /** Hosted mode: send the library and keep it current; show its progress and status. */
  async function startLibrary() {
    if (!host.canSyncLibrary) return showServerLibrary();
    const onProgress = (p) => {
      if (p.phase === "done") showLibrary(p.message);
      else showLibrary(syncProgressLine(p), { error: p.phase === "error", progress: p.total ? p : null });
    };
    try {
      showLibrary("Checking your library on the server…");
      const outcome = await host.startLibrarySync(api, onProgress);
      await refreshLibraryStatus(outcome.mode === "hosted" ? syncLine(outcome) : "");
    } catch (exc) {
      showLibrary(`Library sync stopped: ${exc.message}`, { error: true });
    }
  }

  function syncLine(outcome) {
    return outcome.failed?.length ? `${outcome.failed.length} files could not be uploaded (${outcome.failed[0].message}). ` : "";
  }

  async function refreshLibraryStatus(prefix = "") {
    try {
      const status = await api.libraryStatus();
      showLibrary(prefix + libraryStatusLine(status));
    } catch (exc) {
      showLibrary(`Library status unavailable: ${exc.message}`, { error: true });
    }
  }

  /** The web page sends no library; it names the one the server reads itself (the demo
   * library on a first run, or a Zotero data directory) and shows nothing otherwise. */
  async function showServerLibrary() {
    $("library-sync-btn").hidden = true;
    try {
      const status = await api.libraryStatus();
      if (libraryMode(status) === "local") showLibrary(libraryStatusLine(status));
    } catch {
      // no line then: the chat works without it
    }
  }

  $("library-refresh").addEventListener("click", () => refreshLibraryStatus());
  $("library-sync-btn").addEventListener("click", () => startLibrary());

  function setStatus(text, error = false) {
    const el = $("composer-status");
    el.textContent = text || "";
    el.classList.toggle("error", error);
  }

  // ---- sessions -----------------------------------------------------------------------
  const sessionsPanel = $("sessions-panel");
  $("sessions-btn").addEventListener("click", async () => {
    sessionsPanel.hidden = !sessionsPanel.hidden;
    $("sessions-btn").setAttribute("aria-expanded", String(!sessionsPanel.hidden));
    if (!sessionsPanel.hidden) await refreshSessions();
  });
  $("sessions-refresh").addEventListener("click", () => refreshSessions());
  $("new-session-btn").addEventListener("click", () => newSession());

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

  function newSession() {
    if (state.running) return;
    state.sessionId = null;
    state.messages = [];
    messagesEl.textContent = "";
    closePopover();
    showEmpty();
    for (const li of document.querySelectorAll("#sessions-list li")) li.classList.remove("active");
    $("chat-input").focus();
  }

  function showEmpty() {
    if (messagesEl.children.length) return;
    const div = document.createElement("div");
    div.className = "empty-state";
    div.textContent = "Ask a question about your library — answers cite their sources, and every citation is checked against the passage it cites. Ask to find new papers to search online.";
    messagesEl.appendChild(div);
  }

  async function loadSession(sessionId) {
    if (state.running) return;
    let session;
    try {
      session = await api.getSession(sessionId);
    } catch (exc) {
      handleApiError(exc);
      return;
    }
    state.sessionId = sessionId;
    state.messages = [];
    messagesEl.textContent = "";
    closePopover();
    for (const turn of session.turns || []) {
      addUserMessage(turn.question);
      const message = addAssistantMessage();
      message.record = turn;
      message.turnId = turn.turn_id;
      finalizeMessage(message);
    }
    for (const li of document.querySelectorAll("#sessions-list li")) li.classList.toggle("active", li.dataset.sessionId === sessionId);
    sessionsPanel.hidden = true;
    messagesEl.scrollTop = messagesEl.scrollHeight;
  }

  // ---- chat ---------------------------------------------------------------------------
  const input = $("chat-input");
  $("chat-form").addEventListener("submit", (e) => {
    e.preventDefault();
    send();
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  $("stop-btn").addEventListener("click", () => stop());

  function setRunning(running) {
    $("send-btn").hidden = running;
    $("stop-btn").hidden = !running;
    input.disabled = false;
  }

  async function send() {
    const text = input.value.trim();
    if (!text || state.running) return;
    input.value = "";
    messagesEl.querySelector(".empty-state")?.remove();
    addUserMessage(text);
    const message = addAssistantMessage();
    const controller = new AbortController();
    state.running = { controller, message };
    setRunning(true);
    setStatus("");
    try {
      const terminal = await api.streamTurn({
        message: text,
        sessionId: state.sessionId,
        signal: controller.signal,
        onEvent: (event) => onTurnEvent(message, event),
      });
      if (terminal.event === "error") message.error = terminal.data;
    } catch (exc) {
      message.error = { code: exc.code || "client_error", message: exc.message };
      if (exc instanceof ApiError && exc.code === "unauthorized") showConnect(exc.message);
    } finally {
      state.running = null;
      setRunning(false);
      finalizeMessage(message);
      refreshSessions();
    }
  }

  async function stop() {
    const running = state.running;
    if (!running) return;
    $("stop-btn").disabled = true;
    try {
      if (running.message.turnId) await api.cancelTurn(running.message.turnId);
      else running.controller.abort();
    } catch (exc) {
      // The turn may have just finished; abort the stream locally either way.
      running.controller.abort();
      if (!(exc instanceof ApiError && exc.status === 404)) setStatus(exc.message, true);
    } finally {
      $("stop-btn").disabled = false;
    }
  }

  function onTurnEvent(message, event) {
    const data = event.data;
    if (event.event === "turn") {
      message.turnId = data.turn_id;
      message.intent = data.intent;
      if (data.session_id) state.sessionId = data.session_id;
    } else if (event.event === "status") {
      message.statusLine = data.message || data.stage;
      message.render();
    } else if (event.event === "delta") {
      message.text += data.text || "";
      message.statusLine = "";
      message.render();
    } else if (event.event === "done") {
      message.record = data;
    }
  }

  function addUserMessage(text) {
    const wrapper = document.createElement("div");
    wrapper.className = "message-wrapper user";
    const bubble = document.createElement("div");
    bubble.className = "message-bubble";
    bubble.textContent = text;
    wrapper.appendChild(bubble);
    messagesEl.appendChild(wrapper);
    messagesEl.scrollTop = messagesEl.scrollHeight;
  }

  function addAssistantMessage() {
    const wrapper = document.createElement("div");
    wrapper.className = "message-wrapper assistant";
    wrapper.innerHTML = '<div class="message-bubble"><div class="message-status"></div><div class="message-content"></div>' +
      '<div class="message-extra"></div></div><div class="message-actions" hidden><div class="message-actions-left"></div>' +
      '<div class="message-actions-right"></div></div>';
    messagesEl.appendChild(wrapper);
    const message = {
      wrapper,
      content: wrapper.querySelector(".message-content"),
      statusEl: wrapper.querySelector(".message-status"),
      extra: wrapper.querySelector(".message-extra"),
      actions: wrapper.querySelector(".message-actions"),
      text: "",
      record: null,
      error: null,
      statusLine: "",
      citationsVisible: true,
      selection: null,
    };
    message.render = throttle(() => renderMessage(message), RENDER_THROTTLE_MS);
    state.messages.push(message);
    return message;
  }

  function renderMessage(message) {
    const nearBottom = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 40;
    message.statusEl.textContent = message.statusLine || "";
    morphHtml(message.content, message.record ? renderer.renderTurn(message.record) : renderer.renderStreaming(message.text));
    if (nearBottom) messagesEl.scrollTop = messagesEl.scrollHeight;
  }

  function finalizeMessage(message) {
    message.render.cancel?.();
    message.statusLine = "";
    renderMessage(message);
    message.extra.textContent = "";
    if (message.error) {
      const div = document.createElement("div");
      div.className = "message-error" + (message.error.code === "cancelled" ? " cancelled" : "");
      div.textContent = turnErrorMessage(message.error);
      message.extra.appendChild(div);
    }
    const record = message.record;
    if (record && (record.candidates || []).length) renderCandidates(message);
    renderActions(message);
  }

  // ---- message actions: citations toggle, inspector, copy, info -----------------------
  function renderActions(message) {
    const record = message.record;
    const left = message.actions.querySelector(".message-actions-left");
    const right = message.actions.querySelector(".message-actions-right");
    left.textContent = "";
    right.textContent = "";
    if (!record && !message.text) return;
    message.actions.hidden = false;
    const button = (cls, label, title, onClick) => {
      const b = document.createElement("button");
      b.className = `action-btn ${cls}`;
      b.textContent = label;
      if (title) b.title = title;
      b.addEventListener("click", onClick);
      return b;
    };
    if (record && hasCitations(record)) {
      const toggle = button("citations-toggle", "", "", () => {
        message.citationsVisible = !message.citationsVisible;
        updateToggle();
      });
      const updateToggle = () => {
        const on = message.citationsVisible;
        message.wrapper.classList.toggle("citations-hidden", !on);
        toggle.setAttribute("aria-pressed", String(on));
        toggle.innerHTML = on ? `${ICONS.eye} Citations: Visible` : `${ICONS.eyeOff} Citations: Hidden`;
        toggle.title = on ? "Hide citations" : "Show citations";
        if (!on) closePopover();
      };
      updateToggle();
      left.appendChild(toggle);
      if ((record.citations || []).length) {
        const counts = verificationCounts(record);
        const inspector = button("claims-inspector-btn", "", inspectorTooltip(counts), () => openInspector(record));
        inspector.innerHTML = `${ICONS.shield} Claim Verification Inspector`;
        left.appendChild(inspector);
      }
    }
    const copy = button("copy-btn", "Copy", "Copy the answer", async () => {
      const text = copyText(message);
      try {
        await host.copyText(text);
        copy.textContent = "Copied";
        copy.classList.add("copied");
        window.setTimeout(() => {
          copy.textContent = "Copy";
          copy.classList.remove("copied");
        }, 1500);
      } catch (exc) {
        setStatus(`Could not copy: ${exc.message}`, true);
      }
    });
    right.appendChild(copy);
    if (record) right.appendChild(button("info-btn", "⋯", "Message information", () => openMessageInfo(record)));
  }

  function copyText(message) {
    const record = message.record;
    const text = record ? record.text : message.text;
    if (!record) return stripCitations(text);
    return message.citationsVisible ? toAuthorYear(text, record.citations, record.references) : stripCitations(text);
  }

  // ---- pills and popover --------------------------------------------------------------
  messagesEl.addEventListener("click", (e) => {
    const pill = e.target.closest(".citation-pill:not(.pending)");
    if (pill) {
      e.stopPropagation();
      openPopover(pill);
      return;
    }
    const candidatePill = e.target.closest(".candidate-pill");
    if (candidatePill) {
      const wrapper = candidatePill.closest(".message-wrapper");
      const card = wrapper.querySelectorAll(".candidate-card")[Number(candidatePill.dataset.candidateIdx) - 1];
      if (card) {
        card.scrollIntoView({ block: "nearest", behavior: "smooth" });
        card.classList.add("flash");
        window.setTimeout(() => card.classList.remove("flash"), 1200);
      }
      return;
    }
    const source = e.target.closest(".zotero-source-link");
    if (source) selectInLibrary(source.dataset.itemKey, source.dataset.libraryId);
  });
  messagesEl.addEventListener("keydown", (e) => {
    if ((e.key === "Enter" || e.key === " ") && e.target.matches?.(".citation-pill:not(.pending), .zotero-source-link")) {
      e.preventDefault();
      e.target.click();
    }
  });

  function messageOf(el) {
    return state.messages.find((m) => m.wrapper === el.closest(".message-wrapper"));
  }

  function openPopover(pill) {
    const message = messageOf(pill);
    const record = message?.record;
    if (!record) return;
    const index = Number(pill.dataset.citationIdx);
    const occNumber = Number(pill.dataset.citationOcc);
    const citation = (record.citations || []).find((c) => c.index === index);
    if (!citation) return;
    const occurrence = (citation.occurrences || []).find((o) => o.occurrence === occNumber) || null;
    closePopover();
    pill.classList.add("active");
    const pop = document.createElement("div");
    pop.className = "evidence-popover";
    pop.setAttribute("role", "dialog");
    pop.setAttribute("aria-label", `Evidence from ${citation.title || "source"}`);
    const badge = occurrenceBadge(occurrence);
    // A quote's scores stay a hover away: the badge itself makes no support claim.
    const badgeTitle = isQuoted(occurrence) ? ` title="${escapeAttr(quoteScores(occurrence))}"` : "";
    const section = citation.section ? `<span class="evidence-section-badge">§ ${renderer.inlineMarkdown(citation.section)}</span>` : "";
    pop.innerHTML =
      '<div class="evidence-popover-header"><div class="evidence-popover-heading">' +
      `<div class="evidence-popover-title">${renderer.inlineMarkdown(citation.title || "Untitled source")}</div>` +
      `<div class="evidence-popover-byline">${escapeHtml(bylineOf(citation))}</div></div>` +
      '<div class="evidence-popover-controls">' +
      '<button class="icon-btn evidence-popover-maximize-btn" title="Maximize" aria-label="Maximize">⤢</button>' +
      '<button class="icon-btn evidence-popover-close-btn" title="Close" aria-label="Close">✕</button></div></div>' +
      `<div class="evidence-popover-badges-row">${section}<span class="evidence-support-badge ${badge.level}"${badgeTitle}>${escapeHtml(badge.text)}</span></div>` +
      `<div class="evidence-quote">${renderer.markdown(citation.quote || "")}</div>` +
      '<div class="evidence-popover-actions">' +
      `<button class="secondary-btn open-reader-btn" ${host.canOpenInReader ? "" : "disabled"} title="${escapeAttr(host.canOpenInReader ? "Open the PDF at this section" : host.zoteroOnlyHint)}">${ICONS.book} Open in Reader</button>` +
      `<button class="secondary-btn select-library-btn" ${host.canSelectInLibrary ? "" : "disabled"} title="${escapeAttr(host.canSelectInLibrary ? "Select the item in your library" : host.zoteroOnlyHint)}">${ICONS.folder} Select in Library</button>` +
      "</div>" + DIRECTIONS.map((d) => `<div class="evidence-resizer ${d}" data-dir="${d}"></div>`).join("");
    document.body.appendChild(pop);
    const viewport = () => ({ width: window.innerWidth, height: window.innerHeight });
    const place = placePopover(pill.getBoundingClientRect(), viewport());
    Object.assign(pop.style, { left: `${place.left}px`, top: `${place.top}px`, width: `${place.width}px`, maxHeight: `${place.maxHeight}px` });
    pop.dataset.placement = place.placement;
    if (place.narrow) pop.classList.add("narrow");
    const popState = { el: pop, pill, maximized: false, restore: null, citation };
    state.popover = popState;

    pop.querySelector(".evidence-popover-close-btn").addEventListener("click", () => closePopover());
    pop.querySelector(".evidence-popover-maximize-btn").addEventListener("click", () => {
      const btn = pop.querySelector(".evidence-popover-maximize-btn");
      if (!popState.maximized) {
        popState.restore = { left: pop.style.left, top: pop.style.top, width: pop.style.width, height: pop.style.height, maxHeight: pop.style.maxHeight };
        const r = maximizedRect(viewport());
        Object.assign(pop.style, { left: `${r.left}px`, top: `${r.top}px`, width: `${r.width}px`, height: `${r.height}px`, maxHeight: "none" });
        btn.textContent = "⤡";
        btn.title = "Restore";
      } else {
        Object.assign(pop.style, popState.restore);
        btn.textContent = "⤢";
        btn.title = "Maximize";
      }
      popState.maximized = !popState.maximized;
      pop.classList.toggle("maximized", popState.maximized);
    });
    pop.querySelector(".open-reader-btn").addEventListener("click", () => runHostAction(() => host.openInReader(citation)));
    pop.querySelector(".select-library-btn").addEventListener("click", () => selectInLibrary(citation.item_key, citation.library_id));
    for (const handle of pop.querySelectorAll(".evidence-resizer")) {
      handle.addEventListener("pointerdown", (e) => startResize(e, pop, handle.dataset.dir, viewport));
    }
  }

  function startResize(e, pop, dir, viewport) {
    e.preventDefault();
    const r = pop.getBoundingClientRect();
    const start = { x: e.clientX, y: e.clientY, rect: { left: r.left, top: r.top, width: r.width, height: r.height } };
    pop.style.maxHeight = "none"; // a resize lifts the initial clamp
    const move = (ev) => {
      const next = resizeRect(start.rect, dir, ev.clientX - start.x, ev.clientY - start.y, viewport());
      Object.assign(pop.style, { left: `${next.left}px`, top: `${next.top}px`, width: `${next.width}px`, height: `${next.height}px` });
    };
    const up = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      window.removeEventListener("blur", up);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
    window.addEventListener("blur", up);
  }

  function closePopover() {
    if (!state.popover) return;
    state.popover.pill.classList.remove("active");
    state.popover.el.remove();
    state.popover = null;
  }

  document.addEventListener("pointerdown", (e) => {
    if (state.popover && !scrollIsInside(e.target, state.popover.el) && !e.target.closest?.(".citation-pill")) closePopover();
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      if (document.querySelector(".modal-backdrop")) document.querySelector(".modal-backdrop").remove();
      else closePopover();
    }
  });
  // Scroll isolation: scrolling the quote inside the popover keeps it; scrolling the chat closes it.
  document.addEventListener("scroll", (e) => {
    if (state.popover && !state.popover.maximized && !scrollIsInside(e.target, state.popover.el)) closePopover();
  }, true);
  window.addEventListener("resize", () => {
    if (!state.popover || state.popover.maximized) return;
    const pop = state.popover.el;
    const r = pop.getBoundingClientRect();
    const left = Math.max(8, Math.min(r.left, window.innerWidth - r.width - 8));
    const top = Math.max(8, Math.min(r.top, window.innerHeight - r.height - 8));
    Object.assign(pop.style, { left: `${left}px`, top: `${top}px`, maxHeight: `${window.innerHeight - 16}px` });
  });

  async function runHostAction(action) {
    try {
      await action();
    } catch (exc) {
      setStatus(exc.message, true);
    }
  }

  /** Select an item in Zotero; `libraryId` is the citation's ("user" when missing: older turns). */
  function selectInLibrary(itemKey, libraryId = "user") {
    if (!host.canSelectInLibrary) {
      setStatus(host.zoteroOnlyHint, true);
      return;
    }
    runHostAction(() => host.selectInLibrary(itemKey, libraryId || "user"));
  }

  // ---- modals -------------------------------------------------------------------------
  function modal(title, { wide = false, id = "", icon = "" } = {}) {
    const backdrop = document.createElement("div");
    backdrop.className = "modal-backdrop";
    backdrop.innerHTML = `<div class="modal${wide ? " wide" : ""}" role="dialog" aria-modal="true"${id ? ` id="${id}"` : ""}>` +
      `<div class="modal-head"><h2>${icon}${escapeHtml(title)}</h2><button class="icon-btn modal-close" aria-label="Close">✕</button></div>` +
      '<div class="modal-body"></div><div class="modal-foot" hidden></div></div>';
    backdrop.addEventListener("pointerdown", (e) => {
      if (e.target === backdrop) backdrop.remove();
    });
    backdrop.querySelector(".modal-close").addEventListener("click", () => backdrop.remove());
    document.body.appendChild(backdrop);
    return { backdrop, body: backdrop.querySelector(".modal-body"), foot: backdrop.querySelector(".modal-foot"), close: () => backdrop.remove() };
  }

  function openMessageInfo(record) {
    const m = modal("Message Information", { id: "message-info" });
    const counts = verificationCounts(record);
    const v = record.verification;
    const stats = probabilityStats(record);
    let html = `<p class="info-muted">Turn: ${escapeHtml(record.intent)} · ${new Date(record.completed_at || Date.now()).toLocaleString()}</p>`;
    if ((record.citations || []).length || counts.total) {
      html += '<h3>Citation Support</h3>' +
        `<p class="info-line stats-line">${escapeHtml(statsLine(stats))}</p>` +
        `<p class="info-line counts-line">${escapeHtml(countsLine(counts))}</p>`;
      if (v) {
        html += `<p class="info-muted">Decision model: ${escapeHtml(v.provider || "—")}${v.model ? ` / ${escapeHtml(v.model)}` : ""} · ` +
          `threshold ${Number(v.threshold ?? 0.6).toFixed(2)} · ${Math.round(v.latency_ms || 0)} ms${v.note ? ` · ${escapeHtml(v.note)}` : ""}</p>`;
      }
    } else {
      html += '<p class="info-muted">This answer has no verified citations.</p>';
    }
    const refs = record.references || {};
    html += `<p class="info-muted">Sources: ${(refs.cited || []).length} cited, ${(refs.considered || []).length} considered.</p>`;
    m.body.innerHTML = html;
  }

  function openInspector(record) {
    if (host.openInspectorWindow && host.openInspectorWindow(record)) return;
    const m = modal("Claim Verification Inspector", { wide: true, id: "claims-inspector", icon: ICONS.shield });
    renderInspector(m.body, record, { renderer, host, onSelect: selectInLibrary, onOpen: (row) => runHostAction(() => host.openInReader(row)), window });
  }

  // ---- discovery ----------------------------------------------------------------------
  function renderCandidates(message) {
    const record = message.record;
    if (!message.selection) message.selection = new CandidateSelection(record.candidates);
    else message.selection.update(record.candidates);
    const selection = message.selection;
    const box = document.createElement("div");
    box.className = "candidates";
    box.innerHTML = '<div class="candidates-head"><button class="secondary-btn select-all-btn"></button>' +
      '<span class="candidates-summary"></span><button class="primary-btn import-btn"></button></div><div class="candidate-list"></div>' +
      '<div class="import-report" hidden></div>';
    const list = box.querySelector(".candidate-list");
    for (const c of record.candidates) {
      const card = document.createElement("label");
      card.className = "candidate-card";
      card.dataset.candidateId = c.candidate_id;
      const authors = (c.authors || []).slice(0, 4).join(", ") + ((c.authors || []).length > 4 ? " et al." : "");
      const meta = [authors, c.year, c.venue].filter(Boolean).map((x) => escapeHtml(String(x))).join(" · ");
      const open = c.oa_status && c.oa_status !== "closed";
      card.innerHTML = '<input type="checkbox" class="candidate-check">' +
        `<div class="candidate-body"><div class="candidate-title">${renderer.inlineMarkdown(c.title)}</div>` +
        `<div class="candidate-meta">${meta}<span class="oa-badge${open ? " open" : ""}">${escapeHtml(oaLabel(c))}</span>` +
        `${c.cited_by_count != null ? ` · cited by ${Number(c.cited_by_count)}` : ""}</div>` +
        `<div class="candidate-keywords">${(c.keywords || []).map((k) => `<span class="keyword-chip">${escapeHtml(k)}</span>`).join("")}</div>` +
        (c.abstract ? `<details class="candidate-abstract"><summary>Abstract</summary><div>${renderer.markdown(c.abstract)}</div></details>` : "") +
        "</div>";
      const check = card.querySelector("input");
      check.checked = selection.isSelected(c.candidate_id);
      card.classList.toggle("selected", check.checked);
      check.addEventListener("change", () => {
        selection.toggle(c.candidate_id, check.checked);
        sync();
      });
      list.appendChild(card);
    }
    const selectAll = box.querySelector(".select-all-btn");
    const importBtn = box.querySelector(".import-btn");
    const sync = () => {
      for (const card of list.children) {
        const on = selection.isSelected(card.dataset.candidateId);
        card.querySelector("input").checked = on;
        card.classList.toggle("selected", on);
      }
      selectAll.textContent = selection.allSelected ? "Deselect All" : "Select All";
      box.querySelector(".candidates-summary").textContent = selection.summary();
      importBtn.textContent = host.canImport ? "Import Selected…" : "Stage Selected…";
      importBtn.disabled = selection.selected.size === 0;
    };
    selectAll.addEventListener("click", (e) => {
      e.preventDefault();
      if (selection.allSelected) selection.selectNone();
      else selection.selectAll();
      sync();
    });
    importBtn.addEventListener("click", () => confirmImport(message, box.querySelector(".import-report")));
    sync();
    message.extra.appendChild(box);
  }

  async function confirmImport(message, reportEl) {
    const chosen = message.selection.chosen();
    if (!chosen.length) return;
    // Where the papers go: a library the user may write to, and optionally one of its collections.
    const { groups, selected } = importChoices(host.canImport ? await host.listImportTargets() : []);
    const choices = groups.flatMap((g) => g.choices);
    const summary = confirmationSummary(chosen, selected?.where);
    const m = modal(host.canImport ? summary.headline : summary.headline.replace(/^Import (\d+ papers?) into .*\?$/, "Stage $1 for download?"), { id: "import-confirm" });
    m.body.innerHTML = `<ul class="confirm-list">${summary.lines.map((l) =>
      `<li>${escapeHtml(l.title)}${l.year ? ` (${l.year})` : ""} <span class="oa">— ${escapeHtml(l.oa)}</span></li>`).join("")}</ul>` +
      `<p class="info-muted">${escapeHtml(summary.pdfNote)}</p>` +
      (host.canImport
        ? '<div class="confirm-target"><label for="import-collection">Add to</label><select id="import-collection">' +
          groups.map((g) => `<optgroup label="${escapeAttr(g.label)}">${g.choices.map((c) =>
            `<option value="${escapeAttr(c.value)}"${c === selected ? " selected" : ""}>${escapeHtml(c.label)}</option>`).join("")}</optgroup>`).join("") +
          '</select></div><p class="info-muted import-files-note" hidden></p>'
        : `<p class="info-muted">${escapeHtml(host.importHint)}</p>`);
    const select = m.body.querySelector("#import-collection");
    const choice = () => choices.find((c) => c.value === select?.value) || null;
    // The headline and the note about files follow the choice.
    const showChoice = () => {
      const current = choice();
      if (!current) return;
      m.backdrop.querySelector(".modal-head h2").textContent = confirmationSummary(chosen, current.where).headline;
      const note = m.body.querySelector(".import-files-note");
      note.hidden = current.filesEditable;
      note.textContent = current.filesEditable ? "" : `The group “${current.libraryName}” does not allow files: the papers are imported as metadata only, without PDFs.`;
    };
    select?.addEventListener("change", showChoice);
    showChoice();
    m.foot.hidden = false;
    m.foot.innerHTML = '<button class="secondary-btn cancel-btn">Cancel</button><button class="primary-btn confirm-btn">' +
      (host.canImport ? "Import" : "Stage PDFs") + "</button>";
    m.foot.querySelector(".cancel-btn").addEventListener("click", () => m.close());
    m.foot.querySelector(".confirm-btn").addEventListener("click", async () => {
      const target = choice();
      m.close();
      await runImport(message, chosen, target, reportEl);
    });
  }

  /** `target`: the dialog's choice (`libraryID`, `collectionId`, `where`), null on the web page. */
  async function runImport(message, chosen, target, reportEl) {
    reportEl.hidden = false;
    reportEl.textContent = "Preparing the batch: downloading and checking open-access PDFs on the server…";
    try {
      const batch = await api.prepareBatch(state.sessionId || message.record.session_id, message.record.turn_id,
        chosen.map((c) => c.candidate_id));
      const plan = importPlan(chosen, batch);
      reportEl.textContent = host.canImport ? `Importing into ${target?.where || "My Library"}…` : "Fetching staged PDFs…";
      const { results, ingest } = await host.importBatch(plan, { libraryID: target?.libraryID, collectionId: target?.collectionId || "", api });
      const report = importReport(results);
      reportEl.innerHTML = `<strong>${escapeHtml(report.headline)}</strong><ul>${report.lines.map((l) =>
        `<li data-status="${escapeAttr(l.status)}">${escapeHtml(l.title)} — ${escapeHtml(l.status)}${l.note ? `: ${escapeHtml(l.note)}` : ""}` +
        `${l.href ? ` <a href="${escapeAttr(l.href)}" download="${escapeAttr(l.filename || "paper.pdf")}">Download PDF</a>` : ""}</li>`).join("")}</ul>` +
        (ingest ? `<p class="info-muted import-ingest">${escapeHtml(ingest)}</p>` : "");
      if (host.canSyncLibrary) refreshLibraryStatus();
    } catch (exc) {
      reportEl.textContent = exc.code === "not_found"
        ? "This server cannot stage papers yet (no /discover/prepare_batch route). Nothing was imported."
        : `Import failed: ${exc.message}`;
      reportEl.classList.add("error");
    }
  }

  function handleApiError(exc) {
    if (exc instanceof ApiError && (exc.code === "unauthorized" || exc.code === "server_unreachable")) showConnect(exc.message);
    else setStatus(exc.message, true);
  }

  // ---- start --------------------------------------------------------------------------
  showEmpty();
  if (!host.token()) showConnect(host.missingTokenHint || "");
  else connect();

  return { state, api, renderer, connect, loadSession, newSession, send, stop };
}

/**
 * The claim verification inspector table into `container`: sortable headers, resizable
 * columns (the right neighbour compensates; double-click resets), a source filter and
 * per-row reader/library actions. Used by the in-page modal and the Zotero window.
 */
export function renderInspector(container, record, { renderer, host, onSelect, onOpen, window }) {
  const document = container.ownerDocument;
  const rows = claimRows(record);
  const counts = verificationCounts(record);
  let sort = { column: "number", direction: "asc" };
  let filter = "";
  const tableWidth = () => Math.max(600, (container.querySelector(".claims-table-wrap")?.clientWidth || window.innerWidth || 1000) - 2);
  let widths = null;
  let justResized = false;
  const headers = ["#", "Claim", "Source & Section", "Supporting Evidence", "Probability & Verdict"];
  const options = sourceOptions(rows);

  container.innerHTML =
    `<p class="info-line counts-line">${escapeHtml(countsLine(counts))}</p>` +
    '<div class="claims-toolbar"><div id="claims-source-dropdown-wrap">' +
    '<button id="claims-source-btn" aria-haspopup="listbox">All sources ▾</button>' +
    `<div id="claims-source-menu" role="listbox" hidden><button data-key="" aria-selected="true">All sources (${rows.length})</button>${
      options.map((o) => `<button data-key="${escapeAttr(o.sourceId)}" title="${escapeAttr(o.title)}">${escapeHtml(o.label)} (${o.count})</button>`).join("")}</div></div>` +
    `<span class="info-muted">${escapeHtml(statsLine(probabilityStats(record)))}</span></div>` +
    '<div class="claims-table-wrap"><table class="claims-table"><colgroup></colgroup><thead><tr></tr></thead><tbody></tbody></table></div>';
  const table = container.querySelector(".claims-table");
  const wrap = container.querySelector(".claims-table-wrap");
  const colgroup = table.querySelector("colgroup");
  const headRow = table.querySelector("thead tr");
  const tbody = table.querySelector("tbody");

  const applyWidths = () => {
    colgroup.innerHTML = widths.map((w) => `<col style="width:${w}px">`).join("");
    table.style.width = `${widths.reduce((a, b) => a + b, 0)}px`;
  };

  headers.forEach((label, i) => {
    const th = document.createElement("th");
    th.dataset.column = COLUMNS[i];
    th.innerHTML = `${escapeHtml(label)}<span class="sort-mark"></span><span class="col-resizer" title="Drag to resize; double-click to reset"></span>`;
    th.style.position = "sticky";
    th.addEventListener("click", (e) => {
      if (justResized || e.target.classList.contains("col-resizer")) return;
      sort = nextSort(sort, COLUMNS[i]);
      drawRows();
    });
    const resizer = th.querySelector(".col-resizer");
    resizer.addEventListener("dblclick", (e) => {
      e.stopPropagation();
      widths = defaultColumnWidths(tableWidth());
      applyWidths();
    });
    resizer.addEventListener("pointerdown", (e) => {
      e.preventDefault();
      e.stopPropagation();
      const startX = e.clientX;
      const startWidths = [...widths];
      const guide = document.createElement("div");
      guide.className = "col-resize-guide";
      guide.style.height = `${wrap.scrollHeight}px`;
      wrap.appendChild(guide);
      const move = (ev) => {
        widths = resizeColumns(startWidths, i, ev.clientX - startX);
        applyWidths();
        guide.style.left = `${widths.slice(0, i + 1).reduce((a, b) => a + b, 0)}px`;
      };
      const up = () => {
        guide.remove();
        justResized = true;
        window.setTimeout(() => { justResized = false; }, 0);
        window.removeEventListener("pointermove", move);
        window.removeEventListener("pointerup", up);
        window.removeEventListener("blur", up);
      };
      move(e);
      window.addEventListener("pointermove", move);
      window.addEventListener("pointerup", up);
      window.addEventListener("blur", up);
    });
    headRow.appendChild(th);
  });

  function drawRows() {
    for (const th of headRow.children) {
      th.querySelector(".sort-mark").textContent = th.dataset.column === sort.column ? (sort.direction === "asc" ? "▲" : "▼") : "";
    }
    tbody.textContent = "";
    for (const row of sortRows(filterRows(rows, filter), sort.column, sort.direction)) {
      const tr = document.createElement("tr");
      tr.className = row.verdictLabel.toLowerCase() + (row.quoted ? " quoted" : "");
      tr.dataset.number = String(row.number);
      tr.innerHTML =
        `<td>#${row.number}</td>` +
        `<td>${renderer.markdown(stripMathQuotes(row.claim))}` +
        (row.quoted ? `<div class="info-muted quote-note">${escapeHtml(QUOTED_TEXT)}</div>` : "") + "</td>" +
        `<td><div><strong>${renderer.inlineMarkdown(row.title)}</strong></div><div class="info-muted">${escapeHtml(row.source)}</div>` +
        (row.section ? `<div class="evidence-section-badge">§ ${renderer.inlineMarkdown(row.section)}</div>` : "") +
        `<div class="row-actions"><button class="secondary-btn row-open" ${host.canOpenInReader ? "" : "disabled"} title="${escapeAttr(host.canOpenInReader ? "Open in Reader" : host.zoteroOnlyHint)}">${ICONS.book} Open in Reader</button>` +
        `<button class="secondary-btn row-select" ${host.canSelectInLibrary ? "" : "disabled"} title="${escapeAttr(host.canSelectInLibrary ? "Select in Library" : host.zoteroOnlyHint)}">${ICONS.folder} Select in Library</button></div></td>` +
        `<td><div class="evidence-cell">${renderer.markdown(row.evidence)}</div></td>` +
        `<td><span class="probability">${escapeHtml(scoreText(row))}</span>` +
        rowBadges(row).map((b) => `<span class="verdict-badge ${escapeAttr(b.cls)}">${escapeHtml(b.text)}</span>`).join("") + "</td>";
      tr.querySelector(".row-open").addEventListener("click", () => onOpen({ item_key: row.itemKey, library_id: row.libraryId,
        attachment_key: row.attachmentKey, section: row.section, title: row.title }));
      tr.querySelector(".row-select").addEventListener("click", () => onSelect(row.itemKey, row.libraryId));
      tbody.appendChild(tr);
    }
  }

  const menu = container.querySelector("#claims-source-menu");
  const menuBtn = container.querySelector("#claims-source-btn");
  menuBtn.addEventListener("click", () => { menu.hidden = !menu.hidden; });
  for (const b of menu.querySelectorAll("button")) {
    b.addEventListener("click", () => {
      filter = b.dataset.key;
      for (const other of menu.querySelectorAll("button")) other.setAttribute("aria-selected", String(other === b));
      menuBtn.textContent = `${filter ? options.find((o) => o.sourceId === filter).label : "All sources"} ▾`;
      menu.hidden = true;
      drawRows();
    });
  }
  widths = defaultColumnWidths(tableWidth());
  applyWidths();
  drawRows();
  return { rows };
}
