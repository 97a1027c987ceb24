"""The search text of a message of any length.

A message may hold up to 32 KB; a retrieval or discovery request carries at most
`MAX_QUERY_CHARS` of query. A longer message is cut on word boundaries, keeping what carries
the ask first: its question sentences (the last two that end in `?`; a trailing question
usually is the ask) or else its last sentence, then as much of the rest from its start as fits.
The ask goes first because the dense embedding reads only a query's first few hundred words;
the offline answer writer gets the ask alone. The answer says that the message was cut, and how.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zocrates_citations.sentences import sentence_ends
from zocrates_contracts.messages import MAX_QUERY_CHARS

#: Question sentences kept at most, and the share of the query they may take.
ASK_SENTENCES = 2
ASK_SHARE = 0.5


@dataclass(frozen=True)
class SearchText:
    """What to search with, what the offline answer writer should answer (the ask alone, when
    the message was cut: pasted context would drown its words), and the note the answer
    carries when the message was cut."""

    text: str
    question: str
    note: str | None = None


def search_text(message: str, limit: int = MAX_QUERY_CHARS) -> SearchText:
    """`message` as a query of at most `limit` characters (whitespace runs become one space)."""
    text = " ".join(message.split())
    if len(text) <= limit:
        return SearchText(text, as_question(text))
    sentences = _sentences(text)
    questions = [i for i, s in enumerate(sentences) if s.rstrip("\"')]”’").endswith("?")]
    asked = questions[-ASK_SENTENCES:] or [len(sentences) - 1]
    whole_ask = " ".join(sentences[i] for i in asked)
    others = " ".join(s for i, s in enumerate(sentences) if i not in asked)
    ask = clip(whole_ask, int(limit * ASK_SHARE) if others else limit, keep="end")
    rest = clip(others, limit - len(ask) - 1, keep="start")
    what = ("its question" if len(asked) == 1 else "its questions") if questions else "its last sentence"
    if len(ask) < len(whole_ask):
        what = f"the last {len(ask):,} characters of {what}"
    also = f" and the first {len(rest):,} characters of the rest" if rest else ""
    note = f"Your message was long ({len(text):,} characters), so I searched your library with {what}{also}."
    return SearchText(f"{ask} {rest}".strip(), as_question(ask), note)


#: A request worded as an instruction: "List the complications of IVC filters.", "Name the
#: databases searched ...", "Tell me which residues ...", "Explain why ...".
_REQUEST_RE = re.compile(
    r"^\s*(?:please\s+)?(?:(?:can|could|would)\s+you\s+(?:please\s+)?)?"
    r"(?P<verb>list|name|give(?:\s+me)?|tell\s+me|show(?:\s+me)?|identify|enumerate|explain)\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
_PAPERS_RE = re.compile(
    r"(?:(?:the|my|our|all(?:\s+the|\s+my)?)\s+)?(?P<noun>papers|articles|studies|items|publications|references)\b",
    re.IGNORECASE,
)
_WH_RE = re.compile(r"(?:which|what|who|whom|whose|when|where|why|how|whether)\b", re.IGNORECASE)
#: What a request asks for as a whole, which the answer writer reads in its own words: "tell me
#: about the Paper Plain paper", "give me a summary of ...".
_AS_IS_RE = re.compile(r"(?:about|an?\s+(?:summary|overview|short|brief))\b", re.IGNORECASE)


def as_question(text: str) -> str:
    """A request worded as an instruction, as the question it asks, which is how the offline
    answer writer reads what is asked (the thing asked about, the kind of answer): "List the
    complications of IVC filters." is "What are the complications of IVC filters?", "Tell me
    which residues ..." is "which residues ...?". Any other text as it is."""
    m = _REQUEST_RE.match(text)
    if m is None or _AS_IS_RE.match(rest := m.group("rest")):
        return text
    rest = rest.rstrip(" .!?")
    if _WH_RE.match(rest):
        return f"{rest[0].upper()}{rest[1:]}?"
    if m.group("verb").lower() == "explain":
        return text  # "explain the results" asks for no one thing
    if papers := _PAPERS_RE.match(rest):  # "list my papers on DVT": which of them are on it
        return f"Which {papers.group('noun').lower()}{rest[papers.end() :]}?"
    return f"What are {rest}?"


def clip(text: str, limit: int, keep: str = "start") -> str:
    """At most `limit` characters of `text`, its start or its end, never cutting a word."""
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    if keep == "end":
        tail = text[-limit:]
        return tail.split(" ", 1)[1] if " " in tail and not text[-limit - 1].isspace() else tail.lstrip()
    head = text[:limit]
    return head.rsplit(" ", 1)[0] if " " in head and not text[limit].isspace() else head.rstrip()


def _sentences(text: str) -> list[str]:
    sentences, start = [], 0
    for end in sentence_ends(text):
        if piece := text[start:end].strip():
            sentences.append(piece)
        start = end
    if tail := text[start:].strip():
        sentences.append(tail)
    return sentences
