"""
The options of ``-m docgraph``: the pipeline's own (:func:`add_pipeline_args`) and how the
two parts' options meet on one parser (:func:`add_part_args`): an option the selector and
the responder declare differently is an error unless :data:`SETTLED` says how the pipeline
decides it. :func:`document_retriever` makes the ``--retriever`` of a pipeline.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from parlai.core.params import ParlaiParser

from parlai_docgraph.graphs.retrieval import DEFAULT_BUDGET
from parlai_docgraph.graphs.retrievers import (
    DEFAULT_BACKGROUND_OVER, DEFAULT_RETRIEVER, DEFAULT_RRF_K, RETRIEVERS, SentenceEmbedder,
    retriever_factory,
)

REPLY_MODES = ("generate", "extract")

#: options the selector and the responder declare differently (choices, type or default),
#: and how the pipeline settles each; any other such option stops the parser
SETTLED: Dict[str, str] = {
    "inference": "the responder's decoding (the selector is built with --inference max)",
    "topk": "the responder's top-k sampling (the selector returns that many text_candidates)",
    "learningrate": "--selector-learningrate / --responder-learningrate, else -lr for both",
    "optimizer": "one --optimizer for both parts",
    "use_reply": "the pipeline's (label: the selector is built with use_reply none)",
}


def _declared(parser: ParlaiParser) -> Dict[str, Tuple[Any, ...]]:
    """Every option's ``dest -> (option strings, choices, type, default)``."""
    out = {}
    for action in parser._actions:
        choices = tuple(action.choices) if action.choices is not None else None
        out[action.dest] = (tuple(action.option_strings), choices, action.type,
                            parser.get_default(action.dest))
    return out


def add_part_args(parser: ParlaiParser, selector: Callable[[ParlaiParser], Any],
                  responder: Callable[[ParlaiParser], Any]) -> None:
    """
    Register the selector's options, then the responder's, on ``parser``. ParlAI's parser
    lets the later declaration of an option win; an option declared differently by the two
    that :data:`SETTLED` does not name raises ``ValueError`` naming it, so no part's option
    is silently redefined.
    """
    selector(parser)
    before = _declared(parser)
    responder(parser)
    after = _declared(parser)
    clashes = sorted(dest for dest, spec in before.items()
                     if dest in after and after[dest] != spec and dest not in SETTLED)
    if clashes:
        raise ValueError(
            "-m docgraph: the selector and the responder declare "
            + ", ".join(f"--{d.replace('_', '-')}" for d in clashes)
            + " differently; say in agents/pipeline/args.py SETTLED how the pipeline "
            "decides each (or rename one part's option)")


