// Best-effort section navigation: find the outline entry (PDF outline or snapshot headings)
// that best matches a chunk's section breadcrumb. Pure; the reader glue walks the result.

function normalise(s) {
  return String(s || "")
    .toLowerCase()
    .replace(/\$[^$]*\$/g, " ")
    .replace(/^[\s\divxlc.]+(?=[a-z])/i, "") // leading numbering: "3.2 ", "IV. "
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

function words(s) {
  return new Set(normalise(s).split(" ").filter(Boolean));
}

/** 0..1: how well an outline title matches a wanted section title. */
export function titleScore(wanted, title) {
  const a = normalise(wanted);
  const b = normalise(title);
  if (!a || !b) return 0;
  if (a === b) return 1;
  if (b.startsWith(a) || a.startsWith(b)) return 0.9;
  const wa = words(a);
  const wb = words(b);
  let common = 0;
  for (const w of wa) if (wb.has(w)) common += 1;
  return common / Math.max(wa.size, wb.size);
}

/** A section breadcrumb "Methods > 2.1 Sampling" as its parts, deepest last. */
export function sectionParts(section) {
  return String(section || "").split(/\s*(?:>|›|»|\/|\|)\s*/).map((s) => s.trim()).filter(Boolean);
}

/**
 * The outline node to jump to: the best pre-order match (score >= 0.6) of the deepest
 * breadcrumb part, else of its parents in turn (a shallow outline lacks the sub-section).
 * Outline nodes are `{title, items?: [...]}`; anything else on them is kept for the caller.
 */
export function findOutlineTarget(outline, section) {
  const parts = sectionParts(section);
  for (let depth = parts.length - 1; depth >= 0; depth -= 1) {
    let best = null;
    let bestScore = 0.6;
    const visit = (nodes) => {
      for (const node of nodes || []) {
        const score = titleScore(parts[depth], node.title);
        if (score > bestScore) {
          best = node;
          bestScore = score;
        }
        visit(node.items || node.children);
      }
    };
    visit(outline);
    if (best) return best;
  }
  return null;
}
