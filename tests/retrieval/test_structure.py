"""Document structure is retrieval's: each unit of a chunk is classified once, at ingest."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zocrates_retrieval.adapters.pdf import convert_pdf
from zocrates_retrieval.domain.chunking import approx_tokens, chunk_blocks
from zocrates_retrieval.domain.document import Block
from zocrates_retrieval.domain.structure import (
    classify_text,
    header_rows,
    prose_units,
    row_text,
    table_label,
    table_units,
)

PDFS = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "pdfs"


def kinds(text: str, role: str = "body") -> list[str]:
    return [u.kind for u in prose_units(text, 0, len(text), role)]


def test_an_acknowledgement_naming_institutions_is_no_affiliation():
    """Kamuzu's Acknowledgments thank people and bodies by name and place; read as one address it
    was never quotable. An address is short; a list of e-mail addresses is one however long."""
    thanks = (
        "Dr. Frank Davidoff (Executive Editor, Institute for Healthcare Improvement; Editor Emeritus, Annals of "
        "Internal Medicine), Dr. Sylvia Sax (International Health Consultant; Lecturer, University of Heidelberg, "
        "Germany), Dr. Rita A. Klim and Dr Colin Speight (Clinical Advisor, Lighthouse Trust, Lilongwe, Malawi) "
        "for reviewing this article and providing editorial support Katholischer Akademischer Ausländer-Dienst "
        "(KAAD), a Catholic scholarship body in Germany which provided the financial assistance for the "
        "corresponding author’s Master Studies and Thesis ESTHER- GIZ, MAGNET Project for providing financial and "
        "technical support for quality improvement in the Medical Department of the Kamuzu Central Hospital Staff, "
        "affiliates and patients at the Medical Department, Kamuzu Central Hospital, Malawi Staff of the Institute "
        "of Public Health, Ruprecht-Karls University of Heidelberg, Germany."
    )
    assert classify_text(thanks, "back_matter") == "sentence"
    assert classify_text("Institute of Public Health, Ruprecht-Karls University, Heidelberg, Germany.") == "affiliation"
    emails = "Authors’ addresses: " + ", ".join(
        f"Author {n}, author{n}@uni{n}.edu, University of Place {n}, Seattle, Washington, USA" for n in range(6)
    )
    assert len(emails.split()) > 40 and classify_text(emails) == "affiliation"


@pytest.mark.skipif(not PDFS.exists(), reason="PDF fixtures not found")
def test_an_acknowledgement_list_without_bullets_is_read_item_by_item():
    """Kamuzu thanks five people and bodies, one item after another with no bullet or stop: an
    item ends where its line stops short of the next line's first word. Read as one paragraph
    (830 characters) it was too long to quote, so "who paid for the Master's?" went unanswered.
    A line that wrapped keeps its item ("... University of" / "Heidelberg, Germany.")."""
    chunks = chunk_blocks(convert_pdf(PDFS / "cermine" / "example2.pdf").blocks, 200, approx_tokens)
    thanks = next(c for c in chunks if c.section == ("Acknowledgments",))
    units = [(u.kind, thanks.text[u.start : u.end]) for u in thanks.units]
    assert units[:2] == [
        (
            "list_item",
            "Dr. Frank Davidoff (Executive Editor, Institute for Healthcare Improvement; Editor Emeritus, Annals of "
            "Internal Medicine), Dr. Sylvia Sax (International Health Consultant; Lecturer, University of Heidelberg, "
            "Germany), Dr. Rita A. Klim and Dr Colin Speight (Clinical Advisor, Lighthouse Trust, Lilongwe, Malawi) "
            "for reviewing this article and providing editorial support",
        ),
        (
            "list_item",
            "Katholischer Akademischer Ausländer-Dienst (KAAD), a Catholic scholarship body in Germany which provided "
            "the financial assistance for the corresponding author’s Master Studies and Thesis",
        ),
    ]
    assert units[-1][1] == "Staff of the Institute of Public Health, Ruprecht-Karls University of Heidelberg, Germany."
    assert thanks.text.count("\n") == len(units) - 1  # each item on a line of its own


def test_list_items_pack_with_prose_each_a_unit_of_its_own():
    blocks = [
        Block("We thank the nurses of the ward.", ("Acknowledgements",), 3),
        Block("The Wellcome Trust for funding the fieldwork", ("Acknowledgements",), 3, "list_item"),
        Block("The patients who took part", ("Acknowledgements",), 3, "list_item"),
    ]
    [chunk] = chunk_blocks(blocks, 200, approx_tokens)
    assert chunk.kind == "text" and chunk.role == "back_matter"
    assert [(u.kind, chunk.text[u.start : u.end]) for u in chunk.units] == [
        ("sentence", "We thank the nurses of the ward."),
        ("list_item", "The Wellcome Trust for funding the fieldwork"),
        ("list_item", "The patients who took part"),
    ]


@pytest.mark.parametrize(
    "sentence, kind",
    [
        ("2Medical Department, Kamuzu Central Hospital, Lilongwe, Malawi.", "affiliation"),
        ("Department of Surgery, University of Calgary, Calgary, Canada.", "affiliation"),
        ("Correspondence: jossey.ach@gmail.com 1Project Officer, Project Fives Alive!", "footnote"),
        ("Health Directorate, National Catholic Secretariat, P. O. Box KA 9712, Accra, Ghana.", "affiliation"),
        ("© 2010 Datta et al; licensee BioMed Central Ltd.", "footnote"),
        (
            "This is an Open Access article distributed under the terms of the Creative Commons Attribution License.",
            "footnote",
        ),
        (
            "BMC Health Services Research 2014, 14:1 RESEARCH ARTICLE Open Access Understanding the barriers.",
            "title_block",
        ),
        (
            "The review was written by Indraneel Datta1, Chad G Ball1*, Lucas Rudmik1, S Morad Hameed2 and others.",
            "title_block",
        ),
        ("Search terms included: “DVT”, “deep venous thrombosis”, “complications”, “trauma”, “injury”.", "term_list"),
        ("Keywords: Healthcare quality improvement, Patient care, Barriers to quality improvement", "term_list"),
        ("This work was supported by the University of Cape Town.", "footnote"),
        ("The authors declare that they have no competing interests.", "footnote"),
        ("of the patients were discharged within two days.", "fragment"),  # cut at a page break
        ("h-BN nanoflakes become fluorescent due to the presence of substitutional oxygen.", "sentence"),
        ("mRNA levels rose twofold after treatment.", "sentence"),
        ("in 2010 the patients were discharged within two days.", "fragment"),
        ("Patients were discharged within two days and", "fragment"),
        ("8https://beta.openai.com/examples/default-summarize", "footnote"),  # a numbered note
        ("6.1.5 Analysis.", "fragment"),  # a run-in heading
        ("4.1.2 Term Definitions help Sarah resolve technical jargon without distracting from reading.", "fragment"),
    ],
)
def test_what_is_not_prose_is_named(sentence, kind):
    assert classify_text(sentence) == kind


@pytest.mark.parametrize(
    "sentence",
    [
        "The Medical Department of the Kamuzu Central Hospital (KCH), is a tertiary referral hospital located "
        "in the Central Region of Malawi and serves a population of around 5 million.",
        "Figure 9 plots the reading difficulty, understanding, and relevance scores for both papers.",
        "(iii) A descriptor-based similarity analysis was performed comparing the query and the fragments.",
        "The P1 site is stabilized through hydrogen bonds with Lys489, Tyr498, His331 and His491.",
        "Heparin, as reported by Smith et al. (2020), raised the bleeding risk to 3.9% (Table 2).",
        "The first three features (“key question index”, “answer gists” and “section gists”) are novel.",
        "3D structures of both domains were solved at 2.2 Å.",
        "12 patients were enrolled in the first year.",
        "2.5 mg of the compound was added to the mixture.",
    ],
)
def test_prose_is_a_sentence(sentence):
    assert classify_text(sentence) == "sentence"


@pytest.mark.parametrize(
    "caption",
    [
        "Figure 7 Comparison of the binding of compounds 33RE and RXP407 with N-domain ACE.",
        "Fig. 2 Patient flow at the medical department in June.",
        "Table 3 Summary of results obtained from the SHOP methodology for each ligand.",
        "(B) Schematic diagram of potential hydrogen bonds obtained from LIGPLOT.",
    ],
)
def test_a_caption_paragraph_is_all_caption(caption):
    text = caption + " Values are means of three runs."
    assert set(kinds(text)) == {"caption"}


def test_units_are_spans_of_the_text_in_reading_order():
    text = "Heparin raised bleeding (Smith et al. 2020). Filters did not. J. Doe agreed."
    units = prose_units(text, 0, len(text))
    assert [text[u.start : u.end] for u in units] == [
        "Heparin raised bleeding (Smith et al. 2020).",
        "Filters did not.",
        "J. Doe agreed.",
    ]


def test_bulleted_paragraphs_are_list_items():
    text = "• Heparin raised bleeding in trauma • Filters did not prevent embolism"
    units = prose_units(text, 0, len(text))
    assert [(u.kind, text[u.start : u.end]) for u in units] == [
        ("list_item", "Heparin raised bleeding in trauma"),
        ("list_item", "Filters did not prevent embolism"),
    ]


def test_the_paragraph_after_a_bulleted_list_is_not_its_last_item():
    """A list's last item has no full stop, and a PDF's blocks are often single lines: the
    paragraph after the list ran on into the item, which was then quoted as "... within the
    department Interviews were audio recorded ...". A wrapped item's last line stays its own."""
    section = ("Methods",)
    blocks = [
        Block("The interviews sought to identify:", section, 2),
        Block("• awareness of a culture of quality improvement in the Medical", section, 2),
        Block("Department • pattern of patient flow and utilization of services", section, 2),
        Block("within the department", section, 2),
        Block("Interviews were audio recorded and later transcribed. Content analysis followed.", section, 2),
    ]
    [chunk] = chunk_blocks(blocks, 200, approx_tokens)
    assert [(u.kind, chunk.text[u.start : u.end]) for u in chunk.units] == [
        ("fragment", "The interviews sought to identify:"),
        ("list_item", "awareness of a culture of quality improvement in the Medical Department"),
        ("list_item", "pattern of patient flow and utilization of services within the department"),
        ("sentence", "Interviews were audio recorded and later transcribed."),
        ("sentence", "Content analysis followed."),
    ]


