#!/usr/bin/env python3
"""
Write a generated Wizard of Wikipedia-format set in which only coreference and narrative
order tell the gold sentence: read with the stock ``-t docgraph:wow:topic_split``
(or ParlAI's own WoW teacher) from ``--datapath``::

    python tools/make_coref_groups.py --out /tmp/groups        # writes /tmp/groups/wizard_of_wikipedia/
    parlai train_model -m docgraph/graph_selector -t docgraph:wow:topic_split \\
        --datapath /tmp/groups --label-type chosen_sent --graph-variant full ...

Each dialogue is about an invented group (its chosen topic, ``"Velmora Rowing Club"``). The
topic passage says what the group is; the passages the Apprentice's turns retrieve (titled
``"<group>: early years"``, ``"<group>: later years"``, never by a member) introduce its
``--members`` members one after another, each by full name in a sentence of their own
(``"Alice Moreau joined the club in 1998."``), followed by ``--facts`` sentences about them
that name them only by pronoun (``"She grew up in Lyon."``), in a random order. The members
of a group share one gender and the same relations, with values distinct within the group
and drawn independently of the names. The Apprentice asks about a member by name (``"Where
did Alice Moreau grow up?"``); the Wizard's checked sentence is that member's pronoun
sentence of the asked relation, and every other member's sentence of that relation (same
pronoun, another value) is a distractor. A cross-encoder that scores ``[sentence; question]``
alone therefore cannot tell the ``members`` relation-matching candidates apart (its P@1 is at
most ``1 / members``); which one belongs to the named member is said only by the nearest
preceding name (narrative order), which the rule coreference resolver follows.

Splits: ``train.json``; ``valid_topic_split.json`` / ``test_topic_split.json`` with groups and
members no other split has (their places, first names and surnames come from disjoint parts
of the lists: unseen topics); ``valid_random_split.json`` / ``test_random_split.json`` drawn
like train (seen topics); ``topic_splits.json`` lists the groups of each split. The output is
a pure function of the options (same options, same bytes); ``--check`` compares a folder with
what the options would write.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import sys
from dataclasses import asdict, dataclass
from typing import Dict, List, Sequence, Tuple

# a fact template about a member (``fact`` with ``{subj}``/``{value}``, and the question)
from parlai_docgraph.tasks.docgraph.synthetic import Relation

#: bump when a change alters the files of given options
VERSION = 1

FIRST_NAMES: Dict[str, Tuple[str, ...]] = {
    "female": (
        "Alice", "Beatrice", "Clara", "Diana", "Elena", "Fiona", "Greta", "Harriet", "Irene",
        "Julia", "Karen", "Laura", "Monica", "Nadia", "Olivia", "Paula", "Rosa", "Sofia",
        "Teresa", "Ursula", "Valerie", "Wendy", "Yvonne", "Zoe", "Amy", "Beth", "Celia",
        "Dora", "Esther", "Flora", "Gloria", "Hilda", "Hannah", "Joan", "Lena", "Mara",
        "Nora", "Petra", "Ruth", "Selma",
    ),
    "male": (
        "Adam", "Bruno", "Carl", "Daniel", "Edward", "Felix", "George", "Henry", "Igor",
        "James", "Kevin", "Louis", "Martin", "Nathan", "Oscar", "Peter", "Robert", "Simon",
        "Thomas", "Victor", "Walter", "Xavier", "Arthur", "Boris", "Cedric", "Dmitri",
        "Emil", "Frank", "Gustav", "Hugo", "Ivan", "Jonas", "Karl", "Leon", "Marco", "Noah",
        "Otto", "Paul", "Rudolf", "Stefan",
    ),
}
SURNAMES: Tuple[str, ...] = (
    "Moreau", "Keller", "Novak", "Rossi", "Fischer", "Jensen", "Costa", "Dubois", "Weber",
    "Larsen", "Bianchi", "Kowalski", "Varga", "Horvat", "Silva", "Meyer", "Nilsson",
    "Romano", "Schmidt", "Petrov", "Andersen", "Lambert", "Ferrari", "Brennan", "Okafor",
    "Tanaka", "Haddad", "Murray", "Quinn", "Santos", "Walsh", "Becker", "Marino", "Berger",
    "Lindqvist", "Morales", "Hartmann", "Dalton", "Sorensen", "Kovac",
)
PRONOUN = {"female": "She", "male": "He"}
#: invented places (a group's name is "<place> <kind>"); split like the names
PLACES: Tuple[str, ...] = (
    "Velmora", "Ostrand", "Brightwater", "Kelden", "Marrow Bay", "Sunhollow", "Tavrin",
    "Eskerby", "Fallowmere", "Gryndal", "Harlow Cross", "Istvale", "Juniper Falls",
    "Korvath", "Lindenmoor", "Mistral Point", "Northwick", "Orrin Vale", "Pellham",
    "Quarry Hill", "Redmarsh", "Stonemere", "Thornbury", "Umberlee", "Varrow",
)
#: (the group's kind, what "it" is, the noun a member joins)
KINDS: Tuple[Tuple[str, str, str], ...] = (
    ("Rowing Club", "an amateur rowing club", "club"),
    ("String Quartet", "a string quartet", "quartet"),
    ("Chess Society", "a chess society", "society"),
    ("Chamber Choir", "a small chamber choir", "choir"),
    ("Mountain Rescue Team", "a volunteer mountain rescue team", "team"),
    ("Theatre Troupe", "a travelling theatre troupe", "troupe"),
    ("Jazz Band", "a jazz band", "band"),
    ("Cycling Club", "a road cycling club", "club"),
    ("Debating Society", "a student debating society", "society"),
    ("Astronomy Circle", "an amateur astronomy circle", "circle"),
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


RELATIONS: Tuple[Relation, ...] = (
    Relation("grew_up", "{subj} grew up in {value}.", "Where did {name} grow up?",
             ("Lyon", "Porto", "Krakow", "Dublin", "Seville", "Bergen", "Turin", "Ghent",
              "Leipzig", "Riga", "Bologna", "Utrecht")),
    Relation("collects", "{subj} collects {value}.", "What does {name} collect?",
             ("stamps", "old coins", "seashells", "postcards", "vinyl records", "maps",
              "pocket watches", "teapots", "fossils", "comic books", "matchboxes", "kites")),
    Relation("language", "{subj} speaks {value} at home.",
             "Which language does {name} speak at home?",
             ("Danish", "Greek", "Polish", "Portuguese", "Finnish", "Czech", "Dutch",
              "Hungarian", "Welsh", "Turkish", "Swedish", "Italian")),
    Relation("afraid", "{subj} is afraid of {value}.", "What is {name} afraid of?",
             ("spiders", "thunder", "heights", "deep water", "snakes", "the dark", "crowds",
              "dogs", "lifts", "bees", "clowns", "bridges")),
    Relation("drink", "{subj} always drinks {value}.", "What does {name} always drink?",
             ("green tea", "black coffee", "lemonade", "cocoa", "mint tea", "orange juice",
              "cider", "sparkling water", "warm milk", "ginger beer", "espresso",
              "apple juice")),
)


@dataclass(frozen=True)
class GroupsConfig:
    """The options of the generated set (each a command-line option)."""

    train_dialogues: int = 120
    eval_dialogues: int = 60
    members: int = 4
    facts: int = 3
    turns: int = 2
    per_passage: int = 2
    seed: int = 0

    def check(self) -> None:
        """``ValueError`` naming the option that is out of range."""
        smallest = min(len(r.values) for r in RELATIONS)
        limits = {
            "train_dialogues": (self.train_dialogues, 1, None),
            "eval_dialogues": (self.eval_dialogues, 1, None),
            "members": (self.members, 2, min(smallest, 6)),
            "facts": (self.facts, 1, len(RELATIONS)),
            "turns": (self.turns, 1, self.members),
            "per_passage": (self.per_passage, 1, self.members),
        }
        for name, (value, low, high) in limits.items():
            if not isinstance(value, int) or value < low or (high is not None and value > high):
                bound = f">= {low}" if high is None else f"in [{low}, {high}]"
                raise ValueError(f"--{name.replace('_', '-')} must be an integer {bound}, "
                                 f"got {value!r}")


#: which part of the name and place lists each split draws from (index % 5): unseen topics
#: in the topic splits, train's part in the random (seen) splits
PARTS = {"train": (0, 1, 2), "valid_topic": (3,), "test_topic": (4,),
         "valid_random": (0, 1, 2), "test_random": (0, 1, 2)}
SPLIT_FILES = {"train": "train.json", "valid_random": "valid_random_split.json",
               "test_random": "test_random_split.json", "valid_topic": "valid_topic_split.json",
               "test_topic": "test_topic_split.json"}


def part(names: Sequence[str], split: str) -> List[str]:
    """The names of ``names`` that ``split`` draws from (disjoint across train/valid/test topics)."""
    return [n for i, n in enumerate(names) if i % 5 in PARTS[split]]


def passage_key(title: str) -> str:
    """A title as WoW's ``checked_passage`` keys write it: no punctuation, ``_`` for spaces."""
    return "".join(c for c in title if c not in string.punctuation).replace(" ", "_")


