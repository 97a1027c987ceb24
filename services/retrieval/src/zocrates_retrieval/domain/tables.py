"""Tables of a PDF page, found cheaply enough to look on every page.

Only a page with a table caption ("Table 2", "TABLE II.", "Table S1: ...") is examined. Journal
tables are ruled: a rule above the header, often one below it, and one closing the table
(booktabs style), or a full grid. So the table of a caption is, first, the region between the
rule next to the caption and the last rule of the same width in that direction; its rows are
its text lines grouped by height, cells left to right. This costs a few milliseconds a page.

A caption without such a region (an unruled table, one that runs on to the next page, a
table much narrower than its caption) falls back to PyMuPDF's `find_tables`, whose layout
model also sees unruled tables but costs half a second to a second of CPU a page.

Coordinates: `find_tables` and this module work in the page's display space (as rendered,
rotation applied); text comes in unrotated page space and is moved by the page's rotation
matrix first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: A table caption, not a sentence that mentions one ("Table 2 presents ...", "Table 1, which").
TABLE_CAPTION = re.compile(r"^(?:Table|TABLE|Tab\.)\s+(?:S?\d+|[IVXLC]+)\b(?![,;]|\s+[a-z])")
#: A line that starts something else that a table does not run through: another table's or a figure's caption.
ANY_CAPTION = re.compile(r"^(?:Table|TABLE|Tab\.|Figure|FIGURE|Fig\.|FIG\.|Scheme|Chart)\s*[0-9IVXLCS]")
CAPTION_MAX_LINES = 6  # a longer block that starts with "Table 1" is body text, not a caption
FOOTNOTE_LINES = 8  # running text inside a table's rules longer than this is no footnote: the table ended
CAPTION_GAP = 40.0  # points between a caption and the first rule or grid of its table, at most
SAME_RULE = 10.0  # points by which the ends of two rules of one table may differ


@dataclass
class Table:
    rows: list[list[str]]
    caption: str = ""
    lines: set[tuple[int, int]] = field(default_factory=set)  # (block, line) it takes from the page


def text_flags() -> int:
    """PyMuPDF's flags for plain text, without TEXT_PRESERVE_LIGATURES: MuPDF then spells a
    ligature glyph out ("ﬁ" -> "fi"), as a reader would copy it."""
    import pymupdf

    return pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_LIGATURES


def line_text(line: dict) -> str:
    return "".join(s["text"] for s in line["spans"]).strip()


def has_caption(blocks: list[dict]) -> bool:
    return any(TABLE_CAPTION.match(line_text(ln)) for block in blocks for ln in block["lines"])


def is_caption_block(block: dict) -> bool:
    lines = [ln for ln in block["lines"] if line_text(ln)]
    return 0 < len(lines) <= CAPTION_MAX_LINES and bool(TABLE_CAPTION.match(line_text(lines[0])))


def page_tables(page, blocks: list[dict]) -> list[Table]:
    """The tables of a page whose text blocks (in reading order) are `blocks`."""
    m = page.rotation_matrix
    boxes = {(b, n): _display(m, ln["bbox"]) for b, block in enumerate(blocks) for n, ln in enumerate(block["lines"])}
    captions = [b for b, block in enumerate(blocks) if is_caption_block(block)]
    rules = _horizontal_rules(page, m)
    prose = [box for key, box in boxes.items() if not _has_column_gap(blocks[key[0]]["lines"][key[1]])]
    starts = {
        key: box
        for key, box in boxes.items()
        if key[1] == 0 and ANY_CAPTION.match(line_text(blocks[key[0]]["lines"][0]))
    }
    tables: list[Table] = []
    taken: set[tuple[int, int]] = set()
    unresolved = len(captions) < sum(bool(TABLE_CAPTION.match(line_text(ln))) for blk in blocks for ln in blk["lines"])
    for c in captions:
        cap = _display(m, blocks[c]["bbox"])
        others = [box for key, box in starts.items() if key[0] != c]
        region = _ruled_region(cap, rules, others, prose)
        members = [
            key
            for key, box in boxes.items()
            if region and key[0] != c and key not in taken and _inside(_mid(box), region, margin=1)
        ]
        if not members:
            unresolved = True
            continue
        table = Table(
            _rows(blocks, members, boxes, m),
            _caption_text(blocks[c]),
            set(members) | {(c, n) for n in range(len(blocks[c]["lines"]))},
        )
        taken |= table.lines
        tables.append(table)
    if unresolved:
        tables += _found_tables(page, blocks, boxes, taken)
    return tables


def _display(m, bbox) -> tuple[float, float, float, float]:
    """An unrotated-page bbox in display space, as plain floats (pymupdf's Rect arithmetic
    is too slow for every line of a page)."""
    xs = (m.a * bbox[0] + m.c * bbox[1] + m.e, m.a * bbox[2] + m.c * bbox[3] + m.e)
    ys = (m.b * bbox[0] + m.d * bbox[1] + m.f, m.b * bbox[2] + m.d * bbox[3] + m.f)
    return min(xs), min(ys), max(xs), max(ys)


def _mid(box) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def _inside(point: tuple[float, float], box, margin: float = 0) -> bool:
    x, y = point
    return box[0] - margin <= x <= box[2] + margin and box[1] - margin <= y <= box[3] + margin


def _caption_text(block: dict) -> str:
    return " ".join(t for ln in block["lines"] if (t := line_text(ln)))


# --- ruled tables ---------------------------------------------------------------------------

Rule = tuple[float, float, float]  # x0, y, x1 in display space


def _horizontal_rules(page, m) -> list[Rule]:
    """Horizontal lines and hairline rectangles of the page's vector drawings."""
    rules: list[Rule] = []
    for drawing in page.get_drawings():
        for item in drawing["items"]:
            if item[0] == "l":
                x0, y0, x1, y1 = _display(m, (*item[1], *item[2]))
                if y1 - y0 < 1 and x1 - x0 > 20:
                    rules.append((x0, (y0 + y1) / 2, x1))
            elif item[0] == "re":
                x0, y0, x1, y1 = _display(m, tuple(item[1]))
                if y1 - y0 < 2.5 and x1 - x0 > 20:
                    rules.append((x0, (y0 + y1) / 2, x1))
    return sorted(set(rules), key=lambda r: r[1])


