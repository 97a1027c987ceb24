// The chat stream: the composer (Enter sends, Shift+Enter breaks the line, Stop cancels), the
// streamed turn rendered as it arrives, the message list and the status line under it. Each
// question goes with the scope chip's scope (features/scope.js), named under it when narrowed,
// as it is under a reloaded turn (the turn keeps its scope_label).
// A finished message (streamed or reloaded) is emitted as "message.finalized" for the
// features that add to it (candidates, actions). A finished turn shows its unsupported claims as
// the user's settings say (state.settings); "settings.changed" renders every finished turn again.
// Listens to "status" (text, error) and "settings.changed". Answers "chat.send", "chat.stop",
// "chat.reset" (turns), "chat.replaceRecord" (message, record), "chat.showEmpty", "chat.focus"
// and "chat.scrollToEnd".

import { ApiError, turnErrorMessage } from "../../core/client.js";
import { throttle } from "../../core/format.js";
import { unsupportedMode } from "../../core/unsupported.js";
import { scopeLabel } from "../../core/scope.js";
import { morphHtml } from "../morph.js";
import { disposer } from "../context.js";

const RENDER_THROTTLE_MS = 50;

export function mount({ document, api, renderer, state, $, bus }) {
  const d = disposer();
  const messagesEl = $("messages");
  const input = $("chat-input");

  function setStatus(text, error = false) {
    const el = $("composer-status");
    el.textContent = text || "";
    el.classList.toggle("error", error);
  }

  d.listen($("chat-form"), "submit", (e) => {
    e.preventDefault();
    send();
  });
  d.listen(input, "keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  d.listen($("stop-btn"), "click", () => stop());

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
    const scope = state.scope?.scope ?? null;
    const label = scopeLabel(state.scope);
    addUserMessage(text, label);
    const message = addAssistantMessage();
    const controller = new AbortController();
    state.running = { controller, message };
    setRunning(true);
    setStatus("");
    try {
      const terminal = await api.streamTurn({
        message: text,
        sessionId: state.sessionId,
        scope,
        scopeLabel: label,
        signal: controller.signal,
        onEvent: (event) => onTurnEvent(message, event),
      });
      if (terminal.event === "error") message.error = terminal.data;
    } catch (exc) {
      message.error = { code: exc.code || "client_error", message: exc.message };
      if (exc instanceof ApiError && exc.code === "unauthorized") bus.request("connection.show", exc.message);
    } finally {
      state.running = null;
      setRunning(false);
      finalizeMessage(message);
      bus.request("sessions.refresh");
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
      if (data.session_id && data.session_id !== state.sessionId) {
        state.sessionId = data.session_id;
        bus.emit("session.current", data.session_id);
      }
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

  function addUserMessage(text, scopeLabel = "") {
    const wrapper = document.createElement("div");
    wrapper.className = "message-wrapper user";
    const bubble = document.createElement("div");
    bubble.className = "message-bubble";
    bubble.textContent = text;
    wrapper.appendChild(bubble);
    if (scopeLabel) {
      const scope = document.createElement("div");
      scope.className = "message-scope";
      scope.textContent = scopeLabel;
      scope.title = `Asked in: ${scopeLabel}`;
      wrapper.appendChild(scope);
    }
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
    const shown = { unsupported: unsupportedMode(state.settings?.unsupported_claims) };
    morphHtml(message.content, message.record ? renderer.renderTurn(message.record, shown) : renderer.renderStreaming(message.text));
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
    bus.emit("message.finalized", message);
  }

  /** Empty the list (and close the popover), then show `turns` as finished messages. */
  function reset(turns) {
    state.messages = [];
    messagesEl.textContent = "";
    bus.request("popover.close");
    for (const turn of turns) {
      addUserMessage(turn.question, turn.scope_label || "");
      const message = addAssistantMessage();
      message.record = turn;
      message.turnId = turn.turn_id;
      message.error = turn.error || null; // a turn that ended in an error is kept with it
      finalizeMessage(message);
    }
  }

  function showEmpty() {
    if (messagesEl.children.length) return;
    const div = document.createElement("div");
    div.className = "empty-state";
    div.textContent = "Ask a question about your library — answers cite their sources, and every citation is checked against the passage it cites. Ask to find new papers to search online.";
    messagesEl.appendChild(div);
  }

  d.add(bus.on("status", setStatus));
  d.add(bus.on("settings.changed", () => {
    for (const message of state.messages) if (message.record) renderMessage(message);
  }));
  // A turn verified or resolved again: the same message, its new record.
  d.add(bus.handle("chat.replaceRecord", (message, record) => {
    message.record = record;
    finalizeMessage(message);
  }));
  d.add(bus.handle("chat.send", () => send()));
  d.add(bus.handle("chat.stop", () => stop()));
  d.add(bus.handle("chat.reset", (turns) => reset(turns)));
  d.add(bus.handle("chat.showEmpty", () => showEmpty()));
  d.add(bus.handle("chat.focus", () => input.focus()));
  d.add(bus.handle("chat.scrollToEnd", () => {
    messagesEl.scrollTop = messagesEl.scrollHeight;
  }));
  return d.dispose;
}
