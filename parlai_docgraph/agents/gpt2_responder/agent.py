"""
``-m docgraph/gpt2_responder``: response generation from selected knowledge (Li et al.
Eq. 9) with any Hugging Face causal LM.

* ``--responder-model``: ``gpt2`` (default; any hub name works the same way), ``tiny``
  (the bundled offline GPT-2 config + byte-level BPE tokenizer trained on the bundled
  sample, weights initialised from ``--responder-seed``), or a local directory
  (``config.json`` + tokenizer files, with or without weights). ``<datapath>/hf/<name>/``
  is used when it holds a ``config.json`` (ParlAI PR #3027's layout). Offline, a hub name
  that is not in the HF cache fails with a message saying what to install and where.
* Input: ``knowledge <eos> context <eos>`` then the reply and ``<eos>`` (with a chat
  template, ``--chat-template``, the layout of
  :mod:`parlai_docgraph.models.responder.chat`); knowledge is the message's gold
  ``title`` + ``checked_sentence`` (the WoW teachers' fields; generation in the pipeline
  reads its *selected* sentence instead, see "Selected knowledge" below), the context is
  the dialogue history, truncated from the left to its latest
  ``--responder-context-truncate`` (128) tokens. Everything, reply included, fits in
  ``--responder-max-length`` (286) tokens.
* Loss and ``ppl``: the LM loss over the reply tokens only (teacher forcing with the gold
  knowledge), recorded like ParlAI's generator metrics (``loss``, ``ppl``,
  ``token_acc``, ``token_em``).
* Generation: :meth:`_generate` is overridden to run one Hugging Face ``generate`` call
  (:meth:`parlai_docgraph.models.responder.model.Responder.generate`: left padding and an
  attention mask, each row within ``--responder-max-length``) with the
  ``GenerationConfig`` of ParlAI's own options
  (:func:`parlai_docgraph.models.decoding.generation_config`): ``--inference greedy``
  (default), ``beam`` (``--beam-size``, ``--beam-min-length``, ``--beam-length-penalty``
  as HF's ``length_penalty``, ``--beam-block-ngram`` within the reply), ``topk`` (top-k
  ``--topk`` *then* top-p ``--topp``; the defaults here, 20 and 0.95, are the paper's
  sampler; ``--topp 1`` gives plain top-k), ``nucleus`` (top-p ``--topp`` only). The
  delayed-beam variants fall back to ``beam``.
* ROUGE: every generated reply is scored against its references with
  :func:`parlai_docgraph.text_metrics.rouge` (``rouge-score`` F-measures) and reported as
  ``rouge_1``, ``rouge_2``, ``rouge_L``; with several references (Holl-E's
  ``multi_eval_labels``, or several ``eval_labels``) all three are those of the reference
  with the best ROUGE-1 (torchmetrics' ``accumulate="best"``, as Li et al. report).
* Selected knowledge: a message may carry ``selected_knowledge`` (a
  :class:`~parlai_docgraph.graphs.selection.Selection`, set by the ``-m docgraph`` pipeline
  after its selector ran). Loss and ``ppl`` still use the gold knowledge (teacher forcing);
  generation then reads the *selected* sentence. A message with nothing to score comes
  ``awaiting_selection``: its one prompt is built when the selection is known.
* Streaming: set :attr:`GPT2ResponderAgent.reply_streamer` (a ``transformers`` streamer,
  e.g. :class:`parlai_docgraph.models.responder.streaming.ReplyStreamer`) and the next
  generation for a batch of one hands it each reply token as it is chosen (the web chat
  does this for one turn, then sets it back to None).
* Saving writes ``<model_file>.hf/`` (the LM's ``config.json`` + tokenizer files) beside
  the checkpoint, so ``-mf`` reloads offline without the original source.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

import torch

from parlai.core.metrics import AverageMetric
from parlai.core.torch_agent import Output
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.core.torch_generator_agent import PPLMetric, TorchGeneratorAgent

from parlai_docgraph.models.responder import chat

from parlai_docgraph.agents.article_turns import ArticleTurns
from parlai_docgraph.agents.base import FullyQualifiedOptMixin, WeightsOnlyLoadMixin, fill_saved_opt
from parlai_docgraph.agents.gpt2_responder.args import SAVED_BEFORE, add_responder_args
from parlai_docgraph.agents.lm_adapters import adapt_lm, lm_dtype
from parlai_docgraph.agents.gpt2_responder.dictionary import (
    HF_SUFFIX, ResponderDictionaryAgent, saved_hf_dir,
)
from parlai_docgraph.agents.gpt2_responder.messages import (
    format_knowledge, knowledge_text, reply_references,
)

class _Beams:
    """
    What ParlAI's ``eval_step`` reads from a beam: ``get_rescored_finished()``.
    """

    def __init__(self, finished: List[Tuple[torch.Tensor, torch.Tensor, None]]) -> None:
        self._finished = finished

    def get_rescored_finished(self, n_best=None):
        return self._finished[:n_best] if n_best else self._finished


class GPT2ResponderAgent(WeightsOnlyLoadMixin, FullyQualifiedOptMixin, TorchGeneratorAgent):
    """
    A causal LM that writes the reply from ``[knowledge; context]`` (Li et al. Eq. 9).
    """

    #: a ``transformers`` streamer for the next one-row generation (see the module docstring)
    reply_streamer = None

    @classmethod
    def dictionary_class(cls):
        return ResponderDictionaryAgent

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        add_responder_args(parser)
        parser.set_defaults(topk=20, topp=0.95)
        return parser

    @classmethod
    def upgrade_opt(cls, opt_from_disk: Opt) -> Opt:
        """Model files saved before an option existed keep what they did (:data:`.args.SAVED_BEFORE`)."""
        return fill_saved_opt(super().upgrade_opt(opt_from_disk), add_responder_args,
                              SAVED_BEFORE)

    # ------------------------------------------------------------------ model
    def build_model(self):
        from parlai_docgraph.models.responder.model import Responder, load_causal_lm

        saved = saved_hf_dir(self.opt)
        lm = load_causal_lm(
            saved or self.opt["responder_model"],
            self.opt.get("datapath"),
            seed=self.opt["responder_seed"],
            pretrained=saved is None,
            dtype=lm_dtype(self.opt),
        )
        tok = self.dict.hf_tokenizer
        known = lm.get_input_embeddings().num_embeddings
        if known < len(tok):
            lm.resize_token_embeddings(len(tok))
        # LoRA: tokens the LM did not know keep trainable rows
        lm = adapt_lm(lm, self.opt, range(known, len(tok)))
        return Responder(
            lm,
            eos_id=tok.convert_tokens_to_ids(self.dict.end_token),
            pad_id=self.dict[self.dict.null_token],
            context_truncate=self.opt["responder_context_truncate"],
            knowledge_truncate=self.opt["responder_knowledge_truncate"],
            max_length=self.opt["responder_max_length"],
        )

    def _responder(self):
        model = self.model
        return getattr(model, "module", model)

    def uses_chat_template(self) -> bool:
        """``--chat-template`` resolved against the tokenizer
        (:mod:`parlai_docgraph.models.responder.chat`)."""
        if not hasattr(self, "_chat"):
            self._chat = chat.use_template(self.opt["chat_template"], self.dict.hf_tokenizer)
        return self._chat

    def build_prompt(self, knowledge: str, history_string: str, turns: List[str]) -> List[int]:
        """Prompt ids: through the chat template, or ``knowledge <eos> context <eos>``."""
        responder = self._responder()
        if self.uses_chat_template():
            return chat.chat_prompt(self.dict.hf_tokenizer, knowledge, turns,
                                    responder.context_truncate, responder.knowledge_truncate,
                                    self.opt["chat_prompt"], max_tokens=responder.prompt_limit)
        return responder.build_prompt(self.dict.txt2vec(knowledge), self.dict.txt2vec(history_string))

    def save(self, path: Optional[str] = None) -> None:
        super().save(path)
        path = self.opt.get("model_file") if path is None else path
        if path and getattr(self, "model", None) is not None:
            target = path + HF_SUFFIX
            os.makedirs(target, exist_ok=True)
            self._responder().lm.config.save_pretrained(target)
            self.dict.hf_tokenizer.save_pretrained(target)

    # ------------------------------------------------------------------ vectorising
    def observe(self, observation):
        """TorchAgent's observe; a ParlAI ``-t cmu_dog`` message first gets its pool and
        pseudo label (:mod:`..article_turns`), the knowledge the responder reads."""
        if not hasattr(self, "article_turns"):
            self.article_turns = ArticleTurns()
        return super().observe(self.article_turns.adapt(observation))

    def reset(self):
        super().reset()
        if hasattr(self, "article_turns"):
            self.article_turns.reset()

    def _set_text_vec(self, obs, history, truncate):
        if "text" not in obs:
            return obs
        history_string = history.get_history_str() if history is not None else None
        if history_string is None:
            history_string = obs.get("text") or ""
        context = self.dict.txt2vec(history_string)
        turns = list(history.history_strings) if history is not None and history.history_strings else [history_string]
        responder = self._responder()
        if obs.get("awaiting_selection"):
            # the knowledge is not known yet: the prompt is built once, when it is
            # (_generation_prompt); text_vec holds the context for ParlAI's batch
            prompt = context
        else:
            prompt = self.build_prompt(knowledge_text(obs, self.knowledge_title()),
                                       history_string, turns)
        obs.force_set("full_text", history_string)
        obs.force_set("history_turns", turns)
        obs.force_set("context_original_length", len(context))
        obs.force_set(
            "context_truncate_rate", len(context) > (responder.context_truncate or len(context))
        )
        obs.force_set("text_vec", torch.LongTensor(prompt))
        return obs

    def _set_label_vec(self, obs, add_start, add_end, truncate):
        super()._set_label_vec(obs, False, True, None)  # may return None; obs is updated
        text_vec = obs.get("text_vec")
        if text_vec is None:
            return obs
        budget = self._responder().target_budget(len(text_vec))
        for key in ("labels_vec", "eval_labels_vec"):
            vec = obs.get(key)
            if vec is not None and len(vec) > budget:
                obs.force_set(key, vec[:budget])
        return obs

    def is_valid(self, obs) -> bool:
        """A message without text (e.g. the human's end-of-input act) has nothing to answer."""
        return super().is_valid(obs) and obs.get("text_vec") is not None

    def batchify(self, obs_batch, sort=False):
        """
        ParlAI's batch, plus the unpadded prompts and targets (``responder_prompts``,
        ``responder_targets``): with GPT-2, pad == EOS, so padding cannot be stripped
        from ``text_vec`` / ``label_vec`` afterwards.
        """
        batch = super().batchify(obs_batch, sort=sort)
        if batch.batchsize == 0 or batch.valid_indices is None:
            return batch
        exs = [obs_batch[i] for i in batch.valid_indices]
        batch["responder_prompts"] = [[int(i) for i in ex["text_vec"]] for ex in exs]
        targets = None
        if batch.label_vec is not None:
            field = "labels_vec" if any("labels_vec" in ex for ex in exs) else "eval_labels_vec"
            targets = [[int(i) for i in ex.get(field, [])] for ex in exs]
        batch["responder_targets"] = targets
        batch["responder_gen_prompts"] = [self._generation_prompt(ex) for ex in exs]
        batch["responder_refs"] = [reply_references(ex) for ex in exs]
        # the block only serves generation: training batches skip the tokenising
        batch["responder_blocked"] = (None if batch.is_training
                                      else [self.earlier_reply_block(ex) for ex in exs])
        return batch

    def knowledge_title(self) -> bool:
        """``--knowledge-title prefix``: the knowledge line starts with the passage title."""
        return self.opt.get("knowledge_title", "prefix") == "prefix"

    def _knowledge(self, ex) -> str:
        """The knowledge the reply answers from: the pipeline's
        :class:`~parlai_docgraph.graphs.selection.Selection`, else the message's."""
        selected = ex.get("selected_knowledge")
        if selected is not None:
            return format_knowledge(selected.title, selected.sentence, self.knowledge_title())
        return knowledge_text(ex, self.knowledge_title())

    def earlier_reply_block(self, ex) -> Dict:
        """
        ``--block-earlier-replies``: the n-grams of the history's assistant turns (every
        second turn back from the newest, a user turn) less the knowledge's
        (:func:`~parlai_docgraph.models.responder.earlier_replies.blocked_ngrams`).
        """
        from parlai_docgraph.models.responder.earlier_replies import blocked_ngrams

        n = int(self.opt["block_earlier_replies"])
        turns = list(ex.get("history_turns") or [])
        if n <= 0 or len(turns) < 2:
            return {}
        return blocked_ngrams(self.dict.hf_tokenizer, turns[-2::-2], self._knowledge(ex), n)

    def _generation_prompt(self, ex) -> List[int]:
        """
        The prompt generation reads: the message's ``text_vec`` (its own knowledge), or,
        for a message of the pipeline (``selected_knowledge``, or ``awaiting_selection``
        where its ``text_vec`` holds the context only), the same context with the selected
        sentence, built here and only here.
        """
        if ex.get("selected_knowledge") is None and not ex.get("awaiting_selection"):
            return [int(i) for i in ex["text_vec"]]
        knowledge = self._knowledge(ex)
        history_string = ex.get("full_text") or ex.get("text") or ""
        return self.build_prompt(knowledge, history_string, list(ex.get("history_turns") or [history_string]))

    def _batch_pairs(self, batch) -> Tuple[List[List[int]], Optional[List[List[int]]]]:
        return batch["responder_prompts"], batch.get("responder_targets")

    # ------------------------------------------------------------------ loss
    def compute_loss(self, batch, return_output=False):
        if batch.label_vec is None:
            raise ValueError("Cannot compute loss without a label.")
        prompts, targets = self._batch_pairs(batch)
        loss_per_token, target_ids, notnull, preds = self._responder().token_losses(
            prompts, targets
        )
        self.record_local_metric("loss", AverageMetric.from_mask(loss_per_token, notnull))
        self.record_local_metric("ppl", PPLMetric.from_mask(loss_per_token, notnull))
        correct = (target_ids == preds) & notnull
        self.record_local_metric("token_acc", AverageMetric.from_mask(correct, notnull))
        num_target = notnull.long().sum(dim=-1)
        self.record_local_metric(
            "token_em", AverageMetric.many(correct.long().sum(dim=-1) == num_target)
        )
        loss = loss_per_token.sum() / num_target.sum().clamp(min=1)
        if return_output:
            return loss, (loss_per_token, preds)
        return loss

    # ------------------------------------------------------------------ evaluation
    def eval_step(self, batch):
        """
        ParlAI's evaluation (loss, ``ppl``, generation), plus ROUGE-1/2/L of each generated
        reply: the maximum F-measure over the message's references.
        """
        output = super().eval_step(batch)
        if output is None or not output.text or not batch.get("responder_refs"):
            return output
        self._record_rouge(batch, output)
        return output

    def _record_rouge(self, batch, output: Output) -> None:
        from parlai_docgraph.text_metrics import ROUGE_KEYS, rouge

        values = {name: [] for name in ROUGE_KEYS.values()}
        scored = False
        for refs, text in zip(batch["responder_refs"], output.text):
            scores = rouge(text or "", refs) if refs and text is not None else None
            scored = scored or scores is not None
            for name in values:
                # AverageMetric(0, 0) adds nothing to the mean: no reference to score against
                values[name].append(
                    AverageMetric(scores[name]) if scores else AverageMetric(0, 0))
        if scored:
            for name, vals in values.items():
                self.record_local_metric(name, vals)

    # ------------------------------------------------------------------ generation
    def _generate(self, batch, beam_size, max_ts, prefix_tokens=None):
        if prefix_tokens is not None:
            raise NotImplementedError("prefix tokens are not supported by the responder")
        prompts = batch.get("responder_gen_prompts") or self._batch_pairs(batch)[0]
        from parlai_docgraph.models.decoding import generation_config

        config = generation_config(self.opt, beam_size, max_ts)
        streamer = self.reply_streamer if len(prompts) == 1 else None
        results = self._responder().generate(
            prompts, config, streamer=streamer, earlier=batch.get("responder_blocked"),
            earlier_n=int(self.opt["block_earlier_replies"]))
        beam_preds_scores, beams = [], []
        device = batch.text_vec.device
        for hyps in results:
            finished = [
                (
                    torch.LongTensor(h.tokens + [self.END_IDX]).to(device),
                    torch.tensor(h.rescored),
                    None,
                )
                for h in hyps
            ]
            beam_preds_scores.append(finished[0])
            beams.append(_Beams(finished))
        return beam_preds_scores, beams


#: the class name ParlAI derives from ``docgraph/gpt2_responder``
Gpt2ResponderAgent = GPT2ResponderAgent
