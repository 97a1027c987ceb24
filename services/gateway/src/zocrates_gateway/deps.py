"""The route dependencies: what a route needs from the running gateway, as `Annotated` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from zocrates_gateway.adapters.sessions import SessionStore
from zocrates_gateway.config import GatewaySettings
from zocrates_gateway.context import Gateway


def gateway(request: Request) -> Gateway:
    return request.app.state.gateway


def settings(request: Request) -> GatewaySettings:
    return gateway(request).settings


def sessions(request: Request) -> SessionStore:
    return gateway(request).sessions


GatewayDep = Annotated[Gateway, Depends(gateway)]
SettingsDep = Annotated[GatewaySettings, Depends(settings)]
SessionsDep = Annotated[SessionStore, Depends(sessions)]