def test_a_sentence_goes_on_past_the_page_notes_between_its_halves():
    """A footnote set between a sentence and the rest of it on its page was read into the
    sentence ("Four amino acids differing in chemical nature from 1These authors contributed
    equally to this work.") and the rest was left a fragment. On the next page, lower-case text
    is no continuation past a note: a two-column page's reading order is not that sure."""
    section = ("Methods",)
    blocks = [
        Block("Four amino acids differing in chemical nature from", section, 10),
        Block("1These authors contributed equally to this work.", section, 10),
        Block("their C-domain counterparts were selected. They are replaced by Phe391", section, 10),
        Block("and Glu403, respectively, in the C-domain.", section, 10),
        Block("Level one evidence supports anticoagulation with low molecular", section, 10),
        Block("© 2010 Datta et al; licensee BioMed Central Ltd.", section, 10),
        Block("mas. This was the only study to report insertion complications.", section, 11),
    ]
    [chunk] = chunk_blocks(blocks, 400, approx_tokens)
    units = [(u.kind, chunk.text[u.start : u.end]) for u in chunk.units]
    assert units[:3] == [
        ("affiliation", "1These authors contributed equally to this work."),
        ("sentence", "Four amino acids differing in chemical nature from their C-domain counterparts were selected."),
        ("sentence", "They are replaced by Phe391 and Glu403, respectively, in the C-domain."),
    ]
    assert ("fragment", "Level one evidence supports anticoagulation with low molecular") in units
    assert not any("molecular mas." in text for _, text in units)


