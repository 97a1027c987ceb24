// The context every sidebar feature is mounted with (features/*.js, `mount(ctx)` returning its
// unmount): the page's window and document, the host, one API client and one renderer, the
// shared state and the bus the features talk through. No feature calls another's functions.

import { ApiClient } from "../core/client.js";
import { createRenderer } from "../core/render.js";

/**
 * Events and requests between features. `on(event, listener)` and `emit(event, ...args)`:
 * any number of listeners, called in the order they were added. `handle(name, handler)` and
 * `request(name, ...args)`: exactly one feature answers a request, and the caller gets its
 * return value (a promise where the handler is async). `on` and `handle` return their undo.
 */
export function createBus() {
  const listeners = new Map();
  const handlers = new Map();
  return {
    on(event, listener) {
      if (!listeners.has(event)) listeners.set(event, []);
      listeners.get(event).push(listener);
      return () => {
        const list = listeners.get(event) || [];
        const at = list.indexOf(listener);
        if (at >= 0) list.splice(at, 1);
      };
    },
    emit(event, ...args) {
      for (const listener of [...(listeners.get(event) || [])]) listener(...args);
    },
    handle(name, handler) {
      if (handlers.has(name)) throw new Error(`The sidebar request "${name}" already has a handler; each request has one owner.`);
      handlers.set(name, handler);
      return () => {
        if (handlers.get(name) === handler) handlers.delete(name);
      };
    },
    request(name, ...args) {
      const handler = handlers.get(name);
      if (!handler) throw new Error(`No sidebar feature answers "${name}": is the feature that handles it mounted?`);
      return handler(...args);
    },
  };
}

/**
 * What a feature's mount collects to undo: `listen` adds a DOM listener and its removal, `add`
 * any undo (a bus subscription), `guard` wraps a callback handed to the host (which offers no
 * unsubscribe) so that it does nothing once unmounted; `dispose` undoes all, newest first.
 */
export function disposer() {
  const undo = [];
  let live = true;
  return {
    add(fn) {
      undo.push(fn);
    },
    listen(target, type, listener, options) {
      target.addEventListener(type, listener, options);
      undo.push(() => target.removeEventListener(type, listener, options));
    },
    guard(fn) {
      return (...args) => (live ? fn(...args) : undefined);
    },
    dispose() {
      live = false;
      while (undo.length) undo.pop()();
    },
  };
}

/**
 * The shared context. `state` fields and who writes them: `sessionId` (sessions, and the chat
 * when a turn names its new session), `running` ({controller, message} of the turn in flight;
 * chat), `messages` (the chat's message objects; chat), `popover` (the open evidence popover;
 * popover), `scope` (the chip's option, `{label, scope}`: where questions are searched; scope),
 * `settings` (the user's settings as the server keeps them, `GET /settings`; settings).
 * `window.zocrates.state` is this object. `libs`: markdown-it, KaTeX and `preferences`, the
 * preferences pane's helpers (zotero/preferences.js; main.js passes them).
 */
export function createContext({ window, host, libs }) {
  const document = window.document;
  const $ = (id) => document.getElementById(id);
  const renderer = createRenderer(libs);
  const api = new ApiClient({
    baseUrl: host.serverUrl(),
    token: () => host.token(),
    fetch: (...args) => host.fetch(...args),
  });
  return {
    window,
    document,
    host,
    $,
    root: $("zocrates-root"),
    api,
    renderer,
    libs,
    state: {
      sessionId: null,
      running: null,
      messages: [],
      popover: null,
      scope: null,
      settings: null,
    },
    bus: createBus(),
  };
}
