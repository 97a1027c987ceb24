"""S-AUTH-1 (token matrix), S-AUTH-2 (cross-tenant access) and S-AUTH-3 (no plaintext token in
any store or log) against the real gateway over HTTP. The schemathesis run without a token
(S-AUTH-1's fuzz half) is in test_api_fuzz.py; the route-by-route basics in
tests/gateway/test_bad_input.py and test_turns.py."""

from __future__ import annotations

import asyncio
import hmac
import io
import json
import logging
from datetime import UTC, datetime, timedelta

import pytest
import structlog

from harness.system import FakeDiscovery, collect, running_system
from harness.waiting import wait_until
from reliability.library_fakes import add_library
from zocrates_contracts import Candidate
from zocrates_contracts.subjects import DLQ_STREAM, EVENTS_STREAM, SESSIONS_BUCKET, TOKENS_BUCKET
from zocrates_runtime.logging import configure_logging

pytestmark = pytest.mark.connected
QUESTION = "What was the somatic mutation rate estimated from twins?"
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


ONE_CANDIDATE = [Candidate(candidate_id="W1", title="Alice's secret find", pdf_url="https://example.org/a.pdf")]


def bodies(app) -> list[tuple[str, str, dict | None]]:
    """Every operation of the OpenAPI document, with its path ids filled and a valid body."""
    valid = {
        "/chat": {"message": "hi"},
        "/citations/verify": {"session_id": "abc", "turn_id": "abc"},
        "/citations/resolve": {"session_id": "abc", "turn_id": "abc"},
        "/settings": {"unsupported_claims": "leave"},
        "/citations/sentence_attribution": {
            "session_id": "abc",
            "turn_id": "abc",
            "citation_index": 1,
            "occurrence": 1,
        },
        "/discover/prepare_batch": {"session_id": "abc", "turn_id": "abc", "candidate_ids": ["W1"]},
    }
    ops = []
    for path, methods in app.openapi()["paths"].items():
        for method in methods:
            if (method, path) == ("get", "/health"):
                continue
            filled = path.replace("{key}", "ABCD1234")
            for name in ("turn_id", "session_id", "staged_id"):
                filled = filled.replace("{%s}" % name, "abc")
            ops.append((method.upper(), filled, valid.get(path)))
    return ops


async def test_every_route_refuses_missing_malformed_revoked_and_expired_tokens(nats_server, report):
    async with running_system(nats_server.url) as system:
        tokens = system.app.state.gateway.tokens
        token_id = system.token.split("_")[1]
        revoked = await system.new_token("carol")
        await tokens.revoke(revoked.split("_")[1])
        expired = await tokens.create("erin", expires_at=datetime.now(UTC) - timedelta(seconds=1))
        headers = {
            "missing": {},
            "empty": {"Authorization": ""},
            "scheme only": {"Authorization": "Bearer"},
            "wrong scheme": {"Authorization": f"Basic {system.token}"},
            "token in another header": {"X-Api-Key": system.token},
            "malformed": {"Authorization": "Bearer zoc_nope"},
            "unknown id": {"Authorization": "Bearer zoc_0123456789ab_" + "x" * 43},
            "wrong secret": {"Authorization": f"Bearer zoc_{token_id}_" + "y" * 43},
            "revoked": {"Authorization": f"Bearer {revoked}"},
            "expired": {"Authorization": f"Bearer {expired}"},
        }
        ops, answers = bodies(system.app), {}
        for name, header in headers.items():
            for method, path, body in ops:
                r = await system.client.request(method, f"{system.url}{path}", headers=header, json=body)
                answers[(name, method, path)] = (
                    r.status_code,
                    r.headers.get("www-authenticate"),
                    r.json()["error"]["code"],
                )
    wrong = {k: v for k, v in answers.items() if v != (401, "Bearer", "unauthorized")}
    report("S-AUTH-1-matrix", routes=len(ops), token_kinds=len(headers), requests=len(answers), not_401=len(wrong))
    assert not wrong, wrong