def test_a_page_note_is_a_paragraph_of_its_own_at_both_ends():
    """The text after a page's note was quoted as part of it ("* Correspondence: ... Calgary,
    Canada Modalities available for trauma patient thromboprophylaxis are classified ..."): a
    note ends where it does, as a caption does."""
    section = ("Methods",)
    blocks = [
        Block("This review included all", section, 1),
        Block(
            "* Correspondence: ball.chad@gmail.com 1Department of Surgery, University of Calgary, Canada", section, 1
        ),
        Block("Modalities available for trauma patient thromboprophylaxis are classified into three.", section, 1),
    ]
    [chunk] = chunk_blocks(blocks, 400, approx_tokens)
    units = [(u.kind, chunk.text[u.start : u.end]) for u in chunk.units]
    assert ("footnote", blocks[1].text) in units
    assert ("sentence", blocks[2].text) in units


@pytest.mark.skipif(not PDFS.exists(), reason="PDF fixtures not found")
def test_a_page_note_inside_the_running_texts_block_is_its_own_paragraph():
    """PyMuPDF gives the DVT review's correspondence note as the last lines of the Methods
    paragraph's block ("... This review included all" | "* Correspondence: ball.chad@..."): a
    line that opens a note opens a paragraph."""
    blocks = convert_pdf(PDFS / "cermine" / "test1.pdf").blocks
    assert any(b.text.startswith("* Correspondence: ball.chad@gmail.com") for b in blocks)
    assert any(b.text.endswith("This review included all") for b in blocks)


