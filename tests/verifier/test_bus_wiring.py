"""The verifier as a service: replicas share one subject, and the same process serves HTTP."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from zocrates_contracts import VerificationPair, VerificationRequested
from zocrates_runtime import bus
from zocrates_runtime.natsserver import free_port
from zocrates_runtime.settings import ZocratesSettings
from zocrates_verifier.adapters.backends.base import SINGLE_QUESTION
from zocrates_verifier.app import create_app
from zocrates_verifier.config import VerifierSettings
from zocrates_verifier.service import VerifierService

pytestmark = pytest.mark.connected
PASSAGE = "The somatic mutation rate was estimated using 387 pairs of monozygotic twins."


class CountingService(VerifierService):
    def __init__(self, settings):
        super().__init__(settings)
        self.requests = 0

    async def verify(self, request):
        self.requests += 1
        await asyncio.sleep(0.01)  # long enough for the other replica to take the next one
        return await super().verify(request)


async def test_two_replicas_share_the_work_and_every_request_is_answered_once(nats_server):
    settings = ZocratesSettings(nats_url=nats_server.url)
    replicas = [CountingService(VerifierSettings(provider="heuristic")) for _ in range(2)]
    apps = [create_app(settings, service=r) for r in replicas]
    gateway = bus.make_broker(settings)
    requester = bus.Requester(gateway, "gw")
    await gateway.start()
    await bus.ensure_streams(gateway)
    for app in apps:
        await app.start()
    try:

        def request(i: int) -> VerificationRequested:
            claim = "387 pairs of twins were sequenced." if i % 2 else "4,000 pairs of twins were sequenced."
            return VerificationRequested(
                turn_id=f"t{i}",
                session_id="s",
                user_id="u",
                reply_to=requester.reply_to(VerificationRequested),
                pairs=[VerificationPair(chunk_index=1, occurrence=1, claim=claim, source_text=PASSAGE)],
            )

        replies = await asyncio.gather(*(requester.request(request(i), timeout=15) for i in range(40)))
        assert [r.turn_id for r in replies] == [f"t{i}" for i in range(40)]
        assert all(r.provider == "heuristic" and r.error is None for r in replies)
        supported = [r.scores[0].probability for i, r in enumerate(replies) if i % 2]
        unsupported = [r.scores[0].probability for i, r in enumerate(replies) if not i % 2]
        assert min(supported) > max(unsupported), "the wrong number must score lower"
        assert sum(r.requests for r in replicas) == 40
        assert all(r.requests > 0 for r in replicas), [r.requests for r in replicas]
    finally:
        for app in apps:
            await app.stop()
        await gateway.stop()


async def test_the_service_process_also_serves_the_systemone_http_api(nats_server):
    port = free_port()
    service = VerifierService(VerifierSettings(provider="heuristic"))
    app = create_app(ZocratesSettings(nats_url=nats_server.url), service=service, http_port=port)
    await app.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(100):
                try:
                    health = await client.get("/health")
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.05)
            assert health.json()["status"] == "ok"
            r = await client.post(
                "/v1/systemone/batch",
                json={
                    "states": [{"claim": "387 pairs of twins were sequenced.", "source_text": PASSAGE}],
                    "questions": {"q": {"type": "noul", "instructions": SINGLE_QUESTION}},
                },
            )
            assert r.status_code == 200, r.text
            assert 0.0 <= r.json()["results"][0]["answers"]["q"]["noul"] <= 1.0
    finally:
        await app.stop()
