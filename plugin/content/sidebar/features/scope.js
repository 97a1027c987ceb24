// The scope chip above the composer: where the next question is searched (the whole library
// by default). Clicking it lists the scopes the host offers now (core/scope.js; in Zotero "This
// PDF", the selected items, collection, library and tags; on the web page the server's
// collections and tags), with a filter when the list is long; the one chosen stays until another
// is. The chat sends `state.scope.scope` with each message, named by `scopeLabel(state.scope)`.

import { WHOLE_LIBRARY, filterOptions, sameScope } from "../../core/scope.js";
import { disposer } from "../context.js";

// Options listed at once; the filter finds the others.
const SHOWN = 60;

export function mount({ document, host, api, state, $, bus }) {
  const d = disposer();
  const chip = $("scope-chip");
  const menu = $("scope-menu");
  const filter = $("scope-filter");
  const list = $("scope-options");
  let options = [];
  state.scope = WHOLE_LIBRARY;

  function show(option) {
    state.scope = option;
    $("scope-label").textContent = option.label;
    chip.title = option.detail ? `Questions are searched in: ${option.label} (${option.detail})` : `Questions are searched in: ${option.label}`;
    chip.classList.toggle("narrowed", option.scope !== null);
  }

  function close() {
    menu.hidden = true;
    chip.setAttribute("aria-expanded", "false");
  }

  function render() {
    list.textContent = "";
    const shown = filterOptions(options, filter.value);
    let group = null;
    for (const option of shown.slice(0, SHOWN)) {
      if (option.group && option.group !== group) {
        group = option.group;
        const label = document.createElement("div");
        label.className = "flyout-label";
        label.textContent = group;
        list.appendChild(label);
      }
      const b = document.createElement("button");
      b.type = "button";
      b.setAttribute("role", "menuitemradio");
      b.setAttribute("aria-checked", String(sameScope(option.scope, state.scope.scope)));
      b.textContent = option.label;
      if (option.detail) {
        const detail = document.createElement("span");
        detail.className = "scope-detail";
        detail.textContent = option.detail;
        b.appendChild(detail);
      }
      b.addEventListener("click", () => {
        show(option);
        close();
        bus.request("chat.focus");
      });
      list.appendChild(b);
    }
    if (shown.length > SHOWN) {
      const more = document.createElement("div");
      more.className = "flyout-label";
      more.textContent = `${shown.length - SHOWN} more: type to narrow the list`;
      list.appendChild(more);
    }
  }

  async function open() {
    menu.hidden = false;
    chip.setAttribute("aria-expanded", "true");
    filter.value = "";
    options = [WHOLE_LIBRARY];
    render();
    try {
      options = await host.scopeOptions(api);
    } catch (exc) {
      bus.emit("status", `The library's collections and tags could not be listed: ${exc.message}`, true);
    }
    if (!options.some((o) => sameScope(o.scope, state.scope.scope))) options.splice(1, 0, state.scope);
    filter.hidden = options.length <= 12;
    render();
    if (!filter.hidden) filter.focus();
  }

  d.listen(chip, "click", (e) => {
    e.stopPropagation();
    if (menu.hidden) open();
    else close();
  });
  d.listen(filter, "input", () => render());
  d.listen(menu, "keydown", (e) => {
    if (e.key === "Escape") {
      close();
      chip.focus();
    }
  });
  d.listen(document, "click", (e) => {
    if (!menu.hidden && !menu.contains(e.target)) close();
  });
  show(WHOLE_LIBRARY);
  return d.dispose;
}
