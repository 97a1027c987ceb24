"""APA-style author labels, one rule everywhere: `Smith`, `Smith & Jones`, `Smith et al.`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zocrates_contracts import Creator, EvidenceChunk


def _surname(creator: Creator) -> str:
    # Single-field names (institutions, mononyms) are shown whole.
    return (creator.name or creator.last_name or creator.first_name).strip()


def format_authors(creators: Iterable[Creator | Mapping]) -> str:
    """The APA label for an item's creators.

    Authors are preferred; an item without authors (an edited volume, say) is labelled by
    the creators of its first creator's type. Empty when no creator has a name.
    """
    people = [c if isinstance(c, Creator) else Creator.model_validate(c) for c in creators]
    people = [c for c in people if _surname(c)]
    if not people:
        return ""
    primary = [c for c in people if c.creator_type == "author"]
    if not primary:
        primary = [c for c in people if c.creator_type == people[0].creator_type]
    names = [_surname(c) for c in primary]
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} & {names[1]}"
    return f"{names[0]} et al."


def author_year(chunk: EvidenceChunk) -> str:
    """`Smith et al., 2020` for in-text citations, falling back to title and `n.d.`."""
    head = format_authors(chunk.creators) or chunk.title.strip() or "Untitled source"
    return f"{head}, {chunk.year if chunk.year is not None else 'n.d.'}"
