"""
``parlai-docgraph show_graph``: render the document graph of one example's knowledge pool
as a self-contained HTML page.

The graph comes from the graph store under ``<datapath>/docgraph_cache/graphs`` (built and
stored there when missing, as ``build_graphs`` would). The gold sentence
(``checked_sentence_index``) and the concepts (or words) attached to it are outlined in red
and the gold sentence is quoted under the heading. ``--model-file`` (outlining the nodes a
trained selector picks) is not supported yet and is refused with a message.

Example::

    parlai-docgraph show_graph -t docgraph:sample -dt valid --example 3 --out g.html \\
        --datapath /tmp/dp
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_docgraph.graphs.config import GraphConfig
from parlai_docgraph.graphs.factory import GraphFactory

from parlai_docgraph.graphs.store import default_store_root
from parlai_docgraph.scripts.build_graphs import iterate_examples, parse_datatypes

MODEL_FILE_UNSUPPORTED = (
    "show_graph: --model-file is not supported yet (highlighting a trained selector's chosen "
    "nodes comes with the graph selector agents); run without --model-file to render the "
    "graph with the gold sentence and its concepts highlighted"
)


def find_example(opt: Dict[str, Any], number: int) -> Tuple[Any, str]:
    """Example ``number`` (0-based, over the datatype's teachers in order) and its datatype."""
    datatype = parse_datatypes(opt.get("datatype"))[0]
    count = 0
    for index, msg in iterate_examples(opt, datatype):
        if index == number:
            return msg, datatype
        count = index + 1
    raise ValueError(
        f"--example {number} is out of range: {opt.get('task')} {datatype} has {count} examples"
    )


def gold_nodes(graph: Any, sentence: Optional[int]) -> List[int]:
    """The sentence node of global sentence index ``sentence`` and its concept/word nodes."""
    if sentence is None or sentence < 0:
        return []
    sids = [n.id for n in graph.nodes if n.type == "sentence" and n.sentence == sentence]
    if not sids:
        return []
    kinds = {n.id: n.type for n in graph.nodes}
    attached = {
        e.dst for e in graph.edges
        if e.src == sids[0] and e.dst != e.src and kinds.get(e.dst) in ("concept", "word")
    }
    return sids[:1] + sorted(attached)


def graph_of(passages: Any, factory: GraphFactory, datapath: str) -> Tuple[Any, bool]:
    """``(graph, from_store)``: the stored graph of ``passages``, built and stored if missing."""
    from parlai_docgraph.graphs.store import GraphStore

    found = GraphStore(default_store_root(datapath)).get_or_build(passages, factory)
    return found.graph, not found.built


@register_script("show_graph", hidden=False)
class ShowGraph(ParlaiScript):
    """
    Render the document graph of one example's knowledge pool as a self-contained HTML page
    (gold sentence and its concepts outlined in red).
    """

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(True, False, description=cls.__doc__.strip())
        parser.set_defaults(datatype="valid")
        GraphConfig.add_args(parser)
        group = parser.add_argument_group("show_graph")
        group.add_argument("-n", "--example", type=int, default=0,
                           help="0-based index of the example in the datatype (default 0)")
        group.add_argument("--out", default="graph.html", help="HTML file to write")
        group.add_argument("-mf", "--model-file", default=None,
                           help="not supported yet: outline the nodes a trained selector picks")
        return parser

    def run(self) -> Dict[str, Any]:
        opt = self.opt
        if opt.get("model_file"):
            print(MODEL_FILE_UNSUPPORTED, file=sys.stderr)
            raise SystemExit(2)
        if not opt.get("task"):
            raise ValueError("show_graph needs -t TASK")
        from parlai_docgraph.graphs.render import write_html

        number = int(opt.get("example") or 0)
        msg, datatype = find_example(opt, number)
        passages = msg.get("knowledge_passages")
        if passages is None:
            raise ValueError(
                f"example {number} of {opt['task']} {datatype} has no knowledge_passages: "
                "show_graph needs a document-grounded task (e.g. docgraph:sample)"
            )
        config = GraphConfig.from_opt(opt)
        graph, cached = graph_of(passages, GraphFactory(config), opt["datapath"])
        index = msg.get("checked_sentence_index")
        gold = gold_nodes(graph, index)
        sentences = [s for _, sents in passages for s in sents]
        if gold:
            caption = f"gold sentence {index}: {sentences[index]}"
        else:
            caption = "no gold sentence (no knowledge used)"
        title = (f"{opt['task']} {datatype.split(':')[0]} example {number}: "
                 f"{config.builder} graph ({config.describe()})")
        out = write_html(graph, opt["out"], title=title, gold=gold, caption=caption)
        print(
            f"wrote {Path(out).resolve()}: {len(graph.nodes)} nodes, {len(graph.edges)} edges "
            f"({'from the store' if cached else 'built and stored'}); {caption}"
        )
        return dict(out=str(out), nodes=len(graph.nodes), edges=len(graph.edges), gold=gold,
                    gold_sentence=sentences[index] if gold else None, cached=cached)


if __name__ == "__main__":
    ShowGraph.main()
