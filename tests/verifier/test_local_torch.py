"""The torch path: a tiny real checkpoint saved offline and loaded through the real loader."""

from __future__ import annotations

import itertools
import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zocrates_verifier.adapters.backends.base import Pair
from zocrates_verifier.adapters.backends.local_torch import (
    SequenceClassifierModel,
    load_model,
    plan_passes,
    support_index,
)
from zocrates_verifier.config import VerifierSettings
from zocrates_verifier.domain import windows as passage_windows
from zocrates_verifier.service import VerifierService

from .conftest import build_tiny_checkpoint


def test_support_label_is_read_from_id2label():
    assert support_index({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, 3) == 2
    assert support_index({0: "not_supported", 1: "supported"}, 2) == 1
    assert support_index({0: "non-entailment", 1: "entailment"}, 2) == 1
    assert support_index({0: "LABEL_0", 1: "LABEL_1"}, 2) == 1
    assert support_index({0: "LABEL_0"}, 1) is None
    with pytest.raises(ValueError, match="id2label"):
        support_index({0: "cat", 1: "dog", 2: "bird"}, 3)


def test_tiny_checkpoint_scores_match_a_direct_forward_pass(tiny_checkpoint):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = load_model(tiny_checkpoint, dtype="float32")
    assert isinstance(model, SequenceClassifierModel)
    model.setup("cpu")
    pairs = [
        Pair("Aspirin lowers risk.", "A trial found aspirin lowered the risk by 32%."),
        Pair("Short.", "A much longer passage " * 20),
    ]
    got = model.predict(pairs)
    net = AutoModelForSequenceClassification.from_pretrained(tiny_checkpoint).eval()
    tok = AutoTokenizer.from_pretrained(tiny_checkpoint)
    for pair, p in zip(pairs, got):
        enc = tok(pair.source_text, pair.claim, return_tensors="pt")
        with torch.inference_mode():
            expected = torch.softmax(net(**enc).logits, -1)[0, 1].item()  # "entailment" is 1
        assert p == pytest.approx(expected, abs=1e-5)
    assert model.describe()["support_label"] == 1


def test_compound_pair_takes_its_best_clause(tiny_checkpoint):
    model = load_model(tiny_checkpoint, dtype="float32")
    model.setup("cpu")
    claim = "Aspirin lowers the risk of stroke; statins lower cholesterol in most adults"
    passage = "Statins lowered cholesterol in adults."
    clauses = (claim, "Aspirin lowers the risk of stroke", "statins lower cholesterol in most adults")
    rows = [model.predict([Pair(c, passage)])[0] for c in clauses]
    compound = model.predict([Pair(claim, passage, compound=True)])[0]
    assert compound == pytest.approx(max(rows), abs=1e-5)


async def test_service_serves_a_local_checkpoint_end_to_end(tiny_checkpoint):
    service = VerifierService(
        VerifierSettings(provider="local", model_dir=tiny_checkpoint, device="cpu", model="tiny-nli", dtype="float32")
    )
    await service.start()
    try:
        outcomes = await service.score([Pair("a claim", "a passage")] * 3, None)
        assert all(isinstance(o, float) and 0 <= o <= 1 for o in outcomes)
        health = service.health()
        assert health["loaded"] == ["tiny-nli"] and health["device"] == "cpu"
        assert health["checkpoint_devices"] == {"tiny-nli": "cpu"}
        assert health["dtype"] == "float32"
    finally:
        await service.close()


def test_auto_dtype_is_bfloat16_only_on_a_cpu_that_has_it(monkeypatch):
    from zocrates_verifier.adapters.backends import local_torch

    assert local_torch.resolve_dtype("auto", "cuda:0") == torch.float16
    assert local_torch.resolve_dtype("float32", "cpu") == torch.float32
    monkeypatch.setattr(local_torch, "cpu_has_bfloat16", lambda: True)
    assert local_torch.resolve_dtype("auto", "cpu") == torch.bfloat16
    monkeypatch.setattr(local_torch, "cpu_has_bfloat16", lambda: False)
    assert local_torch.resolve_dtype("auto", "cpu") == torch.float32


def test_wrong_checkpoints_are_refused_with_a_hint(tmp_path):
    with pytest.raises(FileNotFoundError, match="MODEL_DIR"):
        load_model(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_model(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    with pytest.raises(ValueError, match="sequence-classification"):
        load_model(tmp_path)
    laya = tmp_path / "laya"
    laya.mkdir()
    (laya / "rl_agent_config.json").write_text("{}")
    try:
        import laya as _  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="pip install laya"):
            load_model(laya)


def test_unnamed_labels_beyond_two_are_refused_at_load(tmp_path):
    checkpoint = build_tiny_checkpoint(tmp_path, {0: "cat", 1: "dog", 2: "bird"})
    model = load_model(checkpoint)
    with pytest.raises(ValueError, match="supported"):
        model.setup("cpu")


def test_pairs_longer_than_the_model_window_are_truncated_not_failed(tiny_checkpoint):
    model = load_model(tiny_checkpoint, max_seq_len=128)
    model.setup("cpu")
    scores = model.predict(
        [Pair("a very long claim " * 200, "short passage"), Pair("short claim", "a very long passage " * 400)]
    )
    assert all(0.0 <= p <= 1.0 for p in scores)
    assert model.cost(Pair("x" * 4000, "y" * 32000)) == 128


def brute_force_cost(lengths: list[int], overhead: int) -> int:
    """The cheapest cut of the sorted rows into consecutive passes, by trying every cut."""
    widths = sorted(lengths)
    if not widths:
        return 0
    best = None
    for cuts in itertools.product((False, True), repeat=len(widths) - 1):
        cost, size = 0, 1
        for i, cut in enumerate([*cuts, True]):
            if cut:
                cost += size * widths[i] + overhead
                size = 1
            else:
                size += 1
        best = cost if best is None else min(best, cost)
    return best


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 512), max_size=9), st.sampled_from([0, 64, 2048]))
def test_pass_plan_is_the_cheapest_and_covers_every_row_once(lengths, overhead):
    passes = plan_passes(lengths, overhead)
    assert sorted(i for members in passes for i in members) == list(range(len(lengths)))
    cost = sum(len(m) * max(lengths[i] for i in m) + overhead for m in passes)
    assert cost == brute_force_cost(lengths, overhead)


