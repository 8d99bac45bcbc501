"""
``docgraph:expedition[:topic_split|:random_split]``: a second generated structure task, built
differently from ``docgraph:synthetic`` so that a selector tuned on one can be tested on the
other.

Each dialogue's pool is an expedition report: a ``Crew`` passage that introduces
``--expedition-people`` members, one sentence each, by full name and role (``"Ana Ruiz, our
doctor, packed the first aid kit."``), followed by one journal passage per member (titled
``Journal 1``, ``Journal 2``, ... in random order, not by name). A journal opens with the
member's *surname only* (``"Ruiz departed at dawn."``) and goes on with
``--expedition-events`` event sentences in a random order, each through a pronoun (``"She
crossed the gorge."``, ``"She camped near the lake."``). Every member of a pool has the same
gender and the same kinds of events, with values distinct within the pool.

The user asks about one member by role, never by name, with two kinds of question:

- **relation** (``"Where did our doctor camp?"``): the label is that member's sentence of the
  asked event. Finding it needs coreference *across passages*: the journal's pronoun links to
  its surname, the surname to the full name in ``Crew``, and that to the role.
- **order** (``"What did our doctor do after crossing the gorge?"``): the label is the
  sentence right after the named event in the same journal. It needs *narrative order*.

Distractors share the asked relation: every journal has a sentence of the asked event
(same pronoun, another value), and every journal has a sentence after its own event of
that kind. A cross-encoder scoring ``[sentence; question]`` alone therefore cannot tell the
gold from ``people - 1`` equally good candidates for a relation question, and for an order
question does not see the previous sentence at all. Differences from ``docgraph:synthetic``:
names and roles live in a different passage from the facts (synthetic: one biography per
passage, name, role and pronouns together), journals name the member by surname only,
questions never give the name, events and question templates are different, and a second
question kind needs the ``next_sentence`` edges.

Splits are deterministic functions of ``--expedition-seed`` and the split name;
``:topic_split`` (default) draws valid/test members from names held out of train (see
:func:`~.synthetic.name_pool`); ``:random_split`` from all names. Nothing is read or written.

Example::

    parlai display_data -t docgraph:expedition --label-type chosen_sent -dt valid
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser

from parlai_docgraph.tasks.docgraph.generated import GeneratedTaskTeacher, GeneratedTurn
from parlai_docgraph.tasks.docgraph.synthetic import PRONOUN, name_pool
from parlai_docgraph.tasks.docgraph.knowledge_teacher import add_knowledge_label_args

#: version of the generator; bump when a change alters the examples of a seed
GENERATOR_VERSION = 1

#: person nouns the rule coreference resolver knows (graphs.coref.PERSON_NOUNS)
ROLES: Tuple[str, ...] = (
    "doctor", "photographer", "pilot", "engineer", "journalist", "biologist", "historian",
    "chemist", "teacher", "carpenter", "sailor", "surgeon",
)
#: the rest of each crew sentence (distinct within a pool; no person nouns, no pronouns)
TASKS: Tuple[str, ...] = (
    "packed the first aid kit", "carried the spare rope", "checked the weather charts",
    "mended the old tent", "counted the food tins", "charged the radio batteries",
    "sharpened the ice axes", "labelled the sample jars", "cleaned the camp stove",
    "loaded the supply sledge", "tested the water filter", "sorted the climbing gear",
)
DEPARTURES: Tuple[str, ...] = (
    "at dawn", "before noon", "after lunch", "at sunset", "at sunrise", "before dawn",
    "after breakfast", "at midnight", "in the afternoon", "in the evening",
)


@dataclass(frozen=True)
class Event:
    """A journal event: ``fact`` with ``{subj}``/``{value}``, its questions, its values."""

    name: str
    fact: str
    question: str
    after: str
    values: Tuple[str, ...]


EVENTS: Tuple[Event, ...] = (
    Event("cross", "{subj} crossed the {value}.", "What did {who} cross?",
          "crossing the {value}",
          ("gorge", "marsh", "ridge", "stream", "moraine", "valley", "saddle", "ice field",
           "scree slope", "frozen lake")),
    Event("camp", "{subj} camped near the {value}.", "Where did {who} camp?",
          "camping near the {value}",
          ("waterfall", "birch wood", "old mill", "hot spring", "cliff edge", "pine forest",
           "stone hut", "river bend", "meadow", "cave mouth")),
    Event("find", "{subj} found a {value}.", "What did {who} find?",
          "finding the {value}",
          ("fossil", "compass", "silver coin", "bone flute", "bronze ring", "clay pot",
           "flint blade", "lost glove", "bird skull", "amber bead")),
    Event("spot", "{subj} spotted a {value}.", "Which animal did {who} spot?",
          "spotting the {value}",
          ("lynx", "golden eagle", "brown bear", "wolf", "moose", "snow hare", "red fox",
           "wild boar", "chamois", "marmot")),
    Event("lose", "{subj} dropped the {value}.", "What did {who} drop?",
          "dropping the {value}",
          ("map case", "torch", "water bottle", "spare knife", "field notebook", "whistle",
           "tent pegs", "thermos", "sun hat", "pocket lamp")),
)
KINDS = ("relation", "order")


@dataclass(frozen=True)
class ExpeditionConfig:
    """Sizes of the generated task (``--expedition-*`` options)."""

    dialogues: int = 200
    eval_dialogues: int = 60
    people: int = 4
    events: int = 3
    seed: int = 0
    unseen: bool = True

    def check(self) -> None:
        """``ValueError`` naming the option that is out of range."""
        smallest = min(len(ROLES), len(TASKS), len(DEPARTURES),
                       min(len(e.values) for e in EVENTS))
        firsts, surnames = name_pool("valid" if self.unseen else "train", self.unseen)
        names = min(min(len(v) for v in firsts.values()), len(surnames))
        limits = {
            "dialogues": (self.dialogues, 1, None),
            "eval_dialogues": (self.eval_dialogues, 1, None),
            "people": (self.people, 2, min(smallest, names)),
            "events": (self.events, 2, len(EVENTS)),
        }
        for name, (value, low, high) in limits.items():
            flag = f"--expedition-{name.replace('_', '-')}"
            if not isinstance(value, int) or value < low or (high is not None and value > high):
                bound = f">= {low}" if high is None else f"in [{low}, {high}]"
                raise ValueError(f"docgraph:expedition: {flag} must be an integer {bound}, "
                                 f"got {value!r}")


def generate_dialogue(rng: random.Random, config: ExpeditionConfig, split: str
                      ) -> List[GeneratedTurn]:
    """One pool (crew + journals) and two questions about one member: relation, order."""
    firsts, surnames = name_pool(split, config.unseen)
    gender = rng.choice(sorted(firsts))
    pron = PRONOUN[gender]
    n = config.people
    first = rng.sample(list(firsts[gender]), n)
    last = rng.sample(list(surnames), n)
    roles = rng.sample(list(ROLES), n)
    tasks = rng.sample(list(TASKS), n)
    departures = rng.sample(list(DEPARTURES), n)
    events = rng.sample(list(EVENTS), config.events)
    values = {e.name: rng.sample(list(e.values), n) for e in events}
    crew = [f"{first[i]} {last[i]}, our {roles[i]}, {tasks[i]}." for i in range(n)]
    passages: List[Tuple[str, List[str]]] = [("Crew", crew)]
    order = list(range(n))
    rng.shuffle(order)
    where: Dict[Tuple[int, str], Tuple[int, int]] = {}
    sequence: Dict[int, List[Event]] = {}
    for j, person in enumerate(order):
        seq = list(events)
        rng.shuffle(seq)
        sequence[person] = seq
        sents = [f"{last[person]} departed {departures[person]}."]
        for e in seq:
            where[(person, e.name)] = (j + 1, len(sents))
            sents.append(e.fact.format(subj=pron, value=values[e.name][person]))
        passages.append((f"Journal {j + 1}", sents))
    target = rng.randrange(n)
    who = f"our {roles[target]}"
    kinds = list(KINDS)
    rng.shuffle(kinds)
    turns: List[GeneratedTurn] = []
    for t, kind in enumerate(kinds):
        seq = sequence[target]
        if kind == "relation":
            e = rng.choice(seq)
            question = e.question.format(who=who)
            gold = where[(target, e.name)]
        else:
            e = rng.choice(seq[:-1])  # an event with a next sentence
            question = (f"What did {who} do after "
                        f"{e.after.format(value=values[e.name][target])}?")
            p, s = where[(target, e.name)]
            gold = (p, s + 1)
        text = question if t == 0 else f"And {question[0].lower()}{question[1:]}"
        sentence = passages[gold[0]][1][gold[1]]
        turns.append(GeneratedTurn(
            passages=passages, text=text, gold=gold, topic=f"{first[target]} {last[target]}",
            response=sentence.replace(pron, last[target], 1)))
    return turns


def generate(config: ExpeditionConfig, split: str) -> Iterator[List[GeneratedTurn]]:
    """The dialogues of ``split`` (``train``/``valid``/``test``), a pure function of ``config``."""
    if split not in ("train", "valid", "test"):
        raise ValueError(f"docgraph:expedition: unknown split {split!r}")
    config.check()
    rng = random.Random(f"docgraph-expedition:{GENERATOR_VERSION}:{config.seed}:{split}")
    count = config.dialogues if split == "train" else config.eval_dialogues
    for _ in range(count):
        yield generate_dialogue(rng, config, split)


class ExpeditionTeacher(GeneratedTaskTeacher):
    """
    The expedition-report structure task (module docstring); ``:topic_split`` (default):
    unseen crew names in valid/test; ``:random_split``: names drawn from all.
    """

    TASK_NAME = "expedition"

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("docgraph expedition task")
        add_knowledge_label_args(group)
        d = ExpeditionConfig()
        group.add_argument("--expedition-dialogues", type=int, default=d.dialogues,
                           help="dialogues (reports) in train; two questions each")
        group.add_argument("--expedition-eval-dialogues", type=int, default=d.eval_dialogues,
                           help="dialogues in each of valid and test")
        group.add_argument("--expedition-people", type=int, default=d.people,
                           help="crew members (journal passages) per report")
        group.add_argument("--expedition-events", type=int, default=d.events,
                           help=f"event sentences per journal (2-{len(EVENTS)})")
        group.add_argument("--expedition-seed", type=int, default=d.seed,
                           help="generator seed (each split has its own stream)")
        return parser

    def make_config(self, opt: Opt, unseen: bool) -> ExpeditionConfig:
        return ExpeditionConfig(
            dialogues=opt["expedition_dialogues"],
            eval_dialogues=opt["expedition_eval_dialogues"],
            people=opt["expedition_people"],
            events=opt["expedition_events"],
            seed=opt["expedition_seed"], unseen=unseen)

    def generate(self, split: str) -> Iterator[List[GeneratedTurn]]:
        return generate(self.config, split)

    def generator_version(self) -> int:
        return GENERATOR_VERSION
