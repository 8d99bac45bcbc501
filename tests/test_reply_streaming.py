"""
Token-by-token streaming of the responder (:mod:`parlai_docgraph.models.responder.streaming`):
the streamed pieces add up to the final reply for the bundled tiny GPT-2 and a tiny random
Llama (byte-level BPE and Metaspace tokenizers), an incomplete character waits for its
next token, a stop request ends ``generate`` and leaves the LM usable, beam search hands
over the chosen reply in one piece, and a streamer refuses a batch of two.
"""

from __future__ import annotations

from typing import List

import pytest
import torch

from parlai_docgraph.models.decoding import generation_config
from parlai_docgraph.models.responder.model import Responder
from parlai_docgraph.models.responder.streaming import GenerationStopped, ReplyStreamer

GREEDY = generation_config({"inference": "greedy", "beam_min_length": 12}, max_new_tokens=12)


def _decode(tok):
    return lambda ids: tok.decode(ids, skip_special_tokens=True,
                                  clean_up_tokenization_spaces=False)


def _prompt(responder: Responder, tok) -> List[int]:
    return responder.build_prompt(tok.encode("The tide mill grinds grain."),
                                  tok.encode("How does the mill work?"))


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_streamed_pieces_add_up_to_the_reply(family, request):
    responder, tok = request.getfixturevalue(f"{family}_responder")
    pieces: List[str] = []
    streamer = ReplyStreamer(_decode(tok), on_text=pieces.append, eos_id=responder.eos_id)
    prompt = _prompt(responder, tok)
    hyp = responder.generate([prompt], GREEDY, streamer=streamer)[0][0]
    assert len(hyp.tokens) == 12 and len(pieces) >= 2  # token by token, not in one piece
    assert "".join(pieces) == _decode(tok)(hyp.tokens)
    assert streamer.tokens == hyp.tokens  # the prompt was not streamed
    assert responder.generate([prompt], GREEDY)[0][0].tokens == hyp.tokens  # unchanged


def test_an_incomplete_character_waits_for_its_next_token():
    # token 1 and 2 are the two halves of one character: nothing shows until both came
    text = {(): "", (1,): "a\ufffd", (1, 2): "aé", (1, 2, 3): "aé b"}
    pieces: List[str] = []
    streamer = ReplyStreamer(lambda ids: text[tuple(ids)], on_text=pieces.append, eos_id=9)
    streamer.put(torch.tensor([[5, 6]]))  # the prompt
    for token in (1, 2, 3, 9, 4):  # 9 ends the reply; 4 after it is ignored
        streamer.put(torch.tensor([token]))
    streamer.end()
    assert pieces == ["aé", " b"]


def test_a_stop_request_ends_generate_and_the_lm_stays_usable(gpt2_responder):
    responder, tok = gpt2_responder
    pieces: List[str] = []
    streamer = ReplyStreamer(_decode(tok), on_text=pieces.append,
                             should_stop=lambda: len(streamer.tokens) >= 3)
    prompt = _prompt(responder, tok)
    with pytest.raises(GenerationStopped):
        responder.generate([prompt], GREEDY, streamer=streamer)
    assert len(streamer.tokens) == 3
    assert len(responder.generate([prompt], GREEDY)[0][0].tokens) == 12


def test_beam_search_streams_the_chosen_reply_in_one_piece_and_batches_are_refused(gpt2_responder):
    responder, tok = gpt2_responder
    prompt = _prompt(responder, tok)
    beam = generation_config({"inference": "beam", "beam_size": 3, "beam_min_length": 4},
                             max_new_tokens=8)
    pieces: List[str] = []
    best = responder.generate([prompt], beam, streamer=ReplyStreamer(
        _decode(tok), on_text=pieces.append))[0][0]
    assert pieces == [_decode(tok)(best.tokens)]
    with pytest.raises(ValueError, match="batch of one"):
        responder.generate([prompt, prompt], GREEDY, streamer=ReplyStreamer(_decode(tok)))
