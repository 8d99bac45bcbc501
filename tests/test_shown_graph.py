"""
The graph a user is shown (``--show-graph``, the web chat) is the graph the selector scored.

For every ``--graph-variant``, a fresh ``-m docgraph`` agent over a document answers one
interactive turn; :meth:`DocgraphAgent.turn_graph` must be the graph stored under the key
that the selector's own graph options give for the turn's pool (the store ``build_graphs``
and the selector share), and nothing for ``--graph-variant none``.
"""

from __future__ import annotations

import pytest

from parlai_docgraph.graphs.config import GraphConfig, GraphVariant

pytest.importorskip("transformers")

DOC = ("# Tide mills\n\nA tide mill stores sea water behind a dam at high tide. The water "
       "is released through a wheel as the tide falls, so the mill can grind grain twice a "
       "day.\n\n## Eling\n\nThe mill at Eling in Hampshire is still working. It grinds "
       "wholemeal flour for visitors and local bakers.\n")


@pytest.mark.parametrize("variant", GraphVariant.names())
def test_shown_graph_is_the_scored_graph(variant, tmp_path):
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    from parlai_docgraph.graphs.store import GraphStore, default_store_root
    from parlai_docgraph.graphs.factory import GraphFactory

    doc = tmp_path / "tide.md"
    doc.write_text(DOC, encoding="utf-8")
    datapath = tmp_path / "data"
    parser = ParlaiParser(True, True)
    opt = parser.parse_args([
        "-m", "docgraph", "--datapath", str(datapath), "--documents", str(doc),
        "--encoder-model", "tiny", "--responder-model", "tiny", "--graph-variant", variant,
        "--selector-hidden", "16", "--type-dim", "4", "--gat-hidden", "16",
        "--reply-mode", "extract", "--graph-cache", "store"])
    opt["interactive_mode"] = True
    agent = create_agent(opt)
    agent.observe({"text": "how does a tide mill work?", "episode_done": False})
    agent.act()
    shown = agent.turn_graph()
    if variant == "none":
        assert shown is None
        return
    pool = agent.selector.observation["background_passages"]
    config = GraphConfig.from_opt(agent.selector.opt)
    assert config.variant.value == variant
    key = GraphFactory(config).key(pool)
    stored = GraphStore(default_store_root(str(datapath))).load(key)
    assert stored is not None, f"the selector stored no graph under its key {key}"
    assert shown.to_dict() == stored.to_dict()
    if variant not in ("full", "paths"):  # paths reads the full graph as text; the others
        # are graphs of their own: the default builder's graph would be another key
        default = GraphFactory(GraphConfig()).key(pool)
        assert default != key
