"""What the training-data builders share (`tools.verifier_data`, `tools.relevance_data`): seeded
group buckets, de-duplication, the calibration split, the raw copies' row check, byte-stable
JSONL and gzipped splits, the raw files' bytes and hashes, and the manifest's frame and
provenance half."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType


def bucket(seed: str, salt: str, group: str) -> int:
    """A group's stable place in 0..99 for one decision (`salt`)."""
    digest = hashlib.sha256(f"{seed}:{salt}:{group}".encode()).hexdigest()
    return int(digest[:8], 16) % 100


def dedupe(rows: list[dict], first: str, second: str) -> tuple[list[dict], int]:
    """Drop repeated (`first`, `second`) pairs; a pair seen with two labels is dropped whole."""
    labels: dict[tuple, set] = {}
    for r in rows:
        labels.setdefault((r[first], r[second]), set()).add(r["label"])
    seen, kept = set(), []
    for r in rows:
        key = (r[first], r[second])
        if len(labels[key]) == 1 and key not in seen:
            seen.add(key)
            kept.append(r)
    return kept, len(rows) - len(kept)


def calibration_split(pool: list[dict], bucket: Callable[[str, str], int], percent: int) -> dict[str, list[dict]]:
    """The training pool as `train` and `calibration`: `percent` of its groups (by the builder's
    `bucket(salt, group)`) go to calibration."""
    return {
        "train": [r for r in pool if bucket("calibration", r["group"]) >= percent],
        "calibration": [r for r in pool if bucket("calibration", r["group"]) < percent],
    }


def checked_row_counts(sources: dict[str, dict], count: Callable[[str], int]) -> dict[str, int]:
    """Each source's data rows in its raw files (`count(name)`); stops where a copy does not hold
    the `expected_rows` its metadata names."""
    rows_read = {}
    for name, meta in sources.items():
        rows_read[name] = count(name)
        if rows_read[name] != meta["expected_rows"]:
            raise SystemExit(
                f"{name}: {rows_read[name]} rows in the raw files, expected "
                f"{meta['expected_rows']}; is the copy complete?"
            )
    return rows_read


