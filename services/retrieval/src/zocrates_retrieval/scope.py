"""A question's scope, and the library outline it is chosen from.

A `RetrievalScope` (one library, a collection with or without its subcollections, a tag, a
set of items, one attachment) becomes `Narrowing`s of the index: one library each, and there
the chunks whose `item_key`, `attachment_key`, `collection_keys` or `tags` hold one of the
scope's values. The store ANDs them inside the tenant gate, so a scope never reaches beyond
the user who asks; this module only says which part of their library is meant.

A collection with its subcollections is expanded here, when the question is asked, from the
library's collection tree (`LibraryOutline`): the index keeps each item's own collections
only, so moving a collection under another needs no index write. The outline (libraries,
collections, tags, with the items in each) is also what GET /library/collections and
/library/tags list: the local Zotero snapshot's, or a hosted library's from its synced catalog.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from zocrates_contracts import (
    AttachmentScope,
    CollectionScope,
    ItemsScope,
    LibraryOutline,
    LibraryOutlineRequested,
    LibraryScope,
    OutlineCollection,
    OutlineLibrary,
    OutlineTag,
    SyncedCollection,
    SyncedItem,
    TagScope,
)
from zocrates_contracts.messages import MAX_OUTLINE_ENTRIES, MAX_OUTLINE_LIBRARIES
from zocrates_contracts.scopes import RetrievalScope
from zocrates_retrieval.adapters.store import (
    ATTACHMENT_FIELD,
    COLLECTIONS_FIELD,
    ITEM_FIELD,
    TAGS_FIELD,
    Narrowing,
)
from zocrates_retrieval.adapters.zotero import Collection, LibrarySnapshot, synced_item_meta

MY_LIBRARY = "My Library"
NOT_ITEMS = ("attachment", "note", "annotation")


@dataclass
class Outline:
    """One user's libraries, their collection trees, and how many items each collection and
    tag holds (regular items; the trash left out)."""

    libraries: dict[str, str] = field(default_factory=dict)  # library id -> name
    collections: list[Collection] = field(default_factory=list)
    in_collection: Counter = field(default_factory=Counter)  # (library, collection key) -> items
    tagged: Counter = field(default_factory=Counter)  # (library, tag) -> items

    def __post_init__(self) -> None:
        self._children: dict[tuple[str, str], list[str]] = defaultdict(list)
        for c in self.collections:
            if c.parent_key is not None:
                self._children[(c.library_id, c.parent_key)].append(c.key)

    def with_descendants(self, library_id: str, key: str) -> list[str]:
        """The collection and every collection under it, at any depth (a cycle, which a
        damaged database could hold, is walked once)."""
        found, todo = [key], [key]
        while todo:
            for child in self._children.get((library_id, todo.pop()), ()):
                if child not in found:
                    found.append(child)
                    todo.append(child)
        return found


def narrowings(scope: RetrievalScope, outline: Outline | None = None) -> list[Narrowing]:
    """The parts of the index `scope` means. `outline` expands a collection's subcollections
    (without it, the collection alone is searched)."""
    if isinstance(scope, LibraryScope):
        return [Narrowing(scope.library_id)]
    if isinstance(scope, CollectionScope):
        keys = [scope.collection_key]
        if scope.subcollections and outline is not None:
            keys = outline.with_descendants(scope.library_id, scope.collection_key)
        return [Narrowing(scope.library_id, COLLECTIONS_FIELD, tuple(keys))]
    if isinstance(scope, TagScope):
        return [Narrowing(scope.library_id, TAGS_FIELD, (scope.tag,))]
    if isinstance(scope, AttachmentScope):
        return [Narrowing(scope.library_id, ATTACHMENT_FIELD, (scope.attachment_key,))]
    if isinstance(scope, ItemsScope):
        by_library: dict[str, list[str]] = {}
        for ref in scope.items:
            by_library.setdefault(ref.library_id, []).append(ref.item_key)
        return [Narrowing(lib, ITEM_FIELD, tuple(dict.fromkeys(keys))) for lib, keys in by_library.items()]
    raise TypeError(f"unknown scope {scope!r}")


def needs_outline(scope: RetrievalScope | None) -> bool:
    """Only a collection with its subcollections needs the library's collection tree."""
    return isinstance(scope, CollectionScope) and scope.subcollections


# --- the outline, from where the library is read ---------------------------------------------


def snapshot_outline(snap: LibrarySnapshot) -> Outline:
    """The outline of a local Zotero data directory's snapshot."""
    items = [meta for ref, meta in snap.items.items() if ref not in snap.trashed]
    return Outline(
        libraries={lib.library_id: lib.name for lib in snap.libraries},
        collections=list(snap.collections),
        in_collection=Counter((m.library_id, key) for m in items for key in m.collection_keys),
        tagged=Counter((m.library_id, tag) for m in items for tag in m.tags),
    )


def synced_outline(items: dict[tuple[str, str], SyncedItem], trees: dict[str, list[SyncedCollection]]) -> Outline:
    """The outline of a hosted library: its synced items and the collection tree each library
    last synced (the sync sends no group names, so groups go by their id)."""
    metas = [synced_item_meta(item, lib) for (lib, _), item in items.items() if item.item_type not in NOT_ITEMS]
    libraries = sorted({lib for lib, _ in items} | set(trees))
    return Outline(
        libraries={lib: MY_LIBRARY if lib == "user" else f"group {lib.removeprefix('group-')}" for lib in libraries},
        collections=[Collection(lib, c.key, c.name, c.parent_key) for lib, tree in trees.items() for c in tree],
        in_collection=Counter((m.library_id, key) for m in metas for key in m.collection_keys),
        tagged=Counter((m.library_id, tag) for m in metas for tag in m.tags),
    )


def outline_reply(request: LibraryOutlineRequested, outline: Outline | None) -> LibraryOutline:
    """The part of the outline the request asks for, libraries and entries in name order."""
    if outline is None:
        return LibraryOutline(**request.reply_fields())
    libraries = [
        OutlineLibrary(library_id=lib, name=name[:2_000])
        for lib, name in sorted(outline.libraries.items(), key=lambda x: (x[0] != "user", x[1].lower()))
    ][:MAX_OUTLINE_LIBRARIES]
    entries: list = []
    if request.part == "collections":
        entries = [
            OutlineCollection(
                library_id=c.library_id,
                key=c.key,
                name=c.name[:2_000],
                parent_key=c.parent_key,
                items=outline.in_collection[(c.library_id, c.key)],
            )
            for c in sorted(outline.collections, key=lambda c: (c.library_id, c.name.lower(), c.key))
        ]
    else:
        entries = [
            OutlineTag(library_id=lib, tag=tag, items=n)
            for (lib, tag), n in sorted(outline.tagged.items(), key=lambda x: (x[0][0], x[0][1].lower()))
            if len(tag) <= 255
        ]
    return LibraryOutline(
        **request.reply_fields(),
        libraries=libraries,
        **{request.part: entries[:MAX_OUTLINE_ENTRIES]},
        truncated=len(entries) > MAX_OUTLINE_ENTRIES,
    )
