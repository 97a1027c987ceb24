"""The library lookup (`LibraryLookupRequested`, issue 14): a DOI, an arXiv id, a PMID or an
exact title found in the user's own library, the local Zotero snapshot or a hosted catalog in a
real NATS KV bucket; tenancy; and search narrowed to the items found (`RetrievalScope`)."""

from __future__ import annotations

import nats
import pytest
import pytest_asyncio

from harness.retrieval import ingested_service
from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import LibraryLookupRequested, LibrarySyncRequested, RetrievalRequested, SyncedItem
from zocrates_retrieval.adapters.catalog import Catalog
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.service import RetrievalService

pytestmark = pytest.mark.asyncio(loop_scope="module")

ENVELOPE = {"turn_id": "t1", "session_id": "s1", "reply_to": "zocrates.reply.gw.library"}
DVT = "Complications related to deep venous thrombosis prophylaxis in trauma: a systematic review of the literature"


def lookup(user: str = "local", **wanted) -> LibraryLookupRequested:
    return LibraryLookupRequested(user_id=user, **ENVELOPE, **wanted)


def build(root, schema_dir, pdf_dir, make):
    b = ZoteroLibraryBuilder(root / "zotero", schema_dir)
    ids = {}
    ids["dvt"] = b.add_item(
        "journalArticle",
        {"title": DVT, "date": "2010", "DOI": "10.1186/1752-2897-4-1"},
        [("Indraneel", "Datta", "author"), ("Chad G", "Ball", "author"), ("Lucas", "Rudmik", "author")],
    )
    b.add_attachment(ids["dvt"][0], "datta.pdf", (pdf_dir / "cermine" / "test1.pdf").read_bytes())
    ids["preprint"] = b.add_item(
        "preprint",
        {"title": "Document structure for scientific PDFs", "date": "2022", "extra": "arXiv: 2203.00130 [cs.CL]"},
        [("Kyle", "Lo", "author")],
    )
    b.add_attachment(
        ids["preprint"][0],
        "lo.pdf",
        make.text_pdf([("Abstract", ["We parse the layout of scientific papers into a structured document model."])]),
    )
    ids["pubmed"] = b.add_item(
        "journalArticle",
        {"title": "Heparin in trauma", "date": "2001", "extra": "PMID: 20205926"},
        [("Ann", "Lee", "author")],
    )
    ids["book"] = b.add_item("book", {"title": "A book about filters", "extra": "DOI: 10.5555/Filters.2020"})
    ids["snapshot"] = b.add_item(
        "journalArticle", {"title": "Attention is all you need", "date": "2017"}, [("Ashish", "Vaswani", "author")]
    )
    b.add_link_attachment(ids["snapshot"][0], "https://arxiv.org/abs/1706.03762v5", "arXiv.org Snapshot")
    ids["trashed"] = b.add_item("journalArticle", {"title": "Retracted work", "DOI": "10.1000/retracted"})
    b.trash(ids["trashed"][0])
    group = b.add_group(4711, "Lab group")
    ids["group"] = b.add_item(
        "journalArticle",
        {"title": "Thermal conductivity of graphene", "date": "2008", "DOI": "10.1021/NL0731872"},
        [("Alexander", "Balandin", "author")],
        library_id=group,
    )
    b.add_attachment(
        ids["group"][0],
        "balandin.pdf",
        make.text_pdf(
            [("Results", ["Suspended single-layer graphene conducts heat at up to 5000 W/mK, far above copper."])]
        ),
        library_id=group,
    )
    parent = b.add_collection("Trauma", [ids["dvt"][0]])
    b.add_collection("Reviews", [ids["dvt"][0]], parent_id=parent)
    return b, {name: key for name, (_, key) in ids.items()}


@pytest.fixture(scope="module")
def library(tmp_path_factory, schema_dir, pdf_dir, make):
    builder, keys = build(tmp_path_factory.mktemp("lib"), schema_dir, pdf_dir, make)
    yield builder, keys  # left open: a test adds an item later, as Zotero would
    builder.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service(tmp_path_factory, library):
    async with ingested_service(tmp_path_factory, library[0].dir) as svc:
        yield svc


async def test_a_doi_is_found_whatever_its_case_and_resolver_prefix(service, library):
    _, keys = library
    found = await service.lookup(lookup(dois=["https://doi.org/10.1021/nl0731872"]))
    assert found.error is None
    [item] = found.items
    assert (item.item_key, item.library_id, item.library_name) == (keys["group"], "group-4711", "Lab group")
    assert (item.matched_by, item.matched, item.doi, item.year) == (
        "doi",
        "10.1021/nl0731872",
        "10.1021/nl0731872",
        2008,
    )
    assert item.creators[0].last_name == "Balandin"


