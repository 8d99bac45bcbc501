"""
Two learning rates for the graph selector: the pretrained encoder and everything else.

Li et al. (2022) give one rate, 3e-5, for the whole model (RoBERTa + EGAT); Zhang & Tan
(2023) train BERT at 5e-5 and "2e-3 for other parameters". A graph network trained from
scratch at an encoder fine-tuning rate barely moves in a few epochs (the full variant
stays at the cross-encoder's accuracy), so the selector trains two optimizer
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




def encoder_rate(opt: Opt) -> float:
    """``--encoder-learningrate``, or ``-lr`` when it is unset."""
    rate = opt["encoder_learningrate"]
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
