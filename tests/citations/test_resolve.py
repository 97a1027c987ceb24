"""Verified resolution (seed 3, 4.2, 4.4): per-occurrence verdicts and the two tiers."""

from __future__ import annotations

import re

import pytest

from zocrates_citations import Resolution, extract_claim_occurrences, resolve_citations_and_references
from zocrates_contracts import Pages


def tiers(resolution: Resolution) -> tuple[list[str], list[str]]:
    return resolution.cited_item_keys, resolution.considered_item_keys


# --- per-occurrence verdicts -----------------------------------------------------------------


def test_each_occurrence_is_judged_alone_never_by_a_max_over_occurrences(make_chunks):
    text = "Sentence A says the rate is five percent [1]. Sentence B says it is ninety percent [1]."
    resolved = resolve_citations_and_references(text, make_chunks("ab"), support_probabilities={1: [0.98, 0.12]})
    assert resolved.prose == ("Sentence A says the rate is five percent [1]. Sentence B says it is ninety percent.")
    [citation] = resolved.citations
    assert [(o.occurrence, o.probability, o.verdict) for o in citation.occurrences] == [
        (1, 0.98, "KEPT"),
        (2, 0.12, "DEMOTED"),
    ]
    assert citation.survives


def test_partial_compound_pruning_keeps_the_surviving_index(make_chunks):
    resolved = resolve_citations_and_references(
        "Both studies agree on the rate [1, 2].",
        make_chunks("ab"),
        support_probabilities={1: [0.9], 2: [0.3]},
    )
    assert resolved.prose == "Both studies agree on the rate [1]."
    assert [c.survives for c in resolved.citations] == [True, False]
    assert all(o.compound for c in resolved.citations for o in c.occurrences)


def test_compound_bracket_where_every_index_fails_disappears(make_chunks):
    resolved = resolve_citations_and_references(
        "Both studies agree on the rate [1, 2].",
        make_chunks("ab"),
        support_probabilities={1: [0.1], 2: [0.2]},
    )
    assert resolved.prose == "Both studies agree on the rate."


def test_probability_equal_to_the_threshold_is_kept(make_chunks):
    resolved = resolve_citations_and_references(
        "Claim [1].", make_chunks("a"), support_probabilities={1: [0.6]}, verification_threshold=0.6
    )
    assert resolved.citations[0].occurrences[0].verdict == "KEPT"


def test_threshold_is_respected(make_chunks):
    resolved = resolve_citations_and_references(
        "Claim [1].", make_chunks("a"), support_probabilities={1: [0.7]}, verification_threshold=0.8
    )
    assert resolved.prose == "Claim."


def test_none_probability_fails_open_and_survives(make_chunks):
    resolved = resolve_citations_and_references(
        "Claim one [1]. Claim two [1].", make_chunks("a"), support_probabilities={1: [None, 0.1]}
    )
    assert resolved.prose == "Claim one [1]. Claim two."
    assert [o.verdict for o in resolved.citations[0].occurrences] == ["FAIL_OPEN", "DEMOTED"]


def test_missing_probabilities_fail_open(make_chunks):
    resolved = resolve_citations_and_references(
        "Claim one [1]. Claim two [1]. Claim three [2].",
        make_chunks("ab"),
        support_probabilities={1: [0.9]},
    )
    assert resolved.prose == "Claim one [1]. Claim two [1]. Claim three [2]."
    verdicts = [o.verdict for c in resolved.citations for o in c.occurrences]
    assert verdicts == ["KEPT", "FAIL_OPEN", "FAIL_OPEN"]


def test_without_verification_every_occurrence_fails_open(make_chunks):
    resolved = resolve_citations_and_references("Claim [1, 2].", make_chunks("ab"))
    assert resolved.counts.model_dump() == {"total": 2, "kept": 0, "demoted": 0, "fail_open": 2}


def test_counts_fill_a_verification_summary(make_chunks):
    from zocrates_contracts import VerificationSummary

    resolved = resolve_citations_and_references(
        "A [1]. B [1, 2]. C [2].", make_chunks("ab"), support_probabilities={1: [0.9, 0.1], 2: [None]}
    )
    summary = VerificationSummary(provider="offline", **resolved.counts.model_dump())
    assert (summary.total, summary.kept, summary.demoted, summary.fail_open) == (4, 1, 1, 2)


