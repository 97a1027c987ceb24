import { test } from "node:test";
import assert from "node:assert/strict";
import { maximizedRect, placePopover, resizeRect, scrollIsInside } from "../content/core/geometry.js";
import { findOutlineTarget, titleScore } from "../content/core/outline.js";

test("popover goes below when there is room, above otherwise, clamped to the viewport", () => {
  const below = placePopover({ left: 100, top: 100, bottom: 120 }, { width: 800, height: 800 });
  assert.equal(below.placement, "below");
  assert.equal(below.top, 126);
  const above = placePopover({ left: 100, top: 700, bottom: 720 }, { width: 800, height: 800 });
  assert.equal(above.placement, "above");
  assert.ok(above.top >= 8 && above.top + Math.min(420, above.maxHeight) <= 700);
  const right = placePopover({ left: 760, top: 100, bottom: 120 }, { width: 800, height: 800 });
  assert.equal(right.left + right.width, 792);
});

test("narrow sidebars pin the popover to 8px and the full width", () => {
  const p = placePopover({ left: 200, top: 100, bottom: 120 }, { width: 380, height: 700 });
  assert.deepEqual([p.left, p.width, p.narrow], [8, 364, true]);
});

test("8-direction resize keeps the opposite edges and the minimum size", () => {
  const rect = { left: 100, top: 100, width: 300, height: 300 };
  const vp = { width: 1000, height: 1000 };
  assert.deepEqual(resizeRect(rect, "se", 50, 20, vp), { left: 100, top: 100, width: 350, height: 320 });
  assert.deepEqual(resizeRect(rect, "nw", -50, -50, vp), { left: 50, top: 50, width: 350, height: 350 });
  assert.deepEqual(resizeRect(rect, "w", 200, 0, vp), { left: 160, top: 100, width: 240, height: 300 });
  assert.deepEqual(resizeRect(rect, "n", 0, -500, vp), { left: 100, top: 8, width: 300, height: 392 });
  assert.deepEqual(maximizedRect({ width: 1000, height: 500 }), { left: 40, top: 30, width: 920, height: 440 });
});

test("scroll isolation recognises events from inside the popover", () => {
  const pop = { parentNode: null };
  const inner = { parentNode: { parentNode: pop } };
  assert.equal(scrollIsInside(inner, pop), true);
  assert.equal(scrollIsInside({ parentNode: null }, pop), false);
});

test("outline navigation: scored match, numbering ignored, parent fallback", () => {
  const outline = [{ title: "1 Introduction" }, { title: "3 Model Architecture", items: [{ title: "3.2 Attention", items: [{ title: "3.2.1 Scaled Dot-Product Attention" }] }] }];
  assert.equal(findOutlineTarget(outline, "3.2 Attention").title, "3.2 Attention");
  assert.equal(findOutlineTarget(outline, "Model Architecture > Positional Encoding").title, "3 Model Architecture");
  assert.equal(findOutlineTarget(outline, "Results"), null);
  assert.equal(titleScore("Methods", "2. Methods"), 1);
});
