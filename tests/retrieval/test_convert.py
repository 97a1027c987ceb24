"""Conversion of real and hand-made documents, and the isolated converter."""

from __future__ import annotations

import re

import pymupdf
import pytest

from zocrates_retrieval.adapters.isolation import ConverterPool, ConvertJob
from zocrates_retrieval.convert import convert_file
from zocrates_retrieval.domain.chunking import approx_tokens, chunk_blocks
from zocrates_retrieval.domain.document import (
    CORRUPT,
    EMPTY,
    ENCRYPTED,
    SCANNED,
    TIMEOUT,
    UNSUPPORTED,
    Block,
    ConversionError,
    Document,
)
from zocrates_retrieval.domain.markup import convert_html, convert_text
from zocrates_retrieval.domain.structure import is_back_matter, is_reference_list


def sections(doc: Document) -> list[str]:
    seen: list[str] = []
    for b in doc.blocks:
        label = " > ".join(b.section)
        if label not in seen:
            seen.append(label)
    return seen


def test_pdf_outline_gives_sections_and_pages(pdf_dir):
    doc = convert_file(pdf_dir / "cermine" / "test1.pdf", "application/pdf")
    assert doc.pages == 4
    assert doc.title.startswith("Complications related to deep venous thrombosis")
    assert sections(doc)[1:5] == ["Abstract", "Introduction", "Methods", "Conclusion"]
    abstract = next(b for b in doc.blocks if b.section == ("Abstract",))
    assert abstract.page == 1 and abstract.text.startswith("Deep venous thrombosis prophylaxis")


def test_pdf_nested_outline_with_numbered_headings(pdf_dir):
    doc = convert_file(pdf_dir / "papermage" / "2203.00130v1.pdf", "application/pdf")
    assert doc.pages == 39
    found = sections(doc)
    assert "1 INTRODUCTION" in found  # "1" and "INTRODUCTION" are separate spans on one baseline
    assert "5 IMPLEMENTATION > 5.2 Section Gists" in found


def test_pdf_without_outline_uses_font_sizes(pdf_dir):
    doc = convert_file(pdf_dir / "cermine" / "example3.pdf", "application/pdf")
    found = sections(doc)
    assert "MATERIALS AND METHODS > Modelling methodology and synthesis" in found
    assert "RESULTS" in found and "DISCUSSION" in found
    assert doc.title.startswith("Fragment-based design for the development of N-domain-selective")
    assert doc.doi == "10.1042/CS20130403"
    # the running footer "www.clinsci.org" on every page is gone
    assert not any(b.text == "www.clinsci.org" for b in doc.blocks)


def texts_of(doc: Document) -> list[str]:
    return [re.sub(r"\s+", " ", b.text) for b in doc.blocks]


# Running headers and footers of the fixture papers (odd/even pages, wrapped over two lines,
# sitting as low as 10% of the page), and body lines near them that must stay.
RUNNING = {
    "papermage/2203.00130v1.pdf": (
        [
            r"Approachable to Healthcare Consumers with Natural Language Processing \d",
            r"^Processing \d+",
            r"Language Processing \d+ It is",
        ],
        [
            "It is worth noting that non-experts can be overly confident in their understanding of scientific material",
            "were interested. It is worth noting that some biomedical papers do structure abstracts",
        ],
    ),
    "cermine/example3.pdf": (
        [
            r"R\. G\. Douglas and others",
            r"Fragment-based design of ACE inhibitors",
            r"www\.clinsci\.org \d",
            r"Journal compilation",
        ],
        [
            "substrate concentration of 4 or 8 μM. Residual enzyme activity was monitored continuously at λex = 320 nm",
            "Compound 33RE displayed low nanomolar",
        ],
    ),
    "cermine/example2.pdf": (
        [r"et al\. BMC Health Services Research", r"Page \d+ of 10", r"biomedcentral\.com/1472-6963"],
        ["budget. Even though the hospital generates some of its"],
    ),
    "cermine/test1.pdf": (
        [r"Datta et al\. Journal of Trauma Management", r"Page \d+ of 11", r"traumamanagement\.org/content"],
        ["versatility of the retrievable filter has virtually eliminated"],
    ),
}


@pytest.mark.parametrize("name", RUNNING)
def test_running_headers_footers_and_page_numbers_are_dropped(pdf_dir, name):
    doc = convert_file(pdf_dir / name, "application/pdf")
    running, body = RUNNING[name]
    texts = texts_of(doc)
    for pattern in running:
        assert not [t for t in texts if re.search(pattern, t)], pattern
    # page numbers (Paper Plain's Fig. 1, on pages 1-2, has numbered labels of its own)
    assert not [b.text for b in doc.blocks if re.fullmatch(r"\d+", b.text) and b.page > 2]
    for sentence in body:
        assert any(sentence in t for t in texts), sentence


