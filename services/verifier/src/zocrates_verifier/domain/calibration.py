"""Fitting and measuring the heuristic on SciFact (Wadden et al., 2020), offline.

Data: `shared/fixtures/claims/scifact/` holds SciFact's training claims with the ids of the
abstracts they cite and, per abstract, a SUPPORT or CONTRADICT label with rationale sentence
ids (no label = not enough info), and the cited abstracts as sentence lists.

A pair is (claim, whole cited abstract): an abstract is about the size of one retrieved
chunk, and the question is the verifier's: does this passage support this claim? Label 1 for
SUPPORT, 0 for CONTRADICT and not-enough-info (a cited but non-supporting source is exactly
what verification must demote).

Split: by claim id (`id % 5 == 0` held out, about 20 %), so no claim is seen in both parts.
The training part is augmented with number-swap negatives: each supported claim that states a
number the abstract contains is copied with that number changed (label 0). SciFact has too
few such cases for the `missing_nums` weight to be learned from the natural pairs alone, and
a changed number is the hallucination the seed names first. Held-out metrics are reported on
the natural pairs and, separately, on a number probe: a sentence quoted from each held-out
abstract that states a number, against the same sentence with the number changed.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from zocrates_verifier.adapters.backends import heuristic
from zocrates_verifier.domain.numbers import NUMBER, number_found, numbers


@dataclass(frozen=True, slots=True)
class LabeledPair:
    claim_id: int
    claim: str
    passage: str
    label: int  # 1 = supported


def default_data_dir() -> Path:
    """`shared/fixtures/claims/scifact` beside the repository (the workspace layout)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent.parent / "shared" / "fixtures" / "claims" / "scifact"
        if candidate.exists():
            return candidate
    raise FileNotFoundError(
        "SciFact fixtures not found: expected shared/fixtures/claims/"
        "scifact beside the repository; pass the directory explicitly"
    )


