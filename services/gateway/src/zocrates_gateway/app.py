"""The gateway: FastAPI app wiring (routes, auth, bus, stores)."""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from starlette.routing import Route

from zocrates_gateway import handlers, mcp
from zocrates_gateway.config import GatewaySettings
from zocrates_gateway.context import Gateway
from zocrates_gateway.routes import (
    attribution,
    chat,
    citations,
    discover,
    health,
    library,
    profile,
    sessions,
    ui,
    user_settings,
)


def create_app(settings: GatewaySettings | None = None) -> FastAPI:
    gateway = Gateway.create(settings or GatewaySettings())
    mcp_endpoint = mcp.Endpoint(mcp.build_server(gateway))

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await gateway.start()
        try:
            async with mcp_endpoint.running():
                yield
        finally:
            await gateway.stop()

    app = FastAPI(title="Zocrates gateway", version="0.1.0", lifespan=lifespan)
    app.state.gateway = gateway
    handlers.install(app)
    if gateway.settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=gateway.settings.cors_origins,
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
            allow_methods=["GET", "POST", "PUT", "DELETE"],
        )
    app.include_router(health.router)
    app.include_router(chat.router)
    app.include_router(sessions.router)
    app.include_router(citations.router)
    app.include_router(attribution.router)
    app.include_router(discover.router)
    app.include_router(library.router)
    app.include_router(profile.router)
    app.include_router(user_settings.router)
    app.include_router(ui.router)
    app.router.routes.append(Route(mcp.PATH, mcp_endpoint, methods=["GET", "POST", "DELETE"]))
    # One turn is one trace: the HTTP span parents the turn task, whose publishes carry
    # `traceparent` in NATS headers (faststream's telemetry middleware) to every service.
    FastAPIInstrumentor.instrument_app(app, excluded_urls="health")
    return app
