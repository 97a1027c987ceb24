"""Tables kept as units: found on caption pages only, one block each, split by rows with the
head repeated, never duplicated as paragraphs."""

from __future__ import annotations

import pymupdf
import pytest

from zocrates_retrieval.adapters.isolation import ConverterPool, ConvertJob
from zocrates_retrieval.convert import convert_file
from zocrates_retrieval.domain.chunking import approx_tokens, chunk_blocks
from zocrates_retrieval.domain.document import Block, Document
from zocrates_retrieval.domain.markup import convert_html

CAPTION = "Table 1. Thermal conductivity of common alloys at room temperature"
HEADER = ["Alloy", "Conductivity (W/mK)", "Density (g/cm3)"]
ROWS = [[f"Alloy {chr(65 + i)}{i}", f"{100 + i * 7}.5", f"{7 + i / 10:.1f}"] for i in range(20)]
BEFORE = "We measured the thermal conductivity of several alloys with the laser flash method."
AFTER = "Copper conducts heat best among the tested metals, as expected from its free electrons."


def table_pdf(ruled: bool = True, caption: str = CAPTION) -> bytes:
    """A page with a paragraph, a captioned 3-column table (grid-ruled or bare), a paragraph."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 72, 520, 140), BEFORE, fontsize=10)
    page.insert_text((72, 175), caption, fontsize=9, fontname="hebo")
    columns, top, row_height = [72, 220, 360, 520], 183, 16
    y = top
    for row in [HEADER] + ROWS:
        for x, cell in zip(columns, row):
            page.insert_text((x + 4, y + 12), cell, fontsize=9)
        y += row_height
    if ruled:
        for line_y in range(top, y + 1, row_height):
            page.draw_line((72, line_y), (520, line_y), width=0.5)
        for x in columns:
            page.draw_line((x, top), (x, y), width=0.5)
    page.insert_textbox(pymupdf.Rect(72, y + 20, 520, y + 120), AFTER, fontsize=10)
    return doc.tobytes()


def expected_table_text() -> str:
    return "\n".join([CAPTION] + [" | ".join(r) for r in [HEADER] + ROWS])


@pytest.mark.parametrize("ruled", [True, False])
def test_a_table_is_one_block_with_caption_and_rows_and_no_loose_copies(tmp_path, ruled):
    path = tmp_path / "table.pdf"
    path.write_bytes(table_pdf(ruled))
    doc = convert_file(path, "application/pdf")
    assert [b.kind for b in doc.blocks] == ["text", "table", "text"]
    before, table, after = doc.blocks
    assert before.text == BEFORE and after.text == AFTER  # reading order kept around the table
    assert table.text == expected_table_text() and table.head_lines == 2 and table.page == 1
    loose = " ".join(b.text for b in doc.blocks if b.kind != "table")
    assert "Alloy" not in loose and "Table 1" not in loose


def test_a_long_table_is_split_by_rows_with_its_head_repeated():
    table = Block(expected_table_text(), ("Results",), 3, "table", head_lines=2)
    blocks = [Block(BEFORE, ("Results",), 3), table, Block(AFTER, ("Results",), 3)]
    chunks = chunk_blocks(blocks, 80, approx_tokens)
    tables = [c for c in chunks if c.kind == "table"]
    assert [c.text for c in chunks if c.kind != "table"] == [BEFORE, AFTER]  # never packed together
    assert len(tables) > 1 and all(approx_tokens(c.text) <= 80 for c in tables)
    head = f"{CAPTION}\n{' | '.join(HEADER)}\n"
    assert all(c.text.startswith(head) and c.section == ("Results",) and c.page == 3 for c in tables)
    rows = [line for c in tables for line in c.text.split("\n")[2:]]
    assert rows == [" | ".join(r) for r in ROWS]  # every row once, in order, none cut

    # within the budget: the table stays one chunk, on its own
    whole = chunk_blocks(blocks, 2000, approx_tokens)
    assert [c.kind for c in whole] == ["text", "table", "text"] and whole[1].text == table.text


@pytest.fixture
def table_searches(monkeypatch):
    """Pages examined for tables at all, and pages that needed PyMuPDF's costly finder."""
    from zocrates_retrieval.adapters import pdf as convert

    seen = {"examined": [], "find_tables": []}
    examine, find_tables = convert.page_tables, pymupdf.Page.find_tables

    def counting_examine(page, blocks):
        seen["examined"].append(page.number + 1)
        return examine(page, blocks)

    def counting_find_tables(page, *args, **kwargs):
        seen["find_tables"].append(page.number + 1)
        return find_tables(page, *args, **kwargs)

    monkeypatch.setattr(convert, "page_tables", counting_examine)
    monkeypatch.setattr(pymupdf.Page, "find_tables", counting_find_tables)
    return seen


