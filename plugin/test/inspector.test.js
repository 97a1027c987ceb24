import { test } from "node:test";
import assert from "node:assert/strict";
import {
  claimRows, countsLine, filterRows, formatProbability, inspectorTooltip, jointLine, nextSort, probabilityStats,
  resizeColumns, rowBadges, scoreText, sortRows, sourceLine, sourceOptions, statsLine, unprintedLine,
  verificationCounts,
} from "../content/core/inspector.js";
import { QUOTED_RECORD, RECORD } from "./fixtures.js";

test("one row per evaluated occurrence, numbered in answer order", () => {
  const rows = claimRows(RECORD);
  assert.equal(rows.length, 5);
  assert.deepEqual(rows.map((r) => [r.number, r.index, r.occurrence]), [[1, 1, 1], [2, 2, 1], [3, 3, 1], [4, 1, 3], [5, 1, 2]]);
  assert.deepEqual(rows.map((r) => r.verdictLabel), ["VERIFIED", "UNVERIFIED", "VERIFIED", "VERIFIED", "REJECTED"]);
  assert.equal(rows[0].source, "Jonsson & Stefansson (2021)");
});

test("sorting by probability puts unverified last when descending; ties keep claim order", () => {
  const rows = claimRows(RECORD);
  assert.deepEqual(sortRows(rows, "probability", "desc").map((r) => r.number), [1, 4, 3, 5, 2]);
  assert.deepEqual(sortRows(rows, "probability", "asc").map((r) => r.number), [2, 5, 3, 4, 1]);
  assert.deepEqual(nextSort({ column: "number", direction: "asc" }, "probability"), { column: "probability", direction: "desc" });
  assert.deepEqual(nextSort({ column: "claim", direction: "asc" }, "claim"), { column: "claim", direction: "desc" });
});

test("a quote's row shows the verifier's score beside the relevance that chose it, and a neutral QUOTED badge", () => {
  const rows = claimRows(QUOTED_RECORD);
  assert.deepEqual(rows.map((r) => [r.number, r.index, r.occurrence, r.quoted, r.relevance, r.probability]), [
    [1, 1, 1, true, 0.93, 0.81], [2, 2, 1, true, 0.71, 0.62], [3, 1, 2, true, 1.21, null], [4, 1, 3, true, null, 0.3],
    [5, 2, 2, false, null, 0.88]]);
  assert.deepEqual(rows.map(scoreText), [
    "verifier p = 0.810 · relevance 0.930", "verifier p = 0.620 · relevance 0.710", "verifier p = — · relevance 1.210",
    "verifier p = 0.300", "p = 0.880"]);
  assert.deepEqual(rows.map(rowBadges), [
    [{ cls: "quoted", text: "QUOTED" }],
    [{ cls: "quoted", text: "QUOTED" }],
    [{ cls: "quoted", text: "QUOTED" }, { cls: "unverified", text: "UNVERIFIED" }],
    [{ cls: "quoted", text: "QUOTED" }, { cls: "rejected", text: "REJECTED" }],
    [{ cls: "verified", text: "VERIFIED" }]]);
  // Sorting by the probability column sorts quotes and claims alike by the verifier's p.
  assert.deepEqual(sortRows(rows, "probability", "desc").map((r) => r.number), [5, 1, 2, 4, 3]);
  assert.deepEqual(sortRows(rows, "probability", "asc").map((r) => r.number), [3, 4, 2, 1, 5]);
  assert.equal(countsLine(verificationCounts(QUOTED_RECORD)),
    "5 claims evaluated: 3 verified (p ≥ 0.60), 1 rejected (p < 0.60), 1 unverified; 4 are quotes of their passage");
  assert.equal(countsLine({ total: 1, kept: 1, demoted: 0, failOpen: 0, quoted: 1, threshold: 0.6 }),
    "1 claim evaluated: 1 verified (p ≥ 0.60), 0 rejected (p < 0.60); 1 is a quote of its passage");
});

test("a turn without the quote fields (stored before them) shows rows as before", () => {
  const rows = claimRows(RECORD);
  assert.ok(rows.every((r) => r.quoted === false && r.relevance === null));
  assert.deepEqual(rows.map(scoreText), ["p = 0.910", "p = —", "p = 0.450", "p = 0.650", "p = 0.200"]);
  assert.deepEqual(rows.map((r) => rowBadges(r).map((b) => b.text)), [["VERIFIED"], ["UNVERIFIED"], ["VERIFIED"], ["VERIFIED"], ["REJECTED"]]);
});

test("an occurrence of a bracket scored as a whole shows the bracket's p; others and older turns show none", () => {
  const joint = { 1: 0.8234, 2: null };
  const record = {
    ...RECORD,
    citations: RECORD.citations.map((c) => ({
      ...c, occurrences: c.occurrences.map((o) => (c.index in joint && o.occurrence === 1 ? { ...o, joint_support: joint[c.index] } : o)),
    })),
  };
  const rows = claimRows(record);
  assert.deepEqual(rows.map((r) => [r.index, r.occurrence, jointLine(r)]), [
    [1, 1, "bracket as a whole: p = 0.82"], [2, 1, null], [3, 1, null], [1, 3, null], [1, 2, null]]);
  assert.ok(claimRows(RECORD).every((r) => r.jointSupport === null && jointLine(r) === null));
});

