"""
The options of ``-m docgraph/gsr`` in one group (ParlAI's ``agents/rag/args.py`` pattern):
:func:`add_gsr_args` registers them; the agent's ``add_cmdline_args`` calls it and sets the
ParlAI defaults. No model code.
"""

from __future__ import annotations

from typing import Any, Dict

from parlai.core.params import ParlaiParser

from parlai_docgraph.agents.lm_adapters import add_adapter_args
from parlai_docgraph.kg.constrained import LM_NORMS
from parlai_docgraph.kg.store import ADJACENCY_KINDS
from parlai_docgraph.models.responder import chat

STAGES = ("pretrain", "retrieve", "respond", "all")
CONSTRAINTS = ("none", "hard", "connection", "katz")
#: the options that decide how paths are retrieved: a separate retriever
#: (``--gsr-retriever-model-file``) decodes with the caller's values of these
RETRIEVAL_OPTIONS = ("gsr_constraint", "gsr_alpha", "katz_beta", "katz_adjacency", "gsr_lm_norm",
                     "gsr_length_penalty", "gsr_num_beams", "gsr_retrieval_steps")
#: the response's decoding defaults (ParlAI's options, :mod:`parlai_docgraph.models.decoding`):
#: beam search of --beam-size, no minimum, HF's length penalty 1
RESPONSE_DECODING: Dict[str, Any] = {"inference": "beam", "beam_length_penalty": 1.0,
                                     "beam_min_length": 0}
#: ``opt[DECODING_KEY]`` of models whose response decodes through ParlAI's generation
#: options; a model saved before (without the key) decoded its response with beam search of
#: --beam-size and --gsr-length-penalty (:func:`upgrade_decoding`)
DECODING_KEY, DECODING_VERSION = "gsr_decoding_version", 2


def upgrade_decoding(opt: Dict[str, Any]) -> Dict[str, Any]:
    """``opt`` of a model file saved before :data:`DECODING_KEY`: the generation options that
    reproduce its response decoding (beam search, ``--gsr-length-penalty``, no minimum of new
    tokens: the old ``min_length`` counted the decoder's start token), except those this
    run overrides."""
    if DECODING_KEY in opt:
        return opt
    given = opt.get("override") or {}
    old = {**RESPONSE_DECODING, "beam_length_penalty": opt.get("gsr_length_penalty", 1.0)}
    for key, value in old.items():
        if key not in given:
            opt[key] = value
    opt[DECODING_KEY] = DECODING_VERSION
    return opt


#: train_model's default --eval-batchsize for ``-m docgraph/gsr`` (see :func:`add_gsr_args`)
EVAL_BATCHSIZE = 8

#: what models saved before an option existed did (``upgrade_opt``)
SAVED_BEFORE: Dict[str, Any] = {"katz_adjacency": "binary", "gsr_lm_norm": "vocab",
                                "gsr_chat_template": "false"}


def add_gsr_args(parser: ParlaiParser) -> None:
    """Register the ``docgraph DialogGSR`` group and the LoRA options on ``parser``."""
    g = parser.add_argument_group("docgraph DialogGSR")
    add_gsr_model_args(g)
    add_gsr_decoding_args(g)
    add_gsr_stage_args(g)
    add_adapter_args(parser)
    # interactive: show the retrieved subgraph next to the reply. train_model's validation
    # (its --eval-batchsize, else -bs) evaluates EVAL_BATCHSIZE examples a batch: a decoding
    # step reads every weight once whatever the rows, so on a CPU batches of 8 evaluate
    # the SmolLM2 model's 27 sample valid examples in 93 s against 160 s at 2, with the
    # same paths, replies and metrics (16 gives the same batches there: a batch holds one
    # turn of each of the split's 9 dialogues at most). Training batches stay -bs.
    parser.set_defaults(optimizer="adamw", learningrate=1e-3, gradient_clip=1.0,
                        display_add_fields="retrieved", eval_batchsize=EVAL_BATCHSIZE,
                        **RESPONSE_DECODING)


def add_gsr_model_args(g: Any) -> None:
    """DialogGSR options of the model and its input: the LM, its seed, the linearised paths'
    tokens and truncation, the chat template."""
    g.add_argument("--gsr-model", type=str, default="t5-small",
                   help="seq2seq (T5) or decoder-only causal LM (Llama, Qwen, ...; picked from "
                   "its config): hub name (cached when offline), local directory, or "
                   "'tiny' (bundled offline T5 config + tokenizer, seeded random weights)")
    g.add_argument("--gsr-seed", type=int, default=0,
                   help="seed of initial weights (sources without weights) and path sampling")
    g.add_argument("--slot-tokens", type=int, default=2,
                   help="learnable tokens per [Int]/[Rev] slot (appendix A.1)")
    g.add_argument("--use-special-tokens", type="bool", default=True,
                   help="linearize with learnable special tokens; false: plain-text markers")
    g.add_argument("--gsr-history-truncate", type=int, default=128,
                   help="keep the last N dialogue-history tokens")
    g.add_argument("--gsr-knowledge-truncate", type=int, default=128,
                   help="keep the first N tokens of the linearized subgraph")
    g.add_argument("--gsr-chat-template", type=str, default="auto", choices=chat.SETTINGS,
                   help="decoder-only LM with a chat template (instruction-tuned, e.g. "
                   "smollm2-135m-instruct): the retrieval and response sources are a user "
                   "message of the template and the path or reply the assistant's answer; "
                   "auto: whenever the causal LM's tokenizer has a template, false: the "
                   "plain 'source </s> target' layout (seq2seq LMs never use one)")


