"""Which kind of turn a message asks for: the user's library, new literature, or small talk.

A DOI, arXiv id, PMID or title in a message is no reason to go online: such a turn is a
library turn that looks the item up in the library first (`domain.lookup`), and goes online
only when the item is not there. Only an explicit request for new literature routes to
discovery.
"""

from __future__ import annotations

import re
from typing import Literal

Intent = Literal["library", "discovery", "chat"]

_DISCOVERY_RE = re.compile(
    r"\b(find|search|look\s+for|discover|recommend|suggest|get|fetch|show\s+me)\b[^.?!]{0,40}?"
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


def route_intent(message: str) -> Intent:
    """Route by explicit signals only; anything else is a question about the library."""
    text = message.strip()
    if _SMALL_TALK_RE.match(text):
        return "chat"
    if _DISCOVERY_RE.search(text) and not _LIBRARY_HINT.search(text):
        return "discovery"
    return "library"