def test_a_sentence_goes_on_past_a_table_or_figure_set_inside_it():
    """A table at the top of the next page, or a figure's caption, set between a sentence and
    the rest of it left both halves fragments ("While this" | Table 1 | "allows for effective
    reduction in blood pressure, ..."). The text before a figure's caption may be the figure's
    own labels, which no sentence goes on from."""
    section = ("Introduction",)
    table = "Table 1 Relevant ACE substrates\nSubstrate | Action\nBradykinin | Vasodilation"
    blocks = [
        Block("These inhibitors inhibit both domains with similar affinity. While this", section, 1),
        Block(table, section, 2, kind="table", head_lines=2),
        Block("allows for effective reduction in blood pressure, adverse effects result.", section, 2),
        Block("SHOP methodology was employed to screen for building blocks with similar or improved", section, 2),
        Block("Figure 1 Structure of compound 33RE", section, 2),
        Block("active site interaction properties. Four amino acids were selected.", section, 2),
        Block("This, in itself, is a prerequisite for the next", section, 3),
        Block("Referred cases (36%) Self-Referrals (64%) OPD II Referrals SHORT HOME OTHERS WARDS", section, 3),
        Block("Figure 2 Patient flow", section, 3),
        Block("necessary steps towards quality improvement.", section, 3),
    ]
    units = [(u.kind, c.text[u.start : u.end]) for c in chunk_blocks(blocks, 400, approx_tokens) for u in c.units]
    sentences = [text for kind, text in units if kind == "sentence"]
    assert "While this allows for effective reduction in blood pressure, adverse effects result." in sentences
    assert (
        "SHOP methodology was employed to screen for building blocks with similar or improved active site "
        "interaction properties." in sentences
    )
    assert ("caption", "Figure 1 Structure of compound 33RE") in units
    assert any(kind == "table_row" for kind, _ in units)
    assert not any("HOME OTHERS WARDS necessary" in text for _, text in units)


