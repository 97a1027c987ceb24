"""Ingest -> search -> evidence over a real nats-server, through the lead's bus wiring."""

from __future__ import annotations

import pytest

from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import EvidenceRetrieved, RetrievalRequested
from zocrates_retrieval.app import create_app
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.service import RetrievalService
from zocrates_runtime import bus
from zocrates_runtime.settings import ZocratesSettings

pytestmark = pytest.mark.connected


async def test_evidence_over_the_bus_for_the_owner_and_a_refusal_for_anyone_else(
    nats_server, tmp_path, schema_dir, make, no_home_zotero
):
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    item, item_key = b.add_item(
        "journalArticle",
        {"title": "Thermal conductivity of graphene", "date": "2008"},
        [("Alexander", "Balandin", "author")],
    )
    b.add_attachment(
        item,
        "g.pdf",
        make.text_pdf(
            [("Results", ["Suspended single-layer graphene conducts heat at up to 5000 W/mK, far above copper."])]
        ),
    )
    b.close()
    service = RetrievalService(RetrievalSettings(zotero_dir=b.dir, data_dir=tmp_path / "data", embedding_device="cpu"))
    settings = ZocratesSettings(nats_url=nats_server.url)
    app = create_app(settings, service=service)
    gateway = bus.make_broker(settings)
    requester = bus.Requester(gateway, "gw1")
    await gateway.start()
    await bus.ensure_streams(gateway)
    await app.start()
    try:
        await service._ingest_task

        def ask(user: str) -> RetrievalRequested:
            return RetrievalRequested(
                turn_id=f"t-{user}",
                session_id="s1",
                user_id=user,
                top_k=3,
                reply_to=requester.reply_to(RetrievalRequested),
                query="How well does graphene conduct heat? [1]",
            )

        reply = await requester.request(ask("local"), timeout=30)
        assert isinstance(reply, EvidenceRetrieved) and reply.error is None
        assert reply.turn_id == "t-local" and reply.chunks[0].item_key == item_key
        assert "5000 W/mK" in reply.chunks[0].text

        refused = await requester.request(ask("mallory"), timeout=30)
        assert refused.chunks == [] and refused.error.code == "not_available"
    finally:
        await app.stop()
        await gateway.stop()
