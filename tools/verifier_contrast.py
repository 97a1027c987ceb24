"""Contradictions made from supported pairs by reversing a direction of effect or by negating one
side: the failures the first trained verifier missed (docs/verifier-model.md, "Known failures":
"daily aspirin raises the risk of stroke" read as support of "lowered the risk by a third", and
"metformin reduces HbA1c" of "metformin did not reduce HbA1c").

SciFact's refuted claims are mostly of these forms (a claim negated, or its effect reversed),
and the training sources hold few minimal pairs of them. Each rule changes one word or inserts
one, so a row and its source differ only where the meaning turns:

- `reverse`: the first word of a direction lexicon swapped for its opposite (increases →
  decreases, higher → lower, activates → inhibits);
- `negate`: a negation removed ("is not" → "is", "cannot" → "can") or added ("is" → "is not",
  "reduces" → "does not reduce", "reduced" → "did not reduce"), never inside a relative clause.

`contrast_rows` builds the training rows (claim side, and passage side where the passage is one
sentence); `contrast_probe_rows` the same from any split, to measure what share stays below the
threshold. Rules, not a model: no package here ships a paraphraser, and a rule's output is
exactly predictable for a test.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Opposites, each way where both read naturally. Verbs list their forms (base, -s, -ed, -ing).
_VERB_OPPOSITES = (
    ("increase", "decrease"),
    ("raise", "lower"),
    ("enhance", "impair"),
    ("promote", "suppress"),
    ("activate", "inhibit"),
    ("improve", "worsen"),
    ("upregulate", "downregulate"),
    ("up-regulate", "down-regulate"),
    ("strengthen", "weaken"),
    ("stimulate", "repress"),
)
_ONE_WAY_VERBS = (("reduce", "increase"), ("prevent", "cause"), ("accelerate", "slow"), ("elevate", "reduce"))
_WORD_OPPOSITES = (
    ("higher", "lower"),
    ("more", "less"),
    ("greater", "smaller"),
    ("positive", "negative"),
    ("positively", "negatively"),
    ("better", "worse"),
    ("faster", "slower"),
    ("longer", "shorter"),
    ("beneficial", "harmful"),
    ("high", "low"),
)
_ONE_WAY_WORDS = (("larger", "smaller"), ("fewer", "more"), ("elevated", "reduced"))


def _forms(verb: str) -> tuple[str, str, str, str]:
    """(base, third person, past, gerund) of a regular verb of the lexicon."""
    stem = verb[:-1] if verb.endswith("e") else verb  # no lexicon verb doubles its last consonant
    third = verb + "es" if verb.endswith("ss") else verb + "s"
    return verb, third, stem + "ed", stem + "ing"


def _verb_opposites() -> dict[str, str]:
    table: dict[str, str] = {}
    for a, b in _VERB_OPPOSITES:
        for fa, fb in zip(_forms(a), _forms(b)):
            table.setdefault(fa, fb)
            table.setdefault(fb, fa)
    for a, b in _ONE_WAY_VERBS:
        for fa, fb in zip(_forms(a), _forms(b)):
            table.setdefault(fa, fb)
    return table


def _opposites() -> dict[str, str]:
    table = dict(VERB_OPPOSITES)
    for a, b in _WORD_OPPOSITES:
        table[a], table[b] = b, a  # the adjective reading of "lower", "increased" wins
    for a, b in _ONE_WAY_WORDS:
        table[a] = b
    return table


VERB_OPPOSITES = _verb_opposites()
OPPOSITES = _opposites()
#: After these a lexicon word is a verb ("to lower the risk"), whatever its adjective reading.
_BEFORE_VERB = {"to", "can", "could", "may", "might", "will", "would", "should", "must", "does", "do", "did"}
#: -s and -ed forms of the lexicon's verbs, with their base: what do-support negates.
_FINITE = {
    form: (base, "does" if form.endswith("s") else "did")
    for pair in _VERB_OPPOSITES + _ONE_WAY_VERBS
    for base in pair
    for form in _forms(base)[1:3]
}
#: A word before which an -ed form reads as an adjective ("the increased risk"), not a verb.
_BEFORE_ADJECTIVE = {"a", "an", "the", "of", "with", "in", "to", "and", "or", "by", "for", "on", "at", "from", "as"}
#: "no" before a plural is dropped, before a singular becomes its article; these words are left.
_NO = re.compile(r"\b(no)\s+([A-Za-z]+)", re.IGNORECASE)
_NEGATION = re.compile(r"\b(not|no|never|neither|nor|without|none|cannot)\b|n't\b", re.IGNORECASE)
#: "has" before a participle is an auxiliary ("has been shown"); otherwise the main verb.
_HAVE = {"has": "does", "have": "do", "had": "did"}
_NO_KEPT = {"longer", "more", "less", "one", "other", "significant", "significantly"}
_AUXILIARY = r"is|are|was|were|can|could|may|might|will|would|should|has|have|had|does|do|did|must"
_NEGATED = re.compile(rf"\b({_AUXILIARY})\s+not\b", re.IGNORECASE)
_CONTRACTED = re.compile(r"\b(is|are|was|were|could|would|should|has|have|had|does|do|did)n't\b", re.IGNORECASE)
_CANNOT = re.compile(r"\b(c)annot\b|\b(c)an't\b", re.IGNORECASE)
_AUX = re.compile(rf"\b({_AUXILIARY})\b(?!\s+not\b)", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z-]*")
#: A word that opens a relative or subordinate clause: an auxiliary or verb right after it (or
#: one word after it) belongs to that clause, and negating it would not turn the main claim.
_CLAUSE = {"who", "that", "which", "whose", "whom", "when", "where", "while", "if", "whether", "although", "because"}


def _cased(replacement: str, original: str) -> str:
    return replacement[:1].upper() + replacement[1:] if original[:1].isupper() else replacement


def _in_clause(text: str, start: int) -> bool:
    before = re.findall(r"[A-Za-z]+", text[:start].lower())[-2:]
    return any(word in _CLAUSE for word in before)


def reverse(text: str) -> str | None:
    """`text` with its first direction word replaced by the opposite, or None without one (or
    with a negation: "does not increase" and "does not decrease" can both be true)."""
    if _NEGATION.search(text):
        return None
    previous = ""
    for m in _WORD.finditer(text):
        word, before, previous = m.group().lower(), previous, m.group().lower()
        opposite = (VERB_OPPOSITES if before in _BEFORE_VERB else OPPOSITES).get(word) or OPPOSITES.get(word)
        if opposite and not _in_clause(text, m.start()):
            return text[: m.start()] + _cased(opposite, m.group()) + text[m.end() :]
    return None


def negate(text: str) -> str | None:
    """`text` with its negation removed, or with one added to its first main auxiliary or
    direction verb; None when no rule applies."""
    for pattern, keep in ((_NEGATED, 1), (_CONTRACTED, 1)):
        m = pattern.search(text)
        if m:
            return text[: m.start()] + m.group(keep) + text[m.end() :]
    m = _CANNOT.search(text)
    if m:
        return text[: m.start()] + (m.group(1) or m.group(2)) + "an" + text[m.end() :]
    m = _NO.search(text)
    if m:
        noun = m.group(2)
        if noun.lower() in _NO_KEPT or re.search(r"\b(never|neither|nor|without)\b", text, re.IGNORECASE):
            return None
        plural = noun.endswith("s") and not noun.endswith("ss")
        article = "" if plural else ("an " if noun[0].lower() in "aeiou" else "a ")
        return text[: m.start()] + _cased(article + noun, m.group(1)) + text[m.end() :]
    if re.search(r"\b(never|neither|nor|without|none)\b", text, re.IGNORECASE):
        return None  # a negation no rule here removes: adding one would double it
    previous = ""
    for m in _WORD.finditer(text):
        word, before, previous = m.group(), previous, m.group().lower()
        if _in_clause(text, m.start()):
            continue
        if word.lower() in _HAVE:
            following = re.match(r"\s+([A-Za-z]+)", text[m.end() :])
            if not (following and re.search(r"(ed|en|wn|ne)$", following.group(1))):
                added = f"{_HAVE[word.lower()]} not have"
                return text[: m.start()] + _cased(added, word) + text[m.end() :]
        if re.fullmatch(_AUXILIARY, word, re.IGNORECASE):
            added = "cannot" if word.lower() == "can" else f"{word} not"
            return text[: m.start()] + _cased(added, word) + text[m.end() :]
        finite = _FINITE.get(word.lower())
        if finite and before and before not in _BEFORE_ADJECTIVE:
            base, do = finite
            return text[: m.start()] + _cased(f"{do} not {base}", word) + text[m.end() :]
    return None


def _one_sentence(passage: str) -> bool:
    """A short single sentence: in a longer one the first auxiliary is as likely a side clause's."""
    return len(passage) <= 250 and not re.search(r"[.!?]\s+[A-Z]", passage.strip())


