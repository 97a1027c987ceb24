"""Who is calling: the bearer token of a request, checked against the token store."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from zocrates_gateway.adapters.tokens import Principal, TokenStore
from zocrates_gateway.deps import gateway
from zocrates_gateway.errors import ApiError

UNAUTHORIZED_HEADERS = {"WWW-Authenticate": "Bearer"}


async def require_principal(request: Request) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401, "unauthorized", "Missing bearer token: send 'Authorization: Bearer <token>'.", UNAUTHORIZED_HEADERS
        )
    store: TokenStore = gateway(request).tokens
    principal = await store.verify(token.strip())
    if principal is None:
        raise ApiError(401, "unauthorized", "Invalid, revoked or expired token.", UNAUTHORIZED_HEADERS)
    return principal


CurrentUser = Annotated[Principal, Depends(require_principal)]
