"""
``docgraph:cmu_dog``: CMU_DoG (Zhou et al., EMNLP 2018) with knowledge pools, pseudo
knowledge labels and the graph fields, over the files of ParlAI's own ``cmu_dog`` build.

It serves the turns of ParlAI's teacher (``-t cmu_dog``; :mod:`.readers.cmu_dog`), with
ParlAI's options (``--cmu-dog-split-type deduped|original|seen|unseen``,
``--cmu-dog-rating``, ``--cmu-dog-only-with-knowledge``, ``--cmu-dog-multi-msg-delimiter``,
``--cmu-dog-fact-delimiter``), as messages in the Wizard of Wikipedia format of the other
docgraph teachers:

* ``text``: the partner's message before the turn; on an episode's first turn, the movie
  name (ParlAI sends the shown section's text there, or ``__SILENCE__``: nothing was said
  yet, and the knowledge travels in the pool), as WoW's first turn starts with the topic;
* ``labels``: the reply (``--label-type chosen_sent``: the pseudo label's line);
* ``knowledge_passages`` / ``knowledge`` / ``label_candidates`` (``chosen_sent``): the turn's
  pool, the section shown plus the movie's facts
  (:func:`~parlai_docgraph.graphs.movie_articles.turn_pool`);
* ``title`` / ``checked_sentence`` / ``checked_sentence_index``: the pseudo label
  (:func:`~parlai_docgraph.graphs.movie_articles.pseudo_label`, ``--pseudo-label-f1``),
  ``no_passages_used`` below the threshold; ``pseudo_label_f1``: the best F1 found;
* ``chosen_topic`` (the movie), ``gold_knowledge`` (ParlAI's ``checked_sentence``: the
  shown section as text), ``conversation_id``, ``doc_idx``, ``rating``.

``--cmu-dog-knowledge random|none|section`` names another knowledge instead of the pseudo
label (a seeded random pool sentence, none, the whole shown section): the responder on its
own then reads it (the evaluation rows of a random selection, of no knowledge, and of
ParlAI's whole-section prompt). ``--cmu-dog-conversations N`` serves a seeded sample of N
conversations (``--cmu-dog-sample-seed``).

Metrics: ParlAI's ``knowledge_f1`` (the reply against ``gold_knowledge``) and
``rare_word_f1`` (its rare-word calculator over every split file), as ParlAI's teacher
computes them. ``--knowledge-turns-only`` keeps the turns with a pseudo label.

With ``--cmu-dog-split-type seen``, ``--cmu-dog-exclude-original-test`` (default true) leaves
the conversations of the release's test file out of ``train`` and ``valid``: ParlAI's seen
split redraws every conversation, so its train holds most of the original test, on which the
published results are measured. One model is then scored on test seen, test unseen and the
original test without having trained or been chosen on any of them.
"""

from __future__ import annotations

import os
import random
from typing import Dict, Iterator, List, Optional, Tuple

from parlai.core.message import Message
from parlai.core.metrics import F1Metric
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.utils import logging

from parlai_docgraph.graphs.movie_articles import (
    PSEUDO_LABEL_F1, PoolWords, facts_passage, pseudo_label, turn_pool,
)
from parlai_docgraph.tasks.docgraph.base import DocgraphDialogTeacher
from parlai_docgraph.tasks.docgraph.build import cmu_dog_folder
from parlai_docgraph.tasks.docgraph.graphs import GraphAttachMixin
from parlai_docgraph.tasks.docgraph.install import BUILT_SPLITS, split_ids_digest
from parlai_docgraph.tasks.docgraph.readers import cmu_dog as reader
from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE
from parlai_docgraph.tasks.docgraph.knowledge_teacher import (
    TurnCounts, add_knowledge_label_args, episode_messages, log_turn_counts, uses_knowledge,
)
from parlai_docgraph.tasks.docgraph.readers.turns import KnowledgeTurn


