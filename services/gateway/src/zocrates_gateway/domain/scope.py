"""The line that names a question's scope under it, in the stored turn ("Tag: review").

The client that chose the scope names it (it knows the collection's path and the library's
name); a scope sent without a name (an MCP tool call) is named from what the scope itself says.
"""

from __future__ import annotations

from zocrates_contracts.scopes import RetrievalScope


def name_scope(scope: RetrievalScope | None, chosen: str = "") -> str:
    """`chosen` (made one line) or the scope's own name; "" for no scope."""
    if scope is None:
        return ""
    return " ".join(chosen.split()) or _named(scope)


def _named(scope: RetrievalScope) -> str:
    match scope.kind:
        case "library":
            return "Library: My Library" if scope.library_id == "user" else f"Library: {scope.library_id}"
        case "collection":
            return "A collection (with subcollections)" if scope.subcollections else "A collection"
        case "tag":
            return f"Tag: {scope.tag}"
        case "items":
            return f"{len(scope.items):,} item{'s' if len(scope.items) != 1 else ''}"
        case _:
            return "One file"
