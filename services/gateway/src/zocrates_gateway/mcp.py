"""The library as MCP tools: `POST /mcp` (streamable HTTP), and through `zocrates mcp` over stdio.

Four tools, each the caller's own library only (the bearer token's user, as everywhere else):

- `ask_library`: a turn exactly as `POST /chat` runs it (routing, retrieval, synthesis,
  verification, resolution, stored in the session), answered with its final record;
- `search_library`: the passages retrieval finds for a query, with their items' metadata;
- `find_papers`: papers found online, those already in the library left out;
- `get_item`: the library's items with a DOI, arXiv id, PMID or exact title.

The endpoint is stateless and answers JSON (no MCP session survives a request), so any
gateway replica answers any call. It is guarded by the same bearer token as the rest of the
API, checked before the MCP transport sees the request: without one it is a 401 with the
API's JSON error body. A tool that cannot answer returns an MCP tool error
(`isError`) whose text holds the API's error code (`session_not_found: ...`).
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from zocrates_citations import format_authors
from zocrates_contracts import (
    ID_PATTERN,
    CandidatesFound,
    DiscoveryRequested,
    EvidenceRetrieved,
    LibraryItemsFound,
    LibraryLookupRequested,
    RetrievalRequested,
    new_id,
)
from zocrates_contracts.messages import MAX_QUERY_CHARS
from zocrates_contracts.scopes import RetrievalScope
from zocrates_gateway.adapters.tokens import Principal
from zocrates_gateway.auth import require_principal
from zocrates_gateway.context import Gateway
from zocrates_gateway.domain.lookup import read_message
from zocrates_gateway.domain.synthesis import back_matter_topics
from zocrates_gateway.errors import ApiError
from zocrates_gateway.turns import checked_message, start_turn
from zocrates_runtime import bus

PATH = "/mcp"
#: What an answer's record leaves out: `prose` and `references` say it again (`text`, `sources`
#: as markdown with the sidebar's hooks), and the session's memory of it is for later turns.
ANSWER_OMITS = {"text", "sources", "coordinator_view"}
PASSAGE_FIELDS = {
    "item_key",
    "library_id",
    "attachment_key",
    "title",
    "creators",
    "year",
    "publication",
    "section",
    "pages",
    "role",
    "text",
    "score",
}

ScopeArg = Annotated[
    RetrievalScope | None,
    Field(
        description="Where in the library to search: a library, a collection (with or without its "
        "subcollections), a tag, a set of items or one attachment; omit for the whole library"
    ),
]


def build_server(gateway: Gateway) -> MCPServer:
    """The MCP server of `gateway`: its tools, each answering for the request's principal."""
    server = MCPServer(
        "zocrates",
        instructions="Answers from the user's own Zotero library, with verified citations; "
        "searches it; finds papers online that the user does not own yet.",
    )

    @server.tool(structured_output=True)
    async def ask_library(
        question: Annotated[str, Field(min_length=1, description="The question, at most 32 KB of UTF-8")],
        ctx: Context,
        scope: ScopeArg = None,
        session_id: Annotated[
            str | None,
            Field(pattern=ID_PATTERN, description="Continue this session (a follow-up question); omit for a new one"),
        ] = None,
    ) -> dict[str, Any]:
        """Answer a question from the library, as the Zocrates sidebar does: the answer's prose with
        [n] citations, each citation with its passage (`quote`), the claims it supports and their
        support probabilities and verdicts, and the sources in two tiers (`references.cited`,
        `references.considered`). A request for new literature is answered with `candidates`."""
        return await answer(gateway, _principal(ctx), question, scope, session_id)

    @server.tool(structured_output=True)
    async def search_library(
        query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)],
        ctx: Context,
        scope: ScopeArg = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> dict[str, Any]:
        """The library's passages that best match `query`, best first, each with the pages it sits
        on (`pages.label`: the page number printed in the paper) and its item's key, library,
        title, creators, year and publication."""
        return await search(gateway, _principal(ctx), query, scope, limit)

    @server.tool(structured_output=True)
    async def find_papers(
        query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)],
        ctx: Context,
        from_year: Annotated[int | None, Field(ge=1000, le=3000, description="Published in or after")] = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> dict[str, Any]:
        """Papers found online (OpenAlex and others) for `query` that are not in the library:
        `candidates`, and in `owned` those left out because the library holds them."""
        return await find(gateway, _principal(ctx), query, from_year, limit)

    @server.tool(structured_output=True)
    async def get_item(
        identifier: Annotated[
            str,
            Field(
                min_length=1,
                max_length=500,
                description="A DOI, an arXiv id, a PMID or an exact title",
            ),
        ],
        ctx: Context,
    ) -> dict[str, Any]:
        """The library's items with this identifier or title: key, library, title, creators, year,
        publication, identifiers and collections; `items` is empty when the library has none."""
        return await item(gateway, _principal(ctx), identifier)

    return server


