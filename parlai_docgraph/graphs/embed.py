"""
Initial node embeddings from a frozen pretrained encoder (Li et al. 2.1; Zhang & Tan 3.3).

:func:`embed_graph` encodes every distinct sentence and title of a graph once (batched,
length-sorted, ``torch.no_grad``) with any Hugging Face encoder whose fast tokenizer gives
character offsets, then reads node vectors off the hidden states:

- ``sentence`` nodes: their sentence pooled by ``pooling``: ``cls``, the first token
  (``[CLS]`` / ``<s>``, Li et al. 2.1 with RoBERTa), or ``mean``, the mean over its tokens
  (the pooling sentence-transformers checkpoints such as all-MiniLM-L6-v2 are trained with:
  their first token is no sentence embedding; see :func:`encoder_pooling`);
- ``passage`` and ``topic`` nodes: their title, pooled the same way;
- ``concept`` and ``word`` nodes: the mean over the tokens overlapping any of their mention
  spans, in the context of each mention's sentence (a merged concept averages all its
  mentions' tokens; Li et al. 2.1: "for concept nodes, we average the embeddings of the
  tokens in the span").

``own_text`` names node types encoded from their own text alone and mean-pooled instead:
Zhang & Tan Eq. 1, :math:`h_k = \mathrm{Pooling}(f_{LM}(x_k))` with mean pooling, for the
topic and word nodes of the multi-level graph (``own_text=("topic", "word")``).

Beside those, ``mean_vectors`` holds every node's *mean*-pooled vector (concept and word
nodes: the same mention mean), whatever ``pooling`` is: the vectors that the question
relevance of :mod:`parlai_docgraph.models.selector.relevance` compares with the dialogue turn.

Texts longer than the encoder's limit are truncated; a node none of whose span tokens
survived (cut off by truncation, or characters the tokenizer drops) gets its sentence's
pooled vector instead and is listed in ``fallback`` as (node id, sentence index). An
empty text has only special tokens (or none: zero vector). Identical texts are encoded once
per call; with ``cache=`` (an :class:`~.embed_cache.EmbeddingCache`, or a folder for one keyed
by :func:`~.embed_cache.describe_encoder`) hidden states persist on disk across calls and
runs: cached texts are loaded, not encoded, and corrupt entries are recomputed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from parlai_docgraph.graphs.embed_cache import EmbeddingCache, describe_encoder
from parlai_docgraph.jsonio import read_json
from parlai_docgraph.graphs.schema import DocumentGraph

if TYPE_CHECKING:
    from torch import Tensor

CacheArg = Optional[Union[EmbeddingCache, str, Path]]
#: text pooling modes of sentence/title nodes and of the Eq. 1 context vector
POOLINGS = ("cls", "mean")


def encoder_pooling(model_dir: Optional[str]) -> str:
    """
    The pooling a checkpoint was trained with: ``mean`` for a sentence-transformers folder
    whose ``Pooling`` module (``1_Pooling/config.json``, or the one ``modules.json`` names)
    sets ``pooling_mode_mean_tokens``, else ``cls`` (Li et al.: the first token of RoBERTa).
    """
    if not model_dir or not os.path.isdir(model_dir):
        return "cls"
    folders = ["1_Pooling"]
    try:
        folders = [m.get("path", "") for m in read_json(os.path.join(model_dir, "modules.json"))
                   if str(m.get("type", "")).endswith("Pooling")] or folders
    except (OSError, ValueError, AttributeError):
        pass
    for folder in folders:
        try:
            config = read_json(os.path.join(model_dir, folder, "config.json"))
        except (OSError, ValueError):
            continue
        if config.get("pooling_mode_mean_tokens") and not config.get("pooling_mode_cls_token"):
            return "mean"
    return "cls"


def pool_tokens(hidden: "Tensor", mask: Optional["Tensor"], mode: str = "cls") -> "Tensor":
    r"""
    One vector per sequence of ``hidden`` (``[B, T, D]``): ``cls``, the first token
    :math:`h_1` (Li et al. Eq. 1 with RoBERTa), or ``mean``,
    :math:`\sum_j m_j h_j / \sum_j m_j` over the attention mask :math:`m` (``[B, T]``; all
    ones when ``None``), the pooling sentence-transformers encoders are trained with.
    A ``[B, D]`` input is returned as it is.
    """
    if hidden.dim() != 3:
        return hidden
    if mode == "cls":
        return hidden[:, 0]
    if mode != "mean":
        raise ValueError(f"pooling must be 'cls' or 'mean', got {mode!r}")
    if mask is None:
        return hidden.mean(dim=1)
    m = mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp_min(1.0)


@dataclass
class NodeEmbeddings:
    """
    ``vectors``: float tensor N x dim (row = node id, pooled by ``pooling``);
    ``fallback``: (node id, sentence); ``mean_vectors``: N x dim, every text node mean-pooled
    (equal to ``vectors`` with ``pooling="mean"``).
    """

    vectors: Any
    fallback: List[Tuple[int, int]] = field(default_factory=list)
    mean_vectors: Any = None


def position_offset(encoder: Any) -> int:
    """
    Rows of the position table no token can use. RoBERTa-family embeddings (RoBERTa,
    XLM-R, CamemBERT, ...) number real tokens from ``padding_idx + 1`` (position ids
    ``cumsum(mask) + padding_idx``), so ``max_position_embeddings`` (514 for roberta-base)
    includes ``pad + 1`` (2) rows; BERT numbers from 0 and has no ``padding_idx`` there.
    """
    embeddings = getattr(encoder, "embeddings", None)
    pad = getattr(embeddings, "padding_idx", None)
    return pad + 1 if isinstance(pad, int) and hasattr(embeddings, "position_embeddings") else 0


def encoder_limit(encoder: Any, tokenizer: Any, max_length: Optional[int]) -> int:
    """
    The token limit: the smallest of ``max_length`` (when given), the tokenizer's
    ``model_max_length`` and the positions the encoder can number
    (``max_position_embeddings`` less :func:`position_offset`), special tokens included.
    """
    limits = [max_length, getattr(tokenizer, "model_max_length", None)]
    positions = getattr(getattr(encoder, "config", None), "max_position_embeddings", None)
    if isinstance(positions, int):
        limits.append(positions - position_offset(encoder))
    usable = [n for n in limits if isinstance(n, int) and 0 < n < 1_000_000]
    return min(usable) if usable else 512


def encode_texts(
    texts: Sequence[str], encoder: Any, tokenizer: Any, *, batch_size: int = 32,
    max_length: Optional[int] = None, cache: CacheArg = None,
) -> Dict[str, Tuple[Any, List[Tuple[int, int]]]]:
    """
    Distinct text -> (hidden states T x dim, token character offsets), batched; texts found
    in ``cache`` (see the module docstring) are loaded instead of encoded.
    """
    import torch

    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("embed_graph needs a fast tokenizer (character offsets)")
    limit = encoder_limit(encoder, tokenizer, max_length)
    if cache is not None and not isinstance(cache, EmbeddingCache):
        cache = EmbeddingCache(cache, describe_encoder(encoder, tokenizer, limit))
    out: Dict[str, Tuple[Any, List[Tuple[int, int]]]] = {}
    distinct = sorted(set(texts), key=len)
    if cache is not None:
        for text in distinct:
            state = cache.load(text)
            if state is not None:
                out[text] = state
        distinct = [t for t in distinct if t not in out]
    if not distinct:
        return out
    device = next(encoder.parameters()).device
    encoder.eval()
    with torch.no_grad():
        for i in range(0, len(distinct), batch_size):
            batch = distinct[i : i + batch_size]
            enc = tokenizer(
                batch, return_offsets_mapping=True, truncation=True, max_length=limit,
                padding=True, return_tensors="pt",
            )
            offsets = enc.pop("offset_mapping").tolist()
            mask = enc["attention_mask"]
            enc = {k: v.to(device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
            hidden = encoder(**enc).last_hidden_state.float().cpu()
            for j, text in enumerate(batch):
                n = int(mask[j].sum())
                out[text] = (hidden[j, :n].clone(), [tuple(o) for o in offsets[j][:n]])
                if cache is not None:
                    cache.save(text, out[text])
    return out


def embed_graph(
    graph: DocumentGraph, encoder: Any, tokenizer: Any, *, batch_size: int = 32,
    max_length: Optional[int] = None, cache: CacheArg = None, pooling: str = "cls",
    own_text: Sequence[str] = (),
) -> NodeEmbeddings:
    """Initial vectors for every node of ``graph`` (see the module docstring); node types in
    ``own_text`` (not ``sentence``) are their own text's mean-pooled encoding."""
    import torch

    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    if "sentence" in own_text:
        raise ValueError("sentence nodes are their sentence's encoding; own_text is for the "
                         "other node types")
    sentences = graph.sentence_texts()
    titles = [n.text for n in graph.nodes if n.type in ("passage", "topic") or n.type in own_text]
    states = encode_texts(
        list(sentences.values()) + titles, encoder, tokenizer,
        batch_size=batch_size, max_length=max_length, cache=cache,
    )
    dim = encoder.config.hidden_size
    vectors = torch.zeros(len(graph.nodes), dim)
    means = torch.zeros(len(graph.nodes), dim)
    fallback: List[Tuple[int, int]] = []

    def text_vector(text: str, mode: str = pooling) -> Any:
        """The text's vector: first token or mean over its (unpadded) tokens."""
        hidden = states[text][0]
        if not len(hidden):
            return torch.zeros(dim)
        return pool_tokens(hidden[None], None, mode)[0]

    for node in graph.nodes:
        if node.type in own_text:
            vectors[node.id] = means[node.id] = text_vector(node.text, "mean")
        elif node.type in ("sentence", "passage", "topic"):
            vectors[node.id] = text_vector(node.text)
            means[node.id] = text_vector(node.text, "mean")
        else:
            picked = []
            for s, start, end in node.mentions:
                hidden, offsets = states[sentences[s]]
                rows = [
                    t for t, (a, b) in enumerate(offsets) if b > a and a < end and b > start
                ]
                if rows:
                    picked.append(hidden[rows])
            if picked:
                vectors[node.id] = means[node.id] = torch.cat(picked).mean(dim=0)
            else:
                vectors[node.id] = text_vector(sentences[node.sentence])
                means[node.id] = text_vector(sentences[node.sentence], "mean")
                fallback.append((node.id, node.sentence))
    return NodeEmbeddings(vectors=vectors, fallback=fallback, mean_vectors=means)