def test_a_paragraph_too_long_for_one_chunk_is_cut_where_its_sentences_end():
    """A paragraph longer than a chunk is cut between sentences, as its answer units are: it was
    cut after "et al." where a reference followed ("... described by Anthony et al." | "[34] and
    diffracted in space group P1 ..."), and both halves were quoted as sentences."""
    section = ("Results",)
    crystals = (
        "The crystals obtained were similar to those described by Anthony et al. [34] and diffracted in "
        "space group P1 with 2 molecules per asymmetric unit (Table 2)."
    )
    text = " ".join(["The co-crystal structure of N-domain ACE was solved at 2.2 Å in complex with 33RE."] * 3)
    chunks = chunk_blocks(
        [Block(f"{text} {crystals} Clear electron density was visible.", section, 6)], 50, approx_tokens
    )
    assert len(chunks) > 1
    sentences = [c.text[u.start : u.end] for c in chunks for u in c.units]
    assert crystals in sentences


@pytest.mark.skipif(not PDFS.exists(), reason="PDF fixtures not found")
def test_the_kamuzu_interview_list_ends_before_the_paragraph_after_it():
    chunks = chunk_blocks(convert_pdf(PDFS / "cermine" / "example2.pdf").blocks, 256, approx_tokens)
    units = [c.text[u.start : u.end] for c in chunks for u in c.units]
    assert "pattern of patient flow and utilization of services within the department" in units
    assert "Interviews were audio recorded and later transcribed." in units


def test_a_table_row_reads_with_its_caption_and_headers():
    text = "Table 3 Baseline characteristics. Values are means.\nCharacteristic | Treated | Control\nage, years | 54.2 ± 8.1 | 55.0"
    units = table_units(text, 0, len(text), head_lines=2)
    assert [u.kind for u in units] == ["caption", "table_header", "table_row"]
    row = units[2]
    assert text[row.start : row.end] == "age, years | 54.2 ± 8.1 | 55.0"
    assert row.text == "Table 3 (Baseline characteristics): age, years — Treated: 54.2 ± 8.1; Control: 55.0"
    assert table_label("Table S2: Crystallographic statistics") == "Table S2 (Crystallographic statistics)"
    # a header with no cell over the label column names the cells after the label
    assert row_text("Table", ["a", "b"], ["x", "y", "z"]) == "Table: x — a: y; b: z"
    assert row_text("Table", ["a"], ["x", "y", "z"]) == "Table: x | y | z"  # columns that do not line up


def test_a_header_row_mid_table_names_the_columns_of_the_rows_after_it():
    text = (
        "Table 2. Post-hoc tests.\nPP − QA | p | PP − PDF | p\nRelevance | -0.193 | 0.9133 | 1.167 | 0.0030\n"
        "QA − SD | p | QA − PDF | p\nRelevance | 0.946 | 0.0183 | 1.361 | 0.0006"
    )
    units = table_units(text, 0, len(text), head_lines=2)
    assert [u.kind for u in units] == ["caption", "table_header", "table_row", "table_header", "table_row"]
    first, second = units[2].text.split(" — ")[1], units[4].text.split(" — ")[1]
    assert first == "PP − QA: -0.193; p: 0.9133; PP − PDF: 1.167; p: 0.0030"
    assert second == "QA − SD: 0.946; p: 0.0183; QA − PDF: 1.361; p: 0.0006"


def test_a_tables_footnotes_are_footnotes_not_rows():
    text = (
        "Table 2 Crystallographic statistics\nParameter | Value\nRfree‡ | 21.9\nB-factor analysis\n"
        "∗Rsymm = sum over h, where Ii is the ith measurement\nis the weighted mean of all the measurements\n"
        "‡Rfree is equal to Rcryst for a randomly selected 5 % subset of reflections."
    )
    kinds = [(u.kind, text[u.start : u.end][:12]) for u in table_units(text, 0, len(text), head_lines=2)]
    assert kinds[2:] == [
        ("table_row", "Rfree‡ | 21."),
        ("table_row", "B-factor ana"),  # a label of one cell before any note is a row
        ("footnote", "∗Rsymm = sum"),
        ("footnote", "is the weigh"),
        ("footnote", "‡Rfree is eq"),
    ]
    # a part of a long table that opens mid-note
    part = (
        "Table 2 Crystallographic statistics\nParameter\nis the weighted mean of all the measurements\n"
        "‡Rfree is equal to Rcryst for a randomly selected 5 % subset of reflections."
    )
    assert [u.kind for u in table_units(part, 0, len(part), head_lines=2)] == [
        "caption",
        "table_header",
        "footnote",
        "footnote",
    ]


