"""Build real Zotero databases for the discovery tests and benchmark.

The database is created from Zotero's own published schema (`userdata.sql`, `system.sql`,
`triggers.sql`), and the global schema `zotero-schema.json` is loaded as Zotero loads it at
start-up (item types, fields with their base-field mappings, in both the plain and `*Combined`
tables); items are then inserted as Zotero stores them (`items`, `itemData`, `itemDataValues`,
`deletedItems`, `itemAttachments`). The same approach as the retrieval service's test factory,
kept separate because services share nothing but contracts and runtime.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterable
from pathlib import Path

#: Zotero item keys: 8 characters from this alphabet (Zotero.Utilities.generateObjectKey).
KEY_ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"


class ZoteroDatabase:
    """A fresh `zotero.sqlite` in `zotero_dir`, built from the schema files in `schema_dir`."""

    def __init__(self, zotero_dir: Path, schema_dir: Path, seed: int = 7):
        self.dir = Path(zotero_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "zotero.sqlite"
        self._rng = random.Random(seed)
        self._keys: set[str] = set()
        self.con = sqlite3.connect(self.path)
        # A throwaway test database: no fsync per commit (Zotero itself runs with its defaults).
        self.con.execute("PRAGMA synchronous=OFF")
        for name in ("userdata.sql", "system.sql", "triggers.sql"):
            self.con.executescript((Path(schema_dir) / name).read_text())
        self._load_global_schema(json.loads((Path(schema_dir) / "zotero-schema.json").read_text()))
        self.con.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (1, 'user', 1, 1)")
        self.con.commit()

    def _load_global_schema(self, schema: dict) -> None:
        con = self.con
        self.type_ids: dict[str, int] = {}
        self.field_ids: dict[str, int] = {}

        def field_id(name: str) -> int:
            if name not in self.field_ids:
                self.field_ids[name] = len(self.field_ids) + 1
                con.execute("INSERT INTO fields VALUES (?, ?, NULL)", (self.field_ids[name], name))
                con.execute("INSERT INTO fieldsCombined VALUES (?, ?, NULL, NULL, 0)", (self.field_ids[name], name))
            return self.field_ids[name]

        for type_id, item_type in enumerate(schema["itemTypes"], start=1):
            self.type_ids[item_type["itemType"]] = type_id
            con.execute("INSERT INTO itemTypes VALUES (?, ?, NULL, 1)", (type_id, item_type["itemType"]))
            con.execute("INSERT INTO itemTypesCombined VALUES (?, ?, 1, 0)", (type_id, item_type["itemType"]))
            for order, f in enumerate(item_type["fields"]):
                fid = field_id(f["field"])
                con.execute("INSERT INTO itemTypeFields VALUES (?, ?, NULL, ?)", (type_id, fid, order))
                con.execute("INSERT INTO itemTypeFieldsCombined VALUES (?, ?, NULL, ?)", (type_id, fid, order))
                if "baseField" in f:
                    base = field_id(f["baseField"])
                    con.execute("INSERT INTO baseFieldMappings VALUES (?, ?, ?)", (type_id, base, fid))
                    con.execute("INSERT INTO baseFieldMappingsCombined VALUES (?, ?, ?)", (type_id, base, fid))
        con.execute("INSERT INTO version VALUES ('globalSchema', ?)", (schema["version"],))
        con.execute("INSERT INTO version VALUES ('userdata', 129)")

    def new_key(self) -> str:
        while True:
            key = "".join(self._rng.choice(KEY_ALPHABET) for _ in range(8))
            if key not in self._keys:
                self._keys.add(key)
                return key

    def add_group(self, group_id: int, name: str) -> int:
        """Add a group library; returns its local libraryID."""
        library_id = self.con.execute(
            "INSERT INTO libraries (type, editable, filesEditable) VALUES ('group', 1, 1)").lastrowid
        self.con.execute("INSERT INTO groups VALUES (?, ?, ?, '', 0)", (group_id, library_id, name))
        self.con.commit()
        return library_id

    def add_feed(self, name: str) -> int:
        """Add an RSS feed library (not part of the user's library); returns its libraryID."""
        library_id = self.con.execute(
            "INSERT INTO libraries (type, editable, filesEditable) VALUES ('feed', 0, 0)").lastrowid
        self.con.execute("INSERT INTO feeds (libraryID, name, url) VALUES (?, ?, ?)",
                         (library_id, name, f"https://example.org/{library_id}.rss"))
        self.con.commit()
        return library_id

    def add_item(self, item_type: str, fields: dict[str, str] | None = None, *, library_id: int = 1,
                 key: str | None = None, commit: bool = True) -> tuple[int, str]:
        """Add an item with `fields` (Zotero field names: title, DOI, url, extra, ...)."""
        key = key or self.new_key()
        item_id = self.con.execute("INSERT INTO items (itemTypeID, libraryID, key) VALUES (?, ?, ?)",
                                   (self.type_ids[item_type], library_id, key)).lastrowid
        for name, value in (fields or {}).items():
            self.con.execute("INSERT OR IGNORE INTO itemDataValues (value) VALUES (?)", (value,))
            value_id = self.con.execute("SELECT valueID FROM itemDataValues WHERE value = ?", (value,)).fetchone()[0]
            self.con.execute("INSERT INTO itemData VALUES (?, ?, ?)", (item_id, self.field_ids[name], value_id))
        if commit:
            self.con.commit()
        return item_id, key

    def add_items(self, rows: Iterable[tuple[str, dict[str, str]]]) -> int:
        """Add many (item type, fields) items in one transaction (for 100,000-item libraries)."""
        count = 0
        for item_type, fields in rows:
            self.add_item(item_type, fields, commit=False)
            count += 1
        self.con.commit()
        return count

    def add_attachment(self, parent_id: int, url: str, title: str = "Snapshot") -> tuple[int, str]:
        """A linked-URL attachment of `parent_id` (Zotero's "arXiv.org Snapshot" and the like)."""
        item_id, key = self.add_item("attachment", {"title": title, "url": url})
        self.con.execute("INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType) VALUES (?, ?, 3, 'text/html')",
                         (item_id, parent_id))
        self.con.commit()
        return item_id, key

    def trash(self, item_id: int) -> None:
        self.con.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (item_id,))
        self.con.commit()

    def close(self) -> None:
        self.con.close()