def test_ragged_batch_runs_in_several_passes_and_scores_like_one_pair_at_a_time(tiny_checkpoint, monkeypatch):
    model = load_model(tiny_checkpoint, dtype="float32")
    model.setup("cpu")
    pairs = [
        Pair(f"Claim {i} about aspirin and risk, stated plainly", "passage words " * n, compound=i % 3 == 0)
        for i, n in enumerate((2, 240, 5, 120, 3, 250, 60, 4, 118, 245))
    ]
    alone = [model.predict([pair])[0] for pair in pairs]
    passes = []

    def recording_plan(lengths, overhead):
        passes.append(plan_passes(lengths, overhead))
        return passes[-1]

    monkeypatch.setattr("zocrates_verifier.adapters.backends.local_torch.plan_passes", recording_plan)
    together = model.predict(pairs)
    assert len(passes) == 1 and len(passes[0]) >= 3, passes  # short, medium and long passes
    assert together == pytest.approx(alone, abs=1e-5)


async def test_cpu_threads_setting_pins_torch_intra_op_threads(tiny_checkpoint):
    before = torch.get_num_threads()
    service = VerifierService(
        VerifierSettings(provider="local", model_dir=tiny_checkpoint, device="cpu", cpu_threads=1)
    )
    try:
        await service.start()
        assert torch.get_num_threads() == 1
        outcomes = await service.score([Pair("a claim", "a passage")], None)
        assert isinstance(outcomes[0], float)
    finally:
        await service.close()
        torch.set_num_threads(before)


WINDOWED_PASSAGE = (
    "Aspirin lowered the risk of stroke in the first year. Statins lowered cholesterol in most adults. "
    "The trial ran for five years at twelve sites."
)


def direct_support(checkpoint, premises: list[str], claim: str) -> list[float]:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    net = AutoModelForSequenceClassification.from_pretrained(checkpoint).eval()
    tok = AutoTokenizer.from_pretrained(checkpoint)
    enc = tok(premises, [claim] * len(premises), padding=True, return_tensors="pt")
    with torch.inference_mode():
        return torch.softmax(net(**enc).logits, -1)[:, 1].tolist()  # "entailment" is 1


