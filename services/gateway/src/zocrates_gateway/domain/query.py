"""The search text of a message of any length.

A message may hold up to 32 KB; a retrieval or discovery request carries at most
`MAX_QUERY_CHARS` of query. A longer message is cut on word boundaries, keeping what carries
the ask first: its question sentences (the last two that end in `?`; a trailing question
usually is the ask) or else its last sentence, then as much of the rest from its start as fits.
The ask goes first because the dense embedding reads only a query's first few hundred words;
the offline answer writer gets the ask alone. The answer says that the message was cut, and how.
"""

from __future__ import annotations

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
        return SearchText(text, text)
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
    return SearchText(f"{ask} {rest}".strip(), ask, note)


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
