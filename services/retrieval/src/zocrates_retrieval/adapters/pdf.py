"""PDFs to structured text: paragraphs with their section path and page.

PyMuPDF's `get_text("dict")` (about a millisecond a page; pymupdf4llm's markdown costs a
hundred times more and gains us little for retrieval). Sections come from the PDF outline
when there is one, else from font sizes. Reading order is the order of text blocks sorted
column by column, which keeps two-column papers readable. Running headers, footers and page
numbers (the same line at the top or bottom of many pages) are dropped, after the page numbers
have named the pages: each page's printed number is the PDF's own page label, else the number
its running header or footer prints, when that agrees with the page's index on several pages
(`Document.page_labels`).

Text is kept as the PDF spells it, so that a quote can be found in the PDF: ligatures are
spelled out (MuPDF does it when not asked to preserve them), a diacritic that the PDF sets as a
glyph of its own ("˚A", "¨o") is composed with its letter ("Å", "ö"), and a hyphen at the end of
a line is taken out only where it is hyphenation: when the document itself spells the word
without it ("struc-" + "tured" and "structured" elsewhere), or else when the word list knows the
joined word. Real hyphens stay ("N-domain", "wild-type", "patient-provider").

In back matter, a list set without bullets (the people and bodies an acknowledgement thanks)
is read item by item: an item ends where its line stops short of the next line's first word,
which would have fit had the text wrapped there (kind "list_item").

Tables become one block each (kind "table": caption, then one line per row, cells joined by
" | "), and their text does not appear again as paragraphs; `tables.py` finds them on pages
with a table caption, by their rules (milliseconds), else by PyMuPDF's `find_tables`.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cache, cached_property
from pathlib import Path

from zocrates_retrieval.domain.document import (
    CORRUPT,
    EMPTY,
    ENCRYPTED,
    SCANNED,
    TOO_LARGE,
    Block,
    ConversionError,
    Document,
    table_block,
)
from zocrates_retrieval.domain.structure import is_back_matter, is_reference_list, opens_page_note
from zocrates_retrieval.domain.tables import Table, has_caption, page_tables, text_flags

MAX_TEXT_CHARS = 5_000_000  # a 2,000-page book is about 4 MB of text; more is not a paper


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"[^a-z0-9]+", "", text)


#: Spacing diacritics that PDFs set as glyphs of their own before the letter (TeX's \AA is
#: "˚" + "A"), and the combining mark each stands for.
_COMBINING = {
    "\u00a8": "\u0308",
    "\u00b4": "\u0301",
    "\u02ca": "\u0301",
    "\u02cb": "\u0300",
    "\u02c6": "\u0302",
    "\u02dc": "\u0303",
    "\u00af": "\u0304",
    "\u02d8": "\u0306",
    "\u02d9": "\u0307",
    "\u02da": "\u030a",
    "\u02dd": "\u030b",
    "\u02c7": "\u030c",
    "\u00b8": "\u0327",
    "\u02db": "\u0328",
}
_SPLIT_DIACRITIC = re.compile(f"([{''.join(_COMBINING)}])([^\\W\\d_])")
#: Ligatures MuPDF leaves when a font maps the glyph to the ligature's own code point.
_LIGATURES = str.maketrans({c: unicodedata.normalize("NFKC", c) for c in "ﬀﬁﬂﬃﬄﬅﬆ"})


def _repair(text: str) -> str:
    """`text` with split diacritics composed ("˚A" -> "Å") and ligatures spelled out, NFC.
    A mark with no precomposed letter ("˜𝑥", a median) stays as it is."""

    def compose(m: re.Match) -> str:
        letter = unicodedata.normalize("NFC", m.group(2) + _COMBINING[m.group(1)])
        return letter if len(letter) == 1 else m.group()

    return unicodedata.normalize("NFC", _SPLIT_DIACRITIC.sub(compose, text.translate(_LIGATURES)))


@dataclass
class _Line:
    text: str
    size: float
    bold: bool
    page: int
    top: float  # position on the page, 0 (top) to 1 (bottom)
    block: int
    table: Table | None = None  # set on the one line that stands for a whole table
    x0: float = 0.0  # where the line starts and ends across the page, in points
    x1: float = 0.0
    right: float = 0.0  # where its block's longest line ends


def _ordered_blocks(blocks: list[dict], width: float) -> list[dict]:
    """Text blocks in reading order: full-width blocks split the page into bands; inside a
    band the left column is read before the right one."""
    text_blocks = [b for b in blocks if b.get("type") == 0 and b.get("lines")]
    text_blocks.sort(key=lambda b: (b["bbox"][1], b["bbox"][0]))
    mid = width / 2
    ordered: list[dict] = []
    band: list[dict] = []

    def flush() -> None:
        left = [b for b in band if b["bbox"][0] < mid]
        right = [b for b in band if b["bbox"][0] >= mid]
        ordered.extend(sorted(left, key=lambda b: b["bbox"][1]))
        ordered.extend(sorted(right, key=lambda b: b["bbox"][1]))
        band.clear()

    for b in text_blocks:
        x0, _, x1, _ = b["bbox"]
        if x0 < mid - 0.05 * width and x1 > mid + 0.05 * width:  # spans both columns
            flush()
            ordered.append(b)
        else:
            band.append(b)
    flush()
    return ordered


_BOLD_FONTS = ("bold", "black", "heavy", "demi", "semibold")


def _pdf_lines(doc, max_pages: int) -> list[_Line]:

    lines: list[_Line] = []
    block_no = 0
    for page_no, page in enumerate(doc, start=1):
        if page_no > max_pages:
            break
        height = max(page.rect.height, 1)
        data = page.get_text("dict", flags=text_flags())
        blocks = _ordered_blocks(data["blocks"], page.rect.width)
        in_table: dict[tuple[int, int], Table] = {}
        if has_caption(blocks):  # the only pages that may cost more than a millisecond
            for table in page_tables(page, blocks):
                table.caption = _repair(table.caption)
                table.rows = [[_repair(cell) for cell in row] for row in table.rows]
                in_table.update(dict.fromkeys(table.lines, table))
        emitted: set[int] = set()
        for b, block in enumerate(blocks):
            block_no += 1
            for n, line in enumerate(block["lines"]):
                if (table := in_table.get((b, n))) is not None:
                    if id(table) not in emitted:  # the whole table, where its first line was
                        emitted.add(id(table))
                        block_no += 1
                        lines.append(_Line(table.caption, 0.0, False, page_no, 0.5, block_no, table))
                        block_no += 1
                    continue
                spans = [s for s in line["spans"] if s["text"].strip()]
                if not spans:
                    continue
                text = _repair("".join(s["text"] for s in line["spans"]).strip())
                size = round(max(s["size"] for s in spans), 1)
                bold = all(s["flags"] & 16 or any(w in s["font"].lower() for w in _BOLD_FONTS) for s in spans)
                top = line["bbox"][1] / height
                x0, x1 = line["bbox"][0], line["bbox"][2]
                prev = lines[-1] if lines else None
                if prev and prev.block == block_no and abs(prev.top - top) < 0.004:
                    # same baseline, split by a gap ("1" + "INTRODUCTION"): one line
                    prev.text = f"{prev.text} {text}"
                    prev.size = max(prev.size, size)
                    prev.bold = prev.bold and bold
                    prev.x0, prev.x1 = min(prev.x0, x0), max(prev.x1, x1)
                    continue
                lines.append(_Line(text, size, bold, page_no, top, block_no, None, x0, x1, block["bbox"][2]))
    return lines


#: Running headers sit in the top 12% of a page: ACM's wraps onto a second line at 0.10. The
#: footers of the fixture papers all sit below 0.95, and footnotes reach 0.92, so the bottom
#: band stays at 8%.
_HEADER_BAND, _FOOTER_BAND = 0.12, 0.92

#: A line at the edge of this fraction of the pages runs through the document. Journals often
#: alternate headers (authors on even pages, short title on odd ones) and leave them off the
#: first page: each is on a little under half of the pages.
_RUNNING_SHARE = 0.4


def _drop_running_lines(lines: list[_Line], pages: int) -> list[_Line]:
    """Remove lines that repeat near the top or bottom of many pages: running headers and
    footers, page numbers. The title on page 1 stays even where it doubles as a header."""
    if pages < 3:
        return lines

    def at_edge(ln: _Line) -> bool:
        return ln.table is None and (ln.top < _HEADER_BAND or ln.top > _FOOTER_BAND)

    def shape(ln: _Line) -> str:
        return re.sub(r"\d+", "", _norm(ln.text))  # "Page 3" and "Page 4" are one line

    title_size = _title_size(lines) or float("inf")
    # pages, not lines: a column of figures at the top of one page is no running line
    pages_of: dict[str, set[int]] = {}
    for ln in lines:
        if at_edge(ln):
            pages_of.setdefault(shape(ln), set()).add(ln.page)
    least = max(3, round(_RUNNING_SHARE * pages))
    running = {k for k, seen in pages_of.items() if len(seen) >= least}

    def is_running(ln: _Line) -> bool:
        if not at_edge(ln) or (ln.page == 1 and ln.size >= title_size):
            return False
        s = shape(ln)
        # the first page often sets the header without its page number ("... Page 2 of 10")
        return s in running or (len(s) >= 20 and any(r.startswith(s) for r in running))

    return [ln for ln in lines if not is_running(ln)]


def _page_labels(doc, pages: int) -> dict[int, str]:
    """The PDF's own page labels (its /PageLabels: "iv", "1234", "A-3"), by 1-based page.
    Labels that only count the pages from 1 (what many PDF writers set by default) say nothing
    the index does not: {} then, so that the printed numbers are read (an excerpt of a paper's
    pages 1, 9, 10 and 11 may well be labelled 1 to 4). A broken label tree counts as none."""
    try:
        rules = doc.get_page_labels()
    except Exception:  # noqa: BLE001 - pymupdf raises its own errors on a malformed number tree
        return {}
    labels = {n: doc[n - 1].get_label().strip()[:32] for n in range(1, pages + 1)} if rules else {}
    if all(label == str(n) for n, label in labels.items()):
        return {}
    return {n: label for n, label in labels.items() if label}


#: A page number in a running header or footer: a number standing alone ("1236", "Page 7"),
#: not part of a decimal, a date or a range ("2.1", "12/05", "1234-1245").
_EDGE_NUMBER = re.compile(r"(?<![\w.,/–-])(\d{1,5})(?![\w/–-]|[.,]\d)")

#: Pages whose edge number agrees before the numbers are trusted: a lone number that
#: disagrees with its neighbours (a year, a volume, a figure label) is not a page number.
_AGREEING_PAGES = 3


def _printed_page_numbers(lines: list[_Line], pages: int) -> dict[int, str]:
    """Page numbers printed in the running headers or footers of a PDF without page labels,
    by 1-based page: the number at the top or bottom of a page whose difference from the
    page's index is the same on the most pages (at least `_AGREEING_PAGES`, or every page of a
    shorter document). That difference numbers the pages from the first to the last that print
    it (a page of figures between them too); the pages before or after (a cover, an
    unnumbered first page) are left unnamed. {} when no such number runs through the PDF."""
    pages_at: dict[int, set[int]] = {}  # offset of the printed number from the page -> pages
    for ln in lines:
        if ln.table is None and (ln.top < _HEADER_BAND or ln.top > _FOOTER_BAND):
            for m in _EDGE_NUMBER.finditer(ln.text):
                pages_at.setdefault(int(m.group(1)) - ln.page, set()).add(ln.page)
    if not pages_at:
        return {}
    # most pages first; on a tie, a number other than the index (a journal's over a viewer's)
    offset, seen = max(pages_at.items(), key=lambda kv: (len(kv[1]), kv[0] != 0))
    if len(seen) < max(2, min(_AGREEING_PAGES, pages)):
        return {}
    return {n: str(n + offset) for n in range(min(seen), max(seen) + 1)}


_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")


def _looks_like_heading(text: str) -> bool:
    words = text.split()
    return (
        1 <= len(words) <= 12
        and len(text) <= 120
        and (text[0].isupper() or text[0].isdigit())
        and any(c.isalpha() for c in text)
        and not text.endswith((".", ",", ";", ":"))
    )


def _heading_levels_from_fonts(lines: list[_Line]) -> dict[int, int]:
    """Index of heading lines -> level, for PDFs without an outline.

    A heading is a short line set larger than the body text, or bold at body size and numbered
    or in capitals. The largest type on the first page is the title, not a section.
    """
    sizes: Counter = Counter()
    for ln in lines:
        if ln.table is None:
            sizes[ln.size] += len(ln.text)
    if not sizes:
        return {}
    body = sizes.most_common(1)[0][0]
    total = sum(sizes.values())
    title_size = _title_size(lines) or float("inf")
    # A heading's rank: its size, then capitals over mixed case ("METHODS" > "Sampling").
    candidates: dict[int, tuple[float, bool]] = {}
    for i, ln in enumerate(lines):
        if ln.table is not None or not _looks_like_heading(ln.text) or (ln.page == 1 and ln.size >= title_size):
            continue
        if ln.size >= body * 1.08 and sizes[ln.size] < 0.1 * total:
            candidates[i] = (ln.size, ln.text.isupper())
        elif ln.bold and ln.size >= body * 0.95 and (_NUMBERED.match(ln.text) or ln.text.isupper()):
            candidates[i] = (body, ln.text.isupper())
        elif ln.bold and (is_back_matter((ln.text,)) or is_reference_list((ln.text,))):
            # back matter is often set in smaller type, its headings included
            candidates[i] = (body, ln.text.isupper())
    ranks = {s: r for r, s in enumerate(sorted(set(candidates.values()), reverse=True), start=1)}
    levels: dict[int, int] = {}
    for i in sorted(candidates):
        prev = i - 1
        if prev in levels and lines[prev].block == lines[i].block and candidates.get(prev) == candidates[i]:
            levels[i] = -1  # the heading goes on over a second line
        elif m := _NUMBERED.match(lines[i].text):
            levels[i] = min(m.group(1).count(".") + 1, 6)
        else:
            levels[i] = min(ranks[candidates[i]], 6)
    return levels


def _heading_levels_from_toc(lines: list[_Line], toc: list) -> dict[int, int]:
    """Index of heading lines -> level, by finding each outline entry on its page."""
    levels: dict[int, int] = {}
    by_page: dict[int, list[int]] = {}
    for i, ln in enumerate(lines):
        by_page.setdefault(ln.page, []).append(i)
    for level, title, page in toc:
        want = _norm(title)
        if not want:
            continue
        for i in by_page.get(page, []):
            if i in levels or lines[i].table is not None:
                continue
            got = _norm(lines[i].text)
            if got and (got == want or (want.startswith(got) and len(got) >= min(8, len(want)))):
                levels[i] = level
                # a title set over two lines: the continuation is part of the heading
                nxt = i + 1
                if got != want and nxt < len(lines) and want.startswith(got + _norm(lines[nxt].text)):
                    levels[nxt] = -1
                break
    return levels


_WORD = re.compile(r"[^\W\d_]+")  # a run of letters
_HYPHENATED = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")  # "wild-type", "N-domain-selective"
_LAST_WORD, _FIRST_WORD = re.compile(r"[^\W_]*$"), re.compile(r"[^\W_]*")  # letters and digits


class _Vocabulary:
    """How one document spells its words inside lines: as one word ("wildtype") or hyphenated
    ("wild-type"), lower-cased. A line-end hyphen is judged by it (see `_is_hyphenation`);
    counted the first time one is, as most papers have none."""

    def __init__(self, texts: Iterable[str]):
        self._texts = texts

    @cached_property
    def _text(self) -> str:
        return "\n".join(self._texts).lower()

    @cached_property
    def words(self) -> Counter:
        return Counter(_WORD.findall(self._text))

    @cached_property
    def pairs(self) -> Counter:
        """("wild", "type") for each "wild-type"."""
        pairs: Counter = Counter()
        for compound in _HYPHENATED.findall(self._text):
            parts = compound.split("-")
            pairs.update(zip(parts, parts[1:]))
        return pairs


@cache
def _word_list():
    """pyspellchecker's English word list (160,000 words with their inflections, MIT): loaded
    once per converter process, about 0.1 s and 25 MB."""
    from spellchecker import SpellChecker

    return SpellChecker(language="en", distance=1)


def _is_hyphenation(left: str, right: str, vocabulary: _Vocabulary) -> bool:
    """Whether "left-" at the end of a line and "right" starting the next are one word split by
    hyphenation: the document's own spelling decides, else the word list. Hyphenation leaves
    at least two letters on the line and starts the next in lower case."""
    if len(left) < 2 or not left.isalpha() or not right.isalpha() or not right[0].islower():
        return False
    joined = (left + right).lower()
    as_one, as_two = vocabulary.words[joined], vocabulary.pairs[left.lower(), right.lower()]
    if as_one != as_two:
        return as_one > as_two
    return joined in _word_list()


def _join_lines(texts: list[str], vocabulary: _Vocabulary) -> str:
    out = ""
    for t in texts:
        if not out:
            out = t
        elif out.endswith("-") and (last := out[out.rfind(" ") + 1 :]) != "-":  # a hyphen, not a dash
            left, right = _LAST_WORD.search(last[:-1]).group(), _FIRST_WORD.match(t).group()
            if _is_hyphenation(left, right, vocabulary):
                out = out[:-1] + t
            elif right in ("and", "or"):
                out += " " + t  # a suspended hyphen: "first- and second-line"
            else:
                out += t  # a real hyphen: "wild-type", "N-ACE"
        else:
            out += " " + t
    return out


def convert_pdf(path: Path, max_pages: int = 2000) -> Document:
    import pymupdf

    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:  # pymupdf raises its own FileDataError, RuntimeError, ...
        raise ConversionError(CORRUPT, f"not a readable PDF ({exc})") from exc
    with doc:
        if doc.needs_pass:
            raise ConversionError(ENCRYPTED, "the PDF is password-protected")
        if doc.page_count == 0:
            raise ConversionError(CORRUPT, "the PDF has no pages")
        try:
            lines = _pdf_lines(doc, max_pages)
            toc = [e for e in doc.get_toc(simple=True) if e[2] >= 1]
        except Exception as exc:
            raise ConversionError(CORRUPT, f"the PDF could not be parsed ({exc})") from exc
        pages = min(doc.page_count, max_pages)
        if sum(len(ln.text) + (sum(map(len, sum(ln.table.rows, []))) if ln.table else 0) for ln in lines) < 20:
            has_images = any(doc[i].get_images() for i in range(min(pages, 20)))
            if has_images:
                raise ConversionError(
                    SCANNED, "no text layer (a scanned document?); OCR it in Zotero or your PDF tool first"
                )
            raise ConversionError(EMPTY, "the PDF holds no text")
        meta = doc.metadata or {}
        labels = _page_labels(doc, pages) or _printed_page_numbers(lines, pages)
        lines = _drop_running_lines(lines, pages)
        vocabulary = _Vocabulary(_line_texts(lines))
        levels = _heading_levels_from_toc(lines, toc) if toc else {}
        if not levels:
            levels = _heading_levels_from_fonts(lines)
        document = Document(pages=pages, page_labels=labels, authors=(meta.get("author") or "").strip() or None)
        document.title = _pdf_title(meta.get("title"), lines)
        path_stack: list[tuple[int, str]] = []
        para: list[_Line] = []  # the lines of the paragraph being read, all of one text block
        para_block = None

        def flush() -> None:
            if not para:
                return
            section = tuple(t for _, t in path_stack)
            # an unbulleted list (the people and bodies thanked) is back matter's own
            starts = [0]
            if is_back_matter(section):
                starts += [n for n in range(1, len(para)) if _broken_before(para[n - 1], para[n])]
            kind = "list_item" if len(starts) > 1 else "text"
            for a, b in zip(starts, [*starts[1:], len(para)]):
                text = _join_lines([ln.text for ln in para[a:b]], vocabulary)
                document.blocks.append(Block(text, section, para[a].page, kind))
            para.clear()

        for i, ln in enumerate(lines):
            level = levels.get(i)
            if level == -1 and path_stack:  # a heading's second line
                path_stack[-1] = (path_stack[-1][0], _join_lines([path_stack[-1][1], ln.text], vocabulary))
                continue
            if level is not None:
                flush()
                while path_stack and path_stack[-1][0] >= level:
                    path_stack.pop()
                path_stack.append((level, ln.text))
                continue
            if ln.table is not None:
                flush()
                para_block = None
                document.blocks.append(table_block(ln.table, tuple(t for _, t in path_stack), ln.page))
                continue
            # a page's note set in the running text's block is a paragraph of its own
            if ln.block != para_block or (para and opens_page_note(ln.text) and not opens_page_note(para[0].text)):
                flush()
                para_block = ln.block
            para.append(ln)
        flush()
        document.blocks = _rejoin_hyphenated(document.blocks, vocabulary)
        text = " ".join(b.text for b in document.blocks)
        if len(text) > MAX_TEXT_CHARS:
            raise ConversionError(TOO_LARGE, f"{len(text):,} characters of text (limit {MAX_TEXT_CHARS:,})")
        if m := re.search(r"\b(10\.\d{4,9}/[^\s\"<>]+)", text[:5000]):
            document.doi = m.group(1).rstrip(".,;)")
        return document


def _rejoin_hyphenated(blocks: list[Block], vocabulary: _Vocabulary) -> list[Block]:
    """Text blocks whose word a line-end hyphen splits across them joined as the lines of one
    block are ("Partic-" | "ipants were recruited ..." is "Participants were recruited ...";
    "position-" | "aware definitions" keeps its hyphen): the PDF set the lines apart, often at a
    column or page break, and joined later with a space the word read as two."""
    out: list[Block] = []
    for block in blocks:
        last = out[-1] if out else None
        if (
            last is not None
            and last.kind == block.kind == "text"
            and last.section == block.section
            and _SPLIT_WORD_END.search(last.text)
            and block.text[:1].islower()
        ):
            out[-1] = replace(last, text=_join_lines([last.text, block.text], vocabulary))
        else:
            out.append(block)
    return out


#: A block ending in a word and a hyphen: "Partic-" (not a dash standing alone, " -").
_SPLIT_WORD_END = re.compile(r"[^\W\d_]{2,}-$")


def _broken_before(line: _Line, nxt: _Line) -> bool:
    """Whether the writer broke the text between `line` and `nxt` of one block, where it did
    not wrap: `nxt` starts with a capital or a digit, and its first word would have fit in the
    room left at the end of `line` (text wraps a word only when it does not fit). In a list
    without bullets, such as an acknowledgement's, that is where one item ends and the next
    begins ("... providing editorial support" / "Katholischer Akademischer ...")."""
    word = nxt.text.split(maxsplit=1)[0]
    if not (word[0].isupper() or word[0].isdigit()) or line.text.endswith("-"):
        return False
    char = (nxt.x1 - nxt.x0) / len(nxt.text)  # the next line's mean character, spaces included
    return line.right - line.x1 > char * (len(word) + 1)


def _line_texts(lines: list[_Line]) -> Iterator[str]:
    """The text of every line, a table's caption and cells included."""
    for ln in lines:
        yield ln.text
        if ln.table is not None:
            yield from (cell for row in ln.table.rows for cell in row)


def _pdf_title(meta_title: str | None, lines: list[_Line]) -> str | None:
    """The metadata title when it looks like one, else the largest wordy type on page 1."""
    title = (meta_title or "").strip()
    if len(re.findall(r"[A-Za-z]{2,}", title)) >= 3 and not title.lower().endswith(
        (".pdf", ".dvi", ".doc", ".docx", ".tex")
    ):
        return title
    size = _title_size(lines)
    return " ".join([ln.text for ln in lines if ln.page == 1 and ln.size == size][:4]) or None


def _title_size(lines: list[_Line]) -> float | None:
    """The type size of the title: the largest on page 1 that sets at least four words."""
    first = [ln for ln in lines if ln.page == 1]
    for size in sorted({ln.size for ln in first}, reverse=True):
        if sum(len(ln.text.split()) for ln in first if ln.size == size) >= 4:
            return size
    return None