def test_a_passage_of_several_sentences_answers_with_its_best_window(tiny_checkpoint):
    from zocrates_verifier.domain.windows import windows

    claim = "Statins lower cholesterol in most adults"
    model = load_model(tiny_checkpoint, dtype="float32", max_windows=4)
    model.setup("cpu")
    chosen = windows(claim, WINDOWED_PASSAGE, whole_fits=True, max_windows=4)
    assert len(chosen) == 4 and chosen[0].text == WINDOWED_PASSAGE
    expected = max(direct_support(tiny_checkpoint, [w.text for w in chosen], claim))
    assert model.predict([Pair(claim, WINDOWED_PASSAGE)])[0] == pytest.approx(expected, abs=1e-5)
    assert model.cost(Pair(claim, WINDOWED_PASSAGE)) == sum((len(claim) + len(w.text)) // 4 + 3 for w in chosen)

    whole = load_model(tiny_checkpoint, dtype="float32", max_windows=1)
    whole.setup("cpu")
    (alone,) = direct_support(tiny_checkpoint, [WINDOWED_PASSAGE], claim)
    assert whole.predict([Pair(claim, WINDOWED_PASSAGE)])[0] == pytest.approx(alone, abs=1e-5)


def test_a_claim_quoted_word_for_word_is_kept_and_the_model_score_stays_visible(tiny_checkpoint):
    claim = "Statins lowered cholesterol in most adults."
    ruled = load_model(tiny_checkpoint, dtype="float32")
    ruled.setup("cpu")
    plain = load_model(tiny_checkpoint, dtype="float32", verbatim_rule=False)
    plain.setup("cpu")
    model_score = plain.predict([Pair(claim, WINDOWED_PASSAGE)])[0]
    assert model_score < 0.9  # a random tiny model does not know it
    assert ruled.predict([Pair(claim, WINDOWED_PASSAGE), Pair(claim.replace("most", "all"), WINDOWED_PASSAGE)]) == [
        0.99,
        pytest.approx(plain.predict([Pair(claim.replace("most", "all"), WINDOWED_PASSAGE)])[0], abs=1e-6),
    ]
    described = ruled.describe()
    assert described["verbatim_raised"] == 1
    assert described["last_verbatim_model_score"] == pytest.approx(model_score, abs=1e-4)


def test_a_pair_the_writer_quoted_is_kept_like_a_verbatim_one_and_the_model_score_stays_visible(tiny_checkpoint):
    # A table row as the answer writer renders it (caption, headers, cells): not a sentence of
    # the passage, so only the pair's `quoted` makes it a quote.
    # This passage prints none of the row's numbers: the number rule stays off here (its own
    # tests are in test_numbers.py), so that the model alone is compared with the verbatim rule.
    row = "Table 3 (Baseline characteristics): age, years — 54.2 ± 8.1"
    ruled = load_model(tiny_checkpoint, dtype="float32", number_rule=False)
    ruled.setup("cpu")
    plain = load_model(tiny_checkpoint, dtype="float32", verbatim_rule=False, number_rule=False)
    plain.setup("cpu")
    model_score = plain.predict([Pair(row, WINDOWED_PASSAGE, quoted=True)])[0]
    assert model_score < 0.9
    assert ruled.predict([Pair(row, WINDOWED_PASSAGE, quoted=True), Pair(row, WINDOWED_PASSAGE)]) == [
        0.99,
        pytest.approx(plain.predict([Pair(row, WINDOWED_PASSAGE)])[0], abs=1e-6),
    ]
    described = ruled.describe()
    assert described["verbatim_raised"] == 1
    assert described["last_verbatim_model_score"] == pytest.approx(model_score, abs=1e-4)


def test_a_quoted_pair_is_scored_on_the_one_window_holding_the_quote(tiny_checkpoint, monkeypatch):
    # A quote's score is shown beside it, never decides it: one row, the window that shares
    # the most words with the quote, instead of up to `max_windows` rows.
    model = load_model(tiny_checkpoint, dtype="float32")
    model.setup("cpu")
    rows: list[tuple[str, str]] = []
    scored = model.distributions
    monkeypatch.setattr(model, "distributions", lambda p, h: rows.extend(zip(p, h)) or scored(p, h))
    quote = passage_windows.sentences(WINDOWED_PASSAGE)[1]
    [support] = model.predict([Pair(quote, WINDOWED_PASSAGE, quoted=True)])
    assert rows == [(quote, quote)]
    assert [WINDOWED_PASSAGE[a:b] for a, b in passage_windows.spans_of(support)] == [quote]
    rows.clear()
    model.predict([Pair(quote, WINDOWED_PASSAGE)])
    assert len(rows) > 1


def test_a_joint_pair_is_scored_on_rows_holding_every_passage_and_says_nowhere_where(tiny_checkpoint, monkeypatch):
    model = load_model(tiny_checkpoint, dtype="float32")
    model.setup("cpu")
    rows: list[str] = []
    scored = model.distributions
    monkeypatch.setattr(model, "distributions", lambda p, h: rows.extend(p) or scored(p, h))
    second = "Bleeding rose among older adults. The dose was 100 mg daily."
    text = WINDOWED_PASSAGE + "\n\n" + second
    claim = "Statins lower cholesterol in most adults, but bleeding rose among older adults."
    [support] = model.predict([Pair(claim, text, passage_starts=(0, len(WINDOWED_PASSAGE) + 2))])
    assert rows and all(len(row.split("\n\n")) == 2 for row in rows)
    assert all(row.split("\n\n")[1] in second for row in rows)
    assert passage_windows.spans_of(support) == ()
    assert model.cost(Pair(claim, text, passage_starts=(0, len(WINDOWED_PASSAGE) + 2))) > 0
