"""`POST /register` and `GET /me`: what a client tells the server about its user.

The plugin registers the researcher's contact email (Zotero's sync username when it is an
email, or what they typed in its preferences). Discovery turns then name it to the
providers' polite pools (Crossref `mailto`, Unpaywall `email`, NCBI `email`) instead of the
deployment's configured contact. `null` clears it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict

from zocrates_contracts.messages import ContactEmail
from zocrates_gateway.adapters.sessions import Profile
from zocrates_gateway.auth import CurrentUser
from zocrates_gateway.deps import SessionsDep

router = APIRouter()


class Registration(BaseModel):
    model_config = ConfigDict(extra="forbid")

    contact_email: ContactEmail | None


def _answer(user_id: str, profile: Profile) -> dict:
    return {"user_id": user_id, "contact_email": profile.contact_email}


@router.post("/register")
async def register(store: SessionsDep, user: CurrentUser, body: Registration) -> dict:
    """Store the user's contact email (or clear it with `null`); answers what is stored."""
    profile = Profile(contact_email=body.contact_email, updated_at=datetime.now(UTC))
    await store.put_profile(user.user_id, profile)
    return _answer(user.user_id, profile)


@router.get("/me")
async def me(store: SessionsDep, user: CurrentUser) -> dict:
    return _answer(user.user_id, await store.get_profile(user.user_id))
