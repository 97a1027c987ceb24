"""The novelty filter against Zotero databases built from Zotero's schema, and against real ones."""

from __future__ import annotations

import sqlite3

import pytest

from zocrates_contracts import Candidate
from zocrates_discovery.adapters.zotero_library import LibraryReadError, read_library_items
from zocrates_discovery.domain.novelty import LibraryIndex, filter_novel


def cand(title: str, doi: str | None = None, arxiv_id: str | None = None, cid: str = "c1") -> Candidate:
    return Candidate(candidate_id=cid, title=title, doi=doi, arxiv_id=arxiv_id)


@pytest.fixture(scope="module")
def library(module_zotero):
    """A small library with identifiers where Zotero users keep them."""
    z = module_zotero
    z.add_item(
        "journalArticle",
        {"title": "Augmenting large language models with chemistry tools", "DOI": "10.1038/S42256-024-00832-8"},
        key="CHEMCROW",
    )
    z.add_item(
        "preprint",
        {
            "title": "PaperQA: Retrieval-Augmented Generative Agent for Scientific Research",
            "url": "http://arxiv.org/abs/2312.07559v1",
        },
        key="PAPERQA2",
    )
    z.add_item(
        "journalArticle",
        {"title": "Example demonstrating small-gain", "extra": "arXiv:1606.02360 [cs, math]"},
        key="EXTRAARX",
    )
    z.add_item(
        "book",
        {"title": "Time Series Analysis and Its Applications", "url": "https://doi.org/10.1007/978-3-319-52452-8"},
        key="BOOKURL2",
    )
    z.add_item(
        "computerProgram",
        {"title": "Cartorio: A library for logging", "extra": "DOI: 10.5281/zenodo.7374521"},
        key="SOFTWARE",
    )
    z.add_item(
        "journalArticle",
        {
            "title": "Effect of native oxide layers on copper thin-film tensile properties: "
            "A reactive molecular dynamics study"
        },
        key="COPPER22",
    )
    parent, _ = z.add_item("journalArticle", {"title": "Attention is all you need"}, key="ATTENTIO")
    z.add_link_attachment(parent, "https://arxiv.org/abs/1706.03762v7", title="arXiv.org Snapshot")
    trashed, _ = z.add_item(
        "journalArticle",
        {"title": "Deep residual learning for image recognition", "DOI": "10.1109/cvpr.2016.90"},
        key="TRASHED2",
    )
    z.trash(trashed)
    z.add_item(
        "journalArticle",
        {"title": "Correction: Generative adversarial networks for molecule design", "DOI": "10.1000/erratum.1"},
        key="ERRATUM2",
    )
    group = z.add_group(4711, "Lab")
    z.add_item(
        "conferencePaper",
        {"title": "BERT: Pre-training of Deep Bidirectional Transformers", "DOI": "10.18653/v1/N19-1423"},
        library_id=group,
        key="GROUPBRT",
    )
    feed = z.add_feed("arXiv cs.CL")
    z.add_item("journalArticle", {"title": "A feed item nobody saved", "DOI": "10.9999/feed.1"}, library_id=feed)
    return LibraryIndex(read_library_items(z.dir))


@pytest.mark.parametrize(
    "candidate, key, why",
    [
        (cand("Anything", doi="https://doi.org/10.1038/s42256-024-00832-8"), "CHEMCROW", "same DOI"),
        (cand("Anything", arxiv_id="2312.07559v3"), "PAPERQA2", "same arXiv id"),
        (cand("Anything", doi="10.48550/arXiv.2312.07559"), "PAPERQA2", "same arXiv id"),
        (cand("Anything", arxiv_id="1606.02360"), "EXTRAARX", "same arXiv id"),
        (cand("Anything", doi="10.1007/978-3-319-52452-8"), "BOOKURL2", "same DOI"),
        (cand("Anything", doi="10.5281/ZENODO.7374521"), "SOFTWARE", "same DOI"),
        (cand("Anything", arxiv_id="1706.03762"), "ATTENTIO", "same arXiv id"),
        (
            cand(
                "Effect of Native Oxide Layers on Copper Thin-Film Tensile Properties — a reactive molecular dynamics study"
            ),
            "COPPER22",
            "same title",
        ),
        (
            cand(
                "Effect of native oxide layers on copper thin film tensile property: a reactive molecular-dynamics study",
                doi="10.1063/1.4938384",
            ),
            "COPPER22",
            "similar",
        ),
        (cand("Attention Is All You Need", doi="10.48550/arxiv.1706.03762v5"), "ATTENTIO", "same arXiv id"),
        (cand("BERT: pre-training of deep bidirectional transformers."), "GROUPBRT", "same title"),
    ],
)
def test_owned_candidates_are_dropped_with_the_reason(library, candidate, key, why):
    novel, dropped = filter_novel([candidate], library)
    assert novel == []
    assert dropped[0].matched_item_key == key
    assert why in dropped[0].reason and key in dropped[0].reason


