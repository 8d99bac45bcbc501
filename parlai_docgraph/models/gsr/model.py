"""
DialogGSR's model (Park et al.): one Hugging Face encoder-decoder (T5, as in the paper)
that retrieves linearized KG paths and writes the response. Torch + transformers only.
A decoder-only causal LM (Llama, Qwen, ...) works the same way through
:class:`~parlai_docgraph.models.gsr.causal.CausalGSRModel`
(:func:`~parlai_docgraph.models.gsr.build.build_gsr_model` picks the family from the
config's ``is_encoder_decoder``).

* Losses (Eq. 8, 9, 10) are token-level cross-entropy of a target given a source;
  :meth:`GSRModel.token_losses` pads targets with ``-100`` (never the pad id), so padding
  is not a label (the public code trained on padding, ``anchors.md`` 2.6).
* KG-reconstruction pretraining trains only the structural special tokens
  (:meth:`GSRModel.train_only_rows`): every other parameter is frozen and a gradient
  hook zeroes the other rows of the (tied input/output) embedding, so input *and* output
  representations of the special tokens are learned together.
* Path retrieval (:meth:`GSRModel.generate_paths`) is beam search with
  :class:`~parlai_docgraph.kg.constrained.GraphConstrainedLogitsProcessor` (Eq. 3-4) over
  each example's :class:`~parlai_docgraph.kg.trie.PathTrie`, or unconstrained.

:func:`load_lm` (and :func:`load_seq2seq`) resolves ``--gsr-model``: ``tiny`` (bundled
``parlai_docgraph/assets/tiny_t5``: config + tokenizer, weights from a seed), a local
directory, or a hub name (``t5-small``; from the HF cache when offline, else a clear
:class:`GSRUnavailable`), through the one loader (:func:`.hub.load_model`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

import torch
from torch import nn

from parlai_docgraph import assets
from parlai_docgraph.models import hub
from parlai_docgraph.models.adapters import is_adapted, set_trainable

if TYPE_CHECKING:
    from transformers import GenerationConfig

TINY = hub.TINY
TINY_DIR = os.path.join(os.path.dirname(os.path.abspath(assets.__file__)), "tiny_t5")
MASK_TOKEN = "<extra_id_0>"
LABEL_PAD = -100  # ignored by cross-entropy: padding is never a label
LOG = logging.getLogger(__name__)


class GSRUnavailable(hub.ModelUnavailable):
    """The requested ``--gsr-model`` cannot be loaded (typically a hub name offline)."""


OPTION = hub.ModelOption("--gsr-model", TINY_DIR, "tokenizer.json or spiece.model", GSRUnavailable)


def load_gsr_tokenizer(name: str, datapath: Optional[str] = None, extra_special: Sequence[str] = ()):
    """
    The tokenizer of ``--gsr-model`` with ``extra_special`` (Eq. 2 structural tokens) and
    T5's mask sentinel added as special tokens when missing (see :func:`.hub.load_tokenizer`).
    """
    tok = hub.load_tokenizer(name, OPTION, datapath, (*extra_special, MASK_TOKEN))
    if tok.pad_token is None:  # Llama-style tokenizers: EOS stands in (padding is masked)
        tok.pad_token = tok.eos_token
    return tok


def set_decoder_start(lm: nn.Module, tokenizer) -> None:
    """
    T5 starts decoding from ``<pad>`` (``decoder_start_token_id`` 0): teacher forcing
    shifts labels right behind it and ``generate`` emits it first (``start_len`` 1). A
    config saved without it would fail in ``_shift_right`` or start from a wrong token,
    so it defaults to the tokenizer's pad id, in the config and the generation config.
    """
    start = lm.config.decoder_start_token_id
    if start is None:
        start = tokenizer.pad_token_id
        LOG.info(f"--gsr-model config has no decoder_start_token_id: using <pad> ({start}) as T5 does")
        lm.config.decoder_start_token_id = start
    generation = getattr(lm, "generation_config", None)
    if generation is not None and generation.decoder_start_token_id is None:
        generation.decoder_start_token_id = start


def is_causal(config) -> bool:
    """A decoder-only LM (no ``is_encoder_decoder`` in its config)."""
    return not bool(getattr(config, "is_encoder_decoder", False))


def load_lm(
    name: str, datapath: Optional[str] = None, seed: int = 0, pretrained: bool = True,
    dtype: Optional[torch.dtype] = None,
) -> nn.Module:
    """
    The LM of ``--gsr-model``: ``AutoModelForSeq2SeqLM`` for an encoder-decoder config,
    else ``AutoModelForCausalLM`` (see :func:`.hub.load_model`).
    """
    return hub.load_model(name, "lm", OPTION, datapath, pretrained, seed, dtype)


def load_seq2seq(name: str, datapath: Optional[str] = None, seed: int = 0, pretrained: bool = True) -> nn.Module:
    """The encoder-decoder of ``--gsr-model`` (see :func:`.hub.load_model`)."""
    return hub.load_model(name, "seq2seq", OPTION, datapath, pretrained, seed)


def right_pad(seqs: Sequence[Sequence[int]], pad: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(ids, mask)`` right-padded to the longest row (at least length 1)."""
    width = max([len(s) for s in seqs] + [1])
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            ids[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
            mask[i, : len(s)] = 1
    return ids, mask


class GSRModel(nn.Module):
    """A seq2seq LM with DialogGSR's losses, freezing rule and constrained retrieval."""

    def __init__(self, lm: nn.Module, pad_id: int, eos_id: int, special_ids: Sequence[int]) -> None:
        super().__init__()
        self.lm = lm
        self.pad_id = int(pad_id)
        self.eos_id = int(eos_id)
        self.special_ids = sorted(set(int(i) for i in special_ids))
        self._hook = None

    def _device(self) -> torch.device:
        return next(self.lm.parameters()).device

    # ------------------------------------------------------------------ losses
    def token_losses(
        self, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """
        ``-log p(target_t | source, target_<t)`` per position (Eq. 8/9/10 summands).

        Returns ``(loss [B, T], labels [B, T], notnull [B, T], preds [B, T])``; labels are
        ``-100`` on padding and the loss there is 0.
        """
        dev = self._device()
        src, src_mask = right_pad(sources, self.pad_id)
        labels, tgt_mask = right_pad(targets, self.pad_id)
        labels = labels.masked_fill(tgt_mask == 0, LABEL_PAD)
        out = self.lm(input_ids=src.to(dev), attention_mask=src_mask.to(dev), labels=labels.to(dev))
        logits = out.logits.float()
        loss = nn.functional.cross_entropy(
            logits.transpose(1, 2), labels.to(dev), ignore_index=LABEL_PAD, reduction="none"
        )
        notnull = labels.to(dev) != LABEL_PAD
        return loss, labels.to(dev), notnull, logits.argmax(-1)

    # ------------------------------------------------------------------ freezing
    def train_only_rows(self, rows: Optional[Sequence[int]] = None) -> None:
        """
        Freeze everything but rows ``rows`` (default: the special tokens) of the shared
        embedding (Park et al. 3.4: "All the other parameters are frozen"). Use an
        optimizer without weight decay (decay would move the zero-gradient rows).
        """
        if is_adapted(self.lm):  # LoRA: the new-token rows are peft's trainable tokens
            if rows is not None and sorted(set(rows)) != self.special_ids:
                raise ValueError("with LoRA only the special-token rows can be trained alone")
            set_trainable(self.lm, tokens_only=True)
            return
        self.release_rows()
        rows = self.special_ids if rows is None else list(rows)
        emb = self.lm.get_input_embeddings().weight
        out = self.lm.get_output_embeddings()
        # untied output embedding (T5 v1.1, Llama): its rows of the new tokens train too
        tables = [emb] + ([out.weight] if out is not None and out.weight is not emb else [])
        for p in self.lm.parameters():
            p.requires_grad_(any(p is t for t in tables))
        keep = torch.zeros(emb.shape[0], 1, dtype=emb.dtype, device=emb.device)
        keep[torch.as_tensor(rows, dtype=torch.long)] = 1.0
        self._hook = [t.register_hook(lambda g: g * keep.to(g.dtype)) for t in tables]

    def release_rows(self) -> None:
        """Undo :meth:`train_only_rows`: every parameter (LoRA: every adapter) trains again."""
        if is_adapted(self.lm):
            set_trainable(self.lm)
            return
        for hook in self._hook or []:
            hook.remove()
        self._hook = None
        for p in self.lm.parameters():
            p.requires_grad_(True)

    # ------------------------------------------------------------------ generation
    def start_len(self, width: int) -> int:
        """Positions of a generated sequence before the first new token (T5: decoder start)."""
        return 1

    def encode(self, sources: Sequence[Sequence[int]]) -> Tuple[torch.Tensor, torch.Tensor]:
        ids, mask = right_pad(sources, self.pad_id)
        dev = self._device()
        return ids.to(dev), mask.to(dev)

    @torch.no_grad()
    def generate_paths(
        self,
        sources: Sequence[Sequence[int]],
        tries: Optional[Sequence[object]],
        entity_scores: Optional[Sequence[Mapping[str, float]]] = None,
        num_beams: int = 5,
        num_return: int = 5,
        max_new_tokens: int = 64,
        alpha: float = 0.8,
        length_penalty: float = 1.0,
        lm_norm: str = "allowed",
    ) -> List[List[Tuple[List[int], float]]]:
        """
        Top ``num_return`` beams per source as ``(ids without start/pad, score)``.

        ``tries`` None: unconstrained beam search; else constrained to ``tries[b]`` with
        ``log p_graph`` from ``entity_scores[b]`` (None: hard constraint) and ``log p_LM``
        renormalised over the allowed tokens or not (``lm_norm``, see
        :mod:`~parlai_docgraph.kg.constrained`). Beams beyond
        the number of valid paths (beam search's ``-1e9`` stand-in for ``-inf``, length
        normalised) and duplicates are dropped. ``early_stopping=False``: while the first
        tokens (``[Head]``, the start entity) allow fewer continuations than beams, the
        surplus beams leave the trie and end with ``-1e9``; with ``True`` those would
        count as finished and stop the search before ``num_return`` real paths end.
        """
        from transformers import LogitsProcessorList

        from parlai_docgraph.kg.constrained import GraphConstrainedLogitsProcessor
        from parlai_docgraph.models.gsr.trie_head import compact_ids, trie_columns

        if not sources:
            return []
        ids, mask = self.encode(sources)
        procs = LogitsProcessorList()
        narrow: Any = contextlib.nullcontext()
        vocab: Optional[torch.Tensor] = None
        if tries is not None and lm_norm == "allowed":  # the scores read the tries' tokens only
            narrow, vocab = self.narrowed(trie_columns(tries, self.eos_id), ids, num_beams)
        if tries is not None:
            procs.append(
                GraphConstrainedLogitsProcessor(
                    tries, self.eos_id, num_beams=num_beams, entity_scores=entity_scores, alpha=alpha,
                    prefix_len=self.start_len(ids.shape[1]), lm_norm=lm_norm, vocab=vocab,
                )
            )
        special = torch.tensor([self.pad_id, self.eos_id])
        pad, eos = special.tolist() if vocab is None else compact_ids(vocab, special).tolist()
        cache = self.prompt_cache(ids, mask, num_beams)  # the prompts' own tokens
        with narrow:
            out = self._search(ids if vocab is None else compact_ids(vocab, ids), mask, procs,
                               num_beams, num_return, max_new_tokens, length_penalty, cache,
                               pad, eos)
        if vocab is not None:
            out.sequences = vocab.to(out.sequences.device)[out.sequences]
        return self._paths_of(out, len(sources), self.start_len(ids.shape[1]))

    def narrowed(self, columns: torch.Tensor, ids: torch.Tensor,
                 beams: int) -> Tuple[Any, Optional[torch.Tensor]]:
        """``(context, vocab)`` for a search whose scores read the tokens ``columns`` only
        (:mod:`~.trie_head`): here the output layer computes those columns and writes
        ``-inf`` to the others (:func:`~.trie_head.restricted_head`; ``vocab`` None: the
        search runs over the whole vocabulary)."""
        from parlai_docgraph.models.gsr.trie_head import restricted_head

        return restricted_head(self.lm, columns), None

    def _search(self, ids: torch.Tensor, mask: torch.Tensor, procs: Any, num_beams: int,
                num_return: int, max_new_tokens: int, length_penalty: float,
                cache: Dict[str, Any], pad: int, eos: int) -> Any:
        """``generate``'s beam search of :meth:`generate_paths` (every option explicit),
        inside :meth:`search_rows`: ``cache`` from :meth:`prompt_cache`, ``pad`` / ``eos``
        the ids of padding and EOS in the search's vocabulary."""
        with self.search_rows(cache.get("past_key_values"), num_beams):
            return self.lm.generate(
                input_ids=ids,
                attention_mask=mask,
                num_beams=num_beams,
                num_return_sequences=min(num_return, num_beams),
                max_new_tokens=max_new_tokens,
                length_penalty=length_penalty,
                **cache,
                do_sample=False,
                early_stopping=False,  # True stops once junk (-1e9) beams fill the finished list
                logits_processor=procs,
                output_scores=True,
                return_dict_in_generate=True,
                pad_token_id=pad,
                eos_token_id=eos,
            )

    def search_rows(self, cache: Any, num_beams: int) -> Any:
        """The context a path search runs in: for a seq2seq LM none (every row of the batch
        steps to the end; :class:`~.causal.CausalGSRModel` drops the rows of done examples)."""
        return contextlib.nullcontext()

    def _paths_of(self, out: Any, n_sources: int, start: int) -> List[List[Tuple[List[int], float]]]:
        """``generate``'s sequences as ``(ids, score)`` per source, the ``start`` prompt
        or decoder-start positions and padding stripped, without the ``-1e9`` junk beams
        and repeats."""
        seqs = out.sequences.tolist()
        if getattr(out, "sequences_scores", None) is not None:
            scores = out.sequences_scores.tolist()
        else:
            scores = [0.0] * len(seqs)
        per = len(seqs) // n_sources
        result: List[List[Tuple[List[int], float]]] = []
        for b in range(n_sources):
            seen, hyps = set(), []
            for seq, score in zip(seqs[b * per : (b + 1) * per], scores[b * per : (b + 1) * per]):
                toks = self.strip(seq[start:])
                if score < -1e6 or tuple(toks) in seen:
                    continue
                seen.add(tuple(toks))
                hyps.append((toks, float(score)))
            result.append(hyps)
        return result

    def prompt_cache(self, ids: torch.Tensor, mask: torch.Tensor, beams: int) -> Dict[str, Any]:
        """Extra ``generate`` arguments for a beam search over the prompts ``ids``: for a
        seq2seq LM (``generate`` runs its encoder once per example, before the beams) an
        empty :func:`~parlai_docgraph.models.kv_cache.decoding_cache`."""
        return self.empty_cache()

    def empty_cache(self) -> Dict[str, Any]:
        """``past_key_values``: an empty cache that grows and reorders beams in place
        (:mod:`~parlai_docgraph.models.kv_cache`; the same outputs as ``generate``'s own)."""
        from parlai_docgraph.models.kv_cache import decoding_cache

        return {"past_key_values": decoding_cache(self.lm)}

    def strip(self, ids: Sequence[int]) -> List[int]:
        """Ids up to (without) the first EOS, padding removed."""
        out: List[int] = []
        for i in ids:
            if i == self.eos_id:
                break
            if i != self.pad_id:
                out.append(int(i))
        return out

    @staticmethod
    def text_config(config: Optional["GenerationConfig"] = None, num_beams: int = 1,
                    max_new_tokens: int = 64, min_new_tokens: int = 0,
                    length_penalty: float = 1.0) -> "GenerationConfig":
        """A copy of ``config`` (a :func:`~parlai_docgraph.models.decoding.generation_config`
        of the agent's ParlAI options), or beam search with the keyword values."""
        import copy

        from parlai_docgraph.models.decoding import generation_config

        if config is not None:
            return copy.deepcopy(config)
        return generation_config({"inference": "beam", "beam_size": num_beams,
                                  "beam_min_length": min_new_tokens,
                                  "beam_length_penalty": length_penalty}, None, max_new_tokens)

    @torch.no_grad()
    def generate_text(
        self, sources: Sequence[Sequence[int]], config: Optional["GenerationConfig"] = None,
        num_beams: int = 1, max_new_tokens: int = 64, min_new_tokens: int = 0,
        length_penalty: float = 1.0,
    ) -> List[Tuple[List[int], float]]:
        """
        Best response ids (no start/EOS) and score per source (Eq. 7 input), decoded as
        ``config`` says (:meth:`text_config`: the one mapping of ParlAI's generation options,
        ``--inference``, ``--beam-size``, ``--beam-min-length`` as new tokens, ``--topk``,
        ``--topp``, ``--beam-length-penalty``, ``--beam-block-ngram`` within the reply).
        """
        from transformers import LogitsProcessorList

        from parlai_docgraph.models.decoding import ReplyNgramBlock

        if not sources:
            return []
        config = self.text_config(config, num_beams, max_new_tokens, min_new_tokens,
                                  length_penalty)
        ids, mask = self.encode(sources)
        start = self.start_len(ids.shape[1])
        block = config.no_repeat_ngram_size or 0
        config.update(no_repeat_ngram_size=0, num_return_sequences=1, output_scores=True,
                      return_dict_in_generate=True, pad_token_id=self.pad_id,
                      eos_token_id=self.eos_id)
        own = getattr(self.lm, "generation_config", None)
        if getattr(own, "decoder_start_token_id", None) is not None:  # T5: <pad>
            config.update(decoder_start_token_id=own.decoder_start_token_id)
        out = self.lm.generate(
            input_ids=ids, attention_mask=mask, generation_config=config, **self.empty_cache(),
            logits_processor=LogitsProcessorList([ReplyNgramBlock(block, start)] if block else []),
        )
        scores = getattr(out, "sequences_scores", None)
        scores = scores.tolist() if scores is not None else [0.0] * len(sources)
        return [(self.strip(s[start:]), float(sc)) for s, sc in zip(out.sequences.tolist(), scores)]
