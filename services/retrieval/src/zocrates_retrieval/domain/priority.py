"""The order a library's files are converted in, and the user's recently cited items it uses.

Converting files is the slow part of indexing (seconds each), so the files a user most likely
asks about go first:

1. files of items changed within the recent window (`ZOCRATES_RETRIEVAL_RECENT_DAYS`), the
   most recently changed first;
2. then files of items cited in the user's recent answers, the most recently cited first;
3. then the rest, the most recently changed first.

An item both recent and cited is placed once, among the recent ones. Files that tie keep the
order they came in. Items are named by `(library_id, item_key)`: keys are unique only within
one library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeVar

T = TypeVar("T")

#: An item of a user's libraries: (library id, item key).
ItemRef = tuple[str, str]
#: A recently cited item and when the answer that last cited it finished (epoch seconds).
Cited = tuple[ItemRef, float]

#: How many recently cited items are kept per user.
MAX_CITED = 200

#: How Zotero writes `dateModified` (UTC); such strings sort as the times they name.
MODIFIED_FORMAT = "%Y-%m-%d %H:%M:%S"


def recent_since(now: datetime, days: float) -> str | None:
    """The earliest `dateModified` of the recent window of `days` that ends at `now` (a
    timestamp in Zotero's format; an item changed at or after it is recent); None (nothing is
    recent) for no window."""
    if days <= 0:
        return None
    return (now.astimezone(UTC) - timedelta(days=days)).strftime(MODIFIED_FORMAT)


def file_order(
    files: Sequence[T],
    describe: Callable[[T], tuple[ItemRef, str]],
    cited: Sequence[ItemRef],
    since: str | None,
) -> list[T]:
    """`files` in the order they are converted: recent, then cited, then the rest (above).

    `describe(file)` is the file's item and when it last changed (`dateModified`, "" when
    unknown: never recent); `cited` is the user's recently cited items, the most recent first;
    `since` is `recent_since(...)`."""
    rank = {ref: no for no, ref in enumerate(dict.fromkeys(cited))}
    recent: list[tuple[str, T]] = []
    by_citation: list[tuple[int, T]] = []
    rest: list[tuple[str, T]] = []
    for f in files:
        ref, modified = describe(f)
        if since is not None and modified and modified >= since:
            recent.append((modified, f))
        elif ref in rank:
            by_citation.append((rank[ref], f))
        else:
            rest.append((modified, f))
    # sorted() is stable, with reverse=True too: ties keep their order
    recent.sort(key=lambda e: e[0], reverse=True)
    by_citation.sort(key=lambda e: e[0])
    rest.sort(key=lambda e: e[0], reverse=True)
    return [f for _, f in recent] + [f for _, f in by_citation] + [f for _, f in rest]


def merge_cited(known: Sequence[Cited], new: Iterable[ItemRef], at: float, limit: int = MAX_CITED) -> list[Cited]:
    """The recently cited items (the most recent first) once an answer that finished at `at`
    cited `new` (in its order): each item once, at the latest answer that cited it, the whole at
    most `limit` long. Answers noted out of order (replicas, redeliveries) still sort by when
    they finished; the items of one answer keep its order."""
    latest: dict[ItemRef, float] = {}
    for ref, when in [*((ref, at) for ref in new), *known]:
        latest[ref] = max(when, latest.get(ref, when))
    return sorted(latest.items(), key=lambda e: -e[1])[:limit]  # stable: ties keep their order


def promote(pending: Sequence[T], ref_of: Callable[[T], ItemRef], cited: Sequence[ItemRef]) -> list[T]:
    """`pending` with the files of the items in `cited` moved to the front, the most recently
    cited first; the others keep their order."""
    rank = {ref: no for no, ref in enumerate(dict.fromkeys(cited))}
    first = sorted((f for f in pending if ref_of(f) in rank), key=lambda f: rank[ref_of(f)])
    return first + [f for f in pending if ref_of(f) not in rank]