@pytest.mark.parametrize(
    "candidate",
    [
        # ChemCrow's preprint: a different title and a different DOI than the owned journal paper.
        cand("ChemCrow: Augmenting large-language models with chemistry tools", doi="10.48550/arxiv.2304.05376"),
        cand("PaperQA2: superhuman synthesis of scientific knowledge"),  # a successor, not the paper
        cand("Effect of native oxide layers on silver thin-film tensile properties"),  # below 0.88
        cand("Deep residual learning for image recognition", doi="10.1109/cvpr.2016.90"),  # only in the trash
        cand("A feed item nobody saved", doi="10.9999/feed.1"),  # a feed is not the library
        cand("Attention is all you need", arxiv_id="1706.99999"),  # id differs, but the title says it all
    ],
)
def test_new_papers_and_near_misses_pass(library, candidate):
    novel, dropped = filter_novel([candidate], library)
    if candidate.arxiv_id == "1706.99999":  # title match still wins when identifiers do not decide
        assert dropped and dropped[0].matched_item_key == "ATTENTIO"
        return
    assert novel == [candidate], dropped


def test_a_title_match_is_vetoed_by_two_different_published_dois(library):
    # An erratum and the paper it corrects share a title but are different works (as in Zotero).
    novel, _ = filter_novel(
        [cand("Correction: Generative adversarial networks for molecule design", doi="10.1000/original.1")], library
    )
    assert len(novel) == 1
    # ...whereas a preprint of an owned paper is the owned paper.
    _, dropped = filter_novel(
        [cand("Correction: Generative adversarial networks for molecule design", doi="10.48550/arxiv.2001.00001")],
        library,
    )
    assert dropped[0].matched_item_key == "ERRATUM2"


def test_no_library_drops_nothing():
    novel, dropped = filter_novel([cand("x")], None)
    assert len(novel) == 1 and dropped == []


def test_real_zotero7_library_matches_by_doi(fixtures_dir):
    index = LibraryIndex(read_library_items(fixtures_dir / "zotero/db/nagatashigueru-ZoteroDataBase.zotero.sqlite"))
    assert index.size == 5
    drop = index.owned(cand("x", doi="https://doi.org/10.1002/ADMA.202204161"))
    assert drop is not None and drop.matched_item_key == "JRV6G92L"


def test_real_zotero6_library_finds_arxiv_ids_in_url_and_extra_and_dois_in_urls(fixtures_dir):
    index = LibraryIndex(read_library_items(fixtures_dir / "zotero/db/hsteinshiromoto-bibliography.zotero.sqlite"))
    assert index.owned(cand("x", arxiv_id="1606.02360v2")).matched_item_key == "DGWB2C6B"  # only in url
    assert index.owned(cand("x", arxiv_id="1503.03900")).matched_item_key == "N6DLSC8Z"  # "arXiv: 1503.03900"
    assert index.owned(cand("x", doi="10.1007/978-3-319-52452-8")).matched_item_key == "QA7ULGW4"  # only in url
    # The French and the English conference papers are related, not the same paper.
    assert index.owned(cand("Combining a backstepping controller with a local stabilizer (French version)")) is None


def test_reading_does_not_touch_the_live_database(zotero):
    zotero.add_item("journalArticle", {"title": "One paper", "DOI": "10.1000/one"})
    before = {p.name for p in zotero.dir.iterdir()}
    mtime = zotero.path.stat().st_mtime_ns
    read_library_items(zotero.dir)
    assert {p.name for p in zotero.dir.iterdir()} == before  # no -shm, -wal or -journal beside it
    assert zotero.path.stat().st_mtime_ns == mtime


def test_reading_works_while_zotero_holds_an_exclusive_lock(zotero):
    zotero.add_item("journalArticle", {"title": "Locked paper", "DOI": "10.1000/locked"})
    zotero.con.execute("PRAGMA locking_mode=EXCLUSIVE")
    zotero.con.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError):  # what a plain read-only open runs into
            sqlite3.connect(f"file:{zotero.path}?mode=ro", uri=True, timeout=0.1).execute(
                "SELECT 1 FROM items"
            ).fetchall()
        items = read_library_items(zotero.dir)
    finally:
        zotero.con.rollback()
    assert [i.dois for i in items] == [("10.1000/locked",)]


def test_a_file_that_is_not_zotero_is_a_clear_error(tmp_path):
    path = tmp_path / "zotero.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(LibraryReadError, match="Zotero"):
        read_library_items(path)
    with pytest.raises(LibraryReadError, match="no Zotero database"):
        read_library_items(tmp_path / "missing")
