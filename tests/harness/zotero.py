"""Build real Zotero data directories for tests and benchmarks.

The database is created from Zotero's own published schema (`userdata.sql`, `system.sql`,
`triggers.sql`) and its global schema `zotero-schema.json` is loaded the way Zotero does at
start-up: item types, fields (each base field right after the first field mapped to it) and
creator types get ids in the order they first appear, in both the plain and the `*Combined`
tables. Rows are then inserted as Zotero inserts them; files go to `storage/<key>/<name>`.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

#: Zotero item keys: 8 characters from this alphabet (Zotero.Utilities.generateObjectKey).
KEY_ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"


class ZoteroLibraryBuilder:
    """A fresh Zotero data directory at `zotero_dir`, built from the schema in `schema_dir`."""

    def __init__(self, zotero_dir: Path, schema_dir: Path, seed: int = 7):
        self.dir = Path(zotero_dir)
        self.path = self.dir / "zotero.sqlite"
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "storage").mkdir(exist_ok=True)
        self._rng = random.Random(seed)
        self._keys: set[str] = set()
        self.con = sqlite3.connect(self.path)
        self.con.execute("PRAGMA synchronous=OFF")  # test data: no need to wait for the disk
        for name in ("userdata.sql", "system.sql", "triggers.sql"):
            self.con.executescript((Path(schema_dir) / name).read_text())
        self._load_global_schema(json.loads((Path(schema_dir) / "zotero-schema.json").read_text()))
        self.con.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (1, 'user', 1, 1)")
        self.con.commit()

    def _load_global_schema(self, schema: dict) -> None:
        con = self.con
        self.type_ids: dict[str, int] = {}
        self.field_ids: dict[str, int] = {}
        creator_ids: dict[str, int] = {}

        def field_id(name: str) -> int:
            if name not in self.field_ids:
                self.field_ids[name] = len(self.field_ids) + 1
                con.execute("INSERT INTO fields VALUES (?, ?, NULL)", (self.field_ids[name], name))
                con.execute("INSERT INTO fieldsCombined VALUES (?, ?, NULL, NULL, 0)", (self.field_ids[name], name))
            return self.field_ids[name]

        for type_id, item_type in enumerate(schema["itemTypes"], start=1):
            name = item_type["itemType"]
            self.type_ids[name] = type_id
            con.execute("INSERT INTO itemTypes VALUES (?, ?, NULL, 1)", (type_id, name))
            con.execute("INSERT INTO itemTypesCombined VALUES (?, ?, 1, 0)", (type_id, name))
            for order, f in enumerate(item_type["fields"]):
                fid = field_id(f["field"])
                con.execute("INSERT INTO itemTypeFields VALUES (?, ?, NULL, ?)", (type_id, fid, order))
                con.execute("INSERT INTO itemTypeFieldsCombined VALUES (?, ?, NULL, ?)", (type_id, fid, order))
                if "baseField" in f:
                    base = field_id(f["baseField"])
                    con.execute("INSERT INTO baseFieldMappings VALUES (?, ?, ?)", (type_id, base, fid))
                    con.execute("INSERT INTO baseFieldMappingsCombined VALUES (?, ?, ?)", (type_id, base, fid))
            for c in item_type["creatorTypes"]:
                if c["creatorType"] not in creator_ids:
                    creator_ids[c["creatorType"]] = len(creator_ids) + 1
                    con.execute(
                        "INSERT INTO creatorTypes VALUES (?, ?)", (creator_ids[c["creatorType"]], c["creatorType"])
                    )
                con.execute(
                    "INSERT INTO itemTypeCreatorTypes VALUES (?, ?, ?)",
                    (type_id, creator_ids[c["creatorType"]], int(c.get("primary", False))),
                )
        self.creator_type_ids = creator_ids
        con.execute("INSERT INTO version VALUES ('globalSchema', ?)", (schema["version"],))
        con.execute("INSERT INTO version VALUES ('userdata', 129)")

    def new_key(self) -> str:
        """A fresh item key, never repeated (keys are unique per library; 100,000-item
        libraries would otherwise meet a birthday collision now and then)."""
        while (key := "".join(self._rng.choice(KEY_ALPHABET) for _ in range(8))) in self._keys:
            pass
        self._keys.add(key)
        return key

    def add_group(self, group_id: int, name: str) -> int:
        """Add a group library; returns its local libraryID."""
        cur = self.con.execute("INSERT INTO libraries (type, editable, filesEditable) VALUES ('group', 1, 1)")
        library_id = cur.lastrowid
        self.con.execute("INSERT INTO groups VALUES (?, ?, ?, '', 0)", (group_id, library_id, name))
        self.con.commit()
        return library_id

    def add_item(
        self,
        item_type: str,
        fields: dict[str, str] | None = None,
        creators: list[tuple[str, str, str]] | list[str] = (),
        library_id: int = 1,
        key: str | None = None,
        commit: bool = True,
    ) -> tuple[int, str]:
        """Add a regular item. `creators`: (first, last, creatorType) or a single-field name."""
        key = key or self.new_key()
        cur = self.con.execute(
            "INSERT INTO items (itemTypeID, libraryID, key) VALUES (?, ?, ?)",
            (self.type_ids[item_type], library_id, key),
        )
        item_id = cur.lastrowid
        for name, value in (fields or {}).items():
            self._set_field(item_id, name, value)
        for order, creator in enumerate(creators):
            if isinstance(creator, str):
                first, last, ctype, mode = "", creator, "author", 1
            else:
                (first, last, ctype), mode = creator, 0
            self.con.execute(
                "INSERT OR IGNORE INTO creators (firstName, lastName, fieldMode) VALUES (?, ?, ?)", (first, last, mode)
            )
            creator_id = self.con.execute(
                "SELECT creatorID FROM creators WHERE firstName=? AND lastName=? AND fieldMode=?", (first, last, mode)
            ).fetchone()[0]
            self.con.execute(
                "INSERT INTO itemCreators VALUES (?, ?, ?, ?)",
                (item_id, creator_id, self.creator_type_ids[ctype], order),
            )
        if commit:
            self.con.commit()
        return item_id, key

    def add_items(self, rows) -> int:
        """Add many (item type, fields) items in one transaction (for 100,000-item libraries)."""
        count = 0
        for item_type, fields in rows:
            self.add_item(item_type, fields, commit=False)
            count += 1
        self.con.commit()
        return count

    def add_feed(self, name: str) -> int:
        """Add an RSS feed library (not part of the user's library); returns its libraryID."""
        library_id = self.con.execute(
            "INSERT INTO libraries (type, editable, filesEditable) VALUES ('feed', 0, 0)"
        ).lastrowid
        self.con.execute(
            "INSERT INTO feeds (libraryID, name, url) VALUES (?, ?, ?)",
            (library_id, name, f"https://example.org/{library_id}.rss"),
        )
        self.con.commit()
        return library_id

    def add_link_attachment(self, parent_id: int, url: str, title: str = "Snapshot") -> tuple[int, str]:
        """A linked-URL attachment of `parent_id` (Zotero's "arXiv.org Snapshot" and the like)."""
        item_id, key = self.add_item("attachment", {"title": title, "url": url})
        self.con.execute(
            "INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType) VALUES (?, ?, 3, 'text/html')",
            (item_id, parent_id),
        )
        self.con.commit()
        return item_id, key

    def _set_field(self, item_id: int, name: str, value: str) -> None:
        self.con.execute("INSERT OR IGNORE INTO itemDataValues (value) VALUES (?)", (value,))
        value_id = self.con.execute("SELECT valueID FROM itemDataValues WHERE value=?", (value,)).fetchone()[0]
        self.con.execute("INSERT OR REPLACE INTO itemData VALUES (?, ?, ?)", (item_id, self.field_ids[name], value_id))

    def add_attachment(
        self,
        parent_id: int | None,
        filename: str,
        content: bytes,
        content_type: str = "application/pdf",
        library_id: int = 1,
        title: str | None = None,
        link_mode: int = 0,
        key: str | None = None,
    ) -> tuple[int, str]:
        """Add an imported file attachment (stored under storage/<key>/<filename>)."""
        item_id, key = self.add_item("attachment", {"title": title or filename}, library_id=library_id, key=key)
        folder = self.dir / "storage" / key
        folder.mkdir(parents=True, exist_ok=True)
        (folder / filename).write_bytes(content)
        self.con.execute(
            "INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) VALUES (?, ?, ?, ?, ?)",
            (item_id, parent_id, link_mode, content_type, f"storage:{filename}"),
        )
        self.con.commit()
        return item_id, key

    def add_linked_file(
        self,
        parent_id: int | None,
        stored_path: str,
        content_type: str = "application/pdf",
        library_id: int = 1,
        title: str | None = None,
    ) -> tuple[int, str]:
        """A linked-file attachment (linkMode 2) whose `itemAttachments.path` is `stored_path` as
        Zotero writes it: absolute, or `attachments:<relative path>` under the Linked Attachment
        Base Directory. The file itself is the caller's to place (or not)."""
        item_id, key = self.add_item(
            "attachment", {"title": title or stored_path.rsplit("/", 1)[-1]}, library_id=library_id
        )
        self.con.execute(
            "INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) VALUES (?, ?, 2, ?, ?)",
            (item_id, parent_id, content_type, stored_path),
        )
        self.con.commit()
        return item_id, key

    def replace_attachment_file(self, key: str, filename: str, content: bytes) -> None:
        (self.dir / "storage" / key / filename).write_bytes(content)

    def add_note(self, parent_id: int | None, html: str, library_id: int = 1) -> tuple[int, str]:
        item_id, key = self.add_item("note", library_id=library_id)
        self.con.execute(
            "INSERT INTO itemNotes (itemID, parentItemID, note, title) VALUES (?, ?, ?, ?)",
            (item_id, parent_id, html, ""),
        )
        self.con.commit()
        return item_id, key

    def add_annotation(
        self,
        attachment_id: int,
        annotation_type: int = 1,
        text: str = "",
        comment: str = "",
        page_label: str = "",
        page_index: int = 0,
        library_id: int = 1,
    ) -> tuple[int, str]:
        """A Zotero 7 PDF annotation on `attachment_id` (type 1 highlight, 2 note, 3 image, 4 ink,
        5 underline, 6 text), with the position and sort index the reader writes."""
        item_id, key = self.add_item("annotation", library_id=library_id)
        position = json.dumps({"pageIndex": page_index, "rects": [[72.0, 700.0, 300.0, 712.0]]})
        sort_index = f"{page_index:05d}|{item_id:06d}|00080"
        self.con.execute(
            "INSERT INTO itemAnnotations (itemID, parentItemID, type, authorName, text, comment, color, pageLabel, "
            "sortIndex, position, isExternal) VALUES (?, ?, ?, '', ?, ?, '#ffd400', ?, ?, ?, 0)",
            (item_id, attachment_id, annotation_type, text, comment, page_label, sort_index, position),
        )
        self.con.commit()
        return item_id, key

    def add_collection(self, name: str, item_ids: list[int], parent_id: int | None = None, library_id: int = 1) -> int:
        cur = self.con.execute(
            "INSERT INTO collections (collectionName, parentCollectionID, libraryID, key) VALUES (?, ?, ?, ?)",
            (name, parent_id, library_id, self.new_key()),
        )
        for order, item_id in enumerate(item_ids):
            self.con.execute("INSERT INTO collectionItems VALUES (?, ?, ?)", (cur.lastrowid, item_id, order))
        self.con.commit()
        return cur.lastrowid

    def collection_key(self, collection_id: int) -> str:
        return self.con.execute("SELECT key FROM collections WHERE collectionID=?", (collection_id,)).fetchone()[0]

    def set_collections(self, item_id: int, collection_ids: list[int]) -> None:
        """Move an item: it is in exactly these collections afterwards."""
        self.con.execute("DELETE FROM collectionItems WHERE itemID=?", (item_id,))
        for collection_id in collection_ids:
            self.con.execute("INSERT INTO collectionItems VALUES (?, ?, 0)", (collection_id, item_id))
        self.con.commit()

    def add_tag(self, item_id: int, name: str, tag_type: int = 0) -> None:
        """Tag an item (type 0: added by the user, 1: automatic), as Zotero's `tags`/`itemTags`."""
        self.con.execute("INSERT OR IGNORE INTO tags (name) VALUES (?)", (name,))
        tag_id = self.con.execute("SELECT tagID FROM tags WHERE name=?", (name,)).fetchone()[0]
        self.con.execute(
            "INSERT OR IGNORE INTO itemTags (itemID, tagID, type) VALUES (?, ?, ?)", (item_id, tag_id, tag_type)
        )
        self.con.commit()

    def remove_tag(self, item_id: int, name: str) -> None:
        self.con.execute(
            "DELETE FROM itemTags WHERE itemID=? AND tagID=(SELECT tagID FROM tags WHERE name=?)", (item_id, name)
        )
        self.con.commit()

    def trash(self, item_id: int) -> None:
        self.con.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (item_id,))
        self.con.commit()

    def untrash(self, item_id: int) -> None:
        self.con.execute("DELETE FROM deletedItems WHERE itemID=?", (item_id,))
        self.con.commit()

    def close(self) -> None:
        self.con.close()
