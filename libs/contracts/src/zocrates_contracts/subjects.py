"""Subjects, streams and stores: one place, imported by every service."""

from __future__ import annotations

PREFIX = "zocrates"

TURN_REQUESTED = f"{PREFIX}.turn.requested"
TURN_RESOLVED = f"{PREFIX}.turn.resolved"
RETRIEVAL_REQUESTED = f"{PREFIX}.retrieval.requested"
RETRIEVAL_COMPLETED = f"{PREFIX}.retrieval.completed"
VERIFICATION_REQUESTED = f"{PREFIX}.verification.requested"
VERIFICATION_COMPLETED = f"{PREFIX}.verification.completed"
DISCOVERY_REQUESTED = f"{PREFIX}.discovery.requested"
DISCOVERY_COMPLETED = f"{PREFIX}.discovery.completed"
RECHECK_REQUESTED = f"{PREFIX}.recheck.requested"
RECHECK_COMPLETED = f"{PREFIX}.recheck.completed"
STAGING_REQUESTED = f"{PREFIX}.staging.requested"
STAGING_COMPLETED = f"{PREFIX}.staging.completed"


def reply_subject(instance_id: str, completed_subject: str) -> str:
    """Where the service answering a request sends its reply: `zocrates.reply.<instance>.<kind>`.

    The gateway replica `instance_id` listens on `zocrates.reply.<instance>.>`.
    """
    kind = completed_subject.removeprefix(f"{PREFIX}.").split(".")[0]
    return f"{PREFIX}.reply.{instance_id}.{kind}"


def reply_wildcard(instance_id: str) -> str:
    return f"{PREFIX}.reply.{instance_id}.>"


#: The audit stream: every contract message, replayable. Services consume their requests
#: from it through durable queue consumers filtered on their request subject.
AUDIT_STREAM = "ZOCRATES"
AUDIT_SUBJECTS = [f"{PREFIX}.>"]

#: Poison and undeliverable messages, with the reason in headers; kept for inspection.
DLQ_STREAM = "ZOCRATES_DLQ"
DLQ_PREFIX = "dlq"
DLQ_SUBJECTS = [f"{DLQ_PREFIX}.>"]

#: Durable turn events (the SSE stream): `events.<turn_id>`; resumable by event id.
EVENTS_STREAM = "ZOCRATES_EVENTS"
EVENTS_PREFIX = "events"
EVENTS_SUBJECTS = [f"{EVENTS_PREFIX}.>"]

#: KV buckets.
SESSIONS_BUCKET = "zocrates_sessions"
TOKENS_BUCKET = "zocrates_tokens"

#: Durable consumer (queue group) names, one per capability.
RETRIEVAL_CONSUMER = "retrieval"
VERIFIER_CONSUMER = "verifier"
DISCOVERY_CONSUMER = "discovery"
RECHECK_CONSUMER = "discovery-recheck"
STAGING_CONSUMER = "staging"

#: Readiness probes: core request/reply on `health.<service>`, outside `zocrates.>` so the
#: audit stream does not capture them (a captured request would be answered by a PubAck).
HEALTH_PREFIX = "health"
SERVICES = ("retrieval", "verifier", "discovery", "staging")


def health_subject(service: str) -> str:
    return f"{HEALTH_PREFIX}.{service}"
