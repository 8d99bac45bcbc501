"""
``--attach-graphs none|store|build``: teachers that put each example's document graph into
the message.

With ``store`` (or ``build``) every message that has ``knowledge_passages`` also gets

- ``knowledge_graph``: the pool's :meth:`DocumentGraph.to_dict` (json-safe;
  ``DocumentGraph.from_dict`` restores the graph exactly), and
- ``knowledge_graph_key``: its key in the graph store under
  ``<datapath>/docgraph_cache/graphs``.

Graphs are looked up with :meth:`~parlai_docgraph.graphs.store.GraphStore.get_or_build` and
the :class:`~parlai_docgraph.graphs.factory.GraphFactory` of the one graph argument group
(``--graph-variant``, ``--graph-parser``, ``--graph-coref``, ``--amr-file``,
``--amr-model-dir``, ``--multilevel-ablation``), exactly as ``parlai-docgraph build_graphs``
and the graph selector do, so the graphs it stored are the ones found here. In one
``parlai train_model`` / ``eval_model`` command the teacher and the graph selector read the
same options: the selector takes the attached graph for the pool (no store read, no build)
when the attached key is its own key for that pool, and ignores it otherwise (a model
trained with another ``--graph-variant``). The attachment also serves display (``parlai
display_data ... --display-add-fields knowledge_graph_key``) and agents of your own. ``store`` raises
:class:`MissingGraphError` naming the ``build_graphs`` command to run when a pool's graph is
absent (or corrupt, then deleted); ``build`` builds it and saves it to the store. Graphs are
attached when an example is sent (not when the data is loaded), and the last
``--attach-graphs-memo`` pools are memoised by key, so the turns of a dialogue that share a
pool load or build it once. The attached dict is shared between those messages: read it,
do not modify it.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from parlai.core.message import Message
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser

from parlai_docgraph.graphs.config import GraphConfig
from parlai_docgraph.graphs.factory import GraphFactory
from parlai_docgraph.memo import LRUMemo

ATTACH_MODES = ("none", "store", "build")


class MissingGraphError(LookupError):
    """``--attach-graphs store`` found no (valid) stored graph for a knowledge pool."""


class GraphAttacher:
    """
    Looks up (``store``) or builds and stores (``build``) the graph of knowledge pools, with
    an :class:`~parlai_docgraph.memo.LRUMemo` of ``memo_size`` graph dicts by store key.
    """

    def __init__(
        self, mode: str, factory: GraphFactory, datapath: str, task: str = "", datatype: str = "",
        memo_size: int = 64,
    ) -> None:
        from parlai_docgraph.graphs.store import GraphStore, default_store_root

        if mode not in ("store", "build"):
            raise ValueError(f"--attach-graphs {mode!r}: choose one of {ATTACH_MODES}")
        self.mode, self.factory = mode, factory
        self.datapath, self.task, self.datatype = datapath, task, datatype
        self.store = GraphStore(default_store_root(datapath))
        self._memo: LRUMemo[str, Dict[str, Any]] = LRUMemo(max(1, int(memo_size)))
        self.counts = {"memo": 0, "store": 0, "built": 0}

    def build_command(self) -> str:
        """The ``build_graphs`` command that fills the store for this teacher."""
        parts = ["parlai-docgraph", "build_graphs", "-t", self.task or "<task>"]
        if self.datatype:
            parts += ["-dt", self.datatype.split(":")[0]]
        parts += ["--datapath", self.datapath] + self.factory.config.command_args()
        return " ".join(parts)

    def graph(self, passages: Any) -> Tuple[str, Dict[str, Any]]:
        """``(key, graph dict)`` of one knowledge pool (memo, then store, then build)."""
        key = self.factory.key(passages)
        hit = self._memo.get(key)
        if hit is not None:
            self.counts["memo"] += 1
            return key, hit
        found = self.store.get_or_build(passages, self.factory, build=self.mode == "build",
                                        key=key)
        if found.graph is None:
            raise MissingGraphError(
                f"--attach-graphs store: no graph for this knowledge pool (key {key}) in "
                f"{self.store.root} ({self.factory.describe()}). Build the task's graphs "
                f"first:\n  {self.build_command()}\n"
                "or use --attach-graphs build to build missing graphs on the fly"
            )
        self.counts["built" if found.built else "store"] += 1
        return key, self._memo.put(key, found.graph.to_dict())

    def attach(self, message: Message) -> Message:
        """A copy of ``message`` with ``knowledge_graph`` and ``knowledge_graph_key`` added
        (``message`` itself when it has no ``knowledge_passages``)."""
        passages = message.get("knowledge_passages")
        if passages is None:
            return message
        key, graph = self.graph(passages)
        out = Message(message)
        out.force_set("knowledge_graph", graph)
        out.force_set("knowledge_graph_key", key)
        return out


class GraphAttachMixin:
    """
    Teacher mixin (put it before the ``DialogTeacher`` base): ``--attach-graphs`` and the
    graph options; attaches graphs to each example as it is sent (see the module docstring).
    """

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("docgraph graph attachment")
        group.add_argument(
            "--attach-graphs", type=str, choices=ATTACH_MODES, default="none",
            help="none: messages carry no graph; store: add each knowledge pool's document "
            "graph (knowledge_graph: DocumentGraph.to_dict(), knowledge_graph_key: its store "
            "key) from the graph store under <datapath>/docgraph_cache/graphs, failing with "
            "the build_graphs command to run when one is missing; build: like store, but "
            "build missing graphs on the fly and save them to the store",
        )
        group.add_argument(
            "--attach-graphs-memo", type=int, default=64,
            help="graphs of this many recent knowledge pools kept in memory by the teacher",
        )
        GraphConfig.add_args(parser, "docgraph graphs (used by --attach-graphs)")
        return parser

    def __init__(self, opt: Opt, shared: Optional[Dict[str, Any]] = None) -> None:
        mode = opt.get("attach_graphs") or "none"
        if mode not in ATTACH_MODES:
            raise ValueError(f"--attach-graphs {mode!r}: choose one of {ATTACH_MODES}")
        self.graph_attacher: Optional[GraphAttacher] = None
        if shared is not None and shared.get("graph_attacher") is not None:
            self.graph_attacher = shared["graph_attacher"]
        elif mode != "none":
            self.graph_attacher = GraphAttacher(
                mode, GraphFactory(GraphConfig.from_opt(opt)), opt["datapath"], opt["task"],
                opt["datatype"], opt["attach_graphs_memo"],
            )
        super().__init__(opt, shared)

    def share(self) -> Dict[str, Any]:
        shared = super().share()
        shared["graph_attacher"] = self.graph_attacher
        return shared

    def next_example(self) -> Tuple[Message, bool]:
        action, epoch_done = super().next_example()
        if self.graph_attacher is not None and action is not None:
            action = self.graph_attacher.attach(action)
        return action, epoch_done
