"""
Knowledge-grounded response generation with any Hugging Face causal LM (Li et al. Eq. 9).

No ParlAI here: :class:`Responder` is a ``torch.nn.Module`` over a causal LM
(``AutoModelForCausalLM``) that

* lays the input out as ``knowledge <sep> context <sep>`` (``<sep>`` = the EOS token),
  keeping the first ``knowledge_truncate`` knowledge tokens and the *last*
  ``context_truncate`` (128) context tokens, and the reply follows, ended by EOS;
* pads on the **left**: teacher forcing passes explicit position ids computed from the
  attention mask (``cumsum - 1``, clamped at 0), so a padded row sees the same positions
  as the same row alone (ParlAI PR #3193; microsoft/DialoGPT#20); ``generate`` derives
  the same positions from the mask;
* generates with one Hugging Face ``generate`` call per batch (:meth:`Responder.generate`;
  greedy, beam search or sampling as the :func:`~.decoding.generation_config` of ParlAI's
  options says), never past ``max_length`` (286) tokens *including the input*, each row
  with its own budget (:class:`~.decoding.ReplyBudget`).

Rows never interact, so batched generation equals unbatched generation (up to floating
point summation order, which the tests check token for token).

:func:`load_causal_lm` resolves ``--responder-model`` through the one loader
(:func:`.hub.load_model`): ``tiny`` (the bundled offline config + tokenizer in
``parlai_docgraph/assets/tiny_gpt2``, weights initialised from a seed), a local directory
(with or without weights), or a hub name (from the local cache when offline; a clear
:class:`ResponderUnavailable` otherwise).
"""

from __future__ import annotations

import contextlib
import copy
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from parlai_docgraph import assets
from parlai_docgraph.models import hub

if TYPE_CHECKING:
    from transformers import GenerationConfig
    from transformers.generation.streamers import BaseStreamer

TINY = hub.TINY
TINY_DIR = os.path.join(os.path.dirname(os.path.abspath(assets.__file__)), "tiny_gpt2")
CONTEXT_TRUNCATE = 128
KNOWLEDGE_TRUNCATE = 128
MAX_LENGTH = 286


class ResponderUnavailable(hub.ModelUnavailable):
    """
    The requested responder LM cannot be loaded (typically: a hub name while offline).
    """


OPTION = hub.ModelOption("--responder-model", TINY_DIR, "tokenizer.json, or vocab.json + merges.txt",
                         ResponderUnavailable)


# --------------------------------------------------------------------------- loading


def load_responder_tokenizer(name: str, datapath: Optional[str] = None):
    """The HF tokenizer of ``--responder-model`` (see :func:`.hub.load_tokenizer`)."""
    return hub.load_tokenizer(name, OPTION, datapath)


def load_causal_lm(
    name: str,
    datapath: Optional[str] = None,
    seed: int = 0,
    pretrained: bool = True,
    dtype: Optional[torch.dtype] = None,
) -> nn.Module:
    """The causal LM of ``--responder-model`` (see :func:`.hub.load_model`)."""
    return hub.load_model(name, "causal", OPTION, datapath, pretrained, seed, dtype)


# --------------------------------------------------------------------------- layout