def _has_column_gap(line: dict) -> bool:
    """Whether MuPDF joined cells of a table row into this line (a gap wider than an em)."""
    spans = [s for s in line["spans"] if s["text"].strip()]
    return any(b["bbox"][0] - a["bbox"][2] > b["size"] for a, b in zip(spans, spans[1:]))


def _ruled_region(cap, rules: list[Rule], other_captions: list, prose: list) -> tuple | None:
    """The region of the table of caption `cap`: below it (most journals) or above it, from
    the rule next to the caption to the last rule of the same width before anything that is
    not the table (another caption, a line of body text as wide as the table)."""
    column = [r for r in rules if min(r[2], cap[2]) - max(r[0], cap[0]) > 0]
    for direction in (1, -1):
        if direction == 1:
            near = [r for r in column if cap[1] - 8 <= r[1] <= cap[3] + CAPTION_GAP]
        else:
            near = [r for r in column if cap[1] - CAPTION_GAP <= r[1] <= cap[1] + 4]
        for start in sorted(near, key=lambda r: r[1] * direction):
            if start[2] - start[0] < 0.6 * (cap[2] - cap[0]):
                continue  # a cell's rule, not the table's
            end = _last_rule(start, column, direction, other_captions, prose)
            if end is None:
                continue
            if direction == 1:
                top, bottom = max(start[1], cap[3]), end[1]
            else:
                top, bottom = end[1], min(start[1], cap[1])
            if bottom - top > 10:
                return start[0] - 2, top, start[2] + 2, bottom
    return None


def _last_rule(start: Rule, column: list[Rule], direction: int, other_captions: list, prose: list) -> Rule | None:
    """The last rule as wide as `start` going `direction` (1 down, -1 up), stopping before
    another caption or more running text (`prose`: lines without a column gap, nearly as wide
    as the rule) than a table's footnotes; None when there is no second one."""
    x0, y, x1 = start
    same = [
        r for r in column if abs(r[0] - x0) <= SAME_RULE and abs(r[2] - x1) <= SAME_RULE and (r[1] - y) * direction > 3
    ]
    end = None
    for rule in sorted(same, key=lambda r: r[1] * direction):
        lo, hi = sorted((y if end is None else end[1], rule[1]))
        if any(lo < c[1] < hi and c[0] < x1 and c[2] > x0 for c in other_captions):
            break
        if (
            sum(
                lo < _mid(b)[1] < hi and x0 - 2 <= b[0] and b[2] <= x1 + 2 and b[2] - b[0] > 0.75 * (x1 - x0)
                for b in prose
            )
            > FOOTNOTE_LINES
        ):
            break  # running text: the table ended before it
        end = rule
    return end


