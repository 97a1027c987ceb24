"""The bundled demo library (demo/, issue 14): its database is exactly what demo/library.toml
builds, its files are the published PDFs under the licences they state, and demo/README.md
lists each of them."""

from __future__ import annotations

import shutil

import pymupdf
import pytest

from tools import demo_library as demo
from zocrates_retrieval.adapters.zotero import read_library
from zocrates_runtime.zotero_dir import demo_papers, demo_zotero_dir

PAPERS = demo.load()["paper"]


@pytest.fixture
def schema_dir(fixtures_dir):
    return fixtures_dir / "zotero" / "schema"


def test_the_committed_database_is_what_library_toml_builds(tmp_path, schema_dir):
    built = demo.build(tmp_path / "zotero", schema_dir)
    assert demo.dump(built) == demo.dump(demo.ZOTERO_DIR / "zotero.sqlite")
    assert demo.main(["--check", "--schema", str(schema_dir)]) == 0


def test_the_database_holds_each_papers_metadata_and_pdf():
    snapshot = read_library(demo.ZOTERO_DIR)
    by_key = {source.key: source for source in snapshot.sources}
    assert len(by_key) == len(PAPERS) == demo_papers(demo.ZOTERO_DIR) == 3
    for paper in PAPERS:
        source = by_key[paper["pdf"]["key"]]
        fields = paper["fields"]
        assert (source.item.key, source.item.title, source.item.doi, source.item.publication) == (
            paper["key"],
            fields["title"],
            fields["DOI"],
            fields["publicationTitle"],
        )
        assert source.item.year == int(fields["date"][:4])
        assert [f"{c.last_name}, {c.first_name}" for c in source.item.creators] == paper["creators"]
        assert source.path == demo.ZOTERO_DIR / "storage" / paper["pdf"]["key"] / paper["pdf"]["name"]
    assert demo_zotero_dir() == demo.ZOTERO_DIR


@pytest.mark.parametrize("paper", PAPERS, ids=[p["key"] for p in PAPERS])
def test_each_pdf_states_the_cc_by_licence_recorded_for_it(paper):
    pdf = paper["pdf"]
    assert pdf["licence"] in {"CC BY 2.0", "CC BY 3.0", "CC BY 4.0"}
    version = pdf["licence"].rsplit(" ", 1)[1]
    assert pdf["licence_url"] == f"https://creativecommons.org/licenses/by/{version}/"
    assert f"creativecommons.org/licenses/by/{version}" in pdf["statement"]
    with pymupdf.open(demo.ZOTERO_DIR / "storage" / pdf["key"] / pdf["name"]) as doc:
        text = " ".join(" ".join(page.get_text() for page in doc).split())
    assert " ".join(pdf["statement"].split()) in text


def test_the_readme_lists_every_file_with_its_sha256_licence_and_doi():
    readme = (demo.DEMO / "README.md").read_text(encoding="utf-8")
    for paper in PAPERS:
        pdf = paper["pdf"]
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{paper['key']}` |"))
        for expected in (pdf["key"], pdf["name"], pdf["sha256"], pdf["licence"], paper["fields"]["DOI"]):
            assert expected in row, f"{paper['key']}: {expected!r} missing from its README row"


def test_a_pdf_that_is_not_the_published_file_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "zotero"
    shutil.copytree(demo.ZOTERO_DIR, copy)
    pdf = PAPERS[0]["pdf"]
    path = copy / "storage" / pdf["key"] / pdf["name"]
    path.write_bytes(path.read_bytes() + b"\n% appended\n")
    monkeypatch.setattr(demo, "ZOTERO_DIR", copy)
    with pytest.raises(demo.DemoLibraryError, match="SHA-256"):
        demo.load()