def contrast_rows(rows: Sequence[dict]) -> list[dict]:
    """From every supported row: its claim reversed and its claim negated (each rule that
    applies), and, where the passage is one sentence, the passage negated; each labelled
    `contradict`, with its source's group and its rule in `source`."""
    out = []
    for r in rows:
        if r["label"] != "support":
            continue
        for rule in (reverse, negate):
            claim = rule(r["claim"])
            if claim and claim != r["claim"]:
                out.append(
                    r | {"claim": claim, "label": "contradict", "source": f"{r['source']}+{rule.__name__}d_claim"}
                )
        if _one_sentence(r["passage"]):
            passage = negate(r["passage"])
            if passage and passage != r["passage"]:
                out.append(r | {"passage": passage, "label": "contradict", "source": f"{r['source']}+negated_passage"})
    return out


def contrast_probe_rows(rows: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(originals, turned): each supported row that a rule turns, and what every rule makes of it
    (claim reversed, claim negated, one-sentence passage negated), for a probe of a split; a
    turned row's `original` is its original's index."""
    originals, turned = [], []
    for r in rows:
        if r["label"] != "support":
            continue
        made = [{"claim": t, "passage": r["passage"]} for t in (reverse(r["claim"]), negate(r["claim"])) if t]
        if _one_sentence(r["passage"]) and (p := negate(r["passage"])):
            made.append({"claim": r["claim"], "passage": p})
        if made:
            turned += [m | {"label": "contradict", "original": len(originals)} for m in made]
            originals.append({"claim": r["claim"], "passage": r["passage"], "label": "support"})
    return originals, turned