def test_a_row_of_words_wrapped_onto_the_lines_below_is_one_row():
    """Kamuzu's Table 2 wraps each group's cells over several lines; a quote of its first line
    stopped mid-cell ("... the care they receive as")."""
    text = (
        "Table 2 Themes by stakeholder\nRespondent group | Strengths | Weaknesses\n"
        "1. Patients (n = 4) | In-patients described their care as | - Poor amenities\n"
        " | • ‘very good’ (1 view) | - Weak adherence\n"
        " | • ‘poor’ (1 view) | \n"
        "2. Staff (n = 4) | - Staff attitude is good | - Workload"
    )
    units = table_units(text, 0, len(text), head_lines=2)
    assert [u.kind for u in units] == ["caption", "table_header", "table_row", "table_row"]
    patients = units[2]
    assert text[patients.start : patients.end].endswith("• ‘poor’ (1 view) | ")
    assert patients.text == (
        "Table 2 (Themes by stakeholder): 1. Patients (n = 4) — Strengths: In-patients described their care as "
        "• ‘very good’ (1 view) • ‘poor’ (1 view); Weaknesses: - Poor amenities - Weak adherence"
    )
    assert units[3].text.endswith("2. Staff (n = 4) — Strengths: - Staff attitude is good; Weaknesses: - Workload")
    # a table whose columns were lost: words going on in lower case, or with a bracket, go on
    lost = (
        "Table 2 Themes (Continued)\nTheme | Issues\n4.5 Management | • Shortage of staff\n"
        "• KCH wastes resources by attending\nto many primary level cases\n(Additional file 1)\n• No strategic plan"
    )
    rows = [u.text.split(": ", 1)[1] for u in table_units(lost, 0, len(lost), head_lines=2)[2:]]
    assert rows == [
        "4.5 Management — Issues: • Shortage of staff",
        "• KCH wastes resources by attending to many primary level cases (Additional file 1)",
        "• No strategic plan",
    ]
    # in a table of numbers, a line under the same label is a row of its own
    numbers = "Table 1 Outcomes\nOutcome | LMWH | UFH\nBleeding | 3.1 | 4.0\n | 2.9 | 3.8"
    assert [u.kind for u in table_units(numbers, 0, len(numbers), head_lines=2)][2:] == ["table_row", "table_row"]


def test_a_line_of_one_cell_in_a_table_of_numbers_labels_the_rows_after_it():
    """A group label ("Sex") alone would be quoted as a row stating nothing, and the rows under
    it ("female | 12 | 14") would not say what they count."""
    text = (
        "Table 1 Baseline characteristics\nCharacteristic | Treated | Control\nAge, years | 54.2 | 55.0\n"
        "Sex\nfemale | 12 | 14\nmale | 10 | 9\nSmoking\ncurrent | 4 | 6"
    )
    units = table_units(text, 0, len(text), head_lines=2)
    assert [u.text or text[u.start : u.end] for u in units if u.kind == "table_row"] == [
        "Table 1 (Baseline characteristics): Age, years — Treated: 54.2; Control: 55.0",
        "Table 1 (Baseline characteristics): Sex, female — Treated: 12; Control: 14",
        "Table 1 (Baseline characteristics): Sex, male — Treated: 10; Control: 9",
        "Table 1 (Baseline characteristics): Smoking, current — Treated: 4; Control: 6",
    ]
    assert [u.text or text[u.start : u.end] for u in units if u.kind == "table_header"] == [
        "Characteristic | Treated | Control",
        "Sex",
        "Smoking",
    ]
    # values gone onto a line of their own label nothing
    values = (
        "Table 2 Statistics\nParameter | Value | SD\nCell | a = 73.1 | 0.1\nα = 88.4, β = 64.3\nRedundancy | 3.9 | 0.2"
    )
    rows = [u.text for u in table_units(values, 0, len(values), head_lines=2) if u.kind == "table_row"]
    assert rows[-1] == "Table 2 (Statistics): Redundancy — Value: 3.9; SD: 0.2"


