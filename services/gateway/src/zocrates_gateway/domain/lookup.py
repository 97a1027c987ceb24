"""Items named in a message (a DOI, an arXiv id, a PMID, an exact title), and the answers about
them, looked up in the user's own library first (`LibraryLookupRequested`, answered by retrieval).

A message that names an item asks one of three things:
- membership: "is 10.1186/... already in my library?", "do I have arXiv:2203.00130?";
- a summary: the identifier alone ("10.1186/1752-2897-4-1", "what is arXiv:2203.00130 about?");
- a question about that item: "10.1186/... what complications were reported?".

Identifiers are read in the canonical forms of `zocrates_contracts.identifiers`. A title is
taken from quotes ("“Attention Is All You Need”") or from a membership question
("is Attention Is All You Need in my library?"); a quoted phrase that is no title in the
library is just part of the question, so it never sends the turn online by itself.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from zocrates_citations import format_authors, segment_source_text
from zocrates_contracts import EvidenceChunk, LibraryItemMatch
from zocrates_contracts.identifiers import (
    ARXIV_DOI_PREFIX,
    find_arxiv_ids,
    find_dois,
    find_pmids,
    normalize_arxiv,
)
from zocrates_contracts.messages import MAX_LOOKUP_IDS, MAX_LOOKUP_TITLES
from zocrates_gateway.domain.synthesis import content_words

Kind = Literal["membership", "summary", "question", "authored"]

#: Bare arXiv ids, which need no `arXiv:` in a message: new style (2203.00130v1) and old style
#: with a real archive name (hep-th/9901001).
_OLD_ARCHIVES = (
    "hep-th|hep-ph|hep-ex|hep-lat|astro-ph|cond-mat|gr-qc|math-ph|math|nucl-th|nucl-ex|"
    "quant-ph|physics|nlin|q-bio|q-fin|stat|cs|chao-dyn|solv-int|patt-sol|adap-org|cmp-lg"
)
_BARE_ARXIV_RE = re.compile(
    rf"(?<![\w./])(?:\d{{2}}(?:0[1-9]|1[0-2])\.\d{{4,5}}|(?:{_OLD_ARCHIVES})(?:\.[A-Z]{{2}})?/\d{{7}})(?:v\d+)?(?![\w/])",
    re.IGNORECASE,
)
_ARXIV_WORD_RE = re.compile(r"\b(?:arxiv|preprints?)\b", re.IGNORECASE)
SHORT_MESSAGE_WORDS = 12
#: The written forms of identifiers, removed from the message to leave its question.
_IDENTIFIER_TEXT_RE = re.compile(
    rf"(?:https?://(?:dx\.)?doi\.org/|\bdoi\s*:\s*)?\b10\.\d{{4,9}}/[^\s\"'<>]+"
    rf"|(?:https?://)?arxiv\.org/(?:abs|pdf|html)/\S+"
    rf"|\barxiv\s*:\s*\S+"
    rf"|(?:https?://)?(?:pubmed\.ncbi\.nlm\.nih\.gov/|www\.ncbi\.nlm\.nih\.gov/pubmed/)\d+/?"
    rf"|\bPMID\s*:?\s*\d+"
    rf"|{_BARE_ARXIV_RE.pattern}",
    re.IGNORECASE,
)

_QUOTED_RE = re.compile(
    r"“([^”]{8,500})”|\"([^\"]{8,500})\"|«\s*([^»]{8,500}?)\s*»|‘([^’]{8,500})’"
    r"|(?<![\w'])'([^']{8,500})'(?![\w'])"
)
_EMPTY_BRACKETS_RE = re.compile(r"\(\s*\)|\[\s*\]")
_LIBRARY = r"(?:my|our)\s+(?:zotero\s+)?(?:library|collection|zotero|papers)"
_MEMBERSHIP_RE = re.compile(
    rf"^\s*(?:is|are|was)\b.*\b(?:in|part\s+of|inside)\s+{_LIBRARY}"
    rf"|^\s*(?:do|did|have)\s+(?:i|we)\s+(?:already\s+)?(?:have|own|got|saved|imported|added|kept)\b"
    rf"|\balready\s+in\s+{_LIBRARY}|\bin\s+{_LIBRARY}\s+already\b",
    re.IGNORECASE,
)
#: The phrase a membership question names its item by, when it is not quoted.
_NAMED_RE = [
    re.compile(
        rf"^\s*(?:is|are|was)\s+(?P<name>.+?)\s+(?:already\s+)?(?:in|part\s+of|inside)\s+{_LIBRARY}\b", re.IGNORECASE
    ),
    re.compile(
        rf"^\s*(?:do|did|have)\s+(?:i|we)\s+(?:already\s+)?(?:have|own|got|saved|imported|added|kept)\s+"
        rf"(?P<name>.+?)(?:\s+(?:already|in\s+{_LIBRARY}))*\s*[?.!]*\s*$",
        re.IGNORECASE,
    ),
]
_ARTICLE_RE = re.compile(
    r"^(?:the\s+)?(?:paper|article|preprint|study|book|review|chapter|report|thesis)\s+"
    r"(?:called\s+|titled\s+|entitled\s+)?",
    re.IGNORECASE,
)
#: A membership question about a topic, not a title: "is anything on CRISPR in my library?".
_TOPICAL_RE = re.compile(
    r"^(?:any|anything|something|everything|some|papers?|articles?|works?|research|literature|studies|"
    r"stuff|material|a\s+(?:paper|study|review|book)|an\s+article|there|it|this|that|they|these|those)\b",
    re.IGNORECASE,
)
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z-]+")
#: Words of a message that ask nothing beyond the item itself ("what is 10.x about?").
_NO_QUESTION = frozenset(
    "what whats is are was it its this that the a an about tell me us summarise summarize summary of "
    "paper article preprint study item please can could you give overview explain describe doi arxiv "
    "pmid pubmed show on for and in my library zotero say says does do quick brief short".split()
)

#: A title longer than this is no title (and more than a lookup request takes: LookupTitle).
MAX_TITLE_CHARS = 300

#: Sentences quoted from an item's opening passage when the answer is about the item itself.
SUMMARY_SENTENCES, MEMBERSHIP_SENTENCES = 3, 1
_MIN_QUOTE, _MAX_QUOTE = 25, 400


@dataclass(frozen=True)
class Named:
    """An item a message names, and how to write it back to the user."""

    kind: Literal["doi", "arxiv", "pmid", "title", "author"]
    value: str  # canonical identifier, the title as written, or an author's family name
    #: a name of one or two words ("is Paper Plain in my library?") that may be a topic instead:
    #: when no title is it, the library is searched for it, not the web
    tentative: bool = False

    def shown(self) -> str:
        return {
            "doi": f"DOI {self.value}",
            "arxiv": f"arXiv:{self.value}",
            "pmid": f"PMID {self.value}",
            "title": f"“{self.value}”",
            "author": f"anything by {self.value}",
        }[self.kind]

    def query(self) -> str:
        """What online discovery searches for it (it looks DOIs and arXiv ids up directly)."""
        return {
            "doi": self.value,
            "arxiv": f"arXiv:{self.value}",
            "pmid": f"PMID {self.value}",
            "title": self.value,
            "author": self.value,
        }[self.kind]


@dataclass(frozen=True)
class Asked:
    """What a message asks the library for by name: the items, and the rest of the question."""

    names: tuple[Named, ...] = ()
    kind: Kind = "question"
    question: str = ""  # the message without the identifiers and quoted titles

    def __bool__(self) -> bool:
        return bool(self.names)

    def of(self, kind: str) -> list[str]:
        return [n.value for n in self.names if n.kind == kind]

    @property
    def identifiers(self) -> tuple[Named, ...]:
        return tuple(n for n in self.names if n.kind not in ("title", "author"))


def read_message(message: str) -> Asked:
    """The items `message` names (at most as many as one lookup takes) and what it asks of them."""
    dois, arxiv_ids = [], []
    for doi in find_dois(message):
        if doi.startswith(ARXIV_DOI_PREFIX):  # an arXiv DOI names the preprint
            arxiv_ids.append(normalize_arxiv(doi))
        else:
            dois.append(doi)
    arxiv_ids += find_arxiv_ids(message) + [
        normalize_arxiv(m.group(0)) for m in _BARE_ARXIV_RE.finditer(message) if _looks_like_arxiv(m.group(0), message)
    ]
    names = [
        *(Named("doi", d) for d in dois[:MAX_LOOKUP_IDS]),
        *(Named("arxiv", a) for a in list(dict.fromkeys(filter(None, arxiv_ids)))[:MAX_LOOKUP_IDS]),
        *(Named("pmid", p) for p in find_pmids(message)[:MAX_LOOKUP_IDS]),
    ]
    if not names and (author := _AUTHORED_RE.search(message)):  # "do I have anything by Datta?"
        return Asked((Named("author", author.group("name")),), "authored", message)
    question = _EMPTY_BRACKETS_RE.sub(" ", _QUOTED_RE.sub(" ", _IDENTIFIER_TEXT_RE.sub(" ", message)))
    question = " ".join(question.split()).strip(" :;,-–—")
    # "are these in my library?" after a list of DOIs asks it of the list
    membership = bool(_MEMBERSHIP_RE.search(message) or _MEMBERSHIP_RE.search(question))
    titles = [t for t in (_clean_title(m) for m in _quoted(message)) if t]
    short = ""
    if membership and not names and not titles:
        titles = [t for t in (_named_in_membership(message),) if t]
        short = "" if titles else _short_name_in_membership(message)
    names += [Named("title", t) for t in list(dict.fromkeys(titles))[:MAX_LOOKUP_TITLES]]
    if short:
        names.append(Named("title", short, tentative=True))
    if membership:
        kind: Kind = "membership"
    elif not {w.lower() for w in _WORD_RE.findall(question)} - _NO_QUESTION:
        kind = "summary"
    else:
        kind = "question"
    return Asked(tuple(names), kind, question)


def _looks_like_arxiv(found: str, message: str) -> bool:
    """A bare new-style id (2203.00130) could be a measurement in a long question: it counts
    with a version (v1), beside the word arXiv or preprint, or in a short message."""
    return (
        "/" in found
        or bool(re.search(r"v\d+$", found))
        or bool(_ARXIV_WORD_RE.search(message))
        or len(message.split()) <= SHORT_MESSAGE_WORDS
    )


def _quoted(message: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _QUOTED_RE.finditer(message)]


def _clean_title(text: str) -> str:
    title = " ".join(_ARTICLE_RE.sub("", text.strip()).split()).strip(" .,;:")
    if len(title.split()) < 2 or len(title) > MAX_TITLE_CHARS or _IDENTIFIER_TEXT_RE.fullmatch(title):
        return ""
    return title


def _membership_names(message: str) -> Iterator[str]:
    """What "is <name> in my library?" or "do I have <name>?" names, as written, per way of asking."""
    for pattern in _NAMED_RE:
        if m := pattern.search(message.strip()):
            yield m.group("name").strip(" \"'“”‘’")


def _named_in_membership(message: str) -> str:
    """The unquoted title of "is <title> in my library?", unless it names a topic instead."""
    for name in _membership_names(message):
        if _PAPER_NOUN_AFTER_RE.search(name):  # "the <title> paper": the words around it are the asker's
            name = re.sub(r"^the\s+", "", _PAPER_NOUN_AFTER_RE.sub("", name))
        name = _clean_title(name)
        if len(name.split()) >= 3 and not _TOPICAL_RE.match(name):
            return name
    return ""


#: "Do I have anything by Datta?", "which papers by Moon are in my library?", "list my papers by
#: August": the library's items by an author, named by a capitalised family name.
_AUTHORED_RE = re.compile(
    rf"^\s*(?:(?:do|did|have)\s+(?:i|we)\s+(?:\w+\s+)?(?:have|got|own|saved)|(?:find|list|show|give)(?:\s+me)?"
    rf"|(?:which|what)|are\s+there|is\s+there)\b[^?]{{0,40}}?\b(?:anything|papers?|articles?|works?|items?"
    rf"|publications?|preprints?|something)\s+(?:written\s+)?by\s+(?P<name>(?-i:[A-Z])[\w'’-]+)(?:\s+et\s+al\.?)?"
    rf"(?:[^?]{{0,20}}?\b(?:in|from)\s+{_LIBRARY})?\s*[?.!]*\s*$",
    re.IGNORECASE,
)


#: "the Paper Plain paper": the name, not the kind of work
_PAPER_NOUN_AFTER_RE = re.compile(r"\s+(?:paper|article|preprint|study|review|report)$", re.IGNORECASE)


def _short_name_in_membership(message: str) -> str:
    """The short name of "is the Paper Plain paper in my library?" (one or two words, capitalised
    as a name is), which may be a paper's short title."""
    for name in _membership_names(message):
        name = re.sub(r"^(?:the|a|an)\s+", "", _PAPER_NOUN_AFTER_RE.sub("", name), flags=re.IGNORECASE).strip(" .,;:")
        words = name.split()
        if 1 <= len(words) <= 2 and all(w[:1].isupper() for w in words):
            return name
    return ""


