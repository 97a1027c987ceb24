"""Reading the items a message names (issue 14, library first for identifiers) and cutting a
long message into a search query (issue 14, long messages): the gateway's plain functions."""

from __future__ import annotations

import pytest

from harness.evidence import evidence_chunk, scored
from zocrates_contracts import Creator, EvidenceChunk, LibraryItemMatch
from zocrates_contracts.messages import MAX_QUERY_CHARS
from zocrates_gateway.domain.lookup import (
    Named,
    goes_online,
    item_answer,
    not_in_library,
    read_message,
    record_chunk,
    sort_out,
)
from zocrates_gateway.domain.query import clip, search_text
from zocrates_gateway.domain.synthesis import choose_points, read_question

DATTA = LibraryItemMatch(
    item_key="DVT2PAR1",
    library_id="user",
    library_name="My Library",
    title="Complications related to deep venous thrombosis prophylaxis in trauma",
    creators=[
        Creator(first_name="Indraneel", last_name="Datta"),
        Creator(first_name="Chad", last_name="Ball"),
        Creator(first_name="Lucas", last_name="Rudmik"),
    ],
    year=2010,
    doi="10.1186/1752-2897-4-1",
    collections=["Trauma", "Trauma/Reviews"],
    matched_by="doi",
    matched="10.1186/1752-2897-4-1",
)


@pytest.mark.parametrize(
    ("message", "names", "kind"),
    [
        (
            "Is https://doi.org/10.1186/1752-2897-4-1 already in my library?",
            [("doi", "10.1186/1752-2897-4-1")],
            "membership",
        ),
        ("do I have arXiv:2203.00130v2?", [("arxiv", "2203.00130")], "membership"),
        ("Do we already have DOI:10.1038/NATURE12373", [("doi", "10.1038/nature12373")], "membership"),
        ("2203.00130", [("arxiv", "2203.00130")], "summary"),
        (
            "What does the preprint 2203.00130 say about readers of medical papers and their questions?",
            [("arxiv", "2203.00130")],
            "question",
        ),
        ("what is 10.48550/arXiv.2203.00130 about?", [("arxiv", "2203.00130")], "summary"),
        ("PMID: 20205926", [("pmid", "20205926")], "summary"),
        ("summarise https://arxiv.org/abs/hep-th/9901001v2", [("arxiv", "hep-th/9901001")], "summary"),
        ("10.1186/1752-2897-4-1 what complications were reported?", [("doi", "10.1186/1752-2897-4-1")], "question"),
        ("Is Attention Is All You Need in my library?", [("title", "Attention Is All You Need")], "membership"),
        (
            "is the paper “Deep residual learning for image recognition” in my library?",
            [("title", "Deep residual learning for image recognition")],
            "membership",
        ),
        ('What sample size did "Attention Is All You Need" use?', [("title", "Attention Is All You Need")], "question"),
    ],
)
def test_the_items_a_message_names_and_what_it_asks_of_them(message, names, kind):
    asked = read_message(message)
    assert [(n.kind, n.value) for n in asked.names] == names
    assert asked.kind == kind


@pytest.mark.parametrize(
    "message",
    [
        "What was the somatic mutation rate estimated from twins?",
        "we measured 1999.12345 grams and 2019.1 more",  # no month 99, no 4-digit tail: no arXiv id
        "is anything about CRISPR in my library?",  # a topic, not a title
        "are there papers on dropout in my library?",
        "enrolled 20205926 people",  # a number is a PMID only when marked as one
        "In the twin study the mean rate was 1201.2345 per genome across all of the sequenced pairs, was it not?",
    ],
)
def test_ordinary_questions_name_no_item(message):
    assert not read_message(message)


def test_a_long_message_names_no_more_than_a_lookup_takes():
    """A 32 KB membership question, a 1,200-character quote, 50 DOIs: bounded, never an invalid lookup."""
    assert not read_message("Is " + "very long words " * 2000 + "in my library?")
    assert not read_message('Is "' + "x y " * 300 + '" in my library?')
    many = read_message(" ".join(f"10.1000/{n}" for n in range(50)) + " are these in my library?")
    assert len(many.names) == 20 and many.kind == "membership"


def test_the_question_about_an_item_is_the_message_without_its_identifiers():
    asked = read_message(
        "https://doi.org/10.1186/1752-2897-4-1: which complications did heparin cause? (PMID 20205926)"
    )
    assert asked.question == "which complications did heparin cause?"
    assert [n.kind for n in asked.names] == ["doi", "pmid"]


def test_an_identifier_missing_from_the_library_goes_online_and_a_quoted_phrase_does_not():
    doi = read_message("10.9999/nowhere what sample size?")
    assert goes_online(doi, sort_out(doi, [], searched=12))
    phrase = read_message('What does my library say about "transfer learning"?')
    assert phrase.names and not goes_online(phrase, sort_out(phrase, [], searched=12))
    title = read_message('Is "A title that is not here" in my library?')
    assert goes_online(title, sort_out(title, [], searched=12))
    # a short name ("is the Paper Plain paper in my library?") is looked up as a short title; not
    # found, it may be a topic: the library is searched for it, not the web
    short = read_message("Is the Paper Plain paper in my library?")
    assert [(n.kind, n.value, n.tentative) for n in short.names] == [("title", "Paper Plain", True)]
    assert not goes_online(short, sort_out(short, [], searched=12))
    assert [n.value for n in read_message("Do I have the ScholarPhi paper?").names] == ["ScholarPhi"]


