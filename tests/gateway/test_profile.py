"""`POST /register` / `GET /me`: the researcher's contact email reaches discovery's polite pools."""

from __future__ import annotations

from harness.system import running_system
from zocrates_contracts import CandidatesFound


class RecordingDiscovery:
    def __init__(self):
        self.requests = []

    async def start(self): ...
    async def close(self): ...
    def health(self):
        return {"status": "ok"}

    async def discover(self, request):
        self.requests.append(request)
        return CandidatesFound(**request.reply_fields())


async def test_a_registered_contact_email_goes_with_that_users_discovery_requests_only(nats_server):
    discovery = RecordingDiscovery()
    async with running_system(nats_server.url, discovery=discovery) as system:
        me = await system.client.get(f"{system.url}/me", headers=system.auth)
        assert me.status_code == 200 and me.json() == {"user_id": "alice", "contact_email": None}
        registered = await system.client.post(
            f"{system.url}/register", headers=system.auth, json={"contact_email": " ada@lab.org "}
        )
        assert registered.json() == {"user_id": "alice", "contact_email": "ada@lab.org"}
        assert (await system.client.get(f"{system.url}/me", headers=system.auth)).json()[
            "contact_email"
        ] == "ada@lab.org"

        assert (await system.chat("find new papers about transformers"))[-1]["event"] == "done"
        bob = await system.new_token("bob")
        assert (await system.chat("find new papers about transformers", token=bob))[-1]["event"] == "done"
        assert [(r.user_id, r.contact_email, r.schema_version) for r in discovery.requests] == [
            ("alice", "ada@lab.org", 3),
            ("bob", None, 3),
        ]

        cleared = await system.client.post(f"{system.url}/register", headers=system.auth, json={"contact_email": None})
        assert cleared.json()["contact_email"] is None


async def test_a_bad_registration_is_a_clear_4xx_and_changes_nothing(nats_server):
    async with running_system(nats_server.url) as system:
        await system.client.post(f"{system.url}/register", headers=system.auth, json={"contact_email": "ada@lab.org"})
        for body in ({"contact_email": "not an email"}, {"contact_email": "a@b.c" * 100}, {"email": "ada@lab.org"}, {}):
            r = await system.client.post(f"{system.url}/register", headers=system.auth, json=body)
            assert 400 <= r.status_code < 500 and r.json()["error"], body
        anonymous = await system.client.post(f"{system.url}/register", json={"contact_email": "eve@evil.org"})
        assert anonymous.status_code == 401
        assert (await system.client.get(f"{system.url}/me", headers=system.auth)).json()[
            "contact_email"
        ] == "ada@lab.org"
