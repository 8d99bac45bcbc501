"""
``-m docgraph/gsr``: DialogGSR, generative subgraph retrieval (Park et al.).

One Hugging Face encoder-decoder (``--gsr-model``: ``t5-small`` as in the paper, ``tiny``
offline, or a local directory) trained in stages (``--gsr-stage``):

* ``pretrain`` -- KG reconstruction (Eq. 8): a sampled candidate path with one entity or
  relation masked is reconstructed; only the structural special-token embeddings train.
* ``retrieve`` -- generative retrieval (Eq. 9): the linearized gold path given the
  dialogue; evaluation retrieves with beam ``--gsr-num-beams`` (5) under
  ``--gsr-constraint`` (Eq. 3-6) over the turn's candidate trie, iteratively
  (``--gsr-retrieval-steps``, Fig. 1), and reports ``path@1``, ``path@3``, ``path_valid``.
* ``respond`` -- response generation from ``[z_G; x]`` (Eq. 7, 10); trained on the gold
  paths or, with ``--gsr-train-knowledge retrieved`` (Park et al. 3.4: Eq. 10 conditions
  on the subgraph retrieved by GSR), on the paths the current model retrieves (no
  gradient through retrieval); evaluated with the retrieved (default) or gold subgraph.
* ``all`` -- retrieval and response losses together (after ``--gsr-pretrain-steps``
  reconstruction-only updates), evaluation retrieves then responds.

A decoder-only LM works too (``CausalGSRModel``); an instruction-tuned one with a chat
template (e.g. ``smollm2-135m-instruct``) gets its prompts framed as one user turn
(``--gsr-chat-template auto``, :func:`~.inputs.chat_frame`).

Stages chain with ``--init-model``; Park et al.'s multi-stage schedule (3.4) is
``pretrain``, then ``retrieve``, then ``respond`` with ``--gsr-retriever-model-file`` naming
the retrieve-stage model, which then retrieves for the responses, frozen (:mod:`.retriever`).
Messages need the per-turn candidates of the
``docgraph:opendialkg`` / ``sample_kg`` / ``komodis`` teachers (``kg_candidates``...);
without them (``interactive``) candidates are computed from the history and
``--gsr-kg-file`` (an OpenDialKG-format triples file). Saving writes ``<model_file>.hf/``
(config + tokenizer with the added tokens) so ``-mf`` reloads offline.
"""

from __future__ import annotations

import random
from typing import Dict, List, Optional

import torch

from parlai.core.metrics import AverageMetric
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.core.torch_generator_agent import PPLMetric, TorchGeneratorAgent
from parlai.utils import logging

from parlai_docgraph.agents.base import FullyQualifiedOptMixin, WeightsOnlyLoadMixin, fill_saved_opt
from parlai_docgraph.agents.gpt2_responder.dictionary import HF_SUFFIX, ResponderDictionaryAgent, saved_hf_dir
from parlai_docgraph.agents.gsr.args import (
    DECODING_KEY, DECODING_VERSION, SAVED_BEFORE, add_gsr_args, upgrade_decoding,
)
from parlai_docgraph.agents.gsr.evaluation import GSREvalMixin
from parlai_docgraph.models.gsr.inputs import GSRInputs, make_linearizer
from parlai_docgraph.agents.lm_adapters import adapt_lm, lm_dtype
from parlai_docgraph.models.responder import chat


def structural_tokens(opt: Opt) -> List[str]:
    """The Eq. 2 special tokens the tokenizer must hold for ``opt``."""
    from parlai_docgraph.kg.linearize import Linearizer

    return Linearizer(int(opt["slot_tokens"]), int(opt["gsr_hops"])).special_tokens()


