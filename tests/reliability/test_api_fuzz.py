"""S-AUTH-1 and F-1 with schemathesis over the gateway's OpenAPI, and R-SSE-6's header fuzz.

The gateway runs for real (uvicorn on loopback, real nats-server, the services' bus apps with
instant fakes) on an event loop of its own (`ThreadedSystem`), and schemathesis sends its
generated requests over HTTP (`schemathesis.openapi.from_url`), so every layer a request
crosses is the production one. Each operation gets positive and negative examples.
"""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
)

from reliability.library_fakes import add_library
from reliability.support import ThreadedSystem
from zocrates_gateway.routes.chat import parse_last_event_id

pytestmark = [pytest.mark.connected, pytest.mark.fuzz]

#: Endless or long-lived event streams hang a fuzzer; their inputs are fuzzed separately below.
SSE_OPERATIONS = {("POST", "/chat"), ("GET", "/chat/{turn_id}/events")}
PUBLIC = {("GET", "/health")}
QUIET = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def gateway(module_nats_server):
    with ThreadedSystem(module_nats_server.url, library_timeout_s=5.0) as running:
        add_library(running.system.retrieval)
        yield running


@pytest.fixture(scope="module")
def schema(gateway):
    return schemathesis.openapi.from_url(f"{gateway.system.url}/openapi.json")


def operations(schema):
    for result in schema.get_all_operations():
        operation = result.ok()
        yield (operation.method.upper(), operation.path), operation


def run_operation(operation, mode, examples: int, check) -> tuple[int, list[str]]:
    """Run `check(case)` on `examples` generated cases; (cases run, distinct failures)."""
    ran, failures = [], []

    @settings(max_examples=examples, **QUIET)
    @given(case=operation.as_strategy(generation_mode=mode))
    def fuzz(case):
        ran.append(1)
        check(case)

    try:
        fuzz()
    except Unsatisfiable:  # nothing to negate (an operation without parameters or body)
        pass
    except (AssertionError, FailureGroup, Exception) as exc:  # noqa: BLE001 - collected, asserted below
        failures.append(f"{operation.method.upper()} {operation.path} [{mode.value}]: {str(exc)[:400]}")
    return len(ran), failures


def test_every_operation_without_a_token_only_ever_answers_401(gateway, schema, report):
    """S-AUTH-1: generated requests (valid and invalid parameters and bodies) with no token."""
    url = gateway.system.url
    statuses: dict[int, int] = {}

    def only_401(case):
        response = case.call(base_url=url, timeout=10)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code == 401, (
            f"{case.method} {case.formatted_path} without a token: {response.status_code} {response.text[:200]}"
        )
        assert response.headers.get("www-authenticate") == ["Bearer"]
        assert response.json()["error"]["code"] == "unauthorized"

    ran, failures, covered = 0, [], []
    for key, operation in operations(schema):
        if key in PUBLIC:
            continue
        covered.append(" ".join(key))
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            n, failed = run_operation(operation, mode, 15, only_401)
            ran, failures = ran + n, failures + failed
    report(
        "S-AUTH-1",
        operations=len(covered),
        examples=ran,
        statuses=statuses,
        failures=len(failures),
        public=[" ".join(k) for k in PUBLIC],
    )
    assert not failures, "\n".join(failures)


def test_authenticated_fuzz_gets_no_server_error_and_no_schema_violation(gateway, schema, report):
    """F-1: with a valid token, SSE routes excluded."""
    url, auth = gateway.system.url, gateway.system.auth
    statuses: dict[int, int] = {}

    def conforms(case):
        response = case.call(base_url=url, headers=auth, timeout=20)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        checks = [not_a_server_error, content_type_conformance, response_schema_conformance]
        if case.meta and case.meta.generation.mode == GenerationMode.NEGATIVE:
            checks.append(negative_data_rejection)
        case.validate_response(response, checks=checks, headers=auth)

    ran, failures, covered = 0, [], []
    for key, operation in operations(schema):
        if key in SSE_OPERATIONS:
            continue
        covered.append(" ".join(key))
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            n, failed = run_operation(operation, mode, 25, conforms)
            ran, failures = ran + n, failures + failed
    report(
        "F-1",
        operations=len(covered),
        excluded=[" ".join(k) for k in SSE_OPERATIONS],
        examples=ran,
        statuses=statuses,
        server_errors=statuses.get(500, 0) + statuses.get(502, 0) + statuses.get(503, 0),
        failures=len(failures),
    )
    assert not failures, "\n".join(failures)