def test_a_title_that_doubles_as_running_header_stays_on_page_one(pdf_dir, tmp_path):
    paper_plain = convert_file(pdf_dir / "papermage" / "2203.00130v1.pdf", "application/pdf")
    title = (
        "Paper Plain: Making Medical Research Papers Approachable to Healthcare Consumers with Natural "
        "Language Processing"
    )
    assert texts_of(paper_plain)[0] == title and paper_plain.blocks[0].page == 1

    doc = pymupdf.open()
    for n in range(1, 6):
        page = doc.new_page()  # 842 pt high: y 40 is 5% from the top
        if n == 1:
            page.insert_text((72, 40), "Heat transport in suspended graphene", fontsize=20)
        else:
            page.insert_text((72, 40), "Heat transport in suspended graphene", fontsize=8)
            page.insert_text((500, 40), str(n), fontsize=8)  # on the header's line: "... graphene 2"
        if n == 3:  # a column of figures at the top of one page: no running line
            for i, value in enumerate(("1.25", "2.50", "3.75")):
                page.insert_text((300, 60 + 12 * i), value, fontsize=9)
        page.insert_textbox(pymupdf.Rect(72, 200, 520, 700), f"Body paragraph {n} about phonons.", fontsize=10)
    path = tmp_path / "graphene.pdf"
    doc.save(path)
    texts = texts_of(convert_file(path, "application/pdf"))
    assert texts.count("Heat transport in suspended graphene") == 1  # the title, not the 4 headers
    assert texts[0] == "Heat transport in suspended graphene"
    assert "1.25 2.50 3.75" in texts  # three lines at the edge, but of one page
    assert [t for t in texts if t.startswith("Body")] == [f"Body paragraph {n} about phonons." for n in range(1, 6)]


def test_two_column_page_is_read_column_by_column(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(50, 50, 550, 90), "A full width title line", fontsize=12)
    page.insert_textbox(pymupdf.Rect(50, 100, 290, 400), "Left column first paragraph.", fontsize=10)
    page.insert_textbox(pymupdf.Rect(50, 420, 290, 700), "Left column second paragraph.", fontsize=10)
    page.insert_textbox(pymupdf.Rect(310, 100, 550, 400), "Right column paragraph.", fontsize=10)
    path = tmp_path / "columns.pdf"
    doc.save(path)
    texts = [b.text for b in convert_file(path, "application/pdf").blocks]
    assert texts == [
        "A full width title line",
        "Left column first paragraph.",
        "Left column second paragraph.",
        "Right column paragraph.",
    ]


@pytest.mark.parametrize(
    "maker, reason",
    [("encrypted_pdf", ENCRYPTED), ("corrupt_pdf", CORRUPT), ("scanned_pdf", SCANNED), ("empty_pdf", EMPTY)],
)
def test_unreadable_pdfs_are_reported_with_a_reason(tmp_path, make, maker, reason):
    path = tmp_path / "bad.pdf"
    path.write_bytes(getattr(make, maker)())
    with pytest.raises(ConversionError) as err:
        convert_file(path, "application/pdf")
    assert err.value.reason == reason


def test_html_not_a_pdf_and_unsupported_types(tmp_path):
    page = tmp_path / "error.pdf"
    page.write_bytes(b"<html><body>403 Forbidden</body></html>")
    with pytest.raises(ConversionError) as err:
        convert_file(page, "application/pdf")
    assert err.value.reason == CORRUPT
    image = tmp_path / "figure.png"
    image.write_bytes(b"\x89PNG....")
    with pytest.raises(ConversionError) as err:
        convert_file(image, "image/png")
    assert err.value.reason == UNSUPPORTED


def test_html_snapshot_keeps_headings_and_citation_metadata():
    html = """<html><head><title>Site</title><meta name="citation_title" content="Real title">
    <meta name="citation_author" content="Doe, Jane"><meta name="citation_doi" content="10.1/abc"></head>
    <body><nav>Home | About</nav><h1>Paper</h1><p>Intro text.</p><h2>Methods</h2><p>We <b>did</b> things.</p>
    <ul><li>first step</li></ul><h2>Results</h2><p>It worked.</p><script>var x = 1;</script></body></html>"""
    doc = convert_html(html)
    assert doc.title == "Real title" and doc.authors == "Doe, Jane" and doc.doi == "10.1/abc"
    assert [(b.section, b.text) for b in doc.blocks] == [
        (("Paper",), "Intro text."),
        (("Paper", "Methods"), "We did things."),
        (("Paper", "Methods"), "first step"),
        (("Paper", "Results"), "It worked."),
    ]


