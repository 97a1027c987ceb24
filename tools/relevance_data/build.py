"""Build the relevance model's training, calibration and evaluation splits from the committed raw sets.

    python -m tools.relevance_data.build           # writes bench/data/relevance/splits/ and
                                                   # bench/data/relevance/MANIFEST.md (+ .json)

Why it is built this way:
- Every split is decided by a seeded hash of a row's `group`, never by row, so an article, a
  paper or a question is wholly in one split.
- XQuAD's English paragraphs are SQuAD v1.1 dev paragraphs, and so are QNLI dev's: a QNLI row
  whose question or sentence belongs to an XQuAD paragraph takes that article's group, and QNLI
  rows of a held-out article are dropped, so eval_xquad's paragraphs are never trained on.
- Half the XQuAD articles, half the COVID-QA papers and a fifth of the PubMedQA abstracts are
  held out; the rest, with QNLI, is the training pool, of which a tenth of the groups is
  calibration. Labels are not balanced: the data is for ranking, and each question keeps its
  positives and its hard negatives together.
- Output is deterministic: the same inputs give byte-identical JSONL (gzipped with mtime 0).
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from pathlib import Path

from tools import training_data as common
from tools.relevance_data import sources as src

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "relevance"
RAW = DATA / "raw"
SPLITS = DATA / "splits"

SEED = "zocrates-relevance-data-v1"
HELDOUT_PERCENT = {"xquad": 50, "covidqa": 50, "pubmedqa": 20}
CALIBRATION_PERCENT = 10
TRAIN_SPLITS = ("train", "calibration")
EVAL_SPLITS = ("eval_xquad", "eval_covidqa", "eval_pubmedqa")


def bucket(salt: str, group: str) -> int:
    """A group's stable place in 0..99 for one decision (`salt`)."""
    return common.bucket(SEED, salt, group)


def held_out(source: str, group: str) -> bool:
    return bucket(f"{source}-heldout", group) < HELDOUT_PERCENT[source]


def dedupe(rows: list[dict]) -> tuple[list[dict], int]:
    """Drop repeated (question, sentence) pairs; a pair seen with both labels is dropped whole."""
    return common.dedupe(rows, "question", "sentence")


def regroup_qnli(qnli: list[dict], by_question: dict[str, str], by_sentence: dict[str, str]) -> list[dict]:
    """Give every QNLI question tied to an XQuAD paragraph that article's group (all its rows)."""
    article: dict[str, str] = {}
    for r in qnli:
        q = src.norm(r["question"])
        hit = by_question.get(q) or by_sentence.get(src.norm(r["sentence"]))
        if hit:
            article.setdefault(q, hit)
    return [{**r, "group": article.get(src.norm(r["question"]), r["group"])} for r in qnli]


def build_splits(raw: Path = RAW) -> tuple[dict[str, list[dict]], dict]:
    """Every split's final rows, and what was dropped and why."""
    dropped: dict[str, int] = {}
    xquad, by_question, by_sentence, ambiguous = src.read_xquad(raw)
    dropped["xquad ambiguous negatives (a non-answer sentence holding the answer text)"] = ambiguous
    covidqa, skipped = src.read_covidqa(raw, SEED)
    for why, n in skipped.items():
        dropped[f"covidqa {why}"] = n
    pubmedqa = src.read_pubmedqa(raw)
    qnli = regroup_qnli(src.read_qnli(raw), by_question, by_sentence)

    evals = {
        "eval_xquad": [r for r in xquad if held_out("xquad", r["group"])],
        "eval_covidqa": [r for r in covidqa if held_out("covidqa", r["group"])],
        "eval_pubmedqa": [r for r in pubmedqa if held_out("pubmedqa", r["group"])],
    }
    for name in EVAL_SPLITS:
        evals[name], n = dedupe(evals[name])
        dropped[f"{name}: repeated pairs"] = n
    eval_groups = {r["group"] for rows in evals.values() for r in rows}
    eval_questions = {src.norm(r["question"]) for rows in evals.values() for r in rows}

    n = len(qnli)
    qnli = [r for r in qnli if r["group"] not in eval_groups]
    dropped["qnli rows on a paragraph held out in eval_xquad"] = n - len(qnli)
    pool = (
        qnli
        + [r for r in xquad if not held_out("xquad", r["group"])]
        + [r for r in covidqa if not held_out("covidqa", r["group"])]
        + [r for r in pubmedqa if not held_out("pubmedqa", r["group"])]
    )
    pool, n_dup = dedupe(pool)
    dropped["repeated or conflicting (question, sentence) pairs in the training pool"] = n_dup
    # The same question text can be asked of two papers (COVID-QA) or sit under two groups:
    # a question we evaluate on is never trained on, whatever its group.
    kept = [r for r in pool if src.norm(r["question"]) not in eval_questions]
    dropped["training pool rows whose question is also an evaluation question"] = len(pool) - len(kept)

    splits = common.calibration_split(kept, bucket, CALIBRATION_PERCENT)
    for name in TRAIN_SPLITS:
        random.Random(f"{SEED}:{name}:order").shuffle(splits[name])
    splits.update(evals)
    return splits, dropped


