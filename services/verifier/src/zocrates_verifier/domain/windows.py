"""Sentence windows: how a cross-encoder trained on short premises reads a whole passage.

The shipped model was trained on premises of a sentence or two. Given a 200-token passage that
states the claim in one of its sentences among others, it answers "neither" (a sentence quoted
verbatim from its own passage scored a median P(support) of 0.24; docs/verifier-model.md). So a
pair is scored as several rows, one per window of the passage, and the rows' probabilities are
aggregated back into one:

- windows: each sentence alone, each run of two and of three consecutive sentences, and the
  whole passage when it is short (with the claim, within the 128 tokens the model was trained
  at). Sentences are cut by the project's splitter (`zocrates_citations.sentences`,
  abbreviation-aware) and at line breaks (table rows, paragraphs). At most `max_windows` are
  kept: the whole passage first, then the windows that share the most words with the claim
  (the cheap lexical step of retrieve-then-verify; a window that shares nothing with the claim
  cannot support it).
- aggregation (`aggregate`): the pair's distribution is that of its best-supporting window.
  Entailment is monotone: a passage holding a sentence that entails the claim entails it too.
  Contradiction would be too, and a passage with one supporting and one contradicting sentence
  is, read literally, conflicting evidence; but the model's "contradict" on windows other than
  the supporting one is mostly noise: it reads any sentence with other numbers than the
  claim's as a contradiction. Measured on the quote probe (bench/probe_verbatim_quotes.py,
  120 sentences quoted from their own chunk of the fixture PDFs, 120 against another chunk) and
  1,200 pairs of the calibration split, each aggregation recalibrated on those: the best
  window's distribution kept 96 % of the quotes at the calibrated threshold; taking the
  strongest contradiction of the windows that do not overlap the best one kept 58 %; the
  strongest contradiction of any window (which includes the longer windows holding the quote
  itself) kept 17 %. The calibration pairs' AUROC was 0.932 for all three. A contradiction the
  model sees in the supporting window itself still lowers the support, as before.
- evidence (`evidence`, `Support`): the best window is also where the passage supports the
  claim. Its sentences are mapped back to exact offsets of the passage (`sentence_spans`: a
  sentence cut at a line break, at a line-end hyphen or in a table row is still the passage's
  own characters), and the sentences at either end that share no word with the claim are left
  out. A backend returns the probability as a `Support`, a float that carries these spans.

A joint pair (a bracket's passages joined, `VerificationPair.joint`) is windowed passage by
passage (`joint_windows`): each of its windows is one window of every passage, side by side in
bracket order, each cut to an equal share of what the model reads. So whatever window the score
comes from, it saw text of every passage: the question is whether they support the claim
together. A joint score says nowhere where (no evidence spans).

`quoted_verbatim` is a rule beside the model: a claim of at least `MIN_QUOTE_WORDS` words that
is, word for word, one or more whole sentences of the passage (case, punctuation, line-end
hyphens and the passage's own bracketed reference numbers aside) is entailed by it: the passage
asserts exactly that. What the offline answer writer writes is such a quote. A pair the gateway
sends `quoted` (the writer's rendering of a unit of that passage: a sentence, a list item, a
table row with its caption and headers, the item's own record) is one too, though a rendered
row or record is not a sentence of the passage. `raise_quotes` applies the rule: every backend
that scores in-process (the trained model, the heuristic) floors a quote's score at
`VERBATIM_SUPPORT` and reports the score it would have given.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

from zocrates_citations.sentences import sentence_ends

#: Windows a pair is scored on at most (the whole passage counts as one).
MAX_WINDOWS = 4
#: Consecutive sentences a window holds at most.
MAX_WINDOW_SENTENCES = 3
#: A claim shorter than this is a fragment; the verbatim rule leaves it to the model.
MIN_QUOTE_WORDS = 6
#: What a quote (`is_quote`) scores at least, whatever the model says.
VERBATIM_SUPPORT = 0.99

_WORD = re.compile(r"[^\W_]+")
_REFERENCE_MARKER = re.compile(r"\[\s*\d{1,4}(?:\s*[-–—,;]\s*\d{1,4})*\s*\]")
_LINE_END_HYPHEN = re.compile(r"[-\u00ad\u2010\u2011][ \t]*\n\s*")
# Common words say nothing about whether a window speaks to the claim.
_COMMON = frozenset(
    "the and for with that this from was were are has have had been not but its their our".split()
    + "these those than into also which who can may more most such between both all each".split()
)


#: `(start, end)`: the characters `text[start:end]` of a passage.
Span = tuple[int, int]


def sentence_spans(text: str) -> list[Span]:
    """Where each of `sentences(text)` lies in `text`, exactly (surrounding whitespace left out)."""
    found = []
    offset = 0
    for line in text.splitlines(keepends=True):
        body = line.splitlines()[0]  # the line without its break
        start = 0
        for end in [*sentence_ends(body), len(body)]:
            piece = body[start:end]
            if piece.strip():
                first = offset + start + len(piece) - len(piece.lstrip())
                found.append((first, first + len(piece.strip())))
            start = end
        offset += len(line)
    return found


def sentences(text: str) -> list[str]:
    """`text`'s sentences, in order: cut at sentence ends and line breaks, blanks dropped."""
    return [text[start:end] for start, end in sentence_spans(text)]


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 2 and w not in _COMMON}


