// A turn record shaped like TurnRecord.json, as the gateway's `done` event carries it.
export const RECORD = {
  turn_id: "t1", session_id: "s1", intent: "library", question: "What about twins?",
  text: "Mutation rates were estimated from twins [1]. Attention maps queries [2, 3]. Again twins [1].\n\n" +
    "# Cited Sources\n- <span class=\"zotero-source-link\" data-item-key=\"ITEMAAAA\">**Jonsson & Stefansson (2021)**. *Somatic rates*. Nature Genetics.</span>\n" +
    "- <span class=\"zotero-source-link\" data-item-key=\"ITEMBBBB\">**Vaswani et al. (2017)**. *Attention Is All You Need*.</span>\n\n" +
    "## Other Considered Sources\n<details class=\"considered-sources\">\n  <summary>1 additional source analyzed by search agent</summary>\n  <ul>\n" +
    "    <li><span class=\"zotero-source-link\" data-item-key=\"ITEMDDDD\"><strong>Doe (n.d.)</strong>.</span></li>\n  </ul>\n</details>",
  citations: [
    { index: 1, chunk_id: "c1", item_key: "ITEMAAAA", attachment_key: "ATTAAAAA", title: "Somatic rates", authors: "Jonsson & Stefansson",
      year: 2021, section: "Methods", publication: "Nature Genetics", quote: "Rates were estimated with $\\mu = 10^{-8}$ per site.", survives: true,
      occurrences: [
        { occurrence: 1, claim: "Mutation rates were estimated from twins.", probability: 0.91, verdict: "KEPT", compound: false },
        { occurrence: 2, claim: "A demoted claim.", probability: 0.2, verdict: "DEMOTED", compound: false },
        { occurrence: 3, claim: "Again twins.", probability: 0.65, verdict: "KEPT", compound: false },
      ] },
    { index: 2, chunk_id: "c2", item_key: "ITEMBBBB", title: "Attention Is All You Need", authors: "Vaswani et al.", year: 2017,
      section: "3.2 Attention", quote: "Attention maps a query.", survives: true,
      occurrences: [{ occurrence: 1, claim: "Attention maps queries.", probability: null, verdict: "FAIL_OPEN", compound: true }] },
    { index: 3, chunk_id: "c3", item_key: "ITEMBBBB", title: "Attention Is All You Need", authors: "Vaswani et al.", year: 2017,
      quote: "More attention.", survives: true,
      occurrences: [{ occurrence: 1, claim: "Attention maps queries.", probability: 0.45, verdict: "KEPT", compound: true }] },
  ],
  references: {
    cited: [
      { item_key: "ITEMAAAA", title: "Somatic rates", authors: "Jonsson & Stefansson", year: 2021, publication: "Nature Genetics" },
      { item_key: "ITEMBBBB", title: "Attention Is All You Need", authors: "Vaswani et al.", year: 2017 },
    ],
    considered: [{ item_key: "ITEMDDDD", title: "", authors: "Doe", year: null }],
  },
  verification: { enabled: true, provider: "fake", model: "m", threshold: 0.6, total: 5, kept: 3, demoted: 1, fail_open: 1, latency_ms: 12 },
};

