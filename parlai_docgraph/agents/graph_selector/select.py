"""
:meth:`SelectMixin.select`: the graph selector's ranking of a pool without a teacher or a
batch of messages (``parlai-docgraph heldout_eval`` ranks with it; the ``-m docgraph``
pipeline ranks through the selector's ``batch_act``), and
:meth:`SelectMixin.scored_graph`, the graph of the last scoring (which the pipeline shows).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch
from parlai.core.torch_agent import Batch

from parlai_docgraph.agents.graph_selector.evaluation import top_concepts
from parlai_docgraph.graphs.knowledge_lines import candidate_titles
from parlai_docgraph.models.selector.common import rank_candidates


class SelectMixin:
    """Adds :meth:`select` and :meth:`scored_graph` to
    :class:`~.graph_selector.GraphSelectorAgent`."""

    def scored_graph(self) -> Optional[Any]:
        """
        The document graph this selector scored for its last observed message: the graph
        provider's own (memo or store: never a second build, so ``--graph-variant``,
        ``--graph-parser``, ``--graph-coref`` and the store are those of the scoring);
        ``None`` when the selector scores no graph (``--graph-variant none``) or the
        message had no knowledge pool.
        """
        observed = getattr(self, "observation", None) or {}
        pool = observed.get("background_passages")
        if not self.graphs.uses_graph or not pool:
            return None
        return self.graphs.get(pool, observed.get("background_base")).graph

    @torch.no_grad()
    def select(self, passages, context: str, candidates: Optional[List[str]] = None
               ) -> Dict[str, Any]:
        """
        Rank knowledge sentences without a teacher (e.g. over a user's documents).

        ``passages``: ``[(title, [sentence, ...]), ...]``; ``context``: the dialogue so far
        (turns joined by newlines); ``candidates``: knowledge lines ``"{title} {sentence}"``
        (default: every sentence of ``passages``). Returns ``sentence`` (the best
        candidate), ``scores`` (``{candidate: score}``, best first) and ``top_concepts``
        (the 5 best-scored concept / word texts of the graph, ``[]`` without concepts).
        """
        pool = [(str(t), [str(x) for x in sents]) for t, sents in passages]
        cands = list(candidates) if candidates else [f"{t} {x}" for t, ss in pool for x in ss]
        if not cands:
            raise ValueError("select() needs at least one candidate or passage sentence")
        fields = self._collate([pool], [cands], [-2], [context], [context])
        batch = Batch(batchsize=1, candidates=[cands], turns=[context],
                      candidate_titles=[candidate_titles(pool, cands)], **fields)
        if self.use_cuda:
            batch = batch.to("cuda")
        self.model.eval()
        out = self._forward(batch, with_gold=False)
        order = rank_candidates(out)[0].tolist()
        # out.scores follow out.keep (every candidate at inference): key them by candidate
        score_of = dict(zip((out.keep - out.cand_offset[0]).tolist(), out.scores.float().tolist()))
        concepts: List[str] = []
        if self.selector.use_concepts and fields.get("concept_texts") is not None:
            concepts = top_concepts(out.concept_logits.float().cpu(),
                                    fields["concept2example"], fields["concept_texts"])[0]
        return {"sentence": cands[order[0]],
                "scores": {cands[i]: score_of[i] for i in order},
                "top_concepts": concepts}
