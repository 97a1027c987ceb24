// The sidebar: thin DOM glue over the pure modules in ../core. The same code runs in the
// Zotero pane and in the gateway's /ui/ page; `host` supplies what differs (settings,
// clipboard, reader and library actions, import into Zotero).
//
// This shell builds the shared context (context.js) and mounts each feature of features/,
// as bootstrap.js mounts the pane: every mount(ctx) returns its unmount. The features talk
// only through ctx.bus; see docs/plugin.md ("The sidebar's modules").

import { createContext } from "./context.js";
import * as menu from "./features/menu.js";
import * as connection from "./features/connection.js";
import * as library from "./features/library.js";
import * as sessions from "./features/sessions.js";
import * as chat from "./features/chat.js";
import * as scope from "./features/scope.js";
import * as popover from "./features/popover.js";
import * as importer from "./features/import.js";
import * as actions from "./features/actions.js";
import * as notes from "./features/notes.js";
import * as inspector from "./features/inspector.js";
import * as settings from "./features/settings.js";

// Mount order is listener order: the candidates are added to a finished message before its actions,
// and "Save as Note" after the actions that clear them.
const FEATURES = [menu, connection, library, sessions, chat, scope, popover, importer, actions, notes, inspector, settings];

export function startSidebar({ window, host, libs }) {
  const ctx = createContext({ window, host, libs });
  const { bus, state, api, renderer } = ctx;
  const unmounts = FEATURES.map((feature) => feature.mount(ctx));

  bus.request("chat.showEmpty");
  if (!host.token()) bus.request("connection.show", host.missingTokenHint || "");
  else bus.request("connection.connect");

  return {
    state,
    api,
    renderer,
    connect: () => bus.request("connection.connect"),
    loadSession: (sessionId) => bus.request("sessions.load", sessionId),
    newSession: () => bus.request("sessions.new"),
    send: () => bus.request("chat.send"),
    stop: () => bus.request("chat.stop"),
    /** Undo every feature's mount, last mounted first. */
    unmount: () => {
      while (unmounts.length) unmounts.pop()();
    },
  };
}
