"""
Entity linking of dialogue text to KG entity names, from that text alone.

:class:`EntityLinker` finds mentions of KG entities in a string using nothing but the
string and the entity-name list (no gold paths, no entities of later turns: the
DialogGSR preprocessing used every path of the whole dialogue as its linking
dictionary, a leakage this module does not reproduce).

Matching rules:

* **Normalisation.** Text and names are Unicode NFKC-normalised and case-folded
  (``str.casefold``) before tokenisation with a blank English spaCy tokenizer; mentions
  are reported with character spans into the *original* text (normalisation that
  changes lengths, e.g. ``ﬁ`` -> ``fi`` or ``ß`` -> ``ss``, is mapped back).
* **Disambiguation suffixes and qualifiers.** A trailing `` #<n>`` (OpenDialKG's
  ``The Unborn (Horror Film) #4``) is stripped for matching; a name ending in a
  ``(qualifier)`` (``Zodiac (Crime Fiction Film)``, 5,977 real names) also matches
  without it (``Zodiac``), since dialogues say the bare title. Several KG names sharing
  one matching key are ranked: names matching in full before qualifier-stripped ones;
  within each, the un-suffixed name first, then increasing ``#n``; then the name itself
  (determinism). The mention links to the first and lists all of them, best first, in
  :attr:`Mention.alternatives`.
* **Token boundaries, longest match first.** A name matches only whole tokens; among
  overlapping matches the longest (in tokens) wins, then the earliest
  (``spacy.util.filter_spans``), so ``Iron Man 2`` beats ``Iron Man``.
* **Stop rule.** A name is never linked when its key is shorter than ``min_chars``
  (default 2, so no single characters), when every token is a stop word or punctuation
  (spaCy's English ``STOP_WORDS`` plus ``extra_stop_words``, by default
  :data:`DIALOGUE_STOP_WORDS`: ``It``, ``The``, ``Up``, ``Her``, ``Yes``; also ``The
  Who``, a known loss) or, unless ``link_numbers``, when it has no
  letter at all (``2``, ``1999``, ``24/7``: years would otherwise link in every date).

Matcher choice, measured on the real 100,813 OpenDialKG names (this machine,
2026-11-22): spaCy's ``PhraseMatcher`` (already a dependency) over the blank tokenizer
builds in 4.9-6.1 s (103,437 keys incl. qualifier aliases; shared machine) and links a
typical turn in 0.03-0.1 ms. ``ahocorasick-rs`` (``LeftmostLongest``) built the bare
keys in ~1.3 s and matched in ~1 us, but it matches substrings (``love`` inside
``loved``, ``d`` in ``do``) and its leftmost-longest pass lets such a match shadow a
valid one, so token boundaries and the stop rule would need a second pass by hand. The
build is a one-off per process and linking is far below model cost: no new dependency.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from parlai_docgraph.nlp import blank_english, english_stop_words, longest_spans, phrase_matcher

_SUFFIX = re.compile(r"\s+#(\d+)\s*$")
_QUALIFIER = re.compile(r"\s*\([^()]*\)$")
_KEY = "KG_ENTITY"
Rank = Tuple[int, int, int, str]
#: Conversational words that are also KG names (the band ``Yes``, songs ``Thanks``,
#: ``Hello``, ...): linked only if a caller passes ``extra_stop_words=()``.
DIALOGUE_STOP_WORDS = frozenset(
    "yes yeah yep yup no nope ok okay thanks thank hi hello hey sure great cool wow nice "
    "awesome oh ah hmm lol please good right maybe alright welcome".split()
)


@dataclass(frozen=True)
class Mention:
    """A linked span: ``text[start:end]`` mentions KG entity ``entity``."""

    start: int
    end: int
    surface: str
    entity: str
    alternatives: Tuple[str, ...] = ()


def split_suffix(name: str) -> Tuple[str, Optional[int]]:
    """``("The Unborn (Horror Film)", 4)`` for ``"The Unborn (Horror Film) #4"``."""
    m = _SUFFIX.search(name)
    if m is None:
        return name, None
    return name[: m.start()], int(m.group(1))


def normalize(text: str) -> str:
    """NFKC + case-fold (the form names and text are compared in)."""
    return unicodedata.normalize("NFKC", text).casefold()


def normalize_with_offsets(text: str) -> Tuple[str, List[int], List[int]]:
    """
    :func:`normalize` of ``text`` with, per output character, the start and end offsets
    in ``text`` of the input it came from. Normalisation is applied per base character
    with its following combining marks, so composition (``e`` + U+0301 -> ``é``) works.
    """
    if text.isascii():
        out = text.lower()
        idx = list(range(len(text)))
        return out, idx, [i + 1 for i in idx]
    pieces: List[str] = []
    starts: List[int] = []
    ends: List[int] = []
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1
        piece = normalize(text[i:j])
        pieces.append(piece)
        starts.extend([i] * len(piece))
        ends.extend([j] * len(piece))
        i = j
    return "".join(pieces), starts, ends


def _keys_of(name: str) -> List[Tuple[str, Rank]]:
    """
    Matching texts of KG name ``name`` with their rank (lower = preferred): the name
    without its ``#n`` suffix, then, for a trailing ``(qualifier)``, the name without it.
    """
    base, num = split_suffix(name)
    suffix = (0, 0) if num is None else (1, num)
    key = normalize(base).strip()
    if not key:
        return []
    out = [(key, (0,) + suffix + (name,))]
    m = _QUALIFIER.search(key)
    if m is not None and m.start() > 0:
        out.append((key[: m.start()].strip(), (1,) + suffix + (name,)))
    return out


class EntityLinker:
    """
    Links KG entity mentions in text (see the module docstring for the rules).

    ``names`` is the KG's entity list (e.g. :attr:`KnowledgeGraph.entities`); empty names
    and names failing the stop rule are ignored (:attr:`excluded` counts the matching
    texts dropped by the stop rule).
    """

    def __init__(
        self,
        names: Iterable[str],
        min_chars: int = 2,
        link_numbers: bool = False,
        extra_stop_words: Iterable[str] = DIALOGUE_STOP_WORDS,
    ) -> None:
        self.min_chars = min_chars
        self.link_numbers = link_numbers
        self.stop_words = frozenset(normalize(w) for w in english_stop_words()) | frozenset(
            normalize(w) for w in extra_stop_words
        )
        self._nlp = blank_english()
        ranked: Dict[str, List[Tuple[Rank, str]]] = {}
        for name in names:
            for text, rank in _keys_of(name):
                ranked.setdefault(text, []).append((rank, name))
        texts = list(ranked)
        by_key: Dict[str, List[Tuple[Rank, str]]] = {}
        patterns = []
        self.excluded = 0
        for text, doc in zip(texts, self._nlp.tokenizer.pipe(texts, batch_size=2000)):
            key = " ".join(t.text for t in doc)
            if not key or not self._linkable(doc):
                self.excluded += 1
                continue
            if key not in by_key:
                by_key[key] = []
                patterns.append(doc)
            by_key[key].extend(ranked[text])
        self._groups: Dict[str, Tuple[str, ...]] = {
            k: tuple(dict.fromkeys(n for _, n in sorted(v))) for k, v in by_key.items()
        }
        self._matcher = phrase_matcher(self._nlp, "LOWER")
        self._matcher.add(_KEY, patterns)

    def _linkable(self, doc) -> bool:
        """The stop rule: long enough, has a content word, and (by default) a letter."""
        text = doc.text
        if len(text.replace(" ", "")) < self.min_chars:
            return False
        if not self.link_numbers and not any(c.isalpha() for c in text):
            return False
        return any(not (t.is_punct or t.is_space or t.text in self.stop_words) for t in doc)

    def candidates(self, surface: str) -> Tuple[str, ...]:
        """KG names a surface string would link to, best first (empty if none)."""
        doc = self._nlp.make_doc(normalize(surface).strip())
        return self._groups.get(" ".join(t.text for t in doc), ())

    def link(self, text: str) -> List[Mention]:
        """Non-overlapping mentions in ``text``, in text order."""
        if not text:
            return []
        norm, starts, ends = normalize_with_offsets(text)
        doc = self._nlp.make_doc(norm)
        spans = longest_spans(self._matcher(doc, as_spans=True))
        out: List[Mention] = []
        for span in sorted(spans, key=lambda s: s.start):
            names = self._groups.get(" ".join(t.text for t in span))
            if not names:  # tokenisation in context differs from the name's own
                continue
            a, b = span.start_char, span.end_char
            s, e = starts[a], ends[b - 1]
            out.append(Mention(s, e, text[s:e], names[0], names))
        return out

    def link_turns(self, turns: Sequence[str]) -> List[str]:
        """Distinct linked entities over ``turns``, in order of first mention."""
        seen: Dict[str, None] = {}
        for turn in turns:
            for m in self.link(turn):
                seen.setdefault(m.entity)
        return list(seen)