def label_counts(rows: list[dict]) -> dict[str, int]:
    counts = Counter(r["label"] for r in rows)
    return {str(label): counts.get(label, 0) for label in src.LABELS}


def build(raw: Path = RAW, out: Path = SPLITS) -> dict:
    """Write every split under `out` and return the manifest (sources, files, counts)."""
    rows_read = common.checked_row_counts(src.SOURCES, lambda name: src.ROW_COUNTS[name](raw))
    splits, dropped = build_splits(raw)
    out.mkdir(parents=True, exist_ok=True)
    split_info = {}
    for name, rows in splits.items():
        file, size, sha256_jsonl = common.write_split(out, name, rows)
        split_info[name] = {
            "file": file,
            "rows": len(rows),
            "labels": label_counts(rows),
            "questions": len({r["question"] for r in rows}),
            "groups": len({r["group"] for r in rows}),
            "sources": sorted({r["source"] for r in rows}),
            "bytes": size,
            "sha256_jsonl": sha256_jsonl,
        }

    settings = {"heldout_percent": HELDOUT_PERCENT, "calibration_percent": CALIBRATION_PERCENT}
    source_info = common.sources_manifest(src.SOURCES, raw, splits, rows_read, label_counts)
    return common.manifest(src, SEED, settings, split_info, source_info, dropped)


def manifest_markdown(m: dict) -> str:
    """MANIFEST.md: the same facts as manifest.json, for people."""
    held = ", ".join(f"{k} {v} %" for k, v in m["heldout_percent"].items())
    out = [
        "# Relevance model training data: manifest",
        "",
        "Written by `python -m tools.relevance_data.build` from the raw files beside this "
        "page; do not edit by hand. Rows are "
        '`{"question", "sentence", "label", "source", "group"}`; label 1: the sentence '
        "answers the question, 0: it does not (negatives are other sentences of the same "
        "paragraph, paper or abstract). `group` never appears in two splits.",
        "",
        f"Seed `{m['seed']}`; held out by group: {held}; calibration: "
        f"{m['calibration_percent']} % of the training pool's groups. Labels are not "
        "balanced (ranking data): weight or sample per question when training.",
        "",
        "## Splits",
        "",
        "| split | rows | label 1 | label 0 | share of 1 | questions | groups | sources "
        "| bytes (.gz) | sha256 of the JSONL |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |",
    ]
    for name, s in m["splits"].items():
        lab = s["labels"]
        share = lab["1"] / s["rows"] if s["rows"] else 0
        out.append(
            f"| `splits/{s['file']}` | {s['rows']:,} | {lab['1']:,} | {lab['0']:,} | "
            f"{share:.1%} | {s['questions']:,} | {s['groups']:,} | "
            f"{', '.join(s['sources'])} | {s['bytes']:,} | `{s['sha256_jsonl']}` |"
        )
    out += [
        "",
        "## Sources",
        "",
        "| source | repository @ commit | licence | share-alike | rows (QNLI) or questions in raw files |",
        "| --- | --- | --- | --- | ---: |",
    ]
    for name, s in m["sources"].items():
        out.append(
            f"| {name} | `{s['repo']}` @ `{s['commit'][:12]}` | {s['licence']} | "
            f"{'yes' if s['share_alike'] else 'no'} | {s['rows_in_raw_files']:,} |"
        )
    out += common.contributions_markdown(m, ("1", "0"), "label 1 / label 0")
    out += common.provenance_markdown(m)
    out += [
        "",
        "## Share-alike",
        "",
        "QNLI and XQuAD are CC BY-SA 4.0 (SQuAD, Wikipedia): that licence passes on to these "
        "files and to anything adapted from them; a model trained on them is not itself "
        "adapted text, but redistributing the splits must keep CC BY-SA and the "
        "attributions above. COVID-QA's paper texts are CC BY (attribution: each paper's "
        "title and DOI are in the raw file).",
        "",
    ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, default=RAW)
    parser.add_argument("--out", type=Path, default=SPLITS)
    parser.add_argument("--manifest-dir", type=Path, default=DATA)
    args = parser.parse_args()
    manifest = build(args.raw, args.out)
    common.write_manifest(args.manifest_dir, manifest, manifest_markdown(manifest))
    for name, s in manifest["splits"].items():
        print(f"{name:15} {s['rows']:7,}  {s['labels']}  questions {s['questions']:,}")


if __name__ == "__main__":
    main()