# --- what was found ------------------------------------------------------------------------


@dataclass
class Found:
    """The lookup's answer, per name: the matching items (each item once) and the names that
    matched nothing."""

    items: list[LibraryItemMatch] = field(default_factory=list)
    by_name: dict[Named, list[LibraryItemMatch]] = field(default_factory=dict)
    missing: list[Named] = field(default_factory=list)
    searched: int = 0


def sort_out(asked: Asked, matches: list[LibraryItemMatch], searched: int) -> Found:
    found = Found(searched=searched)
    seen = set()
    for name in asked.names:
        hits = [m for m in matches if m.matched_by == name.kind and _same(m.matched, name)]
        found.by_name[name] = hits
        if not hits:
            found.missing.append(name)
        for m in hits:
            if (m.library_id, m.item_key) not in seen:
                seen.add((m.library_id, m.item_key))
                found.items.append(m)
    return found


def _same(matched: str, name: Named) -> bool:
    if name.kind in ("title", "author"):
        return matched.casefold() == name.value.casefold()
    return matched == name.value


def goes_online(asked: Asked, found: Found) -> bool:
    """Nothing named is in the library, and what was named is an identifier or a title the
    user asked about by name: look it up online. A quoted phrase in an ordinary question that
    is no title in the library stays a library question; a question about the library's items
    by an author is answered from the library alone."""
    if found.items or asked.kind == "authored":
        return False
    named = [n for n in asked.names if not n.tentative]
    return bool(asked.identifiers) or (asked.kind == "membership" and bool(named))


