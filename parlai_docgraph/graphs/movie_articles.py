"""
CMU_DoG's movie articles (Zhou et al., EMNLP 2018) as knowledge pools, and the pseudo
knowledge labels of its turns. No ParlAI imports.

An article (``wiki_data.json`` of ParlAI's build, one file of the release's ``WikiData``
folder) has four sections: ``"0"``, the movie's facts (a dict: ``introduction``, ``cast``,
``director``, ``genre``, ``year``, ``rating``, ``critical_response``, ``movieName``), and
``"1"``-``"3"``, key scenes of the plot (paragraphs). A turn was written while one section
was shown (its ``docIdx``). As passages (``(title, [sentence, ...])``):

* the facts (:func:`facts_passage`): titled with the movie name; the introduction's
  sentences, then one ``"key: value"`` line per fact in :data:`FACT_ORDER` (each entry of a
  list its own line); every text goes through the project's sentence splitter
  (:func:`~parlai_docgraph.graphs.corpus.split_sentences`), each fact line on its own, as
  ``--documents`` splits a Markdown list item;
* a scene (:func:`scene_passage`): titled ``"<movie> (plot)"``, its sentences.

A turn's pool (:func:`turn_pool`) is the section shown and, while a scene is shown, the
movie's facts after it, so the cast and director stay selectable throughout.

**Pseudo labels** (:func:`pseudo_label`). CMU_DoG names the section a reply was written
with, not a sentence. The label is the pool sentence with the highest unigram F1 against
the human reply (ParlAI's F1: its normalised tokens, :mod:`parlai_docgraph.reply_quality`;
the first such sentence on a tie), when that F1 reaches a threshold; else no knowledge
(``no_passages_used``). The threshold :data:`PSEUDO_LABEL_F1` was chosen on valid turns read
by hand (``docs/guide/datasets.md``, CMU_DoG).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from parlai_docgraph.graphs.corpus import Pool, split_sentences
from parlai_docgraph.memo import LRUMemo

#: the facts of section 0, in the order of their lines (``movieName`` is the title)
FACT_ORDER = ("director", "genre", "year", "cast", "rating", "critical_response")
#: the facts section's key for the introduction (sentences without a "key:" prefix)
INTRODUCTION = "introduction"
MOVIE_NAME = "movieName"
#: the pseudo label's minimum unigram F1 (chosen on valid: see the module docstring)
PSEUDO_LABEL_F1 = 0.25
#: a scene passage's title: the movie name and this suffix
SCENE_SUFFIX = " (plot)"


def fact_key(key: str) -> str:
    """``"critical_response"`` -> ``"critical response"``: a fact key as its line reads."""
    return key.replace("_", " ")


def _entries(value: Any) -> List[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if str(v).strip()]
    return [str(value)] if str(value).strip() else []


def movie_name(section0: Mapping[str, Any], default: str = "") -> str:
    """The movie name of a facts section (``default`` when it has none)."""
    name = section0.get(MOVIE_NAME)
    return str(name).strip() if name else default


def facts_passage(section0: Mapping[str, Any], title: str = "") -> Tuple[str, List[str]]:
    """Section 0 as one passage (module docstring); ``title`` when it names no movie."""
    sentences = list(split_sentences(str(section0.get(INTRODUCTION) or "")))
    for key in FACT_ORDER:
        for entry in _entries(section0.get(key)):
            sentences.extend(split_sentences(f"{fact_key(key)}: {entry}"))
    return movie_name(section0, title), sentences


def scene_passage(movie: str, text: str) -> Tuple[str, List[str]]:
    """A scene section as one passage (module docstring)."""
    return f"{movie}{SCENE_SUFFIX}", list(split_sentences(text))


def section_passage(section: Any, movie: str) -> Optional[Tuple[str, List[str]]]:
    """One section (section 0's dict or a scene's text) as a passage; ``None`` for an empty
    or absent section (the speaker could not see the article)."""
    if isinstance(section, Mapping):
        passage = facts_passage(section, movie)
    elif isinstance(section, str) and section.strip():
        passage = scene_passage(movie, section)
    else:
        return None
    return passage if passage[1] else None


def turn_pool(section: Any, movie: str, facts: Optional[Tuple[str, List[str]]] = None) -> Pool:
    """
    The knowledge pool of a turn that showed ``section``: that section's passage and, when
    the section is a scene, ``facts`` (the movie's section 0 passage) after it.
    """
    shown = section_passage(section, movie)
    pool: Pool = [shown] if shown is not None else []
    if facts is not None and facts[1] and not isinstance(section, Mapping):
        pool.append((facts[0], list(facts[1])))
    return pool


def article_pool(article: Mapping[str, Any]) -> Pool:
    """
    A whole article as a pool (a chat about the movie with no section shown: the topic
    worlds): the facts, then the three scenes as one ``"<movie> (plot)"`` passage.
    """
    section0 = article.get("0") or {}
    facts = facts_passage(section0) if isinstance(section0, Mapping) else ("", [])
    movie = facts[0]
    plot: List[str] = []
    for key in ("1", "2", "3"):
        text = article.get(key)
        if isinstance(text, str):
            plot.extend(split_sentences(text))
    pool: Pool = [facts] if facts[1] else []
    if plot:
        pool.append((f"{movie}{SCENE_SUFFIX}", plot))
    return pool


@dataclass(frozen=True)
class PseudoLabel:
    """The pseudo label of one turn: the chosen sentence's ``(passage, sentence)`` position
    (``None``: no knowledge) and the best F1 found (whether or not it passed)."""

    position: Optional[Tuple[int, int]]
    f1: float

    def sentence(self, pool: Pool) -> Optional[str]:
        if self.position is None:
            return None
        p, s = self.position
        return pool[p][1][s]

    def title(self, pool: Pool) -> Optional[str]:
        return None if self.position is None else pool[self.position[0]][0]


class PoolWords:
    """
    The normalised words of every sentence of the pools seen, as counts (a memo: the turns
    of a conversation share their pools), so a reply is scored against each sentence
    without normalising the sentences again.
    """

    def __init__(self, size: int = 1 << 16) -> None:
        # CMU_DoG's 30 articles hold a few thousand sentences: the bound is never reached there
        self._memo: LRUMemo[str, Tuple[Counter, int]] = LRUMemo(size)

    def __call__(self, sentence: str) -> Tuple[Counter, int]:
        from parlai_docgraph.reply_quality import words

        def count() -> Tuple[Counter, int]:
            tokens = words(sentence)
            return Counter(tokens), len(tokens)

        return self._memo.get_or_make(sentence, count)


def counted_f1(reply: Tuple[Counter, int], sentence: Tuple[Counter, int]) -> float:
    """ParlAI's unigram F1 (``F1Metric._prec_recall_f1_score``, the same formula) of two
    word counts: computed here from counts made once per sentence, because calling ParlAI's
    function rebuilds both counts for every sentence (95 of the 121 s that the teacher took
    to read CMU_DoG's 56k train turns; ``tests/test_cmu_dog.py`` holds the two equal)."""
    same = sum((reply[0] & sentence[0]).values())
    if same == 0:
        return 0.0
    precision, recall = same / reply[1], same / sentence[1]
    return 2 * precision * recall / (precision + recall)


def pseudo_label(reply: str, pool: Pool, threshold: float = PSEUDO_LABEL_F1,
                 pool_words: Optional[PoolWords] = None) -> PseudoLabel:
    """
    The pool sentence with the highest unigram F1 against ``reply`` (the first on a tie),
    or no knowledge when that F1 is below ``threshold`` (module docstring).
    """
    from parlai_docgraph.reply_quality import words

    pool_words = pool_words or PoolWords()
    tokens = words(reply)
    counted = (Counter(tokens), len(tokens))
    best, best_f1 = None, 0.0
    for p, (_, sentences) in enumerate(pool):
        for s, sentence in enumerate(sentences):
            f1 = counted_f1(counted, pool_words(sentence))
            if f1 > best_f1:
                best, best_f1 = (p, s), f1
    if best is None or best_f1 < threshold:
        return PseudoLabel(None, best_f1)
    return PseudoLabel(best, best_f1)


def flat_index(pool: Pool, position: Optional[Tuple[int, int]]) -> int:
    """The sentence's index over the pool's sentences in order (-1 for ``None``)."""
    if position is None:
        return -1
    p, s = position
    return sum(len(sents) for _, sents in pool[:p]) + s


def pool_lines(pool: Pool, separator: str = " ") -> List[str]:
    """``"{title}{separator}{sentence}"`` of every sentence of the pool, in order."""
    return [f"{title}{separator}{sentence}" for title, sents in pool for sentence in sents]

