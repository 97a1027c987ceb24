import subprocess
import sys
import textwrap

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from zocrates_contracts import TraceContext
from zocrates_runtime.tracing import extract_trace, inject_trace

# A local provider, so the tests leave the process-wide one alone.
tracer = TracerProvider().get_tracer("test")


def test_inject_extract_round_trips_a_traceparent():
    with tracer.start_as_current_span("publish") as publish:
        headers = inject_trace()
    sent = publish.get_span_context()
    version, trace_id, parent_id, flags = headers["traceparent"].split("-")
    assert (version, trace_id, parent_id) == ("00", f"{sent.trace_id:032x}", f"{sent.span_id:016x}")
    assert int(flags, 16) & 1  # sampled

    with tracer.start_as_current_span("handle", context=extract_trace(headers)) as handle:
        assert handle.get_span_context().trace_id == sent.trace_id
        assert handle.parent.span_id == sent.span_id


def test_extract_accepts_the_contract_model_and_any_header_case():
    with tracer.start_as_current_span("publish") as publish:
        carrier = inject_trace()
    trace_id = publish.get_span_context().trace_id
    for source in (TraceContext(**carrier), {"Traceparent": carrier["traceparent"]}):
        span = trace.get_current_span(extract_trace(source))
        assert span.get_span_context().trace_id == trace_id and span.get_span_context().is_remote


def test_no_span_means_no_headers_and_garbage_means_a_new_trace():
    assert inject_trace() == {}
    for carrier in (None, {}, {"traceparent": "garbage"}, TraceContext()):
        assert not trace.get_current_span(extract_trace(carrier)).get_span_context().is_valid


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=30, check=True
    )
    return done.stdout + done.stderr


def test_configure_tracing_names_the_service_and_exports_only_when_configured():
    out = _run(
        """
        import logging; logging.basicConfig(level=logging.INFO)
        from opentelemetry import trace
        from zocrates_runtime.tracing import configure_tracing
        provider = configure_tracing("retrieval", "http://127.0.0.1:4318/")
        assert configure_tracing("other") is provider
        assert trace.get_tracer_provider() is provider
        print("service.name", provider.resource.attributes["service.name"])
        """
    )
    assert "service.name retrieval" in out
    assert "exporting traces of retrieval to http://127.0.0.1:4318/v1/traces" in out


def test_missing_exporter_package_is_a_clear_warning():
    out = _run(
        """
        import sys; sys.modules["opentelemetry.exporter.otlp.proto.http.trace_exporter"] = None
        from zocrates_runtime.tracing import configure_tracing
        configure_tracing("gateway", "http://127.0.0.1:4318")
        """
    )
    assert "opentelemetry-exporter-otlp-proto-http is not installed" in out
