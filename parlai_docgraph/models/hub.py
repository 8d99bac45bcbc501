"""
The one loader of Hugging Face models and tokenizers, shared by the selector's encoder
(``--encoder-model``), the responder (``--responder-model``, a causal LM) and DialogGSR
(``--gsr-model``, seq2seq or causal):

* where a ``--*-model`` name points (:func:`resolve_source`: the bundled ``tiny`` asset,
  a local directory, a GGUF file or an installed GGUF model's short name (converted once
  into ``<datapath>/hf/<name>/`` by :mod:`.gguf`), the datapath's offline ``hf/`` folder
  or a hub name);
* :func:`load_tokenizer` and :func:`load_model` (``kind`` encoder, causal, seq2seq, or
  ``lm``: causal or seq2seq as the config says); a source without weights (``tiny``) or
  ``pretrained=False`` gets weights from a seed, the global RNG untouched
  (:func:`model_from_config`, which also builds a config object's model);
* the one error text (:func:`unavailable_message`), raised as the component's
  :class:`ModelUnavailable` subclass;
* how many positions a decoder-only LM can number (:func:`position_limit`,
  :func:`fit_window`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, List, Literal, Optional, Sequence, Tuple, Type

from parlai_docgraph.env import offline
from parlai_docgraph.models import gguf

TINY = "tiny"
#: the files any of which means "this directory has weights" (else: seeded fresh weights)
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
#: encoder: ``AutoModel``; causal / seq2seq: the LM heads; lm: whichever the config is
Kind = Literal["encoder", "causal", "seq2seq", "lm"]
KINDS = ("encoder", "causal", "seq2seq", "lm")


class ModelUnavailable(RuntimeError):
    """A ``--*-model`` cannot be loaded (typically a hub name while offline)."""


@dataclass(frozen=True)
class ModelOption:
    """
    One component's ``--*-model`` option: its name, the directory ``tiny`` stands for
    (config and tokenizer, no weights), the tokenizer files its error text names, the
    error class it raises and the offline alternative that text offers.
    """

    option: str
    tiny_dir: str
    tokenizer_files: str
    error: Type[ModelUnavailable] = ModelUnavailable
    offline_hint: str = ""
    reads_datapath: bool = True  # looks in ``<datapath>/hf/<name>`` (ParlAI PR #3027)

    def hint(self) -> str:
        return self.offline_hint or f"use the bundled offline model: {self.option} {TINY}"


def resolve_source(name: str, tiny_dir: str, datapath: Optional[str] = None) -> str:
    """
    ``tiny`` -> ``tiny_dir``; a ``.gguf`` file or a :data:`.gguf.KNOWN` short name -> its
    converted directory (:func:`.gguf.converted_dir`; :class:`.gguf.GgufUnavailable` says
    what to install); an existing directory as is; ``<datapath>/hf/<name>`` when that
    directory has a ``config.json`` (ParlAI PR #3027's offline layout); else ``name``.
    """
    if name == TINY:
        return tiny_dir
    if gguf.is_gguf_source(name):
        return gguf.converted_dir(name, datapath)
    if os.path.isdir(name):
        return name
    if datapath:
        local = os.path.join(datapath, "hf", name)
        if os.path.isfile(os.path.join(local, "config.json")):
            return local
    return name


def _source(name: str, option: ModelOption, datapath: Optional[str]) -> str:
    """:func:`resolve_source`, a GGUF failure raised as the component's error class."""
    try:
        return resolve_source(name, option.tiny_dir, datapath)
    except gguf.GgufUnavailable as e:
        raise option.error(f"{option.option} {name!r} could not be loaded: {e}") from e


def unavailable_message(
    option: ModelOption, name: str, datapath: Optional[str], error: Exception
) -> str:
    """Why ``--*-model name`` could not be loaded and the three ways to fix it."""
    flag = option.option
    where = os.path.join(datapath, "hf", name) if datapath else "<datapath>/hf/" + name
    where = f"{where} or any directory" if option.reads_datapath else "a directory"
    mode = ("offline (PARLAI_DOCGRAPH_OFFLINE, HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set)"
            if offline() else "online")
    what = ("it is a local directory that could not be read" if os.path.isdir(name)
            else "it is not a local directory and not in the Hugging Face cache")
    return (
        f"{flag} {name!r} could not be loaded {mode}: {what} ({type(error).__name__}: {error}).\n"
        f"Either (1) fetch it once with network access: `hf download {name}` (older "
        f"huggingface_hub: `huggingface-cli download {name}`), then rerun; "
        f"or (2) put config.json, model.safetensors (or pytorch_model.bin) and the tokenizer "
        f"files ({option.tokenizer_files}) in {where} and pass "
        f"{flag} /that/directory; or (3) {option.hint()}."
    )


def has_weights(directory: str) -> bool:
    """A directory with one of :data:`WEIGHT_FILES`."""
    return any(os.path.exists(os.path.join(directory, f)) for f in WEIGHT_FILES)


def _from(source: str) -> dict:
    # offline, a hub name resolves only from the local cache: never try the network
    return {"local_files_only": offline() or os.path.isdir(source)}


def load_tokenizer(
    name: str, option: ModelOption, datapath: Optional[str] = None, extra_special: Sequence[str] = ()
) -> Any:
    """
    The Hugging Face tokenizer of ``name`` (see :func:`resolve_source`), with
    ``extra_special`` added as special tokens where its vocabulary lacks them.
    """
    from transformers import AutoTokenizer

    source = _source(name, option, datapath)
    try:
        tok = AutoTokenizer.from_pretrained(source, **_from(source))
    except (OSError, ValueError) as e:
        raise option.error(unavailable_message(option, name, datapath, e)) from e
    vocab = tok.get_vocab()
    missing = list(dict.fromkeys(t for t in extra_special if t not in vocab))
    if missing:
        tok.add_special_tokens({"additional_special_tokens": missing}, replace_extra_special_tokens=False)
    return tok


def _auto_class(kind: str, config: Any) -> Any:
    import transformers

    if kind not in KINDS:
        raise ValueError(f"model kind {kind!r} is none of {KINDS}")
    if kind == "lm":
        kind = "seq2seq" if getattr(config, "is_encoder_decoder", False) else "causal"
    return {"encoder": transformers.AutoModel, "causal": transformers.AutoModelForCausalLM,
            "seq2seq": transformers.AutoModelForSeq2SeqLM}[kind]


def _without_pooler(kind: str, make: Callable[..., Any]) -> Any:
    """An encoder without its pooler where the class has one ([CLS] pooling reads the
    last hidden state; a pooler would get no gradient)."""
    if kind == "encoder":
        try:
            return make(add_pooling_layer=False)
        except TypeError:  # encoders without a pooler option (DistilBERT, ...)
            pass
    return make()


def _small_model_kwargs(config: Any) -> dict:
    """
    Eager attention for small models (``tiny``): on CPU, SDPA's per-call overhead makes
    a 128-dim model ~5x slower than the plain implementation; results are the same.
    """
    width = (getattr(config, "n_embd", None) or getattr(config, "d_model", None)
             or getattr(config, "hidden_size", None) or 1024)
    return {"attn_implementation": "eager"} if width < 512 else {}


def load_model(
    name: str,
    kind: Kind,
    option: ModelOption,
    datapath: Optional[str] = None,
    pretrained: bool = True,
    seed: int = 0,
    dtype: Any = None,
) -> Any:
    """
    The model of ``name`` (see :func:`resolve_source`) as ``kind``. A directory without
    weights (``tiny``), or ``pretrained=False`` for any source (the caller is about to
    load a checkpoint), gets fresh weights from ``seed`` without touching the global RNG.
    ``dtype`` (e.g. ``torch.bfloat16``) is the parameter dtype.
    """
    from transformers import AutoConfig

    source = _source(name, option, datapath)
    try:
        config = AutoConfig.from_pretrained(source, **_from(source))
    except (OSError, ValueError) as e:
        raise option.error(unavailable_message(option, name, datapath, e)) from e
    auto = _auto_class(kind, config)
    if pretrained and (not os.path.isdir(source) or has_weights(source)):
        kwargs = {**_from(source), **({} if dtype is None else {"dtype": dtype})}
        try:
            return _without_pooler(kind, lambda **kw: auto.from_pretrained(source, **kwargs, **kw))
        except (OSError, ValueError) as e:
            raise option.error(unavailable_message(option, name, datapath, e)) from e
    return model_from_config(config, kind, seed=seed, dtype=dtype)


def model_from_config(config: Any, kind: Kind, seed: int = 0, dtype: Any = None) -> Any:
    """
    A model of ``config`` (a ``transformers`` config object) as ``kind``, with fresh
    weights from ``seed``, the global RNG untouched: what :func:`load_model` gives a source
    without weights, and what the benchmarks build from published shapes.
    """
    import torch

    auto = _auto_class(kind, config)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _without_pooler(
            kind, lambda **kw: auto.from_config(config, **_small_model_kwargs(config), **kw))
    return model if dtype is None else model.to(dtype)


def position_limit(config) -> Optional[int]:
    """
    Tokens (prompt and generated) a decoder-only LM can take: GPT-2's ``n_positions``
    (a learned table: one more position is an index error) or ``max_position_embeddings``
    (Llama, Qwen: the trained context of their rotary positions). ``None`` for an
    encoder-decoder (T5's relative positions have no table to overflow).
    """
    if getattr(config, "is_encoder_decoder", False):
        return None
    for key in ("n_positions", "max_position_embeddings"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def fit_window(source: Sequence[int], wanted: int, limit: Optional[int]) -> Tuple[List[int], int]:
    """
    ``(source, budget)`` so that ``len(source) + budget <= limit``: the output keeps up to
    ``wanted`` tokens, at least ``min(wanted, limit // 2)``; the source gives way first and
    is cut from the left (the latest dialogue and the closing separator survive).
    """
    source = list(source)
    if limit is None:
        return source, wanted
    room = limit - min(wanted, limit // 2)
    if len(source) > room:
        source = source[len(source) - room :]
    return source, max(min(wanted, limit - len(source)), 0)