// A turn of the offline answer writer: each claim is a verbatim quote of its passage (one of
// its answer units), `quoted` with the question-relevance score that chose it; the verifier
// still scored each. One quote was not verified (fail open), one was demoted, and one claim
// of the same turn is no quote (as a model writes), so both kinds render side by side.
export const QUOTED_RECORD = {
  turn_id: "t2", session_id: "s1", intent: "library", question: "How selective is 33RE for the N-domain?",
  text: "Here is what your library says (quoted from the most relevant passages, their own reference numbers removed):\n\n" +
    "- 33RE is a highly selective N-domain inhibitor of ACE [1].\n" +
    "- Table 2 (Inhibition constants): Ki, nM — 11.21 ± 0.74 [2].\n" +
    "- A quote that failed open [1].\n" +
    "- An <b>unsafe</b> quote.\n" +
    "- The inhibitor is selective [2].\n\n" +
    "# Cited Sources\n- **Cozier et al. (2018)**. *Crystal structures of sACE with 33RE*.",
  citations: [
    { index: 1, chunk_id: "q1", item_key: "ITEMQQQQ", library_id: "user", title: "Crystal structures of sACE with 33RE",
      authors: "Cozier et al.", year: 2018, section: "Abstract", quote: "33RE is a highly selective N-domain inhibitor of ACE. A quote that failed open.",
      survives: true,
      occurrences: [
        { occurrence: 1, claim: "33RE is a highly selective N-domain inhibitor of ACE.", probability: 0.81, verdict: "KEPT",
          compound: false, quoted: true, relevance: 0.93 },
        { occurrence: 2, claim: "A quote that failed open.", probability: null, verdict: "FAIL_OPEN", compound: false,
          quoted: true, relevance: 1.21 },
        { occurrence: 3, claim: "An <b>unsafe</b> quote.", probability: 0.3, verdict: "DEMOTED", compound: false,
          quoted: true, relevance: null },
      ] },
    { index: 2, chunk_id: "q2", item_key: "ITEMQQQQ", library_id: "user", title: "Crystal structures of sACE with 33RE",
      authors: "Cozier et al.", year: 2018, section: "Results", kind: "table",
      quote: "Table 2 (Inhibition constants)\n\n| | Ki, nM |\n|---|---|\n| 33RE | 11.21 ± 0.74 |", survives: true,
      occurrences: [
        { occurrence: 1, claim: "Table 2 (Inhibition constants): Ki, nM — 11.21 ± 0.74", probability: 0.62, verdict: "KEPT",
          compound: false, quoted: true, relevance: 0.71 },
        { occurrence: 2, claim: "The inhibitor is selective.", probability: 0.88, verdict: "KEPT", compound: false,
          quoted: false, relevance: null },
      ] },
  ],
  references: {
    cited: [{ item_key: "ITEMQQQQ", library_id: "user", title: "Crystal structures of sACE with 33RE", authors: "Cozier et al.", year: 2018 }],
    considered: [],
  },
  verification: { enabled: true, provider: "heuristic", model: "h", threshold: 0.6, total: 5, kept: 3, demoted: 1, fail_open: 1, latency_ms: 4 },
};

// RECORD as a gateway of TurnRecord version 2 sends it: the prose and the source sections
// apart, and `text` their concatenation (what clients before version 2 read).
const SOURCES_AT = RECORD.text.indexOf("# Cited Sources");
export const RECORD_V2 = {
  ...RECORD, schema_version: 2, prose: RECORD.text.slice(0, SOURCES_AT), sources: RECORD.text.slice(SOURCES_AT),
};

// A turn (TurnRecord version 4) with one claim whose only citation failed verification: the
// server pruned its token and lists it in `unsupported`, with offsets in `prose` as the
// gateway's resolution computed them (code points; tests/citations/test_unsupported.py).
const UNSUPPORTED_CLAIM = {
  start: 23, end: 50, at: 49, claim: "The rate is ninety percent.", probability: 0.42, occurrences: [{ index: 2, occurrence: 1 }],
};
export const UNSUPPORTED_RECORD = {
  ...RECORD, turn_id: "t4", schema_version: 4, prose: "Twins share rates [1]. The rate is ninety percent. Costs fell [1].",
  sources: "", text: "Twins share rates [1]. The rate is ninety percent. Costs fell [1].", unsupported: [UNSUPPORTED_CLAIM],
  citations: [
    RECORD.citations[0],
    { ...RECORD.citations[1], survives: false,
      occurrences: [{ occurrence: 1, claim: UNSUPPORTED_CLAIM.claim, probability: 0.42, verdict: "DEMOTED", compound: false }] },
  ],
  references: { cited: [RECORD.references.cited[0]], considered: [RECORD.references.cited[1], ...RECORD.references.considered] },
  verification: { ...RECORD.verification, total: 4, kept: 2, demoted: 2, fail_open: 0 },
};
