"""Library first for identifiers, and long messages (issue 14), end to end: the real gateway over
HTTP, the real retrieval service (model, index, lookup) over a Zotero library built from the real
schema with a real fixture PDF, on a real nats-server; the verifier is instant and discovery is a
fake that is offline unless a test puts it online.

A DOI (any case, with a resolver prefix), an arXiv id kept only in Extra, an exact title and a
group library's item are answered from the library with no network; a miss goes online, and
offline its error says the library was checked; another user's library is never searched; a
32 KB question ends with `done`."""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx
import pymupdf
import pytest
import pytest_asyncio

from harness.serving import serving
from harness.system import FakeVerifier, bus_apps, collect
from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import Candidate, CandidatesFound, ServiceError

pytestmark = [pytest.mark.connected, pytest.mark.asyncio(loop_scope="module")]

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"

DVT_DOI = "10.1186/1752-2897-4-1"
DVT_TITLE = (
    "Complications related to deep venous thrombosis prophylaxis in trauma: a systematic review of the literature"
)
GRAPHENE = [("Results", ["Suspended single-layer graphene conducts heat at up to 5000 W/mK, far above copper."])]
PREPRINT = [
    (
        "Abstract",
        [
            "We parse the layout of scientific papers into a structured document model.",
            "The model keeps every figure caption apart from the running text.",
        ],
    )
]


class Discovery:
    """Discovery as it behaves offline, or online with one paper for whatever is looked up."""

    def __init__(self):
        self.online = False
        self.requests = []

    async def start(self) -> None: ...
    async def close(self) -> None: ...

    def health(self) -> dict:
        return {"status": "ok"}

    async def discover(self, request):
        self.requests.append(request)
        if not self.online:
            return CandidatesFound(
                **request.reply_fields(),
                error=ServiceError(
                    code="unreachable",
                    service="discovery",
                    message="OpenAlex is unreachable from this machine. Online discovery needs internet access.",
                ),
            )
        return CandidatesFound(
            **request.reply_fields(),
            candidates=[
                Candidate(
                    candidate_id="W1",
                    title="A paper found online",
                    authors=["Ada Lovelace"],
                    year=2024,
                    doi=request.queries[0],
                )
            ],
        )

    async def answer_recheck(self, request):
        from zocrates_contracts import CandidatesRechecked

        return CandidatesRechecked(**request.reply_fields(), candidates=request.candidates)


def text_pdf(sections: list[tuple[str, list[str]]]) -> bytes:
    """A small PDF: a 16 pt heading per section, 10 pt paragraphs."""
    doc = pymupdf.open()
    page, y = doc.new_page(), 72
    for heading, paragraphs in sections:
        page.insert_text((72, y), heading, fontsize=16, fontname="hebo")
        y += 28
        for para in paragraphs:
            y = 780 - page.insert_textbox(pymupdf.Rect(72, y, 520, 780), para, fontsize=10) + 12
    return doc.tobytes()


def build_library(root):
    schema_dir, pdf_dir = FIXTURES / "zotero" / "schema", FIXTURES / "pdfs"
    if not (schema_dir.exists() and pdf_dir.exists()):
        pytest.skip(f"Zotero schema and PDF fixtures not found under {FIXTURES}")
    b = ZoteroLibraryBuilder(root / "zotero", schema_dir)
    keys = {}
    dvt, keys["dvt"] = b.add_item(
        "journalArticle",
        {"title": DVT_TITLE, "date": "2010", "DOI": DVT_DOI},
        [("Indraneel", "Datta", "author"), ("Chad G", "Ball", "author"), ("Lucas", "Rudmik", "author")],
    )
    b.add_attachment(dvt, "datta.pdf", (pdf_dir / "cermine" / "test1.pdf").read_bytes())
    parent = b.add_collection("Trauma", [dvt])
    b.add_collection("Reviews", [dvt], parent_id=parent)
    preprint, keys["preprint"] = b.add_item(
        "preprint",
        {"title": "Document structure for scientific PDFs", "date": "2022", "extra": "arXiv:2203.00130 [cs.CL]"},
        [("Kyle", "Lo", "author")],
    )
    b.add_attachment(preprint, "lo.pdf", text_pdf(PREPRINT))
    group = b.add_group(4711, "Lab group")
    graphene, keys["graphene"] = b.add_item(
        "journalArticle",
        {"title": "Thermal conductivity of graphene", "date": "2008", "DOI": "10.1021/NL0731872"},
        [("Alexander", "Balandin", "author")],
        library_id=group,
    )
    b.add_attachment(graphene, "balandin.pdf", text_pdf(GRAPHENE), library_id=group)
    _, keys["pubmed"] = b.add_item(
        "journalArticle",
        {"title": "Heparin in trauma", "date": "2001", "extra": "PMID: 20205926"},
        [("Ann", "Lee", "author")],
    )
    b.close()
    return b.dir, keys


