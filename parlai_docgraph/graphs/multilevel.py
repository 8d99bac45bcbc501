"""
Zhang & Tan (3.2) multi-level document semantic graph: topic, segment and word nodes.

:func:`build_multilevel_graph` follows the paper's four steps on ``[(title, [sentence])]``:

1. Coreference (the rule-based resolver of :mod:`.coref` instead of neuralcoref): rather
   than rewriting the text, a pronoun's word unit takes the content of its referent (the
   longest non-pronoun mention of its cluster in the same passage), so step 4's
   same-content merging puts it into the referent's node; spans stay in the original text.
2. spaCy parse; punctuation is removed (also spaces, symbols and, by default, determiners:
   ``drop_pos``; determiners are our addition, or every passage's "the" becomes one hub
   node) and adjacent tokens with the same POS form one word unit ("Irving Berlin", "Music
   Box Theatre"). Dependency arcs between units become ``word_word`` edges (head -> dependent).
3. Conjunction sharing: a unit conjoined to another (``conj``) receives copies of all that
   unit's edges, ``word_word`` and ``prep_bridge`` ("owner and founder of the theatre":
   both bridge to "theatre"; the paper: words joined by conjunctions "share the same
   edges"). Preposition bridging: ``prep_bridge`` edge from the
   preposition's head to its object ("owner" -> "Music Box Theatre"). Conjunction (CCONJ)
   and preposition (ADP) units are then deleted with their edges.
4. One ``sentence`` (knowledge segment) node per sentence linked to its word nodes
   (``sentence_word``), one ``topic`` node per passage (text = title) linked to its segments
   (``topic_sentence``), ``next_sentence`` edges between adjacent segments of a passage, word
   units of equal content (case-insensitive) merged per passage (``mentions`` keeps every
   occurrence, ``text``/``span`` the first non-pronoun one), a ``self_loop`` edge on every
   node, and (``no_passage=True``) a topic with one segment, both of text
   :data:`~.knowledge_lines.NO_PASSAGE` (an extra passage/sentence index past the real
   ones), for WoW's "no knowledge" choice.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from parlai_docgraph.graphs.coref import PRONOUNS, RuleCoref
from parlai_docgraph.graphs.parsers.base import ParsedSentence
from parlai_docgraph.graphs.parsers.dep import load_pipeline, parse_doc
from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE
from parlai_docgraph.graphs.schema import SCHEMA_VERSION, DocumentGraph, GraphBuilder
from parlai_docgraph.graphs.semantic import Passages, check_passages

#: bumped whenever a change alters the graphs built (it is part of the store key)
BUILDER_VERSION = 3

DROP_POS: Tuple[str, ...] = ("PUNCT", "SPACE", "SYM", "DET")
DELETE_POS = frozenset({"CCONJ", "ADP"})

Unit = Tuple[int, int]  # (global sentence index, unit index inside the sentence)


def _units(
    doc: Any, drop_pos: Sequence[str]
) -> Tuple[List[Tuple[int, int, str]], Dict[int, int]]:
    """Word units of a parsed sentence: ``[(start, end, pos)]`` and token index -> unit."""
    units: List[Tuple[int, int, str]] = []
    unit_of: Dict[int, int] = {}
    for tok in doc:
        if tok.pos_ in drop_pos or tok.is_space or not tok.text.strip():
            continue
        prev = tok.i - 1
        if units and prev in unit_of and doc[prev].pos_ == tok.pos_:
            start, _, pos = units[-1]
            units[-1] = (start, tok.idx + len(tok.text), pos)
        else:
            units.append((tok.idx, tok.idx + len(tok.text), tok.pos_))
        unit_of[tok.i] = len(units) - 1
    return units, unit_of


def _unit_edges(doc: Any, unit_of: Dict[int, int]) -> List[Tuple[int, int, str]]:
    """Steps 2-3 inside one sentence: dependency, bridging and conjunction-shared edges."""
    edges = set()
    for tok in doc:
        head = tok.head.i
        if tok.i in unit_of and head in unit_of and unit_of[tok.i] != unit_of[head]:
            edges.add((unit_of[head], unit_of[tok.i], "word_word"))
        if tok.pos_ == "ADP" and tok.head.i in unit_of:
            for obj in tok.children:
                if obj.dep_ in ("pobj", "pcomp") and obj.i in unit_of:
                    edges.add((unit_of[tok.head.i], unit_of[obj.i], "prep_bridge"))
    deleted = {u for t, u in unit_of.items() if doc[t].pos_ in DELETE_POS}
    edges = {e for e in edges if e[0] not in deleted and e[1] not in deleted}
    for tok in doc:
        if tok.dep_ == "conj" and tok.i in unit_of and tok.head.i in unit_of:
            mine, other = unit_of[tok.i], unit_of[tok.head.i]
            if mine in deleted or other in deleted:
                continue
            for src, dst, kind in list(edges):  # dependency and bridge edges alike
                if src == other and dst != mine:
                    edges.add((mine, dst, kind))
                if dst == other and src != mine:
                    edges.add((src, mine, kind))
    return sorted(edges)


def _referents(
    parsed: Sequence[Any], passage_of: List[int]
) -> Dict[Tuple[int, int], Tuple[int, int]]:
    """Pronoun (sentence, start) -> referent head (sentence, char) in the same passage."""
    out: Dict[Tuple[int, int], Tuple[int, int]] = {}
    mentions = {(s, m.start, m.end): m for s, ps in enumerate(parsed) for m in ps.mentions()}
    for cluster in RuleCoref().resolve(parsed):
        for ref in cluster:
            m = mentions[ref]
            if m.text.lower() not in PRONOUNS:
                continue
            named = [
                r for r in cluster
                if mentions[r].text.lower() not in PRONOUNS
                and passage_of[r[0]] == passage_of[ref[0]]
            ]
            if named:
                best = max(named, key=lambda r: (len(mentions[r].text), -r[0], -r[1]))
                out[(ref[0], m.start)] = (best[0], mentions[best].head_start)
    return out


def build_multilevel_graph(
    passages: Passages,
    *,
    model: Optional[str] = None,
    coref: bool = True,
    no_passage: bool = True,
    self_loops: bool = True,
    drop_pos: Sequence[str] = DROP_POS,
    batch_size: int = 256,
    topic_nodes: bool = True,
    word_nodes: bool = True,
) -> DocumentGraph:
    """
    Build Zhang & Tan's multi-level graph of ``passages`` (see the module docstring).

    ``topic_nodes=False`` / ``word_nodes=False`` are the Table 3 ablations "w/o topic nodes"
    (no topic nodes nor ``topic_sentence`` edges) and "w/o word nodes" (segments only: no
    word nodes, no ``sentence_word`` / ``word_word`` / ``prep_bridge`` edges); segment nodes
    are the selection targets and always stay.
    """
    items = check_passages(passages)
    nlp = load_pipeline(model)
    b = GraphBuilder()
    sentences = [s for _, sents in items for s in sents]
    passage_of = [p for p, (_, sents) in enumerate(items) for _ in sents]
    todo = [i for i, s in enumerate(sentences) if s.strip()]
    docs: Dict[int, Any] = dict(
        zip(todo, nlp.pipe((sentences[i] for i in todo), batch_size=batch_size))
    )
    if coref:
        parsed = [parse_doc(docs[i]) if i in docs else ParsedSentence(text=sentences[i])
                  for i in range(len(sentences))]
        referent = _referents(parsed, passage_of)
    else:
        referent = {}
    units = {g: _units(docs[g], drop_pos) if g in docs else ([], {}) for g in range(len(sentences))}
    words = _WordKeys(sentences, units, referent)

    sentence_node: List[int] = []
    word_node: Dict[Unit, int] = {}
    g = 0
    titles = [t for t, _ in items] + ([NO_PASSAGE] if no_passage else [])
    bodies = [s for _, s in items] + ([[NO_PASSAGE]] if no_passage else [])
    for p, (title, sents) in enumerate(zip(titles, bodies)):
        tid = b.node(type="topic", text=title, passage=p) if topic_nodes else None
        groups: Dict[str, List[Unit]] = {}
        first = g
        for sent in sents:
            sid = b.node(type="sentence", text=sent, passage=p, sentence=g)
            sentence_node.append(sid)
            if tid is not None:
                b.edge(tid, sid, "topic_sentence")
            if g > first:
                b.edge(sentence_node[-2], sid, "next_sentence")
            if g < len(sentences) and word_nodes:
                for u, (_, _, pos) in enumerate(units[g][0]):
                    if pos not in DELETE_POS:
                        groups.setdefault(words.key(g, u), []).append((g, u))
            g += 1
        word_node.update(words.nodes(b, p, groups))
    for s in range(len(sentences)):
        for u in range(len(units[s][0])):
            if (s, u) in word_node:
                b.edge(sentence_node[s], word_node[(s, u)], "sentence_word")
        if s in docs and word_nodes:
            for src, dst, kind in _unit_edges(docs[s], units[s][1]):
                b.edge(word_node[(s, src)], word_node[(s, dst)], kind)
    if self_loops:
        for node in list(b.nodes):
            b.edge(node.id, node.id, "self_loop")
    options = {"coref": coref, "no_passage": no_passage, "self_loops": self_loops,
               "drop_pos": list(drop_pos), "topic_nodes": topic_nodes, "word_nodes": word_nodes}
    meta = dict(_meta(nlp.meta, options), num_passages=len(items), num_sentences=len(sentences),
                no_passage_node=sentence_node[-1] if no_passage else None)
    return DocumentGraph(nodes=b.nodes, edges=b.edges, meta=meta)


def _meta(info: Mapping[str, Any], options: Dict[str, Any]) -> Dict[str, Any]:
    """The graph's provenance: schema, builder, the spaCy pipeline (``info``: its meta),
    the coreference rules' version (when on) and the build ``options``."""
    return {
        "schema_version": SCHEMA_VERSION, "builder": "multilevel",
        "parser": f"dep:{info.get('lang', 'en')}_{info.get('name')}-{info.get('version')}",
        "coref": RuleCoref.version if options["coref"] else None,
        "options": options,
    }


