"""One chat turn, start to finish: route, gather evidence, write, verify, resolve, persist.

Every stage has a deadline. A stage that fails ends the turn with an `error` event, except
verification, which fails open: probabilities become `None` and the citations are kept.
Citations belong to this turn's retrieval only; a turn without retrieval has none.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Collection
from datetime import UTC, datetime
from typing import NamedTuple

import structlog
from opentelemetry import trace

from zocrates_citations import ParsedAnswer, build_coordinator_view, parse_answer, resolve_citations_and_references
from zocrates_citations.quality import citation_quality
from zocrates_contracts import (
    SUPPORT_THRESHOLD,
    CandidatesFound,
    DiscoveryRequested,
    EvidenceChunk,
    EvidenceRetrieved,
    ItemRef,
    ItemsScope,
    LibraryItemsFound,
    LibraryLookupRequested,
    LookupAuthor,
    References,
    RetrievalRequested,
    TextSpan,
    TurnError,
    TurnRecord,
    TurnRequested,
    TurnResolved,
    VerificationCompleted,
    VerificationRequested,
    VerificationSummary,
)
from zocrates_contracts.messages import MAX_LOOKUP_AUTHORS, MAX_QUERY_CHARS
from zocrates_contracts.scopes import MAX_SCOPE_ITEMS, RetrievalScope
from zocrates_gateway.adapters.llm import LLMError, ask_json, stream_chat
from zocrates_gateway.adapters.sessions import TurnAudit
from zocrates_gateway.config import GatewaySettings
from zocrates_gateway.context import Gateway
from zocrates_gateway.domain import verification
from zocrates_gateway.domain.followup import (
    HISTORY_TURNS,
    FollowUp,
    clean_query,
    history_messages,
    resolve_follow_up,
    rewrite_messages,
)
from zocrates_gateway.domain.intent import (
    LiteratureRequest,
    RouteDecision,
    SearchPlan,
    chat_reply,
    coordinator_messages,
    online_search_messages,
    read_literature_request,
    route_intent,
)
from zocrates_gateway.domain.lookup import (
    RECORD_CUES,
    Asked,
    authored_answer,
    goes_online,
    item_answer,
    lead_for_question,
    missing_line,
    no_text_answer,
    not_in_library,
    paper_record,
    read_message,
    record_answer,
    record_chunk,
    record_fields,
    sort_out,
)
from zocrates_gateway.domain.query import search_text
from zocrates_gateway.domain.scope import name_scope
from zocrates_gateway.domain.synthesis import (
    EMPTY_SCOPE,
    MAX_CHUNKS,
    ONLINE_PROMPT,
    ExtractiveAnswer,
    back_matter_topics,
    candidates_answer,
    described_term,
    extractive_answer,
    format_candidates,
    introduces,
    names_paper,
    paper_asked_about,
    read_question,
    states_findings,
    summary_paper,
    system_prompt,
)
from zocrates_gateway.events import TurnLog
from zocrates_gateway.telemetry import record_verification
from zocrates_runtime import bus
from zocrates_runtime.tracing import inject_trace

log = structlog.get_logger("zocrates.turn")
tracer = trace.get_tracer("zocrates.gateway")

STAGE_LINES = {
    "lookup": "Looking it up in your library…",
    "retrieval": "Searching your library…",
    "discovery": "Searching OpenAlex for new literature…",
    "synthesis": "Writing the answer…",
    "fallback": "The language model failed; answering without it…",
    "verification": "Checking every citation against its passage…",
    "resolution": "Resolving citations and sources…",
}


class TurnFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


async def run_turn(
    gateway: Gateway,
    turn: TurnLog,
    message: str,
    session_title: str,
    scope: RetrievalScope | None = None,
    scope_label: str = "",
) -> None:
    """Drive the turn, appending its events to `turn`; always ends with `done` or `error`.
    `scope`: where in the library a library question is searched (None: all of it), kept with
    the turn under its label (the client's `scope_label`, else named from the scope)."""
    structlog.contextvars.bind_contextvars(turn_id=turn.turn_id, session_id=turn.session_id)
    started = time.perf_counter()
    intent = await route(gateway.settings, message)
    ids = dict(turn_id=turn.turn_id, session_id=turn.session_id, user_id=turn.user_id)
    asked_in = {"scope": scope, "scope_label": name_scope(scope, scope_label)}
    try:
        await turn.append("turn", {"turn_id": turn.turn_id, "session_id": turn.session_id, "intent": intent})
        # Independent writes go out together: each is a round trip to the server.
        await asyncio.gather(
            gateway.sessions.ensure(turn.user_id, turn.session_id, session_title),
            bus.publish(
                gateway.requester.broker, TurnRequested(**ids, trace=inject_trace(), message=message, intent=intent)
            ),
        )
        if intent == "chat":
            record = await chat_turn(turn, message)
        elif intent == "discovery":
            record = await discovery_turn(gateway, turn, message, ids)
        else:
            record = await library_turn(gateway, turn, message, ids, scope)
        record = record.model_copy(update=asked_in)
        await asyncio.gather(
            gateway.sessions.add_turn(turn.user_id, record),
            bus.publish(gateway.requester.broker, TurnResolved(**ids, record=record)),
        )
        await turn.append("done", record.model_dump(mode="json"))
        log.info("turn done", intent=intent, ms=round((time.perf_counter() - started) * 1000, 1))
    except TurnFailed as exc:
        log.warning("turn failed", code=exc.code, error=exc.message)
        await fail(gateway, turn, intent, message, TurnError(code=exc.code, message=exc.message), asked_in)
    except asyncio.CancelledError:
        if not turn.finished:
            await fail(
                gateway, turn, intent, message, TurnError(code="cancelled", message="The turn was stopped."), asked_in
            )
        raise
    except Exception as exc:  # noqa: BLE001 - the stream must end, whatever broke
        log.exception("turn crashed")
        error = TurnError(code="internal", message=f"Internal error: {type(exc).__name__}")
        await fail(gateway, turn, intent, message, error, asked_in)
    finally:
        structlog.contextvars.unbind_contextvars("turn_id", "session_id")


#: How long a failed turn's record may take to store before its `error` event goes out anyway.
FAILED_TURN_STORE_S = 2.0


async def fail(gateway: Gateway, turn: TurnLog, intent: str, message: str, error: TurnError, asked_in: dict) -> None:
    """End the turn with its `error` event, after keeping it in the session with the error and
    what had streamed before it, so that a reload shows what the user saw. The store is best
    effort (the bus may be what failed): the error event goes out whatever happens to it.
    `asked_in`: the turn's `scope` and `scope_label`."""
    streamed = "".join(e.data.get("text", "") for e in turn.events if e.event == "delta")
    record = TurnRecord(
        turn_id=turn.turn_id,
        session_id=turn.session_id,
        intent=intent,
        question=message,
        prose=streamed,
        error=error,
        **asked_in,
    )
    try:
        async with asyncio.timeout(FAILED_TURN_STORE_S):
            await asyncio.shield(gateway.sessions.add_turn(turn.user_id, record))
    except Exception as exc:  # noqa: BLE001 - the error event must still go out
        log.warning("failed turn not stored", error=f"{type(exc).__name__}: {exc}")
    await turn.append("error", error.model_dump())


async def status(turn: TurnLog, stage: str) -> None:
    await turn.append("status", {"stage": stage, "message": STAGE_LINES[stage]})


#: Seconds the coordinator and the online-search role have to decide.
DECISION_TIMEOUT_S = 10.0


async def route(s: GatewaySettings, message: str) -> str:
    """Library, new literature or conversation: by the rules, and where they would send the
    message to the library, by the coordinator model when there is one (the rules stand when it
    fails or answers anything but a route). A message naming items goes to the library first."""
    intent = route_intent(message)
    coordinator = s.llm_for("coordinator")
    if intent != "library" or coordinator is None or not s.llm_routing or read_message(message):
        return intent
    try:
        decision = await ask_json(coordinator, coordinator_messages(message), RouteDecision, DECISION_TIMEOUT_S)
    except LLMError as exc:
        log.warning("coordinator failed; routing by the rules", error=str(exc))
        return intent
    return decision.intent


async def chat_turn(turn: TurnLog, message: str) -> TurnRecord:
    reply = chat_reply(message)
    await turn.append("delta", {"text": reply})
    return TurnRecord(turn_id=turn.turn_id, session_id=turn.session_id, intent="chat", question=message, prose=reply)


async def _ask(gateway: Gateway, what: str, request_cls, timeout: float, **fields):
    """A service's reply to a request of this turn; its silence or its error ends the turn."""
    try:
        reply = await gateway.requester.ask(request_cls, timeout, **fields)
    except bus.NoReply:
        raise TurnFailed(
            "timeout",
            f"The {what} service did not answer within {timeout:.0f} s. "
            "It may be down or overloaded; try again in a moment.",
        ) from None
    if reply.error is not None:
        raise TurnFailed(f"{what}_{reply.error.code}", reply.error.message)
    return reply


async def library_turn(
    gateway: Gateway, turn: TurnLog, message: str, ids: dict, scope: RetrievalScope | None = None
) -> TurnRecord:
    """A question about the library; one that names items (a DOI, an arXiv id, a PMID, a
    title) looks them up in the library first, unless the user chose a scope: then the
    question is searched there, whatever it names."""
    asked = read_message(message)
    if asked and scope is None:
        return await named_items_turn(gateway, turn, message, ids, asked)
    return await search_turn(gateway, turn, message, ids, scope)


async def search_turn(
    gateway: Gateway, turn: TurnLog, message: str, ids: dict, scope: RetrievalScope | None = None
) -> TurnRecord:
    """Search the library (or the `scope` of it) with the message, cut to the query cap when
    it is longer (the answer then says how it was cut). A follow-up of the session's previous
    turn is searched with it: rewritten into a standalone query by the language model, or
    offline by `resolve_follow_up` (the previous turn's items first, unless the user chose a
    scope). A scope that holds nothing is answered as such, without sources."""
    search = search_text(message)
    notes = [search.note] if search.note else []
    history = [] if search.note else await gateway.sessions.recent(turn.user_id, turn.session_id, HISTORY_TURNS)
    question, query = search.question, search.text
    follow = resolve_follow_up(search.question, history[-1] if history else None)
    answered: FollowUp | None = None  # the follow-up the offline writer answers, if any
    if gateway.settings.llm_for("coordinator") and history:
        query = await rewrite_query(
            gateway.settings, search.question, history, fallback=follow.query if follow else query
        )
    elif follow is not None:
        query, answered = follow.query, follow
    if answered is not None and scope is None:
        chunks = await retrieve_follow_up(gateway, turn, ids, answered)
        if (record := await record_turn(gateway, turn, message, ids, question, chunks, notes, answered)) is not None:
            return record  # "who wrote it?"
    else:
        evidence = await retrieve_evidence(gateway, turn, ids, query, scope)
        if evidence.scope_empty:
            return await answer_turn(gateway, turn, message, ids, [], question=search.question, written=[EMPTY_SCOPE])
        chunks = list(evidence.chunks)
        if scope is None:  # a scope the user chose says where to look
            chunks = await with_named_paper(gateway, turn, ids, question, query, chunks)
        chunks = await with_summary_passages(gateway, turn, ids, question, chunks, scope)
        if (record := await record_turn(gateway, turn, message, ids, question, chunks, notes)) is not None:
            return record
        if follow is None and scope is None and history and not gateway.settings.llm_for("synthesizer"):
            # Asked alone, nothing answers it: the question may lean on the conversation without
            # saying so ("what would guessing have scored?"); read it as a follow-up, and say so.
            retry = resolve_follow_up(question, history[-1], forced=True)
            if retry is not None and extractive_answer(question, chunks).refused:
                chunks = await retrieve_follow_up(gateway, turn, ids, retry)
                notes = [*notes, READ_AS_FOLLOW_UP]
                answered = retry
    return await answer_turn(
        gateway, turn, message, ids, chunks, question=question, follow=answered, notes=notes, history=history
    )


async def record_turn(
    gateway: Gateway,
    turn: TurnLog,
    message: str,
    ids: dict,
    question: str,
    chunks: list[EvidenceChunk],
    notes: list[str],
    follow: FollowUp | None = None,
) -> TurnRecord | None:
    """The answer to a question about a paper's record ("who wrote the Paper Plain paper?", "when
    was it published?"), from the library record of the paper it names (else the best-ranked
    one holding its words; after a follow-up's pointer, the previous answer's first paper); None
    for another question, or when no paper fits. A paper's text rarely says who wrote it."""
    if not (fields := record_fields(question)):
        return None
    paper = paper_asked_about(read_question(question), chunks, RECORD_CUES)
    if paper is None and follow is not None:
        before = {(i.library_id, i.item_key) for i in follow.items}
        paper = next((c for c in chunks if (c.library_id, c.item_key) in before), None)
    if paper is None:
        return None
    record = paper_record(paper)
    return await answer_turn(
        gateway,
        turn,
        message,
        ids,
        [record, *chunks],
        question=question,
        written=record_answer(fields, record, 1),
        written_quotes=True,
        notes=notes,
    )


async def with_named_paper(
    gateway: Gateway, turn: TurnLog, ids: dict, question: str, query: str, chunks: list[EvidenceChunk]
) -> list[EvidenceChunk]:
    """For a question naming a paper ("Douglas et al.", "the Kamuzu study") of which the search
    found fewer than half of its passages (`NAMED_PAPER_READ`): the question searched within that
    paper, its passages ahead of the rest. The paper is the one of the
    passages found whose title or authors carry the name; when none does, it is found by its
    name (a creator of the library's items, else a passage whose paper's authors or title hold
    it). A search for "what did Douglas et al. conclude?" finds what others concluded; their
    names are in no passage's words, and in none at all of an item that the library holds by
    its abstract alone. And a search for "which checklist did Datta and colleagues follow?"
    found one passage of their review, not the one naming the checklist."""
    ask = read_question(question)
    papers = ask.papers
    if not papers:
        return chunks
    of_paper = [c for c in chunks[:MAX_CHUNKS] if names_paper(papers, c)]
    if len(of_paper) >= NAMED_PAPER_READ:
        return chunks  # the search read the paper broadly: a search within it adds little
    items = list(dict.fromkeys((c.library_id, c.item_key) for c in of_paper))
    if not items:
        items = await items_by_author(gateway, ids, papers, ask.year)
    if not items:
        by_name = [c for c in await retrieve(gateway, turn, ids, " ".join(sorted(papers))) if names_paper(papers, c)]
        items = list(dict.fromkeys((c.library_id, c.item_key) for c in by_name))
    if not items:
        return chunks
    scope = ItemsScope(items=[ItemRef(library_id=library, item_key=key) for library, key in items[:MAX_SCOPE_ITEMS]])
    # what the search found of the paper stays first, in its order: the search within the paper
    # adds to it, and never pushes a passage the whole library's ranking put high past the cut
    named = set(items)
    own = {c.chunk_id: c for c in chunks if (c.library_id, c.item_key) in named}
    for chunk in await retrieve_items(gateway, turn, ids, query, scope):
        own.setdefault(chunk.chunk_id, chunk)
    return list(own.values()) + [c for c in chunks if c.chunk_id not in own]


#: Passages of a paper the question names, among those the answer writer reads, from which the
#: search is taken to have read it broadly enough (half of them).
NAMED_PAPER_READ = MAX_CHUNKS // 2


async def items_by_author(
    gateway: Gateway, ids: dict, names: Collection[str], year: int | None
) -> list[tuple[str, str]]:
    """The (library, item key) of the items a creator of one of these family names wrote (in
    `year`, when given), as the library lookup finds them; none when it cannot be asked."""
    authors = [LookupAuthor(family=name, year=year) for name in sorted(names)[:MAX_LOOKUP_AUTHORS]]
    try:
        reply: LibraryItemsFound = await _ask(
            gateway,
            "retrieval",
            LibraryLookupRequested,
            gateway.settings.retrieval_timeout_s,
            **ids,
            trace=inject_trace(),
            authors=authors,
        )
    except TurnFailed:  # the search by name still runs
        return []
    return list(dict.fromkeys((i.library_id, i.item_key) for i in reply.items))


async def with_summary_passages(
    gateway: Gateway,
    turn: TurnLog,
    ids: dict,
    question: str,
    chunks: list[EvidenceChunk],
    scope: RetrievalScope | None = None,
) -> list[EvidenceChunk]:
    """For a question about a paper as a whole (`summary_paper`), that paper's own passages
    that state its findings (its abstract and conclusions, found by its title; inside the
    `scope` the user chose) first, then the rest: a search for "summarize the Kamuzu study"
    finds the study, rarely what it concluded. Asked what a thing its title names is ("what is
    Paper Plain?"), also the passages introducing it ("we introduce ... Paper Plain")."""
    if (paper := summary_paper(question, chunks)) is None:
        return chunks
    within = scope or ItemsScope(items=[ItemRef(library_id=paper.library_id, item_key=paper.item_key)])
    term = described_term(question)
    asked = f"we introduce {term}, a" if term else "abstract results conclusions"
    query = search_text(f"{paper.title} {asked}").text
    own = await retrieve_items(gateway, turn, ids, query, within, top_k=SUMMARY_SEARCHED)
    first = {
        c.chunk_id: c
        for c in own
        if c.item_key == paper.item_key and (states_findings(c) or (term is not None and introduces(c, term)))
    }
    return list(first.values())[:SUMMARY_PASSAGES] + [c for c in chunks if c.chunk_id not in first]


#: A paper's passages searched for its abstract and conclusions, for a question about it as a
#: whole, and how many of those are read first.
SUMMARY_SEARCHED, SUMMARY_PASSAGES = 24, 6


def offline_answer(question: str, chunks: list[EvidenceChunk], follow: FollowUp | None) -> ExtractiveAnswer:
    """The offline writer's answer; to a follow-up, with its carried terms and the passages the
    previous answer cited."""
    return extractive_answer(question, chunks, earlier=follow)


async def retrieve_follow_up(gateway: Gateway, turn: TurnLog, ids: dict, follow: FollowUp) -> list[EvidenceChunk]:
    """The previous turn's cited items first (only them when the question names them), then
    the whole library, half the chunks each, so that a question on a new topic still finds it."""
    scope, top_k = follow.scope(), gateway.settings.top_k
    if scope is None:
        return await retrieve(gateway, turn, ids, follow.query)
    if follow.restricted:
        return await retrieve_items(gateway, turn, ids, follow.query, scope)
    first, rest = await asyncio.gather(
        retrieve_items(gateway, turn, ids, follow.query, scope, top_k=max(1, top_k // 2)),
        retrieve(gateway, turn, ids, follow.query),
    )
    chunks = {c.chunk_id: c for c in first}
    for chunk in rest:
        if len(chunks) >= top_k:
            break
        chunks.setdefault(chunk.chunk_id, chunk)
    return list(chunks.values())


async def rewrite_query(s: GatewaySettings, question: str, history: list[TurnRecord], *, fallback: str) -> str:
    """The language model's standalone search query for a follow-up; `fallback` (the offline
    resolver's query) when it fails or says nothing usable."""
    pieces: list[str] = []
    try:
        async with asyncio.timeout(min(s.synthesis_timeout_s, REWRITE_TIMEOUT_S)):
            async for piece in stream_chat(s.llm_for("coordinator"), rewrite_messages(question, history)):
                pieces.append(piece)
    except (LLMError, TimeoutError) as exc:
        log.warning("query rewriting failed; searching without it", error=str(exc) or "timeout")
        return fallback
    return clean_query("".join(pieces), fallback)


#: The note on an answer whose question, asked alone, found nothing and was read as a follow-up.
READ_AS_FOLLOW_UP = (
    "Nothing in your library answered this on its own, so it was read as a follow-up to your previous question."
)

#: Seconds the language model has to rewrite a follow-up into a standalone query.
REWRITE_TIMEOUT_S = 15.0

#: Queries one discovery request takes (DiscoveryRequested.queries).
MAX_DISCOVERY_QUERIES = 8


async def named_items_turn(gateway: Gateway, turn: TurnLog, message: str, ids: dict, asked: Asked) -> TurnRecord:
    """Items named by DOI, arXiv id, PMID or title, looked up in the user's own library first.
    Found: the turn answers from them (is it there, what it is, or the question asked of it),
    citing their passages from this turn's retrieval. Not found: it looks them up online, and an
    offline error says that the library was checked."""
    s = gateway.settings
    await status(turn, "lookup")
    reply: LibraryItemsFound = await _ask(
        gateway,
        "retrieval",
        LibraryLookupRequested,
        s.retrieval_timeout_s,
        **ids,
        trace=inject_trace(),
        dois=asked.of("doi"),
        arxiv_ids=asked.of("arxiv"),
        pmids=asked.of("pmid"),
        titles=asked.of("title"),
        authors=[LookupAuthor(family=name) for name in asked.of("author")],
    )
    found = sort_out(asked, list(reply.items), reply.searched_items)
    if asked.kind == "authored":  # "do I have anything by Datta?": the items, or that there are none
        records = [record_chunk(i) for i in found.items]
        written = authored_answer(asked, found, records)
        return await answer_turn(
            gateway, turn, message, ids, records, question=message, written=written, written_quotes=True
        )
    if not found.items:
        if goes_online(asked, found):
            return await discovery_turn(
                gateway,
                turn,
                message,
                ids,
                checked=not_in_library(found.missing, found.searched),
                queries=[n.query() for n in found.missing][:MAX_DISCOVERY_QUERIES],
            )
        return await search_turn(gateway, turn, message, ids)  # a quoted phrase that is no title here
    scope = ItemsScope(
        items=[ItemRef(library_id=i.library_id, item_key=i.item_key) for i in found.items[:MAX_SCOPE_ITEMS]]
    )
    notes = [missing_line(found)] if found.missing else []
    if asked.kind == "question":
        search = search_text(asked.question)
        notes = ([search.note] if search.note else []) + notes
        chunks = await retrieve_items(gateway, turn, ids, search.text, scope)
        if not chunks:
            records = [record_chunk(i) for i in found.items]
            return await answer_turn(
                gateway,
                turn,
                message,
                ids,
                records,
                question=search.question,
                written=no_text_answer(found, records),
                written_quotes=True,
                notes=notes,
            )
        return await answer_turn(
            gateway, turn, message, ids, chunks, question=search.question, lead=lead_for_question(found), notes=notes
        )
    # Is it there, or what is it: each item's library record, then its own opening passages,
    # found by their titles.
    titles = search_text(" ".join(i.title for i in found.items if i.title) or "abstract").text
    chunks = [record_chunk(i) for i in found.items] + await retrieve_items(gateway, turn, ids, titles, scope)
    return await answer_turn(
        gateway,
        turn,
        message,
        ids,
        chunks,
        question=titles,
        written=item_answer(asked, found, chunks),
        written_quotes=True,
        notes=notes,
    )


async def retrieve(
    gateway: Gateway, turn: TurnLog, ids: dict, query: str, scope: RetrievalScope | None = None, top_k: int = 0
) -> list[EvidenceChunk]:
    return list((await retrieve_evidence(gateway, turn, ids, query, scope, top_k)).chunks)


async def retrieve_evidence(
    gateway: Gateway, turn: TurnLog, ids: dict, query: str, scope: RetrievalScope | None = None, top_k: int = 0
) -> EvidenceRetrieved:
    s = gateway.settings
    if not turn.events or turn.events[-1].data.get("stage") != "retrieval":  # one line for concurrent searches
        await status(turn, "retrieval")
    return await _ask(
        gateway,
        "retrieval",
        RetrievalRequested,
        s.retrieval_timeout_s,
        **ids,
        trace=inject_trace(),
        query=query,
        top_k=top_k or s.top_k,
        scope=scope,
        back_matter=back_matter_topics(query),
    )


async def retrieve_items(
    gateway: Gateway, turn: TurnLog, ids: dict, query: str, scope: RetrievalScope, top_k: int = 0
) -> list[EvidenceChunk]:
    """The passages of items the lookup found; none when nothing of the library is indexed yet
    (the items are in the library all the same, and the answer says their text is not read)."""
    try:
        return await retrieve(gateway, turn, ids, query, scope, top_k)
    except TurnFailed as exc:
        if exc.code != "retrieval_not_available":
            raise
        return []


async def answer_turn(
    gateway: Gateway,
    turn: TurnLog,
    message: str,
    ids: dict,
    chunks: list[EvidenceChunk],
    *,
    question: str,
    follow: FollowUp | None = None,
    lead: str = "",
    written=None,
    written_quotes: bool = False,
    notes=(),
    history: list[TurnRecord] | None = None,
) -> TurnRecord:
    """Write the answer from `chunks` (a language model reads the whole message, the offline
    writer the search question, and for a `follow`-up what it carries), or stream the one
    `written` for the turn; after a `lead` line,
    with `notes` at the end. Then verify its citations and resolve them. `written_quotes`: every
    citation of `written` is the offline writer's rendering of its passage (an item's record,
    its opening sentences), so each is verified and shown as a quote."""
    s = gateway.settings
    await status(turn, "synthesis")
    parts: list[str] = []
    if lead:
        await say(turn, parts, lead)
    refused, quotes = False, None
    if written is not None:
        pieces = _aiter(written)
    elif s.llm_for("synthesizer"):
        pieces = synthesize(s, message, chunks, history or [])
    else:
        answer = offline_answer(question, chunks, follow)
        refused, quotes = answer.refused, answer.quotes()
        pieces = _aiter(answer.pieces())
    try:
        async for piece in pieces:
            await say(turn, parts, piece)
    except TurnFailed as exc:
        if not (s.llm_for("synthesizer") and s.llm_fallback):
            raise
        # The model failed: answer as the offline writer would, and say so. What the model had
        # streamed is dropped; the `fallback` status tells a client its earlier deltas are void.
        log.warning("language model failed; answering offline", code=exc.code, error=exc.message)
        await status(turn, "fallback")
        parts.clear()
        if lead:
            await say(turn, parts, lead)
        answer = offline_answer(question, chunks, follow)
        refused, quotes = answer.refused, answer.quotes()
        for piece in answer.pieces():
            await say(turn, parts, piece)
        notes = [f"The language model failed ({exc.message}); this answer quotes your library instead.", *notes]
    for note in notes:
        await say(turn, parts, note_piece(note))
    text = "".join(parts)

    verified = Verified(None, None, VerificationSummary(enabled=False))
    answer = parse_answer(text, len(chunks))  # tokenised once: claims to verify, then resolution
    occurrences = list(answer.occurrences)
    if written is not None and written_quotes:
        quotes = every_occurrence_quoted(occurrences)
    chosen = await gateway.sessions.get_settings(turn.user_id)
    verifying = s.citations_enabled and s.verification_enabled and chosen.verification_enabled and bool(occurrences)
    with tracer.start_as_current_span("citation_verification") as span:
        if verifying:
            await status(turn, "verification")
            verified = await verify(gateway, ids, chunks, occurrences, quotes, answer.brackets)

        await status(turn, "resolution")
        audit = TurnAudit(
            raw_text=text,
            chunks=chunks,
            support_probabilities=verified.probabilities,
            support_spans=verified.spans,
            joint_support=verified.joint,
            unprinted_numbers=verified.unprinted,
            threshold=verified.summary.threshold,
            refused=refused,
            quotes=quotes,
        )
        storing = asyncio.create_task(gateway.sessions.put_audit(turn.user_id, turn.session_id, turn.turn_id, audit))
        record = resolve_record(
            s,
            TurnRecord(
                turn_id=turn.turn_id, session_id=turn.session_id, intent="library", question=message, notes=list(notes)
            ),
            audit,
            verified.summary,
            answer,
            threshold=chosen.verification_threshold,
        )
        await storing  # the write's round trip overlapped the resolution's CPU work
        if verifying:
            record_verification(span, record, occurrences, chunks, s.verification_budget_s)
    return record


def every_occurrence_quoted(occurrences) -> dict[int, list[float | None]]:
    """Quotes (`ExtractiveAnswer.quotes`' shape) for an answer whose every citation is a
    rendering of its passage; no relevance is known for them."""
    found: dict[int, list[float | None]] = {}
    for o in occurrences:
        found.setdefault(o.chunk_index, []).append(None)
    return found


def resolve_record(
    s: GatewaySettings,
    base: TurnRecord,
    audit: TurnAudit,
    summary: VerificationSummary,
    answer: ParsedAnswer | None = None,
    *,
    threshold: float | None = None,
) -> TurnRecord:
    """The pure last step of a library turn, shared with re-verification and re-resolution (same
    inputs, same output). `answer`: `audit.raw_text` as the caller already parsed it for claim
    extraction. `threshold`: the user's own, applied instead of the verifier's (`audit.threshold`).
    The answer's citation quality is judged over what was written, not the notes said after it."""
    answer = answer or parse_answer(audit.raw_text, len(audit.chunks))
    applied = audit.threshold if threshold is None else threshold
    resolution = resolve_citations_and_references(
        answer,
        audit.chunks,
        citations_enabled=s.citations_enabled,
        support_probabilities=audit.support_probabilities,
        verification_threshold=applied,
        refused=audit.refused,
        quotes=audit.quotes,
        support_spans=audit.support_spans,
        joint_support=audit.joint_support,
        unprinted_numbers=audit.unprinted_numbers,
    )
    quality = None  # nothing to judge without citations
    if s.citations_enabled and audit.chunks and not audit.refused:
        quality = citation_quality(
            answer, resolution.citations, written_end(audit.raw_text, base.notes), threshold=applied
        )
    prose = resolution.text.removesuffix(resolution.sources)
    return base.model_copy(
        update={
            "schema_version": TurnRecord.SCHEMA_VERSION,
            "text": resolution.text,
            "prose": prose,
            "sources": resolution.sources,
            "citations": list(resolution.citations),
            # A claim inside source sections the model wrote itself is in `sources`, not `prose`.
            "unsupported": [c for c in resolution.unsupported if c.end <= len(prose)],
            "references": resolution.references if audit.chunks else References(),
            "verification": summary.model_copy(update={**resolution.counts.model_dump(), "threshold": applied}),
            "quality": quality,
            "coordinator_view": build_coordinator_view(resolution, audit.chunks),
        }
    )


async def synthesize(
    s: GatewaySettings, question: str, chunks: list[EvidenceChunk], history: list[TurnRecord] | None = None
) -> AsyncIterator[str]:
    """The configured language model's answer from `chunks`, streamed, after the session's last
    turns as remembered (`history_messages`; their citations are author-year, so only this
    turn's sources carry `[n]`). The offline answer is `extractive_answer`'s, in `answer_turn`."""
    messages = [
        {"role": "system", "content": system_prompt(chunks)},
        *history_messages(history or []),
        {"role": "user", "content": question},
    ]
    try:
        async with asyncio.timeout(s.synthesis_timeout_s):
            async for piece in stream_chat(s.llm_for("synthesizer"), messages):
                yield piece
    except TimeoutError:
        raise TurnFailed(
            "timeout", f"The language model did not finish within {s.synthesis_timeout_s:.0f} s."
        ) from None
    except LLMError as exc:
        raise TurnFailed("synthesis_failed", str(exc)) from None


def written_end(text: str, notes) -> int:
    """Where the written answer ends in `text`: before the notes said after it (`note_piece`)."""
    said = "".join(note_piece(note) for note in notes)
    return len(text) - len(said) if text.endswith(said) else len(text)


class Verified(NamedTuple):
    """A turn's verification: per chunk index, each occurrence's probability and supporting spans
    (`None` when nothing was sent), the summary, each occurrence's bracket's joint probability
    (`verification.joint_merged`) and the numbers its claim states that its passage does not print
    (`verification.merged_unprinted`; both `None` when nothing was sent)."""

    probabilities: dict[int, list[float | None]] | None
    spans: dict[int, list[list[TextSpan]]] | None
    summary: VerificationSummary
    joint: dict[int, list[float | None]] | None = None
    unprinted: dict[int, list[list[str]]] | None = None


async def verify(
    gateway: Gateway, ids: dict, chunks: list[EvidenceChunk], occurrences, quotes=None, brackets=()
) -> Verified:
    """Score every occurrence, and each of `brackets` (`ParsedAnswer.brackets`) as a whole with a
    joint pair after them, in as many requests as the pairs need, all within the verification
    budget. A request that fails (no reply, an error, a malformed reply, the bus) leaves its
    pairs unverified (`None`: fail open) with a note; the others keep their scores and spans."""
    s = gateway.settings
    timeout = min(s.verification_timeout_s, s.verification_budget_s)
    pairs = verification.pairs_for(occurrences, chunks, quotes) + verification.joint_pairs(brackets, chunks)
    if not pairs:
        return Verified(verification.unverified(occurrences), None, VerificationSummary())
    started = time.perf_counter()
    replies = await asyncio.gather(
        *(_verify_batch(gateway, ids, batch, timeout) for batch in verification.batches(pairs))
    )
    latency = (time.perf_counter() - started) * 1000
    scores = [score for reply, _ in replies if reply is not None for score in reply.scores]
    notes = list(dict.fromkeys(note for _, note in replies if note))
    if notes:
        log.warning("verification failed open", note="; ".join(notes))
    # The verifier owns the threshold: its scores are judged against the one it reports.
    scorer = next((reply for reply, _ in replies if reply is not None and reply.scores), None)
    summary = VerificationSummary(
        provider=scorer.provider if scorer else "",
        model=scorer.model if scorer else "",
        threshold=scorer.threshold if scorer else SUPPORT_THRESHOLD,
        latency_ms=latency,
        note="; ".join(notes) or None,
    )
    return Verified(
        verification.merged(occurrences, scores),
        verification.merged_spans(occurrences, scores),
        summary,
        verification.joint_merged(occurrences, brackets, scores),
        verification.merged_unprinted(occurrences, scores),
    )


async def _verify_batch(
    gateway: Gateway, ids: dict, pairs: list, timeout: float
) -> tuple[VerificationCompleted | None, str | None]:
    """One verification request: its reply and, when it failed, a note saying how."""
    try:
        reply: VerificationCompleted = await gateway.requester.ask(
            VerificationRequested, timeout, **ids, trace=inject_trace(), pairs=pairs
        )
    except bus.NoReply:
        return None, f"verifier did not answer within {timeout:.0f} s; citations kept unverified"
    except Exception as exc:  # noqa: BLE001 - a malformed reply or a bus error: fail open, never end the turn
        return None, f"verifier reply unusable ({type(exc).__name__}); citations kept unverified"
    if reply.error is not None:
        return reply, (
            f"verifier error ({reply.error.code}): {reply.error.message}; citations without a score kept unverified"
        )
    return reply, None


async def discovery_turn(
    gateway: Gateway, turn: TurnLog, message: str, ids: dict, *, checked: str = "", queries: list[str] | None = None
) -> TurnRecord:
    """New literature online. After a library lookup found nothing, `checked` says so (first in
    the answer, and in an error) and `queries` are the identifiers or titles to look up."""
    s = gateway.settings
    await status(turn, "discovery")
    search = search_text(message)
    # What the request asks for: its topic and how recent (identifiers from a lookup: as they are).
    asked = None if queries else await plan_search(s, search.text)
    profile = await gateway.sessions.get_profile(turn.user_id)
    try:
        found: CandidatesFound = await _ask(
            gateway,
            "discovery",
            DiscoveryRequested,
            s.discovery_timeout_s,
            **ids,
            trace=inject_trace(),
            queries=queries or asked.queries,
            from_year=asked.from_year if asked else None,
            contact_email=profile.contact_email,
        )
    except TurnFailed as exc:
        if not checked:
            raise
        raise TurnFailed(exc.code, f"{checked} Looking it up online failed: {exc.message}") from None
    candidates = list(found.candidates)
    notes = [*([search.note] if search.note and not queries else []), *([asked.said] if asked else []), *found.notes]
    await status(turn, "synthesis")
    parts: list[str] = []
    if checked:
        await say(turn, parts, f"{checked}\n\n")
    if s.llm_for("online_synthesizer") and candidates:
        messages = [
            {"role": "system", "content": ONLINE_PROMPT.format(candidates=format_candidates(candidates))},
            {"role": "user", "content": message},
        ]
        pieces = stream_chat(s.llm_for("online_synthesizer"), messages)
    else:
        pieces = _aiter(candidates_answer(candidates, len(found.dropped)))
    try:
        async with asyncio.timeout(s.synthesis_timeout_s):
            async for piece in pieces:
                await say(turn, parts, piece)
    except (LLMError, TimeoutError) as exc:
        # The candidates were found: they stay, listed as the offline answer lists them, and
        # the answer says the overview failed.
        why = str(exc) or f"no answer within {s.synthesis_timeout_s:.0f} s"
        log.warning("overview failed; listing the candidates", error=why)
        await status(turn, "fallback")
        parts.clear()
        if checked:
            await say(turn, parts, f"{checked}\n\n")
        for piece in candidates_answer(candidates, len(found.dropped)):
            await say(turn, parts, piece)
        notes = [f"The overview could not be written ({why}); the candidates are listed as found.", *notes]
    for note in notes:
        await say(turn, parts, note_piece(note))
    return TurnRecord(
        turn_id=turn.turn_id,
        session_id=turn.session_id,
        intent="discovery",
        question=message,
        prose="".join(parts),
        notes=notes,
        candidates=candidates,
    )


async def plan_search(s: GatewaySettings, message: str) -> LiteratureRequest:
    """The searches a request for new literature asks for: by the online-search model when
    there is one (one to three queries and a first year), else, or when it fails, by the rules."""
    year = datetime.now(UTC).year
    rules = read_literature_request(message, year)
    searcher = s.llm_for("online_search")
    if searcher is None:
        return rules
    try:
        plan = await ask_json(searcher, online_search_messages(message, year), SearchPlan, DECISION_TIMEOUT_S)
    except LLMError as exc:
        log.warning("online-search role failed; searching by the rules", error=str(exc))
        return rules
    queries = [" ".join(q.split())[:MAX_QUERY_CHARS] for q in plan.queries if q.strip()]
    return LiteratureRequest(queries=queries or rules.queries, from_year=plan.from_year)


async def say(turn: TurnLog, parts: list[str], piece: str) -> None:
    """Stream one piece of the answer as a `delta` event and keep it for the turn's text."""
    parts.append(piece)
    await turn.append("delta", {"text": piece})


def note_piece(note: str) -> str:
    return f"\n\n_Note: {note}_"


async def _aiter(items):
    for item in items:
        yield item
