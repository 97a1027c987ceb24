// The claim verification inspector's data: one row per evaluated citation occurrence,
// sorting, filtering by source, the message-info statistics and the counts line.

import { isQuoted, pagesText, pillLabel, quoteScores } from "./format.js";

export const VERDICT_LABEL = { KEPT: "VERIFIED", DEMOTED: "REJECTED", FAIL_OPEN: "UNVERIFIED" };

/** Per-column minimum widths in px (number, claim, source, evidence, probability). */
export const COLUMN_MIN_WIDTHS = [50, 140, 130, 160, 120];
export const COLUMNS = ["number", "claim", "source", "evidence", "probability"];

function claimKey(text) {
  return String(text || "").replace(/\s+/g, " ").trim().toLowerCase();
}

/**
 * Every evaluated occurrence of a turn, numbered #1..#N in answer order: by where the claim
 * first appears in the answer (claims are cleaned of markdown, so a claim not found is
 * placed after those found), then by citation index and occurrence.
 */
export function claimRows(record) {
  const answer = claimKey(record.text || "");
  const rows = [];
  for (const citation of record.citations || []) {
    for (const occ of citation.occurrences || []) {
      const probe = claimKey(occ.claim).replace(/[.!?]$/, "").slice(0, 60);
      const at = probe ? answer.indexOf(probe) : -1;
      rows.push({
        index: citation.index,
        occurrence: occ.occurrence,
        claim: occ.claim,
        probability: occ.probability ?? null,
        verdict: occ.verdict,
        verdictLabel: VERDICT_LABEL[occ.verdict] || occ.verdict,
        compound: Boolean(occ.compound),
        // The bracket as a whole (TurnRecord version 6): its passages together against the claim.
        jointSupport: occ.joint_support ?? null,
        // Numbers the claim states that this passage does not print (TurnRecord version 7).
        unprintedNumbers: Array.isArray(occ.unprinted_numbers) ? occ.unprinted_numbers : [],
        quoted: isQuoted(occ),
        relevance: occ.relevance ?? null,
        itemKey: citation.item_key,
        libraryId: citation.library_id || "user",
        // Keys are unique only within a library: a source is its library and key.
        sourceId: `${citation.library_id || "user"}/${citation.item_key}`,
        attachmentKey: citation.attachment_key || null,
        source: pillLabel(citation),
        title: citation.title || "Untitled source",
        section: citation.section || "",
        pages: citation.pages || null,
        evidence: citation.quote || "",
        spans: occ.spans || [], // where `evidence` supports the claim (offsets into it)
        order: at < 0 ? Number.MAX_SAFE_INTEGER : at,
      });
    }
  }
  rows.sort((a, b) => a.order - b.order || a.index - b.index || a.occurrence - b.occurrence);
  rows.forEach((row, i) => {
    row.number = i + 1;
  });
  return rows;
}

const SORT_VALUE = {
  number: (r) => r.number,
  claim: (r) => r.claim.toLowerCase(),
  source: (r) => `${r.source.toLowerCase()}\u0000${r.section.toLowerCase()}`,
  evidence: (r) => r.evidence.toLowerCase(),
  probability: (r) => (r.probability === null ? -1 : r.probability),
  verdict: (r) => r.verdictLabel,
};

/** A sorted copy; unverified probabilities sort below every number; ties keep claim order. */
export function sortRows(rows, column, direction = "asc") {
  const value = SORT_VALUE[column] || SORT_VALUE.number;
  const sign = direction === "desc" ? -1 : 1;
  return [...rows].sort((a, b) => {
    const x = value(a);
    const y = value(b);
    if (x < y) return -sign;
    if (x > y) return sign;
    return a.number - b.number;
  });
}

/** The next sort state when a header is clicked. */
export function nextSort(state, column) {
  if (state.column === column) return { column, direction: state.direction === "asc" ? "desc" : "asc" };
  return { column, direction: column === "probability" ? "desc" : "asc" };
}

/** The sources offered by the filter: [{sourceId, itemKey, libraryId, label, count}] in first-row order. */
export function sourceOptions(rows) {
  const seen = new Map();
  for (const row of rows) {
    const entry = seen.get(row.sourceId) ||
      { sourceId: row.sourceId, itemKey: row.itemKey, libraryId: row.libraryId, label: row.source, title: row.title, count: 0 };
    entry.count += 1;
    seen.set(row.sourceId, entry);
  }
  return [...seen.values()];
}

/** The rows of one source (its `sourceId`), or all of them. */
export function filterRows(rows, sourceId) {
  return sourceId ? rows.filter((r) => r.sourceId === sourceId) : rows;
}

/** `0.852` */
export function formatProbability(p) {
  return p === null || p === undefined ? "—" : p.toFixed(3);
}

/** The source cell's line under the title: `Jonsson & Stefansson (2021) • p. 306`. */
export function sourceLine(row) {
  return [row.source, pagesText(row.pages)].filter(Boolean).join(" • ");
}

/** The probability cell's score: `p = 0.852`, or a quote's `verifier p = 0.810 · relevance 0.930`. */
export function scoreText(row) {
  return row.quoted ? quoteScores(row) : `p = ${formatProbability(row.probability)}`;
}

/**
 * The probability cell's line for an occurrence of a bracket citing several passages, scored as
 * a whole: `bracket as a whole: p = 0.82`; null for one passage, an unscored check or a turn
 * stored before joint checks.
 */
export function jointLine(row) {
  return row.jointSupport === null || row.jointSupport === undefined ? null : `bracket as a whole: p = ${row.jointSupport.toFixed(2)}`;
}

/**
 * The probability cell's line for an occurrence whose claim states numbers its passage does not
 * print (the verifier's number rule): `the passage does not print 783`; null when there are none.
 */
