"""`POST /citations/verify` (re-verify a stored turn) and `POST /llm/test_decision_model`."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from zocrates_citations import extract_claim_occurrences
from zocrates_contracts import ID_PATTERN, VerificationPair, VerificationRequested, new_id
from zocrates_gateway.auth import CurrentUser
from zocrates_gateway.errors import ApiError
from zocrates_gateway.turn import TurnDeps, deadline_in, resolve_record, verify

router = APIRouter()

SAMPLE_CLAIM = "Rayleigh scattering makes the daytime sky look blue."
SAMPLE_SOURCE = ("The daytime sky appears blue because air molecules scatter short (blue) wavelengths "
                 "of sunlight much more strongly than long ones, an effect known as Rayleigh scattering.")


class ReverifyRequest(BaseModel):
    session_id: str = Field(pattern=ID_PATTERN)
    turn_id: str = Field(pattern=ID_PATTERN)


def deps_of(request: Request) -> TurnDeps:
    state = request.app.state
    return TurnDeps(settings=state.settings, requester=state.requester, sessions=state.sessions)


@router.post("/citations/verify")
async def reverify(request: Request, body: ReverifyRequest, user: CurrentUser) -> dict:
    """Score a stored turn's citations again (e.g. after the verifier was down) and store the result.

    Uses the turn's own answer and evidence: no new retrieval, no new synthesis.
    """
    deps = deps_of(request)
    record = await deps.sessions.get_turn(user.user_id, body.session_id, body.turn_id)
    audit = await deps.sessions.get_audit(user.user_id, body.session_id, body.turn_id)
    if record is None or audit is None:
        raise ApiError(404, "turn_not_found", f"No library turn {body.turn_id} in session {body.session_id}.")
    occurrences = extract_claim_occurrences(audit.raw_text, len(audit.chunks))
    if not occurrences:
        return record.model_dump(mode="json")
    ids = dict(turn_id=body.turn_id, session_id=body.session_id, user_id=user.user_id)
    probabilities, summary = await verify(deps, ids | {"turn_id": new_id()}, audit.chunks, occurrences)
    audit = audit.model_copy(update={"support_probabilities": probabilities,
                                     "threshold": deps.settings.verification_threshold})
    updated = resolve_record(deps.settings, record, audit, summary)
    await deps.sessions.put_audit(user.user_id, body.session_id, body.turn_id, audit)
    await deps.sessions.replace_turn(user.user_id, updated)
    return updated.model_dump(mode="json")


@router.post("/llm/test_decision_model")
async def test_decision_model(request: Request, user: CurrentUser) -> dict:
    """Send one known-supported pair to the verifier: reachability, latency, a sample probability."""
    deps = deps_of(request)
    timeout = deps.settings.verification_timeout_s
    probe = VerificationRequested(
        turn_id=new_id(), session_id=new_id(), user_id=user.user_id, deadline=deadline_in(timeout),
        reply_to=deps.requester.reply_to(VerificationRequested),
        pairs=[VerificationPair(chunk_index=1, occurrence=1, claim=SAMPLE_CLAIM, source_text=SAMPLE_SOURCE)])
    started = time.perf_counter()
    try:
        reply = await deps.requester.request(probe, timeout=timeout)
    except TimeoutError:
        return {"reachable": False, "latency_ms": round((time.perf_counter() - started) * 1000, 1),
                "error": f"The verifier did not answer within {timeout:.0f} s. Is it running?"}
    latency = round((time.perf_counter() - started) * 1000, 1)
    probability = reply.scores[0].probability if reply.scores else None
    return {"reachable": reply.error is None, "provider": reply.provider, "model": reply.model,
            "device": reply.device, "latency_ms": latency, "sample_probability": probability,
            "error": reply.error.message if reply.error else None}