def test_markdown_and_plain_text():
    doc = convert_text("# Notes\n\nFirst idea.\n\n## Detail\nsecond\nline\n\nthird", markdown=True)
    assert [(b.section, b.text) for b in doc.blocks] == [
        (("Notes",), "First idea."),
        (("Notes", "Detail"), "second line"),
        (("Notes", "Detail"), "third"),
    ]
    assert [b.text for b in convert_text("# not a heading\n\nx", markdown=False).blocks] == ["# not a heading", "x"]


def test_chunks_are_bounded_and_never_cross_sections():
    long = " ".join(f"Sentence number {i} says something about heat." for i in range(200))
    blocks = [
        Block("Short intro.", ("Intro",), 1),
        Block(long, ("Methods",), 2),
        Block("Tail.", ("Methods",), 3),
        Block("[1] Doe J. Some paper. 2020.", ("References",), 4),
    ]
    chunks = chunk_blocks(blocks, 64, approx_tokens)
    assert chunks[0].text == "Short intro." and chunks[0].section == ("Intro",)
    assert all(approx_tokens(c.text) <= 64 + 2 for c in chunks)
    assert {c.section for c in chunks} == {("Intro",), ("Methods",)}  # the reference list is left out
    assert chunks[-1].text.endswith("Tail.") and chunks[-1].page_end == 3
    assert "".join(c.text for c in chunks[1:]).count("Sentence number") == 200  # nothing lost
    assert is_reference_list(("7 References",)) and not is_reference_list(("Related references work",))


def test_a_sentence_cut_by_a_page_break_is_one_sentence():
    """The ACE paper's "... addition of 280 μl of fluorogenic substrate (Abz)-FRK(Dnp)P-OH to yield
    a final" ends page 2 and "substrate concentration of 4 or 8 μM." opens page 3: two fragments,
    neither quotable. A paragraph of the next page that does not go on in lower case stays apart."""
    blocks = [
        Block("Enzyme was incubated. Substrate was added to yield a final", ("Methods",), 2),
        Block("substrate concentration of 4 or 8 μM. Activity was monitored.", ("Methods",), 3),
        Block("Crystals appeared within 3 days", ("Methods",), 3),
        Block("N-domain ACE was purified to homogeneity.", ("Methods",), 4),
    ]
    chunks = chunk_blocks(blocks, 20, approx_tokens)  # a chunk can hold one of the paragraphs, not two
    sentences = [c.text[u.start : u.end] for c in chunks for u in c.units if u.kind == "sentence"]
    assert "Substrate was added to yield a final substrate concentration of 4 or 8 μM." in sentences
    assert chunks[0].page == 2  # where it starts, as a citation of it says
    assert not any(c.text.startswith("Crystals appeared within 3 days N-domain") for c in chunks)


def test_a_paragraph_too_long_for_a_chunk_is_cut_after_a_sentence_ending_in_a_quote():
    """Paper Plain quotes its participants: a cut between sentences must see '... reading.” When',
    or it falls mid-sentence ("... T3 explained that the smaller")."""
    text = (
        "T3 wanted an overview: “I would love some sort of thousand foot view, which is kind of what I needed "
        "in the beginning of reading.” When asked to elaborate, T3 explained that the smaller bites of "
        "information could provide high-level findings quickly."
    )
    chunks = chunk_blocks([Block(text, ("Results",), 1)], 45, approx_tokens)
    assert [c.text.split()[-1] for c in chunks] == ["reading.”", "quickly."]


@pytest.mark.parametrize(
    "section",
    [
        "Acknowledgments",
        "ACKNOWLEDGEMENTS",
        "7. Acknowledgements",
        "VII. Acknowledgment",
        "Author details",
        "Authors’ contributions",
        "AUTHOR CONTRIBUTION",
        "Author information",
        "Affiliations",
        "Competing interests",
        "Conflict of interest",
        "Conflicts of Interest",
        "Declaration of competing interest",
        "Declarations > Funding",
        "Funding:",
        "Acknowledgements and funding",
        "Role of the funding source",
        "Ethics approval and consent to participate",
        "Consent for publication",
        "Availability of data and materials",
        "Data availability statement",
        "Abbreviations",
        "Publisher’s Note",
        "Additional file",
        "Additional files",
        "Supplementary material",
        "CLINICAL PERSPECTIVES > FUNDING",
    ],
)
def test_back_matter_sections(section):
    assert is_back_matter(tuple(section.split(" > ")))