class Window(NamedTuple):
    """A run of the passage's sentences `[first, last)`; the whole passage is `(0, n)`."""

    text: str
    first: int
    last: int


def windows(
    claim: str,
    passage: str,
    *,
    whole_fits: bool,
    max_windows: int = MAX_WINDOWS,
    max_sentences: int = MAX_WINDOW_SENTENCES,
) -> list[Window]:
    """The passage's windows to score `claim` against, at most `max_windows` (see the module).

    `whole_fits`: the whole passage is short enough to be a window (the caller knows the
    model's lengths); then it is the first window. A passage of one sentence is just itself.
    """
    parts = sentences(passage)
    whole = Window(passage, 0, max(1, len(parts)))
    if len(parts) <= 1:
        return [whole]
    candidates: dict[str, tuple[int, Window]] = {}  # text -> (shared words, window)
    wanted = _content_words(claim)
    for size in range(1, min(max_sentences, len(parts)) + 1):
        for i in range(len(parts) - size + 1):
            text = " ".join(parts[i : i + size])
            candidates.setdefault(text, (len(wanted & _content_words(text)), Window(text, i, i + size)))
    chosen = [whole] if whole_fits else []
    ranked = sorted(candidates.values(), key=lambda c: (-c[0], c[1].last - c[1].first, c[1].first))
    for _, window in ranked:
        if len(chosen) >= max_windows:
            break
        if (window.first, window.last) != (whole.first, whole.last):
            chosen.append(window)
    return chosen


def passages(text: str, starts: Sequence[int]) -> list[str]:
    """The passages of a joint pair's `text`, each from its start to the next (whitespace around
    it, such as the blank line that joins them, left out)."""
    return [text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)])]


def _cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut at a word when there is one to cut at."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    return head.rsplit(None, 1)[0] if " " in head.strip() else head


