"""An answer's prose as the user chose to show its unsupported claims (`UserSettings.unsupported_claims`).

The sidebar renders the same choice in `plugin/content/core/unsupported.js` (`proseAsChosen`);
tests/ui/test_unsupported_parity.py runs both on the same few hundred resolved answers and
requires the same text in every mode. `mark` puts `COPY_MARK` where each claim's citation stood,
`remove` cuts each claim with the spaces around it made one (none before punctuation or a line
end) and drops a line the cut leaves empty or holding only its list marker, `leave` changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from zocrates_contracts import UnsupportedClaim

COPY_MARK = "[unsupported]"

_LIST_MARKER_ONLY_RE = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])?[ \t]*")
_PUNCTUATION = ".,;:!?)"


def prose_as_chosen(prose: str, claims: Sequence[UnsupportedClaim], mode: str) -> str:
    """`prose` with its unsupported `claims` marked (`mark`), cut (`remove`) or left (`leave`)."""
    claims = sorted((c for c in claims if c.end <= len(prose)), key=lambda c: c.start)
    if not claims or mode == "leave":
        return prose
    if mode == "mark":
        out, cursor = [], 0
        for claim in sorted(claims, key=lambda c: c.at):
            out += [prose[cursor : claim.at], f" {COPY_MARK}"]
            cursor = claim.at
        return "".join(out) + prose[cursor:]
    return _without(prose, claims)


def _without(prose: str, claims: Sequence[UnsupportedClaim]) -> str:
    out, cursor = "", 0
    for claim in claims:
        if claim.start < cursor:
            continue  # overlapping spans: the cut before covers it
        before = prose[cursor : claim.start]
        kept = before.rstrip(" \t")
        nxt = claim.end
        spaces = len(prose[nxt:]) - len(prose[nxt:].lstrip(" \t"))
        out += kept
        if kept != before or spaces:
            nxt += spaces
            following = prose[nxt : nxt + 1]
            line_start = out == "" or out.endswith("\n")
            if not line_start and following and following != "\n" and following not in _PUNCTUATION:
                out += " "
        cursor = nxt
        line_at = out.rfind("\n") + 1
        line_end = prose.find("\n", cursor)
        rest = prose[cursor : len(prose) if line_end < 0 else line_end]
        if _LIST_MARKER_ONLY_RE.fullmatch(out[line_at:] + rest):
            out = out[:line_at]
            cursor = len(prose) if line_end < 0 else line_end + 1
    return out + prose[cursor:]
