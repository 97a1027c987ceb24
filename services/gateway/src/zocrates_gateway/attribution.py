"""Sentence-level attribution of one citation occurrence of a stored turn: by the attribution
role's language model when there is one, else (or when it fails, with a note) by the verifier
scoring the claim against each sentence of the passage in one request."""

from __future__ import annotations

import structlog

from zocrates_citations import segment_source_text
from zocrates_contracts import (
    SUPPORT_THRESHOLD,
    Citation,
    CitationOccurrence,
    SentenceAttribution,
    VerificationCompleted,
    VerificationRequested,
    new_id,
)
from zocrates_gateway.adapters.llm import LLMError, ask_json
from zocrates_gateway.context import Gateway
from zocrates_gateway.domain import attribution as domain
from zocrates_runtime import bus
from zocrates_runtime.tracing import inject_trace

log = structlog.get_logger("zocrates.attribution")

#: Seconds the attribution model has to answer.
ATTRIBUTION_TIMEOUT_S = 30.0


class VerifierUnavailable(Exception):
    pass


async def attribute(
    gateway: Gateway, user_id: str, citation: Citation, occurrence: CitationOccurrence
) -> SentenceAttribution:
    """The attribution of `occurrence` of `citation` (its claim against the citation's `quote`).
    `VerifierUnavailable` when it has to be judged offline and the verifier gives no scores."""
    spans = segment_source_text(citation.quote)
    base = dict(citation_index=citation.index, occurrence=occurrence.occurrence, claim=occurrence.claim)
    model = gateway.settings.llm_for("attribution")
    note = None
    if model is not None and spans:
        try:
            answer = await ask_json(
                model, domain.attribution_messages(occurrence.claim, spans), domain.ModelAnswer, ATTRIBUTION_TIMEOUT_S
            )
            answer = domain.read_model_answer(answer, len(spans))
        except (LLMError, domain.BadModelAnswer) as exc:
            log.warning("attribution model failed; the verifier judges", error=str(exc))
            note = f"The language model failed ({exc}); the verifier judged each sentence instead."
        else:
            return SentenceAttribution(
                **base,
                method="llm",
                model=model.model,
                spans=domain.attributed(spans),
                supporting=answer.supporting,
                unsupported_facts=answer.unsupported_facts,
                explanation=answer.explanation,
            )
    reply = await _scores(gateway, user_id, domain.span_pairs(occurrence.claim, spans, citation.index))
    probabilities = {s.occurrence: s.probability for s in reply.scores} if reply else {}
    threshold = reply.threshold if reply else SUPPORT_THRESHOLD
    supporting = domain.supporting_offline(spans, probabilities, threshold, occurrence)
    texts = [s.text for s in spans if s.index in supporting]
    return SentenceAttribution(
        **base,
        method="verifier",
        model=reply.model if reply else "",
        spans=domain.attributed(spans, probabilities),
        supporting=supporting,
        unsupported_facts=domain.unsupported_facts(occurrence.claim, texts),
        note=note,
    )


async def _scores(gateway: Gateway, user_id: str, pairs) -> VerificationCompleted | None:
    """The verifier's scores of `pairs` in one request (none to send: None)."""
    if not pairs:
        return None
    timeout = gateway.settings.verification_timeout_s
    try:
        reply: VerificationCompleted = await gateway.requester.ask(
            VerificationRequested,
            timeout,
            turn_id=new_id(),
            session_id=new_id(),
            user_id=user_id,
            trace=inject_trace(),
            pairs=pairs,
        )
    except bus.NoReply:
        raise VerifierUnavailable(f"The verifier did not answer within {timeout:.0f} s. Is it running?") from None
    if reply.error is not None and not reply.scores:
        raise VerifierUnavailable(f"The verifier failed ({reply.error.code}): {reply.error.message}")
    return reply
