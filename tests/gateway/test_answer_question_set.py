"""The labelled questions of `bench answers` (bench/data/answers/) and the bench's scoring.

The set is data a typo can break: every expected answer of a prose, table, paraphrase or
follow-up question must be copyable from its paper's own text, every identifier question must
name an item the bench's library holds, a follow-up must share no content word with the passage
that answers it, and the held-out third must be the one the seed draws.
"""

import json
import random
import re
from collections import Counter

import pymupdf
import pytest

from bench.bench_answers import KINDS, QUESTIONS_DIR, UNANSWERABLE, first_point, holders, load_questions, occurs, score
from harness.answer_library import PAPERS, build_answer_library
from zocrates_gateway.domain.synthesis import content_words

MIN_PER_KIND = {
    **{"prose": 14, "table": 12, "paraphrase": 12, "unanswerable": 10, "identifier": 8, "follow-up": 15},
    **{"summary": 12, "named": 12, "open-unanswerable": 12},
}
FIELDS = {"id", "question", "kind", "expected", "item", "note"}
FOLLOW_UP_FIELDS = FIELDS | {"first", "new_topic", "pattern", "answer_text"}
FOLLOW_UP_PATTERNS = {"pronoun", "demonstrative", "ellipsis", "no content word", "new topic"}
SPLIT_SEED = 14
DOI_RE = re.compile(r"10\.\d{4,9}/[^\s'\"?]+")
ARXIV_RE = re.compile(r"\b\d{4}\.\d{4,5}\b")


@pytest.fixture(scope="module")
def questions() -> dict[str, list[dict]]:
    return {split: load_questions(split) for split in ("design", "heldout")}


@pytest.fixture
def answer_library(tmp_path, fixtures_dir):
    return build_answer_library(tmp_path / "Zotero", fixtures_dir)


