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
LIBRARY_SYNC_REQUESTED = f"{PREFIX}.library.sync.requested"
LIBRARY_SYNC_COMPLETED = f"{PREFIX}.library.sync.completed"
LIBRARY_UPLOAD_REQUESTED = f"{PREFIX}.library.upload.requested"
LIBRARY_UPLOAD_COMPLETED = f"{PREFIX}.library.upload.completed"
LIBRARY_STATUS_REQUESTED = f"{PREFIX}.library.status.requested"
LIBRARY_STATUS_COMPLETED = f"{PREFIX}.library.status.completed"
LIBRARY_LOOKUP_REQUESTED = f"{PREFIX}.library.lookup.requested"
LIBRARY_LOOKUP_COMPLETED = f"{PREFIX}.library.lookup.completed"
LIBRARY_OUTLINE_REQUESTED = f"{PREFIX}.library.outline.requested"
LIBRARY_OUTLINE_COMPLETED = f"{PREFIX}.library.outline.completed"


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
LIBRARY_SYNC_CONSUMER = "retrieval-library-sync"
LIBRARY_UPLOAD_CONSUMER = "retrieval-library-upload"
LIBRARY_STATUS_CONSUMER = "retrieval-library-status"
LIBRARY_LOOKUP_CONSUMER = "retrieval-library-lookup"
LIBRARY_OUTLINE_CONSUMER = "retrieval-library-outline"
#: Retrieval reads the items each finished turn cited (`TurnResolved`): their files are indexed early.
TURN_CITED_CONSUMER = "retrieval-turn-cited"
DISCOVERY_LIBRARY_CONSUMER = "discovery-library-sync"  # retired: discovery reads the catalog bucket

#: Object Store bucket of the lab-hosted libraries' attachment files (the claim-check of
#: `AttachmentUploaded`: a file never travels inside a message).
LIBRARY_BUCKET = "zocrates_library"


def library_object_name(user_id: str, library_id: str, key: str, sha256: str) -> str:
    """Where an uploaded attachment file lives in `LIBRARY_BUCKET`: by owner, library, key and content.

    Content-addressed, so a new version never overwrites the one being indexed, and an upload
    of an unchanged file lands on the object already there.
    """
    return f"{user_id}/{library_id}/{key}/{sha256}"


#: KV bucket of the lab-hosted libraries' catalog (synced metadata, uploaded-file records,
#: sync progress, ingest progress), shared by every retrieval replica and read by discovery.
#: Every key starts with `<kind>.<user>.`, so one user's reads never reach another's entries.
LIBRARY_CATALOG_BUCKET = "zocrates_library_catalog"


def catalog_item_key(user_id: str, library_id: str, key: str) -> str:
    """A synced item's entry: JSON `{"sync_id": ..., "item": <SyncedItem>}`."""
    return f"i.{user_id}.{library_id}.{key}"


def catalog_items_pattern(user_id: str) -> str:
    """Every synced item of a user (a subject wildcard, for a server-filtered KV watch)."""
    return f"i.{user_id}.>"


def catalog_synced_key(user_id: str) -> str:
    """Rewritten after each sync page of the user is applied (JSON `{"last_sync_at": <epoch s>}`):
    its revision says whether the synced items changed since it was last read."""
    return f"l.{user_id}"


#: Readiness probes: core request/reply on `health.<service>`, outside `zocrates.>` so the
#: audit stream does not capture them (a captured request would be answered by a PubAck).
HEALTH_PREFIX = "health"
SERVICES = ("retrieval", "verifier", "discovery", "staging")


def health_subject(service: str, instance_id: str | None = None) -> str:
    """`health.<service>`, which one replica of the service answers, or, with `instance_id`,
    `health.<service>.<instance>`, which only that replica answers (a container's health check)."""
    return f"{HEALTH_PREFIX}.{service}" + (f".{instance_id}" if instance_id else "")
