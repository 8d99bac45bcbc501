"""
``docgraph:docqa``: single-turn questions over whole documents, each answered by one
sentence of its document (the questions a user asks in ``parlai interactive
--documents``).

* ``train``: the bundled training documents (``sample_data/docqa``: Markdown notes, how-tos,
  biographies told with pronouns, table-like lists, an FAQ, a history, a science text and a
  travel guide) except :data:`VALID_DOCUMENTS`; ``valid``: those 13 documents (a science
  text, two sets of meeting notes, a biography and a family history told with pronouns,
  two how-tos, two FAQs / rule lists and two table-like lists: 124 questions, a third of
  them asked by name about a sentence that says "he" or "it"; the zoo recipe was chosen
  there, never on ``test``);
* ``test``: the held-out set (``parlai_docgraph/assets/heldout``): other documents and
  questions written for evaluation only, never trained or tuned on; the set
  ``parlai-docgraph heldout_eval`` reports.

Documents are read exactly as ``--documents`` reads them
(:func:`~parlai_docgraph.graphs.corpus.read_document`). ``--docqa-pool document``
(default): a question's knowledge pool is its whole document; ``mixed``: the pool a chat
over all the fold's documents at once would give it (a multi-document pool),
the passages that BM25 retrieves for the question from every document of the fold within
``--docqa-pool-sentences`` (:class:`~parlai_docgraph.graphs.retrieval.DocumentIndex`), in
index order, with the passage of the answer added where retrieval missed it; so other
documents' near-duplicate sentences compete with the answer, and each candidate's title
names its document. ``--label-type chosen_sent`` labels with the answering line (``title
sentence``) among the document's lines; ``response`` labels with the answering sentence
itself (an extractive reply). Rows of ``questions.jsonl`` are JSON objects with
``document``, ``question`` and ``answer`` (the exact sentence); a bad row stops the reader
with file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from parlai.core.message import Message
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser

import parlai_docgraph
from parlai_docgraph.dataset_errors import DatasetFormatError
from parlai_docgraph.graphs.corpus import Pool as Passages, read_document
from parlai_docgraph.graphs.retrieval import DEFAULT_BUDGET, DocumentIndex
from parlai_docgraph.jsonio import iter_jsonl

from parlai_docgraph.tasks.docgraph.base import DocgraphDialogTeacher
from parlai_docgraph.tasks.docgraph.knowledge_teacher import add_knowledge_label_args, pool_message

DOCQA = Path(__file__).resolve().parent / "sample_data" / "docqa"
# the package's assets, wherever ``tasks/`` lives (an editable install keeps the repository
# layout, where ``tasks/`` is not inside ``parlai_docgraph/``)
HELDOUT = Path(parlai_docgraph.__file__).resolve().parent / "assets" / "heldout"
VALID_DOCUMENTS = ("glaciers.txt", "sprint_notes.md", "bridge_engineer_biography.txt",
                   "gym_timetable.md", "thermostat_faq.md",
                   # with their 87 questions: enough valid questions to tell recipes apart
                   "lighthouse_keeper_biography.txt", "bicycle_chain_howto.md",
                   "museum_visitor_faq.md", "orchestra_season_programme.md",
                   "family_mill_history.txt", "sewing_a_button_howto.md",
                   "camping_site_rules.md", "volunteer_meeting_minutes.md")
FIELDS = ("document", "question", "answer")
POOLS = ("document", "mixed")


@dataclass(frozen=True)
class Question:
    """One question: its document's passages and the answering ``title sentence`` line."""

    document: str
    question: str
    passages: Passages
    gold: str
    answer: str
    span: str = ""  # the part of the answer that answers the question ("" when not given)


