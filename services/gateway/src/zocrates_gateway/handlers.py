"""The exception handlers that give every 4xx/5xx the one JSON error shape (`errors.error_body`)."""

from __future__ import annotations

import nats.errors
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from zocrates_gateway.auth import require_principal
from zocrates_gateway.errors import ApiError, error_body


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.code, exc.message), exc.status, headers=exc.headers)

    async def _bus_unavailable(_: Request, exc: Exception) -> JSONResponse:
        message = "The message bus is briefly unavailable (a server is restarting); try again in a few seconds."
        return JSONResponse(error_body("bus_unavailable", message), 503, headers={"Retry-After": "5"})

    for outage in (TimeoutError, nats.errors.Error):  # the stores stayed out of reach past their retries
        app.add_exception_handler(outage, _bus_unavailable)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        if (denied := await _unauthenticated(request)) is not None:
            return await _api_error(request, denied)
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return JSONResponse(error_body("malformed_json", "The request body is not valid JSON."), 400)
        details = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in errors]
        summary = "; ".join(f"{'.'.join(map(str, d['loc'][1:])) or 'body'}: {d['msg']}" for d in details)
        return JSONResponse(error_body("invalid_request", summary, details=details), 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and (denied := await _unauthenticated(request)) is not None:
            return await _api_error(request, denied)  # an unparsable body, sent without a token
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), exc.status_code, headers=getattr(exc, "headers", None))


async def _unauthenticated(request: Request) -> ApiError | None:
    """The 401 for a request to a token-protected route that carries no valid token.

    FastAPI parses and validates the body and parameters before it runs the route's
    dependencies, so without this an anonymous request with a bad body or id would get a
    400/422 instead of the 401 every protected route owes it (S-AUTH-1)."""
    if not _needs_token(request):
        return None
    try:
        await require_principal(request)
    except ApiError as denied:
        return denied
    return None


def _needs_token(request: Request) -> bool:
    """Whether the matched route depends (directly or through a dependency) on the token."""
    route = request.scope.get("route")
    pending = list(getattr(getattr(route, "dependant", None), "dependencies", []))
    while pending:
        dependant = pending.pop()
        if dependant.call is require_principal:
            return True
        pending.extend(dependant.dependencies)
    return False
