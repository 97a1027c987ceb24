"""Writing the answer: the LLM prompt, and the offline extractive synthesizer.

The extractive synthesizer needs no model. It scores every sentence of the top-ranked chunks
by how well it covers the question (BM25 over the candidate sentences, so a word found
everywhere in the evidence counts less than a rare one) plus a small prior for the chunk's
rank and section, and quotes the best few, each cited by the chunk it comes from. It never
writes a claim that is not a sentence of the cited passage, so offline answers are
verifiable by construction; only the source's own bracketed reference numbers are removed,
because a reader would take "[2,3]" for Zocrates' citations 2 and 3.

Non-prose is never quoted: back-matter sections (acknowledgements, author details, funding,
...), affiliation lines, figure and table captions, title and author blocks, abbreviation
lists. A question about such matter (funding, authors, ...) lets the back matter back in.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from zocrates_citations import format_evidence_xml, segment_source_text
from zocrates_contracts import Candidate, EvidenceChunk

SYSTEM_PROMPT = """You are Zocrates, a research assistant answering from the researcher's own Zotero library.
Answer the question using only the evidence chunks below. Rules:
- After each claim, cite the chunk(s) that support it with bracketed indices: [1], or [1, 2] for several.
- Cite only indices that appear in <retrieved_evidence>; never invent sources, URLs or identifiers.
- Mention authors naturally where helpful, e.g. "Smith et al. (2020) showed ... [1]".
- If the evidence does not answer the question, say so plainly.
- Never output database keys or internal identifiers.

{evidence}"""

ONLINE_PROMPT = """You are Zocrates. The researcher asked for new literature. Below are candidate papers found
online (numbered). Discuss the most relevant ones by their number, e.g. "Candidate 2 (Smith, 2021) ...",
in a few short paragraphs. Do not use bracketed citations. Do not invent papers.

