"""Sentence-level attribution of one citation occurrence, the pure part (seed 4.5, item 10).

The cited passage is cut into numbered spans (`segment_source_text`: sentences, headings, table
rows, display math). Which of them support the claim is judged either offline, from the
verifier's score of the claim against each span alone, or by the attribution role's language
model reading the numbered passage top down (`attribution_messages`, `read_model_answer`).
The model names the claim's unsupported facts itself; offline they are the claim's content
words and numbers that no supporting span contains (`unsupported_facts`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, Field

from zocrates_citations import Span
from zocrates_contracts import AttributedSpan, CitationOccurrence, VerificationPair
from zocrates_contracts.messages import MAX_CLAIM_CHARS, MAX_PAIRS, MAX_SOURCE_CHARS
from zocrates_gateway.domain.synthesis import content_words

#: Spans scored in one verification request (what one request may carry); later ones go unscored.
MAX_SCORED_SPANS = MAX_PAIRS

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]+|\d+(?:[.,]\d+)*%?")


def span_pairs(claim: str, spans: Sequence[Span], citation_index: int) -> list[VerificationPair]:
    """The claim against each span alone: the pair's `occurrence` is the span's number."""
    return [
        VerificationPair(
            chunk_index=citation_index,
            occurrence=span.index,
            claim=claim[:MAX_CLAIM_CHARS],
            source_text=span.text[:MAX_SOURCE_CHARS],
        )
        for span in spans[:MAX_SCORED_SPANS]
        if claim.strip() and span.text.strip()
    ]


def attributed(spans: Sequence[Span], probabilities: dict[int, float | None] | None = None) -> list[AttributedSpan]:
    """The spans as the record keeps them, each with its probability where one was scored."""
    probabilities = probabilities or {}
    return [
        AttributedSpan(index=s.index, start=s.start, end=s.end, kind=s.kind, probability=probabilities.get(s.index))
        for s in spans
    ]


def supporting_offline(
    spans: Sequence[Span], probabilities: dict[int, float | None], threshold: float, occurrence: CitationOccurrence
) -> list[int]:
    """The spans whose own probability reaches the applied threshold. When none does: those
    the verifier's best window for the whole passage covers (`occurrence.spans`: a kept claim
    that joins what several sentences say); when it found none either (a demoted claim), the
    one span that scores best, so that the unsupported facts say what the closest one lacks."""
    scored = {i: p for i, p in probabilities.items() if p is not None}
    above = [s.index for s in spans if scored.get(s.index, -1.0) >= threshold]
    if above:
        return above
    covered = [s.index for s in spans if any(w.start < s.end and s.start < w.end for w in occurrence.spans)]
    if covered:
        return covered
    best = max((s.index for s in spans if s.index in scored), key=scored.__getitem__, default=None)
    return [best] if best is not None and scored[best] > 0 else []


def unsupported_facts(claim: str, supporting_texts: Sequence[str]) -> list[str]:
    """The claim's content words and numbers (as the claim writes them, in its order) that no
    supporting text contains, by stem ("estimated" is found in "estimate")."""
    found = content_words(" ".join(supporting_texts))
    numbers = {w.rstrip("%") for w in _WORD_RE.findall(" ".join(supporting_texts)) if w[0].isdigit()}
    missing: list[str] = []
    for word in _WORD_RE.findall(claim):
        if word[0].isdigit():
            absent = word.rstrip("%") not in numbers
        else:
            stems = content_words(word)
            absent = bool(stems) and not stems & found
        if absent and word not in missing:
            missing.append(word)
    return missing


# --- the attribution role's language model ---------------------------------------------------

ATTRIBUTION_PROMPT = """You check a claim from a research answer against the source passage it cites, top down.
First list the facts the claim states: each entity, quantity, number, relation and conclusion.
Then, for each fact, find the numbered sentences (or table rows, headings, formulas) of the passage that state it.

Answer with one JSON object and nothing else:
{"supporting": [the numbers of the sentences that state at least one fact of the claim],
 "unsupported_facts": [each fact of the claim that no sentence states, as a short phrase in the claim's words],
 "explanation": "one or two plain sentences for a researcher on how the passage bears on the claim"}

Do not grade the support with labels such as "full", "partial" or "none": a separate model gives the
probability. Judge only what the passage says, not what you know. In the explanation, speak of the
passage, its sentences or its table rows; never mention "spans", and never refer to the numbers."""


class ModelAnswer(BaseModel):
    """What the attribution model answers (validated; extra keys are ignored)."""

    supporting: list[int] = Field(default_factory=list, max_length=MAX_SCORED_SPANS)
    unsupported_facts: list[str] = Field(default_factory=list, max_length=64)
    explanation: str | None = Field(default=None, max_length=2_000)


def numbered_passage(spans: Sequence[Span]) -> str:
    return "\n".join(f"[{s.index}] {' '.join(s.text.split())}" for s in spans)


def attribution_messages(claim: str, spans: Sequence[Span]) -> list[dict]:
    return [
        {"role": "system", "content": ATTRIBUTION_PROMPT},
        {"role": "user", "content": f"Claim: {claim}\n\nPassage, numbered:\n{numbered_passage(spans)}"},
    ]


class BadModelAnswer(ValueError):
    pass


def read_model_answer(answer: ModelAnswer, span_count: int) -> ModelAnswer:
    """The answer with its facts trimmed and deduplicated; `BadModelAnswer` when it names a span
    the passage does not have (a model that lost count is not to be trusted on the rest)."""
    wrong = [n for n in answer.supporting if not 1 <= n <= span_count]
    if wrong:
        raise BadModelAnswer(f"the model named sentences {wrong} of a passage of {span_count}")
    facts = list(dict.fromkeys(" ".join(f.split())[:300] for f in answer.unsupported_facts if f.strip()))
    explanation = " ".join(answer.explanation.split()) if answer.explanation else None
    return ModelAnswer(
        supporting=sorted(set(answer.supporting)), unsupported_facts=facts, explanation=explanation or None
    )
