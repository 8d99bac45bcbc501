"""
Chat templates for an instruction-tuned responder: knowledge and history
go in through the tokenizer's template, replies end with its end-of-turn token; tested
with the tiny Qwen-style tokenizer (ChatML template) built in the test.
"""

from __future__ import annotations

import pytest
import torch

from modern_lm import make_tiny_lm

from parlai_docgraph.graphs.selection import Selection
from parlai_docgraph.models.responder import chat
from parlai_docgraph.models.responder.model import TINY_DIR, load_responder_tokenizer as load_tokenizer

KNOWLEDGE = "Lighthouse: a lighthouse is a tower that emits light"
TURNS = ["do you like the sea ?", "i love it , the waves are calming", "have you seen a lighthouse ?"]


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory):
    return make_tiny_lm("qwen", tmp_path_factory.mktemp("lm") / "qwen")


@pytest.fixture(scope="module")
def qwen_tok(qwen_dir):
    return load_tokenizer(str(qwen_dir))


def test_prompt_goes_through_the_template(qwen_tok):
    ids = chat.chat_prompt(qwen_tok, KNOWLEDGE, TURNS)
    text = qwen_tok.decode(ids, skip_special_tokens=False)
    assert text == (
        f"<|im_start|>system\nKnowledge: {KNOWLEDGE}<|im_end|>\n"
        f"<|im_start|>user\n{TURNS[0]}<|im_end|>\n<|im_start|>assistant\n{TURNS[1]}<|im_end|>\n"
        f"<|im_start|>user\n{TURNS[2]}<|im_end|>\n<|im_start|>assistant\n"
    )
    assert chat.end_of_turn_id(qwen_tok) == qwen_tok.convert_tokens_to_ids("<|im_end|>")


def test_history_is_cut_from_the_oldest_turn_and_opens_with_the_user(qwen_tok):
    last = len(qwen_tok(TURNS[2], add_special_tokens=False)["input_ids"])
    mid = len(qwen_tok(TURNS[1], add_special_tokens=False)["input_ids"])
    text = qwen_tok.decode(chat.chat_prompt(qwen_tok, KNOWLEDGE, TURNS, context_truncate=last + mid), skip_special_tokens=False)
    # the two newest turns fit, but the older one would open with the assistant: dropped too
    assert TURNS[0] not in text and TURNS[1] not in text and TURNS[2] in text
    text = qwen_tok.decode(chat.chat_prompt(qwen_tok, KNOWLEDGE, TURNS, context_truncate=3, knowledge_truncate=4),
                           skip_special_tokens=False)
    end = qwen_tok.decode(qwen_tok(TURNS[2], add_special_tokens=False)["input_ids"][-3:])
    assert f"user\n{end}<|im_end|>" in text and "have you seen" not in text  # the newest turn keeps its end
    assert KNOWLEDGE not in text and "Knowledge: Light" in text


def test_settings_and_templates_without_a_system_role(qwen_tok):
    plain = load_tokenizer(TINY_DIR)  # the bundled GPT-2 has no template
    assert chat.use_template("auto", qwen_tok) and not chat.use_template("auto", plain)
    assert not chat.use_template("false", qwen_tok)
    with pytest.raises(ValueError, match="no chat template"):
        chat.use_template("true", plain)
    with pytest.raises(ValueError):
        chat.use_template("maybe", qwen_tok)
    tok = load_tokenizer(TINY_DIR)
    tok.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
        "{% endif %}<{{ m['role'] }}>{{ m['content'] }}</turn>{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    text = tok.decode(chat.chat_prompt(tok, KNOWLEDGE, TURNS[-1:]))
    assert text == f"<user>Knowledge: {KNOWLEDGE}\n\n{TURNS[-1]}</turn><assistant>"
    assert chat.end_of_turn_id(tok) == tok.eos_token_id  # '</turn>' is not one special token


def test_a_prompt_is_fitted_to_its_cap_context_first_then_knowledge(qwen_tok):
    """``max_tokens`` bounds the whole rendered prompt: the oldest turns go first, then
    the newest turn's start, then the knowledge's end; under the cap nothing changes."""
    long_turns = [f"the keeper and the boats, turn {i}" for i in range(12)]
    knowledge = "Lighthouse: " + "a tower that emits light from a system of lamps " * 6
    free = chat.chat_prompt(qwen_tok, knowledge, long_turns, 128, 128, "fact")
    assert chat.chat_prompt(qwen_tok, knowledge, long_turns, 128, 128, "fact",
                            max_tokens=len(free)) == free
    fitted = chat.chat_prompt(qwen_tok, knowledge, long_turns, 128, 128, "fact",
                              max_tokens=len(free) - 40)
    assert len(fitted) <= len(free) - 40
    text = qwen_tok.decode(fitted, skip_special_tokens=False)
    assert text.count("<|im_start|>") < qwen_tok.decode(free, skip_special_tokens=False).count(
        "<|im_start|>"), "older turns dropped"
    assert "turn 11\n" in text and "Fact: " + knowledge in text, "the newest turn and the fact kept"
    cramped = chat.chat_prompt(qwen_tok, knowledge, long_turns, 128, 128, "fact", max_tokens=60)
    text = qwen_tok.decode(cramped, skip_special_tokens=False)
    assert len(cramped) <= 60 and "Fact: Lighthouse" in text and knowledge not in text
    with pytest.raises(ValueError, match="--responder-max-length"):
        chat.chat_prompt(qwen_tok, knowledge, long_turns, 128, 128, "fact", max_tokens=5)


