"""
Interactive and self-chat worlds of the ``docgraph`` tasks: ``parlai interactive -mf M -t
docgraph:sample`` (or ``docgraph:wow``, ``docgraph:holle``, ``docgraph``) chats about the
topics of the task; ``parlai self_chat -mf M -t docgraph:sample`` lets the model talk to a
copy of itself about them. ``docgraph:cmu_dog`` and ParlAI's own ``cmu_dog`` (whose
``parlai.tasks.cmu_dog.worlds`` is :mod:`.cmu_dog_worlds`) chat about CMU_DoG's movies, each
with its whole article as the pool.

Each chat picks one topic of the task's ``--interactive-topics-datatype`` split (in order,
or the one named by ``--topic``) and hands the model, with every turn it observes, that
topic's knowledge pool: the ``knowledge_passages`` of the first turn of an episode with that
``chosen_topic``, as the Wizard of Wikipedia collection showed its wizards. The first
user turn is prefixed with the topic, as WoW's first turns are; in a self-chat both agents
first observe the topic as their context (as ParlAI's WoW self-chat world does).

ParlAI's ``self_chat`` script looks for ``SelfChat<Task>World`` in a task's ``worlds.py``
and, when there is none, silently falls back to a plain two-agent world in which the model
speaks first without having observed anything (a ``TorchAgent`` then fails with "You're
self_observing without having observed something"): hence the ``SelfChat*World`` classes.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from parlai.core.message import Message
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.core.worlds import validate
from parlai.tasks.interactive.worlds import InteractiveWorld as _ParlaiInteractiveWorld
from parlai.tasks.self_chat.worlds import SelfChatWorld as _ParlaiSelfChatWorld

from parlai_docgraph.graphs.knowledge_lines import NO_KNOWLEDGE_LINE

Topic = Tuple[str, List[List]]


def task_topics(opt: Opt, datatype: str) -> List[Topic]:
    """
    ``[(chosen_topic, knowledge_passages), ...]`` of ``opt['task']``'s ``datatype`` split, in
    data order, one per topic; ``ValueError`` when the task has no knowledge pools.
    """
    from parlai.core.teachers import create_task_agent_from_taskname

    topt = Opt(opt)
    split = datatype.split(":")[0]
    topt["datatype"] = "train:ordered" if split == "train" else split  # valid/test: ordered
    topt["interactive_mode"] = False
    teacher = create_task_agent_from_taskname(topt)[0]
    seen: Dict[str, List[List]] = {}
    first = True
    for _ in range(teacher.num_examples()):
        msg = teacher.act()
        topic = msg.get("chosen_topic") or msg.get("title")
        if first and topic and msg.get("knowledge_passages") and topic not in seen:
            seen[topic] = [[t, list(s)] for t, s in msg["knowledge_passages"]]
        first = bool(msg.get("episode_done"))
    if not seen:
        raise ValueError(
            f"-t {opt['task']} ({datatype}) has no messages with knowledge_passages; the "
            f"docgraph interactive world needs a docgraph WoW-format task")
    return list(seen.items())


class _TopicWorld:
    """
    One task topic per episode and its knowledge pool (shared by the worlds below; listed
    first in their bases, so its methods wrap the ParlAI world's through ``super()``).
    """

    opt: Opt

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)  # type: ignore[misc]
        cls.add_topic_args(parser)
        return parser

    def init_contexts(self, shared=None) -> None:
        self.init_topics(shared)

    def share(self):
        shared = super().share()  # type: ignore[misc]
        shared["topics"] = self.topics
        return shared

    @staticmethod
    def add_topic_args(parser: ParlaiParser) -> None:
        group = parser.add_argument_group("docgraph topic worlds")
        group.add_argument("--topic", type=str, default=None,
                           help="interactive / self_chat: chat about this topic (default: "
                           "the split's topics in order)")
        group.add_argument("--interactive-topics-datatype", type=str, default="valid",
                           help="interactive / self_chat: split whose topics and knowledge "
                           "pools are used")

    def load_topics(self) -> List[Topic]:
        """The topics of the task (the first pool of each ``chosen_topic``)."""
        return task_topics(self.opt, self.opt["interactive_topics_datatype"])

    def init_topics(self, shared=None) -> None:
        if shared is not None and "topics" in shared:
            self.topics = shared["topics"]
        else:
            self.topics = self.load_topics()
        wanted = self.opt.get("topic")
        if wanted:
            names = [name for name, _ in self.topics]
            if wanted not in names:
                raise ValueError(f"--topic {wanted!r} is not a topic of {self.opt['task']}; "
                                 f"some topics: {', '.join(names[:10])}")
            self.topics = [t for t in self.topics if t[0] == wanted]
        self.topic_index = -1
        self.topic: Optional[Topic] = None

    def next_topic(self) -> Topic:
        self.topic_index = (self.topic_index + 1) % len(self.topics)
        self.topic = self.topics[self.topic_index]
        return self.topic

    def grounded(self, act: Message) -> Message:
        """
        ``act`` with the current topic's knowledge pool, as the model observes it: the
        fields of a ``--label-type chosen_sent`` WoW message (``knowledge_passages``,
        ``knowledge`` lines, and those lines as ``label_candidates`` after the
        no-knowledge line), so a knowledge ranker on its own (``-m
        docgraph/graph_selector``) has candidates to choose from.
        """
        name, passages = self.topic
        lines = [f"{title} {sentence}" for title, sentences in passages
                 for sentence in sentences]
        act = Message(act)
        act.force_set("knowledge_passages", passages)
        act.force_set("chosen_topic", name)
        act.force_set("knowledge", "".join(line + "\n" for line in lines))
        act.force_set("label_candidates", [NO_KNOWLEDGE_LINE] + lines)
        return act


class InteractiveWorld(_TopicWorld, _ParlaiInteractiveWorld):
    """A human chats with the model about one task topic per episode (module docstring)."""

    def parley(self) -> None:
        human, model = self.agents
        if self.turn_cnt == 0:
            name, passages = self.next_topic()
            titles = ", ".join(t for t, _ in passages[:5])
            print(f"[topic]: {name}  ({len(passages)} passages: {titles}...)")
        try:
            act = Message(human.act())
        except StopIteration:
            self.reset()
            self.finalize_episode()
            self.turn_cnt = 0
            return
        name, _ = self.topic
        if self.turn_cnt == 0 and act.get("text"):
            act.force_set("text", f"{name}\n{act['text']}")
        act = self.grounded(act)
        self.acts[0] = act
        model.observe(validate(act))
        self.acts[1] = model.act()
        human.observe(validate(self.acts[1]))
        self.update_counters()
        self.turn_cnt += 1
        if act.get("episode_done"):
            self.finalize_episode()
            self.turn_cnt = 0


class InteractiveSampleWorld(InteractiveWorld):
    pass


class InteractiveWowWorld(InteractiveWorld):
    pass


class InteractiveHolleWorld(InteractiveWorld):
    pass


class SelfChatWorld(_TopicWorld, _ParlaiSelfChatWorld):
    """
    The model and a copy of itself (or ``--partner-model-file``) talk about one task topic
    per episode: both observe the topic as their context, then take turns, each observed
    turn carrying the topic's knowledge pool (module docstring). ParlAI's base world gives
    the dialogue structure (``--selfchat-max-turns``, episodes, logging).
    """

    def parley(self) -> None:
        if self.episode_done():
            self._end_episode()
        if self.turn_cnt == 0:
            name, _ = self.next_topic()
            self.acts = [Message({"id": "context", "text": name, "episode_done": False})
                         for _ in self.agents]
            for agent, context in zip(self.agents, self.acts):
                agent.observe(validate(self.grounded(context)))
        else:
            for i in (0, 1):
                self.acts[i] = self.agents[i].act()
                self.agents[1 - i].observe(validate(self.grounded(self.acts[i])))
        self.update_counters()
        self.turn_cnt += 1


class SelfChatSampleWorld(SelfChatWorld):
    pass


class SelfChatWowWorld(SelfChatWorld):
    pass


class SelfChatHolleWorld(SelfChatWorld):
    pass


def movie_topics(opt: Opt) -> List[Topic]:
    """CMU_DoG's 30 movies (``wiki_data.json`` of the datapath), each with its whole article
    as the pool (:func:`~parlai_docgraph.graphs.movie_articles.article_pool`): in a chat no
    section is shown, so the model may select from any of them."""
    import os

    from parlai_docgraph.graphs.movie_articles import article_pool
    from parlai_docgraph.tasks.docgraph.build import cmu_dog_folder
    from parlai_docgraph.tasks.docgraph.readers.cmu_dog import read_articles

    articles = read_articles(os.path.join(cmu_dog_folder(opt["datapath"]), "wiki_data.json"))
    pools = [article_pool(articles[key]) for key in sorted(articles, key=int)]
    return [(pool[0][0], [[t, list(ss)] for t, ss in pool]) for pool in pools if pool]


class InteractiveCmu_dogWorld(InteractiveWorld):
    """``parlai interactive -t docgraph:cmu_dog`` (and ``-t cmu_dog``): one movie per episode."""

    def load_topics(self) -> List[Topic]:
        return movie_topics(self.opt)


class SelfChatCmu_dogWorld(SelfChatWorld):
    """``parlai self_chat -t docgraph:cmu_dog`` (and ``-t cmu_dog``): one movie per episode."""

    def load_topics(self) -> List[Topic]:
        return movie_topics(self.opt)
