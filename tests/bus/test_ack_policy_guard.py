"""Regression guard: no subscriber may run on faststream's default ack policy.

faststream's NATS default (REJECT_ON_ERROR) terminates a message whose handler raised: the
message is lost (shared/RELIABILITY.md, measured). Every service's app is built here and
each of its JetStream subscribers is checked.
"""

from __future__ import annotations

import pytest
from faststream import AckPolicy

from harness.system import BUS_SERVICES, durable_subscriptions, idle_app


@pytest.mark.parametrize("name", BUS_SERVICES)
def test_no_subscriber_uses_the_default_ack_policy(name):
    app = idle_app(name)
    subscribers = list(app.broker.subscribers)
    assert any(type(s).__name__.endswith("PullStreamSubscriber") for s in subscribers)
    for sub in subscribers:
        assert sub.ack_policy is AckPolicy.MANUAL, f"{name}: {sub} runs on {sub.ack_policy}"


def test_gateway_reply_subscriber_is_manual_too():
    from zocrates_gateway.app import create_app
    from zocrates_gateway.config import GatewaySettings

    app = create_app(GatewaySettings())
    subscribers = list(app.state.gateway.broker.subscribers)
    assert subscribers and all(s.ack_policy is AckPolicy.MANUAL for s in subscribers)


def test_every_request_is_redelivered_while_its_caller_still_waits():
    """A job of a killed replica comes back after AckWait: at most half the gateway's deadline
    for that request leaves the redelivery time to answer (docs/reliability.md, R-GPU-5)."""
    from zocrates_contracts import subjects
    from zocrates_gateway.config import GatewaySettings
    from zocrates_gateway.importing import RECHECK_TIMEOUT_S

    gw = GatewaySettings()
    deadline = {
        subjects.RETRIEVAL_REQUESTED: gw.retrieval_timeout_s,
        subjects.VERIFICATION_REQUESTED: min(gw.verification_timeout_s, gw.verification_budget_s),
        subjects.DISCOVERY_REQUESTED: gw.discovery_timeout_s,
        subjects.RECHECK_REQUESTED: RECHECK_TIMEOUT_S,
        subjects.STAGING_REQUESTED: gw.staging_timeout_s,
        subjects.LIBRARY_SYNC_REQUESTED: gw.library_timeout_s,
        subjects.LIBRARY_UPLOAD_REQUESTED: gw.library_timeout_s,
        subjects.LIBRARY_STATUS_REQUESTED: gw.library_timeout_s,
        subjects.LIBRARY_LOOKUP_REQUESTED: gw.retrieval_timeout_s,
        subjects.LIBRARY_OUTLINE_REQUESTED: gw.library_timeout_s,
    }
    checked = set()
    for name in BUS_SERVICES:
        for subject, _, config in durable_subscriptions(idle_app(name)):
            if subject == subjects.TURN_RESOLVED:
                continue  # an event: nobody waits for it
            assert subject in deadline, f"{name}: no gateway deadline known for {subject}"
            assert config.ack_wait <= deadline[subject] / 2, (
                f"{name}: AckWait {config.ack_wait} s on {subject} is over half its {deadline[subject]} s deadline"
            )
            checked.add(subject)
    assert checked == set(deadline)
