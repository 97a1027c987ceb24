from __future__ import annotations

import pytest

from zocrates_contracts.identifiers import (
    arxiv_of_doi,
    citation_key_in_extra,
    doi_in_extra,
    doi_in_url,
    find_arxiv_ids,
    find_dois,
    find_pmids,
    identifiers_in_query,
    item_identifiers,
    normalize_arxiv,
    normalize_doi,
    normalize_pmid,
    normalize_title,
)


@pytest.mark.parametrize(
    "raw",
    [
        "10.1038/s42256-024-00832-8",
        "https://doi.org/10.1038/S42256-024-00832-8",
        "http://dx.doi.org/10.1038/s42256-024-00832-8",
        "doi:10.1038/s42256-024-00832-8",
        "DOI: 10.1038/s42256-024-00832-8.",
        "10.1038/s42256-024-00832-8?",
        "https://doi.org/10.1038%2Fs42256-024-00832-8",
        "  info:doi/10.1038/s42256-024-00832-8 ",
    ],
)
def test_doi_prefixes_case_and_encoding_normalise_to_one_form(raw):
    assert normalize_doi(raw) == "10.1038/s42256-024-00832-8"


def test_doi_keeps_balanced_parentheses_and_drops_prose_ones():
    assert normalize_doi("10.1016/0005-2795(76)90109-4") == "10.1016/0005-2795(76)90109-4"
    assert find_dois("(see 10.1063/1.4938384)") == ["10.1063/1.4938384"]


def test_not_a_doi_is_none():
    assert normalize_doi("https://example.org/paper") is None
    assert normalize_doi("") is None
    assert doi_in_url("https://example.org/10.1234/abc") is None


def test_doi_hides_in_extra_and_doi_org_urls():
    assert doi_in_extra("tex.ids: x\nDOI: 10.5281/zenodo.7374521\n") == "10.5281/zenodo.7374521"
    assert doi_in_url("https://doi.org/10.1007/978-3-319-52452-8") == "10.1007/978-3-319-52452-8"


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("2304.05376", "2304.05376"),
        ("2304.05376v3", "2304.05376"),
        ("arXiv:2304.05376v2", "2304.05376"),
        ("arXiv: 1503.03900", "1503.03900"),
        ("arXiv:1606.02360 [cs, math]", "1606.02360"),
        ("https://arxiv.org/abs/2304.05376v1", "2304.05376"),
        ("http://arxiv.org/pdf/2304.05376v2.pdf", "2304.05376"),
        ("10.48550/arXiv.2304.05376", "2304.05376"),
        ("https://doi.org/10.48550/arxiv.2304.05376", "2304.05376"),
        ("hep-th/9901001", "hep-th/9901001"),
        ("arXiv:hep-th/9901001v2", "hep-th/9901001"),
        ("math.GT/0309136", "math/0309136"),
        ("https://arxiv.org/abs/cond-mat/0102536v1", "cond-mat/0102536"),
        ("0704.0001", "0704.0001"),
    ],
)
def test_arxiv_ids_lose_versions_prefixes_and_subject_classes(raw, expected):
    assert normalize_arxiv(raw) == expected


def test_arxiv_doi_names_the_preprint():
    assert arxiv_of_doi("10.48550/arxiv.2312.07559") == "2312.07559"
    assert arxiv_of_doi("10.1038/s42256-024-00832-8") is None


def test_running_text_numbers_are_not_arxiv_ids():
    assert find_arxiv_ids("we measured 2304.05376 grams") == []
    assert normalize_arxiv("version 1.2345") is None


def test_titles_normalise_like_zoteros_duplicate_finder():
    assert normalize_title("MapReduce: Simplified Data Processing on Large Clusters") == normalize_title(
        "MapReduce: simplified data processing on large clusters"
    )
    assert normalize_title("Union d’une commande par backstepping") == "union d une commande par backstepping"
    assert normalize_title("Café  <i>in vivo</i> — études") == "cafe in vivo etudes"
    assert normalize_title("   ") == ""


def test_pasted_identifiers_are_found_in_a_query():
    ids = identifiers_in_query("what about https://doi.org/10.1038/s42256-024-00832-8 and arXiv:2312.07559v2?")
    assert ids.dois == ("10.1038/s42256-024-00832-8",)
    assert ids.arxiv_ids == ("2312.07559",)
    assert identifiers_in_query("10.48550/arXiv.2304.05376").arxiv_ids == ("2304.05376",)
    assert identifiers_in_query("10.48550/arXiv.2304.05376").dois == ()
    assert identifiers_in_query("2304.05376").arxiv_ids == ("2304.05376",)
    assert identifiers_in_query("https://openalex.org/W4396723768").openalex_ids == ("W4396723768",)
    assert not identifiers_in_query("retrieval augmented generation for chemistry")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("20205926", "20205926"),
        ("PMID: 20205926", "20205926"),
        ("pmid20205926", "20205926"),
        ("https://pubmed.ncbi.nlm.nih.gov/20205926/", "20205926"),
        ("https://www.ncbi.nlm.nih.gov/pubmed/20205926", "20205926"),
    ],
)
def test_pubmed_ids_normalise_to_their_digits(raw, expected):
    assert normalize_pmid(raw) == expected


def test_a_number_is_a_pmid_in_text_only_when_marked_as_one():
    assert find_pmids("387 pairs of twins, PMID: 20205926; see also PMID 31234567") == ["20205926", "31234567"]
    assert find_pmids("we enrolled 20205926 people") == []
    assert normalize_pmid("0123") is None and normalize_pmid("abc") is None


def test_an_items_identifiers_are_found_where_zotero_keeps_them():
    found = item_identifiers(
        "https://doi.org/10.1186/1752-2897-4-1",
        ["https://arxiv.org/abs/2203.00130v1", None],
        "arXiv: 2203.00130 [cs.CL]\nPMID: 20205926\nDOI: 10.1186/1752-2897-4-1",
    )
    assert found.dois == ("10.1186/1752-2897-4-1",)
    assert found.arxiv_ids == ("2203.00130",)
    assert found.pmids == ("20205926",)
    preprint = item_identifiers(None, ["https://doi.org/10.48550/arXiv.2304.05376"])
    assert preprint.dois == ("10.48550/arxiv.2304.05376",) and preprint.arxiv_ids == ("2304.05376",)
    assert item_identifiers() == type(found)()


def test_better_bibtex_key_is_read_from_the_extra_field():
    assert citation_key_in_extra("arXiv: 2203.00130\nCitation Key: jonsson2021somatic\n") == "jonsson2021somatic"
    assert citation_key_in_extra("tex.ids: x\n  citation key:  smith_2020 ") == "smith_2020"
    assert citation_key_in_extra("PMID: 20205926") is None
    assert citation_key_in_extra(None) is None
