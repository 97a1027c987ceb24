"""Read a Zotero data directory: items, creators, attachments, notes, trash, libraries.

Zotero keeps `zotero.sqlite` open while it runs and, by default, locks it exclusively
(`extensions.zotero.dbLockExclusive`). So neither an ordinary `mode=ro` connection nor the
sqlite backup API (which both need a shared lock) can read it then, and `immutable=1` on the
live file would skip the locks but could read a page Zotero is halfway through writing, with
no way to notice. We therefore take a *snapshot*: copy the file (with its `-journal` / `-wal`
companion, so a hot journal is rolled back and committed WAL frames are replayed, in our copy)
while its size and mtime stay unchanged, retry if Zotero wrote meanwhile, then check the copy
with `PRAGMA quick_check`. The original is opened by nothing but a byte copy: no locks are
taken, no `-shm` or `-wal` is created next to it, Zotero is never disturbed.

The queries follow Zotero's real schema (`userdata.sql`, version 120 to 129): item types and
fields through the `*Combined` tables Zotero fills at start-up (falling back to the plain
tables of older databases), base-field mappings (`proceedingsTitle` is a `publicationTitle`),
creators in `orderIndex` order, the trash in `deletedItems`, group libraries in `groups`.

Attachment paths follow `Zotero.Item.getFilePath`: stored files are `storage:<file>` under
`storage/<attachmentKey>/`; linked files are absolute paths, or `attachments:<relative path>`
under the "Linked Attachment Base Directory", a preference kept in the Zotero profile's
prefs.js (`extensions.zotero.baseAttachmentPath`), not in the database: the caller passes it
(see `base_dir_from_prefs`). A linked file that cannot be resolved is reported, not skipped.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from zocrates_contracts import Creator, SyncedItem
from zocrates_contracts.identifiers import citation_key_in_extra
from zocrates_runtime.zotero_snapshot import snapshot_database as _snapshot

#: Zotero's attachment link modes and base-directory prefix (chrome/content/zotero/xpcom/attachments.js).
LINK_IMPORTED_FILE, LINK_IMPORTED_URL, LINK_LINKED_FILE, LINK_LINKED_URL = 0, 1, 2, 3
BASE_PATH_PLACEHOLDER = "attachments:"

#: Failure reasons of attachments whose file cannot be read (reported in the ingest status).
MISSING_FILE, NO_BASE_DIR = "missing_file", "no_base_dir"

_YEAR_RE = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")
_DOI_RE = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.IGNORECASE)


class ZoteroReadError(RuntimeError):
    """The Zotero data directory could not be read (missing, unreadable or inconsistent)."""


@dataclass(frozen=True)
class Library:
    """A Zotero library: the user's own (`library_id="user"`) or a group (`"group-<groupID>"`).

    `library_id` is built from ids that are the same on every machine that syncs the library
    (Zotero's local `libraryID` is not).
    """

    library_id: str
    zotero_library_id: int
    kind: str
    name: str


@dataclass(frozen=True)
class ItemMeta:
    """Bibliographic metadata of a (parent) item."""

    key: str
    library_id: str
    item_type: str
    title: str = ""
    creators: tuple[Creator, ...] = ()
    year: int | None = None
    publication: str | None = None
    doi: str | None = None
    url: str | None = None
    collections: tuple[str, ...] = ()  # paths, "Parent/Child" (what the lookup shows)
    extra: str | None = None  # Zotero's Extra field: arXiv ids and PMIDs live there (not indexed)
    collection_keys: tuple[str, ...] = ()  # the collections the item is directly in
    tags: tuple[str, ...] = ()
    #: When the item last changed ("YYYY-MM-DD HH:MM:SS", UTC; empty when unknown): full text is
    #: indexed most recently changed first. Not indexed, so no part of the content hash.
    modified: str = ""

    def payload(self) -> dict:
        """What the index keeps of the item on each chunk, and what a change of re-indexes.
        The Better BibTeX key only where the item has one, so that the entries of the others
        stay as they were."""
        payload = {
            "item_key": self.key,
            "item_type": self.item_type,
            "title": self.title,
            "creators": [c.model_dump() for c in self.creators],
            "year": self.year,
            "publication": self.publication,
            "doi": self.doi,
        }
        if citation_key := citation_key_in_extra(self.extra):
            payload["citation_key"] = citation_key
        return payload

    def placement(self) -> dict:
        """Where the item sits in its library (the `PLACEMENT_FIELDS` of the index): kept on
        each chunk too, but updated in place when it changes, never re-embedded."""
        return {"collection_keys": sorted(self.collection_keys), "tags": sorted(self.tags)}


@dataclass(frozen=True)
class Annotation:
    """A researcher's annotation in Zotero's PDF reader (Zotero 7 `itemAnnotations`)."""

    key: str
    type: str  # highlight, underline, note, text, image, ink
    text: str  # the highlighted or underlined passage
    comment: str  # the researcher's own words
    page: int | None  # 1-based page index in the file
    page_label: str  # the page number printed on the page ("235", "iv")


@dataclass(frozen=True)
class Source:
    """One thing to index: an attachment file, a note, the annotations made on an
    attachment, or a regular item's abstract, resolved to its parent item.

    `item` is the parent's metadata; for a standalone attachment or note it is the source's
    own (title from the attachment, no creators). An "annotations" source is keyed
    `<attachmentKey>-annotations` and names its file in `attachment_key`; an "abstract" source
    is keyed `<itemKey>-abstract` (`abstract_source`).
    """

    key: str
    library_id: str
    kind: str  # "attachment", "note", "annotations" or "abstract"
    item: ItemMeta
    content_type: str = ""
    path: Path | None = None
    note_html: str | None = None
    missing_reason: str | None = None  # why `path` is unusable, when it is
    missing_code: str = "missing_file"  # the failure reason reported for it
    sha256: str | None = None  # an uploaded file's digest, known before its bytes are at hand
    object_name: str | None = None  # where an uploaded file lives (lab-hosted library)
    annotations: tuple[Annotation, ...] = ()
    attachment_key: str | None = None
    abstract: str | None = None  # an "abstract" source's text: the item's Abstract field


@dataclass(frozen=True)
class Collection:
    """A collection of a library, in the tree its `parent_key` places it."""

    library_id: str
    key: str
    name: str
    parent_key: str | None = None


@dataclass
class LibrarySnapshot:
    """Everything the ingest needs from one Zotero data directory, read at one instant."""

    libraries: list[Library] = field(default_factory=list)
    collections: list[Collection] = field(default_factory=list)  # not in the trash
    items: dict[str, ItemMeta] = field(default_factory=dict)  # "<library_id>/<key>" -> meta
    sources: list[Source] = field(default_factory=list)  # not in the trash
    trashed: set[str] = field(default_factory=set)  # "<library_id>/<key>" of trashed items
    #: "<library_id>/<parent key>" -> URLs of the item's attachments (an "arXiv.org Snapshot"
    #: holds the preprint's arXiv URL), the trashed ones left out
    attachment_urls: dict[str, list[str]] = field(default_factory=dict)

    def sources_in(self, library_id: str) -> list[Source]:
        return [s for s in self.sources if s.library_id == library_id]


def snapshot_database(db_path: Path, target_dir: Path, attempts: int = 5) -> Path:
    """Copy a live `zotero.sqlite` into `target_dir` consistently (see zocrates_runtime.zotero_snapshot)."""
    return _snapshot(db_path, target_dir, attempts, error=ZoteroReadError)


def read_library(zotero_dir: Path, linked_base_dir: Path | None = None) -> LibrarySnapshot:
    """Read the libraries, items and indexable sources of a Zotero data directory;
    `linked_base_dir` resolves linked files stored as `attachments:<relative path>`."""
    zotero_dir = Path(zotero_dir)
    with tempfile.TemporaryDirectory(prefix="zocrates-zotero-") as tmp:
        copy = snapshot_database(zotero_dir / "zotero.sqlite", Path(tmp))
        con = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        try:
            return _read(con, zotero_dir, linked_base_dir)
        except sqlite3.DatabaseError as exc:
            raise ZoteroReadError(
                f"{zotero_dir / 'zotero.sqlite'} does not look like a Zotero 5-7 database: {exc}"
            ) from exc
        finally:
            con.close()


def _tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _read(con: sqlite3.Connection, zotero_dir: Path, linked_base_dir: Path | None) -> LibrarySnapshot:
    tables = _tables(con)
    item_types = "itemTypesCombined" if "itemTypesCombined" in tables else "itemTypes"
    fields = "fieldsCombined" if "fieldsCombined" in tables else "fields"
    base_map = "baseFieldMappingsCombined" if "baseFieldMappingsCombined" in tables else "baseFieldMappings"

    snap = LibrarySnapshot()
    lib_ids: dict[int, str] = {}
    groups = {r["libraryID"]: r for r in con.execute("SELECT groupID, libraryID, name FROM groups")}
    for row in con.execute("SELECT libraryID, type FROM libraries ORDER BY libraryID"):
        if row["type"] == "user":
            lib = Library("user", row["libraryID"], "user", "My Library")
        elif row["type"] == "group" and row["libraryID"] in groups:
            g = groups[row["libraryID"]]
            lib = Library(f"group-{g['groupID']}", row["libraryID"], "group", g["name"])
        else:  # feeds and publications are not the researcher's library
            continue
        lib_ids[row["libraryID"]] = lib.library_id
        snap.libraries.append(lib)

    # Field values, with base-field aliases (e.g. proceedingsTitle also as publicationTitle).
    base_of: dict[tuple[int, int], str] = {}
    for r in con.execute(
        f"SELECT m.itemTypeID, m.fieldID, f.fieldName FROM {base_map} m JOIN {fields} f ON f.fieldID = m.baseFieldID"
    ):
        base_of[(r[0], r[1])] = r[2]
    values: dict[int, dict[str, str]] = defaultdict(dict)
    for r in con.execute(
        f"SELECT d.itemID, i.itemTypeID, d.fieldID, f.fieldName, v.value FROM itemData d "
        f"JOIN items i ON i.itemID = d.itemID JOIN {fields} f ON f.fieldID = d.fieldID "
        f"JOIN itemDataValues v ON v.valueID = d.valueID"
    ):
        item_values = values[r["itemID"]]
        item_values[r["fieldName"]] = str(r["value"])
        base = base_of.get((r["itemTypeID"], r["fieldID"]))
        if base:
            item_values.setdefault(base, str(r["value"]))

    creators: dict[int, list[Creator]] = defaultdict(list)
    for r in con.execute(
        "SELECT ic.itemID, c.firstName, c.lastName, c.fieldMode, ct.creatorType "
        "FROM itemCreators ic JOIN creators c ON c.creatorID = ic.creatorID "
        "JOIN creatorTypes ct ON ct.creatorTypeID = ic.creatorTypeID "
        "ORDER BY ic.itemID, ic.orderIndex"
    ):
        if r["fieldMode"] == 1:  # single-field name (institution, mononym)
            creators[r["itemID"]].append(Creator(name=r["lastName"] or "", creator_type=r["creatorType"]))
        else:
            creators[r["itemID"]].append(
                Creator(first_name=r["firstName"] or "", last_name=r["lastName"] or "", creator_type=r["creatorType"])
            )

    collections = _collection_paths(con)
    rows_by_id = {
        r[0]: r
        for r in con.execute("SELECT collectionID, key, collectionName, parentCollectionID, libraryID FROM collections")
    }
    for cid in collections:
        r = rows_by_id[cid]
        if r[4] in lib_ids:
            parent = rows_by_id[r[3]][1] if r[3] in rows_by_id else None
            snap.collections.append(Collection(lib_ids[r[4]], r[1], r[2], parent))
    in_collections: dict[int, list[str]] = defaultdict(list)
    in_collection_keys: dict[int, list[str]] = defaultdict(list)
    for r in con.execute("SELECT collectionID, itemID FROM collectionItems"):
        if r[0] in collections:
            in_collections[r[1]].append(collections[r[0]])
            in_collection_keys[r[1]].append(rows_by_id[r[0]][1])
    tags: dict[int, list[str]] = defaultdict(list)
    for r in con.execute("SELECT it.itemID, t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID"):
        tags[r[0]].append(r[1])

    deleted = {r[0] for r in con.execute("SELECT itemID FROM deletedItems")}

    rows = con.execute(
        f"SELECT i.itemID, i.key, i.libraryID, i.dateModified, t.typeName FROM items i "
        f"JOIN {item_types} t ON t.itemTypeID = i.itemTypeID"
    ).fetchall()
    by_id: dict[int, sqlite3.Row] = {r["itemID"]: r for r in rows}
    metas: dict[int, ItemMeta] = {}
    for r in rows:
        if r["libraryID"] not in lib_ids:
            continue
        metas[r["itemID"]] = replace(
            _meta(r, lib_ids[r["libraryID"]], values[r["itemID"]], creators[r["itemID"]], in_collections[r["itemID"]]),
            collection_keys=tuple(sorted(in_collection_keys[r["itemID"]])),
            tags=tuple(sorted(set(tags[r["itemID"]]))),
            modified=str(r["dateModified"] or ""),
        )
        if r["typeName"] not in ("attachment", "note", "annotation"):
            snap.items[f"{metas[r['itemID']].library_id}/{r['key']}"] = metas[r["itemID"]]
            if r["itemID"] in deleted:
                snap.trashed.add(f"{metas[r['itemID']].library_id}/{r['key']}")
            elif abstract := abstract_source(metas[r["itemID"]], values[r["itemID"]].get("abstractNote")):
                snap.sources.append(abstract)

    def trashed(item_id: int, parent_id: int | None) -> bool:
        return item_id in deleted or (parent_id is not None and parent_id in deleted)

    for r in con.execute("SELECT itemID, parentItemID, linkMode, contentType, path FROM itemAttachments"):
        item_id, parent_id = r["itemID"], r["parentItemID"]
        if item_id not in metas:
            continue
        own = metas[item_id]
        if trashed(item_id, parent_id):
            snap.trashed.add(f"{own.library_id}/{own.key}")
            continue
        if parent_id in metas and (url := values[item_id].get("url")):
            snap.attachment_urls.setdefault(f"{own.library_id}/{metas[parent_id].key}", []).append(url)
        if r["linkMode"] == LINK_LINKED_URL:
            continue  # a bookmark: there is no file
        item = metas.get(parent_id) if parent_id is not None else None
        path, missing = _attachment_path(zotero_dir, own.key, r["linkMode"], r["path"], linked_base_dir)
        snap.sources.append(
            Source(
                key=own.key,
                library_id=own.library_id,
                kind="attachment",
                item=item or own,
                content_type=(r["contentType"] or "").lower(),
                path=path,
                missing_reason=missing[1] if missing else None,
                missing_code=missing[0] if missing else MISSING_FILE,
            )
        )

    if "itemAnnotations" in tables:
        snap.sources += _annotation_sources(con, metas, by_id, deleted)

    for r in con.execute("SELECT itemID, parentItemID, note FROM itemNotes"):
        item_id, parent_id = r["itemID"], r["parentItemID"]
        if item_id not in metas or by_id[item_id]["typeName"] != "note":
            continue  # attachments keep their own notes here too; only real notes count
        own = metas[item_id]
        if trashed(item_id, parent_id):
            snap.trashed.add(f"{own.library_id}/{own.key}")
            continue
        if not (r["note"] or "").strip():
            continue
        item = metas.get(parent_id) if parent_id is not None else None
        snap.sources.append(
            Source(
                key=own.key,
                library_id=own.library_id,
                kind="note",
                item=item or own,
                content_type="text/html",
                note_html=r["note"],
            )
        )
    return snap


ABSTRACT_SUFFIX = "-abstract"
#: An Abstract field shorter than this is a placeholder ("n/a", "No abstract"), not an abstract.
MIN_ABSTRACT_CHARS = 80


def abstract_source(item: ItemMeta, abstract: str | None) -> Source | None:
    """The item's abstract as a source of its own, or None when it has none worth reading.

    Every item with an abstract answers from it, with or without a file: a library whose PDFs
    are still being read (or were never attached) answers abstract-level questions at once."""
    text = (abstract or "").strip()
    if len(text) < MIN_ABSTRACT_CHARS:
        return None
    return Source(key=item.key + ABSTRACT_SUFFIX, library_id=item.library_id, kind="abstract", item=item, abstract=text)


#: Zotero.Annotations.ANNOTATION_TYPE_* (chrome/content/zotero/xpcom/annotations.js).
ANNOTATION_TYPES = {1: "highlight", 2: "note", 3: "image", 4: "ink", 5: "underline", 6: "text"}
ANNOTATIONS_SUFFIX = "-annotations"


def _annotation_sources(
    con: sqlite3.Connection, metas: dict[int, ItemMeta], by_id: dict[int, sqlite3.Row], deleted: set[int]
) -> list[Source]:
    """One source per attachment that holds annotations with words in them (highlights,
    comments), resolved to the attachment's parent item; trashed ones are left out."""
    attachment_parent = {r[0]: r[1] for r in con.execute("SELECT itemID, parentItemID FROM itemAttachments")}
    by_attachment: dict[int, list[Annotation]] = defaultdict(list)
    for r in con.execute(
        "SELECT itemID, parentItemID, type, text, comment, pageLabel, position "
        "FROM itemAnnotations ORDER BY parentItemID, sortIndex"
    ):
        attachment_id = r["parentItemID"]
        if r["itemID"] not in metas or attachment_id not in metas or attachment_id not in attachment_parent:
            continue
        if {r["itemID"], attachment_id, attachment_parent[attachment_id]} & deleted:
            continue
        text, comment = (r["text"] or "").strip(), (r["comment"] or "").strip()
        if not (text or comment):
            continue  # an image or ink mark without a comment holds no words
        by_attachment[attachment_id].append(
            Annotation(
                key=by_id[r["itemID"]]["key"],
                type=ANNOTATION_TYPES.get(r["type"], "other"),
                text=text,
                comment=comment,
                page=_page_index(r["position"]),
                page_label=(r["pageLabel"] or "").strip(),
            )
        )
    sources = []
    for attachment_id, marks in by_attachment.items():
        attachment = metas[attachment_id]
        parent = attachment_parent[attachment_id]
        sources.append(
            Source(
                key=attachment.key + ANNOTATIONS_SUFFIX,
                library_id=attachment.library_id,
                kind="annotations",
                item=metas.get(parent, attachment) if parent is not None else attachment,
                annotations=tuple(marks),
                attachment_key=attachment.key,
            )
        )
    return sources


def _page_index(position: str | None) -> int | None:
    """The 1-based page of an annotation: its position's `pageIndex` (PDF). None without one
    (an EPUB's or a snapshot's annotation): its label is no place in a file to open."""
    try:
        index = json.loads(position or "{}").get("pageIndex")
    except (ValueError, AttributeError):
        return None
    return index + 1 if isinstance(index, int) and index >= 0 else None


def _collection_paths(con: sqlite3.Connection) -> dict[int, str]:
    """collectionID -> "Parent/Child" path; collections in the trash are left out."""
    deleted = set()
    if "deletedCollections" in _tables(con):
        deleted = {r[0] for r in con.execute("SELECT collectionID FROM deletedCollections")}
    rows = {
        r[0]: (r[1], r[2])
        for r in con.execute("SELECT collectionID, collectionName, parentCollectionID FROM collections")
    }
    paths: dict[int, str] = {}
    for cid in rows:
        parts, cur, seen = [], cid, set()
        while cur is not None and cur in rows and cur not in seen:
            if cur in deleted:
                break
            seen.add(cur)
            parts.append(rows[cur][0])
            cur = rows[cur][1]
        else:
            paths[cid] = "/".join(reversed(parts))
    return paths


def _meta(
    row: sqlite3.Row, library_id: str, values: dict[str, str], creators: list[Creator], collections: list[str]
) -> ItemMeta:
    year = year_of(values.get("date", ""))
    doi = doi_of(values.get("DOI"), values.get("extra", ""), values.get("url", ""))
    publication = values.get("publicationTitle") or values.get("publisher") or None
    return ItemMeta(
        key=row["key"],
        library_id=library_id,
        item_type=row["typeName"],
        title=values.get("title", "").strip(),
        creators=tuple(creators),
        year=year,
        publication=publication,
        doi=doi,
        url=values.get("url") or None,
        collections=tuple(sorted(collections)),
        extra=values.get("extra") or None,
    )


def year_of(date: str) -> int | None:
    """The year in a Zotero date field ("2014-03-02", "March 2014", "2014")."""
    return int(m.group(1)) if (m := _YEAR_RE.search(date)) else None


def doi_of(doi: str | None, *elsewhere: str) -> str | None:
    """The item's DOI: its DOI field, else one written in Extra ("DOI: 10....") or the URL, as
    item types without a DOI field keep it."""
    if doi:
        return doi
    for text in elsewhere:
        if m := _DOI_RE.search(text):
            return m.group(1).rstrip(".,;")
    return None


def synced_item_meta(item: SyncedItem, library_id: str) -> ItemMeta:
    """The index's bibliographic metadata of an item the plugin synced (a hosted library), read
    as `_meta` reads the same item from zotero.sqlite."""
    year = item.year if item.year is not None else year_of(item.date or "")
    return ItemMeta(
        key=item.key,
        library_id=library_id,
        item_type=item.item_type,
        title=item.title.strip(),
        creators=tuple(item.creators),
        year=year,
        publication=item.publication or None,
        doi=doi_of(item.doi, item.extra or "", item.url or ""),
        url=item.url or None,
        extra=item.extra or None,
        collection_keys=tuple(sorted(set(item.collections))),
        tags=tuple(sorted(set(item.tags))),
    )


def _attachment_path(
    zotero_dir: Path, key: str, link_mode: int | None, stored: str | None, linked_base_dir: Path | None
) -> tuple[Path | None, tuple[str, str] | None]:
    """The file of an attachment, and (reason code, detail) when it cannot be read."""
    if not stored:
        return None, (MISSING_FILE, "the attachment has no file path")
    if stored.startswith("storage:"):
        path = zotero_dir / "storage" / key / stored.removeprefix("storage:")
    elif stored.startswith(BASE_PATH_PLACEHOLDER):
        relative = stored.removeprefix(BASE_PATH_PLACEHOLDER).replace("\\", "/")  # stored with "/" on every OS
        if linked_base_dir is None:
            return None, (
                NO_BASE_DIR,
                f"linked file base directory not configured: {relative!r} is relative to "
                "Zotero's Linked Attachment Base Directory (Settings > Advanced > Files and Folders); "
                "set ZOCRATES_ZOTERO_BASE_DIR to it",
            )
        path = Path(linked_base_dir) / relative
    elif link_mode == LINK_LINKED_FILE and os.path.isabs(stored):
        path = Path(stored)
    else:
        return None, (MISSING_FILE, f"unrecognised attachment path {stored!r}")
    if not path.is_file():
        return path, (MISSING_FILE, f"file not found: {path}")
    return path, None


def base_dir_from_prefs(zotero_dir: Path, home: Path | None = None) -> Path | None:
    """Zotero's Linked Attachment Base Directory, read from the prefs.js of the Zotero profile
    that uses `zotero_dir` as its data directory (None when no such profile sets one).

    Profiles live in ~/.zotero/zotero (Linux), ~/Library/Application Support/Zotero/Profiles
    (macOS) or %APPDATA%\\Zotero\\Zotero\\Profiles (Windows). As in Zotero's
    dataDirectory.js, a profile uses `extensions.zotero.dataDir` only when
    `extensions.zotero.useDataDir` is set, else the default data directory, ~/Zotero.
    """
    home = Path(home or Path.home())
    roots = [home / ".zotero" / "zotero", home / "Library" / "Application Support" / "Zotero" / "Profiles"]
    if appdata := os.environ.get("APPDATA"):
        roots.append(Path(appdata) / "Zotero" / "Zotero" / "Profiles")
    want = _same_path_key(zotero_dir)
    for prefs_js in sorted(p for root in roots if root.is_dir() for p in root.glob("*/prefs.js")):
        prefs = _read_prefs(prefs_js)
        custom = prefs.get("extensions.zotero.useDataDir") is True and prefs.get("extensions.zotero.dataDir")
        data_dir = str(custom) if custom else str(home / "Zotero")
        base = prefs.get("extensions.zotero.baseAttachmentPath")
        if base and _same_path_key(Path(data_dir)) == want:
            return Path(base)
    return None


_USER_PREF = re.compile(r'^\s*user_pref\(\s*("(?:[^"\\]|\\.)*")\s*,\s*("(?:[^"\\]|\\.)*"|true|false|-?\d+)\s*\)\s*;')


def _read_prefs(path: Path) -> dict[str, object]:
    """The `user_pref(name, value);` lines of a Firefox-style prefs.js (values are JSON-like)."""
    prefs: dict[str, object] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return prefs
    for line in text.splitlines():
        if m := _USER_PREF.match(line):
            try:
                prefs[json.loads(m.group(1))] = json.loads(m.group(2))
            except ValueError:
                continue
    return prefs


def _same_path_key(path: Path) -> str:
    try:
        return str(Path(path).expanduser().resolve())
    except OSError:
        return str(path)
