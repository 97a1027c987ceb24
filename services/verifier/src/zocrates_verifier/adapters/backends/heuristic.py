"""The offline verifier: a documented lexical estimator with a fitted logistic calibration.

It needs no model and no network, so it is the default. It reads a (claim, passage) pair the
way a careful reviewer skims: are the claim's content words there, are they there together
(in one place of the passage, in the same order), are the claim's numbers in the passage, and
does the passage say the opposite (a negation or a reversed direction of effect)?

Features (each in [0, 1] unless said otherwise), computed against the whole passage and its
best window of two consecutive sentences:

| feature        | what it measures |
| ---            | --- |
| `coverage`     | share of the claim's content stems found anywhere in the passage |
| `window`       | share found inside the best two-sentence window (evidence in one place) |
| `bigrams`      | share of the claim's adjacent content-stem pairs found adjacent in the passage |
| `missing_nums` | 1 when a number of the claim (rounding-tolerant) is not in the passage |
| `negation`     | 1 when the claim and its best window disagree on negation (odd/even cue count) |
| `direction`    | 1 when the claim says increase and the window only decrease, or the reverse |
| `length`       | log(1 + content words of the claim) / 3: long claims over-claim more |

Stemming is deliberately light (suffix stripping, British/American vowel folding) so the
estimator stays transparent. The probability is `sigmoid(b + w . features)` with the
coefficients below, fitted by `services/verifier/scripts/fit_heuristic.py` on a split of
SciFact (see `zocrates_verifier.domain.calibration`); refit after changing a feature with

    .venv/bin/python services/verifier/scripts/fit_heuristic.py

and paste the printed `COEFFICIENTS` here. A compound occurrence scores the best of the claim
and its clauses (`claim_parts`): it asks whether the passage supports a substantive part.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from zocrates_verifier.adapters.backends.base import BatchModel, Pair, claim_parts
from zocrates_verifier.domain import windows
from zocrates_verifier.domain.numbers import NUMBER_WORDS, WORD, number_found, numbers
from zocrates_verifier.domain.rules import ScoreRules

#: Fitted by scripts/fit_heuristic.py (L2 logistic regression, SciFact train split plus
#: number-swap negatives). Order: intercept, then FEATURES.
FEATURES = ("coverage", "window", "bigrams", "missing_nums", "negation", "direction", "length")
COEFFICIENTS = (-2.2630, 2.2896, 1.3570, -0.0125, -1.7973, 0.0577, -1.0462, 0.0410)

_STOPWORDS = frozenset(
    """
a about above after again against all also although am an and any are as at be because been
before being below between both but by can could did do does doing during each either et al
for from further had has have having here how however i if in into is it its itself just may
might more most much must my no nor not of off on once only or other our out over own per
same shall she should so some such than that the their them then there these they this those
through thus to too under until up upon very via was we were what when where whether which
while who whom why will with within without would you your e.g i.e vs versus among amongst
respectively compared patients patient study studies result results shown show shows showed
""".split()
)

_NEGATIONS = frozenset(
    """
not no never none neither nor without cannot lack lacks lacked lacking absent absence fail
fails failed unable nothing nobody
""".split()
)

# Direction of an effect; a claim that says "increases" cited for a passage that only says
# "decreased" is SciFact's most common kind of contradiction.
_UP = frozenset(
    """
increase increases increased increasing higher high elevate elevates elevated elevation
enhance enhances enhanced promote promotes promoted raise raises raised more greater gain
upregulate upregulates upregulated upregulation activate activates activated activation
improve improves improved stimulate stimulates stimulated induce induces induced accelerate
accelerates accelerated augment augmented rise rises rose worsen worsens worsened
""".split()
)
_DOWN = frozenset(
    """
decrease decreases decreased decreasing lower low reduce reduces reduced reduction inhibit
inhibits inhibited inhibition suppress suppresses suppressed suppression less fewer loss
downregulate downregulates downregulated downregulation impair impairs impaired diminish
diminishes diminished attenuate attenuates attenuated prevent prevents prevented decline
declines declined slows slowed drop dropped block blocks blocked
""".split()
)

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")
_SUFFIXES = (
    ("ational", "ate"),
    ("ization", "ize"),
    ("isation", "ize"),
    ("ations", "ate"),
    ("ation", "ate"),
    ("ments", ""),
    ("ment", ""),
    ("ness", ""),
    ("ings", ""),
    ("ing", ""),
    ("edly", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ed", ""),
    ("es", ""),
    ("ly", ""),
    ("s", ""),
)


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light stem: British/American vowel folding and one suffix strip, stems of >= 3."""
    if len(word) > 5:
        word = word.replace("ae", "e").replace("oe", "e")
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= 3:
            word = word[: len(word) - len(suffix)] + repl
            break
    if len(word) > 4 and word.endswith("e"):  # "reduce"/"reduc(ed)" meet at "reduc"
        word = word[:-1]
    return word


def _words(text: str) -> list[str]:
    return [NUMBER_WORDS.get(w, w) for w in WORD.findall(text.lower())]


def _content_stems(words: Sequence[str]) -> list[str]:
    return [stem(w) for w in words if w not in _STOPWORDS and not w.isdigit() and len(w) > 1]


def _negation_parity(words: Sequence[str]) -> int:
    return sum(1 for w in words if w in _NEGATIONS or w.endswith("n't")) % 2


