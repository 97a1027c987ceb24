"""Hybrid search: dense and BM25 candidates fused by their normalised scores (DBSF), optionally
reranked by a cross-encoder, near-duplicates collapsed, back matter (acknowledgements,
declarations, author details) ranked last unless asked about, turned into `EvidenceChunk`s."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from zocrates_contracts import SCORED_UNITS, AnswerUnit, BackMatterTopic, Creator, EvidenceChunk, Pages
from zocrates_retrieval.adapters.embed import Embedder, Reranker
from zocrates_retrieval.adapters.store import (
    ITEM_FIELD,
    LIBRARY_FIELD,
    ChunkStore,
    Hit,
    Mode,
    Narrowing,
    SparseEncoder,
    Tenant,
    decode_vectors,
    query_chunks,
)
from zocrates_retrieval.domain.structure import is_back_matter

#: Citation tokens a follow-up question may carry over from an answer: [3], [1, 2], [2-4], [ 5 ].
_CITATION_TOKEN = re.compile(r"\[\s*\d+(?:\s*(?:[,;]|[-\u2013\u2014])\s*\d+)*\s*\]")
_WORD = re.compile(r"\w+")

#: Two passages sharing this fraction of their word trigrams are one passage (a PDF and the
#: HTML snapshot of the same article, an item imported twice).
DUPLICATE_JACCARD = 0.8

#: A question about back matter is also answered from the answering sections of this many of
#: the best-ranked papers, found among their first `BACK_MATTER_POOL` passages for it.
BACK_MATTER_PAPERS, BACK_MATTER_POOL = 3, 200

#: The headings of the sections that answer each topic of back matter a question may ask about
#: (`RetrievalRequested.back_matter`, read from the question by the asker): `is_back_matter`
#: sections rank last, unless the question is about such matter; then the ones that answer it
#: come first.
_ANSWERING_HEADINGS: dict[BackMatterTopic, re.Pattern] = {
    topic: re.compile(headings, re.IGNORECASE)
    for topic, headings in [
        ("funding", r"fund|financ|grant|acknowledg|declaration"),
        ("acknowledgements", r"acknowledg"),
        ("competing_interests", r"competing|conflict|interest|declaration|disclosure"),
        ("contributions", r"contribution"),
        ("affiliations", r"affiliation|author details|author information|correspondence"),
        ("ethics", r"ethic|consent|declaration"),
        ("data_availability", r"availab|data sharing"),
        ("abbreviations", r"abbreviation"),
        ("supplementary", r"supplementary|additional file"),
        ("licence", r"licen[cs]|copyright|open access"),
    ]
}


def sanitize_query(text: str) -> str:
    """The query without stray citation tokens and runs of whitespace."""
    return re.sub(r"\s+", " ", _CITATION_TOKEN.sub(" ", text)).strip()


def answering_headings(topics: Sequence[BackMatterTopic]) -> list[re.Pattern]:
    """The headings that answer a question about these topics of back matter (see `_ANSWERING_HEADINGS`)."""
    return [_ANSWERING_HEADINGS[topic] for topic in dict.fromkeys(topics)]


def _back_matter_heading(hit: Hit) -> str | None:
    """The innermost back-matter heading of a hit's section: "Declarations > Funding" is funding."""
    path = (hit.payload.get("section") or "").split(" > ")
    return next((title for title in reversed(path) if is_back_matter((title,))), None)


def answers_back_matter(hit: Hit, answers: list[re.Pattern]) -> bool:
    heading = _back_matter_heading(hit)
    return heading is not None and any(answer.search(heading) for answer in answers)


def order_back_matter(hits: list[Hit], answers: list[re.Pattern]) -> list[Hit]:
    """Back-matter hits after all others; but where the question is about such matter (the
    headings that answer it, `answers`), the sections that answer it first and the rest at
    their own rank. A stable reordering."""

    def place(hit: Hit) -> int:
        if _back_matter_heading(hit) is None:
            return 1
        if answers_back_matter(hit, answers):
            return 0
        return 1 if answers else 2

    return sorted(hits, key=place)  # sorted is stable: rank order within each part


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    if len(words) < 3:
        return {tuple(words)}
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def collapse_near_duplicates(hits: list[Hit], threshold: float = DUPLICATE_JACCARD) -> list[Hit]:
    """Keep the best-ranked of each group of near-identical passages, in rank order."""
    kept: list[tuple[Hit, set]] = []
    for hit in hits:
        sh = _shingles(hit.payload.get("text", ""))
        # Jaccard >= t needs sizes within a factor t of each other: skip the rest unexamined
        if any(
            threshold * len(other) <= len(sh) <= len(other) / threshold
            and len(sh & other) / max(len(sh | other), 1) >= threshold
            for _, other in kept
        ):
            continue
        kept.append((hit, sh))
    return [h for h, _ in kept]