def joint_windows(
    claim: str,
    text: str,
    starts: Sequence[int],
    *,
    whole_fits: bool,
    max_chars: int,
    max_windows: int = MAX_WINDOWS,
    max_sentences: int = MAX_WINDOW_SENTENCES,
) -> list[Window]:
    """A joint pair's windows, at most `max_windows`: the whole `text` first when it fits
    (`whole_fits`); then the k-th is the k-th best window of every passage (`windows`; its last
    when it has fewer), joined in bracket order by a blank line, each cut to an equal share of
    `max_chars`. Every window holds text of every passage. A joint window is no run of `text`'s
    sentences: its `first` and `last` are 0 (no evidence spans come of it)."""
    parts = passages(text, starts)
    share = max(1, (max_chars - 2 * (len(parts) - 1)) // max(1, len(parts)))
    ranked = [
        windows(claim, part, whole_fits=False, max_windows=max_windows, max_sentences=max_sentences) for part in parts
    ]
    chosen = [Window(text, 0, 0)] if whole_fits else []
    seen = {text}
    for k in range(max(len(r) for r in ranked)):
        if len(chosen) >= max_windows:
            break
        joined = "\n\n".join(_cut(r[min(k, len(r) - 1)].text, share) for r in ranked)
        if joined not in seen:
            seen.add(joined)
            chosen.append(Window(joined, 0, 0))
    return chosen


Distribution = tuple[float, float, float]


def evidence(claim: str, passage: str, spans: Sequence[Span]) -> tuple[Span, ...]:
    """Where `passage` supports `claim`, given the spans of the consecutive sentences that scored
    best: one span from the first to the last, less the sentences at either end that share no
    content word with the claim (the whole passage, when it was the best window, narrows to the
    part that speaks to the claim). A sentence cut at a line-end hyphen is read together with the
    rest of its word. Empty when there are no spans."""
    units: list[Span] = []
    for start, end in spans:
        if units and _LINE_END_HYPHEN.fullmatch(passage, units[-1][1] - 1, start):
            units[-1] = (units[-1][0], end)
        else:
            units.append((start, end))
    wanted = _content_words(claim)

    def unrelated(unit: Span) -> bool:
        return not wanted & _content_words(_LINE_END_HYPHEN.sub("", passage[unit[0] : unit[1]]))

    while len(units) > 1 and unrelated(units[0]):
        units.pop(0)
    while len(units) > 1 and unrelated(units[-1]):
        units.pop()
    return ((units[0][0], units[-1][1]),) if units else ()


def window_evidence(claim: str, passage: str, window: Window) -> tuple[Span, ...]:
    """`evidence` of a window's sentences."""
    return evidence(claim, passage, sentence_spans(passage)[window.first : window.last])


class Support(float):
    """A support probability that also says where the passage supports the claim: `spans`,
    offsets into the pair's `source_text` of the window the probability came from; and
    `unprinted`, the numbers the claim states that the passage does not print (the number rule's
    finding, `numbers.cap_unprinted_numbers`). It is a float, so whatever reads a probability
    reads it unchanged; a backend that cannot say where (a remote server) answers a plain float."""

    __slots__ = ("spans", "unprinted")

    def __new__(cls, probability: float, spans: Sequence[Span] = (), unprinted: Sequence[str] = ()) -> Support:
        support = super().__new__(cls, probability)
        support.spans = tuple(spans)
        support.unprinted = tuple(unprinted)
        return support


def spans_of(outcome: object) -> tuple[Span, ...]:
    """The spans an outcome carries (`Support`), else none."""
    return getattr(outcome, "spans", ())


def unprinted_of(outcome: object) -> tuple[str, ...]:
    """The unprinted numbers an outcome carries (`Support`), else none."""
    return getattr(outcome, "unprinted", ())


def best_window(scored: Sequence[tuple[Window, Distribution]]) -> tuple[Window, Distribution]:
    """The best-supporting window and its distribution."""
    return max(scored, key=lambda item: item[1][0])


def aggregate(scored: Sequence[tuple[Window, Distribution]]) -> Distribution:
    """The pair's (support, contradict, neither): that of its best-supporting window."""
    return best_window(scored)[1]


def _plain_words(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = _LINE_END_HYPHEN.sub("", text)
    text = _REFERENCE_MARKER.sub(" ", text)
    return " ".join(_WORD.findall(text.casefold()))


def quoted_verbatim(claim: str, passage: str) -> bool:
    """Whether `claim` (at least `MIN_QUOTE_WORDS` words) is, word for word, one or more whole
    consecutive sentences of `passage`. Whole sentences only: "all dogs bark" inside "Not all
    dogs bark." or "We tested whether X." is not a quote of what the passage asserts."""
    wanted = _plain_words(claim).split()
    if len(wanted) < MIN_QUOTE_WORDS:
        return False
    parts = [_plain_words(s).split() for s in sentences(_LINE_END_HYPHEN.sub("", passage))]
    for first in range(len(parts)):
        run: list[str] = []
        for words in parts[first:]:
            run += words
            if len(run) >= len(wanted):
                break
        if run == wanted:
            return True
    return False


def is_quote(claim: str, passage: str, quoted: bool = False) -> bool:
    """The verbatim rule's question: the answer writer says the claim renders a unit of the
    passage (`quoted`), or the claim is word for word whole sentences of it (`quoted_verbatim`)."""
    return quoted or quoted_verbatim(claim, passage)


def raise_quotes(pairs: Sequence, support: list[float]) -> list[tuple[int, float]]:
    """The verbatim rule over a batch: each pair (with `claim`, `source_text`, `quoted`) that is
    a quote and scored below `VERBATIM_SUPPORT` is raised to it in `support` (in place). Returns
    (position, the score before) of each pair raised, for the backend's /health counters."""
    raised = []
    for i, pair in enumerate(pairs):
        if support[i] < VERBATIM_SUPPORT and is_quote(pair.claim, pair.source_text, getattr(pair, "quoted", False)):
            raised.append((i, support[i]))
            support[i] = Support(VERBATIM_SUPPORT, spans_of(support[i]))
    return raised
