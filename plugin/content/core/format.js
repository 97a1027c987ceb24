// Small pure formatting helpers shared by the sidebar, the popover and the inspector.

export function escapeHtml(s) {
  return String(s ?? "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** Escaped for an attribute; newlines kept as &#10; so `title` tooltips stay multiline. */
export function escapeAttr(s) {
  return escapeHtml(s).replace(/\r?\n/g, "&#10;");
}

export const HIGH_SUPPORT = 0.8;
export const MODERATE_SUPPORT = 0.5;

/** "high" (>= 0.80), "moderate" (>= 0.50), "low", or "unverified" when p is null. */
export function supportLevel(p) {
  if (p === null || p === undefined || Number.isNaN(p)) return "unverified";
  if (p >= HIGH_SUPPORT) return "high";
  if (p >= MODERATE_SUPPORT) return "moderate";
  return "low";
}

/** The popover's support badge: {level, text}. */
export function supportBadge(p) {
  const level = supportLevel(p);
  if (level === "unverified") return { level, text: "Support not verified" };
  const icon = { high: "✓ ", moderate: "ⓘ ", low: "" }[level];
  return { level, text: `${icon}Support Probability: ${p.toFixed(2)}` };
}

/**
 * The claim is a verbatim quote of the cited passage (one of its answer units, chosen by its
 * relevance to the question), not a claim a model wrote about it: the passage supports it
 * trivially, so its support probability checks nothing. Turns without the field are not.
 */
export function isQuoted(occurrence) {
  return occurrence?.quoted === true;
}

export const QUOTED_TEXT = "Quoted from this passage";

/** The popover's badge for one occurrence: a neutral quote badge, else its support badge. */
export function occurrenceBadge(occurrence) {
  if (isQuoted(occurrence)) return { level: "quote", text: QUOTED_TEXT };
  return supportBadge(occurrence ? occurrence.probability : null);
}

/** `verifier p = 0.810 · relevance 0.930`: a quote's two scores (either may be missing). */
export function quoteScores(occurrence) {
  const score = (x) => (x === null || x === undefined ? "—" : x.toFixed(3));
  const parts = [`verifier p = ${score(occurrence.probability)}`];
  if (occurrence.relevance !== null && occurrence.relevance !== undefined) parts.push(`relevance ${score(occurrence.relevance)}`);
  return parts.join(" · ");
}

/** `Smith et al. (2020)`: a pill's visible label (never an item key). */
export function pillLabel(citation) {
  const head = citation.authors || (citation.title || "").trim() || "Untitled source";
  return `${head} (${citation.year ?? "n.d."})`;
}

/**
 * Where a cited passage sits, as a reader cites it: "p. 1236", or "pp. 1236–1237" when it runs
 * onto later pages; "" without pages (a note, a web page, a turn stored before them). The label
 * is the number printed on the page (`pages.printed` false: its place in the file).
 */
export function pagesText(pages) {
  if (!pages || !pages.label) return "";
  const spans = pages.last_label && pages.last_index !== null && pages.last_index !== undefined && pages.last_index !== pages.index;
  return spans ? `pp. ${pages.label}–${pages.last_label}` : `p. ${pages.label}`;
}

/** The pill tooltip: title, section, pages, this occurrence's support probability (or that it
 * is a quote) and the start of the sentence that supports it. */
export function pillTooltip(citation, occurrence) {
  const lines = [`Title: ${citation.title || "Untitled source"}`];
  if (citation.section) lines.push(`Section: ${citation.section}`);
  const pages = pagesText(citation.pages);
  if (pages) lines.push(`Page: ${pages}`);
  const p = occurrence ? occurrence.probability : null;
  if (isQuoted(occurrence)) lines.push(QUOTED_TEXT);
  else lines.push(p === null || p === undefined ? "Support probability: not verified" : `Support probability: ${p.toFixed(2)}`);
  const span = (occurrence?.spans || [])[0];
  if (span && citation.quote) lines.push(`Supported by: “${excerpt(citation.quote.slice(span.start, span.end), 100)}”`);
  return lines.join("\n");
}

/** `text` on one line, cut at a word to at most `max` characters with "…". */
export function excerpt(text, max) {
  const line = String(text || "").replace(/\s+/g, " ").trim();
  if (line.length <= max) return line;
  const cut = line.slice(0, max - 1);
  const space = cut.lastIndexOf(" ");
  return (space > max / 2 ? cut.slice(0, space) : cut) + "…";
}

/** `Authors (Year) • Venue` for the popover header. */
export function bylineOf(source) {
  const parts = [];
  const who = source.authors || "";
  const year = source.year ?? "n.d.";
  parts.push(who ? `${who} (${year})` : String(year));
  const venue = source.publication || source.venue;
  if (venue) parts.push(venue);
  return parts.join(" • ");
}

/** Claim text for display: quotation marks around a math formula are dropped. */
export function stripMathQuotes(text) {
  return String(text || "").replace(/["“”'‘’](\${1,2}[^$\n]+?\${1,2})["“”'‘’]/g, "$1");
}

/** A throttle that runs `fn` at most once per `ms`, always including the last call. */
export function throttle(fn, ms, { now = () => Date.now(), schedule = setTimeout, cancel = clearTimeout } = {}) {
  let last = -Infinity;
  let timer = null;
  let pending = false;
  const run = () => {
    timer = null;
    pending = false;
    last = now();
    fn();
  };
  const throttled = () => {
    pending = true;
    if (timer !== null) return;
    const wait = Math.max(0, last + ms - now());
    timer = schedule(run, wait);
  };
  throttled.flush = () => {
    if (timer !== null) cancel(timer);
    if (pending) run();
    timer = null;
  };
  throttled.cancel = () => {
    if (timer !== null) cancel(timer);
    timer = null;
    pending = false;
  };
  return throttled;
}