def add_pipeline_args(parser: ParlaiParser) -> None:
    """Register the ``docgraph pipeline`` option group on ``parser``."""
    group = parser.add_argument_group("docgraph pipeline")
    group.add_argument(
        "--selector-model-file", type=str, default=None,
        help="model file of a trained docgraph/graph_selector (zoo: paths work); "
        "default: a selector built from this run's options")
    group.add_argument(
        "--responder-model-file", type=str, default=None,
        help="model file of a trained docgraph/gpt2_responder (zoo: paths work); "
        "default: a responder built from this run's options")
    group.add_argument(
        "--selector-learningrate", type=float, default=None,
        help="learning rate of the selector (default: --learningrate)")
    group.add_argument(
        "--responder-learningrate", type=float, default=None,
        help="learning rate of the responder (default: --learningrate)")
    group.add_argument(
        "--documents", type=str, nargs="*", default=None,
        help="interactive: text/Markdown files, folders (their .txt/.md files) or glob "
        "patterns to talk about (paragraphs are passages, the heading or first line the "
        "title); indexed once, each turn's knowledge is retrieved from them")
    group.add_argument(
        "--retrieval-sentences", type=int, default=DEFAULT_BUDGET,
        help="interactive: the most sentences of a turn's knowledge pool: documents with "
        "more are searched (--retriever, the dialogue as the query) and the graph "
        "is built over the best passages only; 0 keeps every passage")
    add_retriever_args(group)
    group.add_argument(
        "--max-passage-sentences", type=int, default=8,
        help="interactive: a longer paragraph of a document is cut into passages of this "
        "many sentences (0: never)")
    group.add_argument(
        "--show-graph", type=str, default=None,
        help="interactive: write the rendered document graph of the last turn (HTML) "
        "to this file after every turn")
    group.add_argument(
        "--reply-mode", type=str, default="generate", choices=REPLY_MODES,
        help="the reply outside training: 'generate' (the responder's text) or "
        "'extract' (the selected knowledge sentence itself, grounded by construction; "
        "the responder's text is kept in the reply's 'generated_text'). The zoo sample "
        "model uses 'generate' (SmolLM2 with LoRA); 'extract' suits a responder that "
        "cannot write fluent text (e.g. --responder-model tiny). Without a selected "
        "sentence (no_passages_used) the generated text is the reply")
    group.add_argument(
        "--no-knowledge-margin", type=float, default=None,
        help="how the pipeline decides between no knowledge and a sentence: unset, the "
        "selector's top candidate; a number m, the best pool sentence unless the "
        "no-knowledge candidate's score beats it by more than m (0: the selector's choice; "
        "larger: a sentence more often; inf: always). For a selector trained where most "
        "labels say no_passages_used (CMU_DoG's pseudo labels); the CMU_DoG zoo model's is "
        "chosen on valid")
    group.add_argument(
        "--reply-keeps-answer", type="bool", default=True,
        help="generate: a reply that leaves out a content word of the selected sentence "
        "that the user's turn does not hold (the 'why', the 'how much') is replaced by "
        "the selected sentence itself (the generated text kept in 'generated_text', the "
        "words it dropped in 'answer_dropped')")
    group.add_argument(
        "--interactive-max-chars", type=int, default=2000,
        help="interactive: a longer user turn keeps its last N characters (and says so)")


def add_retriever_args(group: Any, background: bool = True) -> None:
    """The retriever options (``--retriever``, ``--rrf-k`` and, with ``background``,
    ``--dense-background-over``), shared with ``parlai-docgraph heldout_eval``."""
    group.add_argument(
        "--retriever", type=str, default=DEFAULT_RETRIEVER, choices=RETRIEVERS,
        help="how a turn's passages are found in --documents: bm25 (shared words), dense "
        "(sentence embeddings of the selector's frozen encoder, cached per document) or "
        "hybrid (reciprocal-rank fusion of the two); chosen on docgraph:docqa valid")
    group.add_argument(
        "--rrf-k", type=int, default=DEFAULT_RRF_K,
        help="hybrid: k of reciprocal-rank fusion, sum of 1 / (k + rank)")
    if not background:
        return
    group.add_argument(
        "--dense-background-over", type=int, default=DEFAULT_BACKGROUND_OVER,
        help="dense, hybrid: when more sentences than this have no cached vectors, they are "
        "embedded in a background thread and BM25 ranks alone until they are ready "
        "(0: always before the first turn)")


def document_retriever(opt: Dict[str, Any], selector: Any, cache_root: Optional[str]) -> Any:
    """
    ``--retriever`` of a pipeline: dense vectors from the selector's frozen encoder (its
    node encoder), else from the installed MiniLM (a selector without node features keeps
    no frozen copy); ``cache_root`` is where the vectors are cached (``None``: nowhere).
    """
    embedder = None
    if opt["retriever"] != "bm25":
        vectors = getattr(getattr(selector, "graphs", None), "sentence_vectors", None)
        if vectors is not None:
            encoder, tokenizer = vectors.encoder, vectors.tokenizer
        else:
            from parlai_docgraph.models.encoders import MINILM, load_encoder

            encoder, tokenizer = load_encoder(MINILM)
            encoder.requires_grad_(False).eval()
        embedder = SentenceEmbedder(encoder, tokenizer)
    return retriever_factory(opt["retriever"], embedder, cache_root, rrf_k=opt["rrf_k"],
                             background_over=opt["dense_background_over"])
