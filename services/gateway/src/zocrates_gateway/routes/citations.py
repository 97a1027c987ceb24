"""`POST /citations/verify` (re-verify a stored turn), `POST /citations/resolve` (resolve a stored
turn again with the user's threshold, from its stored probabilities: nothing is verified again)
and `POST /llm/test_decision_model`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from fastapi import APIRouter
from pydantic import BaseModel, Field

from zocrates_citations import parse_answer
from zocrates_contracts import (
    ID_PATTERN,
    TurnRecord,
    VerificationPair,
    VerificationRequested,
    VerificationSummary,
    new_id,
)
from zocrates_gateway.adapters.sessions import TurnAudit
from zocrates_gateway.auth import CurrentUser
from zocrates_gateway.deps import GatewayDep
from zocrates_gateway.errors import ApiError
from zocrates_gateway.telemetry import log, verdict_lines
from zocrates_gateway.turn import resolve_record, verify
from zocrates_runtime import bus

router = APIRouter()

SAMPLE_CLAIM = "Rayleigh scattering makes the daytime sky look blue."
SAMPLE_SOURCE = (
    "The daytime sky appears blue because air molecules scatter short (blue) wavelengths "
    "of sunlight much more strongly than long ones, an effect known as Rayleigh scattering."
)


class ReverifyRequest(BaseModel):
    session_id: str = Field(pattern=ID_PATTERN)
    turn_id: str = Field(pattern=ID_PATTERN)


async def stored_turn(gateway, user_id: str, body: ReverifyRequest) -> tuple[TurnRecord, TurnAudit]:
    """A stored library turn of the caller's and what it was resolved from; else a 404."""
    record, audit = await asyncio.gather(
        gateway.sessions.get_turn(user_id, body.session_id, body.turn_id),
        gateway.sessions.get_audit(user_id, body.session_id, body.turn_id),
    )
    if record is None or audit is None:
        raise ApiError(404, "turn_not_found", f"No library turn {body.turn_id} in session {body.session_id}.")
    return record, audit


async def store_resolved(
    gateway, user_id: str, body: ReverifyRequest, resolved: Callable[[TurnRecord], TurnRecord]
) -> TurnRecord:
    """Store `resolved(turn)` over the turn as stored at the moment of writing (compare-and-set),
    not over the one read before verifying: what other writers stored meanwhile (sentence
    attributions, say) is kept, and only the resolution's own fields are replaced."""
    updated = await gateway.sessions.update_turn(user_id, body.session_id, body.turn_id, resolved)
    if updated is None:
        raise ApiError(404, "turn_not_found", f"Turn {body.turn_id} was deleted meanwhile.")
    return updated


@router.post("/citations/verify")
async def reverify(gateway: GatewayDep, body: ReverifyRequest, user: CurrentUser) -> dict:
    """Score a stored turn's citations again (e.g. after the verifier was down) and store the result.

    Uses the turn's own answer and evidence: no new retrieval, no new synthesis.
    """
    (record, audit), chosen = await asyncio.gather(
        stored_turn(gateway, user.user_id, body), gateway.sessions.get_settings(user.user_id)
    )
    answer = parse_answer(audit.raw_text, len(audit.chunks))
    occurrences = list(answer.occurrences)
    if not occurrences:
        return record.model_dump(mode="json")
    ids = dict(turn_id=body.turn_id, session_id=body.session_id, user_id=user.user_id)
    verified = await verify(
        gateway, ids | {"turn_id": new_id()}, audit.chunks, occurrences, audit.quotes, answer.brackets
    )
    audit = audit.model_copy(
        update={
            "support_probabilities": verified.probabilities,
            "support_spans": verified.spans,
            "joint_support": verified.joint,
            "unprinted_numbers": verified.unprinted,
            "threshold": verified.summary.threshold,
        }
    )

    def resolved(turn: TurnRecord) -> TurnRecord:
        return resolve_record(
            gateway.settings, turn, audit, verified.summary, answer, threshold=chosen.verification_threshold
        )

    await gateway.sessions.put_audit(user.user_id, body.session_id, body.turn_id, audit)
    updated = await store_resolved(gateway, user.user_id, body, resolved)
    for line in verdict_lines(updated):
        log.info(line)
    return updated.model_dump(mode="json")


@router.post("/citations/resolve")
async def reresolve(gateway: GatewayDep, body: ReverifyRequest, user: CurrentUser) -> dict:
    """Resolve a stored turn again with the caller's threshold (`PUT /settings`; the verifier's
    when unset) from its stored probabilities, store and return it. Nothing is verified again:
    the verdicts, the pruned prose, the tiers and the unsupported claims follow the threshold."""
    (_, audit), chosen = await asyncio.gather(
        stored_turn(gateway, user.user_id, body), gateway.sessions.get_settings(user.user_id)
    )

    def resolved(turn: TurnRecord) -> TurnRecord:
        summary = turn.verification or VerificationSummary(enabled=False)
        return resolve_record(gateway.settings, turn, audit, summary, threshold=chosen.verification_threshold)

    return (await store_resolved(gateway, user.user_id, body, resolved)).model_dump(mode="json")


@router.post("/llm/test_decision_model")
async def test_decision_model(gateway: GatewayDep, user: CurrentUser) -> dict:
    """Send one known-supported pair to the verifier: reachability, latency, a sample probability."""
    timeout = gateway.settings.verification_timeout_s
    started = time.perf_counter()
    try:
        reply = await gateway.requester.ask(
            VerificationRequested,
            timeout,
            turn_id=new_id(),
            session_id=new_id(),
            user_id=user.user_id,
            pairs=[VerificationPair(chunk_index=1, occurrence=1, claim=SAMPLE_CLAIM, source_text=SAMPLE_SOURCE)],
        )
    except bus.NoReply:
        return {
            "reachable": False,
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
            "error": f"The verifier did not answer within {timeout:.0f} s. Is it running?",
        }
    latency = round((time.perf_counter() - started) * 1000, 1)
    probability = reply.scores[0].probability if reply.scores else None
    return {
        "reachable": reply.error is None,
        "provider": reply.provider,
        "model": reply.model,
        "device": reply.device,
        "latency_ms": latency,
        "sample_probability": probability,
        "error": reply.error.message if reply.error else None,
    }
