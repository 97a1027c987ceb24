// Unsupported claims: a claim whose every citation failed verification. The server keeps the
// facts (TurnRecord.unsupported: where each claim stands in `prose`, its best probability, its
// inspector rows); the client shows them as the user chose (GET /settings `unsupported_claims`):
// "mark" (a discreet marker where its citation stood), "remove" (the claim's sentence is left
// out) or "leave" (an uncited statement, the seed's pruning alone). Copy follows the same choice,
// and the server's export too (libs/citations zocrates_citations.unsupported: the same cases).

export const UNSUPPORTED_MODES = Object.freeze(["mark", "remove", "leave"]);
export const DEFAULT_UNSUPPORTED = "mark";

/** The word a marked claim carries in copied text. */
export const COPY_MARK = "[unsupported]";

/** A mode the client knows, else the default (a newer server may offer more). */
export function unsupportedMode(value) {
  return UNSUPPORTED_MODES.includes(value) ? value : DEFAULT_UNSUPPORTED;
}

/**
 * `Not supported by its cited passage (best p = 0.42)`: the marker's tooltip; with `: the passage
 * does not print 783` when the claim states numbers none of its passages prints (TurnRecord 7).
 */
export function unsupportedTooltip(claim) {
  const base = `Not supported by its cited passage (best p = ${Number(claim.probability).toFixed(2)})`;
  const numbers = Array.isArray(claim.unprinted_numbers) ? claim.unprinted_numbers : [];
  if (!numbers.length) return base;
  const passages = (claim.occurrences || []).length > 1 ? "none of its passages prints" : "the passage does not print";
  return `${base}: ${passages} ${numbers.join(", ")}`;
}

/** `2 unsupported claims` (empty when none). */
export function unsupportedLine(count) {
  if (!count) return "";
  return count === 1 ? "1 unsupported claim" : `${count} unsupported claims`;
}

/**
 * The record's unsupported claims with their offsets as JavaScript string indices (the server
 * counts code points; a character outside the BMP is two UTF-16 units here), in prose order.
 * A claim that does not fit the prose is dropped rather than cut in the wrong place.
 */
export function unsupportedClaims(record, prose) {
  const claims = Array.isArray(record?.unsupported) ? record.unsupported : [];
  if (!claims.length) return [];
  const index = utf16Index(prose);
  return claims
    .map((claim) => ({ ...claim, start: index(claim.start), end: index(claim.end), at: index(claim.at) }))
    .filter((c) => Number.isInteger(c.start) && Number.isInteger(c.end) && Number.isInteger(c.at) &&
      c.start <= c.at && c.at <= c.end && c.end <= prose.length)
    .sort((a, b) => a.start - b.start);
}

/** Code point offset -> UTF-16 index of `text` (null past its end). */
function utf16Index(text) {
  if (!/[\ud800-\udfff]/.test(text)) return (n) => (Number.isInteger(n) && n >= 0 && n <= text.length ? n : null);
  const at = [];
  let i = 0;
  for (const ch of text) {
    at.push(i);
    i += ch.length;
  }
  at.push(i);
  return (n) => (Number.isInteger(n) && n >= 0 && n < at.length ? at[n] : null);
}

/** `text` with `insert(i)` placed at each of `positions` (ascending); `clean` applied to the text between. */
export function insertAt(text, positions, insert, clean = (s) => s) {
  let out = "";
  let cursor = 0;
  positions.forEach((at, i) => {
    out += clean(text.slice(cursor, at)) + insert(i);
    cursor = at;
  });
  return out + clean(text.slice(cursor));
}

const LIST_MARKER_ONLY_RE = /^[ \t]*(?:[-*+]|\d+[.)])?[ \t]*$/;

/**
 * `prose` without the claims: each span cut, the spaces around it made one (none before
 * punctuation or a line end), and a line the cut leaves empty, or holding only its list
 * marker, dropped.
 */
export function withoutClaims(prose, claims) {
  let out = "";
  let cursor = 0;
  for (const claim of claims) {
    if (claim.start < cursor) continue; // overlapping spans: the cut before covers it
    const before = prose.slice(cursor, claim.start);
    const kept = before.replace(/[ \t]+$/, "");
    let next = claim.end;
    const spaces = /^[ \t]*/.exec(prose.slice(next))[0];
    out += kept;
    if (kept !== before || spaces) {
      next += spaces.length;
      const following = prose[next] ?? "";
      const lineStart = out === "" || out.endsWith("\n");
      if (!lineStart && following && following !== "\n" && !/[.,;:!?)]/.test(following)) out += " ";
    }
    cursor = next;
    const lineAt = out.lastIndexOf("\n") + 1;
    const lineEnd = prose.indexOf("\n", cursor);
    const rest = prose.slice(cursor, lineEnd < 0 ? prose.length : lineEnd);
    if (LIST_MARKER_ONLY_RE.test(out.slice(lineAt) + rest)) {
      out = out.slice(0, lineAt);
      cursor = lineEnd < 0 ? prose.length : lineEnd + 1;
    }
  }
  return out + prose.slice(cursor);
}

/**
 * The prose as the user chose to see it, as plain markdown for copying: "remove" cuts the
 * claims, "mark" puts `[unsupported]` where each claim's citation stood, "leave" changes nothing.
 */
export function proseAsChosen(record, prose, mode) {
  const claims = unsupportedClaims(record, prose);
  if (!claims.length || mode === "leave") return prose;
  if (mode === "remove") return withoutClaims(prose, claims);
  return insertAt(prose, claims.map((c) => c.at), () => ` ${COPY_MARK}`);
}