# --- the answer's text ---------------------------------------------------------------------


def describe(item: LibraryItemMatch | EvidenceChunk) -> str:
    """`Datta et al. (2010), *Complications related to ...*`."""
    authors = format_authors(item.creators) or "Unknown author"
    year = item.year if item.year is not None else "n.d."
    title = item.title.strip() or "Untitled"
    return f"{authors} ({year}), *{title}*"


def where(item: LibraryItemMatch) -> str:
    """`in your library, in the collection Trauma/Reviews` (group libraries named)."""
    place = "in your library" if item.library_id == "user" else f"in your group library {item.library_name}"
    if not item.collections:
        return place
    shown = ", ".join(item.collections[:5]) + (
        f" and {len(item.collections) - 5} more" if len(item.collections) > 5 else ""
    )
    return f"{place}, in the collection{'s' if len(item.collections) > 1 else ''} {shown}"


def not_in_library(names: list[Named], searched: int) -> str:
    shown = _join([n.shown() for n in names])
    verb = "is" if len(names) == 1 else "are"
    return f"No — {shown} {verb} not in your library ({searched:,} items checked)."


def lead_for_question(found: Found) -> str:
    """The line before an answer from the named items' passages."""
    return f"From {_join([describe(i) for i in found.items])}, {where(found.items[0]) if len(found.items) == 1 else 'in your library'}:\n\n"