def add_cmu_dog_args(parser: ParlaiParser, partial_opt: Optional[Opt] = None) -> None:
    """ParlAI's ``cmu_dog`` options (its teacher's own group) and the pseudo label's."""
    from parlai.tasks.cmu_dog.agents import CMUDocumentGroundedConversationsTeacher

    CMUDocumentGroundedConversationsTeacher.add_cmdline_args(parser, partial_opt)
    group = parser.add_argument_group("docgraph CMU_DoG")
    add_knowledge_label_args(group)
    group.add_argument(
        "--pseudo-label-f1", type=float, default=PSEUDO_LABEL_F1,
        help="a turn's knowledge label is the pool sentence with the highest unigram F1 "
        "against the reply when that F1 is at least this, else no_passages_used (CMU_DoG "
        f"labels no sentence; {PSEUDO_LABEL_F1} was chosen on valid turns read by hand)")
    group.add_argument(
        "--cmu-dog-knowledge", type=str, default="pseudo", choices=KNOWLEDGE_MODES,
        help="the knowledge a message names as checked (title, checked_sentence: what the "
        "responder reads on its own): pseudo (the pseudo label), random (a pool sentence drawn "
        "per turn, seeded), none (no_passages_used), section (the shown section's text, "
        "ParlAI's checked_sentence). Only pseudo with --label-type chosen_sent")
    group.add_argument(
        "--cmu-dog-conversations", type=int, default=0,
        help="serve a seeded sample of this many conversations of the split file (0: all), "
        "in file order; --cmu-dog-sample-seed draws it")
    group.add_argument("--cmu-dog-sample-seed", type=int, default=0,
                       help="the seed of --cmu-dog-conversations and of --cmu-dog-knowledge random")
    group.add_argument(
        "--cmu-dog-exclude-original-test", type="bool", default=True,
        help="with --cmu-dog-split-type seen, leave the conversations of the release's test "
        "file out of train and valid (ParlAI's seen split draws them into train), so one "
        "model is scored on test seen, test unseen and the original test")


#: ``--cmu-dog-knowledge``
KNOWLEDGE_MODES = ("pseudo", "random", "none", "section")


def split_type_name(opt: Opt) -> str:
    """``--cmu-dog-split-type`` as its name (ParlAI stores its ``SplitType`` enum)."""
    value = opt.get("cmu_dog_split_type") or "deduped"
    return str(getattr(value, "value", value))