def test_probability_keys_may_arrive_as_strings_after_json(make_chunks):
    resolved = resolve_citations_and_references("Claim [1].", make_chunks("a"), support_probabilities={"1": [0.1]})
    assert resolved.prose == "Claim."


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_probability_outside_the_unit_interval_is_rejected(make_chunks, bad):
    with pytest.raises(ValueError, match="within \\[0, 1\\]"):
        resolve_citations_and_references("Claim [1].", make_chunks("a"), support_probabilities={1: [bad]})


def test_occurrence_numbering_matches_claim_extraction(make_chunks):
    text = "Alpha beta gamma rates [2]. Delta rates [1, 2]. Epsilon rates [2]."
    resolved = resolve_citations_and_references(text, make_chunks("ab"))
    extracted = {(o.chunk_index, o.occurrence): o.claim for o in extract_claim_occurrences(text, 2)}
    recorded = {(c.index, o.occurrence): o.claim for c in resolved.citations for o in c.occurrences}
    assert recorded == extracted


# --- citation metadata -----------------------------------------------------------------------


def test_citations_carry_chunk_and_item_metadata_and_every_occurrence(make_chunk):
    chunks = [make_chunk(1, "KEYAAAA1", authors=["Watson", "Crick"], publication="Nature")]
    resolved = resolve_citations_and_references(
        "DNA is a double helix of two chains [1].", chunks, support_probabilities={1: [0.95]}
    )
    [citation] = resolved.citations
    assert citation.index == 1 and citation.chunk_id == "chunk-1"
    assert citation.item_key == "KEYAAAA1" and citation.attachment_key == "ATT00001"
    assert citation.authors == "Watson & Crick" and citation.year == 2001
    assert citation.section == "Results" and citation.publication == "Nature"
    assert citation.occurrences[0].claim == "DNA is a double helix of two chains."
    assert resolved.cited_chunk_ids == ["chunk-1"]
    assert citation.pages is None  # a chunk without pages (a note) cites none


def test_a_citation_carries_the_printed_pages_of_its_passage(make_chunk):
    pages = Pages(index=2, label="737", last_index=3, last_label="738")
    chunk = make_chunk(1, "KEYAAAA1").model_copy(update={"pages": pages})
    resolved = resolve_citations_and_references("DNA is a double helix [1].", [chunk], support_probabilities={1: [0.9]})
    assert resolved.citations[0].pages == pages


def test_citations_are_listed_by_index_and_include_demoted_chunks(make_chunks):
    resolved = resolve_citations_and_references("B [2]. A [1].", make_chunks("ab"), support_probabilities={2: [0.1]})
    assert [(c.index, c.survives) for c in resolved.citations] == [(1, True), (2, False)]
    assert resolved.cited_chunk_ids == ["chunk-1"]


def test_extractive_quote_preserves_full_supporting_text(make_chunk):
    passage = "| a | b |\n|---|---|\n| 1 | 2 |\n\n" + "A complete proof sentence. " * 400
    resolved = resolve_citations_and_references("Claim [1].", [make_chunk(1, text=passage)])
    assert resolved.citations[0].quote == passage


def test_quote_is_bounded_only_when_max_quote_chars_is_set(make_chunk):
    passage = "word " * 100
    resolved = resolve_citations_and_references("Claim [1].", [make_chunk(1, text=passage)], max_quote_chars=50)
    quote = resolved.citations[0].quote
    assert len(quote) <= 50 and quote.endswith("…") and passage.startswith(quote[:-1])


def test_invalid_options_are_rejected(make_chunks):
    with pytest.raises(ValueError, match="verification_threshold"):
        resolve_citations_and_references("x", make_chunks("a"), verification_threshold=1.5)
    with pytest.raises(ValueError, match="max_quote_chars"):
        resolve_citations_and_references("x", make_chunks("a"), max_quote_chars=0)


# --- two tiers -------------------------------------------------------------------------------