def missing_line(found: Found) -> str:
    """The note on names the library does not hold, when others were found."""
    names = _join([n.shown() for n in found.missing])
    return (
        f"{names} {'is' if len(found.missing) == 1 else 'are'} not in your library "
        f"({found.searched:,} items checked); ask me to search online for it to look it up."
    )


def authored_answer(asked: Asked, found: Found, chunks: list[EvidenceChunk]) -> Iterator[str]:
    """The library's items by an author: how many, then each by author, year, title and place,
    citing its library record; or that there are none."""
    author = asked.names[0].value
    if not found.items:
        yield f"No — your library holds nothing by {author} ({found.searched:,} items checked)."
        return
    count = len(found.items)
    yield f"Your library holds {count} item{'s' if count > 1 else ''} by {author}:\n\n"
    for item in found.items:
        yield f"- {describe(item)}, {where(item)}{_cite(record_index(item, chunks))}.\n"


def item_answer(asked: Asked, found: Found, chunks: list[EvidenceChunk]) -> Iterator[str]:
    """The answer to a membership question or a bare identifier: each item by author, year,
    title and place, citing its library record, then the opening sentences of its own text,
    quoted and cited (both from this turn's lookup and retrieval, checked like any citation)."""
    sentences = MEMBERSHIP_SENTENCES if asked.kind == "membership" else SUMMARY_SENTENCES
    for number, item in enumerate(found.items):
        if number:
            yield "\n\n"
        opener = "Yes — " if asked.kind == "membership" else ""
        yield f"{opener}{describe(item)} is {where(item)}{_cite(record_index(item, chunks))}."
        index, quotes = opening_sentences(item, chunks, sentences)
        if quotes:
            yield " It opens:\n\n" if asked.kind == "membership" else " From the paper:\n\n"
            for quote in quotes:
                yield f"- {quote[:-1]} [{index}]{quote[-1]}\n"
        else:
            yield " None of its text is indexed (no PDF or note of it has been read), so I cannot quote it."


