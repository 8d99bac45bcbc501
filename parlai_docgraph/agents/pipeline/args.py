"""
The options of ``-m docgraph`` (the pipeline's own; the parts' options are their agents').
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, Union

from parlai.core.params import ParlaiParser

from parlai_docgraph.graphs.retrieval import DEFAULT_BUDGET

REPLY_MODES = ("generate", "extract")


def pipeline_defaults() -> Dict[str, Any]:
    """Each pipeline option's default (``upgrade_opt`` fills them into older model files)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_pipeline_args(parser)
    return vars(parser.parse_args([]))


def add_pipeline_args(parser: Union[ParlaiParser, argparse.ArgumentParser]) -> None:
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
        "more are searched (BM25 over passages, the dialogue as the query) and the graph "
        "is built over the best passages only; 0 keeps every passage")
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
        "the responder's text is kept in the reply's 'generated_text'). The offline "
        "zoo sample model uses 'extract': its tiny GPT-2 cannot write fluent text; "
        "with a real LM (--responder-model) use 'generate'. Without a selected "
        "sentence (no_passages_used) the generated text is the reply")
    group.add_argument(
        "--interactive-max-chars", type=int, default=2000,
        help="interactive: a longer user turn keeps its last N characters (and says so)")
