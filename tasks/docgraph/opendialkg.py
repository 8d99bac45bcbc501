"""
OpenDialKG teachers: ``docgraph:opendialkg`` (the official release under
``<datapath>/opendialkg/``) and the bundled ``docgraph:sample_kg`` (same reader, the
package's own sample in the same format).

One example per assistant turn. Messages carry ``text`` (the user turn before the
response; "" when the assistant opens the dialogue), ``labels``, ``label_candidates``
(the gold and ``--num-label-candidates`` - 1 assistant responses of other dialogues of
the same split, drawn with a seeded RNG) and the KG grounding:

* ``kg_path``: the gold path triples ``[[subject, relation, object], ...]`` in the KG's
  exact spelling (``~`` reverse relations kept), empty when the turn has no path;
* ``kg_user_paths``: the paths grounding the user turn in ``text``, one list of triples
  per path action;
* ``kg_entities``: the entities grounded so far (paths of earlier turns and of the user
  turn, plus the start entity of the gold path); never an entity of a later turn;
* ``kg_file``: the ``opendialkg_triples.txt`` to retrieve from
  (``parlai_docgraph.kg.fields.load_kg(kg_file)`` reads it once per process through
  ``KnowledgeGraph.from_file``: ``~r`` lines fold onto their forward fact, so
  ``has_triple`` answers both spellings; malformed lines are logged and counted);
* ``dialogue_id`` (0-based CSV data row = DialogGSR ``unique_id - 1000000``),
  ``turn_id`` and ``ratings``;
* with ``--kg-candidates true`` (default), ``kg_history`` (the turns before the
  response) and DialogGSR's per-turn candidate subgraph computed from it alone when the
  example is served (``parlai_docgraph.kg.fields``: ``kg_mentioned``,
  ``kg_candidates``, ``kg_candidates_text``, ``kg_katz``, ``kg_gold_paths``,
  ``kg_gold_index``, ``kg_gold_text``).

Splits: DialogGSR's seed-42 70/15/15 split of the CSV rows (the shipped
``splits/opendialkg_split.json`` for the official 13,802-row file, the same procedure
computed for any other row count).
"""

from __future__ import annotations

import os
from typing import Iterator, List, Optional, Tuple

from parlai.core.message import Message
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.utils import logging

from parlai_docgraph.tasks.docgraph.base import DocgraphDialogTeacher
from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH, raw_file
from parlai_docgraph.tasks.docgraph.candidates import add_candidate_args, example_rng, sample_candidates
from parlai_docgraph.tasks.docgraph.kg_candidates import KgCandidatesMixin, add_kg_candidate_args, kg_candidate_kwargs
from parlai_docgraph.tasks.docgraph.readers.opendialkg import assistant_turns, read_opendialkg
from parlai_docgraph.tasks.docgraph.readers.opendialkg_split import split_rows

from parlai_docgraph.kg import fields as kg_fields

CSV_NAME = "opendialkg.csv"
TRIPLES_NAME = "opendialkg_triples.txt"


def _triples(triples) -> List[List[str]]:
    return [list(t) for t in triples]


def gold_paths(turn) -> list:
    """The turn's path actions as hop paths (a non-chaining action is logged and left out)."""
    out = []
    for action in turn.gold_paths:
        try:
            out.append(kg_fields.triples_to_path(action.triples))
        except ValueError as e:
            logging.warning(f"dialogue {turn.dialogue_id} turn {turn.turn_index}: {e}")
    return out


