"""Mathematical letters in a PDF's text are found by the words they show."""

from __future__ import annotations

from zocrates_retrieval.adapters.store import SparseEncoder
from zocrates_retrieval.domain.searchable import searchable


def test_mathematical_letters_fold_to_letters_one_for_one():
    text = "the 𝑃𝐷𝐹 baseline: 𝑝-values, 𝜎= 1.51, ＡＢＣ, x², ﬁnal, Å"
    folded = searchable(text)
    assert folded == "the PDF baseline: p-values, σ= 1.51, ABC, x2, ﬁnal, Å"  # a ligature stays: it is two letters
    assert len(folded) == len(text)  # the answer units' offsets hold
    assert searchable("plain ASCII") == "plain ASCII"


def test_bm25_finds_a_word_typeset_as_mathematical_letters():
    sparse = SparseEncoder()
    assert sparse.document("the 𝑃𝐷𝐹 baseline")[0] == sparse.document("the PDF baseline")[0]
    assert set(sparse.query("PDF")[0]) <= set(sparse.document("rated against the 𝑃𝐷𝐹 baseline")[0])


def test_the_embedder_reads_mathematical_letters_as_letters(embedder):
    import numpy as np

    typeset, plain = embedder.embed_documents(["the 𝑃𝐷𝐹 baseline was rated lower", "the PDF baseline was rated lower"])
    assert float(np.dot(typeset, plain)) > 0.999


def test_a_hyphenated_query_word_finds_the_word_printed_joined():
    """ "What R-free did the structure refine to?": the tokenizer splits "R-free" into "r" and
    "free", and the table prints "Rfree"; the query also asks for the joined word, so the row's
    passage ranks first by its words (9th before). A passage's own tokens are not changed."""
    sparse = SparseEncoder()
    row = set(sparse.document("Table 2 Crystallographic statistics Rfree‡ | 21.9")[0])
    assert set(sparse.query("Rfree")[0]) <= row
    assert set(sparse.query("Rfree")[0]) <= set(sparse.query("What R-free did it refine to?")[0])
    assert set(sparse.document("R-free")[0]).isdisjoint(sparse.query("Rfree")[0])


def test_a_query_word_finds_its_other_spelling():
    """A British question finds an American paper's words and the other way round: "Which part
    was the favourite?" finds "... were a clear favorite in the usability study" by its words
    (the passage was not among the twelve retrieved before). Words with one spelling ask for
    nothing more, and a passage's own tokens are not changed."""
    sparse = SparseEncoder()
    american = set(sparse.document("The Key Question Index was a clear favorite in the usability study.")[0])
    assert set(sparse.document("favorite")[0]) <= set(sparse.query("Which part was the favourite?")[0])
    assert set(sparse.document("favorite")[0]) <= american
    for british, us in [("tumour", "tumor"), ("randomised", "randomized"), ("paediatric", "pediatric")]:
        assert set(sparse.document(british)[0]) <= set(sparse.query(f"the {us} arm")[0])
        assert set(sparse.document(us)[0]) <= set(sparse.query(f"the {british} arm")[0])
    assert len(sparse.query("the hour of the study")[0]) == len(sparse.query("hour study")[0])
    assert set(sparse.document("favourite")[0]).isdisjoint(sparse.document("favorite")[0])
