"""The ``gsr`` benchmark's floor: a search with its least processor is the free search."""

from __future__ import annotations

import torch

from parlai_docgraph.bench import gsr as bench_gsr


def test_least_processor_returns_its_input_as_a_new_tensor():
    scores = torch.randn(5, 40)
    out = bench_gsr._LeastProcessor()(torch.zeros(5, 3, dtype=torch.long), scores)
    assert out is not scores and torch.equal(out, scores)


def test_the_floor_search_equals_the_free_search():
    """With the least processor added, ``generate_paths`` decodes the same beams and
    scores as without it: the floor ratio times the same search."""
    from parlai_docgraph.kg.linearize import Linearizer
    from parlai_docgraph.models.gsr.build import build_gsr_model
    from parlai_docgraph.models.gsr.model import load_gsr_tokenizer, load_seq2seq

    lin = Linearizer(slot_tokens=2)
    tok = load_gsr_tokenizer("tiny", None, lin.special_tokens())
    model = build_gsr_model(load_seq2seq("tiny", seed=0), tok, lin.special_tokens()).eval()
    source = tok("[Head] Iron Man", add_special_tokens=True)["input_ids"]
    calls = []

    def counted(real):
        wrapped = bench_gsr._with_least_processor(real)

        def generate(*a, **k):
            calls.append(1)
            return wrapped(*a, **k)
        return generate

    free = model.generate_paths([source], None, max_new_tokens=6)
    with bench_gsr._generate_wrapped(model, counted):
        least = model.generate_paths([source], None, max_new_tokens=6)
    assert calls == [1] and least == free and len(free[0]) == 5