def test_only_caption_pages_are_examined_and_ruled_tables_need_no_table_finder(tmp_path, table_searches):
    doc = pymupdf.open(stream=table_pdf(caption="Table 2 presents conductivities of alloys"))
    doc.insert_pdf(pymupdf.open(stream=table_pdf()))  # page 2: a captioned, ruled table
    doc.insert_pdf(pymupdf.open(stream=table_pdf(ruled=False)))  # page 3: captioned, no rules
    path = tmp_path / "three.pdf"
    doc.save(path)
    converted = convert_file(path, "application/pdf")
    assert [b.page for b in converted.blocks if b.kind == "table"] == [2, 3]
    assert table_searches["examined"] == [2, 3]  # a sentence that mentions a table costs nothing
    assert table_searches["find_tables"] == [3]  # the ruled one was found by its rules alone


def test_tables_of_real_papers_are_found_with_their_captions(pdf_dir, table_searches):
    """Every captioned table of the fixture PDFs (listed by hand from the pages), none elsewhere;
    only the page whose table runs on to the next page (no closing rule) needs find_tables."""

    def tables(name):
        doc = convert_file(pdf_dir / name, "application/pdf")
        return doc, [b for b in doc.blocks if b.kind == "table"]

    doc, found = tables("cermine/example3.pdf")
    assert [(t.page, t.text.split("\n")[0][:8]) for t in found] == [
        (2, "Table 1 "),
        (3, "Table 2 "),
        (4, "Table 3 "),
        (5, "Table 4 "),
        (6, "Table 5 "),
    ]
    crystal = found[1]
    assert crystal.text.startswith("Table 2 Crystallographic statistics of N-ACE")
    assert "\nSpace group | P1\n" in crystal.text and "\nPDB code | 4BXK\n" in crystal.text
    assert crystal.text.endswith("subset of reflections.")  # its footnotes, inside its closing rule
    loose = " ".join(b.text for b in doc.blocks if b.kind != "table")
    assert "281360/73018" in crystal.text and "281360/73018" not in loose

    _, found = tables("cermine/example2.pdf")  # pages 5 and 6 are rotated (landscape table)
    assert [(t.page, t.text[:34]) for t in found] == [
        (4, "Table 1 Patient-provider relations"),
        (5, "Table 2 Overview of themes on qual"),
        (6, "Table 2 Overview of themes on qual"),
    ]
    assert "\nPrivacy given | 99 | 1 | 97\n" in found[0].text

    _, found = tables("papermage/2203.00130v1.pdf")
    assert [(t.page, t.text[:9]) for t in found] == [
        (9, "Table 1. "),
        (24, "Table 2. "),
        (38, "Table 3. "),
        (39, "Table 4. "),
    ]

    _, found = tables("cermine/test1.pdf")  # no table (its reference list is no table either)
    assert found == []
    assert table_searches["find_tables"] == [5]  # example2.pdf's page 5


def test_table_blocks_survive_the_isolated_converter(tmp_path):
    path = tmp_path / "table.pdf"
    path.write_bytes(table_pdf())
    with ConverterPool(timeout_s=60) as pool:  # the layout model runs under the memory cap too
        [(_, doc)] = list(pool.convert_many([ConvertJob(path, "application/pdf")]))
    assert isinstance(doc, Document)
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.text == expected_table_text() and table.head_lines == 2


def test_html_data_tables_are_units_and_layout_tables_are_not():
    html = """<h1>Results</h1><p>Yields below.</p>
    <table><caption>Table 1. Yields</caption><tr><th>Crop</th><th>t/ha</th></tr>
    <tr><td>Wheat</td><td>7.1</td></tr><tr><td>Rice</td><td><b>4.6</b></td></tr></table>
    <table><tr><td><p>A page laid out in a table.</p></td></tr><tr><td><p>Second cell.</p></td></tr></table>"""
    doc = convert_html(html)
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("text", "Yields below."),
        ("table", "Table 1. Yields\nCrop | t/ha\nWheat | 7.1\nRice | 4.6"),
        ("text", "A page laid out in a table."),
        ("text", "Second cell."),
    ]
    assert doc.blocks[1].head_lines == 2 and doc.blocks[1].section == ("Results",)
