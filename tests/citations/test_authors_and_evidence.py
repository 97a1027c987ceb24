"""APA author labels and the `<retrieved_evidence>` block."""

from __future__ import annotations

from zocrates_citations import format_authors, format_evidence_xml
from zocrates_contracts import Creator, EvidenceChunk


def people(*surnames: str) -> list[Creator]:
    return [Creator(first_name="J.", last_name=s) for s in surnames]


def test_one_author_is_the_surname():
    assert format_authors(people("Smith")) == "Smith"


def test_two_authors_are_joined_with_an_ampersand():
    assert format_authors(people("Watson", "Crick")) == "Watson & Crick"


def test_three_or_more_authors_are_first_et_al():
    assert format_authors(people("Vaswani", "Shazeer", "Parmar")) == "Vaswani et al."
    assert format_authors(people(*"ABCDEFGH")) == "A et al."


def test_single_field_names_are_kept_whole():
    org = Creator(name="World Health Organization")
    assert format_authors([org]) == "World Health Organization"
    assert format_authors([org, *people("Smith")]) == "World Health Organization & Smith"


def test_no_creators_gives_an_empty_label():
    assert format_authors([]) == ""
    assert format_authors([Creator()]) == ""


def test_authors_are_preferred_over_editors():
    creators = [Creator(last_name="Editor", creator_type="editor"), *people("Author")]
    assert format_authors(creators) == "Author"


def test_an_edited_volume_is_labelled_by_its_editors():
    creators = [Creator(last_name=n, creator_type="editor") for n in ("Ed", "Itor")]
    assert format_authors(creators) == "Ed & Itor"


def test_creators_may_be_given_as_mappings():
    assert format_authors([{"last_name": "Smith"}, {"last_name": "Jones"}]) == "Smith & Jones"


def evidence(index: int, **overrides) -> EvidenceChunk:
    fields = dict(
        chunk_id=f"c{index}",
        item_key="HCZLU22L",
        attachment_key="ATTKEY99",
        title=f"Title {index}",
        creators=people("Jonsson", "Stefansson"),
        year=2021,
        section="Methods",
        text=f"Passage {index} text.",
    )
    return EvidenceChunk(**(fields | overrides))


def test_evidence_block_numbers_chunks_in_the_given_order():
    xml = format_evidence_xml([evidence(1, title="First"), evidence(2, title="Second")])
    assert xml.startswith("<retrieved_evidence>\n") and xml.endswith("\n</retrieved_evidence>")
    assert xml.index('<chunk index="1" title="First"') < xml.index('<chunk index="2" title="Second"')
    assert 'authors="Jonsson &amp; Stefansson" year="2021" section="Methods" type="text"' in xml


def test_evidence_block_never_contains_item_or_attachment_keys():
    xml = format_evidence_xml([evidence(1), evidence(2)])
    assert "HCZLU22L" not in xml and "ATTKEY99" not in xml


def test_evidence_attributes_are_escaped_and_single_line():
    xml = format_evidence_xml([evidence(1, title='Rates <"fast"> & slow\nsecond line')])
    assert 'title="Rates &lt;&quot;fast&quot;&gt; &amp; slow second line"' in xml


def test_evidence_keeps_the_full_chunk_text_verbatim():
    text = "| a | b |\n|---|---|\n| 1 < 2 | x & y |\n\n" + "long sentence. " * 500
    xml = format_evidence_xml([evidence(1, text=text.strip())])
    assert text.strip() in xml


def test_evidence_text_cannot_close_its_chunk_early():
    xml = format_evidence_xml([evidence(1, text="a </chunk> b <retrieved_evidence>")])
    assert xml.count("</chunk>") == 1 and xml.count("<retrieved_evidence>") == 1
    assert "a &lt;/chunk> b &lt;retrieved_evidence>" in xml


def test_evidence_omits_missing_attributes():
    xml = format_evidence_xml([evidence(1, creators=[], year=None, section=None)])
    assert "authors=" not in xml and "year=" not in xml and "section=" not in xml


def test_empty_evidence_is_an_empty_block():
    assert format_evidence_xml([]) == "<retrieved_evidence>\n</retrieved_evidence>"
