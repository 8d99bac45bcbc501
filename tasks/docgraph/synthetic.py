"""
``docgraph:synthetic[:topic_split|:random_split]``: a procedurally generated WoW-format
knowledge-selection task whose gold sentence can only be told apart through document
structure.

Each dialogue has a knowledge pool of ``--synthetic-people`` short biographies (passages
titled neutrally ``Profile 1``, ``Profile 2``, ... in random order). A biography opens with
the person's name and an apposition (``"Alice Moreau, a painter, plays the violin."``) and
goes on with ``--synthetic-facts`` sentences that say one fact each *through a pronoun*
(``"She was born in Lyon."``). Every person of a pool has the same gender and the same
relations (in a random order per passage), with values distinct within the pool. One
person of the pool is the one the user asks about, by name and by the cue
(``--synthetic-cue``): ``president`` (default): that person's apposition is ``our
president`` (``"Where was our president Alice Moreau born?"``); ``occupation``: the
question names the person's occupation (``"Where was the painter Alice Moreau born?"``).
The label is that person's fact sentence for the asked relation.

Why a plain cross-encoder cannot do it: it scores each pair ``[s_i; x]`` alone. For the
asked relation there are exactly ``people`` candidate sentences (one per passage) that
differ only in their value (``"She was born in Lyon."`` / ``"She was born in Porto."``);
the pronoun is the same in all of them (one gender per pool), the title is a number with
no link to the person, and values are drawn independently of names and roles. So
``P(gold | sentence, context)`` is the same for the ``people`` relation-matching
candidates: the best a pair scorer can reach is ``1 / people`` P@1 (0.25 with the default
4), whatever it learns. Only the graph ties ``She`` to ``Alice Moreau, our president``:
the rule coreference resolver merges the name, its apposition and the pronouns of the
passage into one concept node (``full``/``coref``/``homogeneous`` graphs), joined to every
sentence of the biography, so the cue reaches each fact sentence in one hop; ``sentence``
graphs only have passage membership and narrative order (the fact right after the opening
sentence is one ``next_sentence`` edge away from it).

The wording is chosen so that the resolver gets it right (tested on generated pools:
about 98-99% of biographies form exactly one cluster): appositions are person nouns of
:data:`parlai_docgraph.graphs.coref.PERSON_NOUNS` (a non-person apposition such as
"a pilot" makes the resolver treat the name as a thing, and its pronouns then chain
across passages), and verbs/objects that spaCy mis-tags were removed.

Splits: ``train`` / ``valid`` / ``test`` are generated from ``--synthetic-seed`` and the
split name, deterministically. With ``:topic_split`` (default) the people of valid and test
are *unseen*: their first names and surnames come from a held-out third of the name lists,
disjoint from train's (the topics of this task are the people; relations, values,
occupations and the cue are a closed vocabulary shared by all splits). ``:random_split``
draws every split from all names (seen people). Nothing is read or written: examples are
made in memory, in microseconds per dialogue.

Example::

    parlai display_data -t docgraph:synthetic --label-type chosen_sent -dt valid
    parlai-docgraph ablate -t docgraph:synthetic --label-type chosen_sent \\
        --variants full,none --steps 300 --out-dir /tmp/abl
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser

from parlai_docgraph.tasks.docgraph.generated import GeneratedTaskTeacher, GeneratedTurn
from parlai_docgraph.tasks.docgraph.knowledge_teacher import add_knowledge_label_args

#: version of the generator; bump when a change alters the examples of a seed
GENERATOR_VERSION = 1

FIRST_NAMES: Dict[str, Tuple[str, ...]] = {
    "female": (
        "Alice", "Beatrice", "Clara", "Diana", "Elena", "Fiona", "Greta", "Helena", "Irene",
        "Julia", "Karen", "Laura", "Monica", "Nadia", "Olivia", "Paula", "Rosa", "Sofia",
        "Teresa", "Ursula", "Vera", "Wendy", "Yvonne", "Zoe", "Agnes", "Bianca", "Celia",
    ),
    "male": (
        "Adam", "Bruno", "Carl", "Daniel", "Edward", "Felix", "George", "Henry", "Igor",
        "James", "Kevin", "Louis", "Martin", "Nathan", "Oscar", "Peter", "Robert", "Simon",
        "Thomas", "Victor", "Walter", "Xavier", "Yusuf", "Arthur", "Boris", "Cedric", "Dmitri",
    ),
}
SURNAMES: Tuple[str, ...] = (
    "Moreau", "Keller", "Novak", "Rossi", "Fischer", "Jensen", "Costa", "Dubois", "Weber",
    "Larsen", "Bianchi", "Kowalski", "Varga", "Horvat", "Silva", "Meyer", "Nilsson",
    "Romano", "Schmidt", "Petrov", "Andersen", "Lambert", "Ferrari", "Brennan", "Okafor",
    "Tanaka", "Haddad", "Murray", "Quinn", "Santos", "Walsh", "Becker", "Marino",
)
PRONOUN = {"female": "She", "male": "He"}
#: how the question singles out the person (see the module docstring)
CUES = ("president", "occupation")
GUEST = "our president"
OCCUPATIONS = (
    "painter", "architect", "teacher", "lawyer", "farmer", "engineer", "composer", "poet",
    "scientist", "doctor", "designer", "chef", "explorer", "philosopher", "judge", "athlete",
)
#: the rest of each biography's opening sentence (distinct within a pool)
INTROS = (
    "has two brothers", "speaks four languages", "collects old maps", "grew up near the sea",
    "writes short stories", "plays the violin", "keeps a diary", "runs marathons",
    "restores old clocks", "bakes sourdough bread", "sings in a choir", "paints landscapes",
)


@dataclass(frozen=True)
class Relation:
    """A fact template: ``fact`` with ``{subj}``/``{value}``, and the user's question."""

    name: str
    fact: str
    question: str
    values: Tuple[str, ...]


