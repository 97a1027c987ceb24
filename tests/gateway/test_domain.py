"""The gateway's plain domain functions: intent routing and the extractive synthesizer."""

from __future__ import annotations

import pytest

from harness.evidence import scored, with_units
from harness.system import CHUNKS
from zocrates_citations import extract_claim_occurrences, resolve_citations_and_references
from zocrates_gateway.domain.intent import route_intent
from zocrates_gateway.domain.synthesis import NOT_FOUND, choose_points, extractive_answer


@pytest.mark.parametrize(
    "message",
    [
        "hello",
        "Hi!",
        "thanks",
        "Thank you",
        "good morning",
        "who are you?",
        "what can you do",
        "bye",
    ],
)
def test_small_talk_is_chat(message):
    assert route_intent(message) == "chat"


@pytest.mark.parametrize(
    "message",
    [
        "find new papers about CRISPR off-target effects",
        "Search online for recent literature on protein folding",
        "recommend articles on retrieval augmented generation",
        "search online for 10.1038/s41586-021-03819-2",
        "Can you find recent papers on graphene?",
        "Thanks. Now find recent papers on hBN",
        "I'm looking for papers on boron nitride",
    ],
)
def test_requests_for_new_literature_go_to_discovery(message):
    assert route_intent(message) == "discovery"


@pytest.mark.parametrize(
    "message",
    [
        "10.1038/s41586-021-03819-2",
        "what is https://doi.org/10.1000/xyz123 about?",
        "arXiv:2203.00130",
        "look at 2203.00130v1 please",
        "hep-th/9901001",
        "Is 10.1186/1752-2897-4-1 already in my library?",
    ],
)
def test_identifiers_are_looked_up_in_the_library_first(message):
    """Issue 14: a pasted identifier is a library turn; it goes online only when not found there."""
    assert route_intent(message) == "library"


@pytest.mark.parametrize(
    "message",
    [
        "What was the somatic mutation rate estimated from twins?",
        "hello, what does my library say about attention mechanisms?",
        "Which papers in my library discuss dropout?",
        "find the papers in my library about transformers",
        "Summarise the methods of the twin study",
        # the verb tells what a study's subjects or authors did; nothing is asked for
        "How long did each participant get to read a paper in the Paper Plain usability study?",
        "Did Datta et al. search other databases for studies?",
    ],
)
def test_questions_go_to_the_library(message):
    assert route_intent(message) == "library"


def test_the_sentence_sharing_the_question_words_is_chosen():
    chunk = with_units(
        CHUNKS[0],
        "Twins are interesting to many people. The somatic mutation rate was estimated at "
        "1.2e-8 per base pair. Other things were measured as well.",
    )
    points = choose_points("what is the somatic mutation rate", scored("what is the somatic mutation rate", [chunk]))
    assert [p.text for p in points] == ["The somatic mutation rate was estimated at 1.2e-8 per base pair."]


def test_extractive_answer_cites_only_real_chunks_and_resolves_cleanly():
    question = "How was the somatic mutation rate of monozygotic twins estimated?"
    text = "".join(extractive_answer(question, scored(question, CHUNKS)).pieces())
    occurrences = extract_claim_occurrences(text, len(CHUNKS))
    assert occurrences and all(1 <= o.chunk_index <= len(CHUNKS) for o in occurrences)
    resolution = resolve_citations_and_references(text, CHUNKS)
    assert resolution.citations
    # each cited claim is a verbatim sentence of its passage
    for occurrence in occurrences:
        passage = " ".join(CHUNKS[occurrence.chunk_index - 1].text.split())
        assert occurrence.claim.rstrip(".")[:40] in passage


def test_extractive_answer_without_evidence_says_so():
    assert "".join(extractive_answer("anything", []).pieces()) == NOT_FOUND


@pytest.mark.parametrize(
    ("message", "topic", "from_year"),
    [
        ("find recent papers on retrieval augmented generation", "retrieval augmented generation", 2024),
        (
            "Can you find new papers about CRISPR off-target effects published since 2021?",
            "CRISPR off-target effects",
            2021,
        ),
        ("search for literature on heparin in trauma from the last 5 years", "heparin in trauma", 2022),
        ("Recommend some articles on sleep and memory", "sleep and memory", None),
        ("Find papers about large language models this year", "large language models", 2026),
        ("look for the latest reviews about ACE inhibitors", "ACE inhibitors", 2024),
        ("find papers published after 2019 on twin studies", "twin studies", 2020),
    ],
)
def test_a_request_for_literature_is_read_as_its_topic_and_how_recent(message, topic, from_year):
    from zocrates_gateway.domain.intent import read_literature_request

    asked = read_literature_request(message, year=2026)
    assert (asked.queries, asked.from_year) == ([topic], from_year)


@pytest.mark.parametrize(
    ("message", "start"),
    [
        ("thanks!", "You're welcome"),
        ("Thank you", "You're welcome"),
        ("hello", "Hello!"),
        ("bye", "Goodbye"),
        ("what can you do?", "I'm Zocrates"),
    ],
)
def test_small_talk_gets_a_fitting_reply(message, start):
    from zocrates_gateway.domain.intent import chat_reply

    assert chat_reply(message).startswith(start)


def test_each_role_inherits_the_default_model_and_its_own_url_keeps_its_own_key(tmp_path):
    from zocrates_gateway.config import GatewaySettings

    s = GatewaySettings(
        _env_file=None,
        data_dir=tmp_path,
        llm_url="https://a.example/v1",
        llm_api_key="key-a",
        llm_model="big",
        llm_coordinator_model="small",
        llm_online_search_url="https://b.example/v1",
    )
    assert (s.llm_for("synthesizer").model, s.llm_for("synthesizer").api_key.get_secret_value()) == ("big", "key-a")
    assert (s.llm_for("coordinator").model, s.llm_for("coordinator").url) == ("small", "https://a.example/v1")
    search = s.llm_for("online_search")
    assert (search.url, search.model, search.api_key) == ("https://b.example/v1", "big", None)
    assert GatewaySettings(_env_file=None, data_dir=tmp_path).llm_for("synthesizer") is None


@pytest.mark.parametrize(
    "question, fields",
    [
        ("Who are the authors of the Paper Plain paper?", ["authors"]),
        ("Who wrote the review on DVT prophylaxis?", ["authors"]),
        ("List the authors of the Kamuzu study.", ["authors"]),
        ("Did the authors of the DVT prophylaxis review declare competing interests?", []),
        ("What did the authors of the Malawi study recommend?", []),
        ("When was the Datta review published?", ["year"]),
        ("In which journal was the Kamuzu study published?", ["publication"]),
        # what the study did, not where or when the paper appeared
        ("Where was the Kamuzu study conducted?", []),
        ("When was the fieldwork done?", []),
        ("Who funded the Kamuzu study?", []),
    ],
)
def test_questions_about_a_papers_record_are_told_from_questions_about_its_content(question, fields):
    from zocrates_gateway.domain.lookup import record_fields

    assert record_fields(question) == fields