def test_a_long_chat_leaves_the_reply_its_positions(qwen_dir):
    """The template's own tokens come out of the context budget: with knowledge and history
    each at their truncation, the reply still gets ``max_length - K - C - 2`` positions (a
    prompt of K + C tokens plus the template used to leave none: empty replies)."""
    agent = _agent(qwen_dir, "--chat-prompt", "fact", "--responder-knowledge-truncate", "32",
                   "--responder-context-truncate", "32", "--responder-max-length", "80")
    responder = agent._responder()
    assert responder.prompt_limit == 66
    words = "the keeper rowed out to the rock to light the lamp every evening"
    for i in range(6):
        msg = {"text": f"{i}: {words}", "title": "Lighthouse", "checked_sentence": words * 3,
               "labels": [words], "episode_done": False}
        obs = agent.observe(msg)
        assert len(obs["text_vec"]) <= 66
        assert responder.target_budget(len(obs["text_vec"])) >= 80 - 66
        agent.self_observe({"text": words, "episode_done": False})


def _agent(qwen_dir, *args):
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    parser = ParlaiParser(True, True)
    opt = parser.parse_args(["-m", "docgraph/gpt2_responder", "--responder-model", str(qwen_dir),
                             "--inference", "greedy", *args])
    return create_agent(opt)


def test_responder_agent_trains_and_generates_through_the_template(qwen_dir, qwen_tok):
    msg = {"text": TURNS[-1], "title": "Lighthouse", "checked_sentence": "a lighthouse is a tower that emits light",
           "labels": ["yes , the one by the harbour"], "episode_done": True}
    agent = _agent(qwen_dir)
    assert agent.uses_chat_template()
    obs = agent.observe(dict(msg))
    assert obs["text_vec"].tolist() == chat.chat_prompt(qwen_tok, KNOWLEDGE, [TURNS[-1]])
    im_end = qwen_tok.convert_tokens_to_ids("<|im_end|>")
    assert obs["labels_vec"].tolist()[-1] == im_end and agent._responder().eos_id == im_end
    batch = agent.batchify([obs])
    loss = agent.compute_loss(batch)
    loss.backward()
    assert torch.isfinite(loss)
    agent.model.eval()
    preds, _ = agent._generate(batch, 1, 5)
    assert len(preds) == 1 and preds[0][0].tolist()[-1] == im_end
    plain = _agent(qwen_dir, "--chat-template", "false")
    assert not plain.uses_chat_template()
    obs = plain.observe(dict(msg))
    eos = qwen_tok.eos_token_id
    assert obs["text_vec"].tolist()[-1] == eos and obs["labels_vec"].tolist()[-1] == eos
    assert "<|im_start|>" not in qwen_tok.decode(obs["text_vec"].tolist(), skip_special_tokens=False)


def test_fact_layout_puts_the_knowledge_beside_the_newest_turn(qwen_tok):
    """``--chat-prompt fact``: no system message of ours; the newest user turn reads the
    fact, the turn and the instruction; without knowledge the turn stays as it is."""
    text = qwen_tok.decode(chat.chat_prompt(qwen_tok, KNOWLEDGE, TURNS, layout="fact"),
                           skip_special_tokens=False)
    assert "Knowledge:" not in text
    assert text.endswith(
        f"<|im_start|>user\nFact: {KNOWLEDGE}\n{TURNS[-1]}\n{chat.FACT_INSTRUCTION}<|im_end|>\n"
        "<|im_start|>assistant\n")
    assert f"<|im_start|>user\n{TURNS[0]}<|im_end|>" in text  # older turns unchanged
    bare = qwen_tok.decode(chat.chat_prompt(qwen_tok, chat.NO_PASSAGE, TURNS[-1:], layout="fact"),
                           skip_special_tokens=False)
    assert f"<|im_start|>user\n{TURNS[-1]}<|im_end|>" in bare and "Fact:" not in bare
    with pytest.raises(ValueError, match="--chat-prompt"):
        chat.chat_prompt(qwen_tok, KNOWLEDGE, TURNS, layout="nowhere")


@pytest.mark.parametrize("family", ["qwen", "gpt2"])
def test_knowledge_title_none_gives_the_sentence_alone(family, qwen_dir):
    """``--knowledge-title none``: the prompt's knowledge line, for the teacher's sentence and
    for the pipeline's selection alike, is the sentence without ``title:`` (the Qwen-style
    chat template and the bundled GPT-2's plain layout); ``prefix`` keeps the title, and a
    model file saved before the option existed loads as ``prefix``."""
    from parlai_docgraph.agents.gpt2_responder.agent import Gpt2ResponderAgent

    model = str(qwen_dir) if family == "qwen" else "tiny"
    tok = load_tokenizer(TINY_DIR if model == "tiny" else model)
    sentence = "a lighthouse is a tower that emits light"
    msg = {"text": TURNS[-1], "title": "Lighthouse", "checked_sentence": sentence,
           "labels": ["yes"], "episode_done": True}
    selected = {"selected_knowledge": Selection(title="Lighthouse", sentence=sentence,
                                                passage=0, sentence_index=0)}
    for setting, knowledge in (("none", sentence), ("prefix", f"Lighthouse: {sentence}")):
        agent = _agent(model, "--knowledge-title", setting)
        text = tok.decode(agent.observe(dict(msg))["text_vec"].tolist(), skip_special_tokens=False)
        assert knowledge in text and ("Lighthouse:" in text) == (setting == "prefix")
        assert agent._knowledge(selected) == knowledge
    from parlai.core.params import ParlaiParser

    saved = ParlaiParser(True, True).parse_args(["-m", "docgraph/gpt2_responder",
                                                 "--knowledge-title", "none"])
    assert Gpt2ResponderAgent.upgrade_opt(dict(saved))["knowledge_title"] == "none"
    del saved["knowledge_title"]  # an opt file written before the option
    assert Gpt2ResponderAgent.upgrade_opt(saved)["knowledge_title"] == "prefix"
