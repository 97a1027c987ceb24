"""The novelty filter: which candidates the user already owns, and why.

A candidate is owned when, in this order: its DOI is an owned item's DOI; its arXiv id (from the
candidate, or from its arXiv DOI) is an owned item's; or its normalised title has a normalised
Levenshtein similarity of at least 0.88 with an owned item's title. Like Zotero's own duplicate
finder, a title match is vetoed when both sides carry different DOIs neither of which is an arXiv
DOI: two registered publications with the same title (an erratum, a reprint in another venue) are
different works, whereas a preprint and its journal version are the same paper.

Title matching has to stay fast against 100,000 titles (50 candidates in well under 50 ms), so a
fuzzy comparison only runs against titles that could reach the threshold:
- exact normalised titles are a dict lookup;
- normalised similarity `1 - distance / max(len)` can only reach `t` when the shorter title is at
  least `t` times the longer one, so titles outside that length window are never compared;
- and a near-duplicate shares at least one word with the candidate, so only titles sharing one of
  its words are compared. Words in more than 1% of the library (and more than 1,000 titles; "of",
  "learning" in an ML library) are not used to find titles: they would bring in a large part of
  the library while saying little. A near-duplicate is thus missed only when it shares none of
  the candidate's less common words, which a typo or a changed subtitle never causes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from zocrates_contracts import Candidate, DroppedCandidate, SyncedItem
from zocrates_contracts.identifiers import (
    ARXIV_DOI_PREFIX,
    arxiv_of_doi,
    item_identifiers,
    normalize_arxiv,
    normalize_doi,
    normalize_title,
)

DEFAULT_TITLE_SIMILARITY = 0.88


@dataclass(frozen=True)
class TitleMatch:
    key: str
    title: str
    similarity: float


class TitleIndex:
    """Owned titles, normalised, searchable by exact match and by bounded fuzzy match."""

    def __init__(self, entries: Iterable[tuple[str, str, tuple[str, ...]]]):
        """`entries`: (title, item key, the item's DOIs)."""
        self._norm: list[str] = []
        self._len: list[int] = []
        self._title: list[str] = []
        self._key: list[str] = []
        self._dois: list[tuple[str, ...]] = []
        self._exact: dict[str, list[int]] = {}
        self._postings: dict[str, list[int]] = {}
        for title, key, dois in entries:
            norm = normalize_title(title)
            if not norm:  # an empty title never matches (as in Zotero)
                continue
            i = len(self._norm)
            self._norm.append(norm)
            self._len.append(len(norm))
            self._title.append(title)
            self._key.append(key)
            self._dois.append(dois)
            self._exact.setdefault(norm, []).append(i)
            for word in set(norm.split()):
                self._postings.setdefault(word, []).append(i)
        self._max_block_df = max(1_000, len(self._norm) // 100)

    def __len__(self) -> int:
        return len(self._norm)

    def match(
        self, title: str, dois: Iterable[str] = (), threshold: float = DEFAULT_TITLE_SIMILARITY
    ) -> TitleMatch | None:
        """The most similar owned title at or above `threshold` that no DOI vetoes, else None."""
        norm = normalize_title(title)
        if not norm:
            return None
        dois = tuple(dois)
        for i in self._exact.get(norm, ()):
            if not _vetoed(dois, self._dois[i]):
                return TitleMatch(self._key[i], self._title[i], 1.0)
        block = self._block(norm, threshold)
        if not block:
            return None
        choices = [self._norm[i] for i in block]
        for _, score, pos in process.extract(
            norm, choices, scorer=Levenshtein.normalized_similarity, score_cutoff=threshold, limit=5
        ):
            i = block[pos]
            if not _vetoed(dois, self._dois[i]):
                return TitleMatch(self._key[i], self._title[i], score)
        return None

    def _block(self, norm: str, threshold: float) -> list[int]:
        words = [w for w in set(norm.split()) if w in self._postings]
        keys = [w for w in words if len(self._postings[w]) <= self._max_block_df] or words
        shortest, longest = len(norm) * threshold, len(norm) / threshold
        seen: set[int] = set()
        for word in keys:
            seen.update(self._postings[word])
        lengths = self._len
        return [i for i in seen if shortest <= lengths[i] <= longest]


def _is_preprint_doi(doi: str) -> bool:
    return doi.startswith(ARXIV_DOI_PREFIX)


def _vetoed(candidate_dois: tuple[str, ...], owned_dois: tuple[str, ...]) -> bool:
    published = [d for d in candidate_dois if not _is_preprint_doi(d)]
    owned = [d for d in owned_dois if not _is_preprint_doi(d)]
    return bool(published and owned and not set(published) & set(owned))


@dataclass(frozen=True)
class LibraryItem:
    """The identity of one item the user owns."""

    key: str
    title: str = ""
    dois: tuple[str, ...] = ()
    arxiv_ids: tuple[str, ...] = ()


def synced_identity(item: SyncedItem) -> LibraryItem:
    """The identifiers of a synced item, found where the Zotero reader finds them (DOI field,
    Extra, a doi.org URL; arXiv ids in Extra, the URL or an arXiv DOI)."""
    found = item_identifiers(item.doi, [item.url], item.extra)
    return LibraryItem(item.key, item.title, found.dois, found.arxiv_ids)


class LibraryIndex:
    """The identifiers of everything one user owns: DOIs, arXiv ids, titles."""

    def __init__(self, items: Iterable[LibraryItem], title_similarity: float = DEFAULT_TITLE_SIMILARITY):
        items = list(items)
        self.title_similarity = title_similarity
        self.dois: dict[str, str] = {}
        self.arxiv: dict[str, str] = {}
        for item in items:
            for doi in item.dois:
                self.dois.setdefault(doi, item.key)
            for arxiv_id in item.arxiv_ids:
                self.arxiv.setdefault(arxiv_id, item.key)
        self.titles = TitleIndex((item.title, item.key, item.dois) for item in items)
        self.size = len(items)

    def owned(self, candidate: Candidate) -> DroppedCandidate | None:
        """Why the user already owns `candidate` (as a drop record), or None if it is new to them."""
        doi = normalize_doi(candidate.doi)
        if doi and doi in self.dois:
            return _drop(candidate, f"same DOI as library item {self.dois[doi]} ({doi})", self.dois[doi])
        arxiv_id = normalize_arxiv(candidate.arxiv_id) or arxiv_of_doi(doi)
        if arxiv_id and arxiv_id in self.arxiv:
            key = self.arxiv[arxiv_id]
            return _drop(candidate, f"same arXiv id as library item {key} ({arxiv_id})", key)
        match = self.titles.match(candidate.title, (doi,) if doi else (), self.title_similarity)
        if match:
            how = "same title" if match.similarity == 1.0 else f"title {match.similarity:.0%} similar to that"
            return _drop(candidate, f"{how} of library item {match.key} ({match.title!r})", match.key)
        return None


def _drop(candidate: Candidate, reason: str, key: str) -> DroppedCandidate:
    return DroppedCandidate(candidate=candidate, reason=reason, matched_item_key=key)


def filter_novel(
    candidates: Iterable[Candidate], library: LibraryIndex | None
) -> tuple[list[Candidate], list[DroppedCandidate]]:
    """Split `candidates` into those the user does not own yet and those dropped (with the reason)."""
    if library is None:
        return list(candidates), []
    novel: list[Candidate] = []
    dropped: list[DroppedCandidate] = []
    for candidate in candidates:
        drop = library.owned(candidate)
        if drop is None:
            novel.append(candidate)
        else:
            dropped.append(drop)
    return novel, dropped
