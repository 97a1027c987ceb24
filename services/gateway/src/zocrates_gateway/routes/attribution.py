"""`POST /citations/sentence_attribution`: which sentences of a cited passage state an
occurrence's claim, obtained on demand and kept with the turn."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from zocrates_contracts import ID_PATTERN, TurnRecord
from zocrates_gateway.attribution import VerifierUnavailable, attribute
from zocrates_gateway.auth import CurrentUser
from zocrates_gateway.deps import GatewayDep
from zocrates_gateway.errors import ApiError

router = APIRouter()


class AttributionRequest(BaseModel):
    session_id: str = Field(pattern=ID_PATTERN)
    turn_id: str = Field(pattern=ID_PATTERN)
    citation_index: int = Field(ge=1, description="The citation's `index` in the turn")
    occurrence: int = Field(ge=1, description="The occurrence's `occurrence` within that citation")
    refresh: bool = Field(default=False, description="Judge again even when the turn holds an attribution")


@router.post("/citations/sentence_attribution")
async def sentence_attribution(gateway: GatewayDep, body: AttributionRequest, user: CurrentUser) -> dict:
    """The `SentenceAttribution` of one citation occurrence of a stored turn, stored with the
    turn (`attributions`); the stored one unless `refresh`."""
    record = await gateway.sessions.get_turn(user.user_id, body.session_id, body.turn_id)
    if record is None:
        raise ApiError(404, "turn_not_found", f"No turn {body.turn_id} in session {body.session_id}.")
    citation = next((c for c in record.citations if c.index == body.citation_index), None)
    if citation is None:
        cited = ", ".join(str(c.index) for c in record.citations) or "none"
        raise ApiError(
            422, "unknown_citation", f"The turn has no citation {body.citation_index}; its citations are: {cited}."
        )
    occurrence = next((o for o in citation.occurrences if o.occurrence == body.occurrence), None)
    if occurrence is None:
        raise ApiError(
            422,
            "unknown_occurrence",
            f"Citation {citation.index} occurs {len(citation.occurrences)} time(s); "
            f"there is no occurrence {body.occurrence}.",
        )
    key = (citation.index, occurrence.occurrence)
    stored = next((a for a in record.attributions if (a.citation_index, a.occurrence) == key), None)
    if stored is not None and not body.refresh:
        return stored.model_dump(mode="json")
    try:
        found = await attribute(gateway, user.user_id, citation, occurrence)
    except VerifierUnavailable as exc:
        raise ApiError(503, "verifier_unavailable", f"{exc} Nothing was stored; try again.") from None

    def keep(turn: TurnRecord) -> TurnRecord:  # the turn as stored now: re-verified or attributed meanwhile
        others = [a for a in turn.attributions if (a.citation_index, a.occurrence) != key]
        return turn.model_copy(update={"attributions": [*others, found]})

    if await gateway.sessions.update_turn(user.user_id, body.session_id, body.turn_id, keep) is None:
        raise ApiError(404, "turn_not_found", f"Turn {body.turn_id} was deleted meanwhile.")
    return found.model_dump(mode="json")