def _principal(ctx: Context) -> Principal:
    return ctx.request_context.request.state.principal


async def answer(
    gateway: Gateway,
    user: Principal,
    question: str,
    scope: RetrievalScope | None,
    session_id: str | None,
) -> dict[str, Any]:
    """Run a turn as `POST /chat` does and return its record (`ANSWER_OMITS` aside)."""
    try:
        message = checked_message(gateway.settings, question)
    except ApiError as exc:
        raise ToolError(f"{exc.code}: {exc.message}") from None
    if session_id is not None and await gateway.sessions.get_meta(user.user_id, session_id) is None:
        raise ToolError(f"session_not_found: No session {session_id} for this user.")
    turn = start_turn(gateway, user.user_id, session_id or new_id(), message, scope)
    async for event in turn.follow():
        if event.event == "error":
            raise ToolError(f"{event.data['code']}: {event.data['message']}")
        if event.event == "done":
            return {k: v for k, v in event.data.items() if k not in ANSWER_OMITS}
    raise ToolError("internal: the turn ended without an answer.")


async def search(
    gateway: Gateway, user: Principal, query: str, scope: RetrievalScope | None, limit: int
) -> dict[str, Any]:
    reply: EvidenceRetrieved = await _ask(
        gateway,
        user,
        "retrieval",
        RetrievalRequested,
        query=query,
        top_k=limit,
        scope=scope,
        back_matter=back_matter_topics(query),
    )
    passages = [
        chunk.model_dump(mode="json", include=PASSAGE_FIELDS) | {"authors": format_authors(chunk.creators)}
        for chunk in reply.chunks
    ]
    return {"passages": passages, "scope_empty": reply.scope_empty}


async def find(gateway: Gateway, user: Principal, query: str, from_year: int | None, limit: int) -> dict[str, Any]:
    profile = await gateway.sessions.get_profile(user.user_id)
    reply: CandidatesFound = await _ask(
        gateway,
        user,
        "discovery",
        DiscoveryRequested,
        queries=[query],
        from_year=from_year,
        limit=limit,
        contact_email=profile.contact_email,
    )
    owned = [
        {
            "title": d.candidate.title,
            "doi": d.candidate.doi,
            "reason": d.reason,
            "item_key": d.matched_item_key,
        }
        for d in reply.dropped
    ]
    return {
        "candidates": [c.model_dump(mode="json") for c in reply.candidates],
        "owned": owned,
        "notes": reply.notes,
    }


async def item(gateway: Gateway, user: Principal, identifier: str) -> dict[str, Any]:
    asked = read_message(identifier)
    names = {"dois": asked.of("doi"), "arxiv_ids": asked.of("arxiv"), "pmids": asked.of("pmid")}
    if not any(names.values()):
        names["titles"] = [identifier.strip().strip("\"“”'")]
    reply: LibraryItemsFound = await _ask(gateway, user, "retrieval", LibraryLookupRequested, **names)
    return {
        "items": [i.model_dump(mode="json") for i in reply.items],
        "searched_items": reply.searched_items,
    }


async def _ask(gateway: Gateway, user: Principal, service: str, request_cls: type, **fields):
    """The service's reply to a request of this user; its silence or its error is a tool error."""
    s = gateway.settings
    timeout = s.discovery_timeout_s if service == "discovery" else s.retrieval_timeout_s
    ids = {"turn_id": new_id(), "session_id": new_id(), "user_id": user.user_id}
    try:
        reply = await gateway.requester.ask(request_cls, timeout, **ids, **fields)
    except bus.NoReply:
        raise ToolError(f"timeout: The {service} service did not answer within {timeout:.0f} s; try again.") from None
    if reply.error is not None:
        raise ToolError(f"{service}_{reply.error.code}: {reply.error.message}")
    return reply


class Endpoint:
    """`/mcp` as an ASGI app: the bearer token first (the API's 401 otherwise), then the MCP
    transport, with the principal in the request's state for the tools."""

    def __init__(self, server: MCPServer) -> None:
        # Stateless JSON: every call stands alone, so any replica can answer it. The token
        # already keeps other sites out, which the transport's Host check would do on loopback.
        server.streamable_http_app(
            streamable_http_path=PATH,
            json_response=True,
            stateless_http=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.sessions = server.session_manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = await require_principal(Request(scope, receive))  # an ApiError is the app's JSON 401
        scope.setdefault("state", {})["principal"] = principal
        await self.sessions.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def running(self):
        async with self.sessions.run():
            yield
