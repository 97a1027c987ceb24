"""Offline answers: does the extractive synthesizer quote the sentences that answer?

SciFact (Wadden et al., 2020) labels, for each claim, the sentences of the cited abstracts
that support or contradict it (its rationales). Each of the 505 training claims with evidence
is asked as a question; the evidence is its cited abstracts plus the corpus abstracts that
share the most words with it, eight in all, ranked by shared words as a lexical retriever
would (the cited ones are always among them: this measures sentence choice, not retrieval,
which `bench retrieval` measures). One abstract is one chunk, section "Abstract".

Each method answers with up to four quoted sentences; a point is a hit when it is one of the
claim's rationale sentences. Methods: the gateway's `choose_points` (what `make run` answers
with), the synthesizer before 60c59af (in rank order, the best-overlap sentence of each chunk),
and the first sentence of each of the top four chunks.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path

from zocrates_contracts import EvidenceChunk
from zocrates_gateway.domain.synthesis import choose_points, content_words, strip_reference_markers

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "fixtures" / "claims" / "scifact"
EVIDENCE_CHUNKS = 8
POINTS = 4


def load() -> tuple[list[dict], dict[int, dict]]:
    claims = [json.loads(line) for line in (DATA / "claims_train.jsonl").open()]
    corpus = {d["doc_id"]: d for d in map(json.loads, (DATA / "corpus_cited_subset.jsonl").open())}
    return [c for c in claims if c["evidence"]], corpus


def _chunk(doc: dict) -> EvidenceChunk:
    return EvidenceChunk(chunk_id=f"d{doc['doc_id']}", item_key=f"K{doc['doc_id']:07d}"[-8:],
                         title=doc["title"], text=" ".join(doc["abstract"]), section="Abstract")


def evidence_for(claim: dict, corpus: dict[int, dict], words: dict[int, set[str]]) -> list[dict]:
    """The cited abstracts and the most word-sharing others, ranked by shared words."""
    wanted = content_words(claim["claim"])
    cited = {int(d) for d in claim["cited_doc_ids"]}
    ranked = sorted(corpus, key=lambda d: (-len(words[d] & wanted), d))
    others = [d for d in ranked if d not in cited][: max(0, EVIDENCE_CHUNKS - len(cited))]
    chosen = sorted([*cited, *others], key=lambda d: (-len(words[d] & wanted), d))
    return [corpus[d] for d in chosen if d in corpus]


def rationales(claim: dict, corpus: dict[int, dict]) -> list[str]:
    return [corpus[int(doc)]["abstract"][i]
            for doc, sets in claim["evidence"].items() if int(doc) in corpus
            for rationale in sets for i in rationale["sentences"]]


# --- the methods -------------------------------------------------------------------------------

def current(question: str, chunks: list[EvidenceChunk]) -> list[str]:
    return [p.text for p in choose_points(question, chunks, POINTS)]


_OLD_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")


def before_60c59af(question: str, chunks: list[EvidenceChunk]) -> list[str]:
    """The synthesizer as it was: per chunk in rank order, the sentence sharing most words."""
    wanted = content_words(question)
    points: list[str] = []
    for chunk in chunks:
        best, best_score = None, 0.0
        for raw in _OLD_SENTENCE_RE.split(" ".join(chunk.text.split())):
            sentence = raw.strip()
            words = content_words(sentence)
            if not 25 <= len(sentence) <= 400 or not words:
                continue
            score = len(words & wanted) + 0.01 * min(len(words), 30) / 30
            if score > best_score:
                best, best_score = sentence, score
        if best and best not in points:
            points.append(best)
        if len(points) == POINTS:
            break
    return points


def lead(question: str, chunks: list[EvidenceChunk]) -> list[str]:
    return [_OLD_SENTENCE_RE.split(c.text, maxsplit=1)[0] for c in chunks[:POINTS]]


METHODS = {"`choose_points` (now)": current, "before 60c59af": before_60c59af,
           "lead sentences": lead}


# --- scoring -----------------------------------------------------------------------------------

def _norm(text: str) -> str:
    return re.sub(r"\W+", " ", strip_reference_markers(text)).strip().lower()


def is_rationale(point: str, gold: list[str]) -> bool:
    p = _norm(point)
    return bool(p) and any(p in g or g in p for g in map(_norm, gold) if g)


def measure() -> dict[str, dict[str, float]]:
    claims, corpus = load()
    words = {d: content_words(doc["title"] + " " + " ".join(doc["abstract"]))
             for d, doc in corpus.items()}
    cases = [(c["claim"], [_chunk(d) for d in evidence_for(c, corpus, words)], rationales(c, corpus))
             for c in claims]
    results = {}
    for name, method in METHODS.items():
        answered = hits = first = points = good = 0
        times = []
        for question, chunks, gold in cases:
            started = time.perf_counter()
            quoted = method(question, chunks)
            times.append(time.perf_counter() - started)
            marks = [is_rationale(p, gold) for p in quoted]
            answered += bool(quoted)
            hits += any(marks)
            first += bool(marks) and marks[0]
            points += len(marks)
            good += sum(marks)
        n = len(cases)
        results[name] = {"claims": n, "answered": answered / n, "hit": hits / n,
                         "first": first / n, "precision": good / max(points, 1),
                         "points": points / max(answered, 1),
                         "ms": statistics.median(times) * 1000}
    return results


def run() -> str:
    results = measure()
    n = next(iter(results.values()))["claims"]
    lines = [
        "## Offline answers",
        "",
        "Command: `.venv/bin/python -m bench answers` (module `bench/bench_answers.py`).",
        "",
        f"{n} SciFact claims with labeled rationale sentences, each asked as a question over "
        f"its cited abstracts and the most word-sharing others ({EVIDENCE_CHUNKS} chunks, "
        "ranked by shared words; the cited ones always included). A point is a hit when it is "
        "one of the claim's rationale sentences.",
        "",
        "| method | answered | a rationale among the points | first point a rationale "
        "| points that are rationales | points per answer | median ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in results.items():
        lines.append(f"| {name} | {r['answered']:.1%} | {r['hit']:.1%} | {r['first']:.1%} | "
                     f"{r['precision']:.1%} | {r['points']:.1f} | {r['ms']:.2f} |")
    now = results["`choose_points` (now)"]
    old = results["before 60c59af"]
    lines += ["", f"Now vs before: rationale among the points {now['hit']:.1%} vs "
              f"{old['hit']:.1%}, first point {now['first']:.1%} vs {old['first']:.1%}, "
              f"precision {now['precision']:.1%} vs {old['precision']:.1%}. No target: this "
              "measures the offline answer so that changes to it are judged on labeled data."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
