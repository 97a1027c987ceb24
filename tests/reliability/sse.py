"""An event-stream parser that follows the HTML standard's interpretation rules (WHATWG
"9.2.6 Interpreting an event stream"), for checking what the gateway really sends.

Lines end at CRLF, a lone CR or a lone LF, and at nothing else (U+2028, U+0085 and \\x1e are
ordinary characters); a leading BOM is dropped; `data` lines join with LF; a blank line
dispatches; `id` sets the last event id unless it contains NUL; comments start with a colon.
"""

from __future__ import annotations

import re

LINE_END = re.compile(r"\r\n|\r|\n")


def parse_stream(text: str) -> tuple[list[dict], list[str]]:
    """(events, comments) of a complete or partial stream; an unfinished event is left out."""
    if text.startswith("\ufeff"):
        text = text[1:]
    events: list[dict] = []
    comments: list[str] = []
    data: list[str] | None = None
    event, last_id = "", ""
    for line in LINE_END.split(text)[:-1]:  # the last piece has no line end yet
        if line == "":
            if data is not None:
                events.append({"id": last_id, "event": event or "message", "data": "\n".join(data)})
            data, event = None, ""
            continue
        if line.startswith(":"):
            comments.append(line[1:])
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data = (data or []) + [value]
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            last_id = value
    return events, comments