def load_questions(folder: "str | Path" = HELDOUT) -> List[Question]:
    """
    The questions of ``<folder>/questions.jsonl`` with their documents. A row that is not a
    JSON object with :data:`FIELDS`, names a missing document or gives an answer that is not
    exactly one sentence of its document, or a ``span`` that is not a part of the answer,
    raises ``ValueError`` naming file and line.
    """
    folder = Path(folder)
    path = folder / "questions.jsonl"
    docs: Dict[str, Passages] = {}
    out: List[Question] = []
    def not_json(err: DatasetFormatError) -> None:
        raise ValueError(f"{path}:{err.line}: not JSON ({err.problem})") from err

    for number, row in iter_jsonl(str(path), on_error=not_json):
        where = f"{path}:{number}"
        if not isinstance(row, dict) or any(not isinstance(row.get(k), str) for k in FIELDS):
            raise ValueError(f"{where}: a row needs the string fields {', '.join(FIELDS)}")
        name = row["document"]
        if name not in docs:
            if not (folder / name).is_file():
                raise ValueError(f"{where}: document {name!r} not found in {folder}")
            docs[name] = read_document(str(folder / name))
        lines = [f"{t} {s}" for t, ss in docs[name] for s in ss if s == row["answer"]]
        if len(lines) != 1:
            raise ValueError(f"{where}: the answer is not one sentence of {name} "
                             f"({len(lines)} matches): {row['answer']!r}")
        span = row.get("span", "")
        if not isinstance(span, str) or span not in row["answer"]:
            raise ValueError(f"{where}: span {span!r} is not a part of the answer sentence")
        out.append(Question(name, row["question"], docs[name], lines[0], row["answer"], span))
    if not out:
        raise ValueError(f"{path}: no questions")
    return out


def question_message(q: Question, label_type: str, separator: bool,
                     pool: Optional[Passages] = None) -> Message:
    """The WoW-format message of one question over ``pool`` (default: its document);
    ``response`` labels: the answer itself."""
    pool = q.passages if pool is None else pool
    where = [(p, i) for p, (t, ss) in enumerate(pool) for i, x in enumerate(ss)
             if f"{t} {x}" == q.gold]
    return pool_message("docqa", q.question, q.passages[0][0], pool, where[0],
                        q.answer, label_type, separator)


def mixed_pools(questions: List[Question], folder: Path, budget: int) -> List[Passages]:
    """
    Per question, the passages BM25 retrieves for it from all the documents of
    ``questions`` at once within ``budget`` sentences, in index order, with the passage
    that holds its answer added when retrieval missed it (the module docstring).
    """
    index = DocumentIndex(cache_root=None, progress=False)
    index.add([str(folder / name) for name in sorted({q.document for q in questions})])
    lines = [{f"{t} {s}" for s in ss} for t, ss in index.passages]
    pools = []
    for q in questions:
        index.last_pool = None  # each question is a dialogue of its own
        index.retrieve([q.question], budget)
        chosen = set(index.last_pool or [])
        if not any(q.gold in lines[i] for i in chosen):
            chosen.add(next(i for i, found in enumerate(lines) if q.gold in found))
        pools.append([(index.passages[i][0], list(index.passages[i][1]))
                      for i in sorted(chosen)])
    return pools


class DocqaTeacher(DocgraphDialogTeacher):
    """Document questions (module docstring): train/valid bundled, test the held-out set."""

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("docgraph docqa task")
        add_knowledge_label_args(group)
        group.add_argument(
            "--docqa-pool", type=str, default="document", choices=POOLS,
            help="a question's knowledge pool: its whole document, or 'mixed': what BM25 "
            "retrieves for it from all the fold's documents at once (its answer's passage "
            "added when missed), as a chat over several documents")
        group.add_argument(
            "--docqa-pool-sentences", type=int, default=DEFAULT_BUDGET,
            help="--docqa-pool mixed: the sentence budget of a pool")
        return parser

    def __init__(self, opt: Opt, shared=None) -> None:
        opt = Opt(opt)
        self.label_type = opt["label_type"]
        self.separator = bool(opt["include_knowledge_separator"])
        self.fold = opt["datatype"].split(":")[0]
        self.pool, self.pool_sentences = opt["docqa_pool"], opt["docqa_pool_sentences"]
        opt["datafile"] = str((HELDOUT if self.fold == "test" else DOCQA) / "questions.jsonl")
        self.id = "docqa"
        super().__init__(opt, shared)

    def count_options(self) -> tuple:
        return super().count_options() + (self.fold, self.pool, self.pool_sentences)

    def setup_data(self, datafile: str) -> Iterator[Tuple[Message, bool]]:
        folder = Path(datafile).parent
        questions = [q for q in load_questions(folder)
                     if self.fold == "test" or (q.document in VALID_DOCUMENTS) == (
                         self.fold == "valid")]
        pools: List[Optional[Passages]] = [None] * len(questions)
        if self.pool == "mixed":
            pools = list(mixed_pools(questions, folder, self.pool_sentences))
        for q, pool in zip(questions, pools):
            yield question_message(q, self.label_type, self.separator, pool), True