{candidates}"""

CHAT_REPLY = (
    "Hello! I'm Zocrates. Ask me a question about the papers in your Zotero library and I'll "
    "answer with citations you can check, or ask me to find new literature online."
)

NOT_FOUND = "I could not find a passage in your library that addresses this question."
ANSWER_INTRO = ("Here is what your library says (quoted from the most relevant passages, "
                "their own reference numbers removed):\n\n")

MAX_CHUNKS = 8  # the chunks whose sentences compete; further down the ranking is rarely better
MAX_POINTS = 4
MAX_POINTS_PER_CHUNK = 2
MIN_SENTENCE_CHARS = 25
MAX_SENTENCE_CHARS = 400
NEAR_DUPLICATE = 0.6  # Jaccard of content words above which a second sentence says nothing new
BM25_K1, BM25_B = 1.2, 0.75
RANK_PRIOR = 0.1  # the top chunk's head start over the last one, in units of question coverage
SECTION_PRIOR = {"findings": 0.1, "methods": -0.1}

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]+|\d+(?:\.\d+)?")
_STOP = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in "
    "into is it its may might of on or our so than that the their them then there these they this "
    "those to was we were what when where which while who why will with would you your about "
    "between does do tell me my library paper papers study studies found find show shows shown "
    "describe explain list say says any all some also not no more most other such each only both "
    "et al".split()
)

# --- the source's own reference markers ------------------------------------------------------

# "[12]", "[2,3,7-9]", "[4, 5]", "[10–12]", and runs such as "[4], [5]". Numbers start at 1 and
# have no decimals, so intervals like "[0, 1]" or "[2.5, 3]" stay.
_REF = r"[1-9]\d{0,3}"
_MARKER = rf"\[\s*{_REF}(?:\s*[-–—,;]\s*{_REF})*\s*\]"
_MARKERS_RE = re.compile(rf"\s*{_MARKER}(?:\s*[-–—,;]?\s*{_MARKER})*")
_EMPTY_PARENS_RE = re.compile(r"\s*\(\s*[,;]?\s*\)")
_SPACE_BEFORE_PUNCT_RE = re.compile(r"[ \t]+(?=[.,;:!?])")


def strip_reference_markers(text: str) -> str:
    """`text` without the bracketed numeric citations a paper carries of its own."""
    stripped = _MARKERS_RE.sub("", text)
    stripped = _EMPTY_PARENS_RE.sub("", stripped)
    return _SPACE_BEFORE_PUNCT_RE.sub("", stripped)


def system_prompt(chunks: list[EvidenceChunk]) -> str:
    """The LLM's system prompt; its evidence carries no reference numbers of the sources' own,
    which the model would copy and which would then read as our citation indices."""
    cleaned = [c.model_copy(update={"text": strip_reference_markers(c.text)}) for c in chunks]
    return SYSTEM_PROMPT.format(evidence=format_evidence_xml(cleaned))


# --- what is not prose -----------------------------------------------------------------------

_BACK_MATTER_SECTION_RE = re.compile(
    r"^(?:[0-9ivxIVX]+\.?\s+|[A-Z]\.?\s+)?(?:"
    r"acknowledge?ments?|author(?:s|s’|s'|’s|'s)?\s+(?:details|information|contributions?|affiliations?)|"
    r"affiliations?|competing\s+interests?|conflicts?\s+of\s+interests?|declaration\s+of\s+(?:competing\s+)?interests?|"
    r"disclosures?|funding(?:\s+information|\s+sources?)?|financial\s+(?:support|disclosures?)|abbreviations|"
    r"ethics(?:\s+(?:approval|statement|declarations?)\b.*)?|ethical\s+(?:approval|statement|considerations?|declarations?)\b.*|"
    r"consent\s+(?:for|to)\b.*|availability\s+of\s+(?:data|supporting)\b.*|"
    r"data\s+availability(?:\s+statement)?|publisher(?:’s|'s)?\s+note|additional\s+files?|"
    r"supplementary\s+(?:material|information|data)|references?|bibliography|literature\s+cited"
    r")\s*:?$",
    re.IGNORECASE,
)
# Not "authors" or "contributions": "what did the authors find", "the paper's contributions"
# are questions about the findings.
_BACK_MATTER_QUESTION = frozenset(
    "fund funding funded funder funders grant grants sponsor sponsored acknowledgement acknowledgements "
    "acknowledgment acknowledgments acknowledge acknowledged thank thanked competing conflict conflicts "
    "authorship affiliation affiliations affiliated correspondence email e-mail ethics ethical consent".split()
)
# Sentences of back matter that sit in a body section when the PDF's headings were lost.
_BACK_MATTER_SENTENCE_RE = re.compile(
    r"\b(?:was|were|is|are)\s+(?:\w+\s+)?(?:supported|funded)\s+by\b|\bgrant\s+(?:no\.?|number)\b"
    r"|\bdeclare[sd]?\s+(?:that\s+(?:they|he|she)\s+(?:have|has)\s+)?no\s+(?:competing|conflicts?)\b"
    r"|\bcorrespondence\s*:|\bcreative\s+commons\b|\blicensee\b|©|\bfull\s+list\s+of\s+author\b"
    r"|\breceived\s*:\s*\d",
    re.IGNORECASE,
)
_AFFILIATION_RE = re.compile(
    r"^\d+\s?[A-Z][a-z]"  # "1Department of ...", "2Medical Department ..."
    r"|[\w.+-]+@[\w-]+\.[\w.]+"  # an e-mail address
    r"|\bP\.?\s?O\.?\s+Box\b"
    r"|\b(?:Department|Dept\.|Division|School|Faculty|Institute|University|Hospital|Centre|Center)\b"
    r"[^.;]*,[^.;]*,\s*[A-Z][a-z]+\.?$"  # "Department of Surgery, University of X, City, Country."
)
_CAPTION_RE = re.compile(
    r"^\(?[A-H]\)\s"  # a figure panel: "(B) Schematic diagram ..."
    r"|\b(?:Figure|Fig\.|Table|Scheme|Supplementary\s+Figure)\s+S?\d+[A-Za-z]?[.:]?\s+(?:[A-Z(]|$)"
)
# A capitalised name with an affiliation digit or a footnote mark: "Ball1*," "DOUGLAS∗1," "Theurer2,3".
_MARKED_NAME_RE = re.compile(
    r"\b[A-Z](?:[a-z'’-]+|[A-Z]{2,})(?:\d{1,2}(?:,\d{1,2})*[*∗†‡§]?|[*∗†‡§]+\d{0,2})(?=[,\s]|$)"
)
_TITLE_BLOCK_RE = re.compile(r"\bRESEARCH\s+ARTICLE\b|\bOpen\s+Access\b|\bREVIEW\b|\bdoi:\s*10\.")
_ABBREVIATIONS_RE = re.compile(r"\bAbbreviations?\s*:")
# Four or more quoted terms in a comma-separated run: a search strategy or a keyword list.
_QUOTED = r"[“\"][^“”\"]{1,60}[”\"]"
_TERM_LIST_RE = re.compile(rf"{_QUOTED}(?:\s*,\s*{_QUOTED}){{3,}}")


def is_back_matter_section(section: str | None) -> bool:
    """Whether a section path ("Discussion > Funding") names back matter at any level."""
    return any(_BACK_MATTER_SECTION_RE.match(part.strip()) for part in (section or "").split(">"))


def asks_about_back_matter(question: str) -> bool:
    """Whether the question is about funding, authors, acknowledgements and the like."""
    return bool(_BACK_MATTER_QUESTION & {w.lower() for w in _WORD_RE.findall(question)})


def is_non_prose(sentence: str, back_matter_allowed: bool = False) -> bool:
    """Captions, title and author blocks, abbreviation lists, term lists, and (unless the
    question is about back matter) affiliation lines and back-matter sentences."""
    if _CAPTION_RE.search(sentence) or _ABBREVIATIONS_RE.search(sentence):
        return True
    if _TITLE_BLOCK_RE.search(sentence) or len(_MARKED_NAME_RE.findall(sentence)) >= 3:
        return True
    if _TERM_LIST_RE.search(sentence):
        return True
    if not back_matter_allowed and (_AFFILIATION_RE.search(sentence) or _BACK_MATTER_SENTENCE_RE.search(sentence)):
        return True
    return _mostly_capitalised(sentence)


def _mostly_capitalised(sentence: str) -> bool:
    """Name lists, affiliations and headings: most of the words are capitalised."""
    words = [w for w in re.findall(r"[^\W\d_][\w'’-]*", sentence) if len(w) > 1]
    if len(words) < 6:
        return False
    capitalised = sum(w[0].isupper() for w in words)
    return capitalised / len(words) > 0.6


# --- scoring ---------------------------------------------------------------------------------


def _fold(word: str) -> str:
    """A plural folded to its singular, so "complications" matches "complication"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """The lowercased, plural-folded words of `text` that carry meaning."""
    return {_fold(w) for w in (t.lower() for t in _WORD_RE.findall(text)) if w not in _STOP}


