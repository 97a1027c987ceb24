"""`GET /settings` and `PUT /settings`: the caller's own settings (`domain.settings.UserSettings`).

A `PUT` changes the keys it sends and keeps the others; an unknown key or a value out of range
is a 422 and changes nothing stored.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import ValidationError

from zocrates_gateway.auth import CurrentUser
from zocrates_gateway.deps import SessionsDep
from zocrates_gateway.domain.settings import SettingsUpdate
from zocrates_gateway.errors import ApiError

router = APIRouter()


@router.get("/settings")
async def get_settings(store: SessionsDep, user: CurrentUser) -> dict:
    return (await store.get_settings(user.user_id)).model_dump()


@router.put("/settings")
async def put_settings(store: SessionsDep, user: CurrentUser, body: SettingsUpdate) -> dict:
    """Change the settings sent; answers all of them as now stored."""
    try:
        settings = body.applied_to(await store.get_settings(user.user_id))
    except ValidationError as exc:
        summary = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors())
        raise ApiError(422, "invalid_request", summary) from None
    await store.put_settings(user.user_id, settings)
    return settings.model_dump()
