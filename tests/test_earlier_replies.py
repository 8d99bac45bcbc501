"""
``--block-earlier-replies n`` (:mod:`parlai_docgraph.models.responder.earlier_replies`): a
reply shares no token n-gram with the responder's earlier replies except the knowledge's,
for the bundled tiny GPT-2 and a tiny random Llama; batched rows keep their own tables; the
agent blocks the assistant turns of the history, not the user's.
"""

from __future__ import annotations

import pytest

from parlai_docgraph.models.decoding import generation_config
from parlai_docgraph.models.responder.earlier_replies import (
    EarlierReplyBlock, blocked_ngrams, ngrams,
)
from parlai_docgraph.models.responder.model import Responder

GREEDY = generation_config({"inference": "greedy", "beam_min_length": 16}, max_new_tokens=16)


def _prompt(responder: Responder, tok, question: str):
    return responder.build_prompt(tok.encode("The tide mill grinds grain."), tok.encode(question))


def _text(tok, ids):
    return tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)


def test_the_table_holds_reply_ngrams_but_not_the_knowledges(gpt2_responder):
    _, tok = gpt2_responder
    table = blocked_ngrams(tok, ["the gate is kept in the shed"], "the gate is open", 3)
    grams = {prefix + (last,) for prefix, lasts in table.items() for last in lasts}
    reply = tok("the gate is kept in the shed", add_special_tokens=False)["input_ids"]
    know = tok("the gate is open", add_special_tokens=False)["input_ids"]
    assert ngrams(reply, 3) - ngrams(know, 3) <= grams
    assert not (ngrams(know, 3) & grams)
    assert blocked_ngrams(tok, [], "x", 3) == {} and blocked_ngrams(tok, ["a b c d"], "", 0) == {}
    with pytest.raises(ValueError, match="block-earlier-replies"):
        EarlierReplyBlock(0, [table], 0)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_a_reply_does_not_repeat_an_earlier_reply(family, request):
    """Greedy decoding of one prompt gives the same reply twice; with the first reply as an
    earlier reply, the second shares none of the trigrams of its text's token ids (a random
    model may write a text in ids its tokenizer would not choose; the block reads the text)."""
    responder, tok = request.getfixturevalue(f"{family}_responder")
    prompt = _prompt(responder, tok, "How does the mill work?")
    first = responder.generate([prompt], GREEDY)[0][0]
    assert responder.generate([prompt], GREEDY)[0][0].tokens == first.tokens
    earlier = _text(tok, first.tokens)
    table = blocked_ngrams(tok, [earlier], "", 3)
    again = responder.generate([prompt], GREEDY, earlier=[table], earlier_n=3)[0][0]
    spelled = tok(earlier, add_special_tokens=False)["input_ids"]
    assert again.tokens != first.tokens
    assert not (ngrams(again.tokens, 3) & ngrams(spelled, 3))


def test_batched_rows_keep_their_own_tables(gpt2_responder):
    """Row 0 blocks its own earlier reply, row 1 blocks nothing: row 1 decodes as alone."""
    responder, tok = gpt2_responder
    prompts = [_prompt(responder, tok, "How does the mill work?"),
               _prompt(responder, tok, "What does it grind?")]
    alone = [responder.generate([p], GREEDY)[0][0].tokens for p in prompts]
    earlier = _text(tok, alone[0])
    table = blocked_ngrams(tok, [earlier], "", 3)
    both = responder.generate(prompts, GREEDY, earlier=[table, {}], earlier_n=3)
    assert both[1][0].tokens == alone[1]
    spelled = tok(earlier, add_special_tokens=False)["input_ids"]
    assert not (ngrams(both[0][0].tokens, 3) & ngrams(spelled, 3))


def test_the_agent_blocks_its_own_turns_only(datapath):
    """The responder agent's table: the history's assistant turns (every second turn back
    from the newest user turn), minus the knowledge's n-grams; zero turns off."""
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    parser = ParlaiParser(True, True)
    opt = parser.parse_args(["-m", "docgraph/gpt2_responder", "--responder-model", "tiny",
                             "--block-earlier-replies", "3", "--datapath", str(datapath)])
    agent = create_agent(opt)
    tok = agent.dict.hf_tokenizer
    turns = ["user one asks about the mill", "the mill grinds grain every day",
             "and on sundays?"]
    ex = {"history_turns": turns, "title": "Tide mill", "checked_sentence": "the mill grinds grain"}
    table = agent.earlier_reply_block(ex)
    expected = blocked_ngrams(tok, [turns[1]], "Tide mill: the mill grinds grain", 3)
    assert table == expected and table
    user = blocked_ngrams(tok, [turns[0]], "", 3)
    assert not set(user) <= set(table)
    agent.opt["block_earlier_replies"] = 0
    assert agent.earlier_reply_block(ex) == {}


def test_parlais_context_block_is_refused_with_the_option_that_exists():
    """--beam-context-block-ngram (inherited from ParlAI) would block the fact's words: it is
    refused, naming --block-earlier-replies, instead of being silently ignored."""
    with pytest.raises(ValueError, match="block-earlier-replies"):
        generation_config({"inference": "greedy", "beam_context_block_ngram": 3})
    assert generation_config({"inference": "greedy", "beam_context_block_ngram": -1})
