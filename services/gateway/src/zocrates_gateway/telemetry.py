"""The seed's telemetry of a turn's citation verification (4.7): one OpenTelemetry span, an
OpenInference GUARDRAIL, whose input and output values are JSON, and log lines, one per
occurrence with its verdict and one summing the batch up."""

from __future__ import annotations

import json

import structlog

from zocrates_citations import format_authors
from zocrates_contracts import EvidenceChunk, TurnRecord, VerificationSummary

log = structlog.get_logger("zocrates.turn")

#: A span attribute's value is kept under this many characters (collectors cut longer ones).
MAX_VALUE_CHARS = 32_000
#: The passages of all assessments share this much of the input value, each at least MIN.
SOURCE_TEXT_BUDGET, MIN_SOURCE_TEXT = 24_000, 200


def assessment_inputs(occurrences, chunks: list[EvidenceChunk]) -> list[dict]:
    """The assessment targets (`input.value`): each occurrence's claim and the passage it was
    judged against, with the passage's item; the passages cut to share the value's bound."""
    each = max(MIN_SOURCE_TEXT, SOURCE_TEXT_BUDGET // max(1, len(occurrences)))
    inputs = []
    for o in occurrences:
        chunk = chunks[o.chunk_index - 1]
        inputs.append(
            {
                "chunk_index": o.chunk_index,
                "occurrence": o.occurrence,
                "claim": o.claim,
                "source_text": chunk.text[:each],
                "title": chunk.title,
                "section": chunk.section,
                "authors": format_authors(chunk.creators),
                "year": chunk.year,
            }
        )
    return inputs


def summary_output(v: VerificationSummary, budget_s: float) -> dict:
    """The output value's summary: the record's verification summary, the batch size and
    whether the verification used up the turn's budget (`ZOCRATES_VERIFICATION_BUDGET_S`)."""
    return v.model_dump() | {"batch_size": v.total, "budget_exceeded": v.latency_ms >= budget_s * 1000}


def verdict_lines(record: TurnRecord) -> list[str]:
    """One log line per occurrence: `Citation verification [1] occ#1: p=0.7403 (threshold=0.60, status=KEPT)`;
    an occurrence of a bracket of several passages adds the bracket's joint check (`joint p=0.8100`)."""
    threshold = record.verification.threshold if record.verification else 0.0
    return [
        f"Citation verification [{c.index}] occ#{o.occurrence}: "
        f"p={'None' if o.probability is None else f'{o.probability:.4f}'} "
        + ("" if o.joint_support is None else f"joint p={o.joint_support:.4f} ")
        + f"(threshold={threshold:.2f}, status={o.verdict})"
        for c in record.citations
        for o in c.occurrences
    ]


def record_verification(span, record: TurnRecord, occurrences, chunks: list[EvidenceChunk], budget_s: float) -> None:
    """Set the span's attributes and write the log lines of a verified turn."""
    v = record.verification
    summary = summary_output(v, budget_s)
    results = [
        {
            "chunk_index": c.index,
            "occurrence": o.occurrence,
            "probability": o.probability,
            "joint_support": o.joint_support,
            "verdict": o.verdict,
        }
        for c in record.citations
        for o in c.occurrences
    ]
    span.set_attribute("openinference.span.kind", "GUARDRAIL")
    span.set_attribute("input.value", json.dumps(assessment_inputs(occurrences, chunks))[:MAX_VALUE_CHARS])
    span.set_attribute("output.value", json.dumps({"summary": summary, "results": results})[:MAX_VALUE_CHARS])
    for key in ("provider", "model", "threshold", "kept", "demoted", "fail_open", "latency_ms", "batch_size"):
        span.set_attribute(f"citation_verification.{key}", summary[key])
    for line in verdict_lines(record):
        log.info(line)
    log.info(
        f"Citation verification complete: {v.total} assessments in {v.latency_ms:.1f}ms "
        f"(provider={v.provider or 'none'}, model={v.model or 'none'}, mode=batch, "
        f"threshold={v.threshold:.2f}, kept={v.kept}, demoted={v.demoted}, fail_open={v.fail_open})"
    )