@pytest.mark.parametrize(
    ("message", "author"),
    [
        ("Do I have anything by Datta in my library?", "Datta"),
        ("Find papers by Moon in my library", "Moon"),
        ("Which papers by August et al. are in my library?", "August"),
        ("Are there any articles by Kaur?", "Kaur"),
        ("Which papers by Datta discuss heparin?", None),  # a question of their content
        ("What did Datta et al. find?", None),
    ],
)
def test_a_question_about_the_librarys_items_by_an_author(message, author):
    asked = read_message(message)
    assert (asked.kind == "authored") is (author is not None)
    assert [n.value for n in asked.names if n.kind == "author"] == ([author] if author else [])
    if author:
        assert not goes_online(asked, sort_out(asked, [], searched=12))  # the library alone answers


def test_a_miss_says_the_library_was_checked():
    asked = read_message("Is 10.9999/nowhere in my library?")
    found = sort_out(asked, [], searched=1234)
    assert (
        not_in_library(found.missing, found.searched)
        == "No — DOI 10.9999/nowhere is not in your library (1,234 items checked)."
    )


def test_a_membership_answer_names_author_year_title_collections_and_quotes_the_item():
    asked = read_message("Is 10.1186/1752-2897-4-1 already in my library?")
    found = sort_out(asked, [DATTA], searched=5)
    chunk = EvidenceChunk(
        chunk_id="c1",
        item_key="DVT2PAR1",
        title=DATTA.title,
        section="Abstract",
        kind="text",
        text="Abstract\nDeep venous thrombosis prophylaxis is essential to the appropriate "
        "management of multisystem trauma patients. Without thromboprophylaxis, the rate "
        "of venous thrombosis is substantial.",
    )
    other = chunk.model_copy(update={"chunk_id": "c0", "item_key": "OTHER234"})
    text = "".join(item_answer(asked, found, [record_chunk(DATTA), other, chunk]))
    assert text.startswith(
        "Yes — Datta et al. (2010), *Complications related to deep venous thrombosis "
        "prophylaxis in trauma* is in your library, in the collections Trauma, Trauma/Reviews [1]."
    )
    assert (
        "- Deep venous thrombosis prophylaxis is essential to the appropriate management of multisystem "
        "trauma patients [3]."
    ) in text  # its own chunk, as numbered in this turn's evidence
    assert "Without thromboprophylaxis" not in text  # a membership answer quotes one sentence


def test_a_long_abstract_is_quoted_from_its_opening_passage_whatever_the_ranking():
    asked = read_message("Is 10.1186/1752-2897-4-1 already in my library?")
    found = sort_out(asked, [DATTA], searched=5)

    def part(n: int, text: str, position: int | None) -> EvidenceChunk:
        return EvidenceChunk(
            chunk_id=f"a{n}", item_key="DVT2PAR1", kind="abstract", role="abstract", text=text, position=position
        )

    later = part(2, "Moreover, filters were retrieved in most of the patients who received them.", 1)
    opening = part(1, "Deep venous thrombosis prophylaxis is essential in multisystem trauma.", 0)
    text = "".join(item_answer(asked, found, [record_chunk(DATTA), later, opening]))  # ranked second
    assert "- Deep venous thrombosis prophylaxis is essential in multisystem trauma [3]." in text
    assert "Moreover" not in text
    # from a retrieval that does not say where its passages stand: the first ranked, as before
    unplaced = [p.model_copy(update={"position": None}) for p in (later, opening)]
    assert "Moreover, filters" in "".join(item_answer(asked, found, [record_chunk(DATTA), *unplaced]))


def test_an_item_without_indexed_text_is_named_and_not_quoted():
    asked = read_message("10.1186/1752-2897-4-1")
    group_item = DATTA.model_copy(update={"library_id": "group-12", "library_name": "Lab group", "collections": []})
    text = "".join(item_answer(asked, sort_out(asked, [group_item], searched=5), [record_chunk(group_item)]))
    assert text == (
        "Datta et al. (2010), *Complications related to deep venous thrombosis prophylaxis in trauma* "
        "is in your group library Lab group [1]. None of its text is indexed (no PDF or note of it has "
        "been read), so I cannot quote it."
    )


def test_an_items_library_record_is_evidence_that_names_it_whole():
    record = record_chunk(DATTA)
    assert (record.item_key, record.library_id, record.kind, record.section) == (
        "DVT2PAR1",
        "user",
        "record",
        "Library record",
    )
    assert record.text == (
        "Indraneel Datta; Chad Ball; Lucas Rudmik (2010). Complications related to deep venous "
        "thrombosis prophylaxis in trauma. DOI 10.1186/1752-2897-4-1. Library: My Library. "
        "Collections: Trauma, Trauma/Reviews."
    )