export function unprintedLine(row) {
  return row.unprintedNumbers?.length ? `the passage does not print ${row.unprintedNumbers.join(", ")}` : null;
}

/**
 * The probability cell's badges, [{cls, text}]: the verdict of a checked claim; a quote's
 * neutral QUOTED badge instead of VERIFIED (a quote supports itself), with its verdict only
 * when that says more (rejected: removed from the answer; unverified: not checked).
 */
export function rowBadges(row) {
  const verdict = { cls: row.verdictLabel.toLowerCase(), text: row.verdictLabel };
  if (!row.quoted) return [verdict];
  return row.verdict === "KEPT" ? [{ cls: "quoted", text: "QUOTED" }] : [{ cls: "quoted", text: "QUOTED" }, verdict];
}

/** Mean and sample standard deviation of the verified probabilities (null when none). */
export function probabilityStats(record) {
  const ps = [];
  for (const c of record.citations || []) {
    for (const o of c.occurrences || []) if (o.probability !== null && o.probability !== undefined) ps.push(o.probability);
  }
  if (!ps.length) return null;
  const mean = ps.reduce((a, b) => a + b, 0) / ps.length;
  const sd = ps.length > 1 ? Math.sqrt(ps.reduce((a, p) => a + (p - mean) ** 2, 0) / (ps.length - 1)) : 0;
  return { n: ps.length, mean, sd };
}

/** `Mean p: 0.852 ± 0.041 (std)` */
export function statsLine(stats) {
  if (!stats) return "Mean p: no verified claims";
  return `Mean p: ${stats.mean.toFixed(3)} ± ${stats.sd.toFixed(3)} (std)`;
}

/**
 * Counts from the record's verification summary, else from the occurrences themselves;
 * `quoted` (occurrences that are verbatim quotes of their passage) always from the occurrences.
 */
export function verificationCounts(record) {
  const v = record.verification;
  const occurrences = (record.citations || []).flatMap((c) => c.occurrences || []);
  const quoted = occurrences.filter(isQuoted).length;
  if (v && (v.total || v.kept || v.demoted || v.fail_open)) {
    return { total: v.total, kept: v.kept, demoted: v.demoted, failOpen: v.fail_open, quoted, threshold: v.threshold ?? 0.6 };
  }
  const counts = { total: 0, kept: 0, demoted: 0, failOpen: 0, quoted, threshold: v?.threshold ?? 0.6 };
  for (const c of record.citations || []) {
    for (const o of c.occurrences || []) {
      counts.total += 1;
      if (o.verdict === "KEPT") counts.kept += 1;
      else if (o.verdict === "DEMOTED") counts.demoted += 1;
      else counts.failOpen += 1;
    }
  }
  return counts;
}

/** `5 claims evaluated: 4 verified (p ≥ 0.60), 1 rejected (p < 0.60), 1 unverified; 3 are quotes of their passage` */
export function countsLine(counts) {
  const t = counts.threshold.toFixed(2);
  const noun = counts.total === 1 ? "claim" : "claims";
  let line = `${counts.total} ${noun} evaluated: ${counts.kept} verified (p ≥ ${t}), ${counts.demoted} rejected (p < ${t})`;
  if (counts.failOpen > 0) line += `, ${counts.failOpen} unverified`;
  if (counts.quoted > 0) line += counts.quoted === 1 ? "; 1 is a quote of its passage" : `; ${counts.quoted} are quotes of their passage`;
  return line;
}

/**
 * The answer's citation quality (TurnRecord `quality`, version 4; null before) in one line:
 * `Citation recall 75% (3 of 4 claim sentences supported) · precision 80% (4 of 5 verified
 * citations support their claim) · 1 uncited claim sentence`. The formulas are in docs/api.md.
 */
export function qualityLine(quality) {
  if (!quality) return null;
  const pct = (x) => (x === null || x === undefined ? "—" : `${Math.round(x * 100)}%`);
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  const judged = quality.claims - quality.unverified;
  const parts = [
    `Citation recall ${pct(quality.recall)} (${quality.supported} of ${plural(judged, "claim sentence", "claim sentences")} supported)`,
    `precision ${pct(quality.precision)} (${quality.supporting} of ${plural(quality.citations, "verified citation", "verified citations")} support their claim)`,
    plural(quality.uncited, "uncited claim sentence", "uncited claim sentences"),
  ];
  if (quality.unverified) parts.push(`${plural(quality.unverified, "claim sentence", "claim sentences")} not verified`);
  return parts.join(" · ");
}

/** The inspector button's hover text. */
export function inspectorTooltip(counts) {
  return `Inspect claim verification table (${counts.kept} verified, ${counts.demoted} rejected of ${counts.total} total)`;
}

/**
 * Resizing a column under table-layout: fixed: the neighbour to the right gives or takes the
 * difference so the table width is unchanged; both stay above their minimum widths.
 */
export function resizeColumns(widths, column, delta, minimums = COLUMN_MIN_WIDTHS) {
  const next = [...widths];
  const right = column + 1;
  if (right >= widths.length) {
    next[column] = Math.max(minimums[column] ?? 40, widths[column] + delta);
    return next;
  }
  const minL = minimums[column] ?? 40;
  const minR = minimums[right] ?? 40;
  const d = Math.max(minL - widths[column], Math.min(delta, widths[right] - minR));
  next[column] = widths[column] + d;
  next[right] = widths[right] - d;
  return next;
}

/** Initial column widths for a table width: proportional shares above the minimums. */
export function defaultColumnWidths(total, minimums = COLUMN_MIN_WIDTHS) {
  const shares = [0.06, 0.27, 0.18, 0.35, 0.14];
  const widths = shares.map((s, i) => Math.max(minimums[i], Math.floor(total * s)));
  return widths;
}
