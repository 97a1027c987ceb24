"""Build the verifier's training, calibration and evaluation splits from the committed raw sets.

    python -m tools.verifier_data.build            # writes bench/data/verifier/splits/ and
                                                   # bench/data/verifier/MANIFEST.md (+ .json)

Why it is built this way:
- Every split is decided by a seeded hash of a row's `group`, never by row, so a premise, a
  claim or a family of claims that share evidence is wholly in one split.
- A fifth of SciFact train's groups is held out for evaluation (`eval_scifact_heldout`);
  SciFact dev is never read. WiCE and FEVER-Symmetric v0.2 test are evaluation only.
- Train and calibration are balanced over support / contradict / neither by dropping rows of
  the larger labels: claim-style rows (SciFact, Fool Me Twice, FEVER-Symmetric) are kept
  first, NLI rows fill up the rest, each in a seeded order.
- Output is deterministic: the same inputs give byte-identical JSONL (gzipped with mtime 0).
"""

from __future__ import annotations

import argparse
import random
import zipfile
from collections import Counter
from pathlib import Path

from tools import training_data as common
from tools.verifier_data import sources as src

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "verifier"
RAW = DATA / "raw"
SPLITS = DATA / "splits"
SHARED = ROOT.parent / "shared"

SEED = "zocrates-verifier-data-v1"
SCIFACT_HELDOUT_PERCENT = 20
CALIBRATION_PERCENT = 8
CLAIM_SOURCES = ("scifact_train", "fm2", "fever_symmetric")
TRAIN_SPLITS = ("train", "calibration")
EVAL_SPLITS = ("eval_scifact_heldout", "eval_wice", "eval_fever_symmetric")


def bucket(salt: str, group: str) -> int:
    """A group's stable place in 0..99 for one decision (`salt`)."""
    return common.bucket(SEED, salt, group)


def dedupe(rows: list[dict]) -> tuple[list[dict], int]:
    """Drop repeated (claim, passage) pairs; a pair seen with two labels is dropped whole."""
    return common.dedupe(rows, "claim", "passage")


def balance(rows: list[dict], salt: str) -> list[dict]:
    """Equal counts per label: claim-style rows first, then NLI rows, each in seeded order."""
    by_label = {label: [r for r in rows if r["label"] == label] for label in src.LABELS}
    n = min(len(v) for v in by_label.values())
    kept = []
    for label, members in by_label.items():
        claim_rows = [r for r in members if r["source"] in CLAIM_SOURCES]
        nli_rows = [r for r in members if r["source"] not in CLAIM_SOURCES]
        random.Random(f"{SEED}:{salt}:{label}:claim").shuffle(claim_rows)
        random.Random(f"{SEED}:{salt}:{label}:nli").shuffle(nli_rows)
        kept.extend((claim_rows + nli_rows)[:n])
    random.Random(f"{SEED}:{salt}:order").shuffle(kept)
    return kept


def raw_row_count(raw: Path, name: str) -> int:
    """Data rows in one source's raw files, to check each copy is complete."""
    if name == "snli_esnli":
        return sum(len(src.text_lines(raw, f"esnli/labels.{s}.gz")) for s in ("dev", "test"))
    if name == "breaking_nli":
        with zipfile.ZipFile(raw / "breaking_nli/breaking_nli_dataset.zip") as z:
            return len(z.read("data/dataset.jsonl").decode("utf-8").splitlines())
    total = 0
    for path in src.SOURCES[name]["files"]:
        if path.endswith(".tsv.gz"):
            total += len(src.tsv(raw, path))
        elif path.endswith(".jsonl.gz"):
            total += len(src.jsonl(raw, path))
    return total


def read_all(raw: Path, shared: Path) -> tuple[dict[str, list[dict]], dict]:
    """Every split's rows before balancing, plus what was dropped and why."""
    dropped: dict[str, int] = {}
    scifact = src.read_scifact_train(shared, SEED)
    dev_claims = src.scifact_dev_claim_texts(shared)
    n = len(scifact)
    scifact = [r for r in scifact if src.norm(r["claim"]) not in dev_claims]
    dropped["scifact_train rows whose claim text is also a SciFact dev claim"] = n - len(scifact)
    held = [r for r in scifact if bucket("scifact-heldout", r["group"]) < SCIFACT_HELDOUT_PERCENT]
    scifact_pool = [r for r in scifact if bucket("scifact-heldout", r["group"]) >= SCIFACT_HELDOUT_PERCENT]

    fever_test = src.read_fever_symmetric(raw, ("fever_symmetric_test",))
    test_groups = {r["group"] for r in fever_test}
    fever_all = src.read_fever_symmetric(raw, ("fever_symmetric_full", "fever_symmetric_dev"))
    fever_train = [r for r in fever_all if r["group"] not in test_groups]
    dropped["fever_symmetric rows whose FEVER claim is in v0.2 test"] = len(fever_all) - len(fever_train)

    wice, wice_skipped = src.read_wice(raw)
    for label, n in wice_skipped.items():
        dropped[f"wice rows labelled {label}"] = n

    evals = {"eval_scifact_heldout": dedupe(held)[0], "eval_wice": wice, "eval_fever_symmetric": dedupe(fever_test)[0]}
    eval_claims = {src.norm(r["claim"]) for rows in evals.values() for r in rows}

    pool = (
        src.read_snli_esnli(raw)
        + src.read_cad_nli(raw)
        + src.read_breaking_nli(raw)
        + src.read_med(raw)
        + src.read_fm2(raw, SEED)
        + fever_train
        + scifact_pool
    )
    pool, n_dup = dedupe(pool)
    dropped["repeated or conflicting (claim, passage) pairs in the training pool"] = n_dup
    # The same claim can sit under two groups (FEVER-Symmetric files one claim under two FEVER
    # ids): a claim we evaluate on is never trained on, whatever its group.
    kept = [r for r in pool if src.norm(r["claim"]) not in eval_claims]
    dropped["training pool rows whose claim is also an evaluation claim"] = len(pool) - len(kept)

    splits = {**common.calibration_split(kept, bucket, CALIBRATION_PERCENT), **evals}
    return splits, dropped


