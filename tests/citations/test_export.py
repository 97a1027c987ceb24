"""Export for manuscripts: Pandoc citations, Better BibTeX keys, BibTeX and CSL-JSON, and the
round trip through a real citeproc (pandoc's) with every key resolved."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.pandoc import needs_pandoc, render_with_citeproc
from zocrates_citations.export import export_answer, generated_key
from zocrates_citations.parsing import find_tokens, mask
from zocrates_contracts import Citation, Creator, Pages

JONSSON = [Creator(first_name="Hákon", last_name="Jónsson"), Creator(first_name="Kári", last_name="Stefánsson")]


def citation(index: int, item_key: str, **fields) -> Citation:
    base = dict(chunk_id=f"c{index}", quote="...", survives=True, title="A title", year=2020)
    return Citation(index=index, item_key=item_key, **(base | fields))


def test_generated_keys_follow_better_bibtex_default_formula():
    assert generated_key(JONSSON, 2021, "Somatic mutation rates in monozygotic twins") == (
        "jonssonSomaticMutationRates2021"
    )
    assert generated_key([Creator(last_name="Smith")], 2019, "The role of the gut in obesity") == (
        "smithRoleGutObesity2019"
    )
    assert generated_key([Creator(name="World Health Organization")], None, "Report") == "worldhealthorganizationReport"
    assert generated_key([], None, "") == "item"


def test_tokens_become_pandoc_citations_one_key_per_item():
    prose = "Rates were estimated [1]. Both agree [1, 2]. Another passage of the first [3].\n\n`code [1]`"
    citations = [
        citation(1, "AAAAAAAA", creators=JONSSON, title="Somatic mutation rates", year=2021),
        citation(2, "BBBBBBBB", creators=[Creator(last_name="Vaswani")], title="Attention is all you need"),
        citation(3, "AAAAAAAA", creators=JONSSON, title="Somatic mutation rates", year=2021),
    ]
    out = export_answer(prose, citations, {("user", "BBBBBBBB"): "vaswani2017"})
    a = "jonssonSomaticMutationRates2021"
    assert out.markdown == (
        f"Rates were estimated [@{a}]. Both agree [@{a}; @vaswani2017]. Another passage of the first [@{a}]."
        "\n\n`code [1]`\n\n# References\n"
    )
    assert [e["id"] for e in out.csl_json] == [a, "vaswani2017"]
    assert out.bibtex.count("@") == 2


def test_a_passages_printed_page_is_the_citations_locator():
    a, b = "jonssonSomaticMutationRates2021", "vaswani2017"
    citations = [
        citation(
            1,
            "AAAAAAAA",
            creators=JONSSON,
            title="Somatic mutation rates",
            year=2021,
            pages=Pages(index=2, label="306"),
        ),
        citation(2, "BBBBBBBB", pages=Pages(index=4, label="5", printed=False)),  # no printed number
        citation(
            3,
            "AAAAAAAA",
            creators=JONSSON,
            title="Somatic mutation rates",
            year=2021,
            pages=Pages(index=3, label="307", last_index=4, last_label="308"),
        ),
    ]
    out = export_answer("Rates [1]. Attention [2]. Both [1, 2]. Again [3, 1].", citations, {("user", "BBBBBBBB"): b})
    assert out.markdown.startswith(
        f"Rates [@{a}, p. 306]. Attention [@{b}]. Both [@{a}, p. 306; @{b}]. Again [@{a}, pp. 307–308]."
    )


def test_items_whose_generated_keys_collide_get_letters_and_other_libraries_stay_apart():
    same = dict(creators=[Creator(last_name="Smith")], title="Deep learning", year=2020)
    citations = [citation(1, "AAAAAAAA", **same), citation(2, "AAAAAAAA", library_id="group-1", **same)]
    out = export_answer("One [1], two [2].", citations, {})
    assert list(out.keys.values()) == ["smithDeepLearning2020", "smithDeepLearning2020a"]
    assert out.markdown.startswith("One [@smithDeepLearning2020], two [@smithDeepLearning2020a].")


def test_an_answer_without_citations_exports_its_prose_alone():
    out = export_answer("I could not find a passage in your library.", [], {})
    assert out.markdown == "I could not find a passage in your library.\n"
    assert out.bibtex == "" and out.csl_json == []


def test_bibtex_escapes_specials_and_keeps_institutions_whole():
    c = citation(
        1,
        "AAAAAAAA",
        creators=[Creator(name="R&D Group"), Creator(first_name="A.", last_name="O'Neil")],
        title="Genes & environment: 50% of variance in {twins}",
        publication="J. Stat_Genet",
    )
    bib = export_answer("x [1]", [c]).bibtex
    assert r"author = {{R\&D Group} and O'Neil, A.}" in bib
    assert r"title = {{Genes \& environment: 50\% of variance in \{twins\}}}" in bib
    assert r"journal = {J. Stat\_Genet}" in bib


PIECES = st.one_of(
    st.sampled_from("twins rate rose . , ; ( ) **bold** \n\n `a[1]` [x](y)".split(" ")),
    st.lists(st.integers(1, 6), min_size=1, max_size=3).map(lambda ns: "[" + ", ".join(map(str, ns)) + "]"),
)
CITATIONS = st.lists(
    st.tuples(st.sampled_from(["AAAAAAAA", "BBBBBBBB", "CCCCCCCC"]), st.sampled_from(["Smith", "Lee"]), st.booleans()),
    max_size=6,
)


@pytest.mark.fuzz
@settings(max_examples=200, deadline=None)
@given(st.lists(PIECES, max_size=40).map(" ".join), CITATIONS)
def test_every_citation_of_the_export_has_exactly_one_entry_and_no_number_is_left(prose, drawn):
    citations = [
        citation(i, key, creators=[Creator(last_name=name)], title="Same title", survives=survives)
        for i, (key, name, survives) in enumerate(drawn, start=1)
    ]
    out = export_answer(prose, citations)
    ids = [entry["id"] for entry in out.csl_json]
    assert len(ids) == len(set(ids)) == len({c.item_key for c in citations if c.survives})
    assert set(re.findall(r"@([A-Za-z0-9]+)", out.markdown)) <= set(ids)
    assert all(not t.valid for t in find_tokens(mask(out.markdown).masked, 6)), "a number was left as a citation"


@needs_pandoc
@pytest.mark.parametrize("bibliography", ["refs.bib", "refs.json"])
def test_the_export_renders_through_pandoc_citeproc_with_every_key_resolved(tmp_path, bibliography):
    prose = (
        "Somatic mutation rates were estimated from twins [1]. Attention maps queries to outputs [2], "
        "as both note [1, 2]. Genes and environment interact [3]."
    )
    citations = [
        citation(
            1,
            "AAAAAAAA",
            creators=JONSSON,
            title="Somatic mutation rates in twins",
            year=2021,
            publication="Nature Genetics",
        ),
        citation(
            2,
            "BBBBBBBB",
            creators=[Creator(first_name="Ashish", last_name="Vaswani")],
            title="Attention is all you need",
            year=2017,
            pages=Pages(index=4, label="5998", last_index=5, last_label="5999"),
        ),
        citation(3, "CCCCCCCC", creators=[Creator(name="R&D Group")], title="Genes & environment", year=None),
    ]
    out = export_answer(prose, citations, {("user", "BBBBBBBB"): "vaswani2017attention"})
    files = {"refs.bib": out.bibtex, "refs.json": out.csl_json_text()}
    files = {bibliography: files.pop(bibliography), **files}  # the one rendered against comes first
    text = render_with_citeproc(tmp_path, out.markdown, files)
    for key in out.keys.values():
        assert f"@{key}" not in text and key not in text, f"{key} was left unresolved"
    assert "(Jónsson and Stefánsson 2021)" in text and "(Vaswani 2017, 5998–99)" in text  # the page, as a locator
    assert "R&D Group" in text and "genes & environment" in text.lower()  # the style may title-case it
    assert "Nature Genetics" in text  # the bibliography, under References
    assert json.loads(out.csl_json_text())[0]["id"] == "jonssonSomaticMutationRates2021"
