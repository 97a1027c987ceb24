"""Where in the user's own library a question is asked: the scope a retrieval request carries
and a stored turn keeps (`RetrievalRequested.scope`, `TurnRecord.scope`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from zocrates_contracts.base import ITEM_KEY_PATTERN, LIBRARY_ID_PATTERN

MAX_SCOPE_ITEMS = 1_000
MAX_TAG_CHARS = 255

LibraryId = Annotated[str, StringConstraints(pattern=LIBRARY_ID_PATTERN)]
ItemKey = Annotated[str, StringConstraints(pattern=ITEM_KEY_PATTERN)]
TagName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TAG_CHARS)]


class ItemRef(BaseModel):
    """One item of the user's library (item keys are unique only within a library)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    library_id: LibraryId
    item_key: ItemKey


class LibraryScope(BaseModel):
    """One Zotero library: My Library (`user`) or a group (`group-<groupID>`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["library"] = "library"
    library_id: LibraryId


class CollectionScope(BaseModel):
    """The items of one collection, and with `subcollections` those of every collection under
    it (expanded by retrieval from the library's collection tree when the question is asked)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["collection"] = "collection"
    library_id: LibraryId
    collection_key: ItemKey
    subcollections: bool = False


class TagScope(BaseModel):
    """The items of one library that carry a tag (Zotero tags are names, per library)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["tag"] = "tag"
    library_id: LibraryId
    tag: TagName


class ItemsScope(BaseModel):
    """A set of items (the items selected in Zotero, the items a DOI or a title names)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["items"] = "items"
    items: list[ItemRef] = Field(min_length=1, max_length=MAX_SCOPE_ITEMS)


class AttachmentScope(BaseModel):
    """One attachment (the PDF open in Zotero's reader), with the annotations made on it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["attachment"] = "attachment"
    library_id: LibraryId
    attachment_key: ItemKey


#: Where in the user's own library a question is asked; it only narrows, the tenant gate
#: stays. Tagged by `kind`. A version-2 scope (`{"items": [...]}`, no `kind`) reads as "items".
RetrievalScope = Annotated[
    LibraryScope | CollectionScope | TagScope | ItemsScope | AttachmentScope, Field(discriminator="kind")
]


def upgrade_scope(value: object) -> object:
    """A scope as version 2 of `RetrievalRequested` wrote it (items only, untagged), tagged."""
    if isinstance(value, dict) and "kind" not in value and "items" in value:
        return {"kind": "items", **value}
    return value
