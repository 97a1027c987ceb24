"""Write plugin/content/core/limits.js from the contracts (`make schemas`); a test keeps it true.

The plugin builds sync pages and uploads that the gateway must accept, so it needs the
server's limits: page sizes, field lengths, patterns, content types. Rather than copies kept
in step by hand, they are read here from the exported JSON Schemas (libs/contracts/schemas/)
and the few contract constants no schema carries, and written as one JavaScript module.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tools import generated
from zocrates_contracts.export import SCHEMA_DIR
from zocrates_contracts.messages import MAX_SYNC_BODY, UPLOAD_TYPES

OUT = Path(__file__).resolve().parent.parent / "plugin" / "content" / "core" / "limits.js"

#: SyncedItem text fields whose longest value the plugin clips to.
SYNCED_TEXT_FIELDS = (
    "title",
    "date",
    "publication",
    "doi",
    "url",
    "extra",
    "content_type",
    "filename",
    "note",
    "abstract",
)


def _schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{name}.json").read_text())


def _bound(prop: dict, key: str) -> int:
    """`maxLength`/`maxItems` of a property, also when it is optional (`anyOf` with null)."""
    for option in (prop, *prop.get("anyOf", ())):
        if key in option:
            return option[key]
    raise KeyError(f"the exported schema gives no {key} here: {prop}")


def _pattern(prop: dict) -> str:
    for option in (prop, *prop.get("anyOf", ())):
        if "pattern" in option:
            return option["pattern"]
    raise KeyError(f"the exported schema gives no pattern here: {prop}")


def _regex(pattern: str) -> str:
    """A JavaScript regular expression literal of a contract pattern. The contracts' patterns are
    plain ASCII classes, counts and anchors, which both engines read alike; an escape such as
    `\\d` (Unicode in Python, ASCII in JavaScript) is refused rather than translated."""
    if "\\" in pattern:
        raise ValueError(
            f"pattern {pattern!r} holds an escape; check that JavaScript reads it as Python does, then extend _regex"
        )
    return "/" + pattern.replace("/", "\\/") + "/"


def values() -> dict:
    """Every limit the plugin uses, read from the contracts."""
    sync = _schema("LibrarySyncRequested")
    item = sync["$defs"]["SyncedItem"]["properties"]
    upload = _schema("AttachmentUploaded")["properties"]
    scope = _schema("RetrievalRequested")["$defs"]
    return {
        "MAX_SYNC_ITEMS": _bound(sync["properties"]["items"], "maxItems"),
        "MAX_SYNC_DELETED": _bound(sync["properties"]["deleted"], "maxItems"),
        "MAX_SYNC_BODY_BYTES": MAX_SYNC_BODY,
        "UPLOAD_TYPES": sorted(UPLOAD_TYPES),
        "ID_PATTERN": _pattern(sync["properties"]["sync_id"]),
        "ITEM_KEY_PATTERN": _pattern(item["key"]),
        "ITEM_TYPE_PATTERN": _pattern(item["item_type"]),
        "CONTENT_TYPE_PATTERN": _pattern(upload["content_type"]),
        "SHA256_PATTERN": _pattern(upload["sha256"]),
        "SYNCED_ITEM_MAX": {
            **{field: _bound(item[field], "maxLength") for field in SYNCED_TEXT_FIELDS},
            "creators": _bound(item["creators"], "maxItems"),
            "collections": _bound(item["collections"], "maxItems"),
            "tags": _bound(item["tags"], "maxItems"),
            "tag": _bound(item["tags"]["items"], "maxLength"),
        },
        "MAX_SYNC_COLLECTIONS": _bound(sync["properties"]["collections"], "maxItems"),
        "MAX_SCOPE_ITEMS": _bound(scope["ItemsScope"]["properties"]["items"], "maxItems"),
        "MAX_SCOPE_LABEL_CHARS": _bound(_schema("TurnRecord")["properties"]["scope_label"], "maxLength"),
    }


DOCS = {
    "MAX_SYNC_ITEMS": "Items in one sync page (LibrarySyncRequested.items).",
    "MAX_SYNC_DELETED": "Deleted keys in one sync page (LibrarySyncRequested.deleted).",
    "MAX_SYNC_BODY_BYTES": "The largest sync request body the gateway reads (MAX_SYNC_BODY).",
    "UPLOAD_TYPES": "Attachment content types that are indexed; others are refused (UPLOAD_TYPES).",
    "ID_PATTERN": "Ids: sync, session and turn ids (ID_PATTERN).",
    "ITEM_KEY_PATTERN": "A Zotero item key (SyncedItem.key).",
    "ITEM_TYPE_PATTERN": "A Zotero item type (SyncedItem.item_type).",
    "CONTENT_TYPE_PATTERN": "A content type (SyncedItem.content_type, AttachmentUploaded.content_type).",
    "SHA256_PATTERN": "A file's SHA-256, lower-case hex (SyncedItem.sha256).",
    "SYNCED_ITEM_MAX": "SyncedItem: the longest value of each text field, the most creators, collections and tags, the longest tag.",
    "MAX_SYNC_COLLECTIONS": "Collections of one library's tree in a sync page (LibrarySyncRequested.collections).",
    "MAX_SCOPE_ITEMS": "Items a question's scope may name (ItemsScope.items).",
    "MAX_SCOPE_LABEL_CHARS": "The longest name of a question's scope kept with its turn (TurnRecord.scope_label).",
}


def render() -> str:
    lines = [
        "// Generated from libs/contracts by `make schemas` (tools/pluginlimits.py): do not edit.",
        "// The server's limits the plugin must respect; tests/ui/test_plugin_limits.py fails when",
        "// this file and the contracts drift apart.",
        "",
    ]
    for name, value in values().items():
        if name.endswith("_PATTERN"):
            literal = _regex(value)
        elif isinstance(value, dict):
            literal = "Object.freeze({ " + ", ".join(f"{k}: {v}" for k, v in value.items()) + " })"
        elif isinstance(value, list):
            literal = "Object.freeze([" + ", ".join(json.dumps(v) for v in value) + "])"
        else:
            literal = json.dumps(value)
        lines += [f"/** {DOCS[name]} */", f"export const {name} = {literal};"]
    return "\n".join(lines) + "\n"


def main() -> int:
    return generated.write(OUT, render())


if __name__ == "__main__":
    sys.exit(main())