def test_two_tier_partitioning_100_percent_recall(make_chunks):
    chunks = make_chunks(["K1", "K2", "K1", "K3", "K4", "K2"])
    resolved = resolve_citations_and_references(
        "A [4]. B [2]. C [5].", chunks, support_probabilities={4: [0.9], 2: [0.1], 5: [0.7]}
    )
    cited, considered = tiers(resolved)
    universe = {c.item_key for c in chunks}
    assert set(cited) | set(considered) == universe
    assert not set(cited) & set(considered)
    assert len(cited) == len(set(cited)) and len(considered) == len(set(considered))
    assert cited == ["K3", "K4"]  # in order of first surviving citation
    assert considered == ["K1", "K2"]  # in rank order


def test_chunks_of_one_item_count_once(make_chunks):
    resolved = resolve_citations_and_references("A [1]. B [2].", make_chunks(["K1", "K1"]))
    assert tiers(resolved) == (["K1"], [])
    assert len(resolved.references.cited) == 1


def test_an_item_is_cited_when_any_of_its_occurrences_survives_anywhere(make_chunks):
    resolved = resolve_citations_and_references(
        "A [1]. B [2]. C [1].",
        make_chunks(["K1", "K1", "K2"]),
        support_probabilities={1: [0.1, 0.2], 2: [0.9]},
    )
    assert tiers(resolved) == (["K1"], ["K2"])


def test_an_item_whose_occurrences_all_fail_is_only_considered(make_chunks):
    resolved = resolve_citations_and_references(
        "A [1]. B [2].", make_chunks(["K1", "K2"]), support_probabilities={1: [0.1], 2: [0.9]}
    )
    assert tiers(resolved) == (["K2"], ["K1"])


def test_zero_citations_fallback_cites_every_retrieved_item(make_chunks):
    resolved = resolve_citations_and_references("No citations at all.", make_chunks(["K1", "K2", "K1"]))
    assert tiers(resolved) == (["K1", "K2"], [])
    assert resolved.zero_citation_fallback and resolved.citations == []
    assert resolved.cited_chunk_ids == []


def test_zero_citations_fallback_fires_when_only_out_of_range_tokens_were_written(make_chunks):
    resolved = resolve_citations_and_references("Claim [99].", make_chunks(["K1", "K2"]))
    assert resolved.prose == "Claim." and tiers(resolved) == (["K1", "K2"], [])


def test_tokens_inside_code_do_not_prevent_the_fallback(make_chunks):
    resolved = resolve_citations_and_references("Use `arr[1]`.", make_chunks(["K1"]))
    assert resolved.zero_citation_fallback and tiers(resolved) == (["K1"], [])


def test_empty_cited_tier_when_every_emitted_citation_fails(make_chunks):
    resolved = resolve_citations_and_references(
        "A [1]. B [2, 3].",
        make_chunks(["K1", "K2", "K3"]),
        support_probabilities={1: [0.1], 2: [0.2], 3: [0.3]},
    )
    assert tiers(resolved) == ([], ["K1", "K2", "K3"])
    assert not resolved.zero_citation_fallback
    assert resolved.prose == "A. B."
    assert "# Cited Sources" not in resolved.text and "## Other Considered Sources" in resolved.text


def test_disabled_citations_remove_every_token_and_cite_every_item(make_chunks):
    resolved = resolve_citations_and_references(
        "A [1]. B [2] `x[1]`.", make_chunks(["K1", "K2"]), citations_enabled=False
    )
    assert resolved.prose == "A. B `x[1]`."
    assert resolved.citations == [] and tiers(resolved) == (["K1", "K2"], [])


# --- source sections -------------------------------------------------------------------------


def test_source_sections_follow_the_seed_markup(make_chunk):
    chunks = [
        make_chunk(
            1,
            "99R6SJ7T",
            authors=["Jonsson", "Stefansson"],
            year=2020,
            title="Somatic mutation rates in monozygotic twins",
            publication="Nature Genetics",
        ),
        make_chunk(2, "VDKHGW8P", authors=["Smith"], year=2022, title="Deep RAG Systems"),
    ]
    resolved = resolve_citations_and_references("Rates were estimated [1].", chunks)
    assert resolved.text == (
        "Rates were estimated [1].\n\n"
        "# Cited Sources\n"
        '- <span class="zotero-source-link" data-item-key="99R6SJ7T">**Jonsson &amp; Stefansson '
        "(2020)**. *Somatic mutation rates in monozygotic twins*. Nature Genetics.</span>\n\n"
        "## Other Considered Sources\n"
        '<details class="considered-sources">\n'
        "  <summary>1 additional source analyzed by search agent</summary>\n"
        "  <ul>\n"
        '    <li><span class="zotero-source-link" data-item-key="VDKHGW8P"><strong>Smith (2022)'
        "</strong>. <em>Deep RAG Systems</em>.</span></li>\n"
        "  </ul>\n"
        "</details>"
    )


