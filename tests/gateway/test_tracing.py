"""One turn is one trace across the gateway and the services it calls over NATS."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness.system import running_system
from zocrates_contracts import TurnRecord
from zocrates_gateway.telemetry import verdict_lines
from zocrates_runtime.tracing import configure_tracing

pytestmark = pytest.mark.connected


async def test_a_turn_is_one_trace_across_services(system):
    exporter = InMemorySpanExporter()
    configure_tracing("test").add_span_processor(SimpleSpanProcessor(exporter))
    events = await system.chat("What was the somatic mutation rate estimated from twins?")
    assert events[-1]["event"] == "done"
    spans = exporter.get_finished_spans()
    http = [s for s in spans if s.name.startswith("POST /chat")]
    handlers = [s for s in spans if "process" in s.name and "requested" in s.name]
    assert http and handlers, [s.name for s in spans]
    trace_id = http[0].context.trace_id
    names = {s.name for s in handlers if s.context.trace_id == trace_id}
    assert any("retrieval" in n for n in names) and any("verification" in n for n in names), names


async def test_citation_verification_span_carries_the_seeds_attributes(system):
    exporter = InMemorySpanExporter()
    configure_tracing("test").add_span_processor(SimpleSpanProcessor(exporter))
    done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    span = next(s for s in exporter.get_finished_spans() if s.name == "citation_verification")
    attrs = span.attributes
    assert attrs["openinference.span.kind"] == "GUARDRAIL"
    assert attrs["citation_verification.provider"] == "fake"
    assert attrs["citation_verification.kept"] == done["verification"]["kept"]
    assert attrs["citation_verification.batch_size"] == done["verification"]["total"]
    assert "claim" in attrs["input.value"] and "KEPT" in attrs["output.value"]
    # The assessment targets carry the passage judged and its item; the summary the batch size.
    first = json.loads(attrs["input.value"])[0]
    assert first["source_text"].startswith("The somatic mutation rate was estimated")
    assert (first["authors"], first["year"], first["title"]) == (
        "Jonsson & Stefansson",
        2021,
        "Somatic mutation rates in monozygotic twins",
    )
    summary = json.loads(attrs["output.value"])["summary"]
    assert summary["batch_size"] == done["verification"]["total"] and summary["budget_exceeded"] is False


async def test_a_verification_that_uses_up_its_budget_says_so_and_each_occurrence_is_logged_unverified(nats_server):
    exporter = InMemorySpanExporter()
    configure_tracing("test").add_span_processor(SimpleSpanProcessor(exporter))
    async with running_system(nats_server.url, verification_budget_s=0.3) as system:
        system.verifier.delay = 2.0
        done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    span = next(s for s in exporter.get_finished_spans() if s.name == "citation_verification")
    summary = json.loads(span.attributes["output.value"])["summary"]
    assert summary["budget_exceeded"] is True and summary["fail_open"] == done["verification"]["total"] >= 1
    assert all(line.endswith("status=FAIL_OPEN)") and "p=None" in line for line in verdict_lines(TurnRecord(**done)))


def test_each_occurrence_has_a_log_line_with_its_probability_threshold_and_status():
    occurrence = {"claim": "c", "compound": False}
    record = TurnRecord(
        turn_id="t",
        session_id="s",
        intent="library",
        question="q",
        verification={"threshold": 0.6},
        citations=[
            {
                "index": 1,
                "chunk_id": "c1",
                "item_key": "ITEMAAAA",
                "quote": "q",
                "survives": True,
                "occurrences": [
                    occurrence | {"occurrence": 1, "probability": 0.74031, "verdict": "KEPT"},
                    occurrence | {"occurrence": 2, "probability": 0.2, "verdict": "DEMOTED"},
                    occurrence | {"occurrence": 3, "probability": 0.3, "joint_support": 0.81, "verdict": "DEMOTED"},
                ],
            }
        ],
    )
    assert verdict_lines(record) == [
        "Citation verification [1] occ#1: p=0.7403 (threshold=0.60, status=KEPT)",
        "Citation verification [1] occ#2: p=0.2000 (threshold=0.60, status=DEMOTED)",
        "Citation verification [1] occ#3: p=0.3000 joint p=0.8100 (threshold=0.60, status=DEMOTED)",
    ]