async def test_regression_anonymous_request_with_a_malformed_body_got_400_before_401(nats_server):
    """FastAPI parses the body before it runs the auth dependency: a request without a token
    but with broken JSON, a non-UTF-8 body or a bad id got 400/422 and learnt how its input
    was judged. Found by the schemathesis run without a token (S-AUTH-1)."""
    async with running_system(nats_server.url) as system:
        c, url = system.client, system.url
        json_header = {"Content-Type": "application/json"}
        for method, path, content in [
            ("POST", "/chat", b'{"message": '),
            ("POST", "/chat", b"\xff\xfe"),
            ("POST", "/citations/verify", b"[1, 2"),
            ("GET", "/sessions/a.b", None),
            ("GET", "/staging/a.b", None),
        ]:
            r = await c.request(method, f"{url}{path}", content=content, headers=json_header)
            assert r.status_code == 401, (method, path, r.status_code, r.text)
        authed = await c.post(f"{url}/chat", content=b'{"message": ', headers=json_header | system.auth)
        assert authed.status_code == 400 and authed.json()["error"]["code"] == "malformed_json"


async def test_another_user_gets_404_on_every_resource_and_changes_nothing(nats_server, tmp_path, report):
    async with running_system(
        nats_server.url, discovery=FakeDiscovery(ONE_CANDIDATE), retrieval_timeout_s=30
    ) as system:
        seen = add_library(system.retrieval)
        c, url, alice = system.client, system.url, system.auth
        bob = {"Authorization": f"Bearer {await system.new_token('bob')}"}
        library = (await collect(c, url, QUESTION, None, system.token))[-1]["data"]
        discovery = (await collect(c, url, "find new papers about twins", None, system.token))[-1]["data"]
        replayed = library["turn_id"]
        system.app.state.gateway.turns.pop(replayed)  # resumes of it are replayed from the events stream
        path = tmp_path / "a.pdf"
        path.write_bytes(PDF)
        await system.app.state.gateway.staged.put("alice", "alicepaper", path, {"filename": "a.pdf"})
        system.retrieval.delay = 3.0  # a turn of Alice's that is still running
        live_task = asyncio.create_task(collect(c, url, QUESTION + " again", None, system.token))
        await wait_until(
            lambda: any(not t.finished for t, _ in system.app.state.gateway.turns.values()), 5, "a live turn"
        )
        live = next(tid for tid, (t, _) in system.app.state.gateway.turns.items() if not t.finished)

        session = library["session_id"]
        attempts = {
            "GET session": ("GET", f"/sessions/{session}", None),
            "DELETE session": ("DELETE", f"/sessions/{session}", None),
            "continue session": ("POST", "/chat", {"message": "hi", "session_id": session}),
            "live events": ("GET", f"/chat/{live}/events", None),
            "replayed events": ("GET", f"/chat/{replayed}/events", None),
            "cancel live turn": ("POST", f"/chat/{live}/cancel", None),
            "re-verify": ("POST", "/citations/verify", {"session_id": session, "turn_id": library["turn_id"]}),
            "re-resolve": ("POST", "/citations/resolve", {"session_id": session, "turn_id": library["turn_id"]}),
            "attribution": (
                "POST",
                "/citations/sentence_attribution",
                {"session_id": session, "turn_id": library["turn_id"], "citation_index": 1, "occurrence": 1},
            ),
            "import": (
                "POST",
                "/discover/prepare_batch",
                {"session_id": discovery["session_id"], "turn_id": discovery["turn_id"], "candidate_ids": ["W1"]},
            ),
            "staged PDF": ("GET", "/staging/alicepaper", None),
        }
        leaks, statuses = [], {}
        secrets_of_alice = [QUESTION, library["text"][:40], "Alice's secret find", PDF.decode()[:12]]
        for name, (method, target, body) in attempts.items():
            r = await c.request(method, f"{url}{target}", headers=bob, json=body)
            statuses[name] = r.status_code
            if r.status_code != 404 or any(s in r.text for s in secrets_of_alice):
                leaks.append((name, r.status_code, r.text[:200]))
        listed = (await c.get(f"{url}/sessions", headers=bob)).json()["sessions"]
        statuses["list sessions"] = len(listed)
        bob_status = (await c.get(f"{url}/library/status", headers=bob)).json()
        await c.put(
            f"{url}/library/attachments/ABCD1234", headers=bob | {"Content-Type": "application/pdf"}, content=PDF
        )
        users_seen_by_retrieval = {user for _, user in seen}

        live_events = await live_task  # Bob's cancel did not stop it
        mine = await c.get(f"{url}/sessions/{session}", headers=alice)
        pdf = await c.get(f"{url}/staging/alicepaper", headers=alice)
    report(
        "S-AUTH-2",
        resources=len(attempts) + 2,
        statuses=statuses,
        cross_tenant_responses=len(leaks),
        library_requests_carried=sorted(users_seen_by_retrieval),
    )
    assert not leaks, leaks
    assert listed == [] and bob_status["items"] == 0
    assert users_seen_by_retrieval == {"bob"}, "library requests carry the caller's id, never another's"
    assert live_events[-1]["event"] == "done", "Bob's cancel must not stop Alice's turn"
    assert mine.status_code == 200 and [t["turn_id"] for t in mine.json()["turns"]] == [library["turn_id"]]
    assert pdf.status_code == 200 and pdf.content == PDF


