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
