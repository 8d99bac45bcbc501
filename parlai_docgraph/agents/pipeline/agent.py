"""
``-m docgraph``: the selector -> responder pipeline (Li et al. 2022, sections 2.3 and 3.2).

:class:`DocgraphAgent` composes a :class:`~.graph_selector.GraphSelectorAgent` and a
:class:`~.gpt2_responder.GPT2ResponderAgent`; it re-implements neither. Per batch:

1. the selector ranks the knowledge sentences of each message (``know_acc`` etc. at
   evaluation);
2. the responder writes the reply from ``[selected sentence; context]``; with
   ``--reply-mode extract`` the reply is the selected sentence itself (grounded by
   construction, for a responder that cannot write fluent text; the zoo model generates);
   with ``--reply-keeps-answer`` (default) a generated reply that left out part of the
   selected sentence the user did not say already (the "why", the "how much") is replaced
   by the sentence (:func:`~parlai_docgraph.reply_quality.dropped_words`).

Training (one ``train_model`` run trains both, the standard pipeline setup): each part
learns from gold supervision only. The selector from the gold sentence (Eq. 6-8), the
responder by teacher forcing with the *gold* knowledge (Eq. 9); errors of the selector never
reach the responder's loss. ``ppl``/``loss``/``token_acc`` are therefore gold-knowledge
figures, while the generated reply, and so ``rouge_1/2/L``, ``f1``, ``bleu-4``, reads the
*selected* sentence. Each part has its own optimizer and learning rate
(``--selector-learningrate``, ``--responder-learningrate``).

Parts: ``--selector-model-file`` / ``--responder-model-file`` (trained ``-m
docgraph/graph_selector`` / ``-m docgraph/gpt2_responder`` model files, ``zoo:`` paths
work) or, when not given, built fresh from this run's options. They keep training when the
run trains. Saving ``-mf M`` writes ``M`` (a JSON manifest), ``M.opt`` (ParlAI's opt) and
each part as a ParlAI model file of its own: ``M.selector`` and ``M.responder`` (with their
``.opt``); ``eval_model -mf M`` / ``interactive -mf M`` reload all three.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Optional

from parlai.core.agents import Agent, create_agent_from_model_file, create_agent_from_shared
from parlai.core.message import Message
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.utils import logging

from parlai_docgraph.agents.article_turns import ArticleTurns
from parlai_docgraph.atomic import write_text_atomic
from parlai_docgraph.agents.base import fill_saved_opt, qualified_name
from parlai_docgraph.graphs.corpus import Pool as Passages
from parlai_docgraph.graphs.store import default_store_root
from parlai_docgraph.graphs.retrieval import DocumentIndex, retrieval_summary
from parlai_docgraph.graphs.selection import Selection
from parlai_docgraph.agents.pipeline.args import (
    add_part_args, add_pipeline_args, document_retriever,
)
from parlai_docgraph.graphs.render import write_turn_graph
from parlai_docgraph.agents.pipeline.messages import (
    LOAD_REFUSED, check_user_text, keep_answer, merge_metrics, part_opt, part_overrides,
    read_selection, selector_message,
)

PARTS = ("selector", "responder")
MANIFEST_VERSION = 1


class DocgraphAgent(Agent):
    """
    Selects a knowledge sentence with :class:`GraphSelectorAgent`, then writes the reply
    with :class:`GPT2ResponderAgent` (see the module docstring).
    """

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        from parlai_docgraph.agents.gpt2_responder.agent import GPT2ResponderAgent
        from parlai_docgraph.agents.graph_selector.agent import GraphSelectorAgent

        # both parts' options; an option they declare differently is settled in
        # args.SETTLED (the decoding options --inference, --topk are the responder's)
        add_part_args(parser, lambda p: GraphSelectorAgent.add_cmdline_args(p, partial_opt),
                      lambda p: GPT2ResponderAgent.add_cmdline_args(p, partial_opt))
        add_pipeline_args(parser)
        parser.set_defaults(
            display_add_fields="docgraph_note,selected_sentence,top_concepts",
            use_reply="label", validation_metric="ppl", validation_metric_mode="min",
            # ParlAI's default; the selector's 16 would make `parlai interactive` batch
            # several humans
            batchsize=1,
        )
        return parser

    @classmethod
    def upgrade_opt(cls, opt_from_disk: Opt) -> Opt:
        """A model file saved before a pipeline option existed gets its default."""
        return fill_saved_opt(super().upgrade_opt(opt_from_disk), add_pipeline_args, {})

    def __init__(self, opt: Opt, shared=None) -> None:
        opt = Opt(opt)
        opt["model"] = qualified_name(type(self))
        super().__init__(opt, shared)
        self.id = "Docgraph"
        if shared is not None:
            self.selector = create_agent_from_shared(shared["selector"])
            self.responder = create_agent_from_shared(shared["responder"])
        else:
            self.selector = self._build_part("selector")
            self.responder = self._build_part("responder")
        self.last_selection: Optional[Selection] = None
        # a copy (clone(), self_chat's partner, a web session) talks about the same
        # documents: it forks the index (no second read)
        cache_root = (str(default_store_root(opt["datapath"]).parent)
                      if opt.get("datapath") else None)
        self.index = shared["index"].fork() if shared and "index" in shared else DocumentIndex(
            cache_root=cache_root, max_passage_sentences=opt["max_passage_sentences"],
            retriever=document_retriever(opt, self.selector, cache_root))
        self._dense_pending = False  # a background dense build the user was told about
        self.turn_pool: Passages = []  # the knowledge pool of the last turn
        self.article_turns = ArticleTurns()  # ParlAI's -t cmu_dog messages, both parts' form
        self._dialogue: List[str] = []  # this episode's turns, for retrieval
        self._notes: List[str] = []
        self._told_no_knowledge = False
        self._told_history_cut = False
        if shared is None and opt["documents"]:
            self.load_documents(opt["documents"])

    # ------------------------------------------------------------------ documents
    @property
    def documents(self) -> Passages:
        """Every passage of the loaded documents."""
        return self.index.whole

    def load_documents(self, paths: List[str]) -> None:
        """Index the documents that ``paths`` name (files, folders, globs: the user's own
        command line or an upload); problems become notes shown to the user."""
        before = [id(d) for d in self.index.documents]
        problems = self.index.load(paths)
        for problem in problems:
            logging.warning(problem)
        self._notes.extend(problems)
        if [id(d) for d in self.index.documents] != before:  # added or replaced
            self._notes.append(retrieval_summary(self.index))
            logging.info(retrieval_summary(self.index))
            self._dense_pending = not self.index.retriever.ready
        elif not self.documents:
            self._notes.append("no document loaded: replies use no knowledge")

    def turn_graph(self) -> Optional[Any]:
        """The document graph the selector scored on the last turn
        (:meth:`~.graph_selector.select.SelectMixin.scored_graph`: no second build);
        ``None`` for a selector that scores no graph (``--graph-variant none``)."""
        return self.selector.scored_graph()

    def _interactive_turn(self, msg: Message) -> Optional[Message]:
        """
        Prepare a user turn: the knowledge pool retrieved from the documents for the
        dialogue, empty and over-long input. Returns a message the agent answers itself
        (the models are not run), or ``None`` when ``msg`` goes on to the models. No chat
        message names a file: documents come from ``--documents`` (or the web chat's upload).
        """
        raw = msg.get("text") or ""
        if raw.strip().startswith("/load"):
            self._notes.append(LOAD_REFUSED)
            return Message({"episode_done": msg.get("episode_done", False)})
        text, note = check_user_text(raw, self.opt["interactive_max_chars"])
        if note:
            self._notes.append(note)
        if text is None:
            return Message({"episode_done": msg.get("episode_done", False)})
        msg.force_set("text", text)
        if msg.get("knowledge_passages") or msg.get("knowledge"):
            return None  # the world gave a pool (-t docgraph:... topics)
        if self.documents:
            if self._dense_pending and self.index.retriever.ready:
                self._dense_pending = False
                self._notes.append("dense index ready: passages are now ranked by "
                                   f"{self.index.retriever.name} retrieval")
            self._dialogue.append(text)
            self.turn_pool = self.index.retrieve(
                self._dialogue, self.opt["retrieval_sentences"])
            msg.force_set("knowledge_passages", [[t, list(ss)] for t, ss in self.turn_pool])
        elif not self._told_no_knowledge:
            self._told_no_knowledge = True
            self._notes.append("no documents: replies use no knowledge (start the chat "
                               "with --documents FILE ..., or -t docgraph:sample for topics)")
        return None

    # ------------------------------------------------------------------ parts
    def _build_part(self, part: str) -> Agent:
        from parlai_docgraph.agents.gpt2_responder.agent import GPT2ResponderAgent
        from parlai_docgraph.agents.gpt2_responder.dictionary import ResponderDictionaryAgent
        from parlai_docgraph.agents.graph_selector.agent import GraphSelectorAgent
        from parlai_docgraph.agents.graph_selector.dictionary import GraphSelectorDictionaryAgent

        opt = self.opt
        mf = opt.get("model_file")
        saved = f"{mf}.{part}" if mf and os.path.isfile(f"{mf}.{part}.opt") else None
        source = saved or opt[f"{part}_model_file"]
        if source:
            logging.info(f"docgraph pipeline: {part} from {source}")
            agent = create_agent_from_model_file(source, part_overrides(opt, part))
            if agent is None:
                raise FileNotFoundError(
                    f"--{part}-model-file {source}: no {source}.opt next to it; pass the "
                    f"model file of a trained docgraph {part}")
            return agent
        if part == "selector":
            cls, dict_cls, extra = GraphSelectorAgent, GraphSelectorDictionaryAgent, {
                "use_reply": "none", "candidates": "inline", "eval_candidates": "inline",
                "interactive_candidates": "inline", "inference": "max"}
        else:
            cls, dict_cls, extra = GPT2ResponderAgent, ResponderDictionaryAgent, {
                "use_reply": opt["use_reply"]}
        sub = part_opt(opt, part, qualified_name(cls), qualified_name(dict_cls),
                       f"{mf}.{part}" if mf else None, extra)
        logging.info(f"docgraph pipeline: new {part} ({qualified_name(cls)})")
        return cls(sub)

    def share(self) -> Dict[str, Any]:
        shared = super().share()
        shared["selector"] = self.selector.share()
        shared["responder"] = self.responder.share()
        shared["index"] = self.index
        return shared

    # ------------------------------------------------------------------ dialogue
    def observe(self, observation) -> Message:
        """Both parts observe the message; the selector's context is the responder's
        dialogue history, so both read the same turns (a ParlAI ``-t cmu_dog`` message
        first gets its pool and pseudo label: :mod:`..article_turns`)."""
        msg = Message(self.article_turns.adapt(observation))
        if self.opt.get("interactive_mode") and "text" in msg and not any(
                k in msg for k in ("labels", "eval_labels")):
            if msg.get("id") == "context" and not str(msg["text"]).strip():
                # ParlAI's self_chat world opens with an empty context for the second
                # agent: not a user's empty turn, nothing to observe
                self.observation = Message({"episode_done": msg.get("episode_done", False),
                                            "docgraph_answered": True})
                return self.observation
            answered = self._interactive_turn(msg)
            if answered is not None:
                if msg.get("episode_done"):
                    # a bare [DONE] ends the episode without a turn for the models: their
                    # dialogue (the selector's context) starts afresh all the same
                    self.reset()
                self.observation = Message({**answered, "docgraph_answered": True})
                return self.observation
        resp_msg = msg.copy()
        if not any(k in msg for k in ("labels", "eval_labels")):
            # nothing to score: the responder's one prompt waits for the selection
            resp_msg["awaiting_selection"] = True
        resp_obs = self.responder.observe(resp_msg)
        context = resp_obs.get("full_text") if resp_obs is not None else None
        if self.opt.get("interactive_mode") and resp_obs is not None \
                and resp_obs.get("context_truncate_rate") and not self._told_history_cut:
            self._told_history_cut = True
            self._notes.append(
                f"the dialogue is longer than the generator reads: it sees the last "
                f"{self.responder.opt['responder_context_truncate']} tokens of it")
        sel_obs = self.selector.observe(selector_message(msg, context))
        self.observation = Message({
            "episode_done": msg.get("episode_done", False),
            "docgraph_raw": msg, "docgraph_selector": sel_obs,
            "docgraph_responder": resp_obs,
        })
        return self.observation

    def act(self) -> Message:
        if self.observation is not None and self.observation.get("docgraph_answered"):
            reply = Message({"id": self.getID(), "episode_done": False, "text": ""})
            if self._notes:
                reply["docgraph_note"] = " | ".join(self._notes)
                self._notes = []
            return reply
        reply = self.batch_act([self.observation])[0]
        self.self_observe(reply)
        if self._notes:
            reply["docgraph_note"] = " | ".join(self._notes)
            self._notes = []
        if self.opt["show_graph"] and self.last_selection and self.documents:
            self._write_graph(reply)
        return reply

    def _write_graph(self, reply: Message) -> None:
        graph = self.turn_graph()
        if graph is None:
            note = (f"--show-graph: the selector (--graph-variant "
                    f"{self.selector.opt['graph_variant']}) scores no graph; none is written")
            reply["docgraph_note"] = " | ".join(
                n for n in (reply.get("docgraph_note"), note) if n)
            return
        raw = self.observation.get("docgraph_raw", {})
        path = write_turn_graph(graph, self.opt["show_graph"], self.last_selection,
                                raw.get("text", ""), reply.get("text", ""))
        reply["graph_file"] = str(path)

    #: optional hook (the web chat streams with it): called with the
    #: :class:`~parlai_docgraph.graphs.selection.Selection` of a one-message batch outside
    #: training, after the selector ran and before the responder generates
    on_selection: Optional[Callable[[Selection], None]] = None

    def batch_act(self, observations: List[Message]) -> List[Message]:
        raws = [o.get("docgraph_raw", {}) if o else {} for o in observations]
        sel_obs = [o.get("docgraph_selector", Message()) if o else Message() for o in observations]
        resp_obs = [o.get("docgraph_responder", Message()) if o else Message()
                    for o in observations]
        sel_replies = self.selector.batch_act(sel_obs)
        selections = [read_selection(raw, rep, self.opt.get("no_knowledge_margin"))
                      for raw, rep in zip(raws, sel_replies)]
        training = any("labels" in o for o in resp_obs if o)
        if self.on_selection is not None and len(selections) == 1 and not training:
            self.on_selection(selections[0])
        if not training:
            for obs, sel in zip(resp_obs, selections):
                if obs is not None and "text_vec" in obs:
                    obs.force_set("selected_knowledge", sel)
        resp_replies = self.responder.batch_act(resp_obs)
        replies = []
        for raw, sel, srep, rrep in zip(raws, selections, sel_replies, resp_replies):
            reply = Message({"id": self.getID(), "episode_done": False})
            if rrep.get("text") is not None:
                reply["text"] = rrep["text"]
            if not training and self.opt["reply_mode"] == "extract" and sel.uses_knowledge:
                reply["generated_text"] = reply.get("text")
                reply.force_set("text", sel.sentence)
            elif not training and self.opt["reply_keeps_answer"]:
                keep_answer(reply, sel, raw.get("text") or "")
            if raw.get("knowledge_passages") is not None or raw.get("knowledge"):
                reply["selected_title"] = sel.title
                reply["selected_sentence"] = sel.sentence
                reply["top_concepts"] = list(sel.top_concepts)
                reply["no_knowledge_gap"] = sel.no_knowledge_gap
            metrics = merge_metrics(rrep.get("metrics"), srep.get("metrics"))
            if metrics:
                reply["metrics"] = metrics
            replies.append(reply)
        if len(selections) == 1:
            self.last_selection = selections[0]
        return replies

    def self_observe(self, self_message: Message) -> None:
        if self._dialogue and self_message.get("text"):
            self._dialogue.append(self_message["text"])
        self.selector.self_observe(self_message)
        self.responder.self_observe(self_message)

    def reset(self) -> None:
        super().reset()
        self._dialogue = []
        self._told_history_cut = False
        self.article_turns.reset()
        self.index.last_pool = None
        self.selector.reset()
        self.responder.reset()

    # ------------------------------------------------------------------ metrics
    def report(self) -> Dict[str, Any]:
        return merge_metrics(self.responder.report(), self.selector.report())

    def reset_metrics(self) -> None:
        self.selector.reset_metrics()
        self.responder.reset_metrics()

    def receive_metrics(self, metrics_dict: Dict[str, Any]) -> None:
        for part in (self.selector, self.responder):
            if hasattr(part, "receive_metrics"):
                part.receive_metrics(metrics_dict)

    # ------------------------------------------------------------------ saving
    def save(self, path: Optional[str] = None) -> None:
        """``path`` (manifest), ``path.opt`` and each part as ``path.<part>``."""
        path = path or self.opt.get("model_file")
        if not path:
            return
        for part in PARTS:
            getattr(self, part).save(f"{path}.{part}")
        if getattr(self.selector, "dict", None) is not None:
            # ParlAI looks for <model_file>.dict of --dict-class (the selector's placeholder)
            self.selector.dict.save(f"{path}.dict", sort=False)
        manifest = {
            "agent": qualified_name(type(self)),
            "version": MANIFEST_VERSION,
            "parts": {part: f"{os.path.basename(path)}.{part}" for part in PARTS},
        }
        write_text_atomic(path, json.dumps(manifest, indent=1) + "\n")
        opt = Opt(self.opt)
        opt["model_file"] = path
        for part in PARTS:  # the saved parts are what a reload uses
            opt[f"{part}_model_file"] = None
        opt.save(f"{path}.opt")

    def shutdown(self) -> None:
        for part in (self.selector, self.responder):
            part.shutdown()
        super().shutdown()


__all__ = ["DocgraphAgent"]
