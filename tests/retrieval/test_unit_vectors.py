"""Answer units get their vectors from their chunk's own pass of the embedding model."""

from __future__ import annotations

import numpy as np
import pytest

from zocrates_retrieval.adapters.embed import Embedder
from zocrates_retrieval.adapters.store import decode_vectors, encode_vectors
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.search import answer_units


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.shared(RetrievalSettings().embedding_model)


def test_the_chunk_vector_is_the_models_own_and_each_span_gets_one(embedder):
    texts = [
        "Trial — Results\nHeparin raised bleeding in trauma patients. Filters were safe in all of them.",
        "Somatic mutation rates were estimated in monozygotic twins.",
    ]
    spans = [[(16, 58), (59, 94)], [(0, 27)]]
    vectors, per_text = embedder.embed_with_spans(texts, spans)
    assert np.allclose(vectors, embedder.embed_documents(texts), atol=1e-5)
    assert [v.shape for v in per_text] == [(2, embedder.dim), (1, embedder.dim)]
    assert np.allclose(np.linalg.norm(per_text[0], axis=1), 1.0, atol=1e-5)
    question = embedder.embed_query("Did heparin cause bleeding?")
    bleeding, filters = per_text[0] @ question
    assert bleeding > filters  # each span stands for its own words, read in context


def test_a_span_past_the_models_input_length_is_embedded_on_its_own(embedder):
    filler = "word " * 400  # beyond MiniLM's 256 tokens
    text = filler + "Heparin raised bleeding."
    start = len(filler)
    _, per_text = embedder.embed_with_spans([text], [[(start, len(text))]])
    alone = embedder.embed_documents(["Heparin raised bleeding."])[0]
    assert np.allclose(per_text[0][0], alone, atol=1e-5)


def test_unit_vectors_survive_the_payload_and_score_only_units_an_answer_may_quote():
    vectors = np.eye(3, 4, dtype=np.float32)[:2]
    payload = {
        "units": [["sentence", 0, 5, ""], ["fragment", 6, 9, ""], ["table_row", 10, 20, "Table 1: a — b"]],
        "unit_vectors": encode_vectors(vectors),
    }
    assert np.allclose(decode_vectors(payload["unit_vectors"], 4), vectors)
    units = answer_units(payload, np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float32))
    assert [(u.kind, u.similarity) for u in units] == [("sentence", 0.0), ("fragment", None), ("table_row", 1.0)]
    assert units[2].text == "Table 1: a — b"
    assert [u.similarity for u in answer_units(payload, None)] == [None, None, None]


def test_texts_batched_by_length_come_back_in_their_own_places():
    """Texts are batched with others of like length (less padding); each vector, and each
    span's, still belongs to its own text."""
    small_batches = Embedder.shared(RetrievalSettings().embedding_model, "auto", 2)
    texts = [
        "Low molecular weight heparin is the first choice for thromboprophylaxis in trauma patients, "
        "where bleeding and heparin-induced thrombocytopenia were rare.",
        "Twins.",
        "Data collection was carried out in June 2010.",
        "Crystals were measured at Diamond Light Source on station IO4-1, and the structure was refined.",
        "Readers liked the key question index.",
    ]
    spans = [[(0, len(t))] for t in texts]
    vectors, per_text = small_batches.embed_with_spans(texts, spans)
    alone = np.stack([small_batches.embed_documents([t])[0] for t in texts])
    assert np.all(np.sum(vectors * alone, axis=1) > 0.999)
    assert [units.shape for units in per_text] == [(1, small_batches.dim)] * len(texts)
    nearest = [int(np.argmax(alone @ units[0])) for units in per_text]
    assert nearest == list(range(len(texts)))
