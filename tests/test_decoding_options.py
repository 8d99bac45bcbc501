"""
One decoding mapping (:mod:`parlai_docgraph.models.decoding`) for every generator: each of
ParlAI's generation options reaches the ``generate`` call of the responder and of DialogGSR's
response (the agent's own opt, through ``eval_step``), ``--beam-min-length`` as new tokens
(``min_new_tokens``, never ``min_length``, which counts the prompt of a decoder-only LM), and
values a model cannot honour are refused with an error naming the option.
"""

from __future__ import annotations

import pytest

from conftest import teacher_acts
from parlai_docgraph.models.decoding import generation_config

pytest.importorskip("transformers")

#: option -> (its value, the GenerationConfig field it must set, that field's value)
OPTIONS = {
    "beam_size": (["--inference", "beam", "--beam-size", "3"], "num_beams", 3),
    "beam_min_length": (["--beam-min-length", "2"], "min_new_tokens", 2),
    "beam_length_penalty": (["--inference", "beam", "--beam-size", "2",
                             "--beam-length-penalty", "0.3"], "length_penalty", 0.3),
    "inference_topk": (["--inference", "topk", "--topk", "4"], "top_k", 4),
    "inference_nucleus": (["--inference", "nucleus", "--topp", "0.7"], "top_p", 0.7),
    "inference_greedy": (["--inference", "greedy", "--beam-size", "3"], "num_beams", 1),
    "temperature": (["--inference", "nucleus", "--temperature", "0.5"], "temperature", 0.5),
    "beam_block_ngram": (["--beam-block-ngram", "2"], "processors", ["ReplyNgramBlock"]),
}


def _spy(lm, seen):
    real = lm.generate

    def generate(*args, **kwargs):
        config = kwargs["generation_config"]
        seen.update({k: getattr(config, k) for k in (
            "num_beams", "min_new_tokens", "min_length", "length_penalty", "top_k", "top_p",
            "do_sample", "temperature", "no_repeat_ngram_size")})
        seen["processors"] = [type(p).__name__ for p in kwargs.get("logits_processor") or []]
        return real(*args, **kwargs)
    lm.generate = generate


def _check(seen, field, value):
    assert seen[field] == (pytest.approx(value) if isinstance(value, float) else value)
    if field == "min_new_tokens":  # new tokens, not min_length (which counts the prompt)
        assert seen["min_length"] != value
    assert not seen["no_repeat_ngram_size"]  # blocked within the reply only (processors)


@pytest.fixture(scope="module")
def kg_acts(tmp_path_factory):
    acts = teacher_acts("docgraph:sample_kg", tmp_path_factory.mktemp("dp"), "valid")
    return [a for a in acts if a.get("kg_candidates") and a.get("eval_labels")][:1]


@pytest.mark.parametrize("name", list(OPTIONS))
def test_option_reaches_gsr_generate(name, kg_acts, tmp_path):
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    args, field, value = OPTIONS[name]
    opt = ParlaiParser(True, True).parse_args(
        ["-m", "docgraph/gsr", "--gsr-model", "tiny", "-t", "docgraph:sample_kg",
         "--datapath", str(tmp_path), "--gsr-stage", "respond", "--gsr-eval-knowledge",
         "gold", "-dt", "valid", "--label-truncate", "8", *args])
    agent = create_agent(opt)
    seen = {}
    _spy(agent.gsr().lm, seen)
    batch = agent.batchify([agent.observe(dict(a, episode_done=True)) for a in kg_acts])
    agent.eval_step(batch)
    _check(seen, field, value)


@pytest.mark.parametrize("name", list(OPTIONS))
def test_option_reaches_responder_generate(name, tmp_path):
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    args, field, value = OPTIONS[name]
    opt = ParlaiParser(True, True).parse_args(
        ["-m", "docgraph/gpt2_responder", "--responder-model", "tiny", "--datapath",
         str(tmp_path), "--label-truncate", "8", *args])
    agent = create_agent(opt)
    seen = {}
    _spy(agent._responder().lm, seen)
    obs = agent.observe({"text": "hello there", "title": "Mills",
                         "checked_sentence": "A tide mill grinds grain.",
                         "eval_labels": ["it grinds grain"], "episode_done": True})
    agent.eval_step(agent.batchify([obs]))
    _check(seen, field, value)


def test_values_no_model_can_honour_are_refused():
    with pytest.raises(ValueError, match="factual_nucleus"):
        generation_config({"inference": "factual_nucleus"})
    with pytest.raises(ValueError, match="--beam-min-length 9"):
        generation_config({"beam_min_length": 9}, max_new_tokens=8)
    with pytest.raises(ValueError, match="--topp"):
        generation_config({"inference": "nucleus", "topp": 1.5})
    with pytest.raises(ValueError, match="--temperature"):
        generation_config({"inference": "topk", "topk": 3, "temperature": 0})


def test_gsr_models_saved_before_keep_their_response_decoding():
    from parlai.core.params import ParlaiParser

    from parlai_docgraph.agents.gsr.agent import GSRAgent
    from parlai_docgraph.agents.gsr.args import DECODING_KEY

    saved = ParlaiParser(True, True).parse_args(["-m", "docgraph/gsr", "--gsr-length-penalty", "0.4"])
    assert DECODING_KEY not in saved  # an opt file written before the key, with ParlAI's
    saved.update(inference="greedy", beam_min_length=1)  # defaults of those days
    old = GSRAgent.upgrade_opt(saved)
    assert (old["inference"], old["beam_length_penalty"], old["beam_min_length"]) == (
        "beam", 0.4, 0)
    saved = ParlaiParser(True, True).parse_args(["-m", "docgraph/gsr"])
    saved["override"] = {"inference": "nucleus"}
    saved["inference"] = "nucleus"  # what ParlAI applies from the command line first
    assert GSRAgent.upgrade_opt(saved)["inference"] == "nucleus"
    fresh = ParlaiParser(True, True).parse_args(["-m", "docgraph/gsr"])
    assert (fresh["inference"], fresh["beam_length_penalty"], fresh["beam_min_length"]) == (
        "beam", 1.0, 0)
