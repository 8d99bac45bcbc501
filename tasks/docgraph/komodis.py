"""
KOMODIS teacher: ``docgraph:komodis``.

Reads ``<datapath>/komodis/dataset.json`` (see :mod:`.readers.komodis`). Split: a
``splits/komodis_split.json`` beside this module (``tools/make_komodis_split.py`` writes one;
none is shipped today) when its ``dataset_sha256`` matches the local
``dataset.json``, else ``<datapath>/komodis/docgraph_split_v1.json``, computed on first
use (``readers.komodis.SPLIT_PROCEDURE``) and re-created when ``dataset.json`` changes.

One example per utterance after the first, grouped into two episodes per dialogue (one
per responding speaker, :func:`~.readers.komodis.dialogue_episodes`). Message fields:
``text`` (previous utterance), ``labels`` (``[utterance]``), ``movie_title``,
``dialogue_id``, ``speaker`` (``first_speaker`` / ``second_speaker``, who answers),
``utterance_index``, ``kg_facts`` (the answering speaker's facts, ``[subject,
relation, object]``), ``kg_attitudes`` (its attitudes, ``[subject, relation, object,
source]``), ``kg_triples`` (the dialogue's KG: both speakers' facts and attitudes as
``[subject, relation, object]``) and ``label_candidates`` (the gold plus
``--num-label-candidates`` - 1 utterances of other dialogues of the same split, seeded).

With ``--kg-candidates true`` (default) each message also carries DialogGSR's per-turn
candidate subgraph (``parlai_docgraph.kg.fields``): the dialogue's own KG
(``kg_triples``), entities linked in the utterances before the response only, their
k-hop candidate paths and Katz scores, and a gold subgraph. KOMODIS annotates facts per
speaker, not per utterance, so the gold paths are the answering speaker's facts that the
response mentions (:func:`~parlai_docgraph.kg.fields.response_facts`; a training-target
definition, never used for linking).
"""

from __future__ import annotations

import os
from typing import Iterator, Optional, Tuple

from parlai.core.message import Message
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.utils import logging

from parlai_docgraph.tasks.docgraph.base import DocgraphDialogTeacher
from parlai_docgraph.tasks.docgraph.build import raw_file
from parlai_docgraph.tasks.docgraph.candidates import add_candidate_args, example_rng, sample_candidates
from parlai_docgraph.tasks.docgraph.kg_candidates import KgCandidatesMixin, add_kg_candidate_args, kg_candidate_kwargs
from parlai_docgraph.tasks.docgraph.readers.komodis import dialogue_episodes, read_komodis
from parlai_docgraph.tasks.docgraph.readers.komodis_split import SPLIT_FILE_NAME, load_split

from parlai_docgraph.kg import fields as kg_fields
from parlai_docgraph.memo import LRUMemo

SHIPPED_SPLIT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "splits", "komodis_split.json"
)


#: the name linker of each ``dataset.json`` version read in this process
_LINKERS: LRUMemo = LRUMemo(2)


def _name_linker(path: str):
    """An entity linker over every subject/object name in ``dataset.json``."""
    from parlai_docgraph.kg.linking import EntityLinker

    from parlai_docgraph.dataset_errors import BadRows

    dialogues = read_komodis(path, BadRows(skip=True))
    names = {e for d in dialogues for h, _, t in d.kg_triples() for e in (h, t)}
    return EntityLinker(sorted(names))


class KomodisTeacher(KgCandidatesMixin, DocgraphDialogTeacher):
    """
    KOMODIS with its facts, attitudes and per-dialogue KG.
    """

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("docgraph KOMODIS")
        add_candidate_args(group)
        add_kg_candidate_args(group)
        return parser

    def __init__(self, opt: Opt, shared=None) -> None:
        opt = Opt(opt)  # a copy that keeps Opt's methods
        self.num_candidates = int(opt["num_label_candidates"] or 0)
        self.candidates_seed = int(opt["label_candidates_seed"])
        self.split = opt["datatype"].split(":")[0]
        self.kg_candidates = bool(opt["kg_candidates"])
        self.kg_kwargs = kg_candidate_kwargs(opt)
        opt["datafile"] = raw_file(opt["datapath"], "komodis", "dataset.json")
        self.kg_datafile = opt["datafile"]
        self.split_path = os.path.join(opt["datapath"], "komodis", SPLIT_FILE_NAME)
        self.id = "komodis"
        super().__init__(opt, shared)

    def turn_kg(self, msg):
        """
        The dialogue's own KG (``kg_triples``) and one linker over every KG name of
        ``dataset.json`` (built once per process).
        """
        from parlai_docgraph.kg.store import KnowledgeGraph

        path = os.path.abspath(self.kg_datafile)
        st = os.stat(path)
        linker = _LINKERS.get_or_make((path, st.st_mtime_ns, st.st_size),
                                      lambda: _name_linker(path))
        return KnowledgeGraph.from_triples(msg["kg_triples"], reverse_prefix=None), linker

    def count_options(self) -> tuple:
        # every split reads the same dataset.json: the split (and the shipped id lists
        # it may come from) must be part of the cached-lengths key
        shipped = os.stat(SHIPPED_SPLIT).st_mtime_ns if os.path.isfile(SHIPPED_SPLIT) else None
        return super().count_options() + (self.split, shipped)

    def setup_data(self, datafile: str) -> Iterator[Tuple[Message, bool]]:
        split, notes = load_split(datafile, self.split_path, SHIPPED_SPLIT)
        for note in notes:
            logging.warning(note)
        ids = split["dialogue_ids"][self.split]
        dialogues = read_komodis(datafile, self.bad_rows, keep_ids=ids)
        self.log_bad_rows()
        order = {d: i for i, d in enumerate(ids)}
        dialogues.sort(key=lambda d: order[d.dialogue_id])
        pool = [(d.dialogue_id, u) for d in dialogues for u in d.utterances[1:]]
        for dialogue in dialogues:
            for episode in dialogue_episodes(dialogue):
                for i, turn in enumerate(episode):
                    msg = Message(
                        {
                            "id": self.id,
                            "text": turn.text,
                            "labels": [turn.response],
                            "movie_title": turn.movie_title,
                            "dialogue_id": turn.dialogue_id,
                            "speaker": turn.speaker,
                            "utterance_index": turn.utterance_index,
                            "kg_facts": [list(t) for t in turn.facts],
                            "kg_attitudes": [list(a) for a in turn.attitudes],
                            "kg_triples": [list(t) for t in turn.kg_triples],
                        }
                    )
                    if self.kg_candidates:
                        # history and gold only; candidates are computed when served
                        msg["kg_history"] = list(dialogue.utterances[: turn.utterance_index])
                        gold = kg_fields.response_facts(turn.facts, turn.response)
                        msg["kg_gold_paths"] = [kg_fields.path_to_json(p) for p in gold]
                    if self.num_candidates > 1:
                        rng = example_rng(
                            self.candidates_seed, turn.dialogue_id, turn.utterance_index
                        )
                        msg["label_candidates"] = sample_candidates(
                            turn.response, pool, turn.dialogue_id, self.num_candidates, rng
                        )
                    yield msg, i == 0
