"""Citation quality of one answer: ALCE's citation recall and precision, per-pair probabilities.

ALCE (Gao et al., 2023, "Enabling Large Language Models to Generate Text with Citations") asks an
NLI model whether each statement of an answer is entailed by its citations (recall) and whether
each citation is needed (precision). Here the verifier has already judged every citation
occurrence on its own; a citation supports its claim when its probability reaches the applied
threshold (its verdict is KEPT). So, over the answer's claim sentences:

- citation recall = claim sentences with at least one supporting citation / claim sentences,
  leaving out the cited sentences whose every citation went unverified (FAIL_OPEN): nothing was
  measured about them. An uncited claim sentence counts against recall.
- citation precision = supporting citations / verified citations (KEPT and DEMOTED occurrences).
  A FAIL_OPEN occurrence is not verified: it counts neither as support nor against precision.
- a bracket citing several passages (`[1, 3]`, `[1][3]`) also has its joint check, ALCE's own
  recall question: do its passages together support the claim? A sentence whose bracket's
  `joint_support` reaches the threshold is supported even when no single index is; a scored
  joint check also makes the sentence judged (not unverified). Precision stays per citation.

Claim sentences are the sentences of the answer's prose as claim extraction cuts it: at
sentence ends and at paragraph breaks, list items, table rows and headings; a heading line, a
blank line, code, a sentence with no word (a lone token) and a line that ends in a colon (it
introduces what follows: "The trials found:", or the lead line of a lookup) are not claims. A token belongs to
the sentence it ends, so "Aspirin helps. [1]" cites the sentence before the token.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

from zocrates_citations.claims import ParsedAnswer, _Structure
from zocrates_citations.resolve import split_sources
from zocrates_contracts import Citation, CitationQuality

_WORD = re.compile(r"[^\W\d_]")  # a letter: what makes a piece of text a sentence of words


def claim_sentences(answer: ParsedAnswer, end: int | None = None) -> list[tuple[int, int]]:
    """`(start, end)` of each claim sentence of `answer.text[:end]` (see the module), in order,
    whitespace around it left out; the source sections, when the answer holds any, are not claims."""
    stop = len(split_sources(answer.text)[0]) if end is None else min(end, len(answer.text))
    masked = answer.view.masked[:stop]
    structure = _Structure(masked)
    skipped = [(a, b) for a, b in zip(structure.stops, structure.starts) if b > a]  # headings, blanks
    skipped_starts = [a for a, _ in skipped]
    plain, cursor = [], 0  # the masked text with its tokens blanked: a lone token is no sentence
    for token in answer.tokens:
        if token.start < stop:
            plain += [masked[cursor : token.start], " " * (min(token.end, stop) - token.start)]
            cursor = min(token.end, stop)
    words = "".join([*plain, masked[cursor:]])
    cuts = sorted({0, stop, *structure.stops, *structure.starts, *structure.sentence_ends})
    sentences = []
    for start, finish in zip(cuts, cuts[1:]):
        k = bisect_right(skipped_starts, start) - 1
        if k >= 0 and finish <= skipped[k][1]:
            continue
        piece = words[start:finish].strip()
        if _WORD.search(piece) and not piece.endswith(":"):
            raw = masked[start:finish]
            sentences.append((start + len(raw) - len(raw.lstrip()), start + len(raw.rstrip())))
    return sentences


def citation_quality(
    answer: ParsedAnswer, citations: Sequence[Citation], end: int | None = None, threshold: float | None = None
) -> CitationQuality:
    """The citation quality of `answer` as resolved into `citations` (their occurrences' verdicts,
    numbered per chunk index in the order of the answer's tokens, as resolution numbers them).
    `end`: where the written answer ends in its text (notes after it are not claims). `threshold`:
    the one the verdicts applied, which a bracket's `joint_support` must reach to support its
    sentence (None: joint checks are not counted)."""
    verdicts = {c.index: [o.verdict for o in c.occurrences] for c in citations}
    joints = {c.index: [o.joint_support for o in c.occurrences] for c in citations}
    sentences = claim_sentences(answer, end)
    starts = [s for s, _ in sentences]
    cited: list[list[str]] = [[] for _ in sentences]
    joint: list[list[float]] = [[] for _ in sentences]  # the scored joint checks of its brackets
    seen: dict[int, int] = {}
    for token, claim in zip(answer.tokens, answer.claims):
        if claim is None:
            continue
        k = _owner(answer.view.masked, sentences, starts, token.start)
        for index in token.indices:
            n = seen.get(index, 0)
            seen[index] = n + 1
            given = verdicts.get(index, ())
            if k is not None and n < len(given):
                cited[k].append(given[n])
                p = joints.get(index, ())[n] if n < len(joints.get(index, ())) else None
                if p is not None and threshold is not None:
                    joint[k].append(p)
    verified = [v for vs in cited for v in vs if v != "FAIL_OPEN"]
    return CitationQuality(
        claims=len(sentences),
        supported=sum("KEPT" in vs or any(p >= threshold for p in js) for vs, js in zip(cited, joint)),
        uncited=sum(not vs for vs in cited),
        unverified=sum(bool(vs) and all(v == "FAIL_OPEN" for v in vs) and not js for vs, js in zip(cited, joint)),
        citations=len(verified),
        supporting=verified.count("KEPT"),
    )


def _owner(masked: str, sentences: list[tuple[int, int]], starts: list[int], position: int) -> int | None:
    """The claim sentence a token at `position` cites: the one it follows words of; else the one
    it ends, on the same line ("Aspirin helps. [1]"); else the one it opens ("[1] shows that...")."""
    k = bisect_right(starts, position) - 1
    inside = k >= 0 and position < sentences[k][1]
    if inside and _WORD.search(masked[sentences[k][0] : position]):
        return k
    before = k - 1 if inside else k
    if before >= 0 and "\n" not in masked[sentences[before][1] : position]:
        return before
    return k if inside else None
