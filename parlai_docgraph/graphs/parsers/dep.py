"""
spaCy dependency parses mapped to AMR-style predicate-argument structures (offline default).

Role mapping (dependency label of the argument's head -> role):

- ``nsubj`` -> ARG0, ``agent`` (by-phrase of a passive) -> its object as ARG0
- ``nsubjpass``, ``dobj``, ``attr``, ``oprd`` -> ARG1
- ``dative`` / ``iobj`` -> ARG2 (for a ``to``-phrase its object)
- objects of prepositions attached to the predicate -> ``obl`` (AMR non-core roles)
- ``poss`` under an argument -> a ``poss`` relation argument -> possessor
- ``appos`` under an argument -> an apposition pair (coreferent, no role edge)

Conjoined arguments get the same role; a conjoined verb without a subject inherits its
head's subject; relative pronouns (``who``/``which``/``that``) are replaced by the noun the
relative clause modifies; a participle modifying a noun (``acl``) takes that noun as ARG1
(past participle) or ARG0 (present participle). Each argument is grounded to its noun chunk
without leading determiners, or to the head with its compound/modifier left dependents.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.memo import LRUMemo
from parlai_docgraph.nlp import load_spacy
from parlai_docgraph.graphs.parsers.base import Argument, Mention, ParsedSentence, Parser, Predicate, Relation

NOMINAL = frozenset({"NOUN", "PROPN", "PRON"})
SUBJECT_ROLES = {"nsubj": "ARG0", "nsubjpass": "ARG1"}
OBJECT_ROLES = {"dobj": "ARG1", "attr": "ARG1", "oprd": "ARG1", "dative": "ARG2", "iobj": "ARG2"}
RELATIVE_PRONOUNS = frozenset({"who", "whom", "which", "that"})
LEFT_MODIFIERS = frozenset({"compound", "amod", "nummod", "flat", "nmod", "poss", "case"})
DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those"})


def load_pipeline(model: Optional[str] = None) -> Any:
    """
    The spaCy pipeline of the dependency parser: ``model`` when given, else the first
    installed of :data:`~parlai_docgraph.nlp.MODEL_CANDIDATES`, loaded once per process
    (:func:`parlai_docgraph.nlp.load_spacy`). ``RuntimeError`` when none is installed.
    """
    return load_spacy(model)


def _span_bounds(tok: Any, chunk_of: Dict[int, Any]) -> Tuple[int, int]:
    """Token index range [first, last] of the mention headed by ``tok``."""
    chunk = chunk_of.get(tok.i)
    if chunk is not None and chunk.root.i == tok.i:
        first, last = chunk.start, chunk.end - 1
    else:
        first = last = tok.i
        for child in reversed(list(tok.lefts)):
            if child.dep_ not in LEFT_MODIFIERS or child.right_edge.i != first - 1:
                break
            first = child.left_edge.i
    doc = tok.doc
    while first < last and (
        doc[first].lower_ in DETERMINERS and doc[first].dep_ in ("det", "predet")
        or doc[first].is_punct or doc[first].is_space
    ):
        first += 1
    while last > first and (doc[last].is_punct or doc[last].is_space):
        last -= 1
    return first, last


def token_mention(tok: Any, chunk_of: Dict[int, Any]) -> Mention:
    """The :class:`Mention` headed by ``tok``, with its coreference features."""
    doc = tok.doc
    first, last = _span_bounds(tok, chunk_of)
    start, end = doc[first].idx, doc[last].idx + len(doc[last].text)
    number = (tok.morph.get("Number") or [""])[0]
    if tok.tag_ in ("NNS", "NNPS"):
        number = "Plur"
    determiner = next((c.lower_ for c in tok.children if c.dep_ == "det"), "")
    name = tuple(
        t.lower_ for t in doc[first : last + 1] if t.pos_ == "PROPN" and t.tag_ != "POS"
    )
    modifiers = tuple(
        c.lower_ for c in tok.children if c.dep_ in ("amod", "nummod", "compound")
    )
    return Mention(
        start=start, end=end, text=doc.text[start:end], head=tok.text,
        head_lemma=(tok.lemma_ or tok.text).lower(), pos=tok.pos_, ent=tok.ent_type_,
        number=number, gender=(tok.morph.get("Gender") or [""])[0], name=name,
        modifiers=modifiers, determiner=determiner,
        possessive=tok.pos_ == "PRON" and (tok.tag_ == "PRP$" or tok.dep_ == "poss"),
        head_start=tok.idx,
    )


def _resolve_relative(tok: Any, pred: Any) -> Optional[Any]:
    """A relative pronoun argument stands for the noun its clause modifies."""
    if tok.lower_ in RELATIVE_PRONOUNS and tok.tag_ in ("WDT", "WP", "WP$", "IN", "DT"):
        if pred.dep_ == "relcl" and pred.head.pos_ in NOMINAL:
            return pred.head
        return None
    return tok


def _raw_arguments(pred: Any) -> List[Tuple[str, Any]]:
    """(role, head token) pairs of ``pred`` before conjunct expansion."""
    found: List[Tuple[str, Any]] = []
    for child in pred.children:
        dep = child.dep_
        if dep in SUBJECT_ROLES:
            found.append((SUBJECT_ROLES[dep], child))
        elif dep in OBJECT_ROLES:
            if child.pos_ == "ADP":
                found.extend(("ARG2", g) for g in child.children if g.dep_ == "pobj")
            else:
                found.append((OBJECT_ROLES[dep], child))
        elif dep == "agent":
            found.extend(("ARG0", g) for g in child.children if g.dep_ == "pobj")
        elif dep == "prep":
            found.extend(("obl", g) for g in child.children if g.dep_ == "pobj")
    has_subject = any(c.dep_ in SUBJECT_ROLES for c in pred.children)
    if not has_subject and pred.dep_ == "conj" and pred.head.pos_ in ("VERB", "AUX"):
        found.extend(
            (SUBJECT_ROLES[c.dep_], c) for c in pred.head.children if c.dep_ in SUBJECT_ROLES
        )
    elif not has_subject and pred.dep_ == "acl" and pred.head.pos_ in NOMINAL:
        found.append(("ARG1" if pred.tag_ == "VBN" else "ARG0", pred.head))
    return found


def _is_predicate(tok: Any) -> bool:
    """Verbs, and auxiliaries that head their clause (copulas)."""
    return tok.pos_ == "VERB" or (tok.pos_ == "AUX" and tok.dep_ not in ("aux", "auxpass"))


def parse_doc(doc: Any) -> ParsedSentence:
    """Build the :class:`ParsedSentence` of one spaCy ``Doc``."""
    chunk_of: Dict[int, Any] = {}
    for chunk in doc.noun_chunks:
        for i in range(chunk.start, chunk.end):
            chunk_of[i] = chunk
    cache: Dict[int, Mention] = {}

    def mention(tok: Any) -> Mention:
        if tok.i not in cache:
            cache[tok.i] = token_mention(tok, chunk_of)
        return cache[tok.i]

    parsed = ParsedSentence(text=doc.text)
    heads = set()
    for tok in doc:
        if not _is_predicate(tok):
            continue
        args: List[Argument] = []
        seen = set()
        for role, arg in _raw_arguments(tok):
            arg = _resolve_relative(arg, tok)
            if arg is None:
                continue
            for member in (arg,) + tuple(arg.conjuncts):
                if member.pos_ in NOMINAL and (role, member.i) not in seen:
                    seen.add((role, member.i))
                    args.append(Argument(role, mention(member)))
                    heads.add(member.i)
        if args:
            end = tok.idx + len(tok.text)
            parsed.predicates.append(
                Predicate(tok.idx, end, tok.text, (tok.lemma_ or tok.text).lower(), tuple(args))
            )
    for i in sorted(heads):
        for child in doc[i].children:
            if child.dep_ == "poss" and child.pos_ in NOMINAL:
                parsed.relations.append(Relation("poss", mention(doc[i]), mention(child)))
            elif child.dep_ == "appos" and child.pos_ in ("NOUN", "PROPN"):
                parsed.appositions.append((mention(doc[i]), mention(child)))
    return parsed


class DepParser(Parser):
    """
    spaCy-based parser; the pipeline is loaded lazily, once per process.

    ``memo_size`` > 0 keeps the parses of that many recent distinct sentences on this
    instance, so re-building a graph with extra passages (``extend_document_graph``) parses
    only the new sentences; ``parsed_sentences`` counts sentences actually run through spaCy.
    """

    name = "dep"

    def __init__(
        self, model: Optional[str] = None, batch_size: int = 256, memo_size: int = 0
    ) -> None:
        self.model = model
        self.batch_size = batch_size
        self.parsed_sentences = 0
        self._memo: LRUMemo[str, ParsedSentence] = LRUMemo(memo_size)

    @property
    def nlp(self) -> Any:
        """The (cached) spaCy pipeline."""
        return load_pipeline(self.model)

    def describe(self) -> str:
        """``dep:<pipeline name>-<version>`` for graph metadata."""
        meta = self.nlp.meta
        return f"dep:{meta.get('lang', 'en')}_{meta.get('name', '?')}-{meta.get('version', '?')}"

    def parse(self, sentences: Sequence[str]) -> List[ParsedSentence]:
        """Parse all sentences in batches with ``nlp.pipe``; empty ones parse to nothing."""
        texts = list(sentences)
        out: List[Optional[ParsedSentence]] = [None] * len(texts)
        todo: Dict[str, List[int]] = {}
        for i, text in enumerate(texts):
            if not text.strip():
                out[i] = ParsedSentence(text=text)
            elif text in self._memo:
                out[i] = self._memo.get(text)
            else:
                todo.setdefault(text, []).append(i)
        docs = self.nlp.pipe(iter(todo), batch_size=self.batch_size)
        for (text, where), doc in zip(todo.items(), docs):
            parsed = parse_doc(doc)
            self.parsed_sentences += 1
            for i in where:
                out[i] = parsed
            self._memo.put(text, parsed)
        return [p for p in out if p is not None]
