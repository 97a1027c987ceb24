"""One turn is one trace across the gateway and the services it calls over NATS."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

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
