"""
:class:`BatchingMixin`: how :class:`~.agent.GraphSelectorAgent` turns ParlAI messages into a
``Batch``: the ``--background`` pool of each message (observe), the dialogue context cut to
``--context-turns``, candidates (the gold added and shuffled in training) and the flat tensor
fields of :func:`~parlai_docgraph.models.selector.collate.collate_examples`.
"""

from __future__ import annotations

from typing import Any, Dict, List

from parlai.core.message import Message
from parlai.core.torch_agent import Batch

from parlai_docgraph.agents.graph_selector.messages import (
    check_has_candidates, message_passages, multi_reference_gold, passages_or_empty, recent_turns,
)
from parlai_docgraph.graphs.embed import encoder_limit
from parlai_docgraph.graphs.knowledge_lines import candidate_titles
from parlai_docgraph.models.selector.collate import collate_examples, shuffled_order
from parlai_docgraph.models.selector.prior import last_turn


class BatchingMixin:
    """Message -> ``Batch`` methods of the graph selector (before its ``TorchRankerAgent``
    base in the class bases)."""

    def observe(self, observation: Message) -> Message:
        """TorchAgent's observe, plus the message's ``--background`` pool (per episode)."""
        if self._episode_over:
            self.background.reset()
        check_has_candidates(observation)
        obs = super().observe(observation)
        self._episode_over = bool(obs.get("episode_done"))
        if (self.graphs.uses_graph and not obs.is_padding() and "text" in obs
                and obs.get("label_candidates")):
            before = self.background.pool
            pool = message_passages(obs)
            # a graph the teacher attached (--attach-graphs) stands for this pool's when its
            # key is the provider's own (same graph options): no store read, no build
            self.graphs.offer(pool, obs.get("knowledge_graph_key"), obs.get("knowledge_graph"))
            obs["background_passages"] = self.background.observe(
                pool, obs.get("first_turn_passages"))
            grew = before is not None and self.background.previous == before
            obs["background_base"] = before if grew else None
        return obs

    def reset(self):
        super().reset()
        self.background.reset()
        self._episode_over = False

    def _set_text_vec(self, obs, history, truncate):
        """Keep the dialogue context string, cut to the last ``--context-turns`` utterances
        whether it comes from the history or from the message (the ``-m docgraph`` pipeline
        hands its own history in ``full_text``, which must be cut the same way); the HF
        tokenizer runs in ``batchify``."""
        if "text" in obs:
            text = obs.get("full_text")
            if text is None:
                text = history.get_history_str()
            obs.force_set("full_text", recent_turns(text if text is not None else obs["text"],
                                                    self.opt["context_turns"]))
        return obs

    def _set_label_vec(self, obs, add_start, add_end, truncate):
        return obs

    def _set_label_cands_vec(self, *args, **kwargs):
        return args[0]

    def is_valid(self, obs) -> bool:
        return (not obs.is_padding() and "text" in obs
                and bool(obs.get("label_candidates")))

    def batchify(self, obs_batch: List[Message], sort: bool = False) -> Batch:
        batch = super().batchify(obs_batch, sort=False)
        if batch.batchsize == 0:
            return batch
        exs = [obs_batch[i] for i in batch.valid_indices.tolist()]
        training = any("labels" in ex for ex in exs)
        passages, bases, cands, gold, contexts, multi = [], [], [], [], [], []
        for ex in exs:
            pool = ex.get("background_passages")
            if pool is None and self.graphs.uses_graph:
                pool = message_passages(ex)
            cs = list(ex["label_candidates"])
            labels = ex.get("labels", ex.get("eval_labels")) or ()
            label = next((lab for lab in labels if lab in cs), None)
            if training and label is None and labels:
                label = labels[0]
                cs.append(label)  # the gold must be rankable; shuffling hides where it went
            if training and self.opt["shuffle_candidates"]:
                cs = [cs[i] for i in shuffled_order(len(cs), self._rng)]
            passages.append(pool or [])
            bases.append(ex.get("background_base"))
            cands.append(cs)
            # -1: labelled, but the label is not among the candidates; -2: no label
            gold.append(cs.index(label) if label is not None else (-1 if labels else -2))
            contexts.append(ex.get("full_text") or ex.get("text") or "")
            multi.append(None if training or not ex.get("multi_checked_sentences") else
                         multi_reference_gold(ex, cs, pool or passages_or_empty(ex)))
        fields = self._collate(passages, cands, gold, contexts,
                               [ex.get("text") or "" for ex in exs], bases)
        for key, value in fields.items():
            batch[key] = value
        batch["candidates"] = cands
        if self.opt.get("named_document_boost") and not training:
            batch["candidate_titles"] = [
                candidate_titles(pool or passages_or_empty(ex), cs)
                for pool, ex, cs in zip(passages, exs, cands)]
        batch["turns"] = [ex.get("text") or "" for ex in exs]
        batch["multi_relevant"] = multi
        batch["is_training"] = training
        return batch

    def _collate(self, passages, cands, gold, contexts, turns, bases=None) -> Dict[str, Any]:
        """:func:`collate_examples` with this agent's options (``turns``: each example's
        message text, whose last line is the turn node relevance is measured against)."""
        opt = self.opt
        return collate_examples(
            self.graphs, passages, cands, gold, contexts, self.tokenizer, self._pair_limit(),
            bases, opt["path_hops"], opt["path_max_tuples"] or None,
            opt["input_format"],
            questions=[last_turn(t) for t in turns] if self._uses_relevance() else None)

    def _pair_limit(self) -> int:
        """``--pair-truncate``, capped at what the encoder can number (RoBERTa: 512, not 514)."""
        model = getattr(self.model, "module", self.model)
        return encoder_limit(model.context_encoder, self.tokenizer, self.opt["pair_truncate"])
