"""OpenTelemetry set-up and W3C trace-context carriers for the bus.

Each service calls `configure_tracing(name, settings.otlp_endpoint)` once at start. Spans are
always recorded (so a trace id exists to carry and to log), but exported only when an OTLP/HTTP
endpoint is configured (the `otlp_endpoint` setting, `ZOCRATES_OTLP_ENDPOINT`, e.g.
`http://127.0.0.1:4318` for Phoenix or Jaeger): no collector is needed by default.

One turn is one trace across services: the publisher puts `inject_trace()` into the NATS
headers and the contract's `TraceContext`; the handler starts its span under
`extract_trace(headers or message.trace)`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

log = logging.getLogger("zocrates.tracing")

# W3C trace context only, whatever OTEL_PROPAGATORS says: these two headers are exactly what
# the contracts' TraceContext holds.
_PROPAGATOR = TraceContextTextMapPropagator()
_TRACES_PATH = "/v1/traces"

_provider: TracerProvider | None = None


def configure_tracing(service: str, otlp_endpoint: str | None = None) -> TracerProvider:
    """Install a tracer provider with resource `service.name=service`; returns it.

    `otlp_endpoint` (the `otlp_endpoint` setting) is the collector's base URL or its full
    `/v1/traces` URL. Without one, or without the OTLP exporter package, spans are recorded
    but not exported (the latter with a warning). OpenTelemetry allows one global provider per
    process, so a second call returns the first provider unchanged.
    """
    global _provider
    if _provider is not None:
        return _provider
    endpoint = otlp_endpoint or None
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}))
    if endpoint:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            log.warning(
                "ZOCRATES_OTLP_ENDPOINT is set to %s but opentelemetry-exporter-otlp-proto-http "
                "is not installed, so traces are not exported. Hint: pip install "
                "opentelemetry-exporter-otlp-proto-http",
                endpoint,
            )
        else:
            url = endpoint.rstrip("/")
            if not url.endswith(_TRACES_PATH):
                url += _TRACES_PATH
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
            log.info("exporting traces of %s to %s", service, url)
    trace.set_tracer_provider(provider)
    _provider = provider
    return provider


def inject_trace(context: Context | None = None) -> dict[str, str]:
    """The current (or given) span context as W3C headers: `traceparent`, maybe `tracestate`.

    Empty when there is no valid span, so it can be merged into NATS headers unconditionally.
    """
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=context)
    return carrier


def extract_trace(carrier: Mapping[str, Any] | Any | None) -> Context:
    """A context whose parent is the span described by `carrier`.

    `carrier` is a mapping (NATS or HTTP headers, any key case) or an object with
    `traceparent`/`tracestate` attributes, such as the contracts' `TraceContext`. A missing or
    malformed trace parent gives an empty context, so the handler starts a new trace.
    """
    if carrier is None:
        headers: dict[str, str] = {}
    elif isinstance(carrier, Mapping):
        headers = {str(k).lower(): v for k, v in carrier.items() if isinstance(v, str)}
    else:
        headers = {
            key: value for key in ("traceparent", "tracestate") if isinstance(value := getattr(carrier, key, None), str)
        }
    return _PROPAGATOR.extract(headers)
