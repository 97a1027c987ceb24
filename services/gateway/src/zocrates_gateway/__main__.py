"""`python -m zocrates_gateway`: serve the HTTP API."""

from __future__ import annotations

import uvicorn

from zocrates_gateway.app import create_app
from zocrates_gateway.config import GatewaySettings
from zocrates_gateway.server import AbortingH11Protocol
from zocrates_runtime.logging import configure_logging
from zocrates_runtime.tracing import configure_tracing


def main() -> None:
    settings = GatewaySettings()
    configure_logging("gateway", json=settings.log_json, level=settings.log_level)
    configure_tracing("gateway", settings.otlp_endpoint)
    app = create_app(settings)
    uvicorn.run(
        app,
        host=settings.gateway_host,
        port=settings.gateway_port,
        log_config=None,
        proxy_headers=True,
        timeout_graceful_shutdown=5,
        http=AbortingH11Protocol,
    )


if __name__ == "__main__":
    main()
