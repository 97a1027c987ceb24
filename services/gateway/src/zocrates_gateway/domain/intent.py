"""Which kind of turn a message asks for: the user's library, new literature, or small talk.

A DOI, arXiv id, PMID or title in a message is no reason to go online: such a turn is a
library turn that looks the item up in the library first (`domain.lookup`), and goes online
only when the item is not there. Only an explicit request for new literature routes to
discovery, and `read_literature_request` reads what it asks for: the topic to search and how
recent the papers must be.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

Intent = Literal["library", "discovery", "chat"]

# The verb asks for something: it opens the message or a sentence, or follows a request ("can
# you find", "please suggest", "I want to get") -- not "how long did each participant get to
# read a paper?", where it tells what a study's subjects did.
_REQUEST = r"(?:^|(?<!\bal)[.!?;:,]\s*|\b(?:please|you|me|us|i|we|i'm|to|let's|now|also|then)\s+)"
_DISCOVERY_RE = re.compile(
    rf"{_REQUEST}(find|search|look(?:ing)?\s+for|discover|recommend|suggest|get|fetch|show\s+me)\b[^.?!]{{0,40}}?"
    r"\b(new|recent|more|other|additional|latest|online)?\s*"
    r"(papers?|articles?|literature|studies|publications|preprints|references|works)\b"
    r"|\b(search|look)\s+(online|the\s+web|openalex|crossref)\b"
    r"|\bnew\s+literature\b|\bnot\s+in\s+my\s+library\b|\bimport\s+(papers?|articles?)\b",
    re.IGNORECASE,
)
_LIBRARY_HINT = re.compile(r"\b(my|our)\s+(library|collection|papers|zotero)\b", re.IGNORECASE)
_SMALL_TALK_RE = re.compile(
    r"^\s*(hi|hello|hey|hiya|howdy|good\s+(morning|afternoon|evening)|thanks?(\s+you)?|thank\s+you|"
    r"cheers|bye|goodbye|ok(ay)?|cool|great|nice|who\s+are\s+you|what\s+can\s+you\s+do|"
    r"how\s+are\s+you|help)\b[\s!.?,]*(zocrates)?[\s!.?]*$",
    re.IGNORECASE,
)


def chat_reply(message: str) -> str:
    """A fitting answer to small talk: thanks are not answered "Hello!"."""
    text = message.strip().lower()
    for pattern, reply in _SMALL_TALK_REPLIES:
        if pattern.search(text):
            return reply
    return CHAT_REPLY


CHAT_REPLY = (
    "Hello! I'm Zocrates. Ask me a question about the papers in your Zotero library and I'll "
    "answer with citations you can check, or ask me to find new literature online."
)
_SMALL_TALK_REPLIES = [
    (re.compile(r"^(thanks?|thank\s+you|cheers)\b"), "You're welcome! Ask me anything else about your library."),
    (re.compile(r"^(bye|goodbye)\b"), "Goodbye! Your sessions stay here when you come back."),
    (re.compile(r"^(ok(ay)?|cool|great|nice)\b"), "Glad it helped. What else would you like to know?"),
    (
        re.compile(r"^how\s+are\s+you\b"),
        "All well, thank you, and ready to search your library. What would you like to know?",
    ),
    (
        re.compile(r"^(who\s+are\s+you|what\s+can\s+you\s+do|help)\b"),
        "I'm Zocrates, a research assistant for your Zotero library. Ask a question and I answer from "
        "your papers, citing the passages I quote and checking each citation against its passage; "
        "ask me to find new papers (\"find recent papers on ...\") and I search OpenAlex, leaving out "
        "the ones you already own.",
    ),
]


#: What the coordinator answers with: one of the three routes.
class RouteDecision(BaseModel):
    intent: Intent


COORDINATOR_PROMPT = """You route one message sent to Zocrates, a research assistant over the user's Zotero library.
Answer with a JSON object only, no other text:
{"intent": "library"} when it asks something to be answered from the papers the user has;
{"intent": "discovery"} when it asks to find, search or recommend new papers or literature online;
{"intent": "chat"} when it is small talk, thanks, or a question about you."""


def coordinator_messages(message: str) -> list[dict]:
    return [{"role": "system", "content": COORDINATOR_PROMPT}, {"role": "user", "content": message}]


def route_intent(message: str) -> Intent:
    """Route by explicit signals only; anything else is a question about the library."""
    text = message.strip()
    if _SMALL_TALK_RE.match(text):
        return "chat"
    if _DISCOVERY_RE.search(text) and not _LIBRARY_HINT.search(text):
        return "discovery"
    return "library"


# --- what a request for new literature asks for ------------------------------------------------

_POLITE_RE = re.compile(
    r"^\s*(?:(?:please|hey|hi|zocrates)[\s,]+)*(?:(?:can|could|would|will)\s+you\s+|i\s+(?:want|need|would\s+like)\s+"
    r"(?:you\s+)?(?:to\s+)?|help\s+me\s+|let'?s\s+)?",
    re.IGNORECASE,
)
_REQUEST_RE = re.compile(
    r"\b(?:find|search(?:\s+for)?|look\s+(?:for|up)|discover|recommend|suggest|get|fetch|show|give|list)\s+"
    r"(?:me\s+|us\s+)?(?:(?:some|a\s+few|any|more|other|additional|\d+|the)\s+)*"
    r"(?:(?:new|recent|latest|newest|newer|most\s+recent|other|additional|more|further|online|relevant|good|key)\s+)*"
    r"(?:research\s+|scientific\s+|academic\s+|scholarly\s+|review\s+)?"
    r"(?:papers?|articles?|literature|studies|publications|preprints|references|works|reviews)\b"
    r"(?:\s+(?:online|on\s+openalex|from\s+openalex))?",
    re.IGNORECASE,
)
_ABOUT_RE = re.compile(
    r"^\s*(?:on|about|regarding|concerning|into|related\s+to|dealing\s+with|covering|in\s+the\s+field\s+of|"
    r"that\s+(?:discuss|study|studied|address|examine|cover)(?:es|ed)?|for)\s+",
    re.IGNORECASE,
)
_NUMBER = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_SINCE_RE = re.compile(
    r"\b(?:since|from|after|starting(?:\s+in)?|published\s+(?:since|after))\s+((?:19|20)\d\d)\b", re.I
)
_LAST_YEARS_RE = re.compile(
    r"\b(?:in\s+|from\s+|over\s+|during\s+)?(?:the\s+)?(?:last|past|previous)\s+(\d{1,2}|one|two|three|four|five|six|"
    r"seven|eight|nine|ten|few|couple\s+of)?\s*(years?|decades?)\b",
    re.IGNORECASE,
)
_THIS_YEAR_RE = re.compile(r"\b(?:from\s+|in\s+)?this\s+year\b", re.IGNORECASE)
_RECENT_RE = re.compile(
    r"\b(?:recent(?:ly)?|latest|newest|most\s+recent|state[-\s]of[-\s]the[-\s]art|up[-\s]to[-\s]date)\b", re.I
)
#: What "recent" means for a search: the last three publication years, this one included.
RECENT_YEARS = 3


@dataclass(frozen=True)
class LiteratureRequest:
    """A request for new literature as searches: its `queries` (by the rules, one: the message
    without the request itself) and `from_year` (None: any year), with `said` saying both."""

    queries: list[str]
    from_year: int | None

    @property
    def said(self) -> str:
        since = f", published since {self.from_year}" if self.from_year else ""
        return f"Searched for {', '.join(f'“{q}”' for q in self.queries)}{since}."


def read_literature_request(message: str, year: int) -> LiteratureRequest:
    """The topic and the date filter of "find recent papers on X" (`year`: this year)."""
    text = " ".join(message.split())
    from_year = None
    if m := _SINCE_RE.search(text):
        from_year = int(m.group(1)) + (1 if "after" in m.group(0).lower() else 0)
        text = text.replace(m.group(0), " ")
    elif m := _LAST_YEARS_RE.search(text):
        count = m.group(1) or "one"
        n = 3 if count.lower() in ("few", "couple of") else _NUMBER.get(count.lower()) or int(count)
        n *= 10 if m.group(2).lower().startswith("decade") else 1
        from_year = year - n + 1
        text = text.replace(m.group(0), " ")
    elif m := _THIS_YEAR_RE.search(text):
        from_year = year
        text = text.replace(m.group(0), " ")
    elif _RECENT_RE.search(text):
        from_year = year - RECENT_YEARS + 1
    text = _POLITE_RE.sub("", text, count=1)
    text = _REQUEST_RE.sub(" ", text, count=1)
    text = _RECENT_RE.sub(" ", text)
    text = " ".join(text.split())
    text = _ABOUT_RE.sub("", text, count=1)
    topic = text.strip(" ?!.,;:").strip()
    return LiteratureRequest(queries=[topic or " ".join(message.split())], from_year=from_year)


#: What the online-search role answers with: one to three queries and how recent.
class SearchPlan(BaseModel):
    queries: list[str] = Field(min_length=1, max_length=3)
    from_year: int | None = Field(default=None, ge=1000, le=2999)


ONLINE_SEARCH_PROMPT = """You turn a researcher's request for new literature into searches of OpenAlex.
This year is {year}. Answer with a JSON object only, no other text:
{{"queries": ["..."], "from_year": null}}
with one to three short keyword queries for the topic (no words such as "find" or "papers"), and
from_year the first publication year the request allows ("recent": the last three years), or null."""


def online_search_messages(message: str, year: int) -> list[dict]:
    return [
        {"role": "system", "content": ONLINE_SEARCH_PROMPT.format(year=year)},
        {"role": "user", "content": message},
    ]