def dialogue(rng: random.Random, config: GroupsConfig, split: str) -> dict:
    """One raw WoW dialogue about one invented group (module docstring)."""
    gender = rng.choice(sorted(FIRST_NAMES))
    firsts = rng.sample(part(FIRST_NAMES[gender], split), config.members)
    surnames = rng.sample(part(SURNAMES, split), config.members)
    names = [f"{f} {s}" for f, s in zip(firsts, surnames)]
    place = rng.choice(part(PLACES, split))
    kind, what, noun = rng.choice(KINDS)
    group = f"{place} {kind}"
    founded = rng.randrange(1890, 1990)
    topic_passage = [
        f"The {group} is {what} based in {place}.",
        f"It was founded in {founded}.",
        f"It has {NUMBERS[config.members]} members.",
        f"The {noun} meets every {rng.choice(WEEKDAYS)}.",
    ]
    relations = rng.sample(list(RELATIONS), config.facts)
    values = {r.name: rng.sample(list(r.values), config.members) for r in relations}
    years = sorted(rng.sample(range(founded + 1, 2024), config.members))
    pronoun = PRONOUN[gender]
    sections: List[List[str]] = []
    where: Dict[Tuple[int, str], Tuple[int, int]] = {}  # (member, relation) -> (section, sentence)
    for m in range(config.members):  # members in order of joining
        if m % config.per_passage == 0:
            sections.append([])
        sents = sections[-1]
        sents.append(f"{names[m]} joined the {noun} in {years[m]}.")
        order = list(relations)
        rng.shuffle(order)
        for r in order:
            where[(m, r.name)] = (len(sections) - 1, len(sents))
            sents.append(r.fact.format(subj=pronoun, value=values[r.name][m]))
    labels = ["early years", "later years", "recent years", "today", "members", "newcomers"]
    titles = [f"{group}: {labels[i]}" for i in range(len(sections))]
    retrieved = [{t: s} for t, s in zip(titles, sections)]
    turns: List[dict] = []
    asked = rng.sample(range(config.members), config.turns)
    for t, m in enumerate(asked):
        r = rng.choice(relations)
        question = r.question.format(name=names[m])
        if t > 0:
            question = f"And {question[0].lower()}{question[1:]}"
        sec, idx = where[(m, r.name)]
        title, sentence = titles[sec], sections[sec][idx]
        turns.append({"speaker": "0_Apprentice", "text": question,
                      "retrieved_passages": retrieved, "retrieved_topics": titles})
        turns.append({
            "speaker": "1_Wizard",
            "text": r.fact.format(subj=names[m], value=values[r.name][m]),
            "checked_sentence": {f"partner_{title.replace(' ', '_')}_{idx}": sentence},
            "checked_passage": {f"partner_{sec}_{passage_key(title)}": title},
            "retrieved_passages": [], "retrieved_topics": [],
        })
    return {"chosen_topic": group, "persona": f"I belong to a {noun} myself.",
            "wizard_eval": 5, "chosen_topic_passage": topic_passage, "dialog": turns}


