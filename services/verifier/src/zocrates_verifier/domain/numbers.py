"""Numbers in a claim and its passage, and the number rule: a claim stating a number its passage
does not print is not supported by that passage, whatever a model says.

A model reads numbers poorly: on the number probe (a sentence of the passage with its number
changed) the shipped cross-encoder let 5 to 12 % of changed numbers through its threshold on
three of the four splits (docs/verifier-model.md). A researcher who cites "mortality fell by
35 %" to a passage that says 25 % is the failure a citation check exists for, so the rule is
applied to the model's score, not learned: the support of such a pair is capped at
`UNPRINTED_NUMBER_SUPPORT`, the share of the calibration split's pairs with an unprinted number
that are labelled supported (26 of 133).

What counts: a number written in digits in the claim (a year, a count, a percentage, a dose),
not an ordinal ("2nd", "6th"), a decade ("the 1950s"), a name with digits ("CD4", "IL-6",
"COVID-19"), the number of a figure, table or section, the year of an author-year citation
("Datta et al. (2010)", which the passage itself rarely prints), or a convention: a significance
level ("p < 0.05") or a confidence level ("95% CI"). It is printed when the passage holds
the same value, allowing the claim to round it (76 % for 76.3 %) and the passage to spell it
("four patients" for "4 patients")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from zocrates_verifier.adapters.backends.base import claim_parts
from zocrates_verifier.domain import windows

#: The support probability a pair is capped at when its claim states a number the passage does
#: not print (see the module docstring; below any threshold the settings allow).
UNPRINTED_NUMBER_SUPPORT = 0.2

# "one", "half" and "double" are left out: "one of", "half-life", "double-blind".
NUMBER_WORDS = {
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "twice": "2",
    "threefold": "3",
    "twofold": "2",
}

WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_VALUE = r"(\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)"  # thousands separators and decimals
# A number not glued to letters before it (CD4, rs1934179 and IL-6 are names, not numbers);
# the second look-behind keeps ranges such as 76-85 (both ends are numbers).
NUMBER = re.compile(rf"(?<![a-z0-9.])(?<![a-z]-){_VALUE}")
# A number of the claim with the letters glued after it: "2nd", "1950s" and "2019's" are not
# stated values; "40mg" is.
_CLAIM_NUMBER = re.compile(rf"(?<![a-z0-9.,])(?<![a-z]-){_VALUE}([a-z']*)")
_NOT_STATED_SUFFIXES = frozenset({"st", "nd", "rd", "th", "s", "'s"})
# A label that numbers a part of a paper or a category: "Table 3", "phase 2", "type 2".
_LABEL_BEFORE = re.compile(
    r"\b(?:fig(?:ure)?s?|tab(?:le)?s?|sec(?:tion)?s?|chapters?|eqs?|equations?|refs?|appendix|supplementary"
    r"|pp?|pages?|steps?|phases?|stages?|types?|grades?|class(?:es)?|waves?|parts?|experiments?|stud(?:y|ies))"
    r"\.?\s*$"
)


def numbers(text: str) -> list[str]:
    """Numeric values in `text` (thousands separators dropped), number words included."""
    lowered = text.lower()
    values = [m.replace(",", "") for m in NUMBER.findall(lowered)]
    values += [NUMBER_WORDS[w] for w in WORD.findall(lowered) if w in NUMBER_WORDS]
    return values


# An author-year citation a language model writes into its prose: "(Datta et al., 2010)",
# "(2010)", "(Smith 2009; Jones 2012a)", "Datta et al. 2010". The year is the item's, which
# the cited passage rarely prints: it is not a value the claim states.
_YEAR = r"(?:19|20)\d{2}[a-z]?"
_AUTHOR_YEAR = re.compile(
    rf"\((?:[^()\d]{{0,80}}[\s,])?{_YEAR}(?:\s*[;,]\s*(?:[^()\d]{{0,80}}[\s,])?{_YEAR})*\)"
    rf"|\bet\s+al\.?,?\s*\(?{_YEAR}\b"
)


# Conventions, not findings: a significance level ("p < 0.05") and a confidence level ("95% CI").
_CONVENTION = re.compile(r"\bp\s*(?:<|≤|<=)\s*0?\.\d+|\b(?:90|95|99)\s?%\s*(?:ci\b|confidence|credible)")


def stated_numbers(claim: str) -> list[str]:
    """The numbers `claim` states in digits (thousands separators dropped): see the module
    docstring for what is left out."""
    lowered = _CONVENTION.sub(" ", _AUTHOR_YEAR.sub(" ", claim.lower()))
    return [
        m.group(1).replace(",", "")
        for m in _CLAIM_NUMBER.finditer(lowered)
        if m.group(2) not in _NOT_STATED_SUFFIXES
        and not _LABEL_BEFORE.search(lowered[max(0, m.start() - 24) : m.start()])
    ]


def number_found(value: str, passage_values: Sequence[str]) -> bool:
    """Same value, allowing the claim to round the passage (76% for 76.3%)."""
    try:
        target = float(value)
    except ValueError:
        return False
    decimals = len(value.split(".")[1]) if "." in value else 0
    for candidate in passage_values:
        try:
            number = float(candidate)
        except ValueError:
            continue
        if number == target or round(number, decimals) == target:
            return True
    return False


def unprinted_numbers(claim: str, passage: str) -> list[str]:
    """The numbers `claim` states that `passage` does not print."""
    return _unprinted(stated_numbers(claim), numbers(passage))


def _unprinted(stated: Sequence[str], printed: Sequence[str]) -> list[str]:
    """Of the values a claim states, those not among the passage's `printed` values."""
    return [value for value in stated if not number_found(value, printed)]


def cap_unprinted_numbers(
    pairs: Sequence, support: list[float], *, spare_quotes: bool = False
) -> list[tuple[int, float, list[str]]]:
    """The number rule over a batch: each pair (with `claim`, `source_text`, `compound`) whose
    claim states a number its passage does not print is capped at `UNPRINTED_NUMBER_SUPPORT` in
    `support` (in place; its evidence spans are kept), and carries those numbers
    (`windows.Support.unprinted`) whether or not the model had already scored it lower: they
    tell the reader why the citation failed. A compound claim is judged only when each of its
    parts states such a number: a part may cite another passage. `spare_quotes`: leave the
    verbatim rule's quotes alone (`windows.is_quote`). Returns (position, the score before, the
    unprinted numbers) of each pair capped."""
    capped = []
    for i, pair in enumerate(pairs):
        parts = claim_parts(pair.claim)[1:] if pair.compound else []
        stated = [stated_numbers(claim) for claim in parts or [pair.claim]]
        if not all(stated):
            continue  # most claims state none: their passage is not read
        printed = numbers(pair.source_text)  # once, for every part
        missing = [_unprinted(part, printed) for part in stated]
        if not all(missing) or (spare_quotes and windows.is_quote(pair.claim, pair.source_text, pair.quoted)):
            continue
        before = support[i]
        found = list(dict.fromkeys(n for part in missing for n in part))  # in the claim's order
        support[i] = windows.Support(min(before, UNPRINTED_NUMBER_SUPPORT), windows.spans_of(before), found)
        if before > UNPRINTED_NUMBER_SUPPORT:
            capped.append((i, before, found))
    return capped