_FINDINGS_RE = re.compile(r"\b(?:abstract|summary|results?|findings|discussion|conclusions?)\b", re.IGNORECASE)
_METHODS_RE = re.compile(r"\b(?:methods?|methodology|materials|experimental|procedures?)\b", re.IGNORECASE)


def section_prior(chunk: EvidenceChunk, back_matter_asked: bool = False) -> float:
    """Findings sections are where answers are stated; methods sections describe how. Asked
    about funding or authors, the back matter is where the answer is stated."""
    section = chunk.section or ""
    if chunk.kind == "abstract" or _FINDINGS_RE.search(section):
        return SECTION_PRIOR["findings"]
    if back_matter_asked and is_back_matter_section(section):
        return SECTION_PRIOR["findings"]
    if _METHODS_RE.search(section):
        return SECTION_PRIOR["methods"]
    return 0.0


@dataclass(frozen=True)
class Sentence:
    """One quotable sentence of the evidence."""

    index: int  # 1-based position of its chunk in the evidence list: the citation
    text: str  # as shown: whitespace normalised, the source's reference markers removed
    words: frozenset[str]
    prior: float


def candidate_sentences(question: str, chunks: list[EvidenceChunk]) -> list[Sentence]:
    """Every prose sentence of the top chunks that could be quoted."""
    back_matter_allowed = asks_about_back_matter(question)
    top = chunks[:MAX_CHUNKS]
    found = []
    for rank, chunk in enumerate(top):
        if chunk.kind in ("table", "figure"):
            continue
        if is_back_matter_section(chunk.section) and not back_matter_allowed:
            continue
        prior = RANK_PRIOR * (1 - rank / len(top)) + section_prior(chunk, back_matter_allowed)
        for span in segment_source_text(chunk.text):
            text = " ".join(span.text.split())
            if span.kind != "sentence" or not _quotable(text) or is_non_prose(text, back_matter_allowed):
                continue
            shown = strip_reference_markers(text)
            found.append(Sentence(rank + 1, shown, frozenset(content_words(shown)), prior))
    return found


