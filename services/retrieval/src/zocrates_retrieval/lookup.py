"""The library lookup: which items of one user's library carry a DOI, an arXiv id, a PMID,
exactly a title, or a creator of a family name (`LibraryLookupRequested` -> `LibraryItemsFound`).

The index is built from the metadata the ingest reads, the local Zotero snapshot or a
lab-hosted library's synced catalog, so the lookup and the search agree on what the library
holds. Identifiers are found where Zotero users keep them (`item_identifiers`: the DOI field,
Extra, the item's and its attachments' URLs) and compared in the canonical forms of
`zocrates_contracts.identifiers`, as discovery's novelty filter compares them; a title (or the
short title before its colon: "Paper Plain"), or a creator's family name, matches when it is
equal after `normalize_title` (case, punctuation, diacritics aside); an author asked with a year matches only items of that year. Attachments,
notes, annotations and the trash are not the library. One index holds one user's libraries
(My Library and their groups): the service builds it per tenant.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from zocrates_contracts import LibraryItemMatch, LibraryLookupRequested, SyncedItem
from zocrates_contracts.identifiers import item_identifiers, normalize_title
from zocrates_contracts.messages import MAX_LOOKUP_MATCHES
from zocrates_retrieval.adapters.zotero import ItemMeta, LibrarySnapshot, synced_item_meta
from zocrates_retrieval.scope import Outline

NOT_ITEMS = ("attachment", "note", "annotation")
#: Users whose lookup index is kept in memory (rebuilt when their library changes).
LOOKUP_INDEXES = 32
MY_LIBRARY = "My Library"


@dataclass(frozen=True)
class LibraryItem:
    """One regular item of the library with its canonical identifiers."""

    meta: ItemMeta
    library_name: str
    dois: tuple[str, ...] = ()
    arxiv_ids: tuple[str, ...] = ()
    pmids: tuple[str, ...] = ()

    def keys(self) -> Iterable[tuple[str, str]]:
        """What the item is found by: (kind, canonical value)."""
        yield from (("doi", d) for d in self.dois)
        yield from (("arxiv", a) for a in self.arxiv_ids)
        yield from (("pmid", p) for p in self.pmids)
        if title := normalize_title(self.meta.title):
            yield "title", title
        # its short title, the part before a colon, which a researcher calls it by ("Paper Plain")
        if ":" in self.meta.title and (short := normalize_title(self.meta.title.split(":", 1)[0])) and len(short) >= 4:
            yield "title", short
        for creator in self.meta.creators:
            if family := normalize_title(creator.last_name or creator.name):
                yield "author", family

    def match(self, matched_by: str, matched: str) -> LibraryItemMatch:
        m = self.meta
        return LibraryItemMatch(
            item_key=m.key,
            library_id=m.library_id,
            library_name=self.library_name[:2_000],
            title=m.title[:2_000],
            creators=list(m.creators[:100]),
            year=m.year,
            publication=(m.publication or "")[:2_000] or None,
            doi=self.dois[0] if self.dois else None,
            arxiv_id=self.arxiv_ids[0] if self.arxiv_ids else None,
            pmid=self.pmids[0] if self.pmids else None,
            collections=list(m.collections[:100]),
            matched_by=matched_by,
            matched=matched[:500],
        )


def library_item(meta: ItemMeta, library_name: str, attachment_urls: Iterable[str] = ()) -> LibraryItem:
    found = item_identifiers(meta.doi, [meta.url, *attachment_urls], meta.extra)
    return LibraryItem(meta, library_name, found.dois, found.arxiv_ids, found.pmids)


class ItemIndex:
    """One user's regular items, found by canonical identifier, normalised title or creator's family name."""

    def __init__(self, items: Iterable[LibraryItem]):
        self.size = 0
        self._by: dict[tuple[str, str], list[LibraryItem]] = {}
        for item in items:
            self.size += 1
            for key in dict.fromkeys(item.keys()):
                self._by.setdefault(key, []).append(item)

    def find(self, request: LibraryLookupRequested) -> list[LibraryItemMatch]:
        """Every item matching a requested identifier, title or author, in the order asked; an
        item found by two of them is listed once per identifier (the answer names each)."""
        wanted = [
            *(("doi", d) for d in request.dois),
            *(("arxiv", a) for a in request.arxiv_ids),
            *(("pmid", p) for p in request.pmids),
            *(("title", t) for t in request.titles),
        ]
        found: list[LibraryItemMatch] = []
        for kind, value in wanted:
            key = normalize_title(value) if kind == "title" else value
            found += [item.match(kind, value) for item in self._by.get((kind, key), [])]
        for author in request.authors:
            items = self._by.get(("author", normalize_title(author.family)), [])
            found += [item.match("author", author.family) for item in items if author.year in (None, item.meta.year)]
        return found[:MAX_LOOKUP_MATCHES]


def snapshot_index(snap: LibrarySnapshot) -> ItemIndex:
    """The index of a local Zotero data directory's snapshot (My Library and group libraries)."""
    names = {lib.library_id: lib.name for lib in snap.libraries}
    return ItemIndex(
        library_item(meta, names.get(meta.library_id, meta.library_id), snap.attachment_urls.get(ref, ()))
        for ref, meta in snap.items.items()
        if ref not in snap.trashed
    )


def synced_index(items: dict[tuple[str, str], SyncedItem]) -> ItemIndex:
    """The index of a lab-hosted library from its synced catalog (the sync has no trash: a
    trashed item is not synced, and it sends no group names, so groups go by their id)."""
    urls: dict[tuple[str, str], list[str]] = {}
    for (lib, _), item in items.items():
        if item.item_type == "attachment" and item.parent_key and item.url:
            urls.setdefault((lib, item.parent_key), []).append(item.url)

    def name(library_id: str) -> str:
        return MY_LIBRARY if library_id == "user" else f"group {library_id.removeprefix('group-')}"

    return ItemIndex(
        library_item(synced_item_meta(item, lib), name(lib), urls.get((lib, key), ()))
        for (lib, key), item in items.items()
        if item.item_type not in NOT_ITEMS
    )


@dataclass(frozen=True)
class LibraryView:
    """What one read of a user's library gives the requests that do not search text: the
    lookup index, and the outline (collections, tags) a question's scope is chosen from."""

    items: ItemIndex
    outline: Outline


class IndexCache:
    """The library views of the last `size` users asked about, each with the stamp of what it
    was built from (a zotero.sqlite's size and mtime, a catalog revision): rebuilt when the
    library changed since, the least recently used dropped first."""

    def __init__(self, size: int = LOOKUP_INDEXES):
        self.size = size
        self._indexes: OrderedDict[str, tuple[object, LibraryView]] = OrderedDict()
        self._lock = asyncio.Lock()

    async def get(self, user_id: str, stamp: object, build: Callable[[], Awaitable[LibraryView]]) -> LibraryView:
        async with self._lock:
            cached = self._indexes.get(user_id)
            if cached is None or cached[0] != stamp:
                cached = (stamp, await build())
                self._indexes[user_id] = cached
                while len(self._indexes) > self.size:
                    self._indexes.popitem(last=False)
            self._indexes.move_to_end(user_id)
            return cached[1]