def test_a_header_naming_only_the_labels_names_no_value():
    """The ACE paper's Table 2 heads its label column "Parameter" and leaves its values unnamed:
    "Resolution (Å) — Parameter: 2.2" said the resolution was a parameter of 2.2. Its "B-factor
    analysis" line labels the B-factors after it."""
    text = (
        "Table 2 Crystallographic statistics\nParameter\nResolution (Å) | 2.2\nRfree | 21.9\n"
        "B-factor analysis\nInhibitor (chain A/B) | 21.3/18.2\nSolvent | 25.8"
    )
    units = table_units(text, 0, len(text), head_lines=2)
    assert [u.text.split(": ", 1)[1] for u in units if u.kind == "table_row"] == [
        "Resolution (Å) — 2.2",
        "Rfree — 21.9",
        "B-factor analysis, Inhibitor (chain A/B) — 21.3/18.2",
        "B-factor analysis, Solvent — 25.8",
    ]
    assert row_text("Table 3", ["n (%)"], ["female", "12 (40)"]) == "Table 3: female — n (%): 12 (40)"


def test_a_header_line_stopping_mid_heading_goes_on_onto_the_next():
    """The ACE paper's Table 1 writes its headings over two lines; the second was quoted as a
    row ("Domain contribution | Substrate | of substrate | ...")."""
    text = (
        "Table 1 A summary of ACE substrates\nBiological action | Inhibitor(s) targeting the\n"
        "Domain contribution | Substrate | of substrate | indicated domain\n"
        "N-domain specific | N-Acetyl-SDKP | Anti-fibrosis | RXP407"
    )
    units = table_units(text, 0, len(text), head_lines=2)
    assert [u.kind for u in units] == ["caption", "table_header", "table_header", "table_row"]
    assert units[3].text == (
        "Table 1 (A summary of ACE substrates): N-domain specific — Substrate: N-Acetyl-SDKP; "
        "Biological action of substrate: Anti-fibrosis; Inhibitor(s) targeting the indicated domain: RXP407"
    )


def test_the_rows_of_a_real_table_say_which_group_they_are_of(pdf_dir):
    """The ACE paper's Table 5 lists hydrogen bonds by the inhibitor's part (P2′, P1′, ..., P2)."""
    doc = convert_pdf(pdf_dir / "cermine" / "example3.pdf")
    block = next(b for b in doc.blocks if b.kind == "table" and "hydrogen bonds of 33RE" in b.text)
    units = table_units(block.text, 0, len(block.text), block.head_lines)
    rows = [u.text or block.text[u.start : u.end] for u in units if u.kind == "table_row"]
    assert "Table 5 (Potential hydrogen bonds of 33RE binding to N-ACE): P2, Tyr369 — Atom: OH; 33RE: NAS" in " ".join(
        rows
    )
    assert not any(row.endswith(("): P2", "): P2′", "): Phosphate")) for row in rows)


def test_only_a_table_of_numbers_has_header_rows_mid_table():
    numbers = [["age", "54.2", "55.0"], ["Sex", "", ""], ["female", "12", "14"], ["Space group", "P1", ""]]
    numbers += [["male", "9", "11"], ["BMI", "27.1", "26.4"]]
    assert header_rows(numbers + [["Site", "Treated", "Control"]]) == {6}
    # a group label, a label with one value in words, and any row of a table of words name no columns
    assert header_rows(numbers) == set()
    assert header_rows([["Barrier", "Description", "Example"], ["Dense text", "Facing text", "“I am”"]]) == set()