def _quotable(text: str) -> bool:
    """A whole statement of sensible length: it starts with a capital (or a digit or quote) and
    ends with a full stop, so a fragment cut at a page or chunk boundary is never quoted, nor a
    question (a paper's research question echoes the researcher's and answers nothing)."""
    return (MIN_SENTENCE_CHARS <= len(text) <= MAX_SENTENCE_CHARS
            and not text[0].islower() and text.rstrip("\"'”’)").endswith((".", "!")))


def relevance(sentences: list[Sentence], wanted: set[str]) -> list[float]:
    """BM25 of each sentence for the question's words, over the IDF of all those words found in
    the evidence: about the share of the question a sentence covers, comparable to the priors.

    IDF is computed over the candidate sentences; BM25's length normalisation keeps a long list
    of terms from winning by length alone."""
    n = len(sentences)
    df = Counter(w for s in sentences for w in s.words & wanted)
    idf = {w: math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in df}
    question_weight = sum(idf.values()) or 1.0
    average_length = sum(len(s.words) for s in sentences) / max(n, 1)
    scores = []
    for s in sentences:
        length_norm = 1 - BM25_B + BM25_B * len(s.words) / max(average_length, 1)
        term = (BM25_K1 + 1) / (1 + BM25_K1 * length_norm)
        scores.append(sum(idf[w] * term for w in s.words & wanted) / question_weight)
    return scores


def choose_points(question: str, chunks: list[EvidenceChunk], max_points: int = MAX_POINTS) -> list[Sentence]:
    """The best sentences across the evidence, best first: each shares enough of the question's
    words, at most two come from one chunk, and none repeats another."""
    wanted = content_words(question)
    if not wanted:
        return []
    needed = min(2, len(wanted))  # one shared word is chance, two are a topic
    sentences = candidate_sentences(question, chunks)
    scored = sorted(zip(relevance(sentences, wanted), sentences), key=lambda x: -(x[0] + x[1].prior))
    points: list[Sentence] = []
    for _, sentence in scored:
        if len(sentence.words & wanted) < needed:
            continue
        if sum(p.index == sentence.index for p in points) >= MAX_POINTS_PER_CHUNK:
            continue
        if any(_jaccard(sentence.words, p.words) >= NEAR_DUPLICATE for p in points):
            continue
        points.append(sentence)
        if len(points) == max_points:
            break
    return points


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / max(len(a | b), 1)


def extractive_answer(question: str, chunks: list[EvidenceChunk], max_points: int = MAX_POINTS) -> Iterator[str]:
    """Yield the answer piece by piece (the pieces are streamed as `delta` events)."""
    points = choose_points(question, chunks, max_points)
    if not points:
        yield NOT_FOUND
        return
    yield ANSWER_INTRO
    for point in points:
        sentence = point.text
        if sentence[-1] not in ".!?":
            sentence += "."
        yield f"- {sentence[:-1]} [{point.index}]{sentence[-1]}\n"


def format_candidates(candidates: list[Candidate]) -> str:
    lines = []
    for number, c in enumerate(candidates, start=1):
        authors = ", ".join(c.authors[:3]) + (" et al." if len(c.authors) > 3 else "")
        meta = ", ".join(x for x in (authors, str(c.year or ""), c.venue or "") if x)
        abstract = (c.abstract or "").strip()
        lines.append(f"{number}. {c.title} ({meta})" + (f"\n   {abstract[:600]}" if abstract else ""))
    return "\n".join(lines)


def candidates_answer(candidates: list[Candidate], dropped: int) -> Iterator[str]:
    if not candidates:
        yield "I found no new papers for this request"
        yield f" ({dropped} matches are already in your library)." if dropped else "."
        return
    yield f"I found {len(candidates)} candidate papers not yet in your library"
    yield f" ({dropped} already owned were left out):\n\n" if dropped else ":\n\n"
    for number, c in enumerate(candidates, start=1):
        authors = ", ".join(c.authors[:2]) + (" et al." if len(c.authors) > 2 else "")
        meta = "; ".join(x for x in (authors, str(c.year) if c.year else "", c.venue or "") if x)
        access = " — open access PDF available" if c.pdf_url else ""
        yield f"{number}. **{c.title}** ({meta}){access}\n"
    yield "\nTick the papers you want and import them into Zotero."