@contextlib.asynccontextmanager
async def library_system(nats_url: str, zotero_dir, data_dir):
    from zocrates_gateway.app import create_app
    from zocrates_gateway.config import GatewaySettings
    from zocrates_retrieval.config import RetrievalSettings
    from zocrates_retrieval.service import RetrievalService

    retrieval = RetrievalService(RetrievalSettings(zotero_dir=zotero_dir, data_dir=data_dir, embedding_device="cpu"))
    discovery = Discovery()
    async with bus_apps(nats_url, retrieval=retrieval, discovery=discovery, verifier=FakeVerifier()):
        await retrieval._ingest_task
        app = create_app(GatewaySettings(nats_url=nats_url))
        async with serving(app) as url, httpx.AsyncClient(timeout=60) as client:
            tokens = {user: await app.state.gateway.tokens.create(user) for user in ("local", "bob")}

            async def chat(message: str, user: str = "local", scope: dict | None = None) -> list[dict]:
                return await collect(client, url, message, None, tokens[user], scope)

            yield chat, discovery


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def system(module_nats_server, tmp_path_factory):
    zotero_dir, keys = build_library(tmp_path_factory.mktemp("lib"))
    with pytest.MonkeyPatch.context() as mp:  # never discover a real ~/Zotero
        mp.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        async with library_system(module_nats_server.url, zotero_dir, tmp_path_factory.mktemp("data")) as (chat, d):
            yield chat, d, keys


def outcome(events: list[dict]) -> tuple[str, dict]:
    last = events[-1]
    assert last["event"] in ("done", "error"), events
    return last["event"], last["data"]


async def answered(chat, message: str) -> dict:
    """The record of the turn that `message` starts, which must end `done`."""
    kind, record = outcome(await chat(message))
    assert kind == "done", record
    return record


def cited_items(record: dict) -> set[tuple[str, str]]:
    return {(c["library_id"], c["item_key"]) for c in record["citations"]}


async def test_is_this_doi_in_my_library_is_answered_from_the_library_with_its_collections(system):
    chat, discovery, keys = system
    asked_online = len(discovery.requests)
    record = await answered(chat, f"Is https://doi.org/{DVT_DOI.upper()} already in my library?")
    assert record["intent"] == "library"
    assert record["text"].startswith(
        "Yes — Datta et al. (2010), *Complications related to deep venous thrombosis "
        "prophylaxis in trauma: a systematic review of the literature* is in your "
        "library, in the collections Trauma, Trauma/Reviews [1]. It opens:"
    )
    assert "Deep venous thrombosis prophylaxis is essential" in record["text"]
    # cited: its library record and its own passage, both from this turn's lookup and retrieval
    assert cited_items(record) == {("user", keys["dvt"])}
    assert sorted(c["kind"] == "record" for c in record["citations"]) == [False, True]
    # the record's line and the opening sentences are the writer's renderings of their passages
    assert all(o["quoted"] for c in record["citations"] for o in c["occurrences"])
    assert [r["item_key"] for r in record["references"]["cited"]] == [keys["dvt"]]
    assert len(discovery.requests) == asked_online  # never went online