def test_item_keys_appear_only_in_data_attributes(make_chunks):
    resolved = resolve_citations_and_references("A [1].", make_chunks(["HCZLU22L", "VDKHGW8P"]))
    visible = re.sub(r"<[^>]+>", "", resolved.text)
    assert "HCZLU22L" not in visible and "VDKHGW8P" not in visible
    assert 'data-item-key="HCZLU22L"' in resolved.text


def test_titles_are_escaped_in_source_sections(make_chunk):
    chunks = [make_chunk(1, title="C*-algebras <b>& [notes]</b>"), make_chunk(2, title="x < y")]
    resolved = resolve_citations_and_references("A [1].", chunks)
    assert r"*C\*-algebras &lt;b&gt;&amp; \[notes\]&lt;/b&gt;*." in resolved.text
    assert "<em>x &lt; y</em>." in resolved.text


def test_missing_authors_and_year_fall_back_to_title_and_nd(make_chunk):
    chunks = [make_chunk(1, authors=[], year=None, title="An Anonymous Report")]
    resolved = resolve_citations_and_references("A [1].", chunks)
    assert "**An Anonymous Report (n.d.)**.</span>" in resolved.text


def test_references_disabled_renders_no_sections(make_chunks):
    resolved = resolve_citations_and_references("A [1].", make_chunks("ab"), references_enabled=False)
    assert resolved.text == "A [1]." and resolved.references.cited == []
    assert tiers(resolved) == (["a"], ["b"])


def test_considered_disclosure_off_hides_the_considered_tier_but_keeps_its_keys(make_chunks):
    resolved = resolve_citations_and_references("A [1].", make_chunks("ab"), considered_disclosure=False)
    assert "Other Considered Sources" not in resolved.text
    assert resolved.references.considered == [] and resolved.considered_item_keys == ["b"]


def test_summary_counts_several_considered_sources(make_chunks):
    resolved = resolve_citations_and_references("A [1].", make_chunks("abc"))
    assert "<summary>2 additional sources analyzed by search agent</summary>" in resolved.text


def test_no_chunks_no_sections():
    resolved = resolve_citations_and_references("Just prose.", [])
    assert resolved.text == "Just prose." and tiers(resolved) == ([], [])


# --- idempotency -----------------------------------------------------------------------------


def test_resolving_the_resolved_prose_gives_the_same_tokens_and_tiers(make_chunks):
    chunks = make_chunks(["K1", "K2", "K1", "K3"])
    first = resolve_citations_and_references(
        "A [E1]. B 【2;4】. C [3, 99]. D [2]. `x[1]`",
        chunks,
        support_probabilities={1: [0.9], 2: [0.1, 0.8], 4: [0.2], 3: [None]},
    )
    second = resolve_citations_and_references(first.prose, chunks)
    assert second.prose == first.prose
    assert tiers(second) == tiers(first)
    assert second.text == first.text


# --- purity and parity -----------------------------------------------------------------------


def test_stored_probabilities_give_the_same_resolution_after_a_json_round_trip(make_chunks):
    """Dual call-site parity: the turn's stored probabilities resolve identically later."""
    import json

    chunks = make_chunks(["K1", "K2", "K1"])
    text = "A [1]. B [2, 3]. C [1]."
    probabilities = {1: [0.9, None], 2: [0.3], 3: [0.7]}
    live = resolve_citations_and_references(text, chunks, support_probabilities=probabilities)
    stored = json.loads(json.dumps(probabilities))  # keys become strings
    replayed = resolve_citations_and_references(text, chunks, support_probabilities=stored)
    assert replayed == live
    assert Resolution.model_validate_json(live.model_dump_json()) == live


