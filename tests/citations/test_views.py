"""Clean views (seed 5.3, 6.4): coordinator memory, copy with citations hidden or visible."""

from __future__ import annotations

import re

from zocrates_citations import (
    build_coordinator_view,
    resolve_citations_and_references,
    strip_citations,
    to_author_year,
)

CODE = "```python\nx = arr[1]\ny = val[1, 2]\n```"


def watson_franklin(make_chunk):
    """Four chunks of three items; the first and third are two chunks of Watson and Crick's paper."""
    watson_crick = dict(
        authors=["Watson", "Crick"], year=1952, title="Molecular structure of nucleic acids", publication="Nature"
    )
    return [
        make_chunk(1, "WCKEY001", **watson_crick),
        make_chunk(2, "FRKEY002", authors=["Franklin"], year=1951, title="Photo 51"),
        make_chunk(3, "WCKEY001", **watson_crick),
        make_chunk(4, "PAKEY004", authors=["Pauling", "Corey", "Branson"], year=1950, title="A triple helix"),
    ]


def test_coordinator_view_uses_author_year_citations_and_a_clean_bibliography(make_chunk):
    chunks = watson_franklin(make_chunk)
    resolution = resolve_citations_and_references(
        f"DNA is a double helix [1, 2].\n\n{CODE}\n\nIts strands pair [3][99].", chunks
    )
    view = build_coordinator_view(resolution, chunks)
    assert view == (
        "DNA is a double helix (Watson & Crick, 1952; Franklin, 1951).\n\n"
        f"{CODE}\n\n"
        "Its strands pair (Watson & Crick, 1952).\n\n"
        "# Cited Sources\n"
        "- **Watson & Crick (1952)**. *Molecular structure of nucleic acids*. Nature.\n"
        "- **Franklin (1951)**. *Photo 51*.\n\n"
        "## Other Considered Sources\n"
        "- **Pauling et al. (1950)**. *A triple helix*."
    )


def test_coordinator_view_has_no_html_no_item_keys_no_numeric_tokens(make_chunk):
    chunks = watson_franklin(make_chunk)
    resolution = resolve_citations_and_references("A [1]. B [4]. C 【2】.", chunks)
    view = build_coordinator_view(resolution, chunks)
    assert not re.search(r"<[a-z/][^>]*>", view)
    assert not any(key in view for key in ("WCKEY001", "FRKEY002", "PAKEY004", "ATT0000"))
    assert not re.search(r"\[\d+(?:,\s*\d+)*\]|【", view)


def test_coordinator_view_merges_chunks_of_one_item_in_a_bracket(make_chunk):
    chunks = watson_franklin(make_chunk)
    resolution = resolve_citations_and_references("Helix [1, 3].", chunks)
    assert build_coordinator_view(resolution, chunks).startswith("Helix (Watson & Crick, 1952).")


def test_coordinator_view_falls_back_to_title_and_nd(make_chunk):
    chunks = [make_chunk(1, authors=[], year=None, title="Anonymous Report")]
    resolution = resolve_citations_and_references("Claim[1].", chunks)
    view = build_coordinator_view(resolution, chunks)
    assert view.startswith("Claim (Anonymous Report, n.d.).")
    assert "- **Anonymous Report (n.d.)**." in view


def test_coordinator_view_lists_the_considered_tier_even_when_not_disclosed(make_chunk):
    chunks = watson_franklin(make_chunk)
    resolution = resolve_citations_and_references("A [1].", chunks, considered_disclosure=False)
    assert "## Other Considered Sources\n- **Franklin (1951)**." in build_coordinator_view(resolution, chunks)


def test_strip_citations_removes_tokens_and_source_sections_and_keeps_code(make_chunk):
    chunks = watson_franklin(make_chunk)
    resolution = resolve_citations_and_references(f"A helix [1, 2].\n\n{CODE}\n\nPairs [3] pair!", chunks)
    assert strip_citations(resolution.text) == f"A helix.\n\n{CODE}\n\nPairs pair!"


def test_strip_citations_leaves_text_without_citations_alone():
    text = f"Nothing to strip here `a[1]`.\n\n{CODE}\n"
    assert strip_citations(text) == text


def test_source_headings_inside_code_are_not_source_sections():
    text = "Prose [1].\n\n```\n# Cited Sources\n```\n"
    assert strip_citations(text) == "Prose.\n\n```\n# Cited Sources\n```\n"


def test_to_author_year_converts_tokens_and_rebuilds_both_tiers_from_the_sections(make_chunk):
    chunks = watson_franklin(make_chunk)
    resolution = resolve_citations_and_references(
        f"A helix [1, 2].\n\n{CODE}", chunks, support_probabilities={2: [0.1]}
    )
    assert to_author_year(resolution.text, chunks) == (
        f"A helix (Watson & Crick, 1952).\n\n{CODE}\n\n"
        "# Cited Sources\n"
        "- **Watson & Crick (1952)**. *Molecular structure of nucleic acids*. Nature.\n\n"
        "## Other Considered Sources\n"
        "- **Franklin (1951)**. *Photo 51*.\n"
        "- **Pauling et al. (1950)**. *A triple helix*."
    )


def test_to_author_year_without_sections_only_converts_tokens(make_chunk):
    chunks = watson_franklin(make_chunk)
    assert to_author_year("A helix [2].", chunks) == "A helix (Franklin, 1951)."


def test_copy_views_agree_with_the_coordinator_view(make_chunk):
    chunks = watson_franklin(make_chunk)
    resolution = resolve_citations_and_references("A [1]. B [2]. C [4].", chunks)
    assert to_author_year(resolution.text, chunks) == build_coordinator_view(resolution, chunks)


def test_a_resolution_ends_with_its_sources_as_clients_split_them(make_chunk):
    from zocrates_citations import split_sources

    chunks = watson_franklin(make_chunk)
    resolution = resolve_citations_and_references("DNA is a double helix [1].", chunks)
    prose = resolution.text.removesuffix(resolution.sources)
    assert resolution.sources.startswith("# Cited Sources")
    assert split_sources(resolution.text) == (prose, resolution.sources)
    assert prose == "DNA is a double helix [1].\n\n"


def test_a_version_1_turn_record_is_upgraded_with_the_split_clients_used_to_make(make_chunk):
    from zocrates_citations import upgrade_turn_record
    from zocrates_contracts import TurnRecord

    chunks = watson_franklin(make_chunk)
    resolution = resolve_citations_and_references("DNA is a double helix [1].", chunks)
    old = TurnRecord.model_validate(
        {"turn_id": "t", "session_id": "s", "intent": "library", "question": "q", "text": resolution.text}
    )
    new = upgrade_turn_record(old)
    assert (old.schema_version, new.schema_version) == (1, TurnRecord.SCHEMA_VERSION)
    assert (new.text, new.prose, new.sources) == (
        resolution.text,
        resolution.text.removesuffix(resolution.sources),
        resolution.sources,
    )
    assert upgrade_turn_record(new) is new