def position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """
    Positions counted over real tokens only: left padding does not shift them.
    """
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def left_pad(seqs: Sequence[Sequence[int]], pad_id: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """
    ``(ids, mask)``, both ``bsz x max_len``, sequences aligned to the right.
    """
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        if len(s):
            ids[i, width - len(s) :] = torch.as_tensor(list(s), dtype=torch.long)
            mask[i, width - len(s) :] = 1
    return ids, mask


@dataclass
class Hypothesis:
    """One generated reply of :meth:`Responder.generate`."""

    tokens: List[int]
    score: float  # sum of log-probabilities of the tokens (and the EOS that ended them)
    rescored: float = 0.0  # beam search: the length-penalised score it was ranked by


class Responder(nn.Module):
    """
    A causal LM that writes the reply from ``[knowledge; context]``.
    """

    def __init__(
        self,
        lm: nn.Module,
        eos_id: int,
        pad_id: Optional[int] = None,
        context_truncate: int = CONTEXT_TRUNCATE,
        knowledge_truncate: int = KNOWLEDGE_TRUNCATE,
        max_length: int = MAX_LENGTH,
    ) -> None:
        super().__init__()
        self.lm = lm
        self.eos_id = int(eos_id)
        self.pad_id = int(eos_id if pad_id is None else pad_id)
        self.sep_id = self.eos_id
        self.context_truncate = context_truncate
        self.knowledge_truncate = knowledge_truncate
        self.max_length = max_length
        n_pos = hub.position_limit(getattr(lm, "config", None))
        if n_pos is not None and n_pos < max_length:
            raise ValueError(f"max_length {max_length} exceeds the LM's {n_pos} positions")
        longest_prompt = (knowledge_truncate or 0) + (context_truncate or 0) + 2
        if context_truncate is None or longest_prompt >= max_length:
            # a longer prompt leaves no reply budget and can run past the position table
            raise ValueError(
                f"knowledge ({knowledge_truncate}) + context ({context_truncate}) truncation "
                f"+ 2 separators must stay below max_length {max_length} (the LM's positions "
                f"cover prompt and reply together)")

    # ------------------------------------------------------------------ layout
    def build_prompt(self, knowledge: Sequence[int], context: Sequence[int]) -> List[int]:
        """
        ``knowledge[:K] <sep> context[-C:] <sep>`` (the latest context tokens are kept).
        """
        knowledge = list(knowledge)[: self.knowledge_truncate]
        context = list(context)
        if self.context_truncate is not None and len(context) > self.context_truncate:
            context = context[len(context) - self.context_truncate :]
        return knowledge + [self.sep_id] + context + [self.sep_id]

    @property
    def prompt_limit(self) -> int:
        """The most tokens of a prompt, ``knowledge_truncate + context_truncate + 2``: the
        plain layout's longest, and the cap a chat-template prompt is fitted to
        (:func:`.chat.chat_prompt`), so every prompt leaves ``max_length - prompt_limit``
        reply tokens."""
        return (self.knowledge_truncate or 0) + (self.context_truncate or 0) + 2

    def target_budget(self, prompt_len: int) -> int:
        """
        How many reply tokens (EOS included) fit in ``max_length`` after the prompt.
        """
        return max(self.max_length - prompt_len, 0)

    def truncate_target(self, prompt: Sequence[int], target: Sequence[int]) -> List[int]:
        return list(target)[: self.target_budget(len(prompt))]

    def _device(self) -> torch.device:
        return next(self.lm.parameters()).device

    # ------------------------------------------------------------------ teacher forcing
    def forward(
        self, prompts: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """
        Teacher forcing over ``prompt + target`` (left padded, explicit positions).

        :return: ``(logits, target_ids, target_mask)``; ``logits`` is ``bsz x T x V`` with
            ``logits[i, j]`` predicting ``targets[i][j]`` (targets aligned left, padded to
            ``T = max len``), so the loss covers the reply tokens only.
        """
        device = self._device()
        targets = [self.truncate_target(p, t) for p, t in zip(prompts, targets)]
        full = [list(p) + list(t) for p, t in zip(prompts, targets)]
        ids, mask = left_pad(full, self.pad_id)
        ids, mask = ids.to(device), mask.to(device)
        logits = self.lm(input_ids=ids, attention_mask=mask, position_ids=position_ids(mask)).logits
        width = ids.size(1)
        tmax = max(max(len(t) for t in targets), 1)
        lengths = torch.tensor([len(t) for t in targets], device=device)
        j = torch.arange(tmax, device=device)
        # logits at position (width - len_t + j - 1) predict target token j
        index = (width - lengths[:, None] + j[None, :] - 1).clamp(0, width - 1)
        gathered = logits.gather(1, index[:, :, None].expand(-1, -1, logits.size(-1)))
        target_ids = torch.full((len(targets), tmax), self.pad_id, dtype=torch.long, device=device)
        for i, t in enumerate(targets):
            if t:
                target_ids[i, : len(t)] = torch.as_tensor(t, dtype=torch.long, device=device)
        target_mask = j[None, :] < lengths[:, None]
        return gathered, target_ids, target_mask

    def token_losses(
        self, prompts: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """
        ``(loss_per_token, target_ids, target_mask, greedy_preds)``, all ``bsz x T``;
        masked positions have loss 0.
        """
        logits, target_ids, target_mask = self.forward(prompts, targets)
        loss = F.cross_entropy(
            logits.float().reshape(-1, logits.size(-1)), target_ids.reshape(-1), reduction="none"
        ).view(target_ids.shape)
        loss = loss * target_mask
        return loss, target_ids, target_mask, logits.argmax(-1)

    # ------------------------------------------------------------------ generation
    @torch.no_grad()
    def generate(
        self, prompts: Sequence[Sequence[int]], config: Optional["GenerationConfig"] = None,
        seed: Optional[int] = None, streamer: Optional["BaseStreamer"] = None,
        earlier: Optional[Sequence[Dict]] = None, earlier_n: int = 0,
    ) -> List[List[Hypothesis]]:
        """
        For each prompt, its hypotheses best first (one for greedy / sampling,
        ``num_beams`` for beam search), from one ``generate`` call over the left-padded
        batch. ``config`` (default: greedy) is a
        :func:`~.decoding.generation_config`; each row stops at its own budget (prompt and
        reply within ``max_length``; ``config.max_new_tokens`` caps it too). Tokens
        exclude the prompt and the final EOS; the score is their log-probability under the
        model (the EOS included when it ended the reply). ``seed``: sample from a
        generator of that seed (the global RNG untouched); None: from the global RNG.
        ``streamer`` (a batch of one only; e.g. :class:`.streaming.ReplyStreamer`): a
        ``transformers`` streamer that receives the prompt, then each reply token as
        ``generate`` chooses it; with beam search (which ``transformers`` cannot stream) it
        receives the best hypothesis's tokens at the end. ``earlier`` (one table per
        prompt, :func:`.earlier_replies.blocked_ngrams`) with ``earlier_n`` > 0: no reply
        completes one of its prompt's blocked ``earlier_n``-grams
        (:class:`.earlier_replies.EarlierReplyBlock`).
        """
        from parlai_docgraph.models.decoding import ReplyNgramBlock, generation_config
        from parlai_docgraph.models.responder.earlier_replies import EarlierReplyBlock

        config = copy.deepcopy(config or generation_config({}))
        budgets = [self.target_budget(len(p)) for p in prompts]
        if config.max_new_tokens is not None:
            budgets = [min(b, config.max_new_tokens) for b in budgets]
        if streamer is not None and len(prompts) != 1:
            raise ValueError(f"a streamer needs a batch of one, not {len(prompts)}")
        if not prompts or max(budgets) <= 0:
            if streamer is not None:
                streamer.end()
            return [[Hypothesis([], 0.0, 0.0)] for _ in prompts]
        ids, mask = left_pad(prompts, self.pad_id)
        width = ids.size(1)
        block = config.no_repeat_ngram_size or 0
        beam = (config.num_beams or 1) > 1
        config.update(
            max_new_tokens=max(budgets), min_new_tokens=min(config.min_new_tokens or 0, max(budgets)),
            no_repeat_ngram_size=0, eos_token_id=self.eos_id, pad_token_id=self.pad_id,
            # raw logits give the tokens' log-probabilities; processed scores are kept only
            # for beam search, whose ranking score (sequences_scores) needs them
            output_logits=True, output_scores=beam, return_dict_in_generate=True)
        processors = [ReplyNgramBlock(block, width)] if block > 0 else []
        if earlier_n > 0 and earlier is not None and any(earlier):
            if len(earlier) != len(prompts):
                raise ValueError(f"{len(earlier)} blocked-n-gram tables for {len(prompts)} prompts")
            processors.append(EarlierReplyBlock(earlier_n, earlier, width))
        out = self._generate(ids, mask, config, processors, budgets, seed,
                             None if beam else streamer)
        results = self._hypotheses(out, width, budgets, beam, len(prompts))
        if beam and streamer is not None:  # the chosen reply, in one piece
            streamer.put(ids)
            streamer.put(torch.as_tensor(results[0][0].tokens, dtype=torch.long))
            streamer.end()
        return results

    def _generate(self, ids: torch.Tensor, mask: torch.Tensor, config: "GenerationConfig",
                  processors: List[Any], budgets: List[int], seed: Optional[int],
                  streamer: Optional["BaseStreamer"]) -> Any:
        """``transformers``' ``generate`` over the left-padded ``ids``: positions kept below
        ``max_length``, each row stopped at its budget, sampling from ``seed``'s generator
        when one is given."""
        from transformers import LogitsProcessorList, StoppingCriteriaList

        from parlai_docgraph.models.decoding import ReplyBudget, positions_below

        width, device = ids.size(1), self._device()
        rng = (torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else [])
               if seed is not None else contextlib.nullcontext())
        with rng, positions_below(self.lm, self.max_length):
            if seed is not None:
                torch.manual_seed(seed)
            out = self.lm.generate(
                input_ids=ids.to(device), attention_mask=mask.to(device), generation_config=config,
                logits_processor=LogitsProcessorList(processors),
                stopping_criteria=StoppingCriteriaList([ReplyBudget(budgets, width)]),
                streamer=streamer,
            )
        return out

    def _hypotheses(self, out: Any, width: int, budgets: List[int], beam: bool,
                    n_prompts: int) -> List[List[Hypothesis]]:
        """Each prompt's replies from ``generate``'s output: tokens after the ``width``
        prompt positions, cut at the prompt's budget and before EOS, scored by their
        log-probabilities (the EOS included when it ended the reply)."""
        steps = self.lm.compute_transition_scores(
            out.sequences, out.logits, out.beam_indices if beam else None, normalize_logits=True)
        ranked = out.sequences_scores.tolist() if beam else None
        per = out.sequences.size(0) // n_prompts
        results: List[List[Hypothesis]] = [[] for _ in range(n_prompts)]
        for j, (seq, logprobs) in enumerate(zip(out.sequences[:, width:].tolist(), steps.tolist())):
            i = j // per
            seq = seq[: budgets[i]]
            ended = seq.index(self.eos_id) if self.eos_id in seq else None
            tokens = seq if ended is None else seq[:ended]
            score = float(sum(logprobs[: len(seq) if ended is None else ended + 1]))
            results[i].append(Hypothesis(tokens, score, ranked[j] if beam else score))
        return results