def test_resolution_does_not_mutate_its_inputs(make_chunks):
    chunks = make_chunks("ab")
    probabilities = {1: [0.1], 2: [0.9]}
    before = (list(chunks), {k: list(v) for k, v in probabilities.items()})
    resolve_citations_and_references("A [1]. B [2].", chunks, support_probabilities=probabilities)
    assert (chunks, probabilities) == before


def test_a_group_library_item_keeps_its_library_in_citations_sources_and_hooks(make_chunk):
    from zocrates_citations.resolve import render_source_sections

    mine = make_chunk(1, "MINEKEY1")
    theirs = make_chunk(2, "GROUPKY1").model_copy(update={"library_id": "group-42"})
    resolution = resolve_citations_and_references("Both say so [1][2].", [mine, theirs])
    assert [(c.item_key, c.library_id) for c in resolution.citations] == [
        ("MINEKEY1", "user"),
        ("GROUPKY1", "group-42"),
    ]
    assert [r.library_id for r in resolution.references.cited] == ["user", "group-42"]
    html = render_source_sections(resolution.references)
    assert 'data-item-key="MINEKEY1">' in html  # My Library: no extra hook, output unchanged
    assert 'data-item-key="GROUPKY1" data-library-id="group-42"' in html


def test_a_refusal_cites_nothing_and_says_what_was_searched(make_chunks):
    chunks = make_chunks(["K1", "K2", "K3"])
    text = "I could not find a passage in your library that addresses this question."
    r = resolve_citations_and_references(text, chunks, refused=True)
    assert not r.zero_citation_fallback and r.references.cited == [] and r.citations == []
    assert [ref.item_key for ref in r.references.considered] == [c.item_key for c in chunks]
    assert r.references.considered_summary == "Searched 3 passages from 3 items"
    assert "# Cited Sources" not in r.text and "Searched 3 passages from 3 items" in r.text
    # the same prose, not marked a refusal, is the zero-citation fallback: every item is cited
    fallback = resolve_citations_and_references(text, chunks)
    assert fallback.zero_citation_fallback and len(fallback.references.cited) == 3


def test_verbatim_quotes_are_marked_with_the_relevance_that_chose_them(make_chunks):
    chunks = make_chunks(["K1", "K2"])
    text = "Alpha is quoted [1]. Beta is quoted [2]. Alpha again [1]."
    r = resolve_citations_and_references(
        text, chunks, support_probabilities={1: [0.8, 0.7], 2: [0.9]}, quotes={"1": [0.91, 0.62], "2": [0.75]}
    )
    occurrences = {c.index: c.occurrences for c in r.citations}
    assert [(o.quoted, o.relevance, o.probability) for o in occurrences[1]] == [(True, 0.91, 0.8), (True, 0.62, 0.7)]
    assert [(o.quoted, o.relevance) for o in occurrences[2]] == [(True, 0.75)]
    plain = resolve_citations_and_references(text, chunks)
    assert not any(o.quoted or o.relevance is not None for c in plain.citations for o in c.occurrences)


# --- supporting spans ------------------------------------------------------------------------


def _span(start: int, end: int):
    from zocrates_contracts import TextSpan

    return TextSpan(start=start, end=end)


def test_a_kept_occurrence_carries_its_supporting_spans_as_offsets_into_its_quote(make_chunk):
    passage = "Methods were standard. Aspirin lowered the stroke rate by 32%. Bleeding was rare."
    where = passage.index("Aspirin"), passage.index("32%.") + 4
    resolved = resolve_citations_and_references(
        "Aspirin lowered strokes by a third [1]. Bleeding was common [1].",
        [make_chunk(1, text=passage)],
        support_probabilities={1: [0.91, 0.2]},
        support_spans={1: [[_span(*where)], [_span(0, 22)]]},
    )
    kept, demoted = resolved.citations[0].occurrences
    assert [(s.start, s.end) for s in kept.spans] == [where]
    assert resolved.citations[0].quote[kept.spans[0].start : kept.spans[0].end] == (
        "Aspirin lowered the stroke rate by 32%."
    )
    assert demoted.verdict == "DEMOTED" and demoted.spans == []


