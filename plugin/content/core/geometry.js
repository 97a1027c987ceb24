// Evidence popover geometry: placement next to a pill, viewport clamping, narrow-sidebar
// placement, 8-direction resizing and maximize. Pure numbers in, numbers out.

export const NARROW_VIEWPORT = 420;
export const MARGIN = 8;
export const GAP = 6;
export const MIN_WIDTH = 240;
export const MIN_HEIGHT = 160;
export const DIRECTIONS = ["nw", "n", "ne", "e", "se", "s", "sw", "w"];

/**
 * Where to put a popover for an anchor rect in a viewport.
 * @returns {{left:number, top:number, width:number, maxHeight:number, placement:"below"|"above", narrow:boolean}}
 */
export function placePopover(anchor, viewport, preferred = { width: 460, height: 420 }) {
  const narrow = viewport.width < NARROW_VIEWPORT;
  const width = narrow
    ? viewport.width - 2 * MARGIN
    : Math.min(preferred.width, viewport.width - 2 * MARGIN);
  let left = narrow ? MARGIN : Math.min(Math.max(MARGIN, anchor.left), viewport.width - width - MARGIN);
  left = Math.max(MARGIN, left);
  const spaceBelow = viewport.height - anchor.bottom - GAP - MARGIN;
  const spaceAbove = anchor.top - GAP - MARGIN;
  const below = spaceBelow >= Math.min(preferred.height, 220) || spaceBelow >= spaceAbove;
  const maxHeight = Math.max(MIN_HEIGHT, Math.floor(below ? spaceBelow : spaceAbove));
  const height = Math.min(preferred.height, maxHeight);
  let top = below ? anchor.bottom + GAP : anchor.top - GAP - height;
  top = Math.min(Math.max(MARGIN, top), Math.max(MARGIN, viewport.height - MARGIN - Math.min(height, viewport.height - 2 * MARGIN)));
  return { left, top, width, maxHeight: Math.min(maxHeight, viewport.height - 2 * MARGIN), placement: below ? "below" : "above", narrow };
}

/**
 * A rect after dragging the `direction` handle by (dx, dy), kept inside the viewport and
 * above the minimum size; the opposite edges stay put.
 */
export function resizeRect(rect, direction, dx, dy, viewport) {
  let { left, top, width, height } = rect;
  let right = left + width;
  let bottom = top + height;
  if (direction.includes("e")) right = Math.min(viewport.width - MARGIN, Math.max(left + MIN_WIDTH, right + dx));
  if (direction.includes("w")) left = Math.max(MARGIN, Math.min(right - MIN_WIDTH, left + dx));
  if (direction.includes("s")) bottom = Math.min(viewport.height - MARGIN, Math.max(top + MIN_HEIGHT, bottom + dy));
  if (direction.includes("n")) top = Math.max(MARGIN, Math.min(bottom - MIN_HEIGHT, top + dy));
  return { left, top, width: right - left, height: bottom - top };
}

/** The maximized rect: 92vw x 88vh, centred. */
export function maximizedRect(viewport) {
  const width = Math.round(viewport.width * 0.92);
  const height = Math.round(viewport.height * 0.88);
  return { left: Math.round((viewport.width - width) / 2), top: Math.round((viewport.height - height) / 2), width, height };
}

/** Whether a scroll event came from inside the popover (then it must not close or move it). */
export function scrollIsInside(target, popover) {
  let node = target;
  while (node) {
    if (node === popover) return true;
    node = node.parentNode;
  }
  return false;
}