async def test_a_group_librarys_item_is_found_by_a_doi_in_another_case(system):
    chat, _, keys = system
    record = await answered(chat, "do I have doi:10.1021/nl0731872?")
    assert record["text"].startswith(
        "Yes — Balandin (2008), *Thermal conductivity of graphene* is in your group library Lab group [1]."
    )
    assert cited_items(record) == {("group-4711", keys["graphene"])}


async def test_an_arxiv_id_kept_only_in_extra_gives_the_papers_summary(system):
    chat, _, keys = system
    record = await answered(chat, "arXiv:2203.00130v1")
    assert record["intent"] == "library"
    assert record["text"].startswith(
        "Lo (2022), *Document structure for scientific PDFs* is in your library [1]. From the paper:"
    )
    assert "We parse the layout of scientific papers into a structured document model" in record["text"]
    assert cited_items(record) == {("user", keys["preprint"])}


async def test_a_pmid_in_extra_of_an_item_without_text_is_found_and_its_record_cited(system):
    chat, _, keys = system
    record = await answered(chat, "PMID: 20205926")
    assert record["text"].startswith(
        "Lee (2001), *Heparin in trauma* is in your library [1]. None of its text is indexed"
    )
    assert [(r["item_key"], r["library_id"]) for r in record["references"]["cited"]] == [(keys["pubmed"], "user")]
    assert record["citations"][0]["quote"].startswith("Ann Lee (2001). Heparin in trauma. PMID 20205926.")


async def test_an_exact_title_is_found(system):
    chat, _, keys = system
    record = await answered(chat, "Is “thermal conductivity of graphene” in my library?")
    assert record["text"].startswith("Yes — Balandin (2008)")
    assert cited_items(record) == {("group-4711", keys["graphene"])}


async def test_a_paper_asked_about_by_its_short_title_is_found_and_a_short_topic_is_searched(system):
    """ "Is the Complications ... paper in my library?" names the review by the part of its title
    before the colon; "is Heparin in my library?" names no title here and is searched as a topic,
    not looked up online."""
    chat, discovery, keys = system
    short = DVT_TITLE.split(":")[0]
    record = await answered(chat, f"Is the {short} paper in my library?")
    assert record["text"].startswith("Yes — Datta et al. (2010)")
    asked_online = len(discovery.requests)
    record = await answered(chat, "Is Thromboprophylaxis in my library?")
    assert len(discovery.requests) == asked_online and record["intent"] == "library"


async def test_the_librarys_items_by_an_author_are_listed_from_the_library(system):
    chat, discovery, keys = system
    asked_online = len(discovery.requests)
    record = await answered(chat, "Do I have anything by Datta in my library?")
    assert record["text"].startswith("Your library holds 1 item by Datta:")
    assert cited_items(record) == {("user", keys["dvt"])}
    record = await answered(chat, "Are there any papers by Nobody?")
    assert record["text"].startswith("No — your library holds nothing by Nobody")
    assert not record["citations"] and len(discovery.requests) == asked_online


async def test_a_pasted_doi_with_a_question_is_answered_from_that_items_passages(system):
    chat, discovery, keys = system
    asked_online = len(discovery.requests)
    record = await answered(chat, f"{DVT_DOI} what are the risks of heparin?")
    assert record["intent"] == "library"
    assert record["text"].startswith("From Datta et al. (2010), *Complications related to deep venous thrombosis")
    assert "bleeding" in record["text"]
    assert cited_items(record) == {("user", keys["dvt"])}
    considered = record["references"]["cited"] + record["references"]["considered"]
    assert {r["item_key"] for r in considered} == {keys["dvt"]}  # only that item was searched
    assert len(discovery.requests) == asked_online


async def test_a_doi_not_in_the_library_goes_online_and_offline_says_the_library_was_checked(system):
    chat, discovery, _ = system
    kind, error = outcome(await chat("Is 10.9999/not-here in my library?"))
    assert kind == "error"
    assert error["code"] == "discovery_unreachable"
    assert error["message"].startswith(
        "No — DOI 10.9999/not-here is not in your library (4 items checked). "
        "Looking it up online failed: OpenAlex is unreachable"
    )
    assert discovery.requests[-1].queries == ["10.9999/not-here"]


