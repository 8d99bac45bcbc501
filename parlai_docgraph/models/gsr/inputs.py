"""
Token sequences of DialogGSR's three objectives (no ParlAI imports).

With ``z(P)`` the linearization of paths ``P`` (Eq. 2) and ``x`` the dialogue history
(its last ``history_truncate`` tokens):

* reconstruction (Eq. 8): source ``z(p)`` with one entity or relation replaced by the
  sentinel ``<extra_id_0>``, target the whole ``z(p)``;
* retrieval step ``j`` (Eq. 9, Fig. 1 iterative retrieval): source
  ``"retrieve: " z(p_1..p_{j-1}) " dialogue: " x``, target ``z(p_j)``; after the last
  gold path the target is empty (just ``</s>``): the model learns when to stop;
* response (Eq. 7, 10): source ``"knowledge: " z(G) " dialogue: " x``, target ``y``.

Sources end with ``</s>``, or, for an instruction-tuned causal LM fed through its chat
template (``chat=True``; SmolLM2-Instruct, Qwen-Instruct), the retrieval and response
sources are the user message of a one-turn chat followed by the template's generation
prompt (:func:`chat_frame`), so the target is the assistant's reply as the model was
tuned to write one. Every target ends with ``</s>``; path targets are tokenized exactly as the trie
(:func:`~parlai_docgraph.kg.trie.build_path_trie`) so constrained decoding can reproduce
them. ``use_special_tokens=False`` (Park Table 5 / 8 ablation) writes the same structure
with plain-text markers (:class:`PlainLinearizer`) instead of learnable special tokens.
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.kg.subgraph import Hop, Path
from parlai_docgraph.kg.path_ids import PathEncoder
from parlai_docgraph.kg.trie import PathTrie, build_path_trie

MASK = "<extra_id_0>"
_PROBE = "\u2063body\u2063"  # a content string no template rewrites


def chat_frame(tokenizer: Any) -> Tuple[List[int], List[int]]:
    """
    Ids the tokenizer's chat template writes before and after the content of one user
    message, the generation prompt included (SmolLM2: its default system message and
    ``<|im_start|>user\\n`` before, ``<|im_end|>\\n<|im_start|>assistant\\n`` after).
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("the tokenizer has no chat template to frame the GSR prompts with")
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": _PROBE}], add_generation_prompt=True, tokenize=False)
    if text.count(_PROBE) != 1:
        raise ValueError("the tokenizer's chat template does not write the user message verbatim")
    return tuple(list(tokenizer(t, add_special_tokens=False)["input_ids"]) if t else []
                 for t in text.split(_PROBE))


class PlainLinearizer(Linearizer):
    """
    Eq. 2's layout with ordinary-vocabulary markers (``head:``, ``fwd1:``, ``rev2:``,
    ``:end``, ``||``) instead of learnable special tokens.
    """

    def __init__(self, max_hops: int = 2) -> None:
        super().__init__(slot_tokens=1, max_hops=max_hops)
        self.head, self.tail, self.sep = "head:", ":end", "||"
        self._slot_of = {}
        for pos in range(1, 2 * max_hops + 1):
            for kind in ("Int", "Rev"):
                self._slot_of[self.slot(kind, pos)[0]] = (kind, pos, 1)
        import re

        toks = sorted([self.head, self.tail, self.sep, *self._slot_of], key=len, reverse=True)
        self._split = re.compile("(" + "|".join(re.escape(t) for t in toks) + ")")

    def slot(self, kind: str, position: int) -> List[str]:
        return [f"{'fwd' if kind == 'Int' else 'rev'}{position}:"]

    def special_tokens(self) -> List[str]:
        return []


def make_linearizer(use_special_tokens: bool, slot_tokens: int, hops: int) -> Linearizer:
    if use_special_tokens:
        return Linearizer(slot_tokens=slot_tokens, max_hops=hops)
    return PlainLinearizer(max_hops=hops)


