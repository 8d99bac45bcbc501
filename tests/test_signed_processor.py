"""The project's ``LogitsProcessor``s hand ``LogitsProcessorList`` a call whose signature is
read, not rebuilt at every step (``parlai_docgraph/signed_processor.py``), and compute
through the list what they compute when called."""

from __future__ import annotations

import copy
import inspect
import types

import pytest
import torch
from transformers import LogitsProcessorList

from parlai_docgraph.models.decoding import ReplyNgramBlock
from parlai_docgraph.models.responder.earlier_replies import EarlierReplyBlock
from parlai_docgraph.signed_processor import SignedProcessor


def _reply_block():
    return ReplyNgramBlock(2, 1)


def _earlier_block():
    return EarlierReplyBlock(2, [{(4,): {5}}], 1)


@pytest.mark.parametrize("make", [_reply_block, _earlier_block])
def test_reply_processors_carry_a_stored_signature(make) -> None:
    ids = torch.tensor([[0, 3, 4, 3, 4]])
    scores = torch.zeros(1, 8)
    proc = make()
    assert isinstance(proc, SignedProcessor)
    assert isinstance(proc.__call__, types.FunctionType) and "__signature__" in vars(proc.__call__)
    assert list(inspect.signature(proc.__call__).parameters) == ["input_ids", "scores"]
    through_list = LogitsProcessorList([proc])(ids, scores.clone())
    direct = type(proc).__call__(make(), ids, scores.clone())
    assert torch.equal(through_list, direct) and torch.isinf(direct).any()  # something was blocked
    clone = copy.deepcopy(proc)
    assert clone.__call__ is not proc.__call__
    assert torch.equal(LogitsProcessorList([clone])(ids, scores.clone()), direct)
