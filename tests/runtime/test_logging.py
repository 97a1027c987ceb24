import io
import json
import logging

import pytest
import structlog

from zocrates_runtime.logging import REDACTED, configure_logging, redact_text
from zocrates_runtime.settings import ZocratesSettings


@pytest.fixture
def captured(monkeypatch):
    """Configure JSON logging into a buffer; undo it afterwards."""
    buffer = io.StringIO()
    configure_logging("test-svc", json=True, stream=buffer)
    structlog.contextvars.clear_contextvars()
    yield lambda: [json.loads(line) for line in buffer.getvalue().splitlines()]
    structlog.contextvars.clear_contextvars()
    structlog.reset_defaults()
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_zocrates", False)]:
        root.removeHandler(handler)


def test_json_line_carries_bound_ids_and_redacts_a_bearer_token(captured):
    structlog.contextvars.bind_contextvars(turn_id="t1", session_id="s1", subject="turn.requested")
    structlog.get_logger("gateway").info(
        "forwarding request with Bearer abc.DEF-123",
        headers={"Authorization": "Bearer abc.DEF-123"},
    )
    [line] = captured()
    assert (line["turn_id"], line["session_id"], line["subject"]) == ("t1", "s1", "turn.requested")
    assert (line["service"], line["level"]) == ("test-svc", "info")
    assert line["timestamp"].endswith("Z")
    assert line["event"] == f"forwarding request with Bearer {REDACTED}"
    assert line["headers"] == {"Authorization": REDACTED}
    assert "abc.DEF-123" not in json.dumps(line)


def test_secret_keys_are_redacted_but_token_counts_are_kept(captured):
    structlog.get_logger().info(
        "llm call",
        api_key="sk-1",
        access_token="a",
        x_api_key="k",
        password="p",
        max_tokens=512,
        token_count=7,
        url="https://api.openalex.org/works?api_key=sekrit&search=x",
    )
    [line] = captured()
    assert [line[k] for k in ("api_key", "access_token", "x_api_key", "password")] == [REDACTED] * 4
    assert line["max_tokens"] == 512 and line["token_count"] == 7
    assert line["url"] == f"https://api.openalex.org/works?api_key={REDACTED}&search=x"


def test_stdlib_loggers_go_through_the_same_chain(captured):
    structlog.contextvars.bind_contextvars(turn_id="t2")
    logging.getLogger("uvicorn.error").warning("bad header Bearer zzz")
    # faststream's access logger does not propagate and puts subject/message_id on the record.
    logging.getLogger("faststream.access.nats").info(
        "Received", extra={"subject": "evidence.retrieved", "message_id": "m-1", "stream": ""}
    )
    uvicorn_line, faststream_line = captured()
    assert uvicorn_line["event"] == f"bad header Bearer {REDACTED}"
    assert uvicorn_line["turn_id"] == "t2" and uvicorn_line["logger"] == "uvicorn.error"
    assert faststream_line["subject"] == "evidence.retrieved"
    assert faststream_line["message_id"] == "m-1"
    assert "stream" not in faststream_line and faststream_line["service"] == "test-svc"


def test_exceptions_are_rendered_and_redacted(captured):
    try:
        raise RuntimeError("upstream refused Bearer leaked-token")
    except RuntimeError:
        structlog.get_logger().exception("call failed")
    [line] = captured()
    assert "RuntimeError" in line["exception"] and "leaked-token" not in line["exception"]


def test_env_switch_picks_the_console_renderer(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no .env or zocrates.toml of the checkout
    monkeypatch.setenv("ZOCRATES_LOG_JSON", "false")
    buffer = io.StringIO()
    try:
        configure_logging("console-svc", json=ZocratesSettings().log_json, stream=buffer)
        structlog.get_logger().info("hello", turn_id="t3")
    finally:
        structlog.reset_defaults()
        root = logging.getLogger()
        for handler in [h for h in root.handlers if getattr(h, "_zocrates", False)]:
            root.removeHandler(handler)
    text = buffer.getvalue()
    assert "hello" in text and "turn_id=t3" in text and not text.startswith("{")


def test_redact_text_leaves_ordinary_text_alone():
    assert redact_text("GET /works?search=tokens&page=2") == "GET /works?search=tokens&page=2"
    # Errs on the side of caution: the word after any "bearer" goes.
    assert redact_text("authorization: bearer x.y") == f"authorization: bearer {REDACTED}"


def test_a_password_in_a_url_is_redacted():
    from zocrates_runtime.logging import redact_text

    text = "cannot connect to nats://zocrates:hunter2@nats-1:4222, tried nats://nats-2:4222"
    assert redact_text(text) == "cannot connect to nats://zocrates:[REDACTED]@nats-1:4222, tried nats://nats-2:4222"
