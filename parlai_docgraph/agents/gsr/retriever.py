"""
A separate, frozen retriever for ``-m docgraph/gsr`` (``--gsr-retriever-model-file``).

Park et al. (3.4) train DialogGSR "in a multi-stage process": knowledge-graph
reconstruction, then the generative subgraph retriever, then the response generator, whose
input is the subgraph the (trained) retriever returns (Eq. 10). The ``respond`` stage
reads a ``retrieve``-stage model file here: that model, loaded once and never trained,
retrieves for the response model in training and evaluation, so the responses do not learn
from the output of a retriever that is still being trained (what ``--gsr-stage all`` does,
one model trained on both losses).

The retriever decodes with the caller's retrieval options (:data:`.args.RETRIEVAL_OPTIONS`:
an evaluation's ``--gsr-constraint`` applies to it) and must share the caller's tokenizer:
both read the same dialogue ids.
"""

from __future__ import annotations

from typing import Any

from parlai.core.opt import Opt

from parlai_docgraph.agents.gsr.args import RETRIEVAL_OPTIONS


def load_retriever(opt: Opt, tokenizer: Any) -> Any:
    """
    The :class:`~parlai_docgraph.agents.gsr.agent.GSRAgent` of
    ``opt["gsr_retriever_model_file"]``, in eval mode with every parameter frozen and the
    retrieval options of ``opt``; ``ValueError`` when its tokenizer differs from
    ``tokenizer`` or the caller's stage is not ``respond``.
    """
    from parlai.core.agents import create_agent_from_model_file

    path = opt["gsr_retriever_model_file"]
    if opt["gsr_stage"] != "respond":
        raise ValueError(f"--gsr-retriever-model-file is for --gsr-stage respond (the response "
                         f"stage after a retrieve-stage model), got --gsr-stage {opt['gsr_stage']}")
    overrides = {key: opt[key] for key in RETRIEVAL_OPTIONS if key in opt}
    overrides.update(gsr_stage="retrieve", gsr_retriever_model_file=None,
                     datapath=opt["datapath"], no_cuda=opt.get("no_cuda", False))
    agent = create_agent_from_model_file(path, opt_overrides=overrides)
    if agent is None:
        raise ValueError(f"--gsr-retriever-model-file {path}: no model file there")
    theirs = agent.dict.hf_tokenizer
    if len(theirs) != len(tokenizer) or theirs.get_vocab() != tokenizer.get_vocab():
        raise ValueError(
            f"--gsr-retriever-model-file {path}: its tokenizer differs from this model's "
            "(both read the same dialogue ids): train the response stage from the retriever "
            "(--init-model) or with the same --gsr-model, --slot-tokens and --gsr-hops")
    agent.model.eval()
    for param in agent.model.parameters():
        param.requires_grad_(False)
    return agent
