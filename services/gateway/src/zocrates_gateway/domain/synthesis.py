"""Writing the answer: the LLM prompt, and the offline extractive synthesizer.

The extractive synthesizer needs no model: it picks, from the top-ranked chunks, the sentence
that shares most content words with the question, and cites it. It never writes a claim that
is not a sentence of the cited passage, so offline answers are verifiable by construction.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

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

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]+|\d+(?:\.\d+)?")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")
_STOP = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in "
    "into is it its may might of on or our so than that the their them then there these they this "
    "those to was we were what when where which while who why will with would you your about "
    "between does do tell me my library paper papers study studies".split()
)
MAX_SENTENCE_CHARS = 400


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD_RE.findall(text) if w.lower() not in _STOP}


def best_sentence(question: str, text: str) -> str | None:
    wanted = content_words(question)
    best, best_score = None, 0.0
    for raw in _SENTENCE_RE.split(" ".join(text.split())):
        sentence = raw.strip()
        if len(sentence) < 25 or len(sentence) > MAX_SENTENCE_CHARS or sentence.startswith("#"):
            continue
        words = content_words(sentence)
        if not words:
            continue
        score = len(words & wanted) + 0.01 * min(len(words), 30) / 30
        if score > best_score:
            best, best_score = sentence, score
    return best


def extractive_answer(question: str, chunks: list[EvidenceChunk], max_points: int = 4) -> Iterator[str]:
    """Yield the answer piece by piece (the pieces are streamed as `delta` events)."""
    points = []
    for index, chunk in enumerate(chunks, start=1):
        sentence = best_sentence(question, chunk.text)
        if sentence and sentence not in (p for _, p in points):
            points.append((index, sentence))
        if len(points) == max_points:
            break
    if not points:
        yield "I could not find a passage in your library that addresses this question."
        return
    yield "Here is what your library says (extracted verbatim from the most relevant passages):\n\n"
    for index, sentence in points:
        sentence = sentence.rstrip()
        if sentence[-1] not in ".!?":
            sentence += "."
        yield f"- {sentence[:-1]} [{index}]{sentence[-1]}\n"


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