def test_every_part_of_a_long_table_starts_with_its_caption_and_the_headers_in_force():
    caption = "Table 2. Post-hoc tests between interfaces. " + "This table reports the differences at length. " * 8
    rows = [f"Row {i} | {i}.5 | 0.0{i} | {i}" for i in range(20)]
    lines = [caption.strip(), "A − B | p | n", *rows[:10], "C − D | p | n", *rows[10:]]
    block = Block("\n".join(lines), ("Results",), 3, "table", 2)
    chunks = chunk_blocks([block], max_tokens=120)
    assert len(chunks) > 2
    first, *later = chunks
    assert first.text.startswith(caption.strip())  # the whole caption once
    for chunk in later:
        head = chunk.text.split("\n")[:2]
        assert head[0] == "Table 2. Post-hoc tests between interfaces."
        kinds = [u.kind for u in chunk.units]
        assert kinds[:2] == ["caption", "table_header"] and "table_row" in kinds
    rows_read = [u.text for c in chunks for u in c.units if u.kind == "table_row"]
    by_row = {text.split(": ", 1)[1].split(" — ")[0]: text for text in rows_read}
    assert by_row["Row 1"].endswith("Row 1 — A − B: 1.5; p: 0.01; n: 1")
    assert by_row["Row 16"].endswith("Row 16 — C − D: 16.5; p: 0.016; n: 16")  # not named by the first header
    assert all("\n".join(c.text for c in chunks).count(f"{row}\n") <= 1 for row in rows)  # each row in one part
    assert sorted(by_row) == sorted(f"Row {i}" for i in range(20))


def test_chunks_carry_roles_and_units():
    blocks = [
        Block("RESEARCH ARTICLE Open Access", (), 1),
        Block("Heparin raised bleeding in trauma patients.", ("Abstract",), 1),
        Block("Patients were enrolled in two centres and", ("Methods",), 2),
        Block("followed for a year.", ("Methods",), 2),  # one sentence over two PDF lines
        Block("Figure 1 Enrolment", ("Methods",), 2),
        Block("We thank the nurses.", ("Acknowledgements",), 3),
    ]
    chunks = chunk_blocks(blocks, 200, approx_tokens)
    assert [c.role for c in chunks] == ["front_matter", "abstract", "body", "back_matter"]
    methods = chunks[2]
    assert [(u.kind, methods.text[u.start : u.end]) for u in methods.units] == [
        ("sentence", "Patients were enrolled in two centres and followed for a year."),
        ("caption", "Figure 1 Enrolment"),
    ]


@pytest.mark.skipif(not PDFS.exists(), reason="PDF fixtures not found")
def test_every_fixture_chunk_is_covered_by_units_that_are_its_own_text():
    for pdf in sorted(PDFS.glob("*/*.pdf")):
        for chunk in chunk_blocks(convert_pdf(pdf).blocks, 200, approx_tokens):
            assert chunk.units, (pdf.name, chunk.text[:80])
            last = 0
            for unit in chunk.units:
                assert last <= unit.start < unit.end <= len(chunk.text), (pdf.name, unit)
                last = unit.end
            covered = "".join(chunk.text[u.start : u.end] for u in chunk.units)
            # units leave out only separators (and list bullets)
            assert len(covered) >= 0.9 * len(chunk.text.replace(" ", "").replace("\n", "")), (pdf.name, chunk.text[:80])


@pytest.mark.skipif(not PDFS.exists(), reason="PDF fixtures not found")
def test_a_word_hyphenated_across_two_text_blocks_is_joined_as_across_lines():
    """Paper Plain sets "Partic-" and "ipants were recruited ..." in two blocks (a column
    break); joined with a space they were quoted as "Partic- ipants", a word no search matches.
    A real hyphen stays: "position-aware"."""
    blocks = convert_pdf(PDFS / "papermage" / "2203.00130v1.pdf").blocks
    text = " ".join(b.text for b in blocks)
    assert "Participants were recruited from our institution" in text
    assert "surfaces position-aware definitions" in text
    assert not re.search(r"[a-z]- [a-z]", text.replace("first- and", ""))