test("a rejected row names the numbers its passage does not print; none for a turn stored before them", () => {
  const record = {
    ...RECORD,
    citations: RECORD.citations.map((c) => ({
      ...c,
      occurrences: c.occurrences.map((o) => (o.verdict === "DEMOTED" ? { ...o, unprinted_numbers: ["783", "2.6"] } : o)),
    })),
  };
  const rows = claimRows(record);
  assert.deepEqual(rows.filter((r) => unprintedLine(r)).map((r) => [r.verdictLabel, unprintedLine(r)]),
    [["REJECTED", "the passage does not print 783, 2.6"]]);
  assert.ok(claimRows(RECORD).every((r) => unprintedLine(r) === null));
});

test("a row carries its passage's pages to the table and to Open in Reader; none when the citation has none", () => {
  const pages = { index: 1, label: "306", last_index: 2, last_label: "307", printed: true };
  const record = { ...RECORD, citations: RECORD.citations.map((c) => (c.index === 1 ? { ...c, pages } : c)) };
  const rows = claimRows(record);
  assert.deepEqual(rows.map((r) => [r.index, r.pages]), [[1, pages], [2, null], [3, null], [1, pages], [1, pages]]);
  assert.equal(sourceLine(rows[0]), "Jonsson & Stefansson (2021) • pp. 306–307");
  assert.equal(sourceLine(rows[1]), rows[1].source);
  assert.ok(claimRows(RECORD).every((r) => r.pages === null));
});

test("filter by source", () => {
  const rows = claimRows(RECORD);
  assert.deepEqual(sourceOptions(rows).map((o) => [o.sourceId, o.count]), [["user/ITEMAAAA", 3], ["user/ITEMBBBB", 2]]);
  assert.equal(filterRows(rows, "user/ITEMBBBB").length, 2);
  assert.equal(filterRows(rows, "").length, 5);
});

test("rows carry their source's library; the same key in two libraries is two sources", () => {
  const record = structuredClone(RECORD);
  record.citations[2].library_id = "group-4711"; // index 3: same key as index 2, in a group library
  const rows = claimRows(record);
  assert.deepEqual(rows.map((r) => [r.index, r.libraryId]), [[1, "user"], [2, "user"], [3, "group-4711"], [1, "user"], [1, "user"]],
    "a citation without library_id (an older turn) is in My Library");
  assert.deepEqual(sourceOptions(rows).map((o) => [o.sourceId, o.itemKey, o.libraryId, o.count]),
    [["user/ITEMAAAA", "ITEMAAAA", "user", 3], ["user/ITEMBBBB", "ITEMBBBB", "user", 1], ["group-4711/ITEMBBBB", "ITEMBBBB", "group-4711", 1]]);
  assert.deepEqual(filterRows(rows, "group-4711/ITEMBBBB").map((r) => r.index), [3]);
});

test("message info: mean ± sample sd to 3 decimals and the counts line", () => {
  const stats = probabilityStats(RECORD);
  assert.equal(stats.n, 4);
  assert.equal(statsLine(stats), "Mean p: 0.553 ± 0.301 (std)");
  assert.equal(statsLine(null), "Mean p: no verified claims");
  assert.equal(countsLine(verificationCounts(RECORD)), "5 claims evaluated: 3 verified (p ≥ 0.60), 1 rejected (p < 0.60), 1 unverified");
  assert.equal(countsLine({ total: 1, kept: 1, demoted: 0, failOpen: 0, threshold: 0.7 }), "1 claim evaluated: 1 verified (p ≥ 0.70), 0 rejected (p < 0.70)");
  assert.equal(inspectorTooltip(verificationCounts(RECORD)), "Inspect claim verification table (3 verified, 1 rejected of 5 total)");
  assert.equal(formatProbability(0.8524), "0.852");
  assert.equal(formatProbability(null), "—");
});

test("counts fall back to the occurrences when the summary is missing", () => {
  assert.deepEqual(verificationCounts({ ...RECORD, verification: null }), { total: 5, kept: 3, demoted: 1, failOpen: 1, quoted: 0, threshold: 0.6 });
});

test("column resize: the right neighbour compensates, both stay above their floors", () => {
  assert.deepEqual(resizeColumns([50, 200, 200, 300, 150], 1, 30), [50, 230, 170, 300, 150]);
  assert.deepEqual(resizeColumns([50, 200, 200, 300, 150], 1, 500), [50, 270, 130, 300, 150]);
  assert.deepEqual(resizeColumns([50, 200, 200, 300, 150], 1, -500), [50, 140, 260, 300, 150]);
  assert.deepEqual(resizeColumns([50, 200, 200, 300, 150], 4, -100), [50, 200, 200, 300, 120]);
});