class GSRDictionaryAgent(ResponderDictionaryAgent):
    """ParlAI dictionary over the ``--gsr-model`` tokenizer plus the structural tokens."""

    def __init__(self, opt: Opt, shared=None) -> None:
        if not shared:
            from parlai_docgraph.models.gsr.model import load_gsr_tokenizer

            source = saved_hf_dir(opt) or opt["gsr_model"]
            shared = {"hf_tokenizer": load_gsr_tokenizer(source, opt.get("datapath"), structural_tokens(opt))}
        super().__init__(opt, shared)


class GSRAgent(GSREvalMixin, WeightsOnlyLoadMixin, FullyQualifiedOptMixin, TorchGeneratorAgent):
    """Retrieves KG paths by constrained generation, then responds from them."""

    @classmethod
    def dictionary_class(cls):
        return GSRDictionaryAgent

    @classmethod
    def add_cmdline_args(cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        add_gsr_args(parser)
        return parser

    @classmethod
    def upgrade_opt(cls, opt_from_disk: Opt) -> Opt:
        """Models saved before an option existed keep what they did then (:data:`.args.SAVED_BEFORE`)."""
        opt = fill_saved_opt(super().upgrade_opt(opt_from_disk), add_gsr_args, SAVED_BEFORE)
        return upgrade_decoding(opt)

    def __init__(self, opt: Opt, shared=None) -> None:
        opt = Opt(opt)
        opt.setdefault(DECODING_KEY, DECODING_VERSION)  # saved with the model
        super().__init__(opt, shared)
        o = self.opt
        if shared is not None:
            self.retriever = shared.get("gsr_retriever")
        elif o.get("gsr_retriever_model_file"):
            from parlai_docgraph.agents.gsr.retriever import load_retriever

            self.retriever = load_retriever(o, self.dict.hf_tokenizer)
        else:
            self.retriever = None
        self.stage = o.get("gsr_stage", "all")
        self.linearizer = make_linearizer(
            bool(o.get("use_special_tokens", True)), int(o.get("slot_tokens", 2)), int(o.get("gsr_hops", 2))
        )
        self.inputs = GSRInputs(
            self.dict.hf_tokenizer, self.linearizer,
            int(o.get("gsr_history_truncate", 128)), int(o.get("gsr_knowledge_truncate", 128)),
            chat=self.uses_chat_template(),
        )
        self._frozen = False
        self._saved_wd: Dict[int, float] = {}
        if not bool(o.get("use_special_tokens", True)) and self.stage == "pretrain":
            logging.warning("--gsr-stage pretrain with --use-special-tokens false trains nothing")

    def uses_chat_template(self) -> bool:
        """``--gsr-chat-template`` resolved: a causal LM whose tokenizer has a template."""
        from parlai_docgraph.models.gsr.model import is_causal

        setting = self.opt["gsr_chat_template"]
        causal = is_causal(self.gsr().lm.config)
        if setting == "true" and not causal:
            raise ValueError("--gsr-chat-template true needs a decoder-only --gsr-model")
        return causal and chat.use_template(setting, self.dict.hf_tokenizer)

    # ------------------------------------------------------------------ model
    def build_model(self):
        from parlai_docgraph.models.gsr.model import load_lm
        from parlai_docgraph.models.gsr.build import build_gsr_model

        saved = saved_hf_dir(self.opt)
        lm = load_lm(
            saved or self.opt["gsr_model"], self.opt.get("datapath"),
            seed=self.opt["gsr_seed"], pretrained=saved is None, dtype=lm_dtype(self.opt),
        )
        model = build_gsr_model(lm, self.dict.hf_tokenizer, structural_tokens(self.opt))
        # LoRA: the structural tokens (and a causal LM's mask) keep trainable rows
        model.lm = adapt_lm(model.lm, self.opt, model.special_ids)
        return model

    def gsr(self):
        return getattr(self.model, "module", self.model)

    def retrieval_agent(self):
        """The agent whose :meth:`retrieve` gives the subgraphs: the frozen
        ``--gsr-retriever-model-file`` model, or this one (:mod:`.retriever`)."""
        return self.retriever if self.retriever is not None else self

    def share(self):
        shared = super().share()
        shared["gsr_retriever"] = self.retriever
        return shared

    def save(self, path: Optional[str] = None) -> None:
        super().save(path)
        path = self.opt.get("model_file") if path is None else path
        if path and getattr(self, "model", None) is not None:
            self.gsr().lm.config.save_pretrained(path + HF_SUFFIX)
            self.dict.hf_tokenizer.save_pretrained(path + HF_SUFFIX)

    # ------------------------------------------------------------------ vectorising
    def _set_text_vec(self, obs, history, truncate):
        if "text" not in obs:
            return obs
        turns = list(history.history_strings) if history is not None else []
        if not turns:
            turns = [obs.get("text") or ""]
        context = self.inputs.context(" ".join(t for t in turns if t))
        obs.force_set("gsr_history", turns)
        obs.force_set("gsr_context", context)
        obs.force_set("text_vec", torch.LongTensor(context or [self.inputs.eos]))
        return obs

    def _set_label_vec(self, obs, add_start, add_end, truncate):
        super()._set_label_vec(obs, False, True, truncate)
        return obs

    def batchify(self, obs_batch, sort=False):
        batch = super().batchify(obs_batch, sort=sort)
        if batch.batchsize == 0 or batch.valid_indices is None:
            return batch
        exs = [obs_batch[i] for i in batch.valid_indices]
        batch["gsr"] = [self.example_info(ex) for ex in exs]
        return batch

    def example_info(self, ex) -> dict:
        """Context ids, candidate and gold paths, KG handle and response target of one message."""
        from parlai_docgraph.kg import fields as kg_fields

        if "kg_candidates" not in ex:
            kg_file = ex.get("kg_file") or self.opt["gsr_kg_file"]
            if not kg_file:
                raise ValueError(
                    "DialogGSR needs per-turn candidates: use a docgraph KG teacher "
                    "(docgraph:opendialkg, docgraph:sample_kg, docgraph:komodis) or pass "
                    "--gsr-kg-file <triples file>"
                )
            kg, linker = kg_fields.load_kg(kg_file)
            ex = dict(ex)
            ex.update(kg_fields.candidate_fields(kg, linker, ex["gsr_history"], hops=self.linearizer.max_hops))
            ex["kg_file"] = kg_file
        label = ex.get("labels_vec", ex.get("eval_labels_vec"))
        return {
            "context": list(ex["gsr_context"]),
            "candidates": [kg_fields.json_to_path(p) for p in ex.get("kg_candidates") or []],
            "gold": [kg_fields.json_to_path(p) for p in ex.get("kg_gold_paths") or []],
            "mentioned": list(ex.get("kg_mentioned") or []),
            "kg_file": ex.get("kg_file"),
            "kg_triples": ex.get("kg_triples"),
            "response": [int(i) for i in label] if label is not None else None,
            "labels": list(ex.get("labels") or ex.get("eval_labels") or []),
        }

    # ------------------------------------------------------------------ training
    def pretraining(self) -> bool:
        """Whether this update is KG reconstruction only."""
        if self.stage == "pretrain":
            return True
        return self.is_training and self._number_training_updates < int(self.opt["gsr_pretrain_steps"])

    def _set_phase(self, pretrain: bool) -> None:
        """Freeze all but the special tokens (and zero weight decay) while pretraining."""
        if pretrain == self._frozen:
            return
        groups = self.optimizer.param_groups if getattr(self, "optimizer", None) else []
        if pretrain:
            self.gsr().train_only_rows()
            for i, g in enumerate(groups):
                self._saved_wd[i] = g.get("weight_decay", 0.0)
                g["weight_decay"] = 0.0
        else:
            self.gsr().release_rows()
            for i, g in enumerate(groups):
                g["weight_decay"] = self._saved_wd.get(i, g.get("weight_decay", 0.0))
        self._frozen = pretrain

    def train_step(self, batch):
        self._set_phase(self.pretraining())
        return super().train_step(batch)

    def _rng(self, i: int) -> random.Random:
        return random.Random(f"{self.opt['gsr_seed']}-{self._number_training_updates}-{i}")

    def stage_pairs(self, batch) -> Dict[str, List[tuple]]:
        """``{objective: [(example index, source ids, target ids), ...]}`` for this update."""
        out: Dict[str, List[tuple]] = {"recon": [], "ret": [], "gen": []}
        steps = max(int(self.opt["gsr_retrieval_steps"]), 1)
        knowledge = None
        if self.stage in ("respond", "all") and not self.pretraining():
            knowledge = self.response_knowledge(batch["gsr"], steps)
        for i, info in enumerate(batch["gsr"]):
            if self.pretraining():
                pool = info["candidates"] or info["gold"]
                if pool:
                    rng = self._rng(i)
                    path = pool[rng.randrange(len(pool))]
                    out["recon"].append((i, *self.inputs.reconstruction_pair(path, rng)))
                continue
            if self.stage in ("retrieve", "all"):
                for src, tgt in self.inputs.retrieval_pairs(info["context"], info["gold"], steps):
                    out["ret"].append((i, src, tgt))
            if knowledge is not None and info["response"] is not None:
                out["gen"].append((i, self.inputs.respond_source(info["context"], knowledge[i]),
                                   info["response"]))
        return out

    def response_knowledge(self, infos: List[dict], steps: int) -> List[list]:
        """
        The paths each example's response loss is conditioned on: its gold paths (at most
        ``steps``, within ``--gsr-hops``), or in training with ``--gsr-train-knowledge
        retrieved`` the subgraph the retriever (:meth:`retrieval_agent`) returns, decoded
        without gradient in eval mode (dropout off) as at evaluation. Evaluation losses (``gen_loss``, ``ppl``) always
        use the gold paths.
        """
        if self.is_training and self.opt["gsr_train_knowledge"] == "retrieved":
            from parlai_docgraph.agents.gsr.evaluation import example_kg

            was_training = self.model.training
            self.model.eval()
            try:
                with torch.no_grad():
                    _, got = self.retrieval_agent().retrieve(infos, [example_kg(i) for i in infos])
            finally:
                self.model.train(was_training)
            return got
        return [[p for p in info["gold"] if len(p) <= self.linearizer.max_hops][:steps]
                for info in infos]

    def compute_loss(self, batch, return_output=False):
        pairs = self.stage_pairs(batch)
        bsz = len(batch["gsr"])
        model = self.gsr()
        total, count = None, 0
        for name, items in pairs.items():
            if not items:
                continue
            idx = [i for i, _, _ in items]
            loss, labels, notnull, preds = model.token_losses([s for _, s, _ in items], [t for _, _, t in items])
            flat = loss.detach()
            num, den, hit = [0.0] * bsz, [0] * bsz, [0] * bsz
            for row, i in enumerate(idx):
                nn = notnull[row]
                num[i] += float(flat[row][nn].sum())
                den[i] += int(nn.sum())
                hit[i] += int(((preds[row] == labels[row]) & nn).sum())
            self.record_local_metric(f"{name}_loss", [AverageMetric(n, d) for n, d in zip(num, den)])
            if name == "gen":
                self.record_local_metric("ppl", [PPLMetric(n, d) for n, d in zip(num, den)])
                self.record_local_metric("token_acc", [AverageMetric(h, d) for h, d in zip(hit, den)])
            total = loss.sum() if total is None else total + loss.sum()
            count += int(notnull.sum())
        if total is None:  # nothing to learn from in this batch (e.g. no gold paths)
            total = sum(p.sum() for p in model.parameters() if p.requires_grad) * 0.0
        loss = total / max(count, 1)
        self.record_local_metric("loss", [AverageMetric(float(loss.detach()))] * bsz)
        return (loss, None) if return_output else loss


#: the class name ParlAI derives from ``docgraph/gsr``
GsrAgent = GSRAgent