class OpendialkgTeacher(KgCandidatesMixin, DocgraphDialogTeacher):
    """
    OpenDialKG (Moon et al., 2019), one example per assistant turn, with gold KG paths.
    """

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("docgraph OpenDialKG")
        add_candidate_args(group)
        add_kg_candidate_args(group)
        return parser

    def __init__(self, opt: Opt, shared=None) -> None:
        opt = Opt(opt)  # a copy that keeps Opt's methods
        self.num_cands = int(opt["num_label_candidates"])
        self.cands_seed = int(opt["label_candidates_seed"])
        self.kg_candidates = bool(opt["kg_candidates"])
        self.kg_kwargs = kg_candidate_kwargs(opt)
        self.id = self.__class__.__name__.replace("Teacher", "").lower()
        if shared is None:
            csv_path, self.kg_file = self.locate(opt)
        else:
            csv_path, self.kg_file = opt.get("datafile"), shared.get("kg_file")
        opt["datafile"] = csv_path
        super().__init__(opt, shared)

    def share(self):
        shared = super().share()
        shared["kg_file"] = self.kg_file
        return shared

    def turn_kg(self, msg):
        """The full OpenDialKG KG and its linker (loaded once per process and file)."""
        return kg_fields.load_kg(self.kg_file)

    def locate(self, opt: Opt) -> Tuple[str, str]:
        """
        Paths of the dialogue CSV and the triples file (downloaded when allowed).
        """
        datapath = opt["datapath"]
        return (
            raw_file(datapath, "opendialkg", CSV_NAME),
            raw_file(datapath, "opendialkg", TRIPLES_NAME),
        )

    def setup_data(self, datafile: str) -> Iterator[Tuple[Message, bool]]:
        data = read_opendialkg(datafile, self.bad_rows)
        self.log_bad_rows()
        split, note = split_rows(data.num_rows, os.path.basename(datafile))
        if note:
            logging.warning(f"{self.__class__.__name__}: {note}")
        fold = self.datatype.split(":")[0]
        rows = set(split[fold])
        dialogues = [d for d in data.dialogues if d.index in rows]
        unattached = sum(len(d.unattached_paths) for d in dialogues)
        logging.info(f"{self.__class__.__name__} {fold}: {len(dialogues)} dialogues, "
                     f"{sum(len(d.path_actions) for d in dialogues)} KG path actions "
                     f"({unattached} after the last message, grounding no turn)")
        episodes = [(d, assistant_turns(d)) for d in dialogues]
        pool = [(t.dialogue_id, t.response) for _, turns in episodes for t in turns]
        for dialogue, turns in episodes:
            ratings = {"user": dialogue.user_rating, "assistant": dialogue.assistant_rating}
            for i, turn in enumerate(turns):
                msg = Message(
                    {
                        "id": self.id,
                        "text": turn.text,
                        "labels": [turn.response],
                        "kg_path": _triples(turn.gold_path),
                        "kg_user_paths": [_triples(p.triples) for p in turn.user_paths],
                        "kg_entities": list(turn.entities),
                        "kg_file": self.kg_file,
                        "dialogue_id": turn.dialogue_id,
                        "turn_id": turn.turn_index,
                        "ratings": ratings,
                    }
                )
                if self.kg_candidates:
                    # the history and gold paths only; the candidates are computed when
                    # the example is served (see :meth:`get`), so they never sit in memory
                    msg["kg_history"] = list(turn.history) + ([turn.text] if turn.text else [])
                    msg["kg_gold_paths"] = [kg_fields.path_to_json(p) for p in gold_paths(turn)]
                if self.num_cands > 1:
                    rng = example_rng(self.cands_seed, turn.dialogue_id, turn.turn_index)
                    msg["label_candidates"] = sample_candidates(
                        turn.response, pool, turn.dialogue_id, self.num_cands, rng
                    )
                yield msg, i == 0


class SampleKgTeacher(OpendialkgTeacher):
    """
    The bundled OpenDialKG-format sample (offline), read by the same reader.
    """

    def locate(self, opt: Opt) -> Tuple[str, str]:
        folder = os.path.join(SAMPLE_DATAPATH, "opendialkg")
        paths = os.path.join(folder, CSV_NAME), os.path.join(folder, TRIPLES_NAME)
        for path in paths:
            if not os.path.isfile(path):
                raise FileNotFoundError(f"bundled sample file missing from the package: {path}")
        return paths