def add_gsr_decoding_args(g: Any) -> None:
    """DialogGSR options of path retrieval: the constraint and its Katz prior (Eq. 3-6), the
    beams, the iterative steps."""
    g.add_argument("--gsr-constraint", type=str, default="katz", choices=CONSTRAINTS,
                   help="decoding of paths (Park Table 5): none (free beam search), hard "
                   "(trie only), connection (trie + 1-hop connection score), katz (trie + "
                   "Katz score, Eq. 6)")
    g.add_argument("--gsr-alpha", type=float, default=0.8,
                   help="alpha of Eq. 3: weight of log p_LM against log p_graph")
    g.add_argument("--katz-beta", type=float, default=0.1,
                   help="beta of the Katz index (Eq. 6): weight beta^k of each k-hop walk "
                   "between entities; smaller favours short connections (Katz requires "
                   "beta below 1 / largest adjacency eigenvalue for the full series; here "
                   "walks stop at --gsr-hops, so any 0 < beta < 1 is finite)")
    g.add_argument("--katz-adjacency", type=str, default="count", choices=list(ADJACENCY_KINDS),
                   help="the A of the Katz index (Eq. 6), whose A^k 'represents the number of "
                   "paths': count = the relations joining two entities in either direction "
                   "(parallel relations are several paths; a path may run a relation backwards, "
                   "as [Rev] hops do); directed = relations h -> t, walks leaving the mentioned "
                   "entity; binary = symmetric 0/1 (models saved before the option)")
    g.add_argument("--gsr-lm-norm", type=str, default="allowed", choices=list(LM_NORMS),
                   help="log p_LM of Eq. 3 under a constraint: allowed = the LM's distribution "
                   "renormalised over the trie's allowed tokens (Park 3.2: p_vocab 'restricted to "
                   "tokens within the valid set'); vocab = the full-vocabulary log-softmax, only "
                   "masked (models saved before the option)")
    g.add_argument("--gsr-hops", type=int, default=2, help="K: longest path in hops (Eq. 6)")
    g.add_argument("--gsr-num-beams", type=int, default=5,
                   help="beams of path retrieval (Park et al. App. B.1: b = 5)")
    g.add_argument("--gsr-length-penalty", type=float, default=1.0,
                   help="length penalty of the path-retrieval beams (the response decodes with "
                   "ParlAI's --inference, --beam-size, --beam-length-penalty, ...; HF generate "
                   "semantics: beam score = sum log p / length^penalty). Park et al. give "
                   "the beam size of constrained decoding (b = 5, App. B.1) but no length "
                   "penalty; 1.0 is HF's default")
    g.add_argument("--gsr-retrieval-steps", type=int, default=2,
                   help="iterative retrieval: at most N paths, each conditioned on the earlier")


def add_gsr_stage_args(g: Any) -> None:
    """DialogGSR options of the stages and their knowledge: pretraining, which subgraph the
    response trains on and is evaluated with, a separate retriever, the KG of chat turns,
    BLEU."""
    g.add_argument("--gsr-stage", type=str, default="all", choices=STAGES,
                   help="pretrain: KG reconstruction (Eq. 8); retrieve: path generation "
                   "(Eq. 9); respond: response from [z_G; x] (Eq. 10); all: retrieve+respond")
    g.add_argument("--gsr-pretrain-steps", type=int, default=0,
                   help="first N updates are KG reconstruction only (special tokens only)")
    g.add_argument("--gsr-train-knowledge", type=str, default="gold",
                   choices=("gold", "retrieved"),
                   help="subgraph the response trains on (stages respond/all): gold: the "
                   "turn's gold paths (teacher forcing with gold knowledge); retrieved: the "
                   "paths the current model retrieves for the turn, as at evaluation "
                   "(Park et al. 3.4, Eq. 10: the response is conditioned on the subgraph "
                   "retrieved by GSR; costs one constrained retrieval per training batch)")
    g.add_argument("--gsr-eval-knowledge", type=str, default="retrieved",
                   choices=("retrieved", "gold"),
                   help="subgraph the response is generated from at evaluation")
    g.add_argument("--gsr-retriever-model-file", type=str, default=None,
                   help="stage respond: a trained -m docgraph/gsr model file (the retrieve "
                   "stage) that, frozen, retrieves the subgraphs the responses are conditioned "
                   "on, in training (--gsr-train-knowledge retrieved) and evaluation (its "
                   "path@k are reported): Park 3.4's multi-stage training, the response model "
                   "apart from the retriever. Unset: this model retrieves for itself")
    g.add_argument("--gsr-kg-file", type=str, default=None,
                   help="triples file (OpenDialKG format) for messages without candidates, "
                   "e.g. in interactive mode")
    g.add_argument("--gsr-bleu-lowercase", type="bool", default=False,
                   help="lower-case hypotheses and references before BLEU's whitespace split; "
                   "false = case counts, as in DialogGSR's evaluator")