def mean_pooled(texts: Sequence[str], encoder: Any, tokenizer: Any, *, max_length: int = 256
                ) -> Any:
    r"""
    ``[len(texts), dim]`` unit-length mean-pooled embeddings,
    :math:`e(t) = \frac{\sum_j m_j h_j}{\lVert \sum_j m_j h_j \rVert}` over the attention mask
    :math:`m` (the pooling sentence-transformers checkpoints such as all-MiniLM-L6-v2 are
    trained with; their first token is not a sentence embedding), one batch, with gradients
    when the caller has them on; on the encoder's device.
    """
    import torch

    device = next(encoder.parameters()).device
    enc = tokenizer(list(texts), padding=True, truncation=True,
                    max_length=encoder_limit(encoder, tokenizer, max_length), return_tensors="pt")
    mask = enc["attention_mask"].to(device)
    hidden = encoder(input_ids=enc["input_ids"].to(device),
                     attention_mask=mask).last_hidden_state.float()
    return torch.nn.functional.normalize(pool_tokens(hidden, mask, "mean"), dim=-1)


def sentence_vectors(
    texts: Sequence[str], encoder: Any, tokenizer: Any, *, batch_size: int = 64,
    max_length: int = 256,
) -> Any:
    """:func:`mean_pooled` embeddings of ``texts`` in batches, without gradients."""
    import torch

    if not texts:
        return torch.zeros(0, encoder.config.hidden_size)
    with torch.no_grad():
        return torch.cat([mean_pooled(texts[i : i + batch_size], encoder, tokenizer,
                                      max_length=max_length)
                          for i in range(0, len(texts), batch_size)])