class GSRInputs:
    """Builds source/target id lists for a tokenizer and a linearizer."""

    def __init__(
        self,
        tokenizer: Any,
        linearizer: Linearizer,
        history_truncate: int = 128,
        knowledge_truncate: int = 128,
        chat: bool = False,
    ) -> None:
        self.tok = tokenizer
        self.lin = linearizer
        self.eos = int(tokenizer.eos_token_id)
        self.history_truncate = history_truncate
        self.knowledge_truncate = knowledge_truncate
        self._ret = self.ids("retrieve:")
        self._know = self.ids("knowledge:")
        self._dlg = self.ids("dialogue:")
        self.path_encoder = PathEncoder(linearizer, tokenizer)  # caches name token ids
        self.frame = chat_frame(tokenizer) if chat else None

    def prompt(self, body: List[int]) -> List[int]:
        """``body </s>``, or ``body`` inside the chat template's user turn (:func:`chat_frame`)."""
        if self.frame is None:
            return body + [self.eos]
        before, after = self.frame
        return before + body + after

    def ids(self, text: str) -> List[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"]) if text else []

    def context(self, history: str) -> List[int]:
        ids = self.ids(history)
        return ids[-self.history_truncate:] if self.history_truncate > 0 else ids

    def linearize(self, paths: Sequence[Path]) -> str:
        return self.lin.linearize(paths) if paths else ""

    def retrieve_source(self, context: Sequence[int], previous: Sequence[Path] = ()) -> List[int]:
        know = self.ids(self.linearize(previous))[: self.knowledge_truncate]
        return self.prompt(self._ret + know + self._dlg + list(context))

    def respond_source(self, context: Sequence[int], paths: Sequence[Path]) -> List[int]:
        know = self.ids(self.linearize(paths))[: self.knowledge_truncate]
        return self.prompt(self._know + know + self._dlg + list(context))

    def path_target(self, path: Optional[Path]) -> List[int]:
        """``z(path) </s>``; ``None`` -> ``[</s>]`` (stop retrieving)."""
        return (self.ids(self.lin.linearize_path(path)) if path else []) + [self.eos]

    def retrieval_pairs(
        self, context: Sequence[int], gold: Sequence[Path], steps: int
    ) -> List[Tuple[List[int], List[int]]]:
        """Teacher-forced pairs of iterative retrieval: one per step, then a stop pair."""
        gold = [p for p in gold if len(p) <= self.lin.max_hops][:steps]
        if not gold:
            return []
        pairs = [(self.retrieve_source(context, gold[:j]), self.path_target(gold[j])) for j in range(len(gold))]
        if steps > 1 and len(gold) < steps:
            pairs.append((self.retrieve_source(context, gold), self.path_target(None)))
        return pairs

    def reconstruction_pair(self, path: Path, rng: random.Random) -> Tuple[List[int], List[int]]:
        """Mask one entity or relation of ``path`` uniformly at random (Eq. 8)."""
        slots = 1 + 2 * len(path)  # source, then (relation, target) per hop
        k = rng.randrange(slots)
        hops = list(path)
        if k == 0:
            hops[0] = Hop(MASK, hops[0].relation, hops[0].target, hops[0].reverse)
        else:
            j, is_rel = (k - 1) // 2, (k - 1) % 2 == 0
            h = hops[j]
            if is_rel:
                hops[j] = Hop(h.source, MASK, h.target, h.reverse)
            else:
                hops[j] = Hop(h.source, h.relation, MASK, h.reverse)
                if j + 1 < len(hops):
                    n = hops[j + 1]
                    hops[j + 1] = Hop(MASK, n.relation, n.target, n.reverse)
        masked = self.ids(self.lin.linearize_path(tuple(hops)))
        return masked + [self.eos], self.path_target(path)

    def trie(self, paths: Sequence[Path], allow_stop: bool = False) -> PathTrie:
        """Trie of the candidates; ``allow_stop`` also allows an empty path (``</s>``)."""
        trie = build_path_trie(paths, self.lin, self.tok, eos_id=self.eos, encoder=self.path_encoder)
        if allow_stop:
            trie.insert([self.eos], [None])
        return trie

    def path_index(self, paths: Sequence[Path]) -> Dict[Tuple[int, ...], int]:
        """Token ids (without ``</s>``) -> candidate index, to map beams back to paths."""
        out: Dict[Tuple[int, ...], int] = {}
        if not paths:
            return out
        enc = self.tok([self.lin.linearize_path(p) for p in paths], add_special_tokens=False)["input_ids"]
        for i, ids in enumerate(enc):
            out.setdefault(tuple(ids), i)
        return out

    def decode_path(self, ids: Sequence[int]) -> Optional[Path]:
        """Parse generated ids into a path (None if malformed)."""
        text = self.tok.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)
        for t in (self.tok.pad_token, self.tok.eos_token):
            if t:
                text = text.replace(t, " ")
        try:
            paths = self.lin.parse_paths(text, strict=True)
        except ValueError:
            return None
        return paths[0] if len(paths) == 1 else None
