"""
``--input-format``: how a candidate sentence and its dialogue context become one encoder
input (the Eq. 1 context node of Li et al., the segment node of Zhang & Tan Eq. 2).

* ``li`` (default): the sentence pair ``[CLS] s_i [SEP] x [SEP]`` (Li Eq. 1, ``[s_i; x]``),
  ``x`` the last ``--context-turns`` utterances; the pair is truncated longest first (the
  longer part loses tokens until both fit), the context from the left (oldest words first)
  and the candidate from the right: a candidate longer than its share keeps its beginning.
* ``zhang_tan``: one sequence ``[CLS] [user] u_{n-p+1} [agent] u_{n-p+2} ... [user] u_n
  [know] s_i [SEP]`` (Zhang & Tan 3.3, Eq. 2; their recipe: ``--context-turns 4``, p = 4).
  The utterances of ``x`` are tagged from the last one backwards, alternating ``[user]``
  (the turn to answer) and ``[agent]``; ``[user]``, ``[agent]`` and ``[know]`` are added to
  the tokenizer as special tokens and the encoder's embedding matrix grows by three rows
  (randomly initialised, trained with the encoder). The context is cut from the left
  first, so the knowledge sentence at the end survives; a candidate that alone exceeds the
  limit keeps its beginning.

Truncation works on the tokens (the ``tokenizers`` backend's encodings, each part cut on its
own side, then the tokenizer's own special tokens added), never on re-tokenized text.

No ParlAI imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

INPUT_FORMATS = ("li", "zhang_tan")
USER, AGENT, KNOW = "[user]", "[agent]", "[know]"
ZHANG_TAN_TOKENS = (USER, AGENT, KNOW)




def add_format_tokens(encoder: Any, tokenizer: Any, input_format: str) -> None:
    """Add the special tokens ``input_format`` needs to ``tokenizer`` (in place) and resize
    the encoder's input embeddings to match; nothing for ``li``."""
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"--input-format {input_format!r}: choose from {', '.join(INPUT_FORMATS)}")
    if input_format == "li":
        return
    missing = [t for t in ZHANG_TAN_TOKENS if t not in tokenizer.get_vocab()]
    if missing:
        from tokenizers import AddedToken

        # never split nor lower-cased; lstrip: the space before a tag belongs to the tag
        # (as RoBERTa's <mask>), so byte-level BPE adds no stray space token
        tokenizer.add_tokens([AddedToken(t, lstrip=True, special=True, normalized=False)
                              for t in missing], special_tokens=True)
    if encoder.get_input_embeddings().num_embeddings < len(tokenizer):
        encoder.resize_token_embeddings(len(tokenizer))


def zhang_tan_context(context: str) -> str:
    """Zhang & Tan's dialogue text of newline-separated ``context``:
    ``[user] u_1 [agent] u_2 … [user] u_n`` (the last utterance is the user's; tags
    alternate backwards); ``""`` without utterances."""
    lines = [line.strip() for line in context.split("\n") if line.strip()]
    return " ".join(f"{USER if (len(lines) - 1 - i) % 2 == 0 else AGENT} {line}"
                    for i, line in enumerate(lines))


def zhang_tan_text(context: str, candidate: str) -> str:
    """Zhang & Tan's input of a candidate: ``[user] u_1 … [user] u_n [know] s_i``
    (:func:`zhang_tan_context`)."""
    return " ".join(filter(None, [zhang_tan_context(context), f"{KNOW} {candidate}"]))


def pair_lengths(a: int, b: int, budget: int) -> Tuple[int, int]:
    """
    Token counts ``(a', b')`` of a (candidate, context) pair of ``a`` and ``b`` tokens cut
    to ``budget`` tokens longest first, as Hugging Face's ``longest_first`` cuts (one token
    at a time from the longer part, from the second on a tie).
    """
    if a + b <= budget:
        return a, b
    first = min(a, max(budget - b, (budget + 1) // 2))
    return first, min(b, budget - first)


def encode_candidates(
    tokenizer: Any, candidates: Sequence[str], contexts: Sequence[str], max_length: int,
    input_format: str = "li",
) -> Dict[str, Any]:
    """Padded ``input_ids`` / ``attention_mask`` (/ ``token_type_ids``) tensors of every
    (candidate, context) input in ``input_format``, at most ``max_length`` tokens: the
    oldest context tokens are cut first, a candidate loses its end, never its beginning
    (see the module docstring)."""
    import torch

    if input_format not in INPUT_FORMATS:
        raise ValueError(f"--input-format {input_format!r}: choose from {', '.join(INPUT_FORMATS)}")
    backend = tokenizer.backend_tokenizer
    saved = backend.truncation, backend.padding
    backend.no_truncation()
    backend.no_padding()
    try:
        if input_format == "zhang_tan":
            # "[user] u .. [user] u_n" then "[know] s_i": one sequence in two parts
            ctx = backend.encode_batch([zhang_tan_context(x) for x in contexts],
                                       add_special_tokens=False)
            cand = backend.encode_batch([f"{KNOW} {c}" for c in candidates],
                                        add_special_tokens=False)
            budget = max_length - tokenizer.num_special_tokens_to_add(pair=False)
            rows = []
            for c, x in zip(cand, ctx):
                keep_c = min(len(c.ids), budget)
                keep_x = min(len(x.ids), budget - keep_c) if x.ids else 0
                c.truncate(keep_c, direction="right")
                x.truncate(keep_x, direction="left")
                merged = type(c).merge([x, c]) if keep_x else c
                rows.append(backend.post_process(merged, None, add_special_tokens=True))
        else:
            cand = backend.encode_batch(list(candidates), add_special_tokens=False)
            ctx = backend.encode_batch(list(contexts), add_special_tokens=False)
            budget = max_length - tokenizer.num_special_tokens_to_add(pair=True)
            rows = []
            for c, x in zip(cand, ctx):
                keep_c, keep_x = pair_lengths(len(c.ids), len(x.ids), budget)
                c.truncate(keep_c, direction="right")
                x.truncate(keep_x, direction="left")
                rows.append(backend.post_process(c, x, add_special_tokens=True))
    finally:
        trunc, pad = saved
        if trunc is not None:
            backend.enable_truncation(**trunc)
        if pad is not None:
            backend.enable_padding(**pad)
    width = max((len(r.ids) for r in rows), default=0)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    left = getattr(tokenizer, "padding_side", "right") == "left"

    def padded(values: List[int], fill: int) -> List[int]:
        gap = [fill] * (width - len(values))
        return gap + list(values) if left else list(values) + gap

    out = {"input_ids": torch.tensor([padded(r.ids, pad_id) for r in rows], dtype=torch.long),
           "attention_mask": torch.tensor([padded(r.attention_mask, 0) for r in rows],
                                          dtype=torch.long)}
    if "token_type_ids" in getattr(tokenizer, "model_input_names", ()):
        out["token_type_ids"] = torch.tensor([padded(r.type_ids, 0) for r in rows],
                                             dtype=torch.long)
    return out