async def test_a_doi_not_in_the_library_is_looked_up_online_when_online(system):
    chat, discovery, _ = system
    discovery.online = True
    try:
        kind, record = outcome(await chat("10.9999/not-here"))
    finally:
        discovery.online = False
    assert kind == "done", record
    assert record["intent"] == "discovery"
    assert record["text"].startswith(
        "No — DOI 10.9999/not-here is not in your library (4 items checked).\n\n"
        "I found 1 candidate papers not yet in your library"
    )
    assert [c["doi"] for c in record["candidates"]] == ["10.9999/not-here"]


async def test_another_users_library_is_never_searched(system):
    chat, discovery, _ = system
    kind, error = outcome(await chat(f"Is {DVT_DOI} in my library?", user="bob"))
    assert kind == "error"
    assert error["message"].startswith(f"No — DOI {DVT_DOI} is not in your library (0 items checked).")


async def test_a_quoted_phrase_that_is_no_title_stays_a_library_question(system):
    chat, discovery, _ = system
    asked_online = len(discovery.requests)
    record = await answered(chat, 'What does my library say about "low molecular weight heparins"?')
    assert record["intent"] == "library"
    assert len(discovery.requests) == asked_online


async def test_a_32_kb_question_ends_with_done_and_says_how_it_was_searched(system):
    chat, _, keys = system
    filler = "These are my notes on trauma care and thromboprophylaxis in general surgery wards. "
    question = " Which complications of inferior vena cava filters are reported?"
    message = (filler * (32_000 // len(filler)))[: 32 * 1024 - len(question)] + question
    assert 32_000 < len(message.encode()) <= 32 * 1024
    record = await answered(chat, message)
    assert record["notes"] and record["notes"][0].startswith(
        f"Your message was long ({len(' '.join(message.split())):,} characters), so I searched your library "
        "with its question and the first "
    )
    assert record["notes"][0] in record["text"]
    assert ("user", keys["dvt"]) in cited_items(record), record["text"][-3000:]


async def test_a_long_message_for_new_literature_is_cut_too(system):
    chat, discovery, _ = system
    message = "Find new papers about " + "thromboprophylaxis in trauma " * 1000 + "please."
    kind, error = outcome(await chat(message))
    assert kind == "error" and error["code"] == "discovery_unreachable"  # offline, not `internal`
    assert len(discovery.requests[-1].queries[0]) <= 4_000


async def test_a_question_about_a_paper_as_a_whole_reads_its_abstract_and_conclusions(system):
    """The search for "the main findings of the review" finds the review's methods and
    introduction; what it found is in its abstract and conclusion, read from the paper itself."""
    chat, _, keys = system
    record = await answered(chat, "What are the main findings of the review on DVT prophylaxis in trauma?")
    assert record["intent"] == "library"
    assert cited_items(record) == {("user", keys["dvt"])}
    assert "we calculated the risk of bleeding and HIT to be 3.9% and 0.7%" in record["text"]  # a result it states
    assert "an absolute requirement for both patient counselling and clinical care" in record["text"]  # its conclusion


async def test_a_paper_named_by_an_author_of_two_letters_is_summarised_from_its_own_text(system):
    """ "Lo et al." names the preprint (a family name of two letters is a name before "et al.");
    its text has no heading that says where its abstract is, so it is read whole."""
    chat, _, keys = system
    record = await answered(chat, "What did Lo et al. find?")
    assert cited_items(record) == {("user", keys["preprint"])}
    assert "structured document model" in record["text"]


async def test_a_paper_named_outside_the_chosen_scope_is_not_read(system):
    """Scoped to the preprint, "what did Datta et al. conclude?" is asked of the preprint: the
    review by Datta is not looked for outside the scope the user chose."""
    chat, _, keys = system
    scope = {"kind": "items", "items": [{"library_id": "user", "item_key": keys["preprint"]}]}
    kind, record = outcome(await chat("What did Datta et al. conclude?", scope=scope))
    assert kind == "done", record
    assert ("user", keys["dvt"]) not in cited_items(record)
    considered = record["references"]["cited"] + record["references"]["considered"]
    assert {r["item_key"] for r in considered} <= {keys["preprint"]}
