"""Verification of a turn's citations, the pure part: which pairs to send, how the scores that
come back land on the occurrences. Every occurrence starts unverified (`None`, fails open) and
keeps that unless a score for it arrives; with its score come the spans of the chunk text that
support its claim (offsets into the chunk text: a pair's `source_text` is a prefix of it).

A bracket citing several passages (`[1, 3]`, `[1][3]`) is also checked as a whole: one joint
pair, the claim against its passages joined in bracket order by a blank line, each cut to an
equal share of `MAX_SOURCE_CHARS`. Its score is stored on every occurrence of the bracket
(`joint_merged`); a joint pair that gets no score leaves `None` there, and never touches the
per-index scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from zocrates_contracts import EvidenceChunk, PairScore, TextSpan, VerificationPair
from zocrates_contracts.messages import MAX_CLAIM_CHARS, MAX_JOINT_PASSAGES, MAX_PAIRS, MAX_SOURCE_CHARS

#: What joins a joint pair's passages.
JOINT_SEPARATOR = "\n\n"


def pairs_for(
    occurrences, chunks: list[EvidenceChunk], quotes: Mapping[int, Sequence[object]] | None = None
) -> list[VerificationPair]:
    """One pair per occurrence. The pair's bounds are the contract's: a longer claim or passage
    is cut, and a blank one left unverified, never a validation error that would end the turn.

    `quotes`: per chunk index, one entry per occurrence citing it, in answer order, that is the
    offline writer's rendering of a unit of that passage (`ExtractiveAnswer.quotes`, what
    resolution marks `quoted`): the first that many occurrences of that index are sent `quoted`."""
    quoted_per_index = {int(k): len(v) for k, v in (quotes or {}).items()}
    pairs = []
    for o in occurrences:
        claim, source = o.claim[:MAX_CLAIM_CHARS], chunks[o.chunk_index - 1].text[:MAX_SOURCE_CHARS]
        if claim.strip() and source.strip():
            pairs.append(
                VerificationPair(
                    chunk_index=o.chunk_index,
                    occurrence=o.occurrence,
                    claim=claim,
                    source_text=source,
                    compound=o.compound,
                    quoted=o.occurrence <= quoted_per_index.get(o.chunk_index, 0),
                )
            )
    return pairs


def joint_pairs(brackets, chunks: list[EvidenceChunk]) -> list[VerificationPair]:
    """One joint pair per bracket of `brackets` (`ParsedAnswer.brackets`: those citing two passages
    or more), named by the bracket's first occurrence. Each passage is cut to an equal share of
    `MAX_SOURCE_CHARS` (less the separators), so the joined text holds every passage; a bracket
    with a blank claim, a blank passage or more than `MAX_JOINT_PASSAGES` passages is not checked."""
    pairs = []
    for bracket in brackets:
        claim = bracket.claim[:MAX_CLAIM_CHARS]
        n = len(bracket.indices)
        if not claim.strip() or not 2 <= n <= MAX_JOINT_PASSAGES:
            continue
        share = (MAX_SOURCE_CHARS - len(JOINT_SEPARATOR) * (n - 1)) // n
        passages = [chunks[index - 1].text[:share] for index in bracket.indices]
        if not all(p.strip() for p in passages):
            continue
        starts, offset = [], 0
        for passage in passages:
            starts.append(offset)
            offset += len(passage) + len(JOINT_SEPARATOR)
        first_index, first_occurrence = bracket.members[0]
        pairs.append(
            VerificationPair(
                chunk_index=first_index,
                occurrence=first_occurrence,
                claim=claim,
                source_text=JOINT_SEPARATOR.join(passages),
                compound=False,  # the question is whether they support the whole claim together
                joint=True,
                passage_starts=starts,
            )
        )
    return pairs


def batches(pairs: list[VerificationPair], size: int = MAX_PAIRS) -> list[list[VerificationPair]]:
    """The pairs in requests of at most `size` (what one request may carry)."""
    return [pairs[i : i + size] for i in range(0, len(pairs), size)]


def unverified(occurrences) -> dict[int, list[float | None]]:
    """Per chunk index, one `None` per occurrence citing it."""
    probabilities: dict[int, list[float | None]] = {}
    for o in occurrences:
        probabilities.setdefault(o.chunk_index, []).append(None)
    return probabilities


def merged(occurrences, scores: list[PairScore]) -> dict[int, list[float | None]]:
    """`unverified(occurrences)` with each score in its slot; a score for no occurrence is dropped."""
    probabilities = unverified(occurrences)
    for score in scores:
        if score.joint:
            continue  # a bracket's, not its first index's (`joint_merged`)
        slots = probabilities.get(score.chunk_index)
        if slots is not None and score.occurrence <= len(slots):
            slots[score.occurrence - 1] = score.probability
    return probabilities


def merged_spans(occurrences, scores: list[PairScore]) -> dict[int, list[list[TextSpan]]]:
    """Per chunk index, the supporting spans of each occurrence citing it (none when unscored)."""
    return _merged_lists(occurrences, scores, lambda score: list(score.spans))


def merged_unprinted(occurrences, scores: list[PairScore]) -> dict[int, list[list[str]]]:
    """Per chunk index, the numbers each occurrence's claim states that its passage does not
    print (the verifier's number rule; none when unscored or all printed)."""
    return _merged_lists(occurrences, scores, lambda score: list(score.unprinted_numbers))


def _merged_lists(occurrences, scores: list[PairScore], read) -> dict[int, list[list]]:
    found: dict[int, list[list]] = {i: [[] for _ in slots] for i, slots in unverified(occurrences).items()}
    for score in scores:
        if score.joint:
            continue
        slots = found.get(score.chunk_index)
        if slots is not None and score.occurrence <= len(slots):
            slots[score.occurrence - 1] = read(score)
    return found


def joint_merged(occurrences, brackets, scores: list[PairScore]) -> dict[int, list[float | None]]:
    """`unverified(occurrences)` with each bracket's joint score (a joint `PairScore` named by the
    bracket's first occurrence) in the slot of every occurrence of that bracket; the occurrences of
    no scored bracket stay `None`."""
    joint = unverified(occurrences)
    found = {(s.chunk_index, s.occurrence): s.probability for s in scores if s.joint}
    for bracket in brackets:
        p = found.get(bracket.members[0])
        if p is None:
            continue
        for index, occurrence in bracket.members:
            slots = joint.get(index)
            if slots is not None and occurrence <= len(slots):
                slots[occurrence - 1] = p
    return joint
