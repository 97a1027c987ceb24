"""The gateway: FastAPI app wiring (routes, auth, bus, stores)."""

from __future__ import annotations

from contextlib import asynccontextmanager

import nats.js.errors
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

from zocrates_contracts.subjects import SESSIONS_BUCKET, TOKENS_BUCKET
from zocrates_gateway import errors
from zocrates_gateway.auth import TokenStore
from zocrates_gateway.config import GatewaySettings
from zocrates_gateway.routes import chat, citations, discover, health, library, profile, sessions, ui
from zocrates_gateway.sessions import SessionStore
from zocrates_runtime import bus
from zocrates_runtime.staged_store import NatsStagedStore


async def key_value(broker, bucket: str, replicas: int = 1):
    js = broker.config.connection_state.stream
    try:
        return await js.key_value(bucket)
    except nats.js.errors.BucketNotFoundError:
        return await js.create_key_value(bucket=bucket, history=1, replicas=replicas)


def create_app(settings: GatewaySettings | None = None) -> FastAPI:
    settings = settings or GatewaySettings()
    broker = bus.make_broker(settings)
    requester = bus.Requester(broker, settings.instance_id)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await broker.start()
        await bus.ensure_streams(broker, settings.stream_replicas)
        app.state.tokens = TokenStore(await key_value(broker, TOKENS_BUCKET, settings.stream_replicas),
                                      settings.token_pepper.get_secret_value())
        app.state.sessions = SessionStore(await key_value(broker, SESSIONS_BUCKET, settings.stream_replicas))
        app.state.staged = NatsStagedStore(broker.config.connection_state.stream)
        try:
            yield
        finally:
            for _, task in list(app.state.turns.values()):
                task.cancel()
            await broker.stop()

    app = FastAPI(title="Zocrates gateway", version="0.1.0", lifespan=lifespan)
    app.state.settings = settings
    app.state.broker = broker
    app.state.requester = requester
    app.state.turns = {}
    errors.install(app)
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins,
                           allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
                           allow_methods=["GET", "POST", "PUT", "DELETE"])
    app.include_router(health.router)
    app.include_router(chat.router)
    app.include_router(sessions.router)
    app.include_router(citations.router)
    app.include_router(discover.router)
    app.include_router(library.router)
    app.include_router(profile.router)
    app.include_router(ui.router)
    # One turn is one trace: the HTTP span parents the turn task, whose publishes carry
    # `traceparent` in NATS headers (faststream's telemetry middleware) to every service.
    FastAPIInstrumentor.instrument_app(app, excluded_urls="health")
    return app