class FrozenSentenceVectors:
    """
    :func:`mean_pooled` embeddings of a frozen encoder, memoised per text in an
    :class:`~parlai_docgraph.memo.LRUMemo` of ``memo_size`` texts (``memo``): each distinct
    new text of a call is embedded once, in one batch, without gradients. The graph
    selector keeps one per frozen encoder, shared by node relevance (the turn) and the
    frozen similarity term (the turn and the candidates, which repeat across a document's
    questions).
    """

    def __init__(self, encoder: Any, tokenizer: Any, memo_size: int = 20000) -> None:
        from parlai_docgraph.memo import LRUMemo

        self.encoder, self.tokenizer = encoder, tokenizer
        self.memo: "LRUMemo[str, Any]" = LRUMemo(memo_size)

    def __call__(self, texts: Sequence[str]) -> Any:
        """``[len(texts), dim]`` unit-length embeddings, on the encoder's device."""
        import torch

        if not texts:
            return torch.zeros(0, self.encoder.config.hidden_size)
        found = {t: self.memo.get(t) for t in dict.fromkeys(texts)}
        new = [t for t, v in found.items() if v is None]
        if new:
            with torch.no_grad():
                for t, v in zip(new, mean_pooled(new, self.encoder, self.tokenizer)):
                    found[t] = self.memo.put(t, v)
        return torch.stack([found[t] for t in texts])
