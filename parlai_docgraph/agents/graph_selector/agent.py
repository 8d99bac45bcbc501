"""
``-m docgraph/graph_selector``: knowledge selection over document semantic graphs.

:class:`GraphSelectorAgent` is a ParlAI ``TorchRankerAgent`` that ranks the knowledge
sentences of each example (the teacher's ``label_candidates`` with ``--label-type
chosen_sent``) with Li et al.'s (2022) dialog-aware graph selector
(:class:`~parlai_docgraph.models.selector.dialog_aware.DialogAwareSelector`: Eq. 1 context nodes, EGAT
layers, Eq. 4-8; variants ``full|sentence|coref|homogeneous``), Zhang & Tan's (2023)
multi-level GAT (``multilevel``:
:class:`~parlai_docgraph.models.selector.multilevel_selector.MultiLevelSelector`), Li's Graph Paths
baseline (``paths``: :mod:`parlai_docgraph.graphs.paths`) or the plain cross-encoder ranking baseline on
the same encoder (``none``).

Example::

    parlai train_model -m docgraph/graph_selector -t docgraph:sample --label-type chosen_sent \\
        -mf /tmp/sel --graph-variant full --max-train-steps 200
    parlai eval_model -mf /tmp/sel -t docgraph:sample --label-type chosen_sent

Data flow (:mod:`.batching`): the knowledge pool comes from the message (:mod:`.messages`: the
docgraph teachers' ``knowledge_passages`` or ParlAI's WoW ``knowledge`` lines), chosen per
``--background`` (:mod:`parlai_docgraph.graphs.background`); candidates map to its sentence nodes; the
pool's graph is built (or loaded from the
:class:`~parlai_docgraph.graphs.store.GraphStore` under ``<datapath>/docgraph_cache/graphs``,
where ``build_graphs`` writes) and embedded once by a frozen copy of the encoder (Li 2.1),
then memoised; everything the model reads travels as flat tensor fields of the ParlAI
``Batch``, so ``Batch.to(device)`` moves it. Candidate order is shuffled in training
(ParlAI#1570). The eval reply carries the candidates sorted by score in ``text_candidates``
(ParlAI's hits@k, WoW's ``title_r@1``), their scores in ``candidate_scores``, their indices
among the message's candidates in ``candidate_order``, and the five
best-scored concept (``multilevel``: word) texts of the example's graph in
``top_concepts``; :meth:`GraphSelectorAgent.select` ranks without a teacher.

Metrics (per example, ParlAI ``AverageMetric``): ``know_acc`` (P@1), ``know_mrr``,
``know_map`` over all candidates at evaluation, and ``know_{acc,mrr,map}_multi`` where a
message has ``multi_checked_sentences`` (Holl-E ``:multi``; relevant = any gold);
``concept_mrr`` / ``concept_map`` (Li variants with concepts) over the concept nodes of
examples whose gold sentence has concepts; ``know_loss`` (Eq. 6), ``concept_loss`` (Eq. 7)
and ``loss`` (Eq. 8; ``multilevel``: ``word_loss``, Zhang & Tan Eq. 8, and Eq. 9) in
training and evaluation. ``multilevel`` records no concept metrics: Zhang & Tan's Table 2
reports accuracy only, and its word labels (linked to the gold segment) are not Li's
concept labels.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any, Dict, List, Optional

import torch
from parlai.core.metrics import AverageMetric
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.core.torch_agent import Output
from parlai.core.torch_ranker_agent import TorchRankerAgent

from parlai_docgraph.agents.base import (
    FullyQualifiedOptMixin, WeightsOnlyLoadMixin, fill_saved_opt, qualified_name,
)
from parlai_docgraph.agents.graph_selector.args import SAVED_BEFORE, add_selector_args
from parlai_docgraph.agents.graph_selector.batching import BatchingMixin
from parlai_docgraph.agents.graph_selector.dictionary import (
    OLD_PATHS as OLD_DICT_PATHS, GraphSelectorDictionaryAgent,
)
from parlai_docgraph.agents.graph_selector.evaluation import (
    concept_metrics, ranking_replies, top_concepts,
)
from parlai_docgraph.agents.graph_selector.optim import parameter_groups
from parlai_docgraph.agents.graph_selector.select import SelectMixin
from parlai_docgraph.graphs.background import EpisodeBackground
from parlai_docgraph.graphs.store import default_store_root
from parlai_docgraph.graphs.config import GraphConfig, GraphVariant
from parlai_docgraph.graphs.embed import FrozenSentenceVectors
from parlai_docgraph.models.encoders import load_encoder, own_text_types, resolve_pooling
from parlai_docgraph.models.selector.build import build_selector
from parlai_docgraph.models.selector.common import ranking_loss
from parlai_docgraph.models.selector.inputs import add_format_tokens
from parlai_docgraph.graphs.knowledge_lines import named_documents
from parlai_docgraph.models.selector.prior import SimilarityPrior, last_turn
from parlai_docgraph.models.selector.provider import GraphProvider


class GraphSelectorAgent(WeightsOnlyLoadMixin, FullyQualifiedOptMixin, SelectMixin, BatchingMixin,
                         TorchRankerAgent):
    """
    Ranks knowledge sentences with an edge-aware graph attention network over the
    dialog-aware document graph (Li et al., 2022) and its baselines; see the module
    docstring for options, data flow and metrics.
    """

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        add_selector_args(parser)
        parser.set_defaults(
            # the dialogue context is the teachers' turns: a knowledge line (our label or
            # prediction) must not enter the history as if it had been said
            use_reply="none",
            learningrate=3e-5, batchsize=16, optimizer="adamw", candidates="inline",
            eval_candidates="inline", validation_metric="know_acc",
            validation_metric_mode="max", dict_class=(
                f"{GraphSelectorDictionaryAgent.__module__}:"
                f"{GraphSelectorDictionaryAgent.__name__}"),
        )
        if partial_opt is not None and partial_opt.get("interactive_mode"):
            # interactive and self_chat talk to one partner at a time (ParlAI's default
            # batch size; self_chat refuses any other)
            parser.set_defaults(batchsize=1)
        return parser

    @classmethod
    def upgrade_opt(cls, opt_from_disk: Opt) -> Opt:
        """Models saved before an option existed keep what they did (:data:`.args.SAVED_BEFORE`)."""
        opt_from_disk = fill_saved_opt(super().upgrade_opt(opt_from_disk), add_selector_args,
                                       SAVED_BEFORE)
        if opt_from_disk.get("dict_class") in OLD_DICT_PATHS:  # the class has moved
            opt_from_disk["dict_class"] = qualified_name(GraphSelectorDictionaryAgent)
        return opt_from_disk

    @staticmethod
    def dictionary_class():
        return GraphSelectorDictionaryAgent

    def __init__(self, opt: Opt, shared=None) -> None:
        GraphConfig.from_opt(opt)  # ValueError naming a bad graph option, before any work
        for key in ("candidates", "eval_candidates"):
            if opt.get(key, "inline") != "inline":
                raise ValueError(
                    f"GraphSelectorAgent ranks the teacher's knowledge candidates: "
                    f"--{key.replace('_', '-')} must be inline, got {opt[key]!r}")
        if shared is not None:
            self.tokenizer = shared["hf_tokenizer"]
            self.graphs = shared["graph_provider"]
            self.priors = shared["similarity_priors"]
        self._rng = random.Random(0)  # candidate shuffling: reproducible runs
        # negative sampling (Eq. 6): a CPU generator, whatever device the model is on
        self._gen = torch.Generator().manual_seed(1234)
        # per agent copy: each batch row is its own episode stream
        self.background = EpisodeBackground(opt["background"])
        self._episode_over = False
        super().__init__(opt, shared)

    # ------------------------------------------------------------------ model
    def build_model(self):
        """The selector of the options; with ``--seed`` (train_model's) its initial weights
        are drawn from that seed. ParlAI's ``train_model`` seeds its generators only after it
        has built the agent, so without this every run of one command would start from new
        weights (on small training sets that draw moves the 1-epoch figure more
        than most options do). The draw uses a forked generator: the caller's stream is left
        as it was."""
        seed = self.opt.get("seed")
        if seed is None:
            return self._build_model()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return self._build_model()

    def _build_model(self):
        opt = self.opt
        encoder, self.tokenizer = load_encoder(opt["encoder_model"])
        add_format_tokens(encoder, self.tokenizer, opt["input_format"])
        node_encoder = None
        config = GraphConfig.from_opt(opt)
        if not config.variant.text_only:
            node_encoder = self._frozen_encoder()  # frozen node features (Li 2.1)
        pooling = resolve_pooling(opt)
        store = None
        if opt["graph_cache"] == "store":
            store = str(default_store_root(opt["datapath"]))
        embed_cache = None
        if node_encoder is not None and opt["embed_cache"]:
            embed_cache = str(default_store_root(opt["datapath"]).parent / "embeddings")
        self.graphs = GraphProvider(config, node_encoder, self.tokenizer, store,
                                    memo_size=opt["graph_memo_size"],
                                    embed_cache=embed_cache, pooling=pooling,
                                    own_text=own_text_types(opt))
        model = build_selector(config, encoder, opt, pooling, self._uses_relevance())
        self.priors = self._build_prior(encoder, node_encoder)
        return model

    def _uses_relevance(self) -> bool:
        """``--node-relevance`` for a variant with node features (not ``paths``/``none``)."""
        return (bool(self.opt["node_relevance"])
                and not GraphVariant(self.opt["graph_variant"]).text_only)

    def _frozen_encoder(self):
        """A separate, untrained copy of ``--encoder-model`` on the model's device, not saved
        with the model (rebuilt from the option): node features and the frozen similarity terms."""
        frozen, _ = load_encoder(self.opt["encoder_model"])
        frozen.requires_grad_(False).eval()
        return frozen.cuda() if self.use_cuda else frozen

    def _build_prior(self, encoder, node_encoder) -> List[SimilarityPrior]:
        """The similarity terms (prior.py): ``--similarity-prior`` over the shared
        (fine-tuned) or the frozen encoder, ``--zero-shot-prior`` over the frozen one."""
        opt = self.opt
        shared = opt["similarity_prior_encoder"] == "shared"
        frozen = node_encoder  # text-only variants load none: one copy for both terms then
        if frozen is None and (opt["zero_shot_prior"] or (opt["similarity_prior"] and not shared)):
            frozen = self._frozen_encoder()
        # weight per encoder: two terms over the one frozen encoder are one term, computed once
        weights: Dict[Any, float] = {}
        if opt["similarity_prior"]:
            weights[encoder if shared else frozen] = opt["similarity_prior"]
        if opt["zero_shot_prior"]:
            weights[frozen] = weights.get(frozen, 0.0) + opt["zero_shot_prior"]
        # the frozen encoder's embeddings are memoised, in the graph provider's memo when
        # the term's encoder is the node encoder (node relevance embeds the same turns)
        memo = {node_encoder: self.graphs.sentence_vectors} if node_encoder is not None else {}
        if frozen is not None and frozen not in memo:
            memo[frozen] = FrozenSentenceVectors(frozen, self.tokenizer)
        return [SimilarityPrior(e, self.tokenizer, w, memo.get(e)) for e, w in weights.items()]

    def init_optim(self, params, optim_states=None, saved_optim_type=None,
                   is_finetune: bool = False) -> bool:
        """ParlAI's optimizer over two parameter groups (:mod:`.optim`)."""
        return super().init_optim(parameter_groups(self.model, self.opt), optim_states,
                                  saved_optim_type, is_finetune=is_finetune)

    def build_criterion(self):
        return torch.nn.CrossEntropyLoss(reduction="none")  # unused: the model has Eq. 8

    def share(self) -> Dict[str, Any]:
        shared = super().share()
        shared["hf_tokenizer"] = self.tokenizer
        shared["graph_provider"] = self.graphs
        shared["similarity_priors"] = self.priors
        return shared

    @property
    def selector(self):
        """The selector module, unwrapped from DDP / DataParallel."""
        return getattr(self.model, "module", self.model)

    # ------------------------------------------------------------------ forward
    def _forward(self, batch, with_gold: bool):
        """The model's output with the similarity terms (and, at inference, the
        ``--named-document-boost``) added to its scores."""
        out = self._add_prior(batch, self._model_forward(batch, with_gold))
        boost = self.opt.get("named_document_boost") or 0.0
        if not boost or batch.get("candidate_titles") is None:
            return out
        named = [flag for turn, titles in zip(batch.turns, batch.candidate_titles)
                 for flag in named_documents(last_turn(turn), titles)]
        extra = torch.tensor([boost * named[i] for i in out.keep.tolist()],
                             device=out.scores.device, dtype=out.scores.dtype)
        return dataclasses.replace(out, scores=out.scores + extra)

    def _model_forward(self, batch, with_gold: bool):
        """The model's own output (Eq. 4 logits, no similarity terms)."""
        context = {"input_ids": batch.cand_input_ids,
                   "attention_mask": batch.cand_attention_mask}
        if batch.get("cand_token_type_ids") is not None:
            context["token_type_ids"] = batch.cand_token_type_ids
        device = batch.cand_input_ids.device
        uses_graph = batch.get("graph_x") is not None
        empty = torch.zeros(0, dtype=torch.long, device=device)
        x = batch.graph_x if uses_graph else torch.zeros(0, 1, device=device)
        if uses_graph and self.fp16:
            x = x.half()
        out = self.model(
            x=x,
            edge_index=batch.graph_edge_index if uses_graph else empty.view(2, 0),
            node_type=batch.graph_node_type if uses_graph else empty,
            edge_type=batch.graph_edge_type if uses_graph else empty,
            cand_node=batch.cand_node, cand2example=batch.cand2example,
            context=context, num_examples=batch.batchsize,
            concept_index=batch.concept_index if uses_graph else empty,
            gold=batch.gold if with_gold else None,
            generator=self._gen,
            relevance=batch.get("graph_relevance"),
            **{arg: batch.get(key) for arg, key in self.selector.batch_inputs.items()},
        )
        return out

    def _add_prior(self, batch, out):
        """A copy of ``out`` with the similarity terms (``--similarity-prior``,
        ``--zero-shot-prior``) added to its scores (``out`` itself keeps the model's own)."""
        if not self.priors or batch.get("candidates") is None:
            return out
        scores = out.scores
        for term in self.priors:
            prior = term(batch.turns, batch.candidates, out.keep)
            scores = scores + prior.to(scores.device, scores.dtype)
        return dataclasses.replace(out, scores=scores)

    def set_interactive_mode(self, mode, shared=False):
        # the message's own knowledge candidates also in a chat: ParlAI's default ("fixed",
        # built by running the task) made self_chat -t cmu_dog of a selector alone fail
        self.opt["interactive_candidates"] = "inline"
        super().set_interactive_mode(mode, shared)

    def score_candidates(self, batch, cand_vecs=None, cand_encs=None):
        """
        ``[B, max candidates]`` scores of every candidate of ``batch`` (in
        ``batch.candidates`` order; ``-inf`` pads), the ``TorchRankerAgent`` contract.
        ``train_step``/``eval_step`` call the model directly (they need its concept logits).
        """
        out = self._forward(batch, with_gold=False)
        counts = torch.bincount(out.cand2example, minlength=batch.batchsize)
        scores = out.scores.new_full((batch.batchsize, int(counts.max())), float("-inf"))
        col = torch.arange(out.keep.numel(), device=out.keep.device) - out.cand_offset[
            out.cand2example]
        scores[out.cand2example, col] = out.scores
        return scores

    def _loss(self, batch, out):
        return self.selector.batch_loss(out, batch)

    def _record_losses(self, batch, out, parts) -> None:
        from parlai_docgraph.models.selector.common import segment_log_softmax

        logp = segment_log_softmax(out.scores.float(), out.cand2example, out.num_examples)
        per_example = (-logp[out.gold]).detach().cpu().tolist()
        self.record_local_metric("know_loss", AverageMetric.many(per_example))
        loss_n = float(parts["loss_n"].detach())
        aux = parts.get("loss_n_examples")  # Li Eq. 7 per example (the per-graph mean)
        aux = aux.cpu().tolist() if aux is not None else [loss_n] * batch.batchsize
        combine = self.selector.combine
        self.record_local_metric(
            "loss", AverageMetric.many([combine(v, n) for v, n in zip(per_example, aux)]))
        if self.selector.use_concepts:
            self.record_local_metric(self.selector.aux_loss_name, AverageMetric.many(aux))

    def train_step(self, batch):
        if batch.batchsize == 0 or batch.get("cand_input_ids") is None:
            return Output()
        self.model.train()
        self.zero_grad()
        own = self._model_forward(batch, with_gold=True)
        out = self._add_prior(batch, own)
        loss, parts = self._loss(batch, out)
        self._record_losses(batch, out, parts)
        if self.priors and self.opt["own_loss_weight"]:
            own_loss = ranking_loss(own.scores, own.cand2example, own.num_examples, own.gold)
            self.record_local_metric("own_loss", AverageMetric.many(
                [float(own_loss.detach())] * batch.batchsize))
            loss = loss + self.opt["own_loss_weight"] * own_loss
        self.backward(loss)
        self.update_params()
        return Output()

    def eval_step(self, batch):
        if batch.batchsize == 0 or batch.get("cand_input_ids") is None:
            return None
        self.model.eval()
        has_gold = bool((batch.gold >= 0).all())  # the loss needs every example's gold
        out = self._forward(batch, with_gold=has_gold)
        if has_gold:
            _, parts = self._loss(batch, out)
            self._record_losses(batch, out, parts)
        gold = batch.gold.cpu()
        r = ranking_replies(out.scores.float().cpu(), out.cand2example.cpu(), batch.candidates,
                            gold, batch.get("multi_relevant") or [None] * batch.batchsize)
        if any(int(g) > -2 for g in gold):
            for key in ("know_acc", "know_mrr", "know_map"):
                self.record_local_metric(key, r[key])
        if any(m is not None for m in batch.get("multi_relevant") or []):
            for key in ("know_acc", "know_mrr", "know_map"):
                self.record_local_metric(f"{key}_multi", r[f"{key}_multi"])
        concepts = [[] for _ in range(batch.batchsize)]
        if self.selector.use_concepts and batch.get("concept_texts") is not None:
            logits, c2e = out.concept_logits.float().cpu(), batch.concept2example.cpu()
            concepts = top_concepts(logits, c2e, batch.concept_texts)
            if self.selector.concept_metrics:
                found = concept_metrics(logits, batch.concept_label.cpu(), c2e, batch.batchsize)
                for name, values in (found or {}).items():
                    self.record_local_metric(name, values)
        return Output(r["preds"], r["cands"], candidate_scores=r["scores"],
                      candidate_order=r["order"], top_concepts=concepts,
                      selected_candidate=r["chosen"])
