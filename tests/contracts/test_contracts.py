"""Contracts: exported schemas match the code, messages round-trip, versions are guarded."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from zocrates_contracts import (
    ALL_MESSAGES,
    REPLY_OF,
    DiscoveryRequested,
    Pages,
    RetrievalRequested,
    TurnRecord,
    TurnRequested,
    VerificationRequested,
)
from zocrates_contracts.export import SCHEMA_DIR, render, schemas


def test_exported_schemas_match_the_code():
    wanted = schemas()
    on_disk = {p.name for p in SCHEMA_DIR.glob("*.json")}
    assert on_disk == set(wanted), "run `make schemas` and commit libs/contracts/schemas/"
    for name, schema in wanted.items():
        assert (SCHEMA_DIR / name).read_text() == render(schema), (
            f"{name} drifted from the code: run `make schemas` and commit the diff"
        )


def test_every_message_names_its_subject_and_carries_the_turn_envelope():
    subjects = [m.SUBJECT for m in ALL_MESSAGES]
    assert all(s.startswith("zocrates.") for s in subjects)
    assert len(set(subjects)) == len(subjects)
    for model in ALL_MESSAGES:
        fields = model.model_fields
        for name in ("turn_id", "session_id", "user_id", "trace", "schema_version", "message_id"):
            assert name in fields, f"{model.__name__} lacks {name}"


def test_every_request_has_a_reply_class_with_an_error_field():
    for request_cls, reply_cls in REPLY_OF.items():
        assert "reply_to" in request_cls.model_fields
        assert "error" in reply_cls.model_fields


def test_a_newer_schema_version_is_refused_clearly():
    with pytest.raises(ValidationError, match="not readable by this build"):
        TurnRequested(turn_id="t", session_id="s", user_id="u", message="hi", intent="chat", schema_version=99)


def test_every_message_is_written_at_its_own_schema_version():
    for model in ALL_MESSAGES:
        assert model.model_fields["schema_version"].default == model.SCHEMA_VERSION, model.__name__


def test_a_version_1_verification_request_reads_as_pairs_not_quoted():
    pair = {"chunk_index": 1, "occurrence": 1, "claim": "Rates rose.", "source_text": "Rates rose."}
    v1 = {"turn_id": "t", "session_id": "s", "user_id": "u", "reply_to": "r", "schema_version": 1, "pairs": [pair]}
    assert VerificationRequested.model_validate(v1).pairs[0].quoted is False
    v2 = VerificationRequested(**{**v1, "schema_version": 2, "pairs": [{**pair, "quoted": True}]})
    assert VerificationRequested.model_validate_json(v2.model_dump_json()).pairs[0].quoted is True
    with pytest.raises(ValidationError, match="schema_version 4"):
        VerificationRequested.model_validate({**v1, "schema_version": 4})


def test_a_joint_pair_names_where_each_passage_starts_and_a_version_3_reply_reads_as_not_joint():
    from zocrates_contracts import PairScore, VerificationCompleted, VerificationPair

    text = "Rates rose.\n\nFalls were rare."
    pair = VerificationPair(
        chunk_index=1,
        occurrence=1,
        claim="Rates rose; falls were rare.",
        source_text=text,
        joint=True,
        passage_starts=[0, 13],
    )
    request = VerificationRequested(turn_id="t", session_id="s", user_id="u", reply_to="r", pairs=[pair])
    assert request.schema_version == 3
    assert VerificationRequested.model_validate_json(request.model_dump_json()).pairs[0] == pair
    for starts, joint in (([0], True), ([3, 13], True), ([0, 13, 13], True), ([0, 40], True), ([0, 13], False)):
        with pytest.raises(ValidationError, match="passage_starts|joint pair"):
            VerificationPair(
                chunk_index=1, occurrence=1, claim="c", source_text=text, joint=joint, passage_starts=starts
            )
    envelope = {"turn_id": "t", "session_id": "s", "user_id": "u"}
    score = {"chunk_index": 1, "occurrence": 1, "probability": 0.7}
    old = VerificationCompleted.model_validate({**envelope, "schema_version": 3, "scores": [score]})
    assert old.scores[0].joint is False
    new = VerificationCompleted(**envelope, scores=[PairScore(**score, joint=True)])
    assert new.schema_version == 5 and VerificationCompleted.model_validate_json(new.model_dump_json()) == new


def test_a_version_4_score_reads_with_no_unprinted_numbers_and_a_version_5_one_keeps_them():
    from zocrates_contracts import PairScore, VerificationCompleted
    from zocrates_contracts.messages import MAX_UNPRINTED_NUMBERS

    envelope = {"turn_id": "t", "session_id": "s", "user_id": "u"}
    score = {"chunk_index": 1, "occurrence": 1, "probability": 0.2}
    old = VerificationCompleted.model_validate({**envelope, "schema_version": 4, "scores": [score]})
    assert old.scores[0].unprinted_numbers == []
    new = VerificationCompleted(**envelope, scores=[PairScore(**score, unprinted_numbers=["35", "2.6"])])
    assert VerificationCompleted.model_validate_json(new.model_dump_json()).scores[0].unprinted_numbers == ["35", "2.6"]
    with pytest.raises(ValidationError):
        PairScore(**score, unprinted_numbers=[str(n) for n in range(MAX_UNPRINTED_NUMBERS + 1)])


def test_a_version_1_discovery_request_still_decodes_and_a_version_2_one_is_refused_by_a_v1_reader():
    v1 = {"turn_id": "t", "session_id": "s", "user_id": "u", "queries": ["q"], "reply_to": "r", "schema_version": 1}
    assert DiscoveryRequested.model_validate(v1).contact_email is None
    v2 = DiscoveryRequested(
        turn_id="t", session_id="s", user_id="u", queries=["q"], reply_to="r", contact_email=" ada@lab.org "
    )
    assert (v2.schema_version, v2.contact_email, v2.from_year) == (3, "ada@lab.org", None)
    assert DiscoveryRequested.model_validate_json(v2.model_dump_json()) == v2
    with pytest.raises(ValidationError, match="contact_email"):
        DiscoveryRequested(
            turn_id="t", session_id="s", user_id="u", queries=["q"], reply_to="r", contact_email="not an email"
        )
    v3 = DiscoveryRequested(turn_id="t", session_id="s", user_id="u", queries=["q"], reply_to="r", from_year=2024)
    assert DiscoveryRequested.model_validate_json(v3.model_dump_json()).from_year == 2024


def test_unknown_fields_are_rejected():
    with pytest.raises(ValidationError):
        TurnRequested.model_validate(
            {"turn_id": "t", "session_id": "s", "user_id": "u", "message": "hi", "intent": "chat", "surprise": 1}
        )


def test_ids_are_subject_safe():
    with pytest.raises(ValidationError):
        TurnRequested(turn_id="a.b", session_id="s", user_id="u", message="hi", intent="chat")
    with pytest.raises(ValidationError):
        TurnRequested(turn_id="t", session_id="s", user_id="u>", message="hi", intent="chat")


ids = st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True)


@pytest.mark.fuzz
@settings(max_examples=100, deadline=None)
@given(turn=ids, session=ids, user=ids, query=st.text(min_size=1, max_size=200), k=st.integers(1, 100))
def test_requests_round_trip_through_json(turn, session, user, query, k):
    message = RetrievalRequested(
        turn_id=turn, session_id=session, user_id=user, query=query, top_k=k, reply_to="zocrates.reply.x.retrieval"
    )
    again = RetrievalRequested.model_validate_json(message.model_dump_json())
    assert again == message
    assert json.loads(again.model_dump_json())["query"] == query


def test_reply_ids_are_derived_so_redelivery_is_deduplicated():
    request = RetrievalRequested(turn_id="t", session_id="s", user_id="u", query="q", reply_to="r")
    assert request.reply_fields()["message_id"] == request.reply_fields()["message_id"]
    assert request.reply_fields()["message_id"] != request.message_id


TURN = {"turn_id": "t", "session_id": "s", "intent": "library", "question": "q"}


def test_a_version_2_turn_record_reads_as_a_turn_without_an_error():
    stored = {**TURN, "schema_version": 2, "prose": "Rates rose [1].", "text": "Rates rose [1]."}
    record = TurnRecord.model_validate(stored)
    assert record.schema_version == 2 and record.error is None
    failed = TurnRecord(**TURN, error={"code": "timeout", "message": "The retrieval service did not answer."})
    assert TurnRecord.model_validate_json(failed.model_dump_json()).error.code == "timeout"


def test_a_version_3_turn_record_reads_with_no_spans_and_no_quality():
    occurrence = {"occurrence": 1, "claim": "Rates rose.", "probability": 0.9, "verdict": "KEPT"}
    citation = {"index": 1, "chunk_id": "c1", "item_key": "ABCD1234", "quote": "Rates rose by 5%.", "survives": True}
    stored = {
        **TURN,
        "schema_version": 3,
        "prose": "Rates rose [1].",
        "citations": [citation | {"occurrences": [occurrence]}],
    }
    record = TurnRecord.model_validate_json(json.dumps(stored))
    assert record.schema_version == 3 and record.quality is None
    assert record.citations[0].occurrences[0].spans == []


def test_a_turn_record_keeps_the_scope_it_was_asked_in_and_an_older_one_reads_as_the_whole_library():
    from zocrates_contracts import TagScope

    older = TurnRecord.model_validate_json(json.dumps({**TURN, "schema_version": 3, "prose": "x"}))
    assert (older.scope, older.scope_label) == (None, "")
    scoped = TurnRecord(
        **TURN, prose="x", scope={"kind": "tag", "library_id": "user", "tag": "review"}, scope_label="Tag: review"
    )
    again = TurnRecord.model_validate_json(scoped.model_dump_json())
    assert again.scope == TagScope(library_id="user", tag="review") and again.scope_label == "Tag: review"
    with pytest.raises(ValidationError, match="scope"):
        TurnRecord(**TURN, scope={"kind": "everything"})


def test_a_turn_records_spans_and_quality_survive_a_round_trip_with_recall_and_precision():
    from zocrates_contracts import CitationQuality, TextSpan

    quality = CitationQuality(claims=4, supported=2, uncited=1, unverified=0, citations=3, supporting=2)
    assert (quality.recall, quality.precision) == (0.5, 2 / 3)
    dumped = json.loads(TurnRecord(**TURN, prose="x", quality=quality).model_dump_json())
    assert dumped["quality"]["recall"] == 0.5 and dumped["schema_version"] == TurnRecord.SCHEMA_VERSION
    assert TurnRecord.model_validate(dumped).quality == quality
    assert CitationQuality().recall is None and CitationQuality().precision is None
    with pytest.raises(ValidationError, match="ends after it starts"):
        TextSpan(start=5, end=5)


def test_a_version_5_turn_records_occurrences_read_without_joint_support():
    occurrence = {"occurrence": 1, "claim": "Rates rose.", "probability": 0.4, "verdict": "DEMOTED", "compound": True}
    stored = {
        **TURN,
        "schema_version": 5,
        "prose": "Rates rose [1, 2].",
        "citations": [CITATION | {"occurrences": [occurrence]}],
    }
    record = TurnRecord.model_validate_json(json.dumps(stored))
    assert record.schema_version == 5 and record.citations[0].occurrences[0].joint_support is None
    joint = TurnRecord(**TURN, prose="x", citations=[CITATION | {"occurrences": [occurrence | {"joint_support": 0.8}]}])
    assert TurnRecord.model_validate_json(joint.model_dump_json()).citations[0].occurrences[0].joint_support == 0.8


def test_version_3_and_4_turn_records_read_as_turns_without_unsupported_claims():
    for version in (3, 4):
        stored = {**TURN, "schema_version": version, "prose": "Rates rose.", "coordinator_view": "x"}
        record = TurnRecord.model_validate_json(json.dumps(stored))
        assert (record.schema_version, record.unsupported, record.coordinator_view) == (version, [], "x")


def test_an_unsupported_claim_lies_within_the_prose_in_order():
    claim = {"start": 0, "at": 10, "end": 11, "claim": "Rates rose.", "probability": 0.42}
    claim["occurrences"] = [{"index": 1, "occurrence": 1}]
    record = TurnRecord(**TURN, prose="Rates rose.", unsupported=[claim])
    assert TurnRecord.model_validate_json(record.model_dump_json()) == record
    with pytest.raises(ValidationError, match="past the prose"):
        TurnRecord(**TURN, prose="Rates.", unsupported=[claim])
    with pytest.raises(ValidationError, match="start <= at <= end"):
        TurnRecord(**TURN, prose="Rates rose.", unsupported=[claim | {"at": 11, "end": 10}])
    with pytest.raises(ValidationError):
        TurnRecord(**TURN, prose="Rates rose.", unsupported=[claim | {"occurrences": []}])


def test_a_turn_record_carries_prose_and_sources_and_text_is_their_concatenation():
    record = TurnRecord(**TURN, prose="Rates rose [1].\n\n", sources="# Cited Sources\n- x")
    assert record.schema_version == TurnRecord.SCHEMA_VERSION == 7 and record.error is None
    assert record.text == "Rates rose [1].\n\n# Cited Sources\n- x"
    assert TurnRecord.model_validate_json(record.model_dump_json()) == record
    with pytest.raises(ValidationError, match="text must be exactly prose \\+ sources"):
        TurnRecord(**TURN, text="something else", prose="Rates rose [1].")


def test_a_turn_record_stored_before_version_2_still_decodes_as_version_1():
    old = TurnRecord.model_validate({**TURN, "text": "Rates rose [1].\n\n# Cited Sources\n- x"})
    assert (old.schema_version, old.prose, old.sources) == (1, "", "")
    with pytest.raises(ValidationError, match="not readable by this build of TurnRecord"):
        TurnRecord.model_validate({**TURN, "prose": "x", "schema_version": 8})


CITATION = {"index": 1, "chunk_id": "c1", "item_key": "ITEMAAAA", "quote": "Rates rose.", "survives": True}
CHUNK = {"chunk_id": "c1", "item_key": "ITEMAAAA", "text": "Rates rose."}


def test_a_version_3_turn_records_citations_read_as_citations_without_pages():
    stored = {**TURN, "schema_version": 3, "prose": "Rates rose [1].", "citations": [CITATION]}
    assert TurnRecord.model_validate_json(json.dumps(stored)).citations[0].pages is None
    pages = {"index": 3, "label": "1236", "last_index": 4, "last_label": "1237"}
    record = TurnRecord(**TURN, prose="Rates rose [1].", citations=[{**CITATION, "pages": pages}])
    again = TurnRecord.model_validate_json(record.model_dump_json())
    assert again.citations[0].pages == Pages(**pages) and again.citations[0].pages.printed


def test_a_version_3_evidence_reply_reads_as_chunks_without_pages():
    from zocrates_contracts import EvidenceRetrieved

    envelope = {"turn_id": "t", "session_id": "s", "user_id": "u"}
    old = EvidenceRetrieved.model_validate({**envelope, "schema_version": 3, "chunks": [CHUNK]})
    assert old.chunks[0].pages is None
    new = EvidenceRetrieved(**envelope, chunks=[{**CHUNK, "pages": {"index": 0, "label": "1", "printed": False}}])
    assert new.schema_version == 6 and EvidenceRetrieved.model_validate_json(new.model_dump_json()) == new
    with pytest.raises(ValidationError, match="index"):
        Pages(index=-1, label="1")  # an index counts from 0


def test_a_version_4_evidence_reply_reads_as_chunks_that_do_not_say_where_they_stand():
    from zocrates_contracts import EvidenceRetrieved

    envelope = {"turn_id": "t", "session_id": "s", "user_id": "u"}
    old = EvidenceRetrieved.model_validate({**envelope, "schema_version": 4, "chunks": [CHUNK]})
    assert old.chunks[0].position is None
    new = EvidenceRetrieved(**envelope, chunks=[{**CHUNK, "position": 2}])
    assert EvidenceRetrieved.model_validate_json(new.model_dump_json()).chunks[0].position == 2
    with pytest.raises(ValidationError, match="position"):
        EvidenceRetrieved(**envelope, chunks=[{**CHUNK, "position": -1}])


def test_a_version_6_evidence_reply_may_hold_a_list_of_terms_and_an_older_reader_refuses_it():
    from zocrates_contracts import EvidenceRetrieved

    envelope = {"turn_id": "t", "session_id": "s", "user_id": "u"}
    units = [{"kind": "term_list", "start": 0, "end": 5}]
    new = EvidenceRetrieved(**envelope, chunks=[{**CHUNK, "units": units}])
    assert EvidenceRetrieved.model_validate_json(new.model_dump_json()).chunks[0].units[0].kind == "term_list"
    with pytest.raises(ValidationError, match="schema_version"):
        EvidenceRetrieved.model_validate({**envelope, "schema_version": 7, "chunks": [CHUNK]})


def test_turn_candidates_are_typed_and_a_version_1_records_dicts_decode_as_candidates():
    from zocrates_contracts import Candidate

    stored = {
        **TURN,
        "intent": "discovery",
        "text": "A new paper [1].",
        "candidates": [
            {
                "candidate_id": "W1",
                "title": "A new paper",
                "authors": ["Ada Lovelace"],
                "year": 2024,
                "pdf_url": "https://example.org/a.pdf",
            }
        ],
    }
    old = TurnRecord.model_validate_json(json.dumps(stored))
    assert old.candidates == [
        Candidate(
            candidate_id="W1",
            title="A new paper",
            authors=["Ada Lovelace"],
            year=2024,
            pdf_url="https://example.org/a.pdf",
        )
    ]
    new = TurnRecord(**{**TURN, "intent": "discovery"}, prose="A new paper [1].", candidates=old.candidates)
    assert json.loads(new.model_dump_json())["candidates"][0] == json.loads(old.candidates[0].model_dump_json())
    with pytest.raises(ValidationError, match="candidate_id"):
        TurnRecord(**TURN, prose="x", candidates=[{"title": "no id"}])
