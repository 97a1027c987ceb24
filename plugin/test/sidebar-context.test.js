// The sidebar's shared context (content/sidebar/context.js): the bus its features talk
// through, and the disposer each feature's mount(ctx) returns the undo of.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createBus, disposer } from "../content/sidebar/context.js";

test("bus events reach every listener in the order added, until its off is called", () => {
  const bus = createBus();
  const seen = [];
  const offA = bus.on("status", (text, error) => seen.push(["a", text, error]));
  bus.on("status", (text) => seen.push(["b", text]));
  bus.emit("status", "Connected", false);
  offA();
  offA();
  bus.emit("status", "again");
  bus.emit("nobody-listens", 1);
  assert.deepEqual(seen, [["a", "Connected", false], ["b", "Connected"], ["b", "again"]]);
});

test("a bus request is answered by its one handler, with the handler's return value", async () => {
  const bus = createBus();
  const off = bus.handle("connection.connect", async (x) => x === 1);
  assert.equal(await bus.request("connection.connect", 1), true);
  assert.throws(() => bus.handle("connection.connect", () => {}), /"connection.connect" already has a handler; each request has one owner/);
  off();
  assert.throws(() => bus.request("connection.connect"), /No sidebar feature answers "connection.connect": is the feature that handles it mounted\?/);
  bus.handle("connection.connect", () => "again");
  assert.equal(bus.request("connection.connect"), "again");
});

test("a disposer removes its listeners and undoes newest first; a guarded callback goes quiet", () => {
  const target = new EventTarget();
  const order = [];
  const calls = [];
  const d = disposer();
  d.add(() => order.push("first"));
  d.listen(target, "click", () => calls.push("click"));
  d.add(() => order.push("last"));
  const guarded = d.guard((x) => x * 2);
  target.dispatchEvent(new Event("click"));
  assert.equal(guarded(2), 4);
  d.dispose();
  target.dispatchEvent(new Event("click"));
  assert.deepEqual(calls, ["click"]);
  assert.deepEqual(order, ["last", "first"]);
  assert.equal(guarded(2), undefined);
});

// The features talk only through the bus: every request the sidebar makes has one handler
// among them, every event it emits has a listener, and every feature file is mounted.
test("every sidebar request has exactly one handler, every event a listener, every feature a mount", async () => {
  const dir = new URL("../content/sidebar/", import.meta.url);
  const files = ["app.js", "host-actions.js", ...readdirSync(new URL("features/", dir)).map((f) => `features/${f}`)];
  const source = Object.fromEntries(files.map((f) => [f, readFileSync(new URL(f, dir), "utf8")]));
  const names = (re) => Object.values(source).flatMap((text) => [...text.matchAll(re)].map((m) => m[1]));
  const handled = names(/bus\.handle\("([\w.]+)"/g);
  const requested = new Set(names(/bus\.request\("([\w.]+)"/g));
  assert.deepEqual(handled.filter((n, i) => handled.indexOf(n) !== i), [], "a request with two handlers");
  assert.deepEqual([...requested].filter((n) => !handled.includes(n)), [], "a request no feature answers");
  const listened = new Set(names(/bus\.on\("([\w.]+)"/g));
  assert.deepEqual(names(/bus\.emit\("([\w.]+)"/g).filter((n) => !listened.has(n)), [], "an event nobody listens to");
  for (const file of files.filter((f) => f.startsWith("features/"))) {
    const feature = await import(new URL(file, dir));
    assert.equal(typeof feature.mount, "function", `${file} exports no mount(ctx)`);
    assert.match(source["app.js"], new RegExp(`from "\\./${file.replace(".", "\\.")}"`), `${file} is not mounted by app.js`);
  }
});