RELATIONS: Tuple[Relation, ...] = (
    Relation("born", "{subj} was born in {value}.", "Where was {name} born?",
             ("Lyon", "Porto", "Krakow", "Dublin", "Seville", "Bergen", "Turin", "Ghent",
              "Leipzig", "Riga", "Bologna", "Utrecht")),
    Relation("studied", "{subj} studied {value}.", "What did {name} study?",
             ("physics", "history", "music", "botany", "law", "geology", "economics",
              "philosophy", "medicine", "linguistics", "astronomy", "mathematics")),
    Relation("works", "{subj} works in {value}.", "What does {name} work in?",
             ("shipping", "software", "textile", "mining", "publishing", "railway",
              "insurance", "brewing", "aviation", "furniture", "fishing", "glass")),
    Relation("hobby", "{subj} loves {value}.", "What does {name} love doing?",
             ("sailing", "chess", "gardening", "tennis", "fencing", "knitting", "jazz",
              "pottery", "archery", "cycling", "poetry", "skiing")),
    Relation("pet", "{subj} owns a {value}.", "Does {name} have a pet?",
             ("parrot", "tortoise", "spaniel", "ferret", "goldfish", "rabbit", "hamster",
              "pony", "canary", "lizard", "poodle", "kitten")),
)


@dataclass(frozen=True)
class SyntheticConfig:
    """Sizes of the generated task (``--synthetic-*`` options)."""

    dialogues: int = 300
    eval_dialogues: int = 60
    people: int = 4
    facts: int = 3
    turns: int = 2
    occupations: int = len(OCCUPATIONS)
    cue: str = "president"
    seed: int = 0
    unseen: bool = True

    def check(self) -> None:
        """``ValueError`` naming the option that is out of range."""
        limits = {
            "dialogues": (self.dialogues, 1, None),
            "eval_dialogues": (self.eval_dialogues, 1, None),
            "people": (self.people, 2, min(len(OCCUPATIONS), len(INTROS),
                                          min(len(r.values) for r in RELATIONS))),
            "facts": (self.facts, 1, len(RELATIONS)),
            "turns": (self.turns, 1, self.facts),
            "occupations": (self.occupations, self.people, len(OCCUPATIONS)),
        }
        if self.cue not in CUES:
            raise ValueError(f"docgraph:synthetic: --synthetic-cue must be one of "
                             f"{', '.join(CUES)}, got {self.cue!r}")
        for name, (value, low, high) in limits.items():
            flag = f"--synthetic-{name.replace('_', '-')}"
            if not isinstance(value, int) or value < low or (high is not None and value > high):
                bound = f">= {low}" if high is None else f"in [{low}, {high}]"
                raise ValueError(f"docgraph:synthetic: {flag} must be an integer {bound}, "
                                 f"got {value!r}")
        pool = name_pool("train" if not self.unseen else "valid", self.unseen)
        smallest = min(len(pool[0][g]) for g in pool[0])
        if self.people > min(smallest, len(pool[1])):
            raise ValueError(
                f"docgraph:synthetic: --synthetic-people {self.people} exceeds the "
                f"{min(smallest, len(pool[1]))} distinct names a held-out split has")


def name_pool(split: str, unseen: bool) -> Tuple[Dict[str, Sequence[str]], Sequence[str]]:
    """
    ``(first names by gender, surnames)`` a split draws from: with ``unseen``, train takes the
    names at positions ``i % 3 != 2`` and valid/test the others (disjoint people).
    """
    if not unseen:
        return FIRST_NAMES, SURNAMES

    def part(names: Sequence[str]) -> Sequence[str]:
        held = split != "train"
        return [n for i, n in enumerate(names) if (i % 3 == 2) == held]

    return {g: part(ns) for g, ns in FIRST_NAMES.items()}, part(SURNAMES)


