"""Linked files: absolute paths and `attachments:` paths under Zotero's Linked Attachment Base
Directory (from the settings or the Zotero profile's prefs.js); unresolvable ones are reported."""

from __future__ import annotations

import json

import pytest

from harness.zotero import ZoteroLibraryBuilder
from zocrates_retrieval.adapters.store import EdgeStore, Tenant, count_chunks
from zocrates_retrieval.adapters.zotero import NO_BASE_DIR, base_dir_from_prefs, read_library
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.ingest import Ingestor


@pytest.fixture
def linked(tmp_path, schema_dir, make):
    base = tmp_path / "Papers"
    (base / "heat transfer").mkdir(parents=True)
    (base / "heat transfer" / "graphene.pdf").write_bytes(
        make.text_pdf([("Abstract", ["Suspended graphene conducts heat at about 5000 W/mK at room temperature."])])
    )
    outside = tmp_path / "elsewhere" / "phonons.pdf"
    outside.parent.mkdir()
    outside.write_bytes(make.text_pdf([("Abstract", ["Phonon scattering limits thermal conductivity."])]))
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    item, item_key = b.add_item("journalArticle", {"title": "Thermal conductivity of graphene"})
    keys = {
        "relative": b.add_linked_file(item, "attachments:heat transfer/graphene.pdf")[1],
        "windows_slashes": b.add_linked_file(None, "attachments:heat transfer\\graphene.pdf")[1],
        "relative_gone": b.add_linked_file(item, "attachments:moved/away.pdf")[1],
        "absolute": b.add_linked_file(None, str(outside))[1],
        "absolute_gone": b.add_linked_file(None, str(tmp_path / "deleted.pdf"))[1],
        "item": item_key,
    }
    b.close()
    return b.dir, base, keys


def test_linked_files_resolve_against_the_base_directory(linked):
    zdir, base, keys = linked
    by_key = {s.key: s for s in read_library(zdir, linked_base_dir=base).sources}
    assert by_key[keys["relative"]].path == base / "heat transfer" / "graphene.pdf"
    assert by_key[keys["relative"]].missing_reason is None and by_key[keys["relative"]].item.key == keys["item"]
    assert by_key[keys["windows_slashes"]].path == base / "heat transfer" / "graphene.pdf"
    assert by_key[keys["absolute"]].missing_reason is None
    for gone in ("relative_gone", "absolute_gone"):
        assert by_key[keys[gone]].missing_code == "missing_file"
        assert by_key[keys[gone]].missing_reason.startswith("file not found: ")


def test_without_a_base_directory_relative_links_are_reported_not_guessed(linked):
    zdir, _, keys = linked
    by_key = {s.key: s for s in read_library(zdir).sources}
    relative = by_key[keys["relative"]]
    assert relative.path is None and relative.missing_code == NO_BASE_DIR
    assert relative.missing_reason.startswith("linked file base directory not configured")
    assert "ZOCRATES_ZOTERO_BASE_DIR" in relative.missing_reason
    assert by_key[keys["absolute"]].missing_reason is None  # absolute links need no base


def test_ingest_indexes_linked_files_and_reports_the_rest(linked, tmp_path, embedder):
    zdir, base, keys = linked
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    try:
        progress = Ingestor(store, embedder, linked_base_dir=base).ingest_zotero(zdir, "u1")
        assert progress.state == "done" and progress.indexed == 3
        assert progress.failures_by_reason() == {"missing_file": 2}
        assert count_chunks(store, Tenant("u1")) == 3

        progress = Ingestor(store, embedder).ingest_zotero(zdir, "u2")  # no base directory known
        assert progress.state == "done" and progress.indexed == 1  # the absolute link only
        assert progress.failures_by_reason() == {NO_BASE_DIR: 3, "missing_file": 1}
    finally:
        store.close()


def write_profile(home, name, prefs: dict) -> None:
    profile = home / ".zotero" / "zotero" / name
    profile.mkdir(parents=True)
    lines = ['// Mozilla User Preferences', '']
    lines += [f"user_pref({json.dumps(k)}, {json.dumps(v)});" for k, v in prefs.items()]
    (profile / "prefs.js").write_text("\n".join(lines) + "\n")


def test_base_directory_comes_from_the_profile_that_uses_this_data_directory(
    linked, tmp_path, monkeypatch, no_home_zotero
):
    zdir, base, _ = linked
    home = tmp_path / "home"
    write_profile(
        home,
        "aaaa.other",
        {
            "extensions.zotero.dataDir": str(tmp_path / "other"),
            "extensions.zotero.useDataDir": True,
            "extensions.zotero.baseAttachmentPath": "/wrong/one",
        },
    )
    write_profile(
        home,
        "bbbb.default",
        {
            "extensions.zotero.dataDir": str(zdir),
            "extensions.zotero.useDataDir": True,
            "extensions.zotero.baseAttachmentPath": str(base),
        },
    )
    assert base_dir_from_prefs(zdir, home) == base
    assert str(base_dir_from_prefs(tmp_path / "other", home)) == "/wrong/one"
    assert base_dir_from_prefs(tmp_path / "unknown", home) is None

    settings = RetrievalSettings(zotero_dir=zdir, data_dir=tmp_path / "data")
    assert settings.zotero_base_dir == base  # found without being configured
    monkeypatch.setenv("ZOCRATES_ZOTERO_BASE_DIR", str(tmp_path / "configured"))
    assert RetrievalSettings(zotero_dir=zdir, data_dir=tmp_path / "data").zotero_base_dir == tmp_path / "configured"


def test_a_profile_without_a_data_directory_in_use_uses_home_zotero(tmp_path, schema_dir, no_home_zotero):
    home = tmp_path / "home"
    ZoteroLibraryBuilder(home / "Zotero", schema_dir).close()
    # a dataDir left from before, not in use (useDataDir unset): Zotero reads ~/Zotero
    write_profile(
        home,
        "cccc.default",
        {"extensions.zotero.dataDir": str(tmp_path / "old"), "extensions.zotero.baseAttachmentPath": "/srv/papers"},
    )
    assert str(base_dir_from_prefs(home / "Zotero", home)) == "/srv/papers"
    assert base_dir_from_prefs(tmp_path / "old", home) is None