header_values = st.one_of(
    st.from_regex(r"[0-9]{1,12}", fullmatch=True),
    st.integers(-(10**12), 10**12).map(str),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x2FF, exclude_characters="\x7f"), max_size=30),
    st.sampled_from(["", " ", "1 ", " 1", "0x1", "1e3", "1.0", "+1", "-0", "00", "٣", "１", "9" * 40]),
)


def test_malformed_last_event_id_is_4xx_never_5xx_never_another_turns_events(gateway, report):
    """R-SSE-6: hypothesis over the header, against a turn of the caller's and one of another
    user's; the existing cases are in tests/gateway/test_bad_input.py."""
    running = gateway
    system = running.system

    async def two_turns():
        from harness.system import collect

        mine = await collect(system.client, system.url, "hello", None, system.token)
        bob = await system.new_token("bob-r-sse-6")
        theirs = await collect(system.client, system.url, "hello", None, bob)
        return mine, theirs

    mine, theirs = running.call(two_turns())
    my_turn, their_turn = mine[0]["data"]["turn_id"], theirs[0]["data"]["turn_id"]
    their_session = theirs[0]["data"]["session_id"]
    statuses: dict[int, int] = {}
    leaks = []
    with httpx.Client(timeout=10) as client:

        @settings(max_examples=300, **QUIET)
        @given(value=header_values, turn=st.sampled_from([my_turn, their_turn]))
        def fuzz(value, turn):
            value = value.strip(" \t")  # HTTP drops surrounding whitespace; h11 refuses to send it
            response = client.get(
                f"{system.url}/chat/{turn}/events", headers=system.auth | {"Last-Event-ID": value.encode()}
            )
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            try:
                after = parse_last_event_id(value.encode().decode("latin-1"))  # as the server reads it
                valid = True
            except Exception:  # noqa: BLE001 - the route's own verdict on the value
                valid = False
            if turn == their_turn:
                assert response.status_code in (400, 404)
                if response.status_code == 200 or their_session in response.text:
                    leaks.append(value)
            elif valid:
                assert response.status_code == 200
                got = [int(line[3:]) for line in response.text.splitlines() if line.startswith("id:")]
                assert got == [e["id"] for e in map(lambda e: {"id": int(e["id"])}, mine)][after:]
            else:
                assert response.status_code == 400
                assert response.json()["error"]["code"] == "invalid_last_event_id"

        fuzz()
    report(
        "R-SSE-6",
        examples=sum(statuses.values()),
        statuses=statuses,
        server_errors=sum(n for s, n in statuses.items() if s >= 500),
        other_users_events=len(leaks),
    )
    assert not leaks
    assert all(s < 500 for s in statuses)


def test_last_event_id_parser_accepts_exactly_plain_decimals(report):
    """R-SSE-6, the parser alone: any string is an id in 0..999999999 or a 400, nothing else."""
    from zocrates_gateway.errors import ApiError

    ran = []

    @settings(max_examples=1000, deadline=None)
    @given(value=st.text(max_size=20) | header_values)
    def parse(value):
        ran.append(1)
        plain = value.isascii() and value.isdigit() and (value == "0" or not value.startswith("0"))
        try:
            result = parse_last_event_id(value)
        except ApiError as exc:
            assert exc.status == 400 and value != ""
            assert not (plain and len(value) <= 9)
            return
        assert value == "" and result == 0 or (plain and str(result) == value and result < 10**9)

    parse()
    report("R-SSE-6-parser", examples=len(ran), failures=0)