def _direction(words: Sequence[str]) -> tuple[bool, bool]:
    return any(w in _UP for w in words), any(w in _DOWN for w in words)


@dataclass(frozen=True, slots=True)
class _Passage:
    stems: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    numbers: tuple[str, ...]
    windows: tuple[tuple[frozenset[str], tuple[str, ...]], ...]  # (stems, words) per window
    sentence_spans: tuple[windows.Span, ...]  # where each sentence lies in the passage


def _sentence_spans(text: str) -> list[windows.Span]:
    """Where each sentence of `text` (cut at `_SENTENCE`) lies in it, whitespace left out."""
    spans, start = [], 0
    for end, following in [*((m.start(), m.end()) for m in _SENTENCE.finditer(text)), (len(text), len(text))]:
        piece = text[start:end]
        if piece.strip():
            first = start + len(piece) - len(piece.lstrip())
            spans.append((first, first + len(piece.strip())))
        start = following
    return spans or [(0, len(text))]


def _prepare_passage(text: str) -> _Passage:
    spans = _sentence_spans(text)
    sentence_words = [_words(text[start:end]) for start, end in spans]
    all_words = [w for ws in sentence_words for w in ws]
    stems = _content_stems(all_words)
    windows = []
    for i in range(len(spans)):
        words = tuple(w for ws in sentence_words[i : i + 2] for w in ws)
        windows.append((frozenset(_content_stems(words)), words))
    return _Passage(
        frozenset(stems), frozenset(zip(stems, stems[1:])), tuple(numbers(text)), tuple(windows), tuple(spans)
    )


def _best_window(p: _Passage, stems: Sequence[str]) -> int:
    """The window (of two sentences, from this one) holding most of the claim's content stems."""
    return max(range(len(p.windows)), key=lambda i: sum(s in p.windows[i][0] for s in stems))


def features(claim: str, passage: str | _Passage) -> list[float]:
    """The feature vector of (claim, passage), in `FEATURES` order."""
    p = _prepare_passage(passage) if isinstance(passage, str) else passage
    words = _words(claim)
    stems = list(dict.fromkeys(_content_stems(words)))
    if not stems:
        return [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    coverage = sum(s in p.stems for s in stems) / len(stems)
    best_stems, best_words = p.windows[_best_window(p, stems)]
    window = sum(s in best_stems for s in stems) / len(stems)
    ordered = _content_stems(words)
    claim_bigrams = list(zip(ordered, ordered[1:]))
    bigrams = sum(b in p.bigrams for b in claim_bigrams) / len(claim_bigrams) if claim_bigrams else coverage
    claim_numbers = numbers(claim)
    # One wrong number makes a wrong claim, however many others are right.
    missing = float(any(not number_found(n, p.numbers) for n in claim_numbers))
    negation = float(_negation_parity(words) != _negation_parity(best_words))
    claim_up, claim_down = _direction(words)
    window_up, window_down = _direction(best_words)
    direction = float(
        (claim_up and not claim_down and window_down and not window_up)
        or (claim_down and not claim_up and window_up and not window_down)
    )
    length = math.log1p(len(stems)) / 3.0
    return [coverage, window, bigrams, missing, negation, direction, length]


def probability(x: Sequence[float], coefficients: Sequence[float] = COEFFICIENTS) -> float:
    z = coefficients[0] + sum(w * v for w, v in zip(coefficients[1:], x))
    return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


def score_pair(pair: Pair, coefficients: Sequence[float] = COEFFICIENTS) -> windows.Support:
    """Calibrated support probability of one pair (compound: best of claim and clauses), with
    where the passage supports it: the best window of the claim part that scored best, narrowed
    to its sentences that share words with that part (`windows.evidence`)."""
    passage = _prepare_passage(pair.source_text)
    claims = claim_parts(pair.claim) if pair.compound else [pair.claim]
    p, claim = max((probability(features(c, passage), coefficients), c) for c in claims)
    stems = list(dict.fromkeys(_content_stems(_words(claim))))
    first = _best_window(passage, stems) if stems else 0
    spans = windows.evidence(claim, pair.source_text, passage.sentence_spans[first : first + 2])
    return windows.Support(p, spans)


class HeuristicModel(BatchModel):
    """The heuristic as a `BatchModel`, so it shares the batcher's deadlines and back-pressure.
    Its scores go through the same rules as the trained model's (`rules.ScoreRules`): with
    `number_rule`, a claim stating a number its passage does not print is capped; with
    `verbatim_rule`, a quote scores at least `windows.VERBATIM_SUPPORT`."""

    provider = "heuristic"
    model = "lexical-logistic-v1"

    def __init__(self, *, verbatim_rule: bool = True, number_rule: bool = True) -> None:
        self.rules = ScoreRules(verbatim=verbatim_rule, numbers=number_rule)

    def setup(self, device: str) -> None:
        # Nothing to load; the estimator is pure Python and runs on the CPU.
        pass

    def cost(self, pair: Pair) -> int:
        return (len(pair.claim) + len(pair.source_text)) // 4 + 1

    def predict(self, pairs: Sequence[Pair]) -> list[float]:
        support = [score_pair(p) for p in pairs]
        self.rules.apply(pairs, support)
        return support

    def describe(self) -> dict:
        return {"features": list(FEATURES), **self.rules.describe()}