async def test_a_paper_is_found_by_a_creators_family_name_and_year(service, library):
    """ "Lo et al.", "Datta et al. 2010": any creator's family name, whatever its case; with a
    year, only that year's items; a name no creator has finds nothing (trashed items neither)."""
    _, keys = library
    found = await service.lookup(lookup(authors=[{"family": "LO"}, {"family": "rudmik", "year": 2010}]))
    assert [(i.item_key, i.matched_by, i.matched) for i in found.items] == [
        (keys["preprint"], "author", "LO"),
        (keys["dvt"], "author", "rudmik"),
    ]
    assert (await service.lookup(lookup(authors=[{"family": "Datta", "year": 2011}]))).items == []
    assert (await service.lookup(lookup(authors=[{"family": "Malawi"}]))).items == []
    found = await service.lookup(lookup(authors=[{"family": "Balandin"}]))
    assert [(i.item_key, i.library_id) for i in found.items] == [(keys["group"], "group-4711")]


async def test_an_item_names_its_collections(service, library):
    [item] = (await service.lookup(lookup(dois=["10.1186/1752-2897-4-1"]))).items
    assert item.item_key == library[1]["dvt"] and item.library_id == "user" and item.library_name == "My Library"
    assert item.collections == ["Trauma", "Trauma/Reviews"]


async def test_an_arxiv_id_only_in_extra_or_in_an_attachments_url_is_found(service, library):
    _, keys = library
    found = await service.lookup(lookup(arxiv_ids=["arXiv:2203.00130v2", "1706.03762"]))
    assert [(i.item_key, i.matched_by, i.arxiv_id) for i in found.items] == [
        (keys["preprint"], "arxiv", "2203.00130"),
        (keys["snapshot"], "arxiv", "1706.03762"),
    ]


async def test_a_pmid_in_extra_and_a_doi_in_extra_are_found(service, library):
    _, keys = library
    found = await service.lookup(lookup(pmids=["PMID: 20205926"], dois=["10.5555/filters.2020"]))
    assert {(i.item_key, i.matched_by) for i in found.items} == {(keys["pubmed"], "pmid"), (keys["book"], "doi")}


async def test_an_exact_title_matches_regardless_of_case_and_punctuation_and_a_near_one_does_not(service, library):
    found = await service.lookup(
        lookup(
            titles=[
                "complications related to deep venous thrombosis prophylaxis in "
                "trauma - a systematic review of the literature."
            ]
        )
    )
    assert [i.item_key for i in found.items] == [library[1]["dvt"]] and found.items[0].matched_by == "title"
    assert (await service.lookup(lookup(titles=["Complications of deep venous thrombosis prophylaxis"]))).items == []
    # the short title before its colon is a name the paper goes by ("Paper Plain")
    short = await service.lookup(
        lookup(titles=["Complications related to deep venous thrombosis prophylaxis in trauma"])
    )
    assert [i.item_key for i in short.items] == [library[1]["dvt"]]


async def test_a_miss_says_how_many_items_were_checked_and_the_trash_is_not_the_library(service):
    found = await service.lookup(lookup(dois=["10.9999/not-here", "10.1000/retracted"]))
    assert found.error is None and found.items == []
    assert found.searched_items == 6  # regular items of My Library and the group, not the trashed one


async def test_another_user_never_sees_the_local_library(service):
    found = await service.lookup(lookup(user="mallory", dois=["10.1186/1752-2897-4-1"], titles=[DVT]))
    assert found.error is None and found.items == [] and found.searched_items == 0


async def test_an_item_added_to_zotero_is_found_at_the_next_lookup(service, library):
    builder, _ = library
    assert (await service.lookup(lookup(dois=["10.7777/added.later"]))).items == []
    _, key = builder.add_item("journalArticle", {"title": "Added later", "DOI": "10.7777/added.later"})
    assert [i.item_key for i in (await service.lookup(lookup(dois=["10.7777/added.later"]))).items] == [key]