class _WordKeys:
    """
    Word units grouped into word nodes: a unit's key is its lower-cased text, or, for a
    pronoun with a coreference referent, the text of the unit holding the referent's head
    (so "he" joins "Bach"); one word node per key and passage, named by its first
    non-pronoun member.
    """

    def __init__(self, sentences: Sequence[str], units: Dict[int, Any],
                 referent: Dict[Tuple[int, int], Tuple[int, int]]) -> None:
        self.sentences, self.units, self.referent = sentences, units, referent

    def key(self, g: int, u: int) -> str:
        """The key of unit ``u`` of sentence ``g``."""
        sentences, units = self.sentences, self.units
        start, end, _ = units[g][0][u]
        target = self.referent.get((g, start))
        if target is not None and sentences[g][start:end].lower() in PRONOUNS:
            tg, char = target
            for s2, e2, _ in units[tg][0]:
                if s2 <= char < e2:
                    return sentences[tg][s2:e2].lower()
        return sentences[g][start:end].lower()

    def nodes(self, b: GraphBuilder, p: int, groups: Dict[str, List[Unit]]) -> Dict[Unit, int]:
        """Adds passage ``p``'s word nodes, one per group; returns each unit's node."""
        sentences, units = self.sentences, self.units
        out: Dict[Unit, int] = {}
        for members in groups.values():
            refs = tuple((s, units[s][0][u][0], units[s][0][u][1]) for s, u in members)
            named = [r for r in refs if sentences[r[0]][r[1]:r[2]].lower() not in PRONOUNS]
            s, start, end = (named or list(refs))[0]
            nid = b.node(
                type="word", text=sentences[s][start:end], passage=p, sentence=s,
                span=(start, end), mentions=refs,
            )
            for unit in members:
                out[unit] = nid
        return out