def test_an_unverified_occurrence_has_no_spans(make_chunk):
    resolved = resolve_citations_and_references(
        "Aspirin lowered strokes [1].", [make_chunk(1)], support_spans={1: [[_span(0, 5)]]}
    )
    assert resolved.citations[0].occurrences[0].verdict == "FAIL_OPEN"
    assert resolved.citations[0].occurrences[0].spans == []


def test_spans_beyond_a_quote_limit_are_clipped_to_it_or_dropped(make_chunk):
    passage = "First sentence here. " * 10  # 210 characters
    resolved = resolve_citations_and_references(
        "A claim about the first sentence [1].",
        [make_chunk(1, text=passage)],
        support_probabilities={1: [0.9]},
        support_spans={1: [[_span(0, 20), _span(30, 80), _span(120, 140)]]},
        max_quote_chars=60,
    )
    [citation] = resolved.citations
    shown = len(citation.quote) - 1  # the quote ends with "…"
    assert citation.quote.endswith("…") and shown < 60
    assert [(s.start, s.end) for s in citation.occurrences[0].spans] == [(0, 20), (30, shown)]


def test_an_item_read_only_by_its_abstract_says_so_in_both_tiers(make_chunks):
    """An item whose only evidence is its Abstract field (no passage of a file) is marked
    abstract only; one with a passage of its PDF is not, even when its abstract came too."""
    plain = make_chunks(["K1", "K2", "K3", "K2"])
    record = {"kind": "abstract", "attachment_key": None}
    chunks = [
        plain[0].model_copy(update=record),  # K1: its abstract alone
        plain[1].model_copy(update=record),  # K2: its abstract ...
        plain[2].model_copy(update=record),  # K3: its abstract alone, only considered
        plain[3].model_copy(update={"kind": "abstract", "attachment_key": "PDF2"}),  # ... and its PDF's abstract
    ]
    resolved = resolve_citations_and_references("A [1]. B [2].", chunks, support_probabilities={1: [0.9], 2: [0.9]})
    cited = {r.item_key: r.abstract_only for r in resolved.references.cited}
    considered = {r.item_key: r.abstract_only for r in resolved.references.considered}
    assert cited == {"K1": True, "K2": False} and considered == {"K3": True}
    sources = resolved.text.split("# Cited Sources", 1)[1]
    assert sources.count("(abstract only)") == 2


def test_each_occurrence_of_a_bracket_keeps_its_joint_support_and_its_own_verdict(make_chunks):
    text = "Rates rose in twins [1, 2]. Falls were rare [2]."
    resolved = resolve_citations_and_references(
        text,
        make_chunks("ab"),
        support_probabilities={1: [0.3], 2: [0.2, 0.9]},
        joint_support={1: [0.8], 2: [0.8, None]},
    )
    found = [(c.index, o.occurrence, o.verdict, o.joint_support) for c in resolved.citations for o in c.occurrences]
    assert found == [(1, 1, "DEMOTED", 0.8), (2, 1, "DEMOTED", 0.8), (2, 2, "KEPT", None)]
    with pytest.raises(ValueError, match="within \\[0, 1\\]"):
        resolve_citations_and_references(text, make_chunks("ab"), joint_support={1: [1.5]})


def test_a_stored_version_5_turn_without_joint_support_still_rehydrates():
    import json

    from zocrates_citations import upgrade_turn_record
    from zocrates_contracts import TurnRecord

    occurrence = {"occurrence": 1, "claim": "Rates rose.", "compound": True, "probability": 0.3, "verdict": "DEMOTED"}
    citation = {"index": 1, "chunk_id": "c1", "item_key": "ITEMAAAA", "quote": "Rates rose.", "survives": False}
    stored = {
        "schema_version": 5,
        "turn_id": "t",
        "session_id": "s",
        "intent": "library",
        "question": "q",
        "prose": "Rates rose.",
        "citations": [citation | {"occurrences": [occurrence]}],
        "quality": {"claims": 1, "supported": 0, "citations": 1, "supporting": 0},
    }
    record = upgrade_turn_record(TurnRecord.model_validate_json(json.dumps(stored)))
    assert record.schema_version == 5 and record.citations[0].occurrences[0].joint_support is None
    assert json.loads(record.model_dump_json())["citations"][0]["occurrences"][0]["joint_support"] is None
