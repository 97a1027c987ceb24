"""Regression guard: no subscriber may run on faststream's default ack policy.

faststream's NATS default (REJECT_ON_ERROR) terminates a message whose handler raised: the
message is lost (shared/RELIABILITY.md, measured). Every service's app is built here and
each of its JetStream subscribers is checked.
"""

from __future__ import annotations

import importlib

import pytest
from faststream import AckPolicy

from zocrates_runtime.settings import ZocratesSettings

SERVICES = ["retrieval", "verifier", "discovery", "staging"]


class _Dummy:
    async def start(self): ...
    async def close(self): ...
    def health(self): return {}


@pytest.mark.parametrize("name", SERVICES)
def test_no_subscriber_uses_the_default_ack_policy(name):
    module = importlib.import_module(f"zocrates_{name}.app")
    app = module.create_app(ZocratesSettings(), **({"service": _Dummy()} if name in ("retrieval", "verifier", "discovery", "staging") else {}))
    subscribers = list(app.broker.subscribers)
    assert any(type(s).__name__.endswith("PullStreamSubscriber") for s in subscribers)
    for sub in subscribers:
        assert sub.ack_policy is AckPolicy.MANUAL, f"{name}: {sub} runs on {sub.ack_policy}"


def test_gateway_reply_subscriber_is_manual_too():
    from zocrates_gateway.app import create_app
    from zocrates_gateway.config import GatewaySettings

    app = create_app(GatewaySettings())
    subscribers = list(app.state.broker.subscribers)
    assert subscribers and all(s.ack_policy is AckPolicy.MANUAL for s in subscribers)