class CmuDogTeacher(GraphAttachMixin, DocgraphDialogTeacher):
    """CMU_DoG with pools and pseudo labels (module docstring)."""

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        add_cmu_dog_args(parser, partial_opt)
        return parser

    def __init__(self, opt: Opt, shared=None) -> None:
        opt = Opt(opt)
        self.folder = cmu_dog_folder(opt["datapath"])
        self.fold = opt["datatype"].split(":")[0]
        self.split_type = split_type_name(opt)
        opt["datafile"] = os.path.join(self.folder, "conversations",
                                       reader.split_file(self.fold, self.split_type))
        self.label_type = opt["label_type"]
        self.separator = bool(opt["include_knowledge_separator"])
        self.knowledge_only = bool(opt["knowledge_turns_only"])
        self.threshold = float(opt["pseudo_label_f1"])
        self.knowledge = opt["cmu_dog_knowledge"]
        if self.knowledge != "pseudo" and (self.label_type == "chosen_sent" or self.knowledge_only):
            raise ValueError(f"--cmu-dog-knowledge {self.knowledge}: --label-type chosen_sent "
                             "and --knowledge-turns-only go by the pseudo labels; use "
                             "--cmu-dog-knowledge pseudo with them")
        self.sample = (int(opt["cmu_dog_conversations"]), int(opt["cmu_dog_sample_seed"]))
        self.exclude_test = bool(opt["cmu_dog_exclude_original_test"]) and \
            self.split_type == "seen" and self.fold in ("train", "valid")
        self.id = "cmu_dog"
        self.reading = (tuple(opt["cmu_dog_rating"]), bool(opt["cmu_dog_only_with_knowledge"]),
                        opt["cmu_dog_multi_msg_delimiter"])
        self.turn_counts = TurnCounts()
        if shared is not None:
            self.rare_word_f1 = shared["rare_word_f1"]
        else:
            from parlai.tasks.cmu_dog.agents import _build_rare_word_f1

            self.rare_word_f1 = _build_rare_word_f1(opt)
        super().__init__(opt, shared)

    def count_options(self) -> tuple:
        return super().count_options() + (
            self.label_type, self.knowledge_only, self.threshold, self.exclude_test,
            self.knowledge) + self.reading + self.sample

    def share(self) -> Dict:
        shared = super().share()
        shared["rare_word_f1"] = self.rare_word_f1
        return shared

    def conversations(self, datafile: str) -> Tuple[Dict, List[reader.Conversation]]:
        """The articles and the split file's conversations this teacher serves."""
        articles, convs = reader.read_split(
            self.folder, os.path.basename(datafile), self.bad_rows, self.reading[0])
        pinned = BUILT_SPLITS.get(os.path.basename(datafile))
        if pinned and set(self.reading[0]) == {1, 2, 3} and not self.bad_rows.errors:
            got = (len(convs), split_ids_digest(c.id for c in convs))
            if got != pinned:
                logging.warning(
                    f"{datafile}: {got[0]} conversations (ids {got[1]}), not the split of "
                    f"`parlai-docgraph datasets install cmu_dog` ({pinned[0]}, ids {pinned[1]}) "
                    f"that the published figures use: ParlAI's own build draws its seen/unseen "
                    f"split in the file system's listing order. Reinstall with that command "
                    f"for the same split")
        if self.exclude_test:
            held_out = set(reader.conversation_ids(
                os.path.join(self.folder, "conversations", "test.json")))
            kept = [c for c in convs if c.id not in held_out]
            logging.info(f"{datafile}: --cmu-dog-exclude-original-test left out "
                         f"{len(convs) - len(kept)} of {len(convs)} conversations (they are "
                         f"in the release's test file)")
            convs = kept
        count, seed = self.sample
        if 0 < count < len(convs):
            drawn = set(random.Random(seed).sample(sorted(c.id for c in convs), count))
            convs = [c for c in convs if c.id in drawn]
            logging.info(f"{datafile}: --cmu-dog-conversations {count} (seed {seed})")
        return articles, convs

    def setup_data(self, datafile: str) -> Iterator[Tuple[Message, bool]]:
        articles, convs = self.conversations(datafile)
        words = PoolWords()
        facts = {key: facts_passage(article["0"]) for key, article in articles.items()}
        pools: Dict[Tuple[int, Optional[int]], list] = {}
        self.turn_counts = counts = TurnCounts()
        found = {"labelled": 0, "turns": 0}
        episodes = reader.episodes(convs, self.reading[2], self.reading[1])
        for turns in self.iterate_with_report(episodes):
            knowledge_turns, extras = [], []
            previous = None
            for n, turn in enumerate(turns):
                article = articles[str(turn.wiki_idx)]
                movie = facts[str(turn.wiki_idx)][0]
                key = (turn.wiki_idx, turn.doc_idx if turn.visible else None)
                if key not in pools:  # the turns of a section share its split sentences
                    section = article[str(turn.doc_idx)] if turn.visible else None
                    pools[key] = turn_pool(section, movie, facts[str(turn.wiki_idx)])
                pool = pools[key]
                label = pseudo_label(turn.response, pool, self.threshold, words)
                found["turns"] += 1
                found["labelled"] += label.position is not None
                gold_knowledge = reader.section_text(article[str(turn.doc_idx)],
                                                     self.opt["cmu_dog_fact_delimiter"])
                title, sentence, position = self.named_knowledge(
                    label, pool, turn, n, movie, gold_knowledge)
                knowledge_turns.append(KnowledgeTurn(
                    dialogue_id=turn.conversation_id, turn_index=n, chosen_topic=movie,
                    text=movie if turn.context is None else turn.context,
                    response=turn.response, passages=pool, title=title,
                    checked_sentence=sentence, gold=position, previous_response=previous))
                previous = turn.response
                extras.append({
                    "gold_knowledge": gold_knowledge,
                    "pseudo_label_f1": round(label.f1, 4), "conversation_id": turn.conversation_id,
                    "doc_idx": turn.doc_idx, "rating": turn.rating})
            kept = [x for t, x in zip(knowledge_turns, extras)
                    if not self.knowledge_only or uses_knowledge(t)]
            messages = episode_messages(knowledge_turns, self.label_type, self.separator,
                                        self.id, self.knowledge_only, counts)
            for (msg, new_episode), extra in zip(messages, kept):
                for key, value in extra.items():
                    msg[key] = value
                yield msg, new_episode
        log_turn_counts(datafile, counts, self.knowledge_only)
        logging.info(f"{datafile}: pseudo knowledge labels (unigram F1 >= {self.threshold}) on "
                     f"{found['labelled']} of {found['turns']} turns")

    def named_knowledge(self, label, pool, turn, n: int, movie: str, section: str
                        ) -> Tuple[str, str, Optional[Tuple[int, int]]]:
        """``(title, checked_sentence, position)`` a message names (``--cmu-dog-knowledge``)."""
        if self.knowledge == "none" or (self.knowledge == "section" and not section):
            return NO_PASSAGE, NO_PASSAGE, None
        if self.knowledge == "section":
            return movie, section, None
        position = label.position
        if self.knowledge == "random":
            lines = [(p, s) for p, (_, ss) in enumerate(pool) for s in range(len(ss))]
            seed = f"{self.sample[1]}|{turn.conversation_id}|{n}|{turn.response}"
            position = random.Random(seed).choice(lines) if lines else None
        if position is None:
            return NO_PASSAGE, NO_PASSAGE, None
        return pool[position[0]][0], pool[position[0]][1][position[1]], position

    def custom_evaluation(self, teacher_action: Message, labels: Optional[Tuple[str]],
                          model_response: Message) -> None:
        """ParlAI's ``cmu_dog`` metrics: ``knowledge_f1`` against the shown section,
        ``rare_word_f1`` against the labels."""
        text = model_response.get("text")
        if text is None:
            return
        if teacher_action.get("gold_knowledge"):
            self.metrics.add("knowledge_f1", F1Metric.compute(
                text, [teacher_action["gold_knowledge"]]))
        if labels and self.label_type == "response":
            self.metrics.add("rare_word_f1", self.rare_word_f1.compute(text, labels))
