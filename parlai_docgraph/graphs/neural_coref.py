"""
Neural coreference backend: coreferee (spaCy component) chains mapped to parser mentions.

:class:`CorefereeCoref` runs `coreferee <https://github.com/richardpaulhudson/coreferee>`_
over the whole document set (every sentence of every passage joined by spaces, so chains
cross sentence and passage boundaries, as the rule resolver's do) and returns the same
clusters as :class:`~.coref.RuleCoref`: tuples of ``(sentence, start, end)`` refs of parser
mentions, two or more per cluster, in text order. Graph metadata records it as
``coreferee-<version>:<spaCy pipeline>-<version>``.

Mapping (:func:`chains_to_clusters`): coreferee gives, per chain, mentions as lists of root
token indexes (one token, or several for a coordination such as "Peter and Mary"). A
one-token mention maps to the parser mention of its sentence whose head is that token, else
to the shortest parser mention whose span contains it; a coordination maps to a parser
mention containing all its tokens (never to one conjunct). Mentions that map to no parser
mention are counted in :attr:`CorefereeCoref.last_stats` (``unmapped``), never silently
merged; chains that share a parser mention are united; clusters with fewer than two
distinct parser mentions are dropped (counted as ``singleton_chains``).

Installing: ``pip install coreferee`` (1.5.0 supports spaCy 3.7-3.8), ``python -m coreferee
install en`` (fetches the English model package ``coreferee_model_en`` from coreferee's
GitHub), and an official spaCy pipeline it was trained for (``python -m spacy download
en_core_web_sm``, or ``_md``/``_lg``). Without them :class:`CorefBackendUnavailable` says so.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from parlai_docgraph.nlp import installed_model, new_pipeline
from parlai_docgraph.graphs.parsers.base import Mention, ParsedSentence

MentionRef = Tuple[int, int, int]

#: official pipelines coreferee 1.5 has models for, tried in order
COREFEREE_PIPELINES = ("en_core_web_lg", "en_core_web_md", "en_core_web_sm", "en_core_web_trf")
INSTALL_HELP = (
    "pip install coreferee==1.5.0 (spaCy 3.7-3.8), then `python -m coreferee install en` "
    "(downloads its English model package coreferee_model_en from "
    "https://github.com/richardpaulhudson/coreferee) and an official spaCy English pipeline "
    "it supports (`python -m spacy download en_core_web_sm`, or en_core_web_md / "
    "en_core_web_lg); or use the offline rule-based resolver (--graph-coref rule)"
)


class CorefBackendUnavailable(RuntimeError):
    """A selected coreference backend (or its model) is not installed."""


def join_sentences(sentences: Sequence[str]) -> Tuple[str, List[int]]:
    """One text of all sentences separated by spaces, and each sentence's start offset."""
    starts, offset = [], 0
    for sentence in sentences:
        starts.append(offset)
        offset += len(sentence) + 1
    return " ".join(sentences), starts


def _find_mention(
    candidates: Sequence[Mention], positions: Sequence[int], ends: Sequence[int],
) -> Optional[Mention]:
    """The parser mention a coreferee mention (token start/end offsets) corresponds to."""
    if len(positions) == 1:
        for m in candidates:
            if m.head_start == positions[0]:
                return m
    covering = [
        m for m in candidates
        if all(m.start <= p and e <= m.end for p, e in zip(positions, ends))
    ]
    if not covering:
        return None
    return min(covering, key=lambda m: (m.end - m.start, m.start))


