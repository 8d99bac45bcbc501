"""
Knowledge-grounded response generation with any Hugging Face causal LM (Li et al. Eq. 9).

No ParlAI here: :class:`Responder` is a ``torch.nn.Module`` over a causal LM
(``AutoModelForCausalLM``) that

* lays the input out as ``knowledge <sep> context <sep>`` (``<sep>`` = the EOS token),
  keeping the first ``knowledge_truncate`` knowledge tokens and the *last*
  ``context_truncate`` (128) context tokens, and the reply follows, ended by EOS;
* pads on the **left** and passes explicit position ids computed from the attention mask
  (``cumsum - 1``, clamped at 0), so a padded row sees the same positions as the same
  row alone (ParlAI PR #3193; microsoft/DialoGPT#20);
* decodes incrementally with transformers-5 cache objects (:class:`DynamicCache`; beam
  search reorders it with the cache's own ``reorder_cache``);
* decodes greedily, with beam search, or by sampling (top-k, then top-p), never past
  ``max_length`` (286) tokens *including the input*, each row with its own budget.

Rows never interact, so batched generation equals unbatched generation (up to floating
point summation order, which the tests check token for token).

:func:`load_causal_lm` resolves ``--responder-model``: ``tiny`` (the bundled offline
config + tokenizer in ``parlai_docgraph/assets/tiny_gpt2``, weights initialised from a
seed), a local directory (with or without weights), or a hub name (from the local cache
when offline; a clear :class:`ResponderUnavailable` otherwise), through the one loader
(:func:`.hub.load_model`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from . import hub

TINY = hub.TINY
TINY_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assets", "tiny_gpt2")
CONTEXT_TRUNCATE = 128
KNOWLEDGE_TRUNCATE = 128
MAX_LENGTH = 286
NEG_INF = float("-inf")


class ResponderUnavailable(hub.ModelUnavailable):
    """
    The requested responder LM cannot be loaded (typically: a hub name while offline).
    """


OPTION = hub.ModelOption("--responder-model", TINY_DIR, "tokenizer.json, or vocab.json + merges.txt",
                         ResponderUnavailable)


# --------------------------------------------------------------------------- loading


def load_tokenizer(name: str, datapath: Optional[str] = None):
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


def special_ids(tokenizer) -> Tuple[int, int]:
    """
    ``(eos_id, pad_id)``; GPT-2 has no pad token, EOS stands in (padding is masked).
    """
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ResponderUnavailable("the responder tokenizer has no EOS token")
    pad = tokenizer.pad_token_id
    return eos, eos if pad is None else pad


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
    tokens: List[int]
    score: float  # sum of log-probabilities (before any length penalty)
    rescored: float = 0.0
    finished: bool = False


@dataclass
class GenerationConfig:
    method: str = "greedy"  # greedy | beam | sample
    beam_size: int = 1
    topk: int = 0  # 0: no top-k filter
    topp: float = 1.0  # 1.0: no nucleus filter
    max_new_tokens: Optional[int] = None  # besides max_length (which includes the input)
    min_length: int = 0
    length_penalty: float = 0.65  # ParlAI's ((5 + len) / 6) ** lp
    temperature: float = 1.0
    generator: Optional[torch.Generator] = field(default=None, repr=False)


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

    def target_budget(self, prompt_len: int) -> int:
        """
        How many reply tokens (EOS included) fit in ``max_length`` after the prompt.
        """
        return max(self.max_length - prompt_len, 0)

    def truncate_target(self, prompt: Sequence[int], target: Sequence[int]) -> List[int]:
        return list(target)[: self.target_budget(len(prompt))]

    def _device(self) -> torch.device:
        return next(self.lm.parameters()).device

    def _forward(self, ids, mask, pos, cache=None, keep_last=False):
        kwargs = dict(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=cache is not None)
        if cache is not None:
            kwargs["past_key_values"] = cache
        if keep_last:
            kwargs["logits_to_keep"] = 1
        return self.lm(**kwargs)

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
        logits = self._forward(ids, mask, position_ids(mask)).logits
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
        self, prompts: Sequence[Sequence[int]], config: Optional[GenerationConfig] = None
    ) -> List[List[Hypothesis]]:
        """
        For each prompt, its hypotheses best first (one for greedy/sampling, up to
        ``beam_size`` for beam search). Tokens exclude the prompt and the final EOS.
        """
        config = config or GenerationConfig()
        budgets = [self.target_budget(len(p)) for p in prompts]
        if config.max_new_tokens is not None:
            budgets = [min(b, config.max_new_tokens) for b in budgets]
        if config.method == "beam" and config.beam_size > 1:
            return self._beam(prompts, budgets, config)
        return self._sample_or_greedy(prompts, budgets, config)

    def _start(self, prompts, repeat: int = 1):
        from transformers import DynamicCache

        device = self._device()
        ids, mask = left_pad(prompts, self.pad_id)
        if repeat > 1:
            ids, mask = ids.repeat_interleave(repeat, 0), mask.repeat_interleave(repeat, 0)
        ids, mask = ids.to(device), mask.to(device)
        pos = position_ids(mask)
        cache = DynamicCache(config=getattr(self.lm, "config", None))
        out = self._forward(ids, mask, pos, cache, keep_last=True)
        return out.logits[:, -1, :].float(), mask, pos[:, -1] + 1, out.past_key_values

    def _step(self, tokens, mask, next_pos, cache):
        mask = torch.cat([mask, mask.new_ones((mask.size(0), 1))], dim=1)
        # rows that finished early keep stepping with the batch (their tokens are dropped);
        # clamping keeps their positions inside GPT-2's table. Live rows never reach the
        # clamp: prompt + reply <= max_length <= n_positions.
        next_pos = next_pos.clamp(max=self.max_length - 1)
        out = self._forward(tokens[:, None], mask, next_pos[:, None], cache, keep_last=True)
        return out.logits[:, -1, :].float(), mask, next_pos + 1, out.past_key_values

    def _logprobs(self, logits, step, config) -> torch.Tensor:
        if config.temperature != 1.0:
            logits = logits / config.temperature
        logprobs = F.log_softmax(logits, dim=-1)
        if step < config.min_length:
            logprobs[:, self.eos_id] = NEG_INF
        return logprobs

    @staticmethod
    def filter_top_k_top_p(logprobs: torch.Tensor, topk: int, topp: float) -> torch.Tensor:
        """
        Keep the ``topk`` most likely tokens, then the smallest set whose mass reaches
        ``topp`` (the most likely token always survives); the rest get ``-inf``.
        """
        out = logprobs
        if topk and topk > 0 and topk < out.size(-1):
            kth = out.topk(topk, dim=-1).values[:, -1:]
            out = out.masked_fill(out < kth, NEG_INF)
        if topp is not None and topp < 1.0:
            sorted_lp, order = out.sort(dim=-1, descending=True)
            probs = F.softmax(sorted_lp, dim=-1)
            before = probs.cumsum(-1) - probs  # mass strictly before each token
            drop_sorted = before >= topp
            drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
            out = out.masked_fill(drop, NEG_INF)
        return out

    def _sample_or_greedy(self, prompts, budgets, config) -> List[List[Hypothesis]]:
        bsz = len(prompts)
        logits, mask, next_pos, cache = self._start(prompts)
        device = logits.device
        tokens: List[List[int]] = [[] for _ in range(bsz)]
        scores = [0.0] * bsz
        done = [b <= 0 for b in budgets]
        sample = config.method == "sample"
        for step in range(max(budgets, default=0)):
            logprobs = self._logprobs(logits, step, config)
            if sample:
                filtered = self.filter_top_k_top_p(logprobs, config.topk, config.topp)
                probs = F.softmax(filtered, dim=-1)
                choice = torch.multinomial(probs, 1, generator=config.generator).squeeze(1)
            else:
                choice = logprobs.argmax(-1)
            chosen_lp = logprobs.gather(1, choice[:, None]).squeeze(1)
            choice_l, lp_l = choice.tolist(), chosen_lp.tolist()
            for i in range(bsz):
                if done[i]:
                    continue
                scores[i] += lp_l[i]
                if choice_l[i] == self.eos_id:
                    done[i] = True
                else:
                    tokens[i].append(choice_l[i])
                    if len(tokens[i]) >= budgets[i]:
                        done[i] = True
            if all(done):
                break
            feed = torch.tensor(
                [self.eos_id if done[i] else choice_l[i] for i in range(bsz)], device=device
            )
            logits, mask, next_pos, cache = self._step(feed, mask, next_pos, cache)
        return [[Hypothesis(tokens[i], scores[i], scores[i], True)] for i in range(bsz)]

    def _beam(self, prompts, budgets, config) -> List[List[Hypothesis]]:
        bsz, k = len(prompts), config.beam_size
        logits, mask, next_pos, cache = self._start(prompts, repeat=k)
        device = logits.device
        beam_scores = torch.full((bsz, k), NEG_INF, device=device)
        beam_scores[:, 0] = 0.0  # identical beams at start: expand only the first
        beam_tokens: List[List[List[int]]] = [[[] for _ in range(k)] for _ in range(bsz)]
        finished: List[List[Hypothesis]] = [[] for _ in range(bsz)]
        done = [b <= 0 for b in budgets]

        def penalty(length: int) -> float:
            return ((5.0 + length) / 6.0) ** config.length_penalty

        for step in range(max(budgets, default=0)):
            logprobs = self._logprobs(logits, step, config).view(bsz, k, -1)
            vocab = logprobs.size(-1)
            cand = (beam_scores[:, :, None] + logprobs).view(bsz, -1)
            top_scores, top_index = cand.topk(2 * k, dim=-1)
            top_scores_l, top_index_l = top_scores.tolist(), top_index.tolist()
            new_scores = torch.full((bsz, k), NEG_INF, device=device)
            new_tokens = torch.full((bsz, k), self.eos_id, dtype=torch.long, device=device)
            source = torch.arange(bsz * k, device=device).view(bsz, k).clone()
            new_beam_tokens = [[[] for _ in range(k)] for _ in range(bsz)]
            for i in range(bsz):
                if done[i]:
                    continue
                last = step + 1 >= budgets[i]
                slot = 0
                for score, flat in zip(top_scores_l[i], top_index_l[i]):
                    if score == NEG_INF:
                        break
                    b, tok = divmod(flat, vocab)
                    seq = beam_tokens[i][b]
                    if tok == self.eos_id or last:
                        toks = seq if tok == self.eos_id else seq + [tok]
                        finished[i].append(
                            Hypothesis(list(toks), score, score / penalty(len(toks) + 1), True)
                        )
                        continue
                    if slot < k:
                        new_scores[i, slot] = score
                        new_tokens[i, slot] = tok
                        source[i, slot] = i * k + b
                        new_beam_tokens[i][slot] = seq + [tok]
                        slot += 1
                    if slot >= k and len(finished[i]) >= k:
                        break
                # ParlAI-style stop: k finished hypotheses, or nothing left to extend
                if last or len(finished[i]) >= k or new_scores[i].max().item() == NEG_INF:
                    done[i] = True
            if all(done):
                break
            beam_scores, beam_tokens = new_scores, new_beam_tokens
            flat_source = source.view(-1)
            cache.reorder_cache(flat_source)
            mask = mask.index_select(0, flat_source)
            next_pos = next_pos.index_select(0, flat_source)
            logits, mask, next_pos, cache = self._step(new_tokens.view(-1), mask, next_pos, cache)

        results = []
        for i in range(bsz):
            hyps = sorted(finished[i], key=lambda h: h.rescored, reverse=True)[:k]
            results.append(hyps or [Hypothesis([], 0.0, 0.0, True)])
        return results
