// The library line under the sidebar's header (features/library.js) follows an indexing run:
// while the server indexes it asks again every few seconds, and stops once the run is done.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createBus } from "../content/sidebar/context.js";
import { INDEXING_POLL_MS, mount } from "../content/sidebar/features/library.js";

function element() {
  const el = new EventTarget();
  el.hidden = true;
  el.textContent = "";
  el.classList = { toggle() {} };
  return el;
}

function fakeWindow() {
  const timers = new Map();
  let next = 1;
  return {
    timers,
    setTimeout(fn, ms) {
      timers.set(next, { fn, ms });
      return next++;
    },
    clearTimeout(id) {
      timers.delete(id);
    },
    async fire() {
      const [[id, { fn }]] = timers;
      timers.delete(id);
      await fn();
    },
  };
}

test("the web page's library line follows indexing until it is done, and no longer once unmounted", async () => {
  const statuses = [
    { source: "zotero_dir", state: "running", indexed: 2, abstracts: 40, sources_done: 42, sources_total: 50, pages_per_s: 7.1, eta_s: 30 },
    { source: "zotero_dir", state: "running", indexed: 6, abstracts: 40, sources_done: 46, sources_total: 50, pages_per_s: 7.3, eta_s: 12 },
    { source: "zotero_dir", state: "done", indexed: 10, abstracts: 40, sources_done: 50, sources_total: 50, pages_per_s: 7.2 },
  ];
  const running = statuses[0];
  const api = { libraryStatus: async () => statuses.shift() };
  const elements = {};
  const $ = (id) => (elements[id] ??= element());
  const window = fakeWindow();
  const bus = createBus();
  const unmount = mount({ window, host: { canSyncLibrary: false }, api, $, bus });
  await bus.request("library.start");
  assert.match($("library-line").textContent, /indexing 42 of 50 \(7\.1 pages\/s, about 30 s left\)/);
  assert.deepEqual([...window.timers.values()].map((t) => t.ms), [INDEXING_POLL_MS]);
  await window.fire();
  assert.match($("library-line").textContent, /indexing 46 of 50 \(7\.3 pages\/s, about 12 s left\)/);
  await window.fire();
  assert.equal($("library-line").textContent, "Library read from Zotero on the server: 10 sources indexed; 40 abstracts searchable.");
  assert.equal(window.timers.size, 0, "a finished run is not asked about again");

  statuses.push(running); // a rescan starts: followed again, until the sidebar closes
  await bus.request("library.refresh", "");
  assert.equal(window.timers.size, 1);
  unmount();
  assert.equal(window.timers.size, 0);
});