def chains_to_clusters(
    chains: Iterable[Any], token_spans: Sequence[Tuple[int, int]],
    sentence_starts: Sequence[int], parsed: Sequence[ParsedSentence],
) -> Tuple[List[Tuple[MentionRef, ...]], Dict[str, int]]:
    """
    Clusters of parser mention refs from coreferee chains (see the module docstring).

    ``chains``: iterable of chains, each an iterable of mentions with ``token_indexes``
    (coreferee's ``doc._.coref_chains``); ``token_spans``: ``(start, end)`` character offsets
    of every token of the joined text; ``sentence_starts``: from :func:`join_sentences`;
    ``parsed``: the parser's sentences. Returns ``(clusters, stats)``.
    """
    mentions = [ps.mentions() for ps in parsed]
    stats = {"chains": 0, "mentions": 0, "mapped": 0, "unmapped": 0, "singleton_chains": 0}
    parent: Dict[MentionRef, MentionRef] = {}

    def root(ref: MentionRef) -> MentionRef:
        while parent[ref] != ref:
            parent[ref] = parent[parent[ref]]
            ref = parent[ref]
        return ref

    groups: List[List[MentionRef]] = []
    for chain in chains:
        stats["chains"] += 1
        refs: List[MentionRef] = []
        for mention in chain:
            stats["mentions"] += 1
            indexes = list(mention.token_indexes)
            g = bisect_right(sentence_starts, token_spans[indexes[0]][0]) - 1
            base = sentence_starts[g] if g >= 0 else 0
            local = [(token_spans[i][0] - base, token_spans[i][1] - base) for i in indexes]
            found = None
            if g >= 0 and all(0 <= s and e <= len(parsed[g].text) for s, e in local):
                found = _find_mention(mentions[g], [s for s, _ in local], [e for _, e in local])
            if found is None:
                stats["unmapped"] += 1
                continue
            stats["mapped"] += 1
            ref = (g, found.start, found.end)
            if ref not in refs:
                refs.append(ref)
        if len(refs) < 2:
            stats["singleton_chains"] += 1
        groups.append(refs)
    for refs in groups:
        if len(refs) < 2:
            continue
        for ref in refs:
            parent.setdefault(ref, ref)
        for ref in refs[1:]:
            a, b = root(refs[0]), root(ref)
            if a != b:
                parent[b] = a
    clusters: Dict[MentionRef, List[MentionRef]] = {}
    for ref in parent:
        clusters.setdefault(root(ref), []).append(ref)
    out = [tuple(sorted(refs)) for refs in clusters.values()]
    return sorted(out), stats


class CorefereeCoref:
    """Coreferee chains as coreference clusters of parser mentions (module docstring)."""

    name = "coreferee"

    def __init__(self, model: Optional[str] = None) -> None:
        try:
            import coreferee  # noqa: F401  (registers the spaCy component)
            from importlib.metadata import version
        except ImportError as exc:
            raise CorefBackendUnavailable(
                f"coreference backend 'coreferee' is not installed ({exc}): {INSTALL_HELP}"
            ) from None
        self.version = f"coreferee-{version('coreferee')}"
        self.model = model
        self._nlp: Any = None
        self.last_stats: Dict[str, int] = {}

    @property
    def nlp(self) -> Any:
        """An official spaCy pipeline with the ``coreferee`` component (loaded once)."""
        if self._nlp is None:
            names = (self.model,) if self.model else COREFEREE_PIPELINES
            name = installed_model(names)
            if name is None:
                raise CorefBackendUnavailable(
                    f"coreferee needs an official spaCy English pipeline (tried "
                    f"{', '.join(names)}): {INSTALL_HELP}"
                )
            nlp = new_pipeline(name)  # its own copy: coreferee is added to it
            try:
                nlp.add_pipe("coreferee")
            except Exception as exc:  # coreferee's model missing or for another version
                raise CorefBackendUnavailable(
                    f"coreferee could not start on {name} ({type(exc).__name__}: {exc}): "
                    f"{INSTALL_HELP}"
                ) from exc
            self._nlp = nlp
        return self._nlp

    def describe(self) -> str:
        """``coreferee-<version>:<pipeline>-<version>`` for graph metadata and store keys."""
        meta = self.nlp.meta
        return f"{self.version}:{meta.get('lang', 'en')}_{meta.get('name', '?')}-{meta.get('version', '?')}"

    def resolve(self, parsed: Sequence[ParsedSentence]) -> List[Tuple[MentionRef, ...]]:
        """Clusters of ``(sentence, start, end)`` parser mention refs, in text order."""
        text, starts = join_sentences([ps.text for ps in parsed])
        doc = self.nlp(text)
        spans = [(t.idx, t.idx + len(t.text)) for t in doc]
        clusters, self.last_stats = chains_to_clusters(doc._.coref_chains, spans, starts, parsed)
        return clusters