@pytest.mark.parametrize(
    "section",
    [
        "Discussion",
        "Introduction",
        "Materials",
        "Data analysis",
        "Results > Structured patient interviews",
        # about such matter, inside the paper: content
        "Methods > Funding of the trial",
        "Methods > Ethical considerations",
        "8.3 Ethical and Social Implications",
        "Funding policy in Malawi",
        "SUPPLEMENTARY ONLINE DATA",  # example3's supplement holds its synthesis methods
        "References",
        "Annotations > p. 3",
    ],
)  # references are is_reference_list's (not indexed at all)
def test_not_back_matter(section):
    assert not is_back_matter(tuple(section.split(" > ")))


def test_back_matter_headings_set_small_are_still_sections(pdf_dir):
    """example3 sets its back matter, headings included, below body size (7.5 pt bold capitals)."""
    doc = convert_file(pdf_dir / "cermine" / "example3.pdf", "application/pdf")
    funding = next(b for b in doc.blocks if b.text.startswith("This work was supported by the University of Cape Town"))
    assert funding.section[-1] == "FUNDING" and is_back_matter(funding.section)
    clinical = [b for b in doc.blocks if b.section == ("CLINICAL PERSPECTIVES",)]
    assert clinical and not any("ACKNOWLEDGEMENTS" in b.text or "gratefully" in b.text for b in clinical)


@pytest.mark.parametrize("workers", [1, 2])
def test_converter_pool_converts_in_order_and_survives_a_timeout(tmp_path, pdf_dir, make, workers):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(make.encrypted_pdf())
    jobs = [
        ConvertJob(pdf_dir / "cermine" / "test1.pdf", "application/pdf"),
        ConvertJob(bad, "application/pdf"),
        ConvertJob(pdf_dir / "zotero" / "recognizePDF_test_DOI.pdf", "application/pdf"),
    ]
    with ConverterPool(timeout_s=60, workers=workers) as pool:
        results = []
        for result in pool.convert_many(jobs):
            results.append(result)
            if len(results) == 1:  # the other files are being converted side by side meanwhile
                assert len(pool.processes) == workers
    assert [j for j, _ in results] == jobs
    assert isinstance(results[0][1], Document) and results[0][1].pages == 4
    assert isinstance(results[1][1], ConversionError) and results[1][1].reason == ENCRYPTED
    assert results[2][1].doi == "10.1371/journal.pntd.0003350"

    # A limit no conversion can meet: each file times out, the worker is replaced each time,
    # and every job still gets exactly one answer.
    with ConverterPool(timeout_s=0.001, workers=workers) as pool:
        results = list(pool.convert_many(jobs))
    assert [j for j, _ in results] == jobs
    assert all(isinstance(r, ConversionError) and r.reason == TIMEOUT for _, r in results)


def test_converter_pool_ends_without_waiting_once_stopped(pdf_dir):
    import threading

    stop = threading.Event()
    jobs = [ConvertJob(pdf_dir / "papermage" / "2203.00130v1.pdf", "application/pdf")] * 2
    with ConverterPool(timeout_s=60, stop=stop) as pool:
        results = pool.convert_many(jobs)
        stop.set()
        assert list(results) == []  # the file being converted is abandoned, not waited for
        assert pool.processes == []  # and its workers killed


def test_converters_by_default_are_one_per_core_at_most_four(monkeypatch):
    from zocrates_retrieval.adapters import isolation

    for cores, want in [(1, 1), (2, 2), (64, isolation.MAX_DEFAULT_WORKERS)]:
        monkeypatch.setattr(isolation.os, "sched_getaffinity", lambda _pid, n=cores: set(range(n)))
        assert len(ConverterPool()._workers) == want


def test_a_converter_gone_between_files_is_replaced_and_the_files_after_it_are_converted(pdf_dir):
    test1 = ConvertJob(pdf_dir / "cermine" / "test1.pdf", "application/pdf")
    jobs = [test1, ConvertJob(pdf_dir / "zotero" / "recognizePDF_test_DOI.pdf", "application/pdf"), test1]
    with ConverterPool(timeout_s=60, lookahead=1, workers=1) as pool:
        results = pool.convert_many(jobs)
        first = next(results)
        [gone] = pool.processes
        gone.kill()
        gone.wait()
        rest = list(results)
    assert isinstance(first[1], Document)
    # the file sent to the dead converter is reported, once; the one after it converts
    assert [j for j, _ in rest] == jobs[1:]
    assert isinstance(rest[0][1], ConversionError) and rest[0][1].reason == CORRUPT
    assert isinstance(rest[1][1], Document) and rest[1][1].pages == 4
