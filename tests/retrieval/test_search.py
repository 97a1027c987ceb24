"""Query sanitising, near-duplicate collapse, the reranker, evidence mapping and the CLI."""

from __future__ import annotations

import shutil

import pytest

from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import Pages
from zocrates_retrieval.adapters.store import (
    ChunkPoint,
    EdgeStore,
    Hit,
    Narrowing,
    ServerStore,
    SparseEncoder,
    Tenant,
    point_id,
    query_chunks,
)
from zocrates_retrieval.cli import main
from zocrates_retrieval.domain.structure import is_back_matter
from zocrates_retrieval.search import (
    Searcher,
    answering_headings,
    collapse_near_duplicates,
    order_back_matter,
    sanitize_query,
    to_evidence,
)


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("What did [1] find about heat [2, 3]?", "What did find about heat ?"),
        ("compare [2-4] and [ 5 ] with [1;2]", "compare and with"),
        ("arrays like a[i] stay", "arrays like a[i] stay"),
        ("[1]", ""),
    ],
)
def test_sanitize_query_drops_citation_tokens(raw, clean):
    assert sanitize_query(raw) == clean


def hit(n: int, text: str) -> Hit:
    return Hit(str(n), 1.0 / (n + 1), {"text": text})


def test_near_duplicates_collapse_to_the_best_ranked():
    a = (
        "Suspended single-layer graphene shows a thermal conductivity of up to 5000 W/mK at room "
        "temperature, far above copper. We measured it with confocal micro-Raman spectroscopy, heating "
        "the flake with a laser and reading the shift of the G peak, on flakes prepared by mechanical "
        "exfoliation of graphite and suspended across trenches etched into silicon."
    )
    snapshot = a.upper().replace(" ", "\n")  # the HTML snapshot of the same article
    hits = [
        hit(0, a),
        hit(1, "Something else entirely about yeast proteins and heat shock."),
        hit(2, a.replace("5000", "5,000")),
        hit(3, snapshot + " (see Fig. 2)"),
        hit(4, a[: len(a) // 2]),
    ]  # half of it is a different passage
    assert [h.id for h in collapse_near_duplicates(hits)] == ["0", "1", "4"]


def test_passages_of_equal_score_come_in_one_order():
    """Two chunks of one text score alike, and the engine returns such ties in either order;
    the same question must get the same passages in the same order (its
    citations are numbered by them)."""

    class Engine:  # returns what it holds, in the order given
        def __init__(self, hits: list[Hit]):
            self.hits = hits

        def _search(self, *args) -> list[Hit]:
            return list(self.hits)

    tied = [Hit(i, s, {"user_id": "u"}) for i, s in (("b", 0.5), ("a", 0.5), ("c", 0.9), ("d", 0.1))]
    orders = {
        tuple(
            h.id
            for h in query_chunks(Engine(hits), Tenant("u"), dense=None, sparse=([1], [1.0]), limit=4, mode="lexical")
        )
        for hits in (tied, tied[::-1])
    }
    assert orders == {("c", "a", "b", "d")}


@pytest.mark.parametrize("server", [False, True], ids=["edge", "server"])
def test_a_passage_only_the_dense_vector_finds_outranks_those_both_signals_find_weakly(tmp_path, server):
    """ "Who should not get leg squeeze sleeves to prevent clots?": BM25 matches only "prevent" and
    "clots", in many passages; the passage that answers shares none of those words, and the dense
    vector ranks it first. Fusing ranks (RRF) put it below the ten passages both lists ranked in
    the middle; fusing normalised scores keeps it near the top."""
    import numpy as np

    sparse = SparseEncoder()
    query = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)

    def vector(cos: float) -> list[float]:
        return [cos, float(np.sqrt(1 - cos * cos)), 0.0, 0.0]

    texts = {"answer": (0.9, "Compression devices are contraindicated in peripheral vascular disease.")}
    for n in range(10):
        texts[f"weak{n}"] = (0.35 + n / 100, f"Heparin may prevent clots in case {n} of the trauma cohort {n * 7}.")
    if server:
        from qdrant_client import QdrantClient

        store = ServerStore(QdrantClient(":memory:"), "chunks", 4)
    else:
        store = EdgeStore(tmp_path / "edge", 4)
    store.upsert(
        [
            ChunkPoint(
                point_id("u", "lib", key, 0),
                vector(cos),
                sparse.document(text),
                {"user_id": "u", "library_id": "lib", "source_key": key, "item_key": key, "chunk_no": 0, "text": text},
            )
            for key, (cos, text) in texts.items()
        ]
    )
    hits = query_chunks(
        store,
        Tenant("u"),
        dense=query,
        sparse=sparse.query("Who should not get leg squeeze sleeves to prevent clots?"),
        limit=11,
        candidates=11,
        mode="hybrid",
    )
    store.close()
    assert [h.payload["source_key"] for h in hits].index("answer") < 3


def in_section(n: int, section: str | None) -> Hit:
    return Hit(str(n), 1.0 / (n + 1), {"text": f"passage {n}", "section": section})


def test_back_matter_goes_last_unless_asked_about():
    hits = [
        in_section(0, "Acknowledgments"),
        in_section(1, "Results"),
        in_section(2, "Competing interests"),
        in_section(3, None),
        in_section(4, "Declarations > Funding"),
        in_section(5, "Methods > Funding of the trial"),
    ]
    order = lambda *topics: [h.id for h in order_back_matter(hits, answering_headings(topics))]  # noqa: E731
    assert order() == ["1", "3", "5", "0", "2", "4"]  # "what barriers were found?"
    # the sections that answer the question first, everything else at its own rank
    assert order("funding") == ["0", "4", "1", "2", "3", "5"]
    assert order("competing_interests") == ["2", "0", "1", "3", "4", "5"]
    assert order("contributions") == ["0", "1", "2", "3", "4", "5"]  # none in these hits
    assert order("funding", "competing_interests") == ["0", "2", "4", "1", "3", "5"]


@pytest.fixture(scope="module")
def fixture_papers(tmp_path_factory, schema_dir, pdf_dir, embedder):
    """The fixture PDFs, each an item of a real Zotero library, ingested into a real index."""
    from zocrates_retrieval.ingest import Ingestor

    root = tmp_path_factory.mktemp("papers")
    b = ZoteroLibraryBuilder(root / "zotero", schema_dir)
    for pdf in sorted(pdf_dir.glob("*/*.pdf")):
        item, _ = b.add_item("journalArticle", {"title": pdf.stem})
        b.add_attachment(item, pdf.name, pdf.read_bytes())
    b.close()
    store = EdgeStore(root / "edge", embedder.dim)
    progress = Ingestor(store, embedder).ingest_zotero(b.dir, "u")
    assert progress.state == "done" and progress.failures == []
    yield store
    store.close()


def sections(hits: list[Hit]) -> list[str]:
    return [h.payload.get("section") or "" for h in hits]


def test_back_matter_is_ranked_after_the_content_of_a_real_paper(fixture_papers, embedder):
    searcher = Searcher(fixture_papers, embedder)
    question = "What barriers to quality improvement were found at Kamuzu Central Hospital?"
    # fused as it comes from the index, the thanks to the editors and the authors' addresses
    # (which name the hospital) rank among the content
    fused = collapse_near_duplicates(
        query_chunks(
            fixture_papers,
            Tenant("u"),
            dense=embedder.embed_query(question),
            sparse=searcher.sparse.query(question),
            limit=36,
            candidates=searcher.candidates,
        )
    )[:12]
    assert "Acknowledgments" in sections(fused)
    hits = searcher.search(Tenant("u"), question, top_k=12)
    assert len(hits) == 12 and all(h.payload["title"] == "example2" for h in hits[:6])
    assert not [s for s in sections(hits) if is_back_matter(tuple(s.split(" > ")))]


@pytest.mark.parametrize(
    "question, topic, paper, section",
    [
        ("Who funded this study?", "funding", "example3", "CLINICAL PERSPECTIVES > FUNDING"),
        ("Who funded the study at Kamuzu Central Hospital?", "funding", "example2", "Acknowledgments"),
        ("Do the authors have competing interests?", "competing_interests", None, "Competing interests"),
    ],
)
def test_a_question_about_back_matter_gets_it_first(fixture_papers, embedder, question, topic, paper, section):
    """The asker says what the question asks of the back matter (`RetrievalRequested.back_matter`)."""
    top = Searcher(fixture_papers, embedder).search(Tenant("u"), question, top_k=5, back_matter=[topic])[0]
    assert top.payload["section"] == section and paper in (None, top.payload["title"])


@pytest.mark.parametrize(
    "question", ["Which organisation funded the first author's graduate degree?", "Who paid for the author's Master's?"]
)
def test_a_back_matter_question_reads_the_answering_sections_of_the_best_ranked_papers(
    fixture_papers, embedder, question
):
    """Kamuzu's thanks to the body that paid for its first author's Master's share no word with
    the question but "author": ranked by their words alone they are not among the passages
    searched, but the paper is among the first three, and its acknowledgements answer for it."""
    hits = Searcher(fixture_papers, embedder).search(Tenant("u"), question, top_k=12, back_matter=["funding"])
    thanks = [h for h in hits if h.payload["title"] == "example2" and h.payload["section"] == "Acknowledgments"]
    assert thanks and "Katholischer Akademischer" in thanks[0].payload["text"]
    assert hits.index(thanks[0]) < 4  # the sections that answer first


def test_a_back_matter_question_stays_in_its_scope(tmp_path, schema_dir, pdf_dir, embedder):
    """The answering sections are looked for only inside the question's scope: of an item with
    two PDFs, a question scoped to one never gets the other's acknowledgements."""
    from zocrates_retrieval.ingest import Ingestor

    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    item, _ = b.add_item("journalArticle", {"title": "Two files"})
    for name in ("example2.pdf", "example3.pdf"):
        b.add_attachment(item, name, (pdf_dir / "cermine" / name).read_bytes())
    b.close()
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    try:
        assert Ingestor(store, embedder).ingest_zotero(b.dir, "u").state == "done"
        searcher = Searcher(store, embedder)
        question = "Which organisation funded the first author's graduate degree?"
        hits = searcher.search(Tenant("u"), question, top_k=12, back_matter=["funding"])
        thanks = next(h for h in hits if "Katholischer Akademischer" in h.payload["text"])
        library, other = (
            thanks.payload["library_id"],
            {h.payload["attachment_key"] for h in hits} - {thanks.payload["attachment_key"]},
        )
        assert len(other) == 1  # both files answer unscoped
        scoped = searcher.search(
            Tenant("u"),
            question,
            top_k=12,
            within=[Narrowing(library, "attachment_key", tuple(other))],
            back_matter=["funding"],
        )
        assert scoped and {h.payload["attachment_key"] for h in scoped} == other
    finally:
        store.close()


def test_evidence_maps_payload_fields():
    ev = to_evidence(
        Hit(
            "id1",
            0.5,
            {
                "item_key": "P1",
                "attachment_key": "A1",
                "title": "T",
                "year": 2020,
                "creators": [{"first_name": "A", "last_name": "B", "name": "", "creator_type": "author"}],
                "section": "Intro > Aim",
                "publication": "J",
                "citation_key": "b2020t",
                "text": "txt",
                "kind": "text",
                "pages": {"index": 3, "label": "1236", "last_index": None, "last_label": None, "printed": True},
                "chunk_no": 4,
            },
        )
    )
    assert (ev.chunk_id, ev.item_key, ev.attachment_key, ev.section, ev.kind, ev.score) == (
        "id1",
        "P1",
        "A1",
        "Intro > Aim",
        "text",
        0.5,
    )
    assert ev.creators[0].last_name == "B"
    assert ev.pages == Pages(index=3, label="1236")
    assert ev.citation_key == "b2020t"
    assert ev.position == 4  # its place in its source


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory, embedder):
    """A randomly initialised two-layer BERT cross-encoder with MiniLM's tokenizer: enough to
    show that the reranker is loaded from a directory and decides the order."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    path = tmp_path_factory.mktemp("cross")
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, num_labels=1
    )
    BertForSequenceClassification(config).save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(f"{embedder.name}/{name}", path / name)
    return path


def test_reranker_decides_the_final_order(tmp_path, embedder, tiny_cross_encoder):
    from zocrates_retrieval.adapters.embed import Reranker

    store = EdgeStore(tmp_path / "edge", embedder.dim)
    sparse = SparseEncoder()
    texts = ["graphene heat conduction", "yeast heat shock", "coffee prices", "heat engines", "boron nitride"]
    vectors = embedder.embed_documents(texts)
    store.upsert(
        [
            ChunkPoint(
                point_id("u", "user", f"S{i}", 0),
                vectors[i],
                sparse.document(t),
                {
                    "user_id": "u",
                    "library_id": "user",
                    "source_key": f"S{i}",
                    "chunk_no": 0,
                    "text": t,
                    "item_key": f"I{i}",
                },
            )
            for i, t in enumerate(texts)
        ]
    )
    reranker = Reranker(tiny_cross_encoder, "cpu")
    hits = Searcher(store, embedder, sparse, reranker).search(Tenant("u"), "heat", top_k=5)
    store.close()
    expected = reranker.scores("heat", [h.payload["text"] for h in hits])
    assert [h.score for h in hits] == sorted(expected, reverse=True)
    with pytest.raises(RuntimeError, match="does not exist"):
        Reranker(tmp_path / "missing")


def test_cli_ingest_search_status(tmp_path, schema_dir, make, capsys, embedder, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    item, _ = b.add_item(
        "journalArticle", {"title": "Boron nitride defects", "date": "2024"}, [("Giacomo", "Venturi", "author")]
    )
    b.add_attachment(item, "bn.pdf", make.text_pdf([("Results", ["Carbon defects in boron nitride emit blue light."])]))
    b.add_attachment(item, "locked.pdf", make.encrypted_pdf())
    b.close()
    common = ["--data-dir", str(tmp_path / "data")]
    assert main(common + ["ingest", "--zotero-dir", str(tmp_path / "zotero"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "1 indexed" in out and "not indexed 1: encrypted 1" in out and "locked.pdf" not in out
    assert main(common + ["search", "why does boron nitride emit blue light", "-k", "1"]) == 0
    out = capsys.readouterr().out
    assert "[1] Boron nitride defects (Venturi, 2024) Results | p. 1" in out
    assert main(common + ["status"]) == 0
    assert '"sources": 1' in capsys.readouterr().out
    assert main(common + ["ingest", "--zotero-dir", str(tmp_path / "nowhere")]) == 2
    assert "holds no zotero.sqlite" in capsys.readouterr().err
