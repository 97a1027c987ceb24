"""Read the identifiers of a user's Zotero library from `zotero.sqlite`, strictly read-only.

Zotero keeps its database open and, by default, exclusively locked while it runs, so even a
`mode=ro` connection to the live file can fail, and `immutable=1` could read a page halfway
through a write. We therefore copy the file (with a `-journal` or `-wal` companion) while its
size and mtime stay unchanged, and read the copy; the original is touched by nothing but a byte
copy, and Zotero is never disturbed.

What counts as owned: every regular item (not attachments, notes or annotations) of the user's
library and of their group libraries that is not in the trash. Zotero's trash is not the
library (its own duplicate finder ignores trashed items too); feeds are not the library either.
Identifiers are collected where Zotero users keep them: the DOI field, a `DOI: ...` line in Extra
(item types that have no DOI field), doi.org URLs, arXiv ids in Extra (`arXiv:1606.02360 [cs]`),
in URLs (`arxiv.org/abs/...`) of the item and of its attachments, and arXiv DOIs.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from zocrates_contracts.identifiers import (
    arxiv_of_doi,
    doi_in_extra,
    doi_in_url,
    find_arxiv_ids,
    normalize_doi,
)
from zocrates_discovery.domain.novelty import LibraryItem
from zocrates_runtime.zotero_snapshot import snapshot_database

_NOT_ITEMS = ("attachment", "note", "annotation")


class LibraryReadError(RuntimeError):
    """The Zotero database could not be read (missing, locked beyond retries, or not Zotero's)."""


def database_path(zotero_dir_or_db: Path) -> Path:
    """`<dir>/zotero.sqlite` for a Zotero data directory, or the path itself for a database file."""
    path = Path(zotero_dir_or_db)
    return path / "zotero.sqlite" if path.is_dir() else path


def read_library_items(zotero_dir_or_db: Path) -> list[LibraryItem]:
    """Every owned item of a Zotero data directory (or a `zotero.sqlite` path) with its identifiers."""
    db_path = database_path(zotero_dir_or_db)
    with tempfile.TemporaryDirectory(prefix="zocrates-discovery-") as tmp:
        copy = snapshot_database(db_path, Path(tmp), error=LibraryReadError)
        con = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
        try:
            return _read_items(con)
        except sqlite3.DatabaseError as exc:
            raise LibraryReadError(f"{db_path} does not look like a Zotero 5-7 database: {exc}") from exc
        finally:
            con.close()


def _read_items(con: sqlite3.Connection) -> list[LibraryItem]:
    tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    # Zotero fills the *Combined tables (global schema plus custom fields) at start-up; older
    # databases only have the plain ones.
    fields = "fieldsCombined" if "fieldsCombined" in tables else "fields"
    item_types = "itemTypesCombined" if "itemTypesCombined" in tables else "itemTypes"
    base_map = "baseFieldMappingsCombined" if "baseFieldMappingsCombined" in tables else "baseFieldMappings"

    field_ids = {name: fid for fid, name in con.execute(f"SELECT fieldID, fieldName FROM {fields}")}
    if "title" not in field_ids:
        raise LibraryReadError("the database has no `title` field; it is not a Zotero database")
    title_ids = {field_ids["title"]} | {
        fid for (fid,) in con.execute(f"SELECT fieldID FROM {base_map} WHERE baseFieldID = ?", (field_ids["title"],))
    }
    kind_of = {fid: "title" for fid in title_ids}
    for name in ("DOI", "url", "extra"):
        if name in field_ids:
            kind_of[field_ids[name]] = name
    skipped_types = [
        tid for tid, name in con.execute(f"SELECT itemTypeID, typeName FROM {item_types}") if name in _NOT_ITEMS
    ]

    marks = ",".join("?" * len(kind_of))
    type_marks = ",".join("?" * len(skipped_types)) or "NULL"
    rows = con.execute(
        f"""SELECT i.itemID, i.key, d.fieldID, v.value
            FROM items i
            JOIN libraries l ON l.libraryID = i.libraryID AND l.type IN ('user', 'group')
            JOIN itemData d ON d.itemID = i.itemID
            JOIN itemDataValues v ON v.valueID = d.valueID
            WHERE d.fieldID IN ({marks}) AND i.itemTypeID NOT IN ({type_marks})
              AND i.itemID NOT IN (SELECT itemID FROM deletedItems)""",
        (*kind_of, *skipped_types),
    )
    keys: dict[int, str] = {}
    titles: dict[int, str] = {}
    dois: dict[int, list[str]] = {}
    arxiv: dict[int, list[str]] = {}

    def add(item_id: int, kind: str, value: str) -> None:
        found_dois: list[str] = []
        found_arxiv: list[str] = []
        if kind == "DOI":
            found_dois.append(normalize_doi(value))
        elif kind == "url":
            found_dois.append(doi_in_url(value))
            found_arxiv.extend(find_arxiv_ids(value))
        elif kind == "extra":
            found_dois.append(doi_in_extra(value))
            found_arxiv.extend(find_arxiv_ids(value))
        for doi in filter(None, found_dois):
            dois.setdefault(item_id, []).append(doi)
            if arxiv_id := arxiv_of_doi(doi):
                found_arxiv.append(arxiv_id)
        if found_arxiv:
            arxiv.setdefault(item_id, []).extend(found_arxiv)

    for item_id, key, field_id, value in rows:
        keys[item_id] = key
        kind = kind_of[field_id]
        if kind == "title":
            titles[item_id] = str(value)
        else:
            add(item_id, kind, str(value))

    # Attachments carry the arXiv or publisher URL of their parent ("arXiv.org Snapshot").
    if "url" in field_ids:
        for parent_id, value in con.execute(
            """SELECT a.parentItemID, v.value
               FROM itemAttachments a
               JOIN itemData d ON d.itemID = a.itemID AND d.fieldID = ?
               JOIN itemDataValues v ON v.valueID = d.valueID
               WHERE a.parentItemID IS NOT NULL AND a.itemID NOT IN (SELECT itemID FROM deletedItems)""",
            (field_ids["url"],),
        ):
            if parent_id in keys:
                add(parent_id, "url", str(value))

    def unique(values: list[str] | None) -> tuple[str, ...]:
        if not values:
            return ()
        return (values[0],) if len(values) == 1 else tuple(dict.fromkeys(values))

    return [
        LibraryItem(key, titles.get(item_id, ""), unique(dois.get(item_id)), unique(arxiv.get(item_id)))
        for item_id, key in keys.items()
    ]
