"""
Display names of concept nodes: the noun phrases and names a user reads as ``top_concepts``.

Graph nodes keep the parser's mention text (``no room``, ``their first album``, ``it`` or a
predicate such as ``recorded``) because coreference and role edges need it. Shown to a user,
predicates and pronouns are not concepts and a leading quantifier or possessive is noise, so
:func:`concept_label` maps a node to what names it, or ``None`` when nothing does. Stop words
come from spaCy's English list (no pipeline load needed).
"""

from __future__ import annotations

from typing import Optional

from parlai_docgraph.nlp import english_stop_words

#: leading words that quantify or point at a thing without naming it (``no room`` -> ``room``)
LEADING = frozenset({
    "a", "an", "the", "this", "that", "these", "those", "no", "any", "some", "every", "each",
    "all", "both", "either", "neither", "another", "such", "my", "your", "his", "her", "its",
    "our", "their", "whose", "which", "what",
})
_PUNCT = "\"'.,;:!?()[]{}"


def concept_label(text: str, kind: Optional[str] = None) -> Optional[str]:
    """
    The display name of a concept (or word) node: ``text`` without leading quantifiers,
    possessives and punctuation; ``None`` for a predicate node (``kind == "predicate"``) or
    when only stop words (pronouns, ``one``, ``there``) or punctuation are left.
    """
    if kind == "predicate":
        return None
    words = [w.strip(_PUNCT) for w in text.split()]
    words = [w for w in words if w]
    while words and words[0].lower() in LEADING:
        words = words[1:]
    if not words or all(w.lower() in english_stop_words() or not any(c.isalnum() for c in w)
                        for w in words):
        return None
    return " ".join(words)
