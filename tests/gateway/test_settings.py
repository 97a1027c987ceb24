"""`GET`/`PUT /settings`: each user's own settings, validated, applied to their turns; a stored
turn resolved again with a new threshold from its stored probabilities (`POST /citations/resolve`)."""

from __future__ import annotations

import pytest

from harness.system import running_system
from zocrates_contracts import EvidenceChunk, TurnRecord, VerificationSummary
from zocrates_gateway.adapters.sessions import TurnAudit
from zocrates_gateway.config import GatewaySettings
from zocrates_gateway.domain.settings import SettingsUpdate, UserSettings
from zocrates_gateway.turn import resolve_record

QUESTION = "What was the somatic mutation rate estimated from twins?"
DEFAULTS = {"unsupported_claims": "mark", "verification_enabled": True, "verification_threshold": None}


def test_the_threshold_lies_on_the_stepper_and_stored_settings_of_a_newer_build_still_read():
    assert [UserSettings(verification_threshold=x).verification_threshold for x in (0.5, 0.7000000001, 0.95)] == [
        0.5,
        0.7,
        0.95,
    ]
    for bad in (0.49, 0.96, 0.72, float("nan")):
        with pytest.raises(ValueError, match="0.50 to 0.95 in steps of 0.05"):
            UserSettings(verification_threshold=bad)
    stored = UserSettings.model_validate_json('{"unsupported_claims": "leave", "added_later": 1}')
    assert stored == UserSettings(unsupported_claims="leave")
    with pytest.raises(ValueError):
        SettingsUpdate.model_validate({"added_later": 1})


async def test_settings_default_change_per_key_and_stay_with_their_user(system):
    url, alice = f"{system.url}/settings", system.auth
    bob = {"Authorization": f"Bearer {await system.new_token('bob')}"}
    assert (await system.client.get(url, headers=alice)).json() == DEFAULTS
    r = await system.client.put(url, headers=alice, json={"unsupported_claims": "remove"})
    assert r.status_code == 200 and r.json() == DEFAULTS | {"unsupported_claims": "remove"}
    r = await system.client.put(url, headers=alice, json={"verification_threshold": 0.75})
    assert r.json() == DEFAULTS | {"unsupported_claims": "remove", "verification_threshold": 0.75}
    assert (await system.client.get(url, headers=alice)).json()["verification_threshold"] == 0.75
    assert (await system.client.get(url, headers=bob)).json() == DEFAULTS
    r = await system.client.put(url, headers=alice, json={"verification_threshold": None})
    assert r.json()["verification_threshold"] is None and r.json()["unsupported_claims"] == "remove"


@pytest.mark.parametrize(
    "body",
    [
        {"unsupported_claims": "hide"},
        {"unsupported_claims": None},
        {"verification_threshold": 0.97},
        {"verification_threshold": 0.45},
        {"verification_threshold": 0.62},
        {"verification_threshold": "high"},
        {"verification_enabled": "sometimes"},
        {"verification_enabled": "false"},  # never coerced: the schema says boolean
        {"verification_enabled": 0},
        {"verification_threshold": "0.7"},
        {"theme": "dark"},
        [],
    ],
)
@pytest.mark.asyncio(loop_scope="module")
async def test_a_bad_setting_is_a_422_with_a_json_body_and_changes_nothing(shared_system, body):
    system = shared_system
    url = f"{system.url}/settings"
    before = (await system.client.get(url, headers=system.auth)).json()
    r = await system.client.put(url, headers=system.auth, json=body)
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request", r.text
    assert (await system.client.get(url, headers=system.auth)).json() == before


@pytest.mark.asyncio(loop_scope="module")
async def test_settings_need_a_token(shared_system):
    system = shared_system
    assert (await system.client.get(f"{system.url}/settings")).status_code == 401
    r = await system.client.put(f"{system.url}/settings", json={"unsupported_claims": "leave"})
    assert r.status_code == 401


async def test_a_users_threshold_decides_their_turns_and_lists_what_it_leaves_unsupported(nats_server):
    async with running_system(nats_server.url) as system:
        system.verifier.probability = 0.7
        bob = await system.new_token("bob")
        await system.client.put(f"{system.url}/settings", headers=system.auth, json={"verification_threshold": 0.75})
        strict = (await system.chat(QUESTION))[-1]["data"]
        lenient = (await system.chat(QUESTION, token=bob))[-1]["data"]
        assert strict["schema_version"] == 7
        assert strict["verification"]["threshold"] == 0.75 and lenient["verification"]["threshold"] == 0.6
        assert strict["verification"]["kept"] == 0 and strict["verification"]["demoted"] >= 1
        assert lenient["verification"]["demoted"] == 0 and lenient["unsupported"] == []
        assert strict["unsupported"], "every claim failed, so every claim is unsupported"
        for claim in strict["unsupported"]:
            assert claim["probability"] == 0.7
            assert 0 <= claim["start"] <= claim["at"] <= claim["end"] <= len(strict["prose"])
            assert strict["prose"][claim["start"] : claim["end"]].strip()


