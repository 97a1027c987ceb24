"""Rebuild the demo library's database, demo/zotero/zotero.sqlite, from demo/library.toml.

`python -m tools.demo_library` checks every PDF under demo/zotero/storage against the SHA-256
recorded for it, builds a fresh database from Zotero's own schema (the shared fixtures'
`zotero/schema`, or `--schema DIR`) with the Zotero library builder the tests use, and
replaces the committed one. `--check` builds it in a temporary directory and compares the two
instead (exit 1 if they differ). The database is never edited by hand.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sqlite3
import sys
import tempfile
import tomllib
from pathlib import Path

# The Zotero library builder lives with the tests (tests/harness/zotero.py), as for bench/.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from harness.zotero import ZoteroLibraryBuilder  # noqa: E402

DEMO = ROOT / "demo"
METADATA = DEMO / "library.toml"
ZOTERO_DIR = DEMO / "zotero"
SCHEMA = ROOT.parent / "shared" / "fixtures" / "zotero" / "schema"


class DemoLibraryError(Exception):
    """The metadata or a file does not match what the demo library must hold."""


def load(metadata: Path = METADATA) -> dict:
    """The demo's metadata, with every paper's PDF checked against its recorded SHA-256."""
    library = tomllib.loads(metadata.read_text(encoding="utf-8"))
    for paper in library["paper"]:
        pdf = paper["pdf"]
        path = ZOTERO_DIR / "storage" / pdf["key"] / pdf["name"]
        if not path.is_file():
            raise DemoLibraryError(
                f"{paper['key']}: no file at {path}; the PDF belongs under storage/<pdf.key>/<pdf.name>"
            )
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != pdf["sha256"]:
            raise DemoLibraryError(
                f"{path}: SHA-256 {digest}, but library.toml records "
                f"{pdf['sha256']}; the demo holds the published files unchanged"
            )
    return library


def zotero_date(text: str) -> str:
    """A date as Zotero stores it: `YYYY-MM-DD <as written>`, unknown parts as 00."""
    parts = text.split("-")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise DemoLibraryError(f"date {text!r}: expected YYYY, YYYY-MM or YYYY-MM-DD")
    year, month, day = (parts + ["00", "00"])[:3]
    return f"{year}-{month:0>2}-{day:0>2} {text}"


def build(target: Path, schema_dir: Path = SCHEMA, metadata: Path = METADATA) -> Path:
    """Build the demo library into the empty directory `target`; returns its zotero.sqlite."""
    library = load(metadata)
    builder = ZoteroLibraryBuilder(target, schema_dir)
    allowed = _fields_by_type(builder.con)
    for paper in library["paper"]:
        fields = dict(paper["fields"])
        unknown = set(fields) - allowed[paper["item_type"]]
        if unknown:
            raise DemoLibraryError(
                f"{paper['key']}: {sorted(unknown)} are no {paper['item_type']} fields in Zotero's schema"
            )
        if "date" in fields:
            fields["date"] = zotero_date(fields["date"])
        creators = [(*reversed(name.split(", ", 1)), "author") for name in paper["creators"]]
        item_id, _ = builder.add_item(paper["item_type"], fields, creators, key=paper["key"])
        pdf = paper["pdf"]
        content = (ZOTERO_DIR / "storage" / pdf["key"] / pdf["name"]).read_bytes()
        builder.add_attachment(item_id, pdf["name"], content, title="Full Text PDF", key=pdf["key"])
    added = library["added"]
    builder.con.execute(
        "UPDATE items SET dateAdded = ?, dateModified = ?, clientDateModified = ?", (added, added, added)
    )
    builder.con.commit()
    builder.con.execute("VACUUM")
    builder.close()
    return builder.path


def _fields_by_type(con: sqlite3.Connection) -> dict[str, set[str]]:
    allowed: dict[str, set[str]] = {}
    for type_name, field in con.execute(
        "SELECT t.typeName, f.fieldName FROM itemTypeFields x JOIN itemTypes t USING (itemTypeID) "
        "JOIN fields f USING (fieldID)"
    ):
        allowed.setdefault(type_name, set()).add(field)
    return allowed


def dump(db: Path) -> list[str]:
    """The database as SQL statements, for comparing two builds."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return list(con.iterdump())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.demo_library", description=__doc__.split("\n")[0])
    parser.add_argument("--schema", type=Path, default=SCHEMA, help=f"Zotero's schema directory (default {SCHEMA})")
    parser.add_argument("--check", action="store_true", help="compare with the committed database, change nothing")
    args = parser.parse_args(argv)
    if not (args.schema / "userdata.sql").is_file():
        print(
            f"no Zotero schema at {args.schema} (userdata.sql, system.sql, triggers.sql, "
            "zotero-schema.json); pass --schema DIR",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="zocrates-demo-") as tmp:
        try:
            built = build(Path(tmp) / "zotero", args.schema)
        except DemoLibraryError as exc:
            print(f"demo library: {exc}", file=sys.stderr)
            return 1
        committed = ZOTERO_DIR / "zotero.sqlite"
        if args.check:
            same = committed.is_file() and dump(built) == dump(committed)
            print(f"{committed}: {'up to date' if same else 'differs from library.toml; rebuild it'}")
            return 0 if same else 1
        shutil.copyfile(built, committed)
    print(f"wrote {committed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
