"""The bus's request/reply as the services and the gateway use it: a request consumer and a
requester on two connections of a real nats-server (tests/bus)."""

from __future__ import annotations

from zocrates_contracts import RetrievalRequested
from zocrates_runtime.bus import Requester, ensure_streams, make_broker, request_consumer
from zocrates_runtime.settings import ZocratesSettings


def request(requester: Requester, **fields) -> RetrievalRequested:
    """A retrieval request whose reply comes back to `requester`; `fields` replace the defaults."""
    defaults = dict(turn_id="t1", session_id="s1", user_id="u1", query="q")
    return RetrievalRequested(**defaults | fields, reply_to=requester.reply_to(RetrievalRequested))


async def start_pair(nats_server, handler, **consumer_options):
    """`handler` as retrieval's request consumer, and the gateway's requester, both started:
    (service broker, gateway broker, requester)."""
    settings = ZocratesSettings(nats_url=nats_server.url, instance_id="gw1")
    service = make_broker(settings)
    request_consumer(service, RetrievalRequested, durable="retrieval", service="retrieval", **consumer_options)(handler)
    gateway = make_broker(settings)
    requester = Requester(gateway, "gw1")
    await gateway.start()
    await ensure_streams(gateway)
    await service.start()
    return service, gateway, requester