def test_both_files_parse_with_every_field_and_unique_ids(questions):
    every = [q for qs in questions.values() for q in qs]
    assert len(every) >= 60
    assert len({q["id"] for q in every}) == len(every)
    for q in every:
        assert set(q) == (FOLLOW_UP_FIELDS if q["kind"] == "follow-up" else FIELDS), q["id"]
        assert q["kind"] in KINDS and q["question"].strip() and q["note"].strip(), q["id"]
        if q["kind"] in UNANSWERABLE:
            assert q["expected"] == [] and q["item"] is None, q["id"]
        else:
            assert q["expected"] and all(isinstance(e, str) and e.strip() for e in q["expected"]), q["id"]
            assert isinstance(q["item"], str), q["id"]
    # the files are JSON lines, one question each
    for split in questions:
        lines = (QUESTIONS_DIR / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        assert all(json.loads(line)["id"] for line in lines)


def test_every_kind_has_enough_questions(questions):
    counts = Counter(q["kind"] for qs in questions.values() for q in qs)
    assert all(counts[kind] >= n for kind, n in MIN_PER_KIND.items()), counts


def test_the_held_out_third_is_drawn_per_kind_by_the_seed(questions):
    every = [q for qs in questions.values() for q in qs]
    rng = random.Random(SPLIT_SEED)
    drawn = set()
    for kind in KINDS:
        ids = sorted(q["id"] for q in every if q["kind"] == kind)
        drawn.update(rng.sample(ids, round(len(ids) / 3)))
    assert {q["id"] for q in questions["heldout"]} == drawn
    for kind in KINDS:
        held = sum(q["kind"] == kind for q in questions["heldout"])
        total = sum(q["kind"] == kind for q in every)
        assert held == round(total / 3) and held >= 1


def pdf_text(path) -> str:
    with pymupdf.open(path) as doc:
        return "\n".join(page.get_text() for page in doc)


def test_every_expected_answer_is_copyable_from_its_paper(questions, fixtures_dir):
    texts = {p.name: pdf_text(fixtures_dir / "pdfs" / p.pdf) for p in PAPERS}
    for q in (q for qs in questions.values() for q in qs):
        if q["kind"] in ("prose", "table", "paraphrase", "follow-up"):
            assert q["item"] in texts, f"{q['id']}: {q['item']} is no paper with a PDF"
            missing = [e for e in q["expected"] if not occurs(e, texts[q["item"]])]
            assert not missing, f"{q['id']}: {missing} not in {q['item']}'s text"


def test_a_paper_asked_about_by_name_is_named_and_holds_the_answer(questions, answer_library, fixtures_dir):
    """A summary or named-paper question names its paper (a creator's last name, two content words
    of its title, or the name before its title's colon) and its expected strings are in that paper: its PDF's text, or the
    Zotero abstract of an item that has no file."""
    lib = answer_library
    texts = {p.name: pdf_text(fixtures_dir / "pdfs" / p.pdf) for p in PAPERS}
    asked = [q for qs in questions.values() for q in qs if q["kind"] in ("summary", "named")]
    for q in asked:
        text = texts.get(q["item"]) or lib.abstracts.get(q["item"])
        assert text, f"{q['id']}: {q['item']} has neither a PDF nor an abstract"
        missing = [e for e in q["expected"] if not occurs(e, text)]
        assert not missing, f"{q['id']}: {missing} not in {q['item']}"
        by_author = any(re.search(rf"\b{re.escape(last)}\b", q["question"]) for last in lib.creators[q["item"]])
        title = lib.titles[q["item"]]
        by_title = len(content_words(q["question"]) & content_words(title)) >= 2 or (
            ":" in title and title.split(":")[0].lower() in q["question"].lower()
        )
        assert by_author or by_title, f"{q['id']} does not name {q['item']}"
    items = Counter(q["item"] for q in asked)
    assert len(items) >= 8 and max(items.values()) <= 5, items


def test_a_follow_up_needs_its_first_question_and_shares_no_word_with_its_answer(questions, fixtures_dir):
    """The second question of a follow-up only makes sense after the first: its answer is a
    sentence or table row of the item's PDF (`answer_text`, holding an expected string) with which
    it shares no content word, so that only the previous turn can lead a search to it."""
    texts = {p.name: pdf_text(fixtures_dir / "pdfs" / p.pdf) for p in PAPERS}
    follow_ups = [q for qs in questions.values() for q in qs if q["kind"] == "follow-up"]
    for q in follow_ups:
        assert q["first"].strip() and q["first"] != q["question"], q["id"]
        assert occurs(q["answer_text"], texts[q["item"]]), f"{q['id']}: answer_text not in {q['item']}'s text"
        assert any(occurs(e, q["answer_text"]) for e in q["expected"]), f"{q['id']}: no expected string in answer_text"
        shared = content_words(q["question"]) & content_words(q["answer_text"])
        assert not shared, f"{q['id']} shares {shared} with its answer"
        assert q["pattern"] in FOLLOW_UP_PATTERNS, q["id"]
        assert q["new_topic"] is (q["pattern"] == "new topic"), q["id"]
    patterns = Counter(q["pattern"] for q in follow_ups)
    assert set(patterns) == FOLLOW_UP_PATTERNS and patterns["new topic"] >= 2, patterns
    # a question is asked once: no follow-up repeats a question of the set, first or second
    single = {q["question"] for qs in questions.values() for q in qs if q["kind"] != "follow-up"}
    assert not any(q["first"] in single or q["question"] in single for q in follow_ups)


def test_identifier_questions_name_an_item_of_the_library(questions, answer_library):
    lib = answer_library
    for q in (q for qs in questions.values() for q in qs if q["kind"] == "identifier"):
        assert q["item"] in lib.keys, q["id"]
        metadata = " ".join([lib.titles[q["item"]], *lib.creators[q["item"]]])
        assert all(occurs(e, metadata) for e in q["expected"]), q["id"]
        assert not any(occurs(e, q["question"]) for e in q["expected"]), f"{q['id']} answers itself"
        named = DOI_RE.findall(q["question"]) or ARXIV_RE.findall(q["question"])
        if named:
            own = [i.lower().removeprefix("arxiv:") for i in lib.identifiers[q["item"]]]
            assert [n.lower() for n in named] == own[: len(named)], q["id"]
        else:  # an exact title
            assert lib.titles[q["item"]].lower() in q["question"].lower(), q["id"]


# --- the bench's scoring -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "expected, text, found",
    [
        ("2.2 Å", "solved at 2.2\n˚A in complex", True),
        ("26", "Y369F 404.4 26", True),
        ("26", "126 and 26.0 and 0.26", False),
        ("0.85", "10.85", False),
        ("50%", "rates exceed 50% [1-3]", True),
        ("fibrosis disorders", "treatment of ﬁbrosis disorders", True),
        ("appropriately utilized", "must be appro-\npriately utilized", True),
        ("N-domain", "the N-\ndomain", True),
        ("9–10", "T4, 6, 9-10, 12", True),
        ("low molecular weight heparin", "Low Molecular Weight Heparins", True),
        ("Moon", "Harmoon", False),
    ],
)
def test_expected_strings_are_matched_modulo_typesetting(expected, text, found):
    assert occurs(expected, text) is found


def done(text: str, cited: dict[int, str], refs: list[str] = ()) -> list[dict]:
    """The `done` event of a turn whose enriched text is `text` (TurnRecord version 2)."""
    from zocrates_citations import split_sources

    prose, sources = split_sources(text)
    return [
        {
            "event": "done",
            "data": {
                "intent": "library",
                "schema_version": 2,
                "text": text,
                "prose": prose,
                "sources": sources,
                "citations": [{"index": i, "item_key": key} for i, key in cited.items()],
                "references": {"cited": [{"item_key": k} for k in refs or cited.values()], "considered": []},
            },
        }
    ]


KEYS = {"douglas2014": "D8EQ865F", "datta2010": "MBS568Q5"}
TABLE_Q = {"id": "t", "kind": "table", "question": "PDB code?", "expected": ["4BXK"], "item": "douglas2014"}


