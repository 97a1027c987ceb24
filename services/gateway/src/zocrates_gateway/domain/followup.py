"""Follow-up questions: a question that refers back to the session's previous turn.

Without a language model a follow-up is recognised by its words: a pronoun that points back
("they", "their", "its", "these", "those"; "it" in a question of few words of its own), a
demonstrative with a research noun ("this study", "that model"), an ellipsis ("and in
children?", "what about ...", a count without its noun: "how many were taken?"), or no content
word of its own ("how many?"); never when the user says the topic changes ("On a different
subject: ..."). It is then
searched with the previous question's key terms added and the previous turn's cited items
first; only those items when it names them ("this paper", "that study"); and the offline
answer writer starts the units of the passages the previous answer cited ahead, and reads an
ellipsis ("and for mechanical devices?") as wanting the previous question's kind of answer. A question that names
its own topic and does not point back starts afresh.

With a language model, `rewrite_messages` asks it for a standalone search query instead, and
`history_messages` gives the answer writer the previous turns as they are remembered (their
coordinator views: author-year prose, no item keys, no chunk numbers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zocrates_contracts import ItemRef, ItemsScope, TurnRecord
from zocrates_contracts.messages import MAX_QUERY_CHARS
from zocrates_contracts.scopes import MAX_SCOPE_ITEMS
from zocrates_gateway.domain.synthesis import Earlier, content_words

_RESEARCH_NOUNS = (
    r"stud(?:y|ies)|papers?|articles?|trials?|reviews?|works?|preprints?|reports?|models?|methods?|"
    r"approach(?:es)?|cohorts?|samples?|results?|findings?|patients?|participants?|subjects?|"
    r"groups?|analys[ie]s|experiments?|data(?:set)?s?|tools?|systems?|interventions?|drugs?|"
    r"compounds?|inhibitors?|proteins?|structures?|surveys?|authors?|researchers?|teams?|"
    r"interviews?|respondents?|hospitals?|measures?|values?|numbers?|figures?|tables?|estimates?"
)
_DEMONSTRATIVE_RE = re.compile(rf"\b(?:this|that|these|those|the\s+same)\s+(?:\w+\s+)?(?:{_RESEARCH_NOUNS})\b", re.I)
# "these" and "those" point back with or without a noun after them ("how many of those ...").
_POINTER_RE = re.compile(r"\b(?:they|them|their|theirs|its|these|those)\b", re.I)
_IT_RE = re.compile(r"\bit\b", re.I)
_ELLIPSIS_RE = re.compile(
    r"^\s*(?:and|or|but|also|so|then|what\s+about|how\s+about|what\s+of|same\s+for|and\s+what\s+about)\b", re.I
)
# A question word of its own: "and how were they split by gender?" asks its own kind of question.
_QUESTION_WORD_RE = re.compile(r"\b(?:what|which|how|why|when|where|who|whom|whose)\b", re.I)
# A count or amount whose noun is left out: "how many were taken?", "how much did it cost?".
_COUNT_WITHOUT_NOUN_RE = re.compile(
    r"\bhow\s+(?:many|much)\s+(?:were|was|are|is|did|do|does|had|have|has|would|will|could|can)\b", re.I
)
# A question that is only its question word and what it asks for: "At what temperature?", "In
# which year?", "What dose?" ask it of what was being discussed.
_FRAGMENT_RE = re.compile(
    r"^\s*(?:(?:at|in|on|for|with|by|from|to|under|during|after|before)\s+(?:what|which)\s+(?:[\w-]+\s+)?[\w-]+"
    r"|(?:what|which)\s+(?!(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should|about|of)\b)"
    r"[\w-]+)\s*[?.!]*\s*$",
    re.I,
)
# The user says the topic changes: never a follow-up, whatever pronouns come after.
_NEW_TOPIC_RE = re.compile(
    r"^\s*(?:on\s+(?:an?\s+)?(?:different|other|another|new|unrelated|separate)\s+(?:subject|topic|note|matter)"
    r"|(?:a\s+)?(?:different|new|unrelated|separate|another)\s+(?:question|topic|subject)"
    r"|changing\s+(?:the\s+)?(?:subject|topic))\b",
    re.I,
)
# Naming the previous turn's items: search only them.
_RESTRICT_RE = re.compile(
    r"\b(?:this|that|the\s+same)\s+(?:paper|study|article|trial|review|work|preprint|report)\b"
    r"|\b(?:these|those|the)\s+authors\b",
    re.I,
)
#: Words a question uses without naming a topic of its own.
_GENERIC = content_words(
    "what which how many much why when where who whom whose is are was were did does do done "
    "report reported reporting find found finding findings result results value values number "
    "numbers measure measured show shown conclude concluded use used mean means give given get "
    "else more again exactly kind sort type one ones thing things way ways part parts main "
    "estimate estimated calculate calculated size sizes rate rates"
)
#: Content words of its own a question with "it" may have and still point back ("how varied
#: were the complaints it logged?"); with more it names its own topic ("is it true that ...").
MAX_OWN_WORDS_WITH_IT = 3
#: Key terms of the previous question carried into the search at most.
MAX_CARRIED_TERMS = 8
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]+|\d+(?:\.\d+)?%?")
_TOKEN_RE = re.compile(r"\[\s*\d+(?:\s*[-–,;]\s*\d+)*\s*\]")


@dataclass(frozen=True, kw_only=True)
class FollowUp(Earlier):
    """How to search a follow-up: `query` (the question and the previous question's key terms,
    since a follow-up's own words rarely name what it asks about: "how many were taken?"),
    `items` (the previous turn's cited items, searched first), `restricted` (only them); and
    what its answer reads of the turn before it (`Earlier`: the carried terms, the passages the
    previous answer cited, for an ellipsis the previous question and, for a follow-up turning
    to something else, the previous answer's text)."""

    query: str
    items: tuple[ItemRef, ...]
    restricted: bool

    def scope(self) -> ItemsScope | None:
        return ItemsScope(items=list(self.items[:MAX_SCOPE_ITEMS])) if self.items else None


def points_back(question: str) -> bool:
    """Whether `question` refers to something said before rather than naming its own topic."""
    if _NEW_TOPIC_RE.match(question):
        return False
    own = content_words(question) - _GENERIC
    if (
        _POINTER_RE.search(question)
        or _DEMONSTRATIVE_RE.search(question)
        or _ELLIPSIS_RE.match(question)
        or _COUNT_WITHOUT_NOUN_RE.search(question)
        or _FRAGMENT_RE.match(question)
    ):
        return True
    if _IT_RE.search(question) and len(own) <= MAX_OWN_WORDS_WITH_IT:
        return True
    return not own


def resolve_follow_up(question: str, previous: TurnRecord | None, *, forced: bool = False) -> FollowUp | None:
    """The search for `question` as a follow-up of `previous`, or None when it stands alone
    (no previous library turn, or a question that does not point back). `forced`: read it as
    a follow-up though it does not point back (asked alone, nothing answered it), unless the
    user said the topic changes."""
    if previous is None or previous.intent != "library" or previous.error is not None:
        return None
    if not (points_back(question) or (forced and not _NEW_TOPIC_RE.match(question))):
        return None
    items = tuple(
        ItemRef(library_id=ref.library_id, item_key=ref.item_key)
        for ref in previous.references.cited
        if ref.item_key and ref.library_id
    )
    carried = carried_terms(previous.question, question)
    query = " ".join([question, *carried])[:MAX_QUERY_CHARS]
    return FollowUp(
        query=query,
        items=items,
        restricted=bool(items) and bool(_RESTRICT_RE.search(question)),
        context=" ".join(carried),
        cited_before=frozenset(c.chunk_id for c in previous.citations if c.survives),
        asked=previous.question if elliptical(question) else "",
        said=quoted_text(previous.prose) if _ELLIPSIS_RE.match(question) else "",
    )


def elliptical(question: str) -> bool:
    """Whether `question` only swaps what the previous one asked about ("and for mechanical
    devices?", "what about the C-domain?"), asking no question of its own."""
    m = _ELLIPSIS_RE.match(question)
    return bool(m) and not _QUESTION_WORD_RE.search(question[m.end() :])


def quoted_text(prose: str) -> str:
    """An answer's prose as the text of the units it quotes: without its citation tokens
    ("... of compound 33RE [1]." is "... of compound 33RE."), whitespace collapsed."""
    return " ".join(_TOKEN_AFTER_RE.sub("", prose).split())


_TOKEN_AFTER_RE = re.compile(r"\s*" + _TOKEN_RE.pattern)


def carried_terms(previous_question: str, question: str) -> list[str]:
    """The previous question's content words (as written) that the new one does not repeat."""
    have = content_words(question)
    seen: set[str] = set()
    terms = []
    for word in _WORD_RE.findall(_TOKEN_RE.sub(" ", previous_question)):
        stems = content_words(word)
        if not stems or stems & (have | seen | _GENERIC):
            continue
        seen |= stems
        terms.append(word)
    return terms[:MAX_CARRIED_TERMS]


# --- with a language model -------------------------------------------------------------------

REWRITE_PROMPT = """You rewrite a researcher's follow-up question as one standalone search query for their
library. Use the conversation only to resolve what the question refers to (names of papers,
methods, populations, measures). Answer with the query alone, on one line, no quotes, no
citations, no explanation."""

#: Characters of earlier turns (their coordinator views) a model is given at most.
HISTORY_CHARS = 6000
#: Turns of history at most.
HISTORY_TURNS = 3


def history_messages(turns: list[TurnRecord], budget: int = HISTORY_CHARS) -> list[dict]:
    """The last finished turns as chat messages, newest kept first within `budget` characters:
    each question and its coordinator view (or, for turns stored before it, its prose with the
    bracket tokens removed, so no earlier `[n]` can be mistaken for this turn's sources)."""
    messages: list[dict] = []
    for turn in reversed([t for t in turns if t.error is None][-HISTORY_TURNS:]):
        answer = turn.coordinator_view or _TOKEN_RE.sub("", turn.prose)
        pair = [{"role": "user", "content": turn.question}, {"role": "assistant", "content": answer}]
        size = len(turn.question) + len(answer)
        if size > budget:
            break
        budget -= size
        messages[:0] = pair
    return messages


def rewrite_messages(question: str, turns: list[TurnRecord]) -> list[dict]:
    return [
        {"role": "system", "content": REWRITE_PROMPT},
        *history_messages(turns),
        {"role": "user", "content": f"Follow-up question: {question}\nStandalone search query:"},
    ]


def clean_query(text: str, fallback: str) -> str:
    """A model's rewritten query, one line without bracket tokens or quotes; `fallback` when
    it gave nothing usable."""
    line = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    line = _TOKEN_RE.sub(" ", line).strip().strip("\"'“”‘’`").strip()
    line = " ".join(line.split())
    return line[:MAX_QUERY_CHARS] if len(line) >= 3 else fallback