class Searcher:
    """Finds a tenant's most relevant chunks for a question."""

    def __init__(
        self,
        store: ChunkStore,
        embedder: Embedder,
        sparse: SparseEncoder | None = None,
        reranker: Reranker | None = None,
        candidates: int = 50,
    ):
        self.store = store
        self.embedder = embedder
        self.sparse = sparse or SparseEncoder()
        self.reranker = reranker
        self.candidates = candidates

    def search(
        self,
        tenant: Tenant,
        query: str,
        top_k: int = 12,
        mode: Mode = "hybrid",
        within: Sequence[Narrowing] | None = None,
        back_matter: Sequence[BackMatterTopic] = (),
    ) -> list[Hit]:
        """Most relevant first, at most `top_k`, no two near-identical passages; back matter
        after everything else unless the question is about it (`back_matter`, the topics it
        asks about: `order_back_matter`). With `within`, only chunks inside one of those
        narrowings of the tenant (none: nothing)."""
        text = sanitize_query(query)
        if not text:
            return []
        dense = self.embedder.embed_query(text) if mode != "lexical" else None
        return self._within(tenant, text, dense, top_k, mode, within, answering_headings(back_matter))

    def evidence(
        self,
        tenant: Tenant,
        query: str,
        top_k: int = 12,
        mode: Mode = "hybrid",
        within: Sequence[Narrowing] | None = None,
        back_matter: Sequence[BackMatterTopic] = (),
    ) -> list[EvidenceChunk]:
        """`search` as evidence, each quotable unit scored against the query."""
        text = sanitize_query(query)
        if not text:
            return []
        dense = self.embedder.embed_query(text)
        answers = answering_headings(back_matter)
        hits = self._within(tenant, text, dense if mode != "lexical" else None, top_k, mode, within, answers)
        return [to_evidence(h, dense) for h in hits]

    def _within(
        self,
        tenant: Tenant,
        text: str,
        dense: np.ndarray | None,
        top_k: int,
        mode: Mode,
        within: Sequence[Narrowing] | None,
        answers: list[re.Pattern],
    ) -> list[Hit]:
        """One ranking per narrowing (a scope spans several only when its items lie in several
        libraries), merged by score."""
        if within is None:
            return self._ranked(tenant, text, dense, top_k, mode, answers)
        if len(within) == 1:
            return self._ranked(tenant, text, dense, top_k, mode, answers, within[0])
        hits = [h for n in within for h in self._ranked(tenant, text, dense, top_k, mode, answers, n)]
        return sorted(hits, key=lambda h: (-h.score, h.id))[:top_k]

    def _ranked(
        self,
        tenant: Tenant,
        text: str,
        dense: np.ndarray | None,
        top_k: int,
        mode: Mode,
        answers: list[re.Pattern],
        within: Narrowing | None = None,
    ) -> list[Hit]:
        sparse = self.sparse.query(text) if mode != "dense" else None

        def query(limit: int, narrowing: Narrowing | None) -> list[Hit]:
            return query_chunks(
                self.store,
                tenant,
                dense=dense,
                sparse=sparse,
                limit=limit,
                candidates=self.candidates,
                mode=mode,
                within=narrowing,
            )

        hits = query(max(top_k * 3, 30), within)  # room for duplicates to drop out and the reranker to choose
        if self.reranker is not None and hits:
            scores = self.reranker.scores(text, [h.payload.get("text", "") for h in hits])
            hits = [Hit(h.id, s, h.payload) for h, s in sorted(zip(hits, scores), key=lambda x: -x[1])]
        if answers:
            hits += answering_back_matter(hits, answers, within, query)
        return order_back_matter(collapse_near_duplicates(hits), answers)[:top_k]


def answering_back_matter(
    hits: list[Hit],
    answers: list[re.Pattern],
    within: Narrowing | None,
    query: Callable[[int, Narrowing], list[Hit]],
) -> list[Hit]:
    """The sections of the best-ranked papers of `hits` that answer a question about their
    back matter, where the ranking left them out (`query` searches inside a narrowing): a
    funding statement rarely shares the question's words ("who paid for ...?" against "...
    provided the financial assistance"), but the paper the question is about ranks first."""
    papers: dict[str, list[str]] = {}  # library -> item keys, best-ranked first
    for hit in hits:
        keys = papers.setdefault(hit.payload.get(LIBRARY_FIELD), [])
        if hit.payload.get(ITEM_FIELD) not in keys and sum(map(len, papers.values())) < BACK_MATTER_PAPERS:
            keys.append(hit.payload.get(ITEM_FIELD))
    have = {h.id for h in hits}
    return [
        hit
        for library_id, keys in papers.items()
        if keys and library_id is not None
        for hit in query(BACK_MATTER_POOL, Narrowing(library_id, ITEM_FIELD, tuple(keys)))
        if hit.id not in have and (within is None or within.admits(hit.payload)) and answers_back_matter(hit, answers)
    ]


def answer_units(payload: dict, query: np.ndarray | None) -> list[AnswerUnit]:
    """A passage's units, each quotable one (see SCORED_UNITS) with its cosine similarity to the query."""
    units = [AnswerUnit(kind=k, start=s, end=e, text=t) for k, s, e, t in payload.get("units") or []]
    if query is None or not payload.get("unit_vectors"):
        return units
    similarities = iter(decode_vectors(payload["unit_vectors"], len(query)) @ query)
    return [
        u.model_copy(update={"similarity": round(float(next(similarities)), 4)}) if u.kind in SCORED_UNITS else u
        for u in units
    ]


def to_evidence(hit: Hit, query: np.ndarray | None = None) -> EvidenceChunk:
    """The hit as evidence; `query` (the query's dense vector) scores its units."""
    p = hit.payload
    return EvidenceChunk(
        chunk_id=hit.id,
        item_key=p["item_key"],
        library_id=p.get("library_id") or "user",
        attachment_key=p.get("attachment_key"),
        title=p.get("title") or "",
        creators=[Creator(**c) for c in p.get("creators") or []],
        year=p.get("year"),
        section=p.get("section"),
        publication=p.get("publication"),
        citation_key=p.get("citation_key"),
        text=p.get("text", ""),
        score=hit.score,
        kind=p.get("kind") or "text",
        role=p.get("role") or "body",
        units=answer_units(p, query),
        pages=Pages(**p["pages"]) if p.get("pages") else None,
        position=p.get("chunk_no"),
    )
