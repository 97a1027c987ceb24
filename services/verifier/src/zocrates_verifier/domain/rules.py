"""The rules a local backend applies to its model's scores, and what they did (for /health).

- the number rule (`numbers.cap_unprinted_numbers`): a claim stating a number its passage does
  not print is capped at `numbers.UNPRINTED_NUMBER_SUPPORT`;
- the verbatim rule (`windows.raise_quotes`): a quote scores at least `windows.VERBATIM_SUPPORT`.

With the verbatim rule on, the number rule leaves quotes alone: a quote's numbers are its
passage's (the answer writer may send a table row with its caption), and /health shows the
model's own score of the last quote raised, not a capped one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zocrates_verifier.domain.numbers import cap_unprinted_numbers
from zocrates_verifier.domain.windows import raise_quotes


@dataclass
class ScoreRules:
    """Which rules are on, and counters of what each did since start-up."""

    verbatim: bool = True
    numbers: bool = True
    #: Pairs the verbatim rule raised above the model's own score, and the last model score.
    verbatim_raised: int = 0
    last_verbatim_model_score: float | None = None
    #: Pairs the number rule capped below the model's own score (not which numbers: /health is
    #: shared by every user of a hosted deployment).
    number_capped: int = 0

    def apply(self, pairs: Sequence, support: list[float]) -> None:
        """Apply the rules that are on to `support` (the model's scores of `pairs`), in place."""
        if self.numbers:
            self.number_capped += len(cap_unprinted_numbers(pairs, support, spare_quotes=self.verbatim))
        if self.verbatim:
            for _, own in raise_quotes(pairs, support):
                self.verbatim_raised += 1
                self.last_verbatim_model_score = round(own, 4)

    def describe(self) -> dict:
        return {
            "verbatim_rule": self.verbatim,
            "verbatim_raised": self.verbatim_raised,
            "last_verbatim_model_score": self.last_verbatim_model_score,
            "number_rule": self.numbers,
            "number_capped": self.number_capped,
        }