def no_text_answer(found: Found, chunks: list[EvidenceChunk]) -> Iterator[str]:
    """A question about items whose text is not indexed: say so, name them, cite their records."""
    for number, item in enumerate(found.items):
        yield ("\n\n" if number else "") + (
            f"{describe(item)} is {where(item)}{_cite(record_index(item, chunks))}, but none of its text is "
            "indexed (no PDF or note of it has been read), so I cannot answer from it."
        )


RECORD_KIND = "record"


def record_chunk(item: LibraryItemMatch) -> EvidenceChunk:
    """An item's library record as evidence of this turn: what the lookup found the library
    holds, so that an answer saying the item is there cites the item, text indexed or not."""
    facts = [
        f"DOI {item.doi}." if item.doi else "",
        f"arXiv:{item.arxiv_id}." if item.arxiv_id else "",
        f"PMID {item.pmid}." if item.pmid else "",
        f"Library: {item.library_name or item.library_id}.",
        f"Collections: {', '.join(item.collections)}." if item.collections else "",
    ]
    return _record(item, facts)


def _record(source: LibraryItemMatch | EvidenceChunk, more: list[str]) -> EvidenceChunk:
    """A record chunk of `source`'s item: its creators, year, title and publication, then `more`."""
    people = "; ".join(filter(None, (_full_name(c) for c in source.creators)))
    year = source.year if source.year is not None else "n.d."
    facts = [f"{people} ({year})." if people else f"({year}).", f"{source.title.strip() or 'Untitled'}."]
    facts += [f"{source.publication}." if source.publication else "", *more]
    return EvidenceChunk(
        chunk_id=f"record-{source.library_id}-{source.item_key}",
        item_key=source.item_key,
        library_id=source.library_id,
        title=source.title,
        creators=source.creators,
        year=source.year,
        publication=source.publication,
        section="Library record",
        kind=RECORD_KIND,
        text=" ".join(f for f in facts if f),
    )


#: "Who wrote ...?", "when was ... published?", "in which journal ...?": what of a paper's
#: library record a question asks for, which its text rarely says.
_RECORD_QUESTIONS = {
    "authors": re.compile(
        r"\bwho\s+(?:wrote|authored)\b|\b(?:who|what)\s+(?:is|are|were)\s+the\s+authors?\b"
        # asked for ("list the authors of ..."), not the subject ("did the authors of ... declare?")
        r"|(?:^|\b(?:list|name|give|show|tell)\s+(?:me\s+)?)(?:all\s+)?the\s+authors?\s+of\b",
        re.IGNORECASE,
    ),
    "year": re.compile(
        r"\b(?:when|(?:in\s+)?(?:what|which)\s+year)\s+(?:was|were|did)\b[^?]{0,120}?"
        r"\b(?:published|publish|come\s+out|appear(?:ed)?)\b",
        re.IGNORECASE,
    ),
    "publication": re.compile(
        r"\b(?:in\s+)?(?:which|what)\s+(?:journal|venue|conference|proceedings)\b|\bwhere\s+(?:was|were)\b[^?]{0,120}?"
        r"\bpublished\b",
        re.IGNORECASE,
    ),
}


#: The words of such a question that ask for the record and name no paper.
RECORD_CUES = frozenset(
    content_words("who wrote authored author authors when what which year published publish journal venue conference")
    | content_words("proceedings appear appeared come out where")
)