async def test_a_stored_turn_is_resolved_again_with_a_new_threshold_without_verifying_again(nats_server):
    async with running_system(nats_server.url) as system:
        system.verifier.probability = 0.7
        done = (await system.chat(QUESTION))[-1]["data"]
        assert done["verification"]["demoted"] == 0 and done["unsupported"] == []
        calls = system.verifier.calls
        body = {"session_id": done["session_id"], "turn_id": done["turn_id"]}
        resolve = f"{system.url}/citations/resolve"

        await system.client.put(f"{system.url}/settings", headers=system.auth, json={"verification_threshold": 0.8})
        r = await system.client.post(resolve, json=body, headers=system.auth)
        assert r.status_code == 200, r.text
        strict = r.json()
        assert system.verifier.calls == calls, "re-resolution verified again"
        assert strict["verification"]["threshold"] == 0.8
        assert strict["verification"]["demoted"] == done["verification"]["kept"]
        assert strict["references"]["cited"] == [] and strict["unsupported"]
        assert "[" not in strict["prose"]
        session = f"{system.url}/sessions/{done['session_id']}"
        assert (await system.client.get(session, headers=system.auth)).json()["turns"][0] == strict

        await system.client.put(f"{system.url}/settings", headers=system.auth, json={"verification_threshold": None})
        again = (await system.client.post(resolve, json=body, headers=system.auth)).json()
        assert again["verification"]["threshold"] == 0.6 and again["unsupported"] == []
        assert again["prose"] == done["prose"] and again["citations"] == done["citations"]
        assert system.verifier.calls == calls

        bob = {"Authorization": f"Bearer {await system.new_token('bob')}"}
        assert (await system.client.post(resolve, json=body, headers=bob)).status_code == 404


async def test_a_user_who_turned_verification_off_gets_unverified_citations(nats_server):
    async with running_system(nats_server.url) as system:
        await system.client.put(f"{system.url}/settings", headers=system.auth, json={"verification_enabled": False})
        done = (await system.chat(QUESTION))[-1]["data"]
        assert system.verifier.calls == 0
        assert done["verification"]["enabled"] is False
        assert done["citations"] and all(
            o["verdict"] == "FAIL_OPEN" for c in done["citations"] for o in c["occurrences"]
        )


def test_a_failed_claim_inside_source_sections_the_model_wrote_is_not_placed_in_the_prose():
    chunks = [EvidenceChunk(chunk_id=f"c{i}", item_key=f"ITEMKEY{i}", text="Passage.") for i in (1, 2)]
    raw = "Claim one [1]. Claim two is wrong [2].\n\n# Cited Sources\n- A source that says things [2].\n"
    audit = TurnAudit(raw_text=raw, chunks=chunks, support_probabilities={1: [0.9], 2: [0.1, 0.1]})
    base = TurnRecord(turn_id="t", session_id="s", intent="library", question="q")
    record = resolve_record(GatewaySettings(), base, audit, VerificationSummary())
    assert [record.prose[c.start : c.end] for c in record.unsupported] == ["Claim two is wrong."]
    assert record.unsupported[0].probability == 0.1


async def test_the_export_follows_the_users_choice_for_unsupported_claims(nats_server):
    async with running_system(nats_server.url) as system:
        system.verifier.probability = 0.7
        settings = f"{system.url}/settings"
        await system.client.put(settings, headers=system.auth, json={"verification_threshold": 0.75})
        done = (await system.chat(QUESTION))[-1]["data"]
        claim = done["unsupported"][0]
        text = done["prose"][claim["start"] : claim["at"]]
        export = f"{system.url}/sessions/{done['session_id']}/turns/{done['turn_id']}/export"

        async def markdown(mode):
            await system.client.put(settings, headers=system.auth, json={"unsupported_claims": mode})
            return (await system.client.get(export, headers=system.auth)).json()["markdown"]

        marked, removed, left = await markdown("mark"), await markdown("remove"), await markdown("leave")
        assert f"{text} [unsupported]" in marked
        assert text in left and "[unsupported]" not in left
        assert text not in removed and "[unsupported]" not in removed


@pytest.mark.parametrize("route", ["resolve", "verify"])
async def test_a_write_to_the_turn_while_it_is_resolved_again_is_kept(nats_server, route):
    """Re-resolution and re-verification store their result over the turn as stored when they
    write, not over the one they read: a sentence attribution stored in between survives."""
    async with running_system(nats_server.url) as system:
        system.verifier.probability = 0.7
        done = (await system.chat(QUESTION))[-1]["data"]
        body = {"session_id": done["session_id"], "turn_id": done["turn_id"]}
        sessions = system.app.state.gateway.sessions
        read = sessions.get_turn
        attributed = []

        async def get_turn(*args):  # the route's read; the attribution lands before its write
            record = await read(*args)
            sessions.get_turn = read
            r = await system.client.post(
                f"{system.url}/citations/sentence_attribution",
                json=body | {"citation_index": 1, "occurrence": 1},
                headers=system.auth,
            )
            assert r.status_code == 200, r.text
            attributed.append(r.json())
            return record

        sessions.get_turn = get_turn
        await system.client.put(f"{system.url}/settings", headers=system.auth, json={"verification_threshold": 0.8})
        r = await system.client.post(f"{system.url}/citations/{route}", json=body, headers=system.auth)
        assert r.status_code == 200, r.text
        assert attributed and r.json()["attributions"] == attributed
        assert r.json()["verification"]["threshold"] == 0.8 and r.json()["unsupported"]
        stored = (await system.client.get(f"{system.url}/sessions/{done['session_id']}", headers=system.auth)).json()
        assert stored["turns"][0] == r.json()
