"""
:mod:`parlai_docgraph.models.finished_rows`: a causal DialogGSR path search that leaves out
the rows of done examples returns the paths and scores of the search that computes every
row (tiny random GPT-2, Llama and Qwen2; left-padded batches of sample turns; first and
second retrieval step), and really leaves rows out.
"""

from __future__ import annotations

import contextlib

import pytest
import torch

from conftest import teacher_acts

from parlai_docgraph.agents.gsr.evaluation import entity_scores
from parlai_docgraph.kg import fields as kg_fields
from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.models import finished_rows
from parlai_docgraph.models.adapters import base_model
from parlai_docgraph.models.finished_rows import FinishedExamples
from parlai_docgraph.models.gsr.build import build_gsr_model
from parlai_docgraph.models.gsr.inputs import GSRInputs
from parlai_docgraph.models.gsr.model import load_gsr_tokenizer, load_lm


@pytest.fixture(scope="module")
def sample_acts(tmp_path_factory):
    acts = teacher_acts("docgraph:sample_kg", tmp_path_factory.mktemp("dp"))
    return [a for a in acts if a.get("kg_candidates")]


def _search(model, inputs, acts, step2: bool):
    kg = kg_fields.load_kg(acts[0]["kg_file"])[0]
    cands = [[kg_fields.json_to_path(p) for p in a["kg_candidates"]] for a in acts]
    earlier = [c[:1] if step2 else [] for c in cands]
    sources = [inputs.retrieve_source(inputs.context(a["text"]), e) for a, e in zip(acts, earlier)]
    tries = [inputs.trie([p for p in c if p not in e], allow_stop=step2)
             for c, e in zip(cands, earlier)]
    scores = [entity_scores(kg, {"mentioned": a["kg_mentioned"], "candidates": c}, "katz", 0.1, 2)
              for a, c in zip(acts, cands)]
    return model.generate_paths(sources, tries, entity_scores=scores, num_beams=5, num_return=5,
                                max_new_tokens=80)


