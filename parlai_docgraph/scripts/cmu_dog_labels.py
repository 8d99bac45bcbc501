"""
``parlai-docgraph cmu_dog_labels``: how often CMU_DoG's pseudo knowledge label is the sentence
the human used, against a hand reading of turns.

CMU_DoG names the section a reply was written with, not a sentence; ``docgraph:cmu_dog``
labels each turn with the pool sentence of the highest unigram F1 against the reply, at or
above ``--pseudo-label-f1``, else ``no_passages_used``
(:func:`~parlai_docgraph.graphs.movie_articles.pseudo_label`). A reading file lists turns
as ``{"conversation_id", "message" (the reply's index among the conversation's messages,
consecutive messages of one speaker joined as ParlAI's teacher joins them), "used" (the indices of the pool sentences the reply took its content from; [] for
none)}``: ids and judgements only, so the file holds no text of the corpus. For each
threshold this counts the turns whose label agrees with the reading (no label where the
human used none, or one of the sentences the human used), the labelled turns, and those of
them that are right.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Sequence

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_docgraph.atomic import write_text_atomic
from parlai_docgraph.env import run_record
from parlai_docgraph.jsonio import read_json

#: the split files a reading's conversations are looked up in (ParlAI's seen/unseen build)
SPLIT_FILES = ("train_split_seen_unseen.json", "valid_split_seen_unseen.json",
               "test_seen_split_seen_unseen.json", "test_unseen_split_seen_unseen.json")


def labels_of(folder: str, reading: Sequence[Dict[str, Any]], thresholds: Sequence[float]
              ) -> Dict[float, List[int]]:
    """The pool index of each read turn's pseudo label (-1: none) at each threshold."""
    from parlai_docgraph.dataset_errors import BadRows
    from parlai_docgraph.graphs.movie_articles import (
        facts_passage, flat_index, pseudo_label, turn_pool)
    from parlai_docgraph.tasks.docgraph.readers import cmu_dog as reader

    wanted = {r["conversation_id"] for r in reading}
    found: Dict[str, Any] = {}
    articles: Dict[str, Any] = {}
    for name in SPLIT_FILES:
        articles, conversations = reader.read_split(folder, name, BadRows())
        found.update((c.id, c) for c in conversations if c.id in wanted)
    missing = sorted(wanted - set(found))
    if missing:
        raise ValueError(f"cmu_dog_labels: conversations not in {folder}: {missing[:5]} "
                         f"({len(missing)} in all)")
    out: Dict[float, List[int]] = {t: [] for t in thresholds}
    for row in reading:
        conversation = found[row["conversation_id"]]
        dialog = reader.collapse_messages(conversation.messages, " ")
        if not 0 <= row["message"] < len(dialog):
            raise ValueError(f"cmu_dog_labels: conversation {conversation.id} has no message "
                             f"{row['message']} ({len(dialog)} messages)")
        said = dialog[row["message"]]
        article = articles[str(conversation.wiki_idx)]
        facts = facts_passage(article["0"])
        pool = turn_pool(article[str(said.doc_idx)], facts[0], facts)
        for t in thresholds:
            out[t].append(flat_index(pool, pseudo_label(said.text.strip(), pool, t).position))
    return out


def agreement(reading: Sequence[Dict[str, Any]], labels: Sequence[int]) -> Dict[str, int]:
    """Turns whose label agrees with the reading; labelled turns, and the right ones."""
    right = sum(label >= 0 and label in r["used"] for r, label in zip(reading, labels))
    empty = sum(label < 0 and not r["used"] for r, label in zip(reading, labels))
    return {"agree": right + empty, "labelled": sum(label >= 0 for label in labels),
            "labelled_right": right}


@register_script("cmu_dog_labels", hidden=False)
class CmuDogLabels(ParlaiScript):
    """CMU_DoG's pseudo knowledge labels against a hand reading of turns."""

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(True, False, description=cls.__doc__.strip())
        g = parser.add_argument_group("cmu_dog_labels")
        # not required=True: ParlAI parses a bare `parlai-docgraph` with every script's
        # parser, and a required option there breaks the command list (run() checks it)
        g.add_argument("--reading", type=str, default=None,
                       help="the reading file (JSON list: conversation_id, message, used); "
                       "required")
        g.add_argument("--thresholds", type=str, default="0.15,0.2,0.22,0.25,0.3,0.4",
                       help="comma-separated pseudo-label F1 thresholds to count")
        g.add_argument("--out", type=str, default=None, help="the result file (JSON) to write")
        return parser

    def run(self) -> Dict[str, Any]:
        import json

        from parlai_docgraph.tasks.docgraph.build import cmu_dog_folder

        if not self.opt.get("reading"):
            raise ValueError("cmu_dog_labels needs --reading FILE (the committed reading is "
                             "docs/annotations/cmu_dog_valid50.json)")
        reading = read_json(self.opt["reading"])
        if not isinstance(reading, list) or not all(
                isinstance(r, dict) and {"conversation_id", "message", "used"} <= set(r)
                for r in reading):
            raise ValueError(f"{self.opt['reading']}: expected a JSON list of objects with "
                             "conversation_id, message and used")
        thresholds = [float(t) for t in self.opt["thresholds"].split(",")]
        labels = labels_of(cmu_dog_folder(self.opt["datapath"]), reading, thresholds)
        figures = {f"{t:g}": agreement(reading, labels[t]) for t in thresholds}
        result = {"cmu_dog_pseudo_labels": {
            "reading": os.path.basename(self.opt["reading"]), "turns": len(reading),
            "turns_using_the_pool": sum(bool(r["used"]) for r in reading),
            "by_threshold": figures}, "meta": run_record()}
        for t, f in figures.items():
            print(f"threshold {t}: {f['agree']}/{len(reading)} agree; {f['labelled']} "
                  f"labelled, {f['labelled_right']} of them right")
        if self.opt.get("out"):
            write_text_atomic(self.opt["out"], json.dumps(result, indent=1) + "\n")
        return result


if __name__ == "__main__":
    CmuDogLabels.main()
