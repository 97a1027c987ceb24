"""What every backend shares: the pair, the two questions, the outcome type and the interfaces.

There are two shapes of backend:

- a `BatchModel` runs in this process (a torch checkpoint, the heuristic). It only knows how
  to score one batch synchronously (`predict`), in LitServe's stages: `setup(device)` once,
  `cost` to budget a batch, `predict` for one forward pass. The micro-batcher
  (`zocrates_verifier.domain.batcher`) feeds it pairs from all concurrent requests.
- a `Backend` answers a whole request asynchronously. Remote servers implement it directly
  (they batch on their side); `BatchedBackend` adapts a `BatchModel` + micro-batcher to it.

Outcomes are values, not exceptions: `score` returns one `float | VerifierError` per pair,
so one failed pair never hides the others' probabilities.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SINGLE_QUESTION = "Does the source_text support the claim?"
COMPOUND_QUESTION = "This claim cites multiple sources. Does the source_text support a substantive part of the claim?"


@dataclass(frozen=True, slots=True)
class Pair:
    """One citation occurrence to score: does `source_text` support `claim`?"""

    claim: str
    source_text: str
    compound: bool = False
    #: The answer writer's rendering of a unit of the passage (`VerificationPair.quoted`).
    quoted: bool = False
    #: A joint pair's passages: where each starts in `source_text` (`VerificationPair.passage_starts`);
    #: empty for a pair of one passage.
    passage_starts: tuple[int, ...] = ()

    @property
    def joint(self) -> bool:
        return len(self.passage_starts) > 1

    @property
    def question(self) -> str:
        return COMPOUND_QUESTION if self.compound else SINGLE_QUESTION


def _normalise_question(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("`", "")).strip().rstrip("?.!").lower()


_QUESTIONS = {_normalise_question(SINGLE_QUESTION): False, _normalise_question(COMPOUND_QUESTION): True}


def compound_for_question(instructions: str) -> bool | None:
    """True/False for the compound/single question (backticks, case, spacing ignored), else None."""
    return _QUESTIONS.get(_normalise_question(instructions))


_PART_SPLIT = re.compile(r"\s*(?:;|,\s*(?:and|but|while|whereas)\s+|\s+whereas\s+|\s+while\s+)\s*")


def claim_parts(claim: str, min_words: int = 4) -> list[str]:
    """The claim, then its clauses of at least `min_words` words.

    A compound bracket `[1, 2]` asks whether a source supports "a substantive part" of the
    claim; a model that only reads (claim, passage) answers that as its best score over the
    claim and its clauses.
    """
    parts = [p.strip(" ,.") for p in _PART_SPLIT.split(claim)]
    clauses = [p for p in parts if len(p.split()) >= min_words]
    return [claim] + (clauses if len(clauses) > 1 else [])


class VerifierError(Exception):
    """A pair (or a request) that got no probability; `code` is a `ServiceError` code."""

    code = "internal"


class DeadlineExceeded(VerifierError):
    code = "timeout"


class Overloaded(VerifierError):
    """The queue is full: an explicit refusal, retry after `retry_after_s`."""

    code = "overloaded"

    def __init__(self, message: str, retry_after_s: float = 1.0):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PredictFailed(VerifierError):
    code = "internal"


class Unreachable(VerifierError):
    code = "unreachable"


class NotAvailable(VerifierError):
    code = "not_available"


Outcome = float | VerifierError


class BatchModel(ABC):
    """A model scored in-process, one batch at a time, by the micro-batcher's worker thread."""

    provider: str = ""
    model: str = ""

    @abstractmethod
    def setup(self, device: str) -> None:
        """Load weights onto `device`; called once, off the event loop."""

    @abstractmethod
    def cost(self, pair: Pair) -> int:
        """Tokens this pair occupies in a forward pass (what the batch budget counts)."""

    @abstractmethod
    def predict(self, pairs: Sequence[Pair]) -> list[float]:
        """Support probabilities for `pairs`, in order, from one forward pass."""

    #: The threshold the checkpoint was calibrated for, as it is read here (None: not calibrated).
    calibrated_threshold: float | None = None

    def describe(self) -> dict[str, Any]:
        """Extra facts for /health (dtype, labels...)."""
        return {}


class Backend(ABC):
    """Scores a request's pairs; never raises for a pair's failure (see `Outcome`)."""

    provider: str = ""
    model: str = ""
    device: str = ""

    async def start(self) -> None:
        """Load or connect; called once before the first `score`."""

    @abstractmethod
    async def score(self, pairs: Sequence[Pair], deadline: float | None) -> list[Outcome]:
        """One outcome per pair, in order. `deadline` is a `time.monotonic()` instant.

        May raise `Overloaded` to refuse the whole request.
        """

    async def close(self) -> None:
        """Release connections, threads and memory."""

    def health(self) -> dict[str, Any]:
        """Readiness facts for /health: at least `loaded` (bool)."""
        return {"loaded": True}

    def calibrated_threshold(self) -> float | None:
        """The threshold the answering model was calibrated for, if it carries one."""
        return None
