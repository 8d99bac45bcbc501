"""
Interactive worlds of the ``docgraph`` tasks: ``parlai interactive -mf M -t docgraph:sample``
(or ``docgraph:wow``, ``docgraph:holle``, ``docgraph``) chats about the topics of the task.

Each chat picks one topic of the task's ``--interactive-topics-datatype`` split (in order,
or the one named by ``--topic``) and hands the model, with every user turn, that topic's
knowledge pool: the ``knowledge_passages`` of the first turn of an episode with that
``chosen_topic``, as the Wizard of Wikipedia collection showed its wizards. The first
user turn is prefixed with the topic, as WoW's first turns are.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from parlai.core.message import Message
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.core.worlds import validate
from parlai.tasks.interactive.worlds import InteractiveWorld as _ParlaiInteractiveWorld

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


class InteractiveWorld(_ParlaiInteractiveWorld):
    """A human chats with the model about one task topic per episode (module docstring)."""

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("docgraph interactive world")
        group.add_argument("--topic", type=str, default=None,
                           help="chat about this topic (default: the split's topics in order)")
        group.add_argument("--interactive-topics-datatype", type=str, default="valid",
                           help="split whose topics and knowledge pools are used")
        return parser

    def init_contexts(self, shared=None) -> None:
        if shared is not None and "topics" in shared:
            self.topics = shared["topics"]
        else:
            self.topics = task_topics(self.opt,
                                      self.opt["interactive_topics_datatype"])
        wanted = self.opt.get("topic")
        if wanted:
            names = [name for name, _ in self.topics]
            if wanted not in names:
                raise ValueError(f"--topic {wanted!r} is not a topic of {self.opt['task']}; "
                                 f"some topics: {', '.join(names[:10])}")
            self.topics = [t for t in self.topics if t[0] == wanted]
        self.topic_index = -1
        self.topic: Optional[Topic] = None

    def share(self):
        shared = super().share()
        shared["topics"] = self.topics
        return shared

    def next_topic(self) -> Topic:
        self.topic_index = (self.topic_index + 1) % len(self.topics)
        self.topic = self.topics[self.topic_index]
        return self.topic

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
        name, passages = self.topic
        if self.turn_cnt == 0 and act.get("text"):
            act.force_set("text", f"{name}\n{act['text']}")
        act.force_set("knowledge_passages", passages)
        act.force_set("chosen_topic", name)
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