async def test_search_scoped_to_an_item_returns_only_its_passages(service, library):
    _, keys = library
    scope = {"items": [{"library_id": "user", "item_key": keys["dvt"]}]}
    reply = await service.search(
        RetrievalRequested(
            user_id="local", query="graphene thermal conductivity heat", top_k=5, scope=scope, **ENVELOPE
        )
    )
    assert reply.error is None and reply.chunks
    assert {c.item_key for c in reply.chunks} == {keys["dvt"]}
    whole = await service.search(
        RetrievalRequested(user_id="local", query="graphene thermal conductivity heat", top_k=5, **ENVELOPE)
    )
    assert whole.chunks[0].item_key == keys["group"]  # unscoped, the graphene paper wins


async def test_a_scope_never_reaches_outside_the_tenant_or_the_named_library(service, library):
    _, keys = library
    group_item = {"items": [{"library_id": "group-4711", "item_key": keys["group"]}]}
    mine = await service.search(RetrievalRequested(user_id="local", query="graphene", scope=group_item, **ENVELOPE))
    assert {c.item_key for c in mine.chunks} == {keys["group"]}
    other_library = await service.search(
        RetrievalRequested(user_id="local", query="graphene", library_id="user", scope=group_item, **ENVELOPE)
    )
    assert other_library.chunks == []
    mallory = await service.search(
        RetrievalRequested(user_id="mallory", query="graphene", scope=group_item, **ENVELOPE)
    )
    assert mallory.chunks == []


# --- the lab-hosted catalog -------------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module")
async def catalog(nats_server):
    nc = await nats.connect(nats_server.url)
    yield await Catalog.open(nc.jetstream())
    await nc.close()


def synced(user: str, items: list[SyncedItem], library_id: str = "user") -> LibrarySyncRequested:
    return LibrarySyncRequested(user_id=user, library_id=library_id, sync_id="sync1", items=items, **ENVELOPE)


@pytest.mark.connected
async def test_a_hosted_library_is_looked_up_in_its_catalog_and_only_by_its_owner(catalog, tmp_path):
    await catalog.apply_sync(
        "carol",
        synced(
            "carol",
            [
                SyncedItem(
                    key="DVT2PAR1",
                    item_type="journalArticle",
                    title=DVT,
                    date="2010-02-15",
                    creators=[{"first_name": "Indraneel", "last_name": "Datta"}],
                    extra="DOI: 10.1186/1752-2897-4-1",
                ),
                SyncedItem(
                    key="PRE2PAR1", item_type="preprint", title="Document structure", extra="arXiv:2203.00130 [cs]"
                ),
                SyncedItem(
                    key="SNAP2AT1",
                    item_type="attachment",
                    parent_key="PRE2PAR1",
                    title="Snapshot",
                    url="https://arxiv.org/abs/2203.00130v1",
                ),
            ],
        ),
    )
    await catalog.apply_sync(
        "carol",
        synced(
            "carol",
            [SyncedItem(key="GRP2PAR1", item_type="journalArticle", title="Group paper", doi="10.1021/NL0731872")],
            library_id="group-12",
        ),
    )
    await catalog.apply_sync(
        "dave",
        synced(
            "dave", [SyncedItem(key="DAVE2PA1", item_type="journalArticle", title="Dave's own", doi="10.5555/dave")]
        ),
    )
    service = RetrievalService(RetrievalSettings(zotero_dir=None, data_dir=tmp_path / "data"), catalog=catalog)

    found = await service.lookup(
        lookup(
            user="carol",
            dois=["https://doi.org/10.1186/1752-2897-4-1", "10.1021/nl0731872"],
            arxiv_ids=["2203.00130"],
            titles=[DVT.upper()],
        )
    )
    assert found.error is None and found.searched_items == 3
    assert [(i.item_key, i.library_id, i.matched_by) for i in found.items] == [
        ("DVT2PAR1", "user", "doi"),
        ("GRP2PAR1", "group-12", "doi"),
        ("PRE2PAR1", "user", "arxiv"),
        ("DVT2PAR1", "user", "title"),
    ]
    assert found.items[1].library_name == "group 12" and found.items[0].year == 2010

    assert (await service.lookup(lookup(user="dave", dois=["10.1186/1752-2897-4-1"]))).items == []
    assert (await service.lookup(lookup(user="carol", dois=["10.5555/dave"]))).items == []

    # a later sync page is seen by the next lookup
    await catalog.apply_sync(
        "carol",
        synced("carol", [SyncedItem(key="NEW2PAR1", item_type="journalArticle", title="New one", doi="10.5555/new")]),
    )
    assert [i.item_key for i in (await service.lookup(lookup(user="carol", dois=["10.5555/new"]))).items] == [
        "NEW2PAR1"
    ]