def jsonl_bytes(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_split(out: Path, name: str, rows: list[dict]) -> tuple[str, int, str]:
    """Write one split as `out/{name}.jsonl.gz` (gzip -9 with mtime 0, so byte-stable); returns
    the file's name, its bytes and the sha256 of its JSONL."""
    data = jsonl_bytes(rows)
    gz = gzip.compress(data, compresslevel=9, mtime=0)
    path = out / f"{name}.jsonl.gz"
    path.write_bytes(gz)
    return path.name, len(gz), sha256_bytes(data)


def read_raw(raw: Path, name: str) -> bytes:
    """A committed raw file's upstream bytes (gunzipped where it was gzipped)."""
    data = (raw / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


def read_manifest(data_dir: Path) -> dict:
    """The manifest.json a builder wrote under `data_dir`."""
    return json.loads((data_dir / "manifest.json").read_text())


def read_splits(data_dir: Path, manifest: dict | None = None) -> dict[str, list[dict]]:
    """Every split the manifest (by default, the one under `data_dir`) lists, as rows."""
    manifest = manifest if manifest is not None else read_manifest(data_dir)
    out = {}
    for name, info in manifest["splits"].items():
        with gzip.open(data_dir / "splits" / info["file"], "rt", encoding="utf-8") as f:
            out[name] = [json.loads(line) for line in f]
    return out


def changed_splits(splits: dict[str, list[dict]], manifest: dict) -> list[str]:
    """The splits whose rows are not byte for byte the ones the manifest records."""
    return [
        name
        for name, info in manifest["splits"].items()
        if sha256_bytes(jsonl_bytes(splits[name])) != info["sha256_jsonl"]
    ]


def straddling_groups(splits: dict[str, list[dict]]) -> dict[str, set[str]]:
    """Each group found in more than one split, with those splits (none, when the splits are sound)."""
    found: dict[str, set[str]] = {}
    for name, rows in splits.items():
        for r in rows:
            found.setdefault(r["group"], set()).add(name)
    return {group: names for group, names in found.items() if len(names) > 1}


def sources_manifest(
    sources: dict[str, dict], raw: Path, splits: dict[str, list[dict]], rows_read: dict[str, int], label_counts
) -> dict[str, dict]:
    """Per source: its metadata, each raw file as committed and as upstream (bytes, sha256),
    the rows read, and what it contributed to each split (label counts, empty splits left out)."""
    info = {}
    for name, meta in sources.items():
        files = []
        for committed, upstream in meta["files"].items():
            data, upstream_data = (raw / committed).read_bytes(), read_raw(raw, committed)
            files.append(
                {
                    "path": f"raw/{committed}",
                    "upstream_path": upstream,
                    "bytes": len(data),
                    "sha256": sha256_bytes(data),
                    "bytes_upstream": len(upstream_data),
                    "sha256_upstream": sha256_bytes(upstream_data),
                }
            )
        contributed = {split: label_counts([r for r in rows if r["source"] == name]) for split, rows in splits.items()}
        info[name] = {
            **{k: v for k, v in meta.items() if k != "files"},
            "rows_in_raw_files": rows_read[name],
            "files": files,
            "contributed": {k: v for k, v in contributed.items() if sum(v.values())},
        }
    return info


def manifest(src: ModuleType, seed: str, settings: dict, split_info: dict, source_info: dict, dropped: dict) -> dict:
    """A builder's manifest: its seed and `settings` (the held-out and calibration shares), its
    labels, splits and sources, what it dropped, and what its sources module `src` says was
    excluded or not used."""
    return {
        "seed": seed,
        **settings,
        "labels": list(src.LABELS),
        "splits": split_info,
        "sources": source_info,
        "dropped": dropped,
        "excluded": src.EXCLUDED,
        "not_used": src.NOT_USED,
    }


def contributions_markdown(m: dict, labels: tuple[str, ...], heading: str) -> list[str]:
    """What each source put into each split, per label (`heading` names the labels), and the
    sources' notes."""
    out = [
        "",
        f"What each source contributed ({heading}):",
        "",
        "| source | " + " | ".join(m["splits"]) + " |",
        "| --- |" + " ---: |" * len(m["splits"]),
    ]
    for name, s in m["sources"].items():
        cells = []
        for split in m["splits"]:
            c = s["contributed"].get(split)
            cells.append(" / ".join(f"{c[label]:,}" for label in labels) if c else "")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    out += ["", "Notes:", ""]
    out += [f"- **{name}**: {s['title']}. {s['note']}" for name, s in m["sources"].items()]
    return out


def provenance_markdown(m: dict) -> list[str]:
    """The manifest's files with their hashes, then what was dropped, excluded or not used."""
    out = [
        "",
        "## Files",
        "",
        "`sha256` is of the committed file; `sha256 upstream` of the upstream bytes (the "
        "committed `.gz` is `gzip -n -9` of them), so either can be checked against the "
        "repository at the commit above.",
        "",
        "| committed file | bytes | upstream path | upstream bytes | sha256 | sha256 upstream |",
        "| --- | ---: | --- | ---: | --- | --- |",
    ]
    for s in m["sources"].values():
        for f in s["files"]:
            out.append(
                f"| `{f['path']}` | {f['bytes']:,} | `{f['upstream_path']}` | "
                f"{f['bytes_upstream']:,} | `{f['sha256']}` | `{f['sha256_upstream']}` |"
            )
    out += ["", "## Dropped rows", ""]
    out += [f"- {why}: {n:,}" for why, n in m["dropped"].items()]
    out += ["", "## Excluded sets (never read)", ""]
    out += [f"- {name}: {why}" for name, why in m["excluded"].items()]
    out += ["", "## Looked for, not used", ""]
    out += [f"- {name}: {why}" for name, why in m["not_used"].items()]
    return out


def write_manifest(manifest_dir: Path, manifest: dict, markdown: str) -> None:
    manifest_dir.mkdir(parents=True, exist_ok=True)
    (manifest_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    (manifest_dir / "MANIFEST.md").write_text(markdown)