def test_an_answer_is_attributed_by_the_citation_of_the_piece_holding_it():
    text = (
        "- The search model was 3NXQ [1].\n- Table 2: PDB code — 4BXK [2], and more [1].\n\n"
        "# Cited Sources\n- Douglas 4BXK"
    )
    right = score(TABLE_Q, done(text, {1: "MBS568Q5", 2: "D8EQ865F"}), 12.0, KEYS)
    assert right["correct"] and right["attributed"] and not right["refused"]
    wrong = score(TABLE_Q, done(text, {1: "D8EQ865F", 2: "MBS568Q5"}), 12.0, KEYS)
    assert wrong["correct"] and not wrong["attributed"]
    assert holders("4BXK", text.split("# Cited")[0]) == [[2]]


def test_the_first_point_is_the_first_line_citing_a_source():
    """Whether the best unit came first: the answer's introduction cites nothing; an identifier's
    "Yes — ..." line cites the item's record."""
    text = "Here is what your library says (quoted):\n\n- The search model was 3NXQ [1].\n- PDB code — 4BXK [2]."
    late = score(TABLE_Q, done(text, {1: "D8EQ865F", 2: "D8EQ865F"}), 12.0, KEYS)
    assert late["correct"] and not late["first_point"]
    early = score(
        TABLE_Q,
        done("From Douglas et al. (2014), in your library:\n\n- PDB code — 4BXK [1].", {1: "D8EQ865F"}),
        1.0,
        KEYS,
    )
    assert early["first_point"]
    assert first_point(
        "Yes — Moon et al. (2023), *Hexagonal* is in your library [1]. It opens:\n\n- h-BN [2]."
    ).startswith("Yes")


def test_the_source_list_is_not_the_answer_and_a_refusal_cites_nothing():
    refusal = "I could not find a passage in your library that addresses this question."
    only_sources = score(TABLE_Q, done(refusal + "\n\n# Cited Sources\n- 4BXK", {}, []), 5.0, KEYS)
    assert not only_sources["correct"] and only_sources["refused"]
    unanswerable = {"id": "u", "kind": "unanswerable", "question": "?", "expected": [], "item": None}
    assert score(unanswerable, done(refusal, {}, []), 5.0, KEYS)["correct"]
    cites_anyway = done(refusal + "\n\n# Cited Sources\n- Datta", {}, ["MBS568Q5"])
    assert not score(unanswerable, cites_anyway, 5.0, KEYS)["correct"]
    error = [{"event": "error", "data": {"code": "discovery_not_available", "message": "offline"}}]
    failed = score(unanswerable, error, 5.0, KEYS)
    assert not failed["correct"] and failed["error"].startswith("discovery_not_available")


def test_the_stream_is_read_as_a_client_reads_it():
    from bench.bench_answers import parse_sse

    stream = (
        ": ping\r\n\r\nid: 1\r\nevent: turn\r\ndata: {\"intent\": \"library\"}\r\n\r\n"
        "id: 2\nevent: done\ndata: {\"text\": \"a\",\ndata:  \"citations\": []}\n\n"
    )
    assert parse_sse(stream) == [
        {"event": "turn", "data": {"intent": "library"}},
        {"event": "done", "data": {"text": "a", "citations": []}},
    ]


def test_a_follow_up_is_asked_as_two_turns_of_one_session_and_only_the_second_is_scored():
    import httpx

    from bench.bench_answers import ask_question

    posted = []

    def chat(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        posted.append(body)
        first = "session_id" not in body
        text = "Table 2: PDB code — 4BXK [1]." if not first else "The search model was 3NXQ [1]."
        payload = done(text, {1: "D8EQ865F" if not first else "MBS568Q5"})[0]["data"]
        turn = {"turn_id": f"t{len(posted)}", "session_id": body.get("session_id", "s1"), "intent": "library"}
        stream = f"event: turn\ndata: {json.dumps(turn)}\n\nevent: done\ndata: {json.dumps(payload)}\n\n"
        return httpx.Response(200, text=stream, headers={"content-type": "text/event-stream"})

    follow_up = TABLE_Q | {"kind": "follow-up", "first": "Which search model?", "question": "And its code?"}
    with httpx.Client(transport=httpx.MockTransport(chat)) as client:
        result = ask_question(client, "http://gateway", "token", follow_up, KEYS)
    assert posted == [{"message": "Which search model?"}, {"message": "And its code?", "session_id": "s1"}]
    assert result["correct"] and result["attributed"] and result["first"] == "Which search model?"
    assert result["first_cited"] == ["datta2010"]
    with httpx.Client(transport=httpx.MockTransport(chat)) as client:
        single = ask_question(client, "http://gateway", "token", TABLE_Q, KEYS)
    assert posted[-1] == {"message": "PDB code?"} and not single["correct"] and "first" not in single
