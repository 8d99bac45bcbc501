"""
Parser-neutral predicate-argument structures that graph builders and coreference consume.

Every parser backend turns a batch of sentence strings into one :class:`ParsedSentence`
per sentence: the predicates with their role-labelled arguments, each argument a
:class:`Mention` grounded to a character span of that sentence and carrying the few
features the rule-based coreference resolver needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple


@dataclass(frozen=True)
class Mention:
    """
    A concept mention: ``text == sentence[start:end]``.

    ``head``: head word; ``head_lemma``: its lowercased lemma; ``pos``: coarse POS of the
    head (``PROPN``, ``NOUN``, ``PRON``, ...); ``ent``: named-entity label or ``""``;
    ``number``/``gender``: ``"Sing"``/``"Plur"`` and ``"Masc"``/``"Fem"``/``"Neut"`` or ``""``;
    ``name``: lowercased proper-name tokens (without possessive markers);
    ``modifiers``: lowercased modifier words of the head (adjectives, numbers, compounds);
    ``determiner``: lowercased determiner or ``""``; ``possessive``: a possessive pronoun;
    ``head_start``: character offset of the head word (-1 when unknown).
    """

    start: int
    end: int
    text: str
    head: str
    head_lemma: str
    pos: str
    ent: str = ""
    number: str = ""
    gender: str = ""
    name: Tuple[str, ...] = ()
    modifiers: Tuple[str, ...] = ()
    determiner: str = ""
    possessive: bool = False
    head_start: int = -1

    @property
    def key(self) -> Tuple[int, int]:
        """Identity of the mention inside its sentence."""
        return (self.start, self.end)


@dataclass(frozen=True)
class Argument:
    """A role-labelled argument (role from ``schema.ROLE_EDGE_TYPES``)."""

    role: str
    mention: Mention


@dataclass(frozen=True)
class Predicate:
    """A predicate grounded to ``sentence[start:end] == text`` with its arguments."""

    start: int
    end: int
    text: str
    lemma: str
    arguments: Tuple[Argument, ...] = ()


@dataclass
class Relation:
    """A role edge between two argument mentions without a predicate (e.g. ``poss``)."""

    role: str
    src: Mention
    dst: Mention


@dataclass
class ParsedSentence:
    """The predicate-argument structure of one sentence."""

    text: str
    predicates: List[Predicate] = field(default_factory=list)
    relations: List[Relation] = field(default_factory=list)
    #: ``(argument, appositive)`` pairs ("the engineer John Smeaton"): coreferent for
    #: coreference, no role edge in the graph.
    appositions: List[Tuple[Mention, Mention]] = field(default_factory=list)

    def mentions(self) -> List[Mention]:
        """Distinct argument mentions in text order."""
        seen = {}
        for pred in self.predicates:
            for arg in pred.arguments:
                seen.setdefault(arg.mention.key, arg.mention)
        for rel in self.relations:
            seen.setdefault(rel.src.key, rel.src)
            seen.setdefault(rel.dst.key, rel.dst)
        for head, appos in self.appositions:
            seen.setdefault(head.key, head)
            seen.setdefault(appos.key, appos)
        return [seen[k] for k in sorted(seen)]


class Parser:
    """Interface of a parser backend: ``name`` (recorded in graph meta) and ``parse``."""

    name: str = "base"

    def parse(self, sentences: Sequence[str]) -> List[ParsedSentence]:
        """One :class:`ParsedSentence` per input sentence, in order."""
        raise NotImplementedError

    def describe(self) -> Optional[str]:
        """A version string for graph metadata."""
        return self.name

    def cache_token(self, sentences: Sequence[str]) -> str:
        """
        What the store key must depend on for a graph of ``sentences``: the backend's
        version, plus any input the backend reads besides the text (see AMRParser).
        """
        return str(self.describe())
