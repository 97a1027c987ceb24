"""Bad input gets a clear 4xx with a JSON error, and nothing stored changes."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.connected


async def sessions_of(system) -> list:
    return (await system.client.get(f"{system.url}/sessions", headers=system.auth)).json()["sessions"]


@pytest.mark.parametrize(
    "body,status,code",
    [
        ({"message": ""}, 422, "invalid_request"),
        ({"message": "   "}, 422, "empty_message"),
        ({"message": "x" * (32 * 1024 + 1)}, 413, "message_too_large"),
        ({}, 422, "invalid_request"),
        ({"message": "hi", "session_id": "../etc"}, 422, "invalid_request"),
        ({"message": "hi", "session_id": "doesnotexist"}, 404, "session_not_found"),
    ],
)
async def test_bad_chat_bodies_are_rejected_and_change_nothing(system, body, status, code):
    before = await sessions_of(system)
    response = await system.client.post(f"{system.url}/chat", json=body, headers=system.auth)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert await sessions_of(system) == before


async def test_malformed_json_is_a_400(system):
    response = await system.client.post(
        f"{system.url}/chat", content=b'{"message": ', headers=system.auth | {"Content-Type": "application/json"}
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == "malformed_json"


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Basic abc",
        "Bearer zoc_nope_nope",
        "Bearer zoc_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
    ],
)
@pytest.mark.parametrize(
    "method,path",
    [
        ("POST", "/chat"),
        ("GET", "/sessions"),
        ("GET", "/sessions/abc"),
        ("DELETE", "/sessions/abc"),
        ("GET", "/chat/abc/events"),
        ("POST", "/chat/abc/cancel"),
        ("POST", "/citations/verify"),
        ("POST", "/citations/resolve"),
        ("GET", "/settings"),
        ("PUT", "/settings"),
        ("POST", "/citations/sentence_attribution"),
        ("POST", "/llm/test_decision_model"),
    ],
)
@pytest.mark.asyncio(loop_scope="module")
async def test_every_route_but_health_needs_a_valid_token(shared_system, header, method, path):
    system = shared_system
    headers = {"Authorization": header} if header is not None else {}
    response = await system.client.request(
        method, f"{system.url}{path}", headers=headers, json={"message": "hi"} if method == "POST" else None
    )
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]["code"] == "unauthorized"


async def test_revoked_token_stops_working(system):
    token = await system.new_token("carol")
    headers = {"Authorization": f"Bearer {token}"}
    assert (await system.client.get(f"{system.url}/sessions", headers=headers)).status_code == 200
    await system.app.state.gateway.tokens.revoke(token.split("_")[1])
    assert (await system.client.get(f"{system.url}/sessions", headers=headers)).status_code == 401


@pytest.mark.parametrize("value", ["-1", "1e9", "00", "01", "99999999999999", "١".encode(), "abc", "+1"])
@pytest.mark.asyncio(loop_scope="module")
async def test_malformed_last_event_id_is_a_400(shared_system, value):
    system = shared_system
    response = await system.client.get(f"{system.url}/chat/abc/events", headers=system.auth | {"Last-Event-ID": value})
    assert response.status_code == 400


async def test_tokens_are_stored_only_as_digests(system):
    token = await system.new_token("dave")
    secret = token.split("_", 2)[2]
    kv = system.app.state.gateway.tokens.kv
    for key in await kv.keys():
        assert secret.encode() not in (await kv.get(key)).value