async def dump_everything(js) -> bytes:
    """Every message of every stream (KV buckets and object stores are streams too)."""
    out = bytearray()
    names = [s.config.name for s in await js.streams_info()]
    for name in names:
        info = await js.stream_info(name)
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            try:
                msg = await js.get_msg(name, seq)
            except Exception:  # noqa: BLE001 - deleted or purged
                continue
            out += msg.subject.encode() + json.dumps(msg.headers or {}).encode() + (msg.data or b"")
    return bytes(out), names


async def test_no_raw_token_in_any_store_or_log_and_digests_compare_in_constant_time(nats_server, monkeypatch, report):
    compared = []
    real_compare = hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real_compare(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    buffer = io.StringIO()
    levels = {name: logging.getLogger(name).level for name in ("", "uvicorn.access")}
    try:
        async with running_system(nats_server.url) as system:
            configure_logging("gateway", json=True, level="DEBUG", stream=buffer)
            logging.getLogger("uvicorn.access").setLevel(logging.INFO)
            token, secret = system.token, system.token.split("_", 2)[2]
            other = await system.new_token("bob")
            c, url = system.client, system.url
            await collect(c, url, QUESTION, None, token)
            await collect(c, url, "hello", None, other)
            await c.get(f"{url}/sessions", headers=system.auth)
            await c.get(f"{url}/sessions", headers={"Authorization": f"Bearer {token[:-2]}xx"})  # wrong secret
            await c.post(
                f"{url}/chat",
                headers=system.auth,
                content=b"{",
            )  # an error path
            await c.get(f"{url}/health", headers=system.auth)
            js = system.app.state.gateway.broker.config.connection_state.stream
            dump, streams = await dump_everything(js)
    finally:
        structlog.reset_defaults()
        root = logging.getLogger()
        for handler in [h for h in root.handlers if getattr(h, "_zocrates", False)]:
            root.removeHandler(handler)
        for name, level in levels.items():  # DEBUG left on would flood every later test's log capture
            logging.getLogger(name).setLevel(level)
    logs = buffer.getvalue()
    raw = [token, secret, other, other.split("_", 2)[2]]
    store_hits = sum(dump.count(s.encode()) for s in raw)
    log_hits = sum(logs.count(s) for s in raw)
    header_lines = [line for line in logs.splitlines() if "authorization" in line.lower() and "[REDACTED]" not in line]
    report(
        "S-AUTH-3",
        streams_dumped=len(streams),
        bytes_dumped=len(dump),
        log_lines=logs.count("\n"),
        plaintext_in_stores=store_hits,
        plaintext_in_logs=log_hits,
        authorization_in_logs=len(header_lines),
        compare_digest_calls=len(compared),
    )
    assert {TOKENS_BUCKET, SESSIONS_BUCKET} <= {s.removeprefix("KV_") for s in streams}
    assert {EVENTS_STREAM, DLQ_STREAM} <= set(streams)
    assert logs.count("\n") > 20, "the logs were captured"
    assert store_hits == 0 and log_hits == 0 and header_lines == []
    assert compared and all(len(a) == len(b) == 64 for a, b in compared), "digests compared with compare_digest"