@pytest.mark.parametrize("family", ("gpt2", "llama", "qwen"))
@pytest.mark.parametrize("step2", (False, True))
def test_paths_equal_the_search_of_every_row(family, step2, family_dirs, sample_acts, monkeypatch):
    lin = Linearizer(slot_tokens=2)
    directory = str(family_dirs[family])
    tok = load_gsr_tokenizer(directory, None, lin.special_tokens())
    torch.manual_seed(0)
    model = build_gsr_model(load_lm(directory, seed=0), tok, lin.special_tokens()).eval()
    inputs = GSRInputs(tok, lin)
    acts = sample_acts[:: max(len(sample_acts) // 6, 1)][:6]
    used = []
    real = finished_rows.FinishedExamples.__enter__

    def spy(self):
        used.append(self)
        return real(self)

    monkeypatch.setattr(finished_rows.FinishedExamples, "__enter__", spy)
    skipping = _search(model, inputs, acts, step2)
    assert used and sum(u.skipped_rows for u in used) > 0  # rows of done examples left out
    assert all(u.forward_rows > 0 for u in used)
    monkeypatch.setattr(type(model), "search_rows", lambda self, cache, beams: contextlib.nullcontext())
    every = _search(model, inputs, acts, step2)
    assert len(skipping) == len(every) == len(acts)
    for got, want in zip(skipping, every):
        assert [ids for ids, _ in got] == [ids for ids, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
    # the hooks and the shadowed methods are gone after the search
    hf = base_model(model.lm)
    assert "_check_early_stop_heuristic" not in vars(hf)
    assert not hf._forward_hooks and not hf._forward_pre_hooks


class _Model(torch.nn.Module):
    @staticmethod
    def _check_early_stop_heuristic(flags, running_beam_scores=None):
        return flags


def _cache_pair():
    from parlai_docgraph.models.kv_cache import GrowingCache

    torch.manual_seed(0)
    whole, held = GrowingCache(), GrowingCache()
    keys, values = torch.randn(8, 2, 3, 4), torch.randn(8, 2, 3, 4)
    whole.update(keys, values, 0)
    held.update(keys.clone(), values.clone(), 0)
    return whole, held


def test_reorder_and_compaction_follow_the_rows_held():
    """Rows of examples 1 and 3 of 4 (2 beams each) held, those already in place kept
    there: a reorder of the batch's rows, applied at the next forward pass, leaves the held
    rows as the same reorder of the whole cache would, in the buffer the cache grew."""
    whole, held = _cache_pair()
    rows = FinishedExamples(_Model(), held, num_beams=2)
    buffer = held.layers[0]._key_buffer.data_ptr()
    with rows:
        rows.model._check_early_stop_heuristic(torch.tensor([[False], [True], [False], [True]]))
        ids = torch.arange(8)[:, None]
        _, kwargs = rows._before(rows.model, (), {"input_ids": ids, "position_ids": ids + 10})
        # rows 2 and 3 keep their cache positions, 6 and 7 fill positions 0 and 1
        assert kwargs["input_ids"].flatten().tolist() == [6, 7, 2, 3]
        assert kwargs["position_ids"].flatten().tolist() == [16, 17, 12, 13]
        assert rows.skipped_rows == 4 and rows.forward_rows == 4
        beam_idx = torch.tensor([1, 1, 3, 2, 4, 4, 7, 7])  # within each example
        held.reorder_cache(beam_idx)
        rows._before(rows.model, (), {"input_ids": ids})
    whole.reorder_cache(beam_idx)
    kept = rows._rows
    assert sorted(kept.tolist()) == [2, 3, 6, 7]
    assert torch.equal(held.layers[0].keys, whole.layers[0].keys[kept])
    assert torch.equal(held.layers[0].values, whole.layers[0].values[kept])
    assert held.layers[0].keys.data_ptr() == buffer
    assert "reorder_cache" not in vars(held)


def test_penalised_beams_are_left_out_and_their_rows_come_back_from_a_held_parent():
    """Running scores with :data:`~finished_rows.PENALTY` (the surplus beams of a turn with
    fewer paths than beams): those rows are not computed, an example with only penalised
    beams counts as done, and a row whose new beam descends from a computed row is computed
    again from that row's cache."""
    whole, held = _cache_pair()
    rows = FinishedExamples(_Model(), held, num_beams=2)
    with rows:
        flags = torch.ones(4, 1, dtype=torch.bool)
        scores = torch.tensor([[-1.0, -2.0], [-1.5, -1e9], [-1e9, -1e9 - 3], [-0.5, -1e9]])
        out = rows.model._check_early_stop_heuristic(flags, running_beam_scores=scores)
        assert out.flatten().tolist() == [True, True, False, True]
        ids = torch.arange(8)[:, None]
        _, kwargs = rows._before(rows.model, (), {"input_ids": ids})
        assert kwargs["input_ids"].flatten().tolist() == [0, 1, 2, 6]  # 6 fills position 3
        beam_idx = torch.tensor([1, 0, 2, 2, 4, 5, 6, 6])  # row 3 now descends from row 2
        held.reorder_cache(beam_idx)
        scores = torch.tensor([[-1.0, -2.0], [-1.5, -1.6], [-1e9, -1e9], [-0.5, -1e9]])
        rows.model._check_early_stop_heuristic(out, running_beam_scores=scores)
        _, kwargs = rows._before(rows.model, (), {"input_ids": ids})
        assert sorted(kwargs["input_ids"].flatten().tolist()) == [0, 1, 2, 3, 6]
        assert torch.equal(kwargs["input_ids"].flatten(), rows._rows)
    whole.reorder_cache(beam_idx)
    kept = rows._rows
    assert torch.equal(held.layers[0].keys, whole.layers[0].keys[kept])
    assert rows.skipped_rows == 4 + 3
