"""
Constrained path decoding pinned: the paths and beam scores that
:class:`~parlai_docgraph.kg.constrained.GraphConstrainedLogitsProcessor` gives through
``GSRModel.generate_paths`` on the bundled ``docgraph:sample_kg`` turns, for the bundled
tiny T5 and a tiny random Llama (left-padded batches), greedy and beam 5, with the Katz
prior (``lm_norm`` ``allowed`` and ``vocab``), the hard constraint, and a second retrieval
step (a trie that allows stopping, the first path in the source).

``constrained_pinned.json`` holds the outputs of the processor as it was before its speed
work (commit 0456cad); a speed change must reproduce them token for token (scores to 1e-4).
Rewrite the file only for a change that is meant to change outputs:
``python tests/test_constrained_pinned.py --write``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from conftest import teacher_acts
from modern_lm import make_tiny_lm

from parlai_docgraph.agents.gsr.evaluation import entity_scores
from parlai_docgraph.kg import fields as kg_fields
from parlai_docgraph.kg import metrics as kgm
from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.kg.subgraph import path_triples
from parlai_docgraph.models.gsr.build import build_gsr_model
from parlai_docgraph.models.gsr.inputs import GSRInputs
from parlai_docgraph.models.gsr.model import load_gsr_tokenizer, load_lm, load_seq2seq

PINNED = Path(__file__).with_name("constrained_pinned.json")
TURNS, BATCH = 6, 3
#: (name, num_beams, constraint, lm_norm, second retrieval step)
CASES = (
    ("beam5_katz", 5, "katz", "allowed", False),
    ("beam5_katz_vocab", 5, "katz", "vocab", False),
    ("beam5_hard", 5, "hard", "allowed", False),
    ("beam5_katz_step2", 5, "katz", "allowed", True),
    ("greedy_katz", 1, "katz", "allowed", False),
    ("greedy_hard_step2", 1, "hard", "allowed", True),
)


def _model(family: str, root: Path):
    lin = Linearizer(slot_tokens=2)
    if family == "t5":
        tok = load_gsr_tokenizer("tiny", None, lin.special_tokens())
        lm = load_seq2seq("tiny", seed=0)
    else:
        directory = make_tiny_lm(family, root / family)
        tok = load_gsr_tokenizer(str(directory), None, lin.special_tokens())
        lm = load_lm(str(directory), seed=0)
    return build_gsr_model(lm, tok, lin.special_tokens()).eval(), GSRInputs(tok, lin)


def outputs(family: str, root: Path, acts) -> dict:
    """``{case: [[path ids, beam score], ...] per example}`` of every case for ``family``."""
    torch.manual_seed(0)
    model, inputs = _model(family, root)
    kg = kg_fields.load_kg(acts[0]["kg_file"])[0]
    turns = [a for a in acts if a.get("kg_candidates")][:TURNS]
    out = {}
    for name, beams, constraint, lm_norm, step2 in CASES:
        rows = []
        for at in range(0, len(turns), BATCH):
            chunk = turns[at:at + BATCH]
            cands = [[kg_fields.json_to_path(p) for p in t["kg_candidates"]] for t in chunk]
            earlier = [c[:1] if step2 else [] for c in cands]
            sources = [inputs.retrieve_source(inputs.context(t["text"]), e)
                       for t, e in zip(chunk, earlier)]
            tries = [inputs.trie([p for p in c if p not in e], allow_stop=step2)
                     for c, e in zip(cands, earlier)]
            scores = None if constraint == "hard" else [
                entity_scores(kg, {"mentioned": t["kg_mentioned"], "candidates": c}, constraint,
                              0.1, 2) for t, c in zip(chunk, cands)]
            hyps = model.generate_paths(sources, tries, entity_scores=scores, num_beams=beams,
                                        num_return=beams, max_new_tokens=60, lm_norm=lm_norm)
            for h, c in zip(hyps, cands):
                index = inputs.path_index(c)
                for ids, _ in h:  # path_valid 1.0: every non-empty beam is a candidate
                    assert not ids or tuple(ids) in index or kgm.path_valid(
                        kg, path_triples(inputs.decode_path(ids)))
                rows.append([[ids, round(score, 4)] for ids, score in h])
        out[name] = rows
    return out


@pytest.fixture(scope="module")
def sample_acts(tmp_path_factory):
    return teacher_acts("docgraph:sample_kg", tmp_path_factory.mktemp("dp"))


@pytest.mark.parametrize("family", ("t5", "llama"))
def test_constrained_outputs_are_pinned(family, sample_acts, tmp_path):
    want = json.loads(PINNED.read_text(encoding="utf-8"))[family]
    got = outputs(family, tmp_path, sample_acts)
    assert set(got) == set(want)
    for case in want:
        for example, (g, w) in enumerate(zip(got[case], want[case])):
            where = f"{family} {case} example {example}"
            assert [ids for ids, _ in g] == [ids for ids, _ in w], where
            assert [s for _, s in g] == pytest.approx([s for _, s in w], abs=1e-4), where


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        acts = teacher_acts("docgraph:sample_kg", Path(tmp) / "dp")
        data = {f: outputs(f, Path(tmp), acts) for f in ("t5", "llama")}
    PINNED.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {PINNED}")