def load_pairs(data_dir: Path | None = None) -> list[LabeledPair]:
    """Every (claim, cited abstract) pair of the SciFact training claims."""
    data_dir = data_dir or default_data_dir()
    docs = {}
    with open(data_dir / "corpus_cited_subset.jsonl", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            docs[int(doc["doc_id"])] = " ".join(doc["abstract"])
    pairs = []
    with open(data_dir / "claims_train.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            evidence = {int(k): v for k, v in row["evidence"].items()}
            for doc_id in row["cited_doc_ids"]:
                if int(doc_id) not in docs:
                    continue
                labels = {e["label"] for e in evidence.get(int(doc_id), [])}
                pairs.append(LabeledPair(row["id"], row["claim"], docs[int(doc_id)], int(labels == {"SUPPORT"})))
    return pairs


def split(pairs: Sequence[LabeledPair]) -> tuple[list[LabeledPair], list[LabeledPair]]:
    """(train, held-out), by claim id."""
    train = [p for p in pairs if p.claim_id % 5 != 0]
    held = [p for p in pairs if p.claim_id % 5 == 0]
    return train, held


def number_swaps(pairs: Sequence[LabeledPair], seed: int = 13) -> list[LabeledPair]:
    """Supported claims with one number (present in the passage) changed; label 0."""
    rng = random.Random(seed)
    out = []
    for p in pairs:
        if not p.label:
            continue
        passage_numbers = numbers(p.passage)
        for match in NUMBER.finditer(p.claim.lower()):
            value = match.group(1).replace(",", "")
            if not number_found(value, passage_numbers):
                continue
            number = float(value)
            for _ in range(10):
                new = number * rng.choice((0.5, 2.0, 1.5, 3.0)) + rng.choice((0, 1, 7))
                text = f"{new:g}" if "." in value else str(int(round(new)))
                if not number_found(text, passage_numbers):
                    break
            else:
                continue
            claim = p.claim[: match.start(1)] + text + p.claim[match.end(1) :]
            out.append(LabeledPair(p.claim_id, claim, p.passage, 0))
            break
    return out


def number_probe(pairs: Sequence[LabeledPair], seed: int = 29) -> list[LabeledPair]:
    """A sentence quoted from each distinct passage that states a number (label 1), and the
    same sentence with one number changed (label 0): the seed's central case, at scale."""
    seen, quoted = set(), []
    for p in pairs:
        if p.passage in seen:
            continue
        seen.add(p.passage)
        for sentence in heuristic._SENTENCE.split(p.passage):
            if 8 <= len(sentence.split()) <= 40 and NUMBER.search(sentence.lower()):
                quoted.append(LabeledPair(p.claim_id, sentence, p.passage, 1))
                break
    return quoted + number_swaps(quoted, seed=seed)


def design(pairs: Sequence[LabeledPair]) -> list[list[float]]:
    return [heuristic.features(p.claim, p.passage) for p in pairs]


def fit_logistic(x: Sequence[Sequence[float]], y: Sequence[int], l2: float = 1.0, iterations: int = 50) -> list[float]:
    """L2-regularised logistic regression by Newton's method (intercept unpenalised)."""
    import numpy as np

    xs = np.hstack([np.ones((len(x), 1)), np.asarray(x, dtype=float)])
    ys = np.asarray(y, dtype=float)
    w = np.zeros(xs.shape[1])
    penalty = np.eye(xs.shape[1]) * l2
    penalty[0, 0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(xs @ w, -40, 40)))
        gradient = xs.T @ (p - ys) + penalty @ w
        hessian = (xs * (p * (1 - p))[:, None]).T @ xs + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-9:
            break
    return [float(v) for v in w]


def auroc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve (Mann-Whitney, ties count one half)."""
    ranked = sorted(zip(scores, labels))
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mid = (i + j + 1) / 2.0  # average 1-based rank of the tie group
        rank_sum += mid * sum(label for _, label in ranked[i:j])
        i = j
    positives = sum(labels)
    negatives = len(labels) - positives
    if not positives or not negatives:
        return math.nan
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


def expected_calibration_error(scores: Sequence[float], labels: Sequence[int], bins: int = 10) -> float:
    """ECE over `bins` equal-width probability bins."""
    total, n = 0.0, len(scores)
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        members = [(s, y) for s, y in zip(scores, labels) if lo <= s < hi or (b == bins - 1 and s == 1.0)]
        if members:
            confidence = sum(s for s, _ in members) / len(members)
            accuracy = sum(y for _, y in members) / len(members)
            total += len(members) / n * abs(confidence - accuracy)
    return total


def metrics(scores: Sequence[float], labels: Sequence[int], threshold: float) -> dict:
    accuracy = sum((s >= threshold) == bool(y) for s, y in zip(scores, labels)) / len(labels)
    return {
        "n": len(labels),
        "positives": int(sum(labels)),
        "auroc": auroc(scores, labels),
        f"accuracy@{threshold:.2f}": accuracy,
        "ece": expected_calibration_error(scores, labels),
        "base_rate_accuracy": max(sum(labels), len(labels) - sum(labels)) / len(labels),
    }


def evaluate(
    coefficients: Sequence[float] = heuristic.COEFFICIENTS, threshold: float = 0.60, data_dir: Path | None = None
) -> dict[str, dict]:
    """Held-out metrics of the heuristic: natural pairs, and held-out number swaps."""
    _, held = split(load_pairs(data_dir))
    probe = number_probe(held)

    def scored(pairs: Sequence[LabeledPair]) -> dict:
        scores = [heuristic.probability(x, coefficients) for x in design(pairs)]
        return metrics(scores, [p.label for p in pairs], threshold)

    return {
        "held-out SciFact pairs": scored(held),
        "number probe (held-out sentences, one number changed)": scored(probe),
    }


def refit(data_dir: Path | None = None, l2: float = 1.0) -> list[float]:
    """Coefficients fitted on the training split plus its number swaps."""
    train, _ = split(load_pairs(data_dir))
    train = train + number_swaps(train)
    return fit_logistic(design(train), [p.label for p in train], l2=l2)


def format_coefficients(coefficients: Sequence[float]) -> str:
    values = ", ".join(f"{c:.4f}" for c in coefficients)
    return f"COEFFICIENTS = ({values})"
