"""Instant library answers for the harness's FakeRetrieval (the hosted-library routes)."""

from __future__ import annotations

from zocrates_contracts import AttachmentAccepted, LibraryStatus, LibrarySynced, ServiceError


def add_library(retrieval) -> list:
    """Give `retrieval` (harness FakeRetrieval) the library methods; returns the log of the
    user ids each request carried, which tenancy tests check."""
    seen: list = []

    async def sync_library(request):
        seen.append(("sync", request.user_id))
        return LibrarySynced(
            **request.reply_fields(),
            library_id=request.library_id,
            sync_id=request.sync_id,
            page=request.page,
            stored=len(request.items),
        )

    async def accept_upload(request):
        seen.append(("upload", request.user_id))
        return AttachmentAccepted(
            **request.reply_fields(),
            error=ServiceError(
                code="invalid", service="retrieval", message="Not an attachment of your synced library."
            ),
        )

    async def library_status(request):
        seen.append(("status", request.user_id))
        return LibraryStatus(**request.reply_fields(), source="hosted", items=7 if request.user_id == "alice" else 0)

    retrieval.sync_library, retrieval.accept_upload, retrieval.library_status = (
        sync_library,
        accept_upload,
        library_status,
    )
    return seen