def generate(config: GroupsConfig) -> Dict[str, List[dict]]:
    """The dialogues of each split (keys of :data:`SPLIT_FILES`), a pure function of ``config``."""
    config.check()
    out = {}
    for split in SPLIT_FILES:
        rng = random.Random(f"docgraph-coref-groups:{VERSION}:{config.seed}:{split}")
        count = config.train_dialogues if split == "train" else config.eval_dialogues
        out[split] = [dialogue(rng, config, split) for _ in range(count)]
    return out


def files(config: GroupsConfig) -> Dict[str, str]:
    """File name -> text of every file written into ``wizard_of_wikipedia/``."""
    splits = generate(config)
    texts = {SPLIT_FILES[s]: json.dumps(d, indent=1, ensure_ascii=False) + "\n"
             for s, d in splits.items()}
    topics = {"train": sorted({d["chosen_topic"] for d in splits["train"]}),
              "valid": sorted({d["chosen_topic"] for d in splits["valid_topic"]}),
              "test": sorted({d["chosen_topic"] for d in splits["test_topic"]})}
    texts["topic_splits.json"] = json.dumps(topics, indent=1) + "\n"
    texts["coref_groups.json"] = json.dumps(
        {"generator": "tools/make_coref_groups.py", "version": VERSION, **asdict(config)},
        indent=1) + "\n"
    return texts