def build_splits(raw: Path = RAW, shared: Path = SHARED) -> tuple[dict[str, list[dict]], dict]:
    """Every split's final rows (train and calibration balanced), and the dropped counts."""
    splits, dropped = read_all(raw, shared)
    for name in TRAIN_SPLITS:
        splits[name] = balance(splits[name], name)
    return splits, dropped


def label_counts(rows: list[dict]) -> dict[str, int]:
    counts = Counter(r["label"] for r in rows)
    return {label: counts.get(label, 0) for label in src.LABELS}


def build(raw: Path = RAW, shared: Path = SHARED, out: Path = SPLITS) -> dict:
    """Write every split under `out` and return the manifest (sources, files, counts)."""

    def rows_in_raw_files(name: str) -> int:
        if src.SOURCES[name]["files"]:
            return raw_row_count(raw, name)
        return len((shared / src.SCIFACT_DIR / "claims_train.jsonl").read_text().splitlines())

    rows_read = common.checked_row_counts(src.SOURCES, rows_in_raw_files)
    splits, dropped = build_splits(raw, shared)
    out.mkdir(parents=True, exist_ok=True)
    split_info = {}
    for name, rows in splits.items():
        file, _, sha256_jsonl = common.write_split(out, name, rows)
        split_info[name] = {
            "file": file,
            "rows": len(rows),
            "labels": label_counts(rows),
            "sha256_jsonl": sha256_jsonl,
            "groups": len({r["group"] for r in rows}),
        }

    settings = {"scifact_heldout_percent": SCIFACT_HELDOUT_PERCENT, "calibration_percent": CALIBRATION_PERCENT}
    source_info = common.sources_manifest(src.SOURCES, raw, splits, rows_read, label_counts)
    return common.manifest(src, SEED, settings, split_info, source_info, dropped)


def manifest_markdown(m: dict) -> str:
    """MANIFEST.md: the same facts as manifest.json, for people."""
    out = [
        "# Verifier training data: manifest",
        "",
        "Written by `python -m tools.verifier_data.build` from the raw files beside this page "
        "and `../shared/fixtures/claims/scifact/`; do not edit by hand. Rows are "
        '`{"claim", "passage", "label", "source", "group"}`, labels '
        "`support`, `contradict`, `neither`; the passage is the NLI premise, the claim the "
        "hypothesis. `group` never appears in two splits.",
        "",
        "A checkpoint trained on these names its labels the same way in `config.id2label` "
        f"(in this order: {', '.join(m['labels'])}); the verifier's local-torch backend "
        "reads the label named `support` as the support probability.",
        "",
        f"Seed `{m['seed']}`; SciFact train held out by claim group: "
        f"{m['scifact_heldout_percent']} %; calibration: {m['calibration_percent']} % of the "
        "training pool's groups. Train and calibration are balanced over the three labels.",
        "",
        "## Splits",
        "",
        "| split | rows | support | contradict | neither | groups | sha256 of the JSONL |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, s in m["splits"].items():
        lab = s["labels"]
        out.append(
            f"| `splits/{s['file']}` | {s['rows']:,} | {lab['support']:,} | "
            f"{lab['contradict']:,} | {lab['neither']:,} | {s['groups']:,} | "
            f"`{s['sha256_jsonl']}` |"
        )
    out += [
        "",
        "## Sources",
        "",
        "| source | repository @ commit | licence | share-alike | rows in raw files | role |",
        "| --- | --- | --- | --- | ---: | --- |",
    ]
    for name, s in m["sources"].items():
        at = f"`{s['repo']}` @ `{s['commit'][:12]}`" if s["commit"] else f"`{s['repo']}`"
        out.append(
            f"| {name} | {at} | {s['licence']} | {'yes' if s['share_alike'] else 'no'} "
            f"| {s['rows_in_raw_files']:,} | {s['role']} |"
        )
    out += common.contributions_markdown(m, ("support", "contradict", "neither"), "support / contradict / neither")
    out += common.provenance_markdown(m)
    out += [
        "",
        "## Share-alike",
        "",
        "Every source marked share-alike above (CC BY-SA) passes that licence on to these "
        "files and to anything adapted from them; a model trained on them is not itself "
        "adapted text, but redistributing the splits must keep CC BY-SA and the "
        "attributions above.",
        "",
    ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, default=RAW)
    parser.add_argument("--shared", type=Path, default=SHARED)
    parser.add_argument("--out", type=Path, default=SPLITS)
    parser.add_argument("--manifest-dir", type=Path, default=DATA)
    args = parser.parse_args()
    manifest = build(args.raw, args.shared, args.out)
    common.write_manifest(args.manifest_dir, manifest, manifest_markdown(manifest))
    for name, s in manifest["splits"].items():
        print(f"{name:22} {s['rows']:7,}  {s['labels']}")


if __name__ == "__main__":
    main()
