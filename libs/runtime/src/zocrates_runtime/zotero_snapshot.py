"""A consistent, private copy of a live `zotero.sqlite`, read without disturbing Zotero.

Zotero holds an exclusive lock on its database while it runs, so neither a read-only
connection nor SQLite's backup API can open it, and `immutable=1` on the live file could read
a half-written page unnoticed. Instead the database and its `-journal`/`-wal` companions are
copied while their size and mtime stay unchanged (retried when Zotero writes meanwhile), and
the copy is opened once read-write (replaying a copied WAL, rolling back a hot journal) and
checked with `PRAGMA quick_check`. Retrieval and discovery both read the library this way.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

COMPANIONS = ("-journal", "-wal")


class ZoteroSnapshotError(RuntimeError):
    """No consistent copy could be taken (missing file, Zotero kept writing, damaged file)."""


def database_signature(db_path: Path) -> tuple:
    """What changes when Zotero writes: size and mtime of the database and its companions."""
    db_path = Path(db_path)
    out = []
    for path in (db_path, *(db_path.with_name(db_path.name + s) for s in COMPANIONS)):
        try:
            stat = path.stat()
            out.append((stat.st_size, stat.st_mtime_ns))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


def snapshot_database(
    db_path: Path, target_dir: Path, attempts: int = 5, *, error: type[Exception] = ZoteroSnapshotError
) -> Path:
    """Copy a live `zotero.sqlite` into `target_dir` consistently and return the copy's path.

    `error` is the exception class raised on failure, so each caller keeps its own.
    """
    db_path = Path(db_path)
    if not db_path.is_file():
        raise error(f"no Zotero database at {db_path}; expected <zotero_dir>/zotero.sqlite")
    target = Path(target_dir) / "zotero.sqlite"
    for _ in range(attempts):
        before = database_signature(db_path)
        shutil.copyfile(db_path, target)
        for suffix in COMPANIONS:
            source = db_path.with_name(db_path.name + suffix)
            copy = target.with_name(target.name + suffix)
            if source.exists():
                shutil.copyfile(source, copy)
            else:
                copy.unlink(missing_ok=True)
        if database_signature(db_path) != before:
            continue  # Zotero wrote while we copied: try again
        try:
            with sqlite3.connect(target) as con:  # our copy: replays WAL / rolls back journal
                if con.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                    continue
        except sqlite3.DatabaseError:
            continue
        return target
    raise error(
        f"could not take a consistent snapshot of {db_path} after {attempts} attempts "
        "(Zotero kept writing or the file is damaged); try again when Zotero is idle"
    )
