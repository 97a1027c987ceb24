"""The `zocrates` command dispatches to the package owning each subcommand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ZOCRATES = str(Path(sys.executable).parent / "zocrates")


def run(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([ZOCRATES, *args], capture_output=True, text=True, timeout=300, **kw)


def test_help_lists_the_commands_and_an_unknown_one_is_refused_clearly():
    assert "zocrates library" in run("--help").stdout
    bad = run("frobnicate")
    assert bad.returncode == 2 and "unknown command 'frobnicate'" in bad.stderr


def test_library_ingest_then_search_finds_the_paper(tmp_path, fixtures_dir):
    from harness.zotero import ZoteroLibraryBuilder

    builder = ZoteroLibraryBuilder(tmp_path / "Zotero", fixtures_dir / "zotero" / "schema")
    item, _ = builder.add_item(
        "journalArticle",
        {"title": "Complications of DVT prophylaxis in trauma", "date": "2010"},
        creators=[("I", "Datta", "author")],
    )
    builder.add_attachment(item, "datta.pdf", (fixtures_dir / "pdfs/cermine/test1.pdf").read_bytes())
    builder.close()
    data = ["--data-dir", str(tmp_path / "data")]
    ingest = run("library", *data, "ingest", "--zotero-dir", str(tmp_path / "Zotero"), "--quiet")
    assert ingest.returncode == 0, ingest.stderr
    search = run("library", *data, "search", "inferior vena cava filter complications", "-k", "3")
    assert search.returncode == 0, search.stderr
    assert "Datta" in search.stdout
