"""The library routes: `POST /library/sync`, `PUT /library/attachments/{key}` (lab-hosted),
`GET /library/status` and `POST /library/rescan` (either kind of library), and
`GET /library/collections` and `GET /library/tags`, what a question's scope may name.

In the hosted deployment the plugin uploads the researcher's library: its metadata in pages
(each page one `LibrarySyncRequested` to retrieval, which stores it and answers which files it
still needs), then each of those files. A file never travels on the bus: it is streamed into
the `zocrates_library` object store under a name made of its owner, library, key and SHA-256,
and retrieval gets a claim-check (`AttachmentUploaded`). Retrieval owns the catalog, so it
decides whether the key is an attachment of this user's synced library; when it is not, the
gateway deletes the object it just wrote and answers 404, so a rejected request leaves
nothing behind.

The user is always the token's: no route takes a user id, and every object name and bus
message carries the caller's own.
"""

from __future__ import annotations

import hashlib
import json
import tempfile

import nats.js.errors
from fastapi import APIRouter, Path, Query, Request
from nats.js import api
from pydantic import ValidationError

from zocrates_contracts import (
    AttachmentAccepted,
    AttachmentUploaded,
    LibraryOutline,
    LibraryOutlineRequested,
    LibraryStatus,
    LibraryStatusRequested,
    LibrarySynced,
    LibrarySyncRequested,
    Message,
    new_id,
)
from zocrates_contracts.base import ITEM_KEY_PATTERN, LIBRARY_ID_PATTERN
from zocrates_contracts.messages import MAX_SYNC_BODY, UPLOAD_TYPES
from zocrates_contracts.subjects import library_object_name
from zocrates_gateway.auth import CurrentUser, Principal
from zocrates_gateway.context import Gateway
from zocrates_gateway.deps import GatewayDep
from zocrates_gateway.errors import ApiError
from zocrates_runtime import bus

router = APIRouter()

SYNC_FIELDS = {"library_id", "sync_id", "page", "final", "full", "items", "deleted", "collections"}
SPOOL_IN_MEMORY = 8 * 1024 * 1024  # bigger uploads spill to a temp file on disk
ENVELOPE = {"schema_version", "message_id", "turn_id", "session_id", "user_id", "trace", "created_at", "error"}


def _ids(user: Principal) -> dict:
    """Envelope of a library request: it belongs to no chat turn, so it gets ids of its own."""
    return {"turn_id": new_id(), "session_id": new_id(), "user_id": user.user_id}


async def _ask(gateway: Gateway, what: str, request_cls: type, **fields) -> Message:
    """Retrieval's reply to a library request; no reply in time is a 504."""
    timeout = gateway.settings.library_timeout_s
    try:
        return await gateway.requester.ask(request_cls, timeout, **fields)
    except bus.NoReply:
        raise ApiError(
            504,
            "library_timeout",
            f"The library service did not {what} within {timeout:.0f} s; try again (a repeated request is harmless).",
        ) from None


def _service_error(reply) -> ApiError:
    return ApiError(503, f"library_{reply.error.code}", reply.error.message)