def write(config: GroupsConfig, datapath: str) -> str:
    """Write the set into ``<datapath>/wizard_of_wikipedia/``; returns that folder."""
    folder = os.path.join(datapath, "wizard_of_wikipedia")
    os.makedirs(folder, exist_ok=True)
    for name, text in files(config).items():
        tmp = os.path.join(folder, f".{name}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, os.path.join(folder, name))  # a reader never sees half a file
    return folder


def stale(config: GroupsConfig, datapath: str) -> List[str]:
    """The files of ``<datapath>/wizard_of_wikipedia/`` that differ from what ``config`` writes."""
    folder = os.path.join(datapath, "wizard_of_wikipedia")
    out = []
    for name, text in files(config).items():
        path = os.path.join(folder, name)
        if not os.path.isfile(path) or open(path, encoding="utf-8").read() != text:
            out.append(path)
    return out


def add_args(parser: argparse.ArgumentParser) -> None:
    """The generator's options (:class:`GroupsConfig`'s fields)."""
    d = GroupsConfig()
    parser.add_argument("--train-dialogues", type=int, default=d.train_dialogues,
                        help="dialogues in train.json (each asks --turns questions)")
    parser.add_argument("--eval-dialogues", type=int, default=d.eval_dialogues,
                        help="dialogues in each valid and test file")
    parser.add_argument("--members", type=int, default=d.members,
                        help="members per group; a cross-encoder's P@1 is at most 1/members")
    parser.add_argument("--facts", type=int, default=d.facts,
                        help=f"pronoun fact sentences per member (1-{len(RELATIONS)})")
    parser.add_argument("--turns", type=int, default=d.turns,
                        help="questions per dialogue, each about another member")
    parser.add_argument("--per-passage", type=int, default=d.per_passage,
                        help="members introduced in each retrieved passage")
    parser.add_argument("--seed", type=int, default=d.seed, help="generator seed")


def config_of(args: argparse.Namespace) -> GroupsConfig:
    return GroupsConfig(train_dialogues=args.train_dialogues, eval_dialogues=args.eval_dialogues,
                        members=args.members, facts=args.facts, turns=args.turns,
                        per_passage=args.per_passage, seed=args.seed)


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--out", required=True,
                        help="the datapath: files go to <out>/wizard_of_wikipedia/")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when the folder differs from these options")
    add_args(parser)
    args = parser.parse_args(list(argv) or None)
    try:
        config = config_of(args)
        config.check()
    except ValueError as e:
        parser.error(str(e))
    if args.check:
        bad = stale(config, args.out)
        for path in bad:
            print(f"stale or missing: {path}", file=sys.stderr)
        return 1 if bad else 0
    print(write(config, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
