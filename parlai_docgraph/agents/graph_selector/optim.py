"""
Two learning rates for the graph selector: the pretrained encoder and everything else.

Li et al. (2022) give one rate, 3e-5, for the whole model (RoBERTa + EGAT); Zhang & Tan
(2023) train BERT at 5e-5 and "2e-3 for other parameters". A graph network trained from
scratch at an encoder fine-tuning rate barely moves in a few epochs (issue 17: the full
variant stalled at the cross-encoder's accuracy), so the selector trains two optimizer
parameter groups: ``--encoder-learningrate`` (default: ParlAI's ``-lr``, 3e-5 for the
selector) for the parameters of the fine-tuned context/sentence encoder (``context_encoder``)
and ``--graph-learningrate`` (default 2e-3, Zhang & Tan's non-encoder rate) for every other
trainable parameter: node/context projections, type embeddings, EGAT/GAT layers, the sentence,
concept, segment and word heads. Neither paper gives a warm-up; ParlAI's ``--warmup-updates``
and ``--lr-scheduler`` scale both groups alike (``LambdaLR``/``ReduceLROnPlateau`` act on every
group's own base rate), and the optimizer state ParlAI saves keeps both groups' rates.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from parlai.core.opt import Opt
from torch import nn

#: the selector modules' attribute holding the fine-tuned pretrained encoder
ENCODER_PREFIX = "context_encoder."
#: Zhang & Tan 4.1.2: "2e-3 for other parameters"
GRAPH_LR = 2e-3


def add_learning_rate_args(group) -> None:
    """Register ``--encoder-learningrate`` and ``--graph-learningrate`` (names.md)."""
    group.add_argument(
        "--encoder-learningrate", type=float, default=None,
        help="learning rate of the pretrained encoder's parameters (the fine-tuned "
        "context/sentence encoder of Eq. 1; the frozen node-feature copy is not trained); "
        "default: -lr (3e-5, Li et al.'s single rate)")
    group.add_argument(
        "--graph-learningrate", type=float, default=GRAPH_LR,
        help="learning rate of every other parameter: node and context projections, node- "
        "and edge-type embeddings, EGAT/GAT layers, sentence, concept, segment and word "
        "heads (Zhang & Tan: 2e-3 for non-encoder parameters; Li et al. give one rate only, "
        "-lr, for everything: set this to the -lr value to reproduce that)")


def encoder_rate(opt: Opt) -> float:
    """``--encoder-learningrate``, or ``-lr`` when it is unset."""
    rate = opt.get("encoder_learningrate")
    return float(opt["learningrate"] if rate is None else rate)


def parameter_groups(model: nn.Module, opt: Opt) -> List[Dict]:
    """
    The optimizer's parameter groups ``[encoder, graph]``: each trainable parameter of
    ``model`` in exactly one, with its ``lr``; an empty group is left out.
    """
    model = getattr(model, "module", model)
    enc: List[nn.Parameter] = []
    rest: List[nn.Parameter] = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (enc if name.startswith(ENCODER_PREFIX) else rest).append(p)
    graph_lr: Optional[float] = opt["graph_learningrate"]
    groups = [{"params": enc, "lr": encoder_rate(opt), "name": "encoder"},
              {"params": rest, "lr": float(graph_lr if graph_lr is not None else GRAPH_LR),
               "name": "graph"}]
    return [g for g in groups if g["params"]]