@router.post("/library/sync")
async def sync(request: Request, gateway: GatewayDep, user: CurrentUser) -> dict:
    """Store one page of the caller's library metadata; answers which attachment files to upload."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_SYNC_BODY:
        raise _too_large_sync()
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_SYNC_BODY:
            raise _too_large_sync()
    try:
        page = json.loads(body)
    except ValueError:
        raise ApiError(400, "malformed_json", "The request body is not valid JSON.") from None
    if not isinstance(page, dict):
        raise ApiError(422, "invalid_request", "body: expected a JSON object (a sync page).")
    if unknown := sorted(set(page) - SYNC_FIELDS):
        raise ApiError(
            422,
            "invalid_request",
            f"body: unknown fields {', '.join(unknown[:5])}; a sync page has {', '.join(sorted(SYNC_FIELDS))}.",
        )
    try:
        reply: LibrarySynced = await _ask(gateway, "store the page", LibrarySyncRequested, **page, **_ids(user))
    except ValidationError as exc:  # the page itself: a reply that fails validation is MalformedReply
        details = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()[:20]]
        summary = "; ".join(f"{'.'.join(map(str, d['loc'])) or 'body'}: {d['msg']}" for d in details[:5])
        raise ApiError(422, "invalid_request", summary) from None
    if reply.error is not None:
        raise _service_error(reply)
    return reply.model_dump(mode="json", exclude=ENVELOPE)


def _too_large_sync() -> ApiError:
    return ApiError(
        413,
        "sync_page_too_large",
        f"A sync page may be at most {MAX_SYNC_BODY // 1024} KB; "
        "send the library in more pages (same sync_id, page 0, 1, ..., the last one final).",
    )


@router.put("/library/attachments/{key}")
async def upload(
    request: Request,
    gateway: GatewayDep,
    user: CurrentUser,
    key: str = Path(pattern=ITEM_KEY_PATTERN),
    library_id: str = Query(default="user", pattern=LIBRARY_ID_PATTERN),
) -> dict:
    """Upload the file of a synced attachment (the raw bytes as the body, its type as Content-Type)."""
    settings = gateway.settings
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type not in UPLOAD_TYPES:
        raise ApiError(
            415,
            "unsupported_media_type",
            f"Content-Type {content_type or '(none)'} is not indexed; send one of {', '.join(sorted(UPLOAD_TYPES))}.",
        )
    cap = settings.library_max_upload_mb * 1024 * 1024
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise _too_large_upload(cap)
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
        digest, size, head = hashlib.sha256(), 0, b""
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                raise _too_large_upload(cap)
            if len(head) < 8:
                head += chunk[:8]
            digest.update(chunk)
            spool.write(chunk)
        if size == 0:
            raise ApiError(422, "empty_upload", "The request body is empty; send the attachment's bytes.")
        if content_type == "application/pdf" and not head.startswith(b"%PDF-"):
            raise ApiError(415, "not_a_pdf", "The body is declared application/pdf but does not start with %PDF-.")
        sha256 = digest.hexdigest()
        name = library_object_name(user.user_id, library_id, key, sha256)
        bucket = await gateway.library_files()
        try:
            existed = not (await bucket.get_info(name)).deleted
        except nats.js.errors.ObjectNotFoundError:
            existed = False
        if not existed:  # the same bytes under the same name are already there otherwise
            spool.seek(0)
            await bucket.put(
                name,
                spool,
                meta=api.ObjectMeta(
                    name=name, description="library attachment", headers={"Zocrates-Owner": [user.user_id]}
                ),
            )
    reply: AttachmentAccepted = await _ask(
        gateway,
        "record the upload",
        AttachmentUploaded,
        **_ids(user),
        library_id=library_id,
        key=key,
        object_name=name,
        sha256=sha256,
        size=size,
        content_type=content_type,
    )
    if reply.error is not None:
        if not existed:
            await bucket.delete(name)
        if reply.error.code == "invalid":  # the key is no attachment of the caller's synced library
            raise ApiError(404, "unknown_attachment", reply.error.message)
        raise _service_error(reply)
    return {"library_id": library_id, "key": key, "sha256": sha256, "size": size, "status": reply.status}


def _too_large_upload(cap: int) -> ApiError:
    return ApiError(
        413,
        "upload_too_large",
        f"An attachment may be at most {cap // (1024 * 1024)} MB (ZOCRATES_LIBRARY_MAX_UPLOAD_MB).",
    )


@router.get("/library/status")
async def status(gateway: GatewayDep, user: CurrentUser) -> dict:
    """The caller's library: synced items, uploads, ingest progress, failures by reason."""
    return await _status(gateway, user, rescan=False)


@router.post("/library/rescan")
async def rescan(gateway: GatewayDep, user: CurrentUser) -> dict:
    """Index the caller's library again now (only what changed), e.g. right after an import;
    answers its status. A library that is already being indexed is indexed once more after."""
    answer = await _status(gateway, user, rescan=True)
    if answer["source"] == "none":
        raise ApiError(
            404,
            "no_library",
            "There is no library to index for this user: the server reads no "
            "Zotero data directory for you and you have synced none (POST /library/sync).",
        )
    return answer


async def _status(gateway: Gateway, user: Principal, *, rescan: bool) -> dict:
    reply: LibraryStatus = await _ask(gateway, "answer", LibraryStatusRequested, **_ids(user), rescan=rescan)
    return reply.model_dump(mode="json", exclude=ENVELOPE - {"error"})


@router.get("/library/collections")
async def collections(gateway: GatewayDep, user: CurrentUser) -> dict:
    """The caller's libraries and their collections (`parent_key` places each in its tree),
    with the items directly in each: what a question's scope may name."""
    return await _outline(gateway, user, "collections")


@router.get("/library/tags")
async def tags(gateway: GatewayDep, user: CurrentUser) -> dict:
    """The caller's libraries and their tags, with the items carrying each."""
    return await _outline(gateway, user, "tags")


async def _outline(gateway: Gateway, user: Principal, part: str) -> dict:
    reply: LibraryOutline = await _ask(gateway, "answer", LibraryOutlineRequested, **_ids(user), part=part)
    if reply.error is not None:
        raise _service_error(reply)
    return reply.model_dump(mode="json", include={"libraries", part, "truncated"})
