"""
AMR parser backend over precomputed AMR graphs (penman notation), Li et al.'s source.

Li et al. take concepts from the core roles of AMR predicates. This backend reads AMR graphs
the user computed elsewhere (``amr_file``: penman graphs with ``# ::snt`` metadata, blank-line
separated, the usual AMR corpus format; or ``amr_graphs``: such strings), aligns each graph
to the sentence's spaCy tokens with amrlib's rule-based RBW aligner (offline), and returns
the same :class:`~.base.ParsedSentence` structures as the ``dep`` backend:

- a predicate is an instance whose concept is a PropBank frame (``light-01``) aligned to a
  token; its ``:ARG0``..``:ARG5`` edges (inverted ``:ARGn-of`` edges are un-inverted by
  penman) give the arguments, ``:poss`` edges give ``poss`` relations;
- an argument is grounded at its aligned token (for a named entity, the last token aligned
  to its concept or to an ``:opN`` of its ``:name``) and spans that token's noun chunk, with
  the spaCy features the coreference resolver uses; unaligned concepts are skipped.

Known limits: RBW alignment is rule-based (a concept with no matching word, e.g.
``person`` for "composer", stays unaligned, and repeated words align to the first free
token); AMR reentrancies (in-sentence coreference) are not turned into extra mentions.

Sentences without a precomputed graph are parsed with an amrlib sentence-to-graph (stog)
model when ``model_dir`` names one (``amrlib.load_stog_model(model_dir=...)``, loaded on
first use; amrlib's models are downloaded separately, see :data:`MODEL_HELP`), and their
graphs are aligned the same way. Without graphs or a model the constructor raises
``RuntimeError`` naming what to pass; a missing or empty model folder raises
:class:`AMRModelError` saying where the model goes and that ``--amr-file`` works offline.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from parlai_docgraph.graphs.parsers.base import Argument, ParsedSentence, Parser, Predicate, Relation
from parlai_docgraph.graphs.parsers.dep import load_pipeline, token_mention
from parlai_docgraph.jsonio import read_json
from parlai_docgraph.memo import LRUMemo

MODEL_HELP = (
    "download an amrlib parse (stog) model, e.g. parse_xfm_bart_large from "
    "https://github.com/bjascob/amrlib-models/releases, and unpack it into that folder "
    "(it must hold the model's amrlib_meta.json; amrlib's default place is "
    "<site-packages>/amrlib/data/model_stog, see "
    "https://amrlib.readthedocs.io/en/latest/install/), or pass AMR graphs computed "
    "elsewhere in penman notation with --amr-file (amr_file=...), which works offline"
)


class AMRModelError(FileNotFoundError):
    """No usable amrlib stog model where ``--amr-model-dir`` points (message says why)."""


def check_model_dir(model_dir: Union[str, Path]) -> Path:
    """``model_dir`` as a ``Path`` when it holds an amrlib model; :class:`AMRModelError` else."""
    path = Path(model_dir)
    if not path.is_dir():
        raise AMRModelError(f"--amr-model-dir {model_dir}: no such folder; {MODEL_HELP}")
    if not (path / "amrlib_meta.json").is_file():
        raise AMRModelError(
            f"--amr-model-dir {model_dir}: no amrlib model there (amrlib_meta.json missing); "
            f"{MODEL_HELP}"
        )
    return path


FRAME = re.compile(r"^[^\s]+-\d{2,}$")
CORE = re.compile(r"^:ARG([0-5])$")


def read_amr_graphs(source: Union[Path, Iterable[str]]) -> Dict[str, str]:
    """
    Sentence text (``# ::snt``, whitespace-normalised) -> penman graph string, from a file
    (``Path``) or from strings each holding one or more graphs.
    """
    import penman

    texts = [source.read_text(encoding="utf-8")] if isinstance(source, Path) else list(source)
    out: Dict[str, str] = {}
    for text in texts:
        for graph in penman.iterdecode(text):
            snt = graph.metadata.get("snt")
            if snt is None:
                raise ValueError(
                    f"AMR graph without '# ::snt' metadata: {penman.encode(graph)[:80]!r}"
                )
            out[" ".join(snt.split())] = penman.encode(graph)
    return out


def parse_amr(doc: Any, graph_text: str) -> ParsedSentence:
    """Predicate-argument structure of one spaCy ``Doc`` from its AMR graph."""
    import penman
    from amrlib.alignments.rbw_aligner import RBWAligner

    graph = penman.decode(graph_text)
    aligner = RBWAligner(graph, [t.text for t in doc], [t.lemma_ or t.text for t in doc])
    token_of: Dict[str, int] = {}
    name_tokens: Dict[str, List[int]] = {}
    for i, info in enumerate(aligner.alignments):
        if info is None or not info.is_concept():
            continue
        src, role, _ = info.triple
        if role == ":instance":
            token_of.setdefault(src, i)
        else:
            name_tokens.setdefault(src, []).append(i)
    for edge in graph.edges():
        if edge.role == ":name" and edge.target in name_tokens:
            own = [token_of[edge.source]] if edge.source in token_of else []
            token_of[edge.source] = max(name_tokens[edge.target] + own)
    chunk_of: Dict[int, Any] = {}
    for chunk in doc.noun_chunks:
        for i in range(chunk.start, chunk.end):
            chunk_of[i] = chunk
    parsed = ParsedSentence(text=doc.text)
    for inst in graph.instances():
        var = inst.source
        if not FRAME.match(str(inst.target)) or var not in token_of:
            continue
        args = []
        for edge in graph.edges(source=var):
            core = CORE.match(edge.role)
            if core and edge.target in token_of:
                tok = doc[token_of[edge.target]]
                args.append(Argument(f"ARG{core.group(1)}", token_mention(tok, chunk_of)))
        if args:
            tok = doc[token_of[var]]
            parsed.predicates.append(Predicate(
                tok.idx, tok.idx + len(tok.text), tok.text, (tok.lemma_ or tok.text).lower(),
                tuple(args),
            ))
    for edge in graph.edges(role=":poss"):
        if edge.source in token_of and edge.target in token_of:
            src, dst = doc[token_of[edge.source]], doc[token_of[edge.target]]
            parsed.relations.append(
                Relation("poss", token_mention(src, chunk_of), token_mention(dst, chunk_of))
            )
    return parsed


class AMRParser(Parser):
    """Precomputed AMR graphs aligned to spaCy tokens (see the module docstring)."""

    name = "amr"
    #: stog graphs remembered (a graph is about 1 KB of penman text)
    PARSED_MEMO = 50_000

    def __init__(
        self,
        amr_file: Optional[Union[str, Path]] = None,
        amr_graphs: Optional[Iterable[str]] = None,
        model: Optional[str] = None,
        batch_size: int = 256,
        model_dir: Optional[Union[str, Path]] = None,
    ) -> None:
        if amr_file is None and amr_graphs is None and model_dir is None:
            raise RuntimeError(
                "the 'amr' graph parser needs precomputed AMR graphs in penman notation "
                "(amr_file=... / --amr-file, or amr_graphs=...) or an amrlib parse model "
                "(model_dir=... / --amr-model-dir)"
            )
        self.model_dir = None if model_dir is None else check_model_dir(model_dir)
        self._stog: Any = None
        #: graphs the stog model produced, the most recent ``PARSED_MEMO`` (kept apart from
        #: the file's: they never change a store key)
        self.parsed: LRUMemo[str, str] = LRUMemo(self.PARSED_MEMO)
        self.graphs: Dict[str, str] = {}
        if amr_file is not None:
            if not Path(amr_file).is_file():
                raise ValueError(f"AMR file not found: {amr_file}")
            self.graphs.update(read_amr_graphs(Path(amr_file)))
        if amr_graphs is not None:
            self.graphs.update(read_amr_graphs([amr_graphs] if isinstance(amr_graphs, str)
                                               else list(amr_graphs)))
        self.model = model
        self.batch_size = batch_size

    def describe(self) -> str:
        """``amr:precomputed+rbw`` (or ``amr:precomputed+stog-<model>+rbw``) for graph meta."""
        if self.model_dir is None:
            return "amr:precomputed+rbw"
        meta = read_json(str(self.model_dir / "amrlib_meta.json"))
        name = f"{meta.get('model_type', self.model_dir.name)}-{meta.get('version', '?')}"
        return f"amr:precomputed+stog-{name}+rbw"

    def stog(self) -> Any:
        """The amrlib stog model of ``model_dir``, loaded on first call."""
        if self._stog is None:
            try:
                import amrlib
            except ImportError as exc:
                raise RuntimeError(f"--amr-model-dir needs amrlib (pip install amrlib): {exc}")
            try:
                self._stog = amrlib.load_stog_model(model_dir=str(self.model_dir))
            except (OSError, KeyError, ValueError, ImportError) as exc:
                raise AMRModelError(
                    f"--amr-model-dir {self.model_dir}: amrlib could not load the model "
                    f"({type(exc).__name__}: {exc}); {MODEL_HELP}"
                ) from exc
        return self._stog

    def _parse_missing(self, texts: Sequence[str]) -> Dict[str, str]:
        """The stog model's graphs of the ``texts`` the AMR file has none for (memoised; the
        ones not remembered parsed in one batch)."""
        found: Dict[str, str] = {}
        todo = []
        for text in sorted(set(texts) - self.graphs.keys()):
            hit = self.parsed.get(text)
            if hit is None:
                todo.append(text)
            else:
                found[text] = hit
        graphs = self.stog().parse_sents(todo, add_metadata=True) if todo else []
        for text, graph in zip(todo, graphs):
            if graph is None:
                raise ValueError(f"the AMR model produced no graph for {text[:80]!r}")
            found[text] = self.parsed.put(text, graph)
        return found

    def cache_token(self, sentences: Sequence[str]) -> str:
        """
        The version plus a digest of the AMR graphs these sentences use, so editing the
        AMR file retires the cached graphs it changes (and only those).
        """
        digest = hashlib.sha256()
        for sentence in sentences:
            missing = "<stog>" if self.model_dir is not None else "<missing>"
            digest.update(self.graphs.get(" ".join(sentence.split()), missing).encode())
            digest.update(b"\0")
        return f"{self.describe()}:{digest.hexdigest()[:16]}"

    def parse(self, sentences: Sequence[str]) -> List[ParsedSentence]:
        """Align each sentence's graph; ``ValueError`` naming a sentence with no graph."""
        texts = list(sentences)
        todo = [i for i, t in enumerate(texts) if t.strip()]
        keys = {i: " ".join(texts[i].split()) for i in todo}
        parsed = self._parse_missing(list(keys.values())) if self.model_dir is not None else {}
        known = {key: self.graphs.get(key) or parsed.get(key) for key in keys.values()}
        for i in todo:
            if known[keys[i]] is None:
                raise ValueError(
                    f"no AMR graph for sentence {i}: {texts[i][:80]!r} (add it to --amr-file "
                    "or pass --amr-model-dir to parse it)"
                )
        out = [ParsedSentence(text=t) for t in texts]
        nlp = load_pipeline(self.model)
        docs = nlp.pipe((texts[i] for i in todo), batch_size=self.batch_size)
        for i, doc in zip(todo, docs):
            out[i] = parse_amr(doc, known[keys[i]])
        return out