def record_fields(question: str) -> list[str]:
    """What of a paper's library record `question` asks for: authors, year, publication."""
    return [field for field, asked in _RECORD_QUESTIONS.items() if asked.search(question)]


def paper_record(chunk: EvidenceChunk) -> EvidenceChunk:
    """The library record of a passage's paper, from what the passage carries (its item's
    creators, year, title and publication), as evidence of this turn: what an answer about
    who wrote the paper or where it appeared cites."""
    return _record(chunk, [])


def record_answer(fields: list[str], record: EvidenceChunk, index: int) -> Iterator[str]:
    """The answer to a question about a paper's record, from its library record (cited)."""
    said = []
    if "authors" in fields:
        people = [n for n in (_full_name(c) for c in record.creators if c.creator_type == "author") if n]
        said.append(f"by {_join(people)}" if people else "its authors are not recorded")
    if "year" in fields:
        said.append(f"published in {record.year}" if record.year is not None else "its year is not recorded")
    if "publication" in fields:
        said.append(f"in {record.publication}" if record.publication else "where it appeared is not recorded")
    place = "your library" if record.library_id == "user" else "a group library of yours"
    yield f"{describe(record)} is in {place} [{index}]: {', '.join(said)}."


def record_index(item: LibraryItemMatch, chunks: list[EvidenceChunk]) -> int:
    """The 1-based evidence index of the item's library record (0: not among the evidence)."""
    return next((i for i, c in enumerate(chunks, start=1) if c.kind == RECORD_KIND and _same_item(c, item)), 0)


def _cite(index: int) -> str:
    return f" [{index}]" if index else ""


def _same_item(chunk: EvidenceChunk, item: LibraryItemMatch) -> bool:
    return chunk.item_key == item.item_key and chunk.library_id == item.library_id


def _full_name(creator) -> str:
    return (creator.name or " ".join(p for p in (creator.first_name, creator.last_name) if p)).strip()


def opening_sentences(item: LibraryItemMatch, chunks: list[EvidenceChunk], limit: int) -> tuple[int, list[str]]:
    """The item's opening passage (its abstract when there is one) and its first whole
    sentences: (1-based citation index, sentences). Retrieval's own units say what a sentence
    is where the chunk carries them; otherwise the text after an `Abstract` heading is split."""
    own = [(i, c) for i, c in enumerate(chunks, start=1) if _same_item(c, item) and c.kind != RECORD_KIND]
    if not own:
        return 0, []
    # of a long abstract's passages, the one it opens with (retrieval ranks them by the question)
    abstract = sorted(((i, c) for i, c in own if _is_abstract(c)), key=lambda ic: _position(ic[1]))
    index, chunk = abstract[0] if abstract else own[0]
    units = getattr(chunk, "units", None)
    if units:
        candidates = [u.shown(chunk.text) for u in units if u.kind == "sentence"]
    else:
        heading = _ABSTRACT_HEADING_RE.search(chunk.text)
        text = chunk.text[heading.end() :] if heading else chunk.text
        candidates = [s.text for s in segment_source_text(text) if s.kind == "sentence"]
    quotes = [q for q in (" ".join(c.split()) for c in candidates) if _quotable(q)]
    return index, quotes[:limit]


def _position(chunk: EvidenceChunk) -> float:
    """Where a passage stands in its source; one from an older retrieval, which does not say, last."""
    return math.inf if chunk.position is None else chunk.position


_ABSTRACT_HEADING_RE = re.compile(r"^[ \t#*]*(?:abstract|summary)[ \t*]*[:.]?[ \t]*$", re.IGNORECASE | re.MULTILINE)


def _is_abstract(chunk: EvidenceChunk) -> bool:
    return (
        chunk.kind == "abstract"
        or getattr(chunk, "role", None) == "abstract"
        or bool(re.search(r"\b(?:abstract|summary)\b", chunk.section or "", re.IGNORECASE))
    )


def _quotable(text: str) -> bool:
    """A whole sentence of prose: a capital first, a full stop last, not a heading in capitals."""
    letters = [c for c in text if c.isalpha()]
    return (
        _MIN_QUOTE <= len(text) <= _MAX_QUOTE
        and text[0].isupper()
        and text.endswith((".", "!"))
        and sum(c.isupper() for c in letters) < 0.5 * len(letters)
    )


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