def test_named_items_are_written_back_recognisably():
    assert [
        Named(k, v).shown()
        for k, v in [("doi", "10.1/x"), ("arxiv", "2203.00130"), ("pmid", "1"), ("title", "A title")]
    ] == ["DOI 10.1/x", "arXiv:2203.00130", "PMID 1", "“A title”"]


# --- long messages ---------------------------------------------------------------------------


def test_a_short_message_is_searched_as_it_is():
    assert search_text("  What   was the  sample size? ") == search_text("What was the sample size?")
    assert search_text("What was the sample size?").question == "What was the sample size?"
    assert search_text("What was the sample size?").note is None


@pytest.mark.parametrize(
    "message, question",
    [
        ("Name the databases searched in the DVT review.", "What are the databases searched in the DVT review?"),
        ("List the complications of IVC filters", "What are the complications of IVC filters?"),
        ("Could you list the authors of the Kamuzu study?", "What are the authors of the Kamuzu study?"),
        ("Tell me which residues 33RE hydrogen-bonds with.", "Which residues 33RE hydrogen-bonds with?"),
        ("Explain why N-selective inhibitors could be useful.", "Why N-selective inhibitors could be useful?"),
        # the papers of the library on a topic: one point from each (`Ask.listing`)
        ("List my papers on DVT prophylaxis.", "Which papers on DVT prophylaxis?"),
        ("Show me all the studies about hexagonal boron nitride", "Which studies about hexagonal boron nitride?"),
        # what is asked as a whole, and what asks for no one thing, as they are
        ("Tell me about the Paper Plain paper.", "Tell me about the Paper Plain paper."),
        ("Give me a summary of the Esmann review.", "Give me a summary of the Esmann review."),
        ("Explain the results.", "Explain the results."),
    ],
)
def test_a_request_is_answered_as_the_question_it_asks(message, question):
    """ "Name the databases searched in the DVT review." was refused where "Which databases were
    searched ...?" was answered: the answer writer reads what is asked from a question's words."""
    search = search_text(message)
    assert search.question == question and search.text == message.strip()
    assert read_question(search.question).listing is question.startswith(("Which papers", "Which studies"))


def test_a_request_for_the_authors_still_asks_for_the_library_record():
    from zocrates_gateway.domain.lookup import record_fields

    for message in ("List the authors of the Kamuzu study.", "Name the authors of the Paper Plain paper"):
        assert record_fields(search_text(message).question) == ["authors"], message


def test_a_named_request_is_answered_as_its_question_is():
    question = search_text("Name the databases searched in the DVT review.").question
    evidence = [
        evidence_chunk(
            1,
            "All scientific publications discussing the use of biochemical, mechanical, and IVC filter prophylaxis "
            "for the prevention of DVT after trauma were identified using PubMed, EMBASE, and Medline.",
            "Methods",
        ),
        evidence_chunk(2, "A systematic review was completed using PRISMA guidelines on DVT prophylaxis.", "Abstract"),
    ]
    points = choose_points(question, scored(question, evidence))
    assert points and "PubMed" in points[0].text


def test_a_long_message_is_searched_with_its_question_first_within_the_cap():
    context = " ".join(f"Sentence {n} of pasted notes about heparin dosing in trauma wards." for n in range(800))
    message = f"{context} Which complications does deep venous thrombosis prophylaxis cause? Thanks a lot."
    assert len(message) > 32_000 // 2
    search = search_text(message)
    assert len(search.text) <= MAX_QUERY_CHARS
    assert search.text.startswith("Which complications does deep venous thrombosis prophylaxis cause? Sentence 0 of")
    assert message.find(search.text.split("cause? ", 1)[1]) == 0  # then the message's start, uncut words
    assert search.note.startswith(
        f"Your message was long ({len(message):,} characters), so I searched your "
        "library with its question and the first "
    )
    assert search.question == "Which complications does deep venous thrombosis prophylaxis cause?"


def test_a_long_message_without_sentences_is_cut_on_a_word_boundary():
    message = " ".join(["thrombosis"] * 5000)
    search = search_text(message)
    assert len(search.text) <= MAX_QUERY_CHARS and set(search.text.split()) == {"thrombosis"}
    assert "its last sentence" in search.note


def test_clip_never_cuts_a_word():
    assert clip("hello wonderful world", 12) == "hello"
    assert clip("hello wonderful world", 12, keep="end") == "world"
    assert clip("hello world", 11) == "hello world"


@pytest.mark.connected
async def test_a_quoted_phrase_that_is_no_title_is_looked_up_then_searched(system):
    """The fake library finds no such title; the turn goes on as an ordinary library turn."""
    events = await system.chat('What does "somatic mutation rate" mean in twins?')
    assert events[-1]["event"] == "done" and events[-1]["data"]["intent"] == "library"
    assert system.retrieval.calls == 1
