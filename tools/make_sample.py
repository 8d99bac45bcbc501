#!/usr/bin/env python3
"""
Build the bundled ``docgraph:sample`` dataset (Wizard of Wikipedia raw format).

Reads the human-written source in ``tasks/docgraph/sample_data/source/topics.yaml`` and
``.../source/dialogues.yaml`` and writes the raw WoW split files under
``tasks/docgraph/sample_data/wizard_of_wikipedia/``::

    python tools/make_sample.py          # (re)write the JSON files
    python tools/make_sample.py --check  # exit 1 if they are stale

The output is deterministic: same YAML, same bytes. The ``checked_sentence`` /
``checked_passage`` keys follow the real WoW key grammar (docs: datasets.md 1.2):

* ``checked_passage``:  ``{source}_{passageIdx}_{TitleNoPunct}`` -> title, where source is
  ``chosen_topic`` (index 0), ``partner`` or ``self`` and the index points into that
  turn's ``retrieved_passages``; spaces become ``_`` and ASCII punctuation is removed.
* ``checked_sentence``: ``{source}_{Title}_{sentIdx}`` -> sentence, where source is
  ``chosen``, ``partner`` or ``self``; spaces become ``_`` and punctuation is kept.
  ``chosen`` always says ``_0`` whatever the sentence's real index (as in the release).

The wizard's knowledge pool at turn ``i`` is, as in ParlAI's WizardDialogKnowledgeTeacher,
the chosen topic passage, the passages retrieved for turn ``i-1`` (the partner) and those
retrieved for turn ``i-2`` (the wizard itself). A checked sentence is looked up in that
order; the script refuses any sentence that is not in the pool.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import sys
from typing import Dict, List, Tuple

import yaml

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tasks",
                    "docgraph", "sample_data")
SOURCE_DIR = os.path.join(HERE, "source")
OUT_DIR = os.path.join(HERE, "wizard_of_wikipedia")

NO_PASSAGE = "no_passages_used"
SPLIT_FILES = {
    "train": "train.json",
    "valid_random": "valid_random_split.json",
    "test_random": "test_random_split.json",
    "valid_topic": "valid_topic_split.json",
    "test_topic": "test_topic_split.json",
}
# Which topic split (topics.yaml) the chosen topic of each dialogue split must come from.
TOPIC_SPLIT_OF = {
    "train": "seen",
    "valid_random": "seen",
    "test_random": "seen",
    "valid_topic": "valid",
    "test_topic": "test",
}
EDGES = {"empty_both", "empty_sentence", "empty_passage", "extra_nopassage", "self_chosen"}
NUM_CANDIDATES = 20
# Like the release, a turn that retrieves a chosen topic's own article shows only the first
# sentences of its lead; the pool still holds the full chosen_topic_passage (first wins).
RETRIEVED_CHOSEN_PREFIX = 4
CANDIDATE_SEED = 42


class SampleError(ValueError):
    pass


def passage_key_title(title: str) -> str:
    """
    Title as written in ``checked_passage`` keys: punctuation removed, spaces -> ``_``.
    """
    return "".join(c for c in title if c not in string.punctuation).replace(" ", "_")


def sentence_key_title(title: str) -> str:
    """
    Title as written in ``checked_sentence`` keys: punctuation kept, spaces -> ``_``.
    """
    return title.replace(" ", "_")


def load_yaml(name: str):
    with open(os.path.join(SOURCE_DIR, name), encoding="utf-8") as f:
        return yaml.safe_load(f)


def load_topics() -> Tuple[Dict[str, dict], Dict[str, List[str]], Dict[str, str]]:
    """
    Return ``(topics, passages, owner)``: the topic entries, every passage by title and
    the topic that owns each title.
    """
    topics = load_yaml("topics.yaml")
    passages: Dict[str, List[str]] = {}
    owner: Dict[str, str] = {}
    for name, entry in topics.items():
        if entry.get("split") not in ("seen", "valid", "test"):
            raise SampleError(f"topic {name!r}: bad split {entry.get('split')!r}")
        if not 5 <= len(entry["passage"]) <= 9:
            raise SampleError(f"topic {name!r}: chosen passage must have 5-9 sentences")
        if not 2 <= len(entry["related"]) <= 4:
            raise SampleError(f"topic {name!r}: needs 2-4 related passages")
        for title, sents in [(name, entry["passage"])] + list(entry["related"].items()):
            if title in passages:
                raise SampleError(f"title {title!r} defined twice")
            if "_" in title:
                raise SampleError(f"title {title!r}: '_' would make the keys ambiguous")
            if not sents or not all(isinstance(s, str) and s.strip() for s in sents):
                raise SampleError(f"passage {title!r}: empty sentence")
            if len(set(sents)) != len(sents):
                raise SampleError(f"passage {title!r}: repeated sentence")
            passages[title] = list(sents)
            owner[title] = name
    return topics, passages, owner


def retrieved_copy(title: str, topics: Dict[str, dict], passages: Dict[str, List[str]]):
    """
    The sentences a turn's ``retrieved_passages`` shows for ``title``.
    """
    if title in topics:
        return passages[title][:RETRIEVED_CHOSEN_PREFIX]
    return passages[title]


def resolve_knowledge(
    turn: dict, idx: int, dialog: List[dict], topic: str, passages: Dict[str, List[str]], where: str
) -> Tuple[dict, dict]:
    """
    Return ``(checked_sentence, checked_passage)`` for the wizard turn ``turn`` at ``idx``.
    """
    edge = turn.get("edge")
    ref = turn.get("k")
    if edge in ("empty_both", "empty_sentence"):
        if ref is not None:
            raise SampleError(f"{where}: edge {edge} takes no k")
        return {}, ({} if edge == "empty_both" else {NO_PASSAGE: NO_PASSAGE})
    if ref is None:
        raise SampleError(f"{where}: wizard turn needs k (Title/index or none)")
    if ref == "none":
        if edge:
            raise SampleError(f"{where}: k none takes no edge")
        return {NO_PASSAGE: NO_PASSAGE}, {NO_PASSAGE: NO_PASSAGE}
    title, _, num = str(ref).rpartition("/")
    if title not in passages or not num.isdigit() or int(num) >= len(passages[title]):
        raise SampleError(f"{where}: unknown knowledge reference {ref!r}")
    sent_idx = int(num)
    sentence = passages[title][sent_idx]
    partner = dialog[idx - 1]["r"] if idx >= 1 else []
    own = dialog[idx - 2]["r"] if idx >= 2 else []

    if edge == "self_chosen":
        if title != topic or topic not in own:
            raise SampleError(
                f"{where}: self_chosen needs the chosen topic in the own previous turn"
            )
        cp = {f"self_{own.index(topic)}_{passage_key_title(topic)}": topic}
        cs = {f"chosen_{sentence_key_title(topic)}_0": sentence}
    elif title == topic:
        cp = {f"chosen_topic_0_{passage_key_title(title)}": title}
        cs = {f"chosen_{sentence_key_title(title)}_0": sentence}
    elif title in partner:
        cp = {f"partner_{partner.index(title)}_{passage_key_title(title)}": title}
        cs = {f"partner_{sentence_key_title(title)}_{sent_idx}": sentence}
    elif title in own:
        cp = {f"self_{own.index(title)}_{passage_key_title(title)}": title}
        cs = {f"self_{sentence_key_title(title)}_{sent_idx}": sentence}
    else:
        raise SampleError(f"{where}: {title!r} is not in the wizard's knowledge pool")

    if edge == "empty_passage":
        cp = {}
    elif edge == "extra_nopassage":
        cp[NO_PASSAGE] = NO_PASSAGE
    elif edge not in (None, "self_chosen"):
        raise SampleError(f"{where}: unknown edge {edge!r}")
    return cs, cp


def build_dialogue(
    d: dict, topics: Dict[str, dict], passages: Dict[str, List[str]], owner: Dict[str, str]
) -> dict:
    where = d.get("id", "?")
    topic = d["topic"]
    split = d["split"]
    if split not in SPLIT_FILES:
        raise SampleError(f"{where}: bad split {split!r}")
    if topic not in topics or topics[topic]["split"] != TOPIC_SPLIT_OF[split]:
        raise SampleError(f"{where}: topic {topic!r} does not belong to split {split}")
    if not isinstance(d.get("eval"), int) or not 1 <= d["eval"] <= 5:
        raise SampleError(f"{where}: eval must be an int 1-5")
    if not str(d.get("persona", "")).strip():
        raise SampleError(f"{where}: persona missing")
    turns = d["turns"]
    if not 4 <= len(turns) <= 10:
        raise SampleError(f"{where}: needs 4-10 turns")

    first_role = "W" if "W" in turns[0] else "A"
    dialog = []
    for i, t in enumerate(turns):
        tw = f"{where} turn {i}"
        role = ("W" if "W" in t else "A") if ("W" in t) != ("A" in t) else None
        expected = first_role if i % 2 == 0 else ("A" if first_role == "W" else "W")
        if role != expected:
            raise SampleError(f"{tw}: expected a {expected} turn")
        text = t[role]
        if not isinstance(text, str) or not text.strip():
            raise SampleError(f"{tw}: empty text")
        retrieved = t.get("r") or []
        if not 2 <= len(retrieved) <= 4 or len(set(retrieved)) != len(retrieved):
            raise SampleError(f"{tw}: r must list 2-4 distinct titles")
        for title in retrieved:
            if title not in passages:
                raise SampleError(f"{tw}: unknown title {title!r}")
            if topics[owner[title]]["split"] != topics[topic]["split"]:
                raise SampleError(f"{tw}: {title!r} belongs to another topic split")
        speaker = f"{i % 2}_{'Wizard' if role == 'W' else 'Apprentice'}"
        entry = {"speaker": speaker, "text": text}
        if role == "W":
            cs, cp = resolve_knowledge(t, i, turns, topic, passages, tw)
            entry["checked_sentence"] = cs
            entry["checked_passage"] = cp
        elif "k" in t or "edge" in t:
            raise SampleError(f"{tw}: apprentice turns take no k/edge")
        entry["retrieved_passages"] = [
            {title: retrieved_copy(title, topics, passages)} for title in retrieved
        ]
        entry["retrieved_topics"] = list(retrieved)
        dialog.append(entry)

    return {
        "chosen_topic": topic,
        "persona": d["persona"],
        "wizard_eval": d["eval"],
        "dialog": dialog,
        "chosen_topic_passage": topics[topic]["passage"],
    }


def add_candidates(split_dialogues: List[Tuple[str, dict]], all_wizard_texts: Dict[str, List[str]]):
    """
    Give every wizard turn 20 ``candidate_responses``: its own text plus 19 wizard texts
    of other dialogues, in a seeded random order (one ``Random(42)`` per split file).
    """
    rng = random.Random(CANDIDATE_SEED)
    for did, dialogue in split_dialogues:
        others = sorted(
            {t for other, texts in all_wizard_texts.items() if other != did for t in texts}
        )
        for entry in dialogue["dialog"]:
            if "Wizard" not in entry["speaker"]:
                continue
            pool = [t for t in others if t != entry["text"]]
            cands = rng.sample(pool, NUM_CANDIDATES - 1)
            cands.insert(rng.randrange(NUM_CANDIDATES), entry["text"])
            entry["candidate_responses"] = cands


def build_all() -> Dict[str, str]:
    """
    Return ``{file name: file content}`` for every output file.
    """
    topics, passages, owner = load_topics()
    source = load_yaml("dialogues.yaml")
    ids = [d["id"] for d in source]
    if len(set(ids)) != len(ids):
        raise SampleError("dialogue ids must be unique")
    built = [(d["id"], d["split"], build_dialogue(d, topics, passages, owner)) for d in source]
    wizard_texts = {
        did: [e["text"] for e in dlg["dialog"] if "Wizard" in e["speaker"]] for did, _, dlg in built
    }

    files: Dict[str, object] = {}
    # No data.json: ParlAI's build has one (all dialogues, for its rare-word F1), but no
    # docgraph reader uses it and it would double the package's sample size.
    for split, fname in SPLIT_FILES.items():
        dialogues = [(did, json.loads(json.dumps(dlg))) for did, s, dlg in built if s == split]
        # Unlike real WoW, train turns get candidates too, so ranking agents and
        # `parlai verify_data` see a complete sample on every split.
        add_candidates(dialogues, wizard_texts)
        files[fname] = [dlg for _, dlg in dialogues]
    files["topic_splits.json"] = {
        "train": [t for t, e in topics.items() if e["split"] == "seen"],
        "valid": [t for t, e in topics.items() if e["split"] == "valid"],
        "test": [t for t, e in topics.items() if e["split"] == "test"],
    }
    train_topics = {d["chosen_topic"] for d in files["train.json"]}
    for fname in ("valid_topic_split.json", "test_topic_split.json"):
        if any(d["chosen_topic"] in train_topics for d in files[fname]):
            raise SampleError(f"{fname}: a topic of the unseen split appears in train")
    return {
        name: json.dumps(obj, indent=1, ensure_ascii=False, sort_keys=False) + "\n"
        for name, obj in files.items()
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the written files differ from the YAML"
    )
    args = parser.parse_args(argv)
    try:
        outputs = build_all()
    except SampleError as e:
        print(f"make_sample: {e}", file=sys.stderr)
        return 2
    if args.check:
        stale = []
        for name, content in outputs.items():
            path = os.path.join(OUT_DIR, name)
            try:
                with open(path, "rb") as f:
                    if f.read() != content.encode("utf-8"):
                        stale.append(name)
            except FileNotFoundError:
                stale.append(name)
        if stale:
            print("make_sample: out of date: " + ", ".join(stale), file=sys.stderr)
            print("run: python tools/make_sample.py", file=sys.stderr)
            return 1
        print(f"make_sample: {len(outputs)} files up to date")
        return 0
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, content in outputs.items():
        with open(os.path.join(OUT_DIR, name), "wb") as f:
            f.write(content.encode("utf-8"))
    for name in SPLIT_FILES.values():
        data = json.loads(outputs[name])
        turns = sum(len(d["dialog"]) for d in data)
        wiz = sum(1 for d in data for e in d["dialog"] if "Wizard" in e["speaker"])
        topics = len({d["chosen_topic"] for d in data})
        print(f"{name}: {len(data)} dialogues, {turns} turns, {wiz} wizard turns, {topics} topics")
    return 0


if __name__ == "__main__":
    sys.exit(main())
