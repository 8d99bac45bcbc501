"""
``--input-format``: how a candidate sentence and its dialogue context become one encoder
input (the Eq. 1 context node of Li et al., the segment node of Zhang & Tan Eq. 2).

* ``li`` (default): the sentence pair ``[CLS] s_i [SEP] x [SEP]`` (Li Eq. 1, ``[s_i; x]``),
  ``x`` the last ``--context-turns`` utterances; the pair is truncated longest first with
  the context cut from the left (oldest words first).
* ``zhang_tan``: one sequence ``[CLS] [user] u_{n-p+1} [agent] u_{n-p+2} ... [user] u_n
  [know] s_i [SEP]`` (Zhang & Tan 3.3, Eq. 2; their recipe: ``--context-turns 4``, p = 4).
  The utterances of ``x`` are tagged from the last one backwards, alternating ``[user]``
  (the turn to answer) and ``[agent]``; ``[user]``, ``[agent]`` and ``[know]`` are added to
  the tokenizer as special tokens and the encoder's embedding matrix grows by three rows
  (randomly initialised, trained with the encoder). Cut from the left, so the knowledge
  sentence at the end survives.

No ParlAI imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

INPUT_FORMATS = ("li", "zhang_tan")
USER, AGENT, KNOW = "[user]", "[agent]", "[know]"
ZHANG_TAN_TOKENS = (USER, AGENT, KNOW)


def add_input_format_args(group: Any) -> None:
    """Register ``--input-format`` on an argument group."""
    group.add_argument(
        "--input-format", type=str, default="li", choices=list(INPUT_FORMATS),
        help="encoder input of each candidate: li: the pair [CLS] s_i [SEP] x [SEP] (Li et "
        "al. Eq. 1); zhang_tan: '[user] u [agent] u ... [user] u_n [know] s_i' with three "
        "added special tokens (Zhang & Tan 3.3 Eq. 2; their recipe uses --context-turns 4)")


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


def zhang_tan_text(context: str, candidate: str) -> str:
    """``[user] u_1 [agent] u_2 ... [user] u_n [know] s_i`` of newline-separated ``context``
    (the last utterance is the user's; tags alternate backwards)."""
    lines = [line.strip() for line in context.split("\n") if line.strip()]
    tagged = [f"{USER if (len(lines) - 1 - i) % 2 == 0 else AGENT} {line}"
              for i, line in enumerate(lines)]
    return " ".join(tagged + [f"{KNOW} {candidate}"])


def encode_candidates(
    tokenizer: Any, candidates: Sequence[str], contexts: Sequence[str], max_length: int,
    input_format: str = "li",
) -> Dict[str, Any]:
    """Padded ``input_ids`` / ``attention_mask`` (/ ``token_type_ids``) tensors of every
    (candidate, context) input in ``input_format``, at most ``max_length`` tokens, the
    oldest context words cut first."""
    side = getattr(tokenizer, "truncation_side", "right")
    tokenizer.truncation_side = "left"  # keep the most recent dialogue turns
    try:
        if input_format == "zhang_tan":
            texts: List[str] = [zhang_tan_text(x, s) for s, x in zip(candidates, contexts)]
            return tokenizer(texts, padding=True, truncation=True, max_length=max_length,
                             return_tensors="pt")
        return tokenizer(list(candidates), list(contexts), padding=True,
                         truncation="longest_first", max_length=max_length, return_tensors="pt")
    finally:
        tokenizer.truncation_side = side