def article(noun: str) -> str:
    """``"painter"`` -> ``"a painter"``, ``"engineer"`` -> ``"an engineer"``."""
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def generate_dialogue(rng: random.Random, config: SyntheticConfig, split: str) -> List[GeneratedTurn]:
    """One dialogue: a pool of biographies and ``turns`` questions about one person."""
    firsts, surnames = name_pool(split, config.unseen)
    gender = rng.choice(sorted(firsts))
    names = [f"{f} {s}" for f, s in zip(rng.sample(list(firsts[gender]), config.people),
                                        rng.sample(list(surnames), config.people))]
    relations = rng.sample(list(RELATIONS), config.facts)
    values = {r.name: rng.sample(list(r.values), config.people) for r in relations}
    jobs = rng.sample(list(OCCUPATIONS[: config.occupations]), config.people)
    intros = rng.sample(list(INTROS), config.people)
    order = list(range(config.people))
    rng.shuffle(order)  # passage position p holds person order[p]; titles follow positions
    target = rng.randrange(config.people)
    roles = [GUEST if config.cue == "president" and i == target else article(jobs[i])
             for i in range(config.people)]
    passages: List[Tuple[str, List[str]]] = []
    where: Dict[Tuple[int, str], Tuple[int, int]] = {}
    for p, person in enumerate(order):
        facts = list(relations)
        rng.shuffle(facts)
        sents = [f"{names[person]}, {roles[person]}, {intros[person]}."]
        for r in facts:
            where[(person, r.name)] = (p, len(sents))
            sents.append(r.fact.format(subj=PRONOUN[gender], value=values[r.name][person]))
        passages.append((f"Profile {p + 1}", sents))
    turns = []
    for t, r in enumerate(rng.sample(relations, config.turns)):
        who = GUEST if config.cue == "president" else f"the {jobs[target]}"
        question = r.question.format(name=f"{who} {names[target]}")
        turns.append(GeneratedTurn(
            passages=passages, text=question if t == 0 else f"And {question[0].lower()}{question[1:]}",
            gold=where[(target, r.name)],
            response=r.fact.format(subj=names[target], value=values[r.name][target]),
            topic=names[target]))
    return turns


def generate(config: SyntheticConfig, split: str) -> Iterator[List[GeneratedTurn]]:
    """The dialogues of ``split`` (``train``/``valid``/``test``), a pure function of ``config``."""
    if split not in ("train", "valid", "test"):
        raise ValueError(f"docgraph:synthetic: unknown split {split!r}")
    config.check()
    rng = random.Random(f"docgraph-synthetic:{GENERATOR_VERSION}:{config.seed}:{split}")
    count = config.dialogues if split == "train" else config.eval_dialogues
    for _ in range(count):
        yield generate_dialogue(rng, config, split)


class SyntheticTeacher(GeneratedTaskTeacher):
    """
    The generated structure-only task (module docstring); ``:topic_split`` (default):
    unseen people in valid/test; ``:random_split``: people drawn from all names.
    """

    TASK_NAME = "synthetic"

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("docgraph synthetic task")
        add_knowledge_label_args(group)
        d = SyntheticConfig()
        group.add_argument("--synthetic-dialogues", type=int, default=d.dialogues,
                           help="dialogues (knowledge pools) in train")
        group.add_argument("--synthetic-eval-dialogues", type=int, default=d.eval_dialogues,
                           help="dialogues in each of valid and test")
        group.add_argument("--synthetic-people", type=int, default=d.people,
                           help="biographies (passages) per pool; a cross-encoder's P@1 is "
                           "at most 1/people")
        group.add_argument("--synthetic-facts", type=int, default=d.facts,
                           help=f"pronoun fact sentences per biography (1-{len(RELATIONS)})")
        group.add_argument("--synthetic-turns", type=int, default=d.turns,
                           help="questions per dialogue, about one person (<= facts)")
        group.add_argument("--synthetic-occupations", type=int, default=d.occupations,
                           help="distinct occupations the people of all splits share (a "
                           "closed class, like the relations; >= people)")
        group.add_argument("--synthetic-cue", type=str, default=d.cue, choices=list(CUES),
                           help="president: the asked person is the pool's president ('X, our "
                           "president, ...'); occupation: the question names the person's occupation, "
                           "which only their opening sentence gives (harder: the model must "
                           "match question and graph)")
        group.add_argument("--synthetic-seed", type=int, default=d.seed,
                           help="generator seed (each split has its own stream)")
        return parser

    def make_config(self, opt: Opt, unseen: bool) -> SyntheticConfig:
        return SyntheticConfig(
            dialogues=opt["synthetic_dialogues"],
            eval_dialogues=opt["synthetic_eval_dialogues"],
            people=opt["synthetic_people"], facts=opt["synthetic_facts"],
            turns=opt["synthetic_turns"], seed=opt["synthetic_seed"],
            occupations=opt["synthetic_occupations"],
            cue=opt["synthetic_cue"], unseen=unseen)

    def generate(self, split: str) -> Iterator[List[GeneratedTurn]]:
        return generate(self.config, split)

    def generator_version(self) -> int:
        return GENERATOR_VERSION
