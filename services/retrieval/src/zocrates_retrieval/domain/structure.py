"""What each part of a document is: the one owner of document structure.

At ingest every chunk gets its section role (abstract, body, back matter, front matter, note,
annotation) and is cut into answer units (`zocrates_contracts.AnswerUnit`): sentences, list
items and table rows, which an answer may quote, and the parts it must not quote unless asked
about them — captions, table headers, footnotes (correspondence, licence and copyright
lines; a table's notes), title blocks, affiliation lines, term lists (keywords, abbreviations,
a search strategy's quoted terms) and fragments (text cut at a page or column break, figure
labels). Every unit is a span of its chunk's text; a
table row also gets the text it reads as on its own, with its caption and column headers.

Nobody downstream re-parses a chunk to find out what it is: the gateway reads the units.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import zip_longest

from zocrates_citations.sentences import LOWER_CASE_NAME, sentence_ends

# --- section roles ---------------------------------------------------------------------------

_REFERENCE_HEADINGS = re.compile(
    r"^(?:[0-9ivxIVX]+\.?\s+)?(references?|bibliography|literature cited|works cited|cited literature)$", re.IGNORECASE
)


def is_reference_list(section: tuple[str, ...]) -> bool:
    """A bibliography: its entries describe other papers, so they are no evidence of this one."""
    return any(_REFERENCE_HEADINGS.match(title.strip()) for title in section)


#: Headings of the matter after a paper's conclusions: thanks, declarations, who wrote what.
_BACK_MATTER_TERM = (
    r"(?:acknowledge?ments?|funding(?: sources?| information| statement)?|sources? of funding"
    r"|role of the funding source|financial (?:support|disclosures?)|grant support"
    r"|competing (?:financial )?interests?|conflicts? of interests?|(?:declaration|statement) of (?:competing )?interests?"
    r"|declarations?|disclosures?"
    r"|authors?'?s? (?:details|information|contributions?|affiliations?)|affiliations?"
    r"|ethics(?: approval| statement| declarations?)?|ethical approval|consent (?:for publication|to participate)"
    r"|(?:data )?availability(?: of (?:data|supporting data)(?: and materials?)?)?(?: statement)?|data sharing(?: statement)?"
    r"|abbreviations|publisher'?s note|additional files?(?: \d+)?|supplementary (?:materials?|information))"
)
_BACK_MATTER_HEADING = re.compile(
    rf"^(?:[0-9ivx]+(?:\.[0-9]+)*\.?\s+)?{_BACK_MATTER_TERM}(?:\s*(?:,|;|&|/|\band\b)\s*{_BACK_MATTER_TERM})*$",
    re.IGNORECASE,
)


def is_back_matter(section: tuple[str, ...]) -> bool:
    """Acknowledgements, declarations, author details and the like: indexed (someone may ask
    who funded a study) but rarely what a question is about, so search ranks them last.

    The whole heading must be such matter ("Ethics approval and consent to participate"), so
    a section about it inside the paper ("Methods > Funding of the trial", "Ethical
    considerations") is content. Reference lists are `is_reference_list`'s."""
    return any(_BACK_MATTER_HEADING.match(title.strip().replace("\u2019", "'").rstrip(".:")) for title in section)


def section_role(section: tuple[str, ...], kind: str = "text", front: bool = False) -> str:
    """The role of a chunk in its document; `front` marks the text before the first heading
    of a document that has headings (its title and author block)."""
    if kind in ("note", "annotation"):
        return kind
    if section and section[0].strip().rstrip(".:").lower() == "abstract":
        return "abstract"
    if is_back_matter(section):
        return "back_matter"
    return "front_matter" if front else "body"


# --- units -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """A span `[start, end)` of a chunk's text and what it is; `text` only where it reads
    differently on its own (a table row with its caption and headers)."""

    kind: str
    start: int
    end: int
    text: str = ""


_CAPTION_START = re.compile(
    r"^\(?(?:Figure|Fig\.|Table|Scheme|Chart|Supplementary\s+(?:Figure|Table))\s*S?\d+[A-Za-z]?\b"
    r"|^\([A-H]\)\s"
)
#: The marks a footnote, and the name or cell it belongs to, carry: "Ball1*", "‡Rfree is ...".
_NOTE_MARKS = "*∗†‡§"
_FOOTNOTE = re.compile(
    rf"^[{_NOTE_MARKS}]\s*\w"
    r"|\bcorrespondence\s*:|\bcreative\s+commons\b|\blicensee\b|©|\(c\)\s*\d{4}\b"
    r"|\bfull\s+list\s+of\s+author\b|\breceived\s*:\s*\d|\baccepted\s*:\s*\d|\bpublished\s*:\s*\d"
    r"|\bopen\s+access\s+article\s+distributed\b|\bpermits\s+unrestricted\s+use\b",
    re.IGNORECASE,
)
#: A footnote's number set against its web address: "8https://beta.openai.com/...". (Against a
#: capitalised word it reads as an affiliation's: "1Department of ...", "9We also fit ...".)
_NUMBERED_NOTE = re.compile(r"^\d{1,2}https?://")
# Sentences of back matter that sit in a body section when the PDF's headings were lost.
_BACK_MATTER_SENTENCE = re.compile(
    r"\b(?:was|were|is|are)\s+(?:\w+\s+)?(?:supported|funded)\s+by\b|\bgrant\s+(?:no\.?|number)\b"
    r"|\bdeclare[sd]?\s+(?:that\s+(?:they|he|she)\s+(?:have|has)\s+)?no\s+(?:competing|conflicts?)\b",
    re.IGNORECASE,
)
_EMAIL = r"[\w.+-]+@[\w-]+\.[\w.]+"
_AFFILIATION = re.compile(
    r"^\d+\s?[A-Z][a-z]"  # "1Department of ...", "2Medical Department ..."
    rf"|{_EMAIL}"  # an e-mail address
    r"|\bP\.?\s?O\.?\s+Box\b"
    r"|\b(?:Department|Dept\.|Division|School|Faculty|Institute|University|Hospital|Centre|Center)\b"
    r"[^.;]*,[^.;]*,\s*[A-Z][a-z]+\.?$"  # "Department of Surgery, University of X, City, Country."
)
#: An affiliation is an address, or a list of e-mail addresses: longer text that names
#: institutions is a statement about them (an acknowledgement: "Dr. Sylvia Sax (Lecturer,
#: University of Heidelberg, Germany) ... for reviewing this article and providing editorial
#: support ...").
MAX_AFFILIATION_WORDS = 40
# A capitalised name with an affiliation digit or a footnote mark: "Ball1*," "DOUGLAS∗1," "Theurer2,3".
_MARKED_NAME = re.compile(
    rf"\b[A-Z](?:[a-z'’-]+|[A-Z]{{2,}})(?:\d{{1,2}}(?:,\d{{1,2}})*[{_NOTE_MARKS}]?|[{_NOTE_MARKS}]+\d{{0,2}})(?=[,\s]|$)"
)
_TITLE_BLOCK = re.compile(r"\bRESEARCH\s+ARTICLE\b|\bOpen\s+Access\b|\bREVIEW\s+ARTICLE\b|\bdoi:\s*10\.|^arXiv:\d")
_TERM_LIST = re.compile(r"^(?:Keywords?|Key\s+words|Index\s+terms|Abbreviations?)\s*[:.—-]", re.IGNORECASE)
_QUOTED = r"[“\"][^“”\"]{1,60}[”\"]"
_QUOTED_TERMS = re.compile(rf"{_QUOTED}(?:\s*,\s*{_QUOTED}){{3,}}")  # a search strategy
_BULLET = "•▪◦‣●○■□➢►✓\x01\uf0b7\uf0a7\uf076\uf0d8\uf0fc"
_BULLET_RE = re.compile(rf"[{_BULLET}]\s*")
_STATEMENT_END = re.compile(r"[.!?][\"'”’)\]]*$")


def _run_in_heading(text: str) -> bool:
    """A numbered heading set at the start of its paragraph, read as a sentence of its own:
    "6.1.5 Analysis.", "4.1.2 Term Definitions help Sarah resolve technical jargon without
    distracting from reading." It names a section; quoted, it reads as one."""
    return bool(_SECTION_NUMBER.match(text)) and len(text.split()) <= MAX_RUN_IN_HEADING_WORDS


#: A section's number before a capitalised word: "6.1.5 Analysis", "3.0.2 Procedure" (not "2.5 mg").
_SECTION_NUMBER = re.compile(r"\d{1,2}(?:\.\d{1,2})+\.?\s+[A-Z]")
MAX_RUN_IN_HEADING_WORDS = 24


def _mostly_capitalised(text: str) -> bool:
    """Name lists, affiliations and headings: most of the words are capitalised."""
    words = [w for w in re.findall(r"[^\W\d_][\w'’-]*", text) if len(w) > 1]
    return len(words) >= 6 and sum(w[0].isupper() for w in words) / len(words) > 0.6


def classify_text(text: str, role: str = "body") -> str:
    """The kind of one sentence-sized piece of prose."""
    if _FOOTNOTE.search(text) or (role != "back_matter" and _BACK_MATTER_SENTENCE.search(text)):
        return "footnote"
    if _TITLE_BLOCK.search(text) or len(_MARKED_NAME.findall(text)) >= 2:
        return "title_block"
    if _AFFILIATION.search(text) and (len(text.split()) <= MAX_AFFILIATION_WORDS or re.search(_EMAIL, text)):
        return "affiliation"
    if _NUMBERED_NOTE.match(text):
        return "footnote"
    if _TERM_LIST.match(text) or _QUOTED_TERMS.search(text):
        return "term_list"
    if _mostly_capitalised(text) or _run_in_heading(text):
        return "fragment"
    first = text[:1]
    # a name set in lower case may open a sentence (a word cut at a page break goes on its paragraph)
    opens = first.isupper() or first.isdigit() or first in "\"'“‘([" or LOWER_CASE_NAME.match(text)
    whole = opens and _STATEMENT_END.search(text)
    return "sentence" if whole else "fragment"


def _sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans, cursor = [], start
    for stop in [*sentence_ends(text, start, end), end]:
        piece = text[cursor:stop]
        left, right = len(piece) - len(piece.lstrip()), len(piece.rstrip())
        if right > left:
            spans.append((cursor + left, cursor + right))
        cursor = stop
    return spans


def is_caption(text: str) -> bool:
    """Whether a paragraph is a figure or table caption ("Figure 2 ...", "(B) ...")."""
    return bool(_CAPTION_START.match(text.lstrip()))


#: A line that opens a page's note: its mark before a word in either case ("* Correspondence:
#: ...", "† These authors ...") or the correspondence address unmarked.
_NOTE_OPENING = re.compile(rf"[{_NOTE_MARKS}]\s*[A-Za-z]|correspondence\s*:", re.IGNORECASE)


def opens_page_note(line: str) -> bool:
    """Whether a line of a PDF's text opens one of its page's notes, which PyMuPDF may give inside
    the block of the running text it sits under ("This review included all" | "* Correspondence:
    ball.chad@... 1Department of Surgery, ...")."""
    return bool(_NOTE_OPENING.match(line))


def is_page_note(text: str) -> bool:
    """Whether a paragraph is one of a page's notes, set apart from the running text: a footnote
    ("1These authors contributed equally ...", "Correspondence: ..."), an address or a list of
    abbreviations."""
    return classify_text(text) in ("footnote", "affiliation") or bool(_TERM_LIST.match(text))


def has_bullet(text: str) -> bool:
    """Whether `text` holds a list bullet (•, ▪, a symbol font's private-use bullet, ...)."""
    return bool(_BULLET_RE.search(text))


def prose_units(text: str, start: int, end: int, role: str = "body") -> list[Unit]:
    """The units of one paragraph `text[start:end]`: a caption paragraph is all caption, a
    bulleted one is list items, anything else is sentences, each classified."""
    body = text[start:end]
    if is_caption(body):
        return [Unit("caption", a, b) for a, b in _sentence_spans(text, start, end)]
    if body.lstrip()[:1] in _BULLET:
        units = []
        marks = [m for m in _BULLET_RE.finditer(text, start, end)]
        for m, nxt in zip(marks, [*marks[1:], None]):
            a, b = m.end(), nxt.start() if nxt else end
            while b > a and text[b - 1].isspace():
                b -= 1
            if b > a:
                units.append(Unit(_item_kind(classify_text(text[a:b], role), role), a, b))
        return units
    return [Unit(classify_text(text[a:b], role), a, b) for a, b in _sentence_spans(text, start, end)]


def item_units(text: str, start: int, end: int, role: str = "body") -> list[Unit]:
    """The units of one item of a list without bullets `text[start:end]` (the PDF reader
    finds them by layout): its sentences, the last of which often has no full stop."""
    spans = _sentence_spans(text, start, end)
    units = [Unit(classify_text(text[a:b], role), a, b) for a, b in spans[:-1]]
    if spans:
        a, b = spans[-1]
        kind = classify_text(text[a:b], role)
        units.append(Unit(kind if kind == "sentence" else _item_kind(kind, role), a, b))
    return units


def _item_kind(kind: str, role: str) -> str:
    """The kind of a list item whose text reads as `kind` (`classify_text`): a statement
    whether or not it ends with a stop; an address, a name list or a footnote set as an item
    is a fragment, not to be quoted; a list of terms stays one."""
    if kind == "term_list":
        return kind
    return "list_item" if kind in ("sentence", "fragment") and role != "front_matter" else "fragment"


_LABEL = re.compile(r"^((?:Supplementary\s+)?Table\s*S?\d+[A-Za-z]?)[.:]?\s*(.*)$", re.IGNORECASE)
MAX_CAPTION_CHARS = 90  # of a row's reminder of its table; the caption unit itself is whole


_SENTENCE_END = re.compile(r"(?<=[a-z)])\.\s")  # "interfaces. This", not "Table 2. Post-hoc"


def first_sentence(caption: str) -> str:
    """A caption's first sentence, without its full stop."""
    return _SENTENCE_END.split(caption, maxsplit=1)[0]


def table_label(caption: str) -> str:
    """How a row names its table: "Table 3 (Baseline characteristics)"."""
    caption = " ".join(caption.split())
    m = _LABEL.match(caption)
    label, rest = (m.group(1), m.group(2)) if m else ("Table", caption)
    rest = first_sentence(rest).rstrip(". ")
    if len(rest) > MAX_CAPTION_CHARS:
        rest = rest[:MAX_CAPTION_CHARS].rsplit(" ", 1)[0] + "…"
    return f"{label} ({rest})" if rest else label


def row_text(label: str, header: list[str], cells: list[str], group: str = "") -> str:
    """A table row as it reads on its own: "Table 1 (Patient care): Privacy given — Yes (%): 99;
    No (%): 1". Cells pair with the header's columns when the counts agree, or when the header
    has no cell over the rows' label column (then it names the cells after the label); a header
    that only names the labels ("Parameter") names no value. A row under a group label leads
    with it: "Table 1 (Baseline): Sex, female — n: 12"."""
    cells = [c.strip() for c in cells]
    if group:
        cells[0] = f"{group}, {cells[0]}" if cells[0] else group
    named = header[1:] if len(header) == len(cells) else header if len(header) == len(cells) - 1 else []
    if names_labels(header) and len(cells) > 1 and cells[0]:  # "Parameter" heads the labels, not the values
        return f"{label}: {cells[0]} — " + "; ".join(c for c in cells[1:] if c)
    if named and len(cells) > 1:
        pairs = "; ".join(f"{h.strip()}: {c}" if h.strip() else c for h, c in zip(named, cells[1:]) if c)
        return f"{label}: {cells[0]} — {pairs}" if cells[0] else f"{label}: {pairs}"
    return f"{label}: " + " | ".join(c for c in cells if c)


#: A header of one cell that names the rows' labels ("Parameter" over "Resolution (Å) | 2.2"),
#: not their values.
_LABEL_COLUMN = re.compile(
    r"^\s*(?:parameters?|variables?|characteristics?|items?|propert(?:y|ies)|features?|categor(?:y|ies)"
    r"|measures?|names?|descriptions?)\s*$",
    re.IGNORECASE,
)


def names_labels(header: list[str]) -> bool:
    """Whether a table's header is one cell naming the rows' labels: the values are unnamed."""
    return len(header) == 1 and bool(_LABEL_COLUMN.match(header[0]))


#: A header line that stops on a word that cannot end a heading ("Inhibitor(s) targeting the")
#: goes on onto the next line, whose cells finish its headings.
_HEADER_GOES_ON = re.compile(r"\b(?:the|of|and|or|to|for|in|with|a|an|by|on|at|from|per|vs\.?)\s*$", re.IGNORECASE)


def continued_header(upper: list[str], lower: list[str]) -> list[str]:
    """The headings of a header written over two lines. The upper line's cells sit over the last
    columns of the lower one (its first columns' headings fit on one line): "Biological action of
    product" over "after ACE hydrolysis"."""
    if len(upper) > len(lower):
        return [f"{a.strip()} {b.strip()}".strip() for a, b in zip_longest(upper, lower, fillvalue="")]
    start = len(lower) - len(upper)
    return [
        f"{upper[i - start].strip()} {cell.strip()}".strip() if i >= start else cell.strip()
        for i, cell in enumerate(lower)
    ]


_NUMBER_CELL = re.compile(r"^[<>≤≥~±+\-−–]?\s*\.?\d")


def _is_number(cell: str) -> bool:
    return bool(_NUMBER_CELL.match(cell.strip()))


def of_numbers(rows: list[list[str]]) -> bool:
    """Whether a table (its body rows, cells each) is a table of numbers: at least half its
    rows hold a number past their label cell."""
    return sum(any(_is_number(c) for c in cells[1:]) for cells in rows) * 2 >= len(rows)


def header_rows(rows: list[list[str]]) -> set[int]:
    """Which of a table's body rows (cells each) start new column headers mid-table, as
    "QA − SD | p | QA − PDF | p" does after the "PP − …" rows of a table that compares pairs.

    Only in a table of numbers: at least half its rows hold a number past their label cell.
    There a row whose cells hold no number, with at least three of them (and half its cells)
    filled, names columns; a row with one filled cell ("Sex") labels a group of rows, and one
    with two may be a label and its value in words ("Space group | P1"). In a table of words
    any row could read as a header, so none is taken for one."""
    if not of_numbers(rows):
        return set()
    found = set()
    for no, cells in enumerate(rows):
        filled = [c for c in cells if c.strip()]
        if len(filled) >= 3 and len(filled) * 2 >= len(cells) and not any(_is_number(c) for c in filled):
            found.add(no)
    return found


#: A table footnote opens with its mark (a table's notes use ¶ and # too): "∗Rsymm = ...".
_TABLE_NOTE = re.compile(rf"^\s*[{_NOTE_MARKS}¶#]")


#: A group label is a short name ("Sex", "P2′", "B-factor analysis"), not values gone onto a
#: line of their own ("α = 88.4, β = 64.3, γ = 75.3") nor a number.
_GROUP_LABEL = re.compile(r"^(?![<>≤≥~±+\-−–]?\s*\.?\d)(?!.*(?:=|\d[.,]\d)).{1,60}$")


#: How the words of a wrapped cell go on: in lower case, or with a bracket ("(Additional file 1").
_GOES_ON = re.compile(r"^\s*[a-z(]")


def _goes_on(cells: list[str]) -> bool:
    """Whether a line of a table of words goes on with the row above: its first cell is empty,
    or its words go on where the row above stopped (a table whose columns were lost)."""
    return not cells[0].strip() or bool(_GOES_ON.match(cells[0]))


def table_units(text: str, start: int, end: int, head_lines: int) -> list[Unit]:
    """A table's units: its caption, header row and each row, one per line of `text[start:end]`
    (cells separated by " | "); `head_lines` is 2 with a caption, 1 with a header row only,
    0 for rows alone. A row that starts new column headers mid-table (`header_rows`) is a
    header too, and names the columns of the rows after it; a line of one cell opening with a
    footnote mark, and the lines of one cell after it, are the table's footnotes.

    In a table of words, a line with an empty first cell goes on with the row above it: its
    cells are the rest of that row's cells, wrapped ("In-patients described their overall
    satisfaction of the care they receive as" | "• 'very good' (1 view)" ...), and the row is
    one unit over all its lines, so a quote never stops mid-cell. So is a line whose first
    words go on in lower case or with a bracket ("to many primary level cases"). In a table of
    numbers such a line is a row of its own (a second statistic under the same label).

    A header line stopping on a word that cannot end a heading ("Inhibitor(s) targeting the")
    goes on onto the next line, which is a header line too (`continued_header`).

    In a table of numbers with columns, a line of one cell in words ("Sex", "P2′") labels the
    rows after it, up to the next such line: it is a header line, and each row under it reads
    with it ("Sex, female — n: 12"), where alone it would state nothing and its rows would not
    say which group they are of."""
    lines, cursor = [], start
    for line in text[start:end].split("\n"):
        lines.append((cursor, cursor + len(line)))
        cursor += len(line) + 1
    caption = text[lines[0][0] : lines[0][1]] if head_lines >= 2 else ""
    header = text[lines[head_lines - 1][0] : lines[head_lines - 1][1]].split(" | ") if head_lines >= 1 else []
    if header and len(lines) > head_lines + 1 and _HEADER_GOES_ON.search(header[-1]):
        header = continued_header(header, text[lines[head_lines][0] : lines[head_lines][1]].split(" | "))
        head_lines += 1
    label = table_label(caption) if caption else "Table"
    body = [text[a:b].split(" | ") for a, b in lines[head_lines:]]
    headers = {head_lines + no for no in header_rows(body)}
    wrapped = not of_numbers(body)  # a row's cells may wrap onto the lines below it
    units = []
    row_cells: list[str] = []  # the cells of the row the last unit is, so far
    # past the table's first footnote its lines of one cell are notes too; a part of a long
    # table can open mid-note ("is the weighted mean of ..."), ahead of the notes after it
    first = next((cells for cells in body if "".join(cells).strip()), [""])
    in_notes = (
        len(first) == 1
        and bool(_GOES_ON.match(first[0]))
        and any(_TABLE_NOTE.match(" | ".join(cells)) for cells in body)
    )
    group = ""  # the label of the rows from here on, in a table of numbers
    for no, (a, b) in enumerate(lines):
        if b <= a or not text[a:b].strip():
            continue
        if no < head_lines:
            units.append(Unit("caption" if caption and no == 0 else "table_header", a, b))
            continue
        if is_caption(text[a:b]):  # a caption the table detector took for a row
            units.append(Unit("caption", a, b))
            continue
        cells = text[a:b].split(" | ")
        one_cell = sum(bool(c.strip()) for c in cells) == 1
        in_notes = one_cell and (in_notes or bool(_TABLE_NOTE.match(text[a:b])))
        if in_notes:  # "‡Rfree is equal to Rcryst for ...": says what a mark means, states no row
            units.append(Unit("footnote", a, b))
            continue
        if no in headers:
            units.append(Unit("table_header", a, b))
            header, group = cells, ""
            continue
        if (
            not wrapped
            and one_cell
            and (len(header) > 1 or names_labels(header))
            and _GROUP_LABEL.match(text[a:b].strip(" |"))
        ):
            units.append(Unit("table_header", a, b))  # a group label
            group = text[a:b].strip(" |")
            continue
        if wrapped and units and units[-1].kind == "table_row" and _goes_on(cells):
            if len(cells) == 1:  # the columns were lost: the words go on the row's last cell
                filled = max((i for i, c in enumerate(row_cells) if c.strip()), default=0)
                cells = [""] * filled + cells
            row_cells = [
                " ".join(part for part in (above.strip(), below.strip()) if part)
                for above, below in zip_longest(row_cells, cells, fillvalue="")
            ]
            units[-1] = Unit("table_row", units[-1].start, b, row_text(label, header, row_cells))
            continue
        row_cells = cells
        units.append(Unit("table_row", a, b, row_text(label, header, cells, group)))
    return units