def _rows(blocks: list[dict], members: list[tuple[int, int]], boxes: dict, m) -> list[list[str]]:
    """Rows of cells from the text lines of a table: lines whose middles lie within the
    previous line's height are one row; cells read left to right. A line MuPDF joined across
    a column gap is cut there."""
    cells: list[tuple[tuple, str]] = []
    for b, n in members:
        line, box = blocks[b]["lines"][n], boxes[(b, n)]
        text, left, last_x1 = "", None, None
        for span in line["spans"]:
            if not span["text"].strip():
                continue
            sx0, _, sx1, _ = _display(m, span["bbox"])
            gap = sx0 - last_x1 if last_x1 is not None else 0
            if last_x1 is not None and gap > span["size"]:  # a column gap
                cells.append(((left, box[1], last_x1, box[3]), text.strip()))
                text, left = "", None
            if left is None:
                left = sx0
            if gap > 0.15 * span["size"] and text and not text.endswith(" ") and not span["text"].startswith(" "):
                text += " "  # spans set apart without a space character (a subscript, a symbol)
            text += span["text"]
            last_x1 = sx1
        if text.strip():
            cells.append(((left, box[1], last_x1, box[3]), text.strip()))
    cells.sort(key=lambda c: _mid(c[0])[1])
    rows: list[list[tuple]] = []
    for cell in cells:
        if rows and _mid(cell[0])[1] < max(c[0][3] for c in rows[-1]):
            rows[-1].append(cell)
        else:
            rows.append([cell])
    return [[text for _, text in sorted(row, key=lambda c: c[0][0])] for row in rows]


# --- PyMuPDF's table finder (the fallback) --------------------------------------------------


def _found_tables(page, blocks: list[dict], boxes: dict, taken: set[tuple[int, int]]) -> list[Table]:
    """Tables by `page.find_tables()` that the ruled search did not find, with the nearest
    free caption above (or else below) each."""
    import pymupdf

    tables: list[Table] = []
    words = None
    for found in page.find_tables().tables:
        if found.row_count < 2 or found.col_count < 2:
            continue
        box = tuple(found.bbox)
        if found.header is not None and found.header.external:
            box = tuple(pymupdf.Rect(box) | pymupdf.Rect(found.header.bbox))
        members = [key for key, line_box in boxes.items() if _inside(_mid(line_box), box, margin=2)]
        if not members or any(key in taken for key in members):
            continue  # nothing on the page, or a table already found by its rules
        if words is None:
            m = page.rotation_matrix
            words = [(*_mid(_display(m, w[:4])), w[5:8], w[4]) for w in page.get_text("words", flags=text_flags())]
        rows = _cell_rows(found, words)
        if len(rows) < 2:
            continue
        table = Table(rows, lines=set(members))
        caption = _caption_near(box, blocks, boxes, taken | table.lines)
        if caption is not None:
            table.caption = _caption_text(blocks[caption])
            table.lines |= {(caption, n) for n in range(len(blocks[caption]["lines"]))}
        elif TABLE_CAPTION.match(rows[0][0]):  # a caption set beside the table, inside its grid
            table.caption = " ".join(cell for cell in rows[0] if cell)
            table.rows = tidy(rows[1:])
        taken |= table.lines
        tables.append(table)
    return tables


def _cell_rows(found, words: list) -> list[list[str]]:
    """Rows of the cells `find_tables` found, filled from the page's words (its own cell text
    loses the spaces between words in some PDFs)."""
    grid = [row.cells for row in found.rows]
    if found.header is not None and found.header.external:  # a header above the grid
        grid.insert(0, found.header.cells)

    def text_of(cell) -> str:
        if cell is None:  # a slot covered by a merged neighbour
            return ""
        return " ".join(text for *_, text in sorted(w[2:] for w in words if _inside(w[:2], cell)))

    return tidy([[text_of(cell) for cell in cells] for cells in grid])


def tidy(rows: list[list[str]]) -> list[list[str]]:
    """Rows of equal width, without empty rows and columns."""
    width = max((len(r) for r in rows), default=0)
    rows = [r + [""] * (width - len(r)) for r in rows]
    used = [c for c in range(width) if any(r[c] for r in rows)]
    return [[r[c] for c in used] for r in rows if any(r)]


def _caption_near(box, blocks: list[dict], boxes: dict, taken: set[tuple[int, int]]) -> int | None:
    """The nearest free caption block just above the table in `box`, else just below it."""
    above: list[tuple[float, int]] = []
    below: list[tuple[float, int]] = []
    for b, block in enumerate(blocks):
        if (b, 0) in taken or not is_caption_block(block):
            continue
        cap = _display_block(b, block, boxes)
        if cap[2] <= box[0] or cap[0] >= box[2]:
            continue  # another column
        if -4 <= box[1] - cap[3] <= CAPTION_GAP:
            above.append((box[1] - cap[3], b))
        elif -4 <= cap[1] - box[3] <= CAPTION_GAP:
            below.append((cap[1] - box[3], b))
    for candidates in (above, below):
        if candidates:
            return min(candidates)[1]
    return None


def _display_block(b: int, block: dict, boxes: dict) -> tuple:
    line_boxes = [boxes[(b, n)] for n in range(len(block["lines"]))]
    return (
        min(x[0] for x in line_boxes),
        min(x[1] for x in line_boxes),
        max(x[2] for x in line_boxes),
        max(x[3] for x in line_boxes),
    )
