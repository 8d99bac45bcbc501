"""
Reader for OpenDialKG (no ParlAI imports): ``opendialkg.csv`` (the splits are in
:mod:`.opendialkg_split`). ``opendialkg_triples.txt`` is read by the package's one triple reader,
:meth:`parlai_docgraph.kg.store.KnowledgeGraph.from_file`.

``opendialkg.csv`` has the header ``Messages,User Rating,Assistant Rating`` and one row
per dialogue session. ``Messages`` is a JSON string holding a list of actions
(docs: datasets.md 3.2)::

    {"type": "chat", "sender": "user"|"assistant", "message": str}
    {"type": "action", "sender": ..., "action_id": "kgwalk/choose_path",
     "metadata": {"path": [score, [[subject, relation, object], ...], render]}}
    {"type": "action", "sender": ..., "action_id": "meta_thread/send_meta_message",
     "metadata": {"text": str}}                      # annotator chatter, skipped

Turn structure (one :class:`AssistantTurn` per assistant turn):

* consecutive chat messages of the same sender form one turn (joined with a space;
  ConvLab-3 concatenates them too);
* a ``kgwalk/choose_path`` action grounds the next chat message of the *same* sender,
  so the gold path of an assistant turn is the assistant path action(s) since the
  assistant's previous chat message; user path actions ground the user turn
  (``user_paths``). A turn without a path action has an empty gold path (DialogGSR
  carries the previous gold forward; that is not reproduced);
* ``entities`` lists what the dialogue has grounded *before* the response: every entity
  of the paths of earlier turns (the user's current turn included), plus the start
  entity of the turn's own gold path(s). Entities of later turns never appear (DialogGSR
  links mentions against the paths of the whole dialogue, future turns included).

Every malformed row raises :class:`DatasetFormatError` with the file and the physical
line where the row starts, or is skipped and counted by :class:`BadRows`.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from parlai_docgraph.dataset_errors import BadRows, DatasetFormatError

HEADER = ["Messages", "User Rating", "Assistant Rating"]
SENDERS = ("user", "assistant")
PATH_ACTION = "kgwalk/choose_path"
META_ACTION = "meta_thread/send_meta_message"

Triple = Tuple[str, str, str]


# --------------------------------------------------------------------------------------
# dialogues
# --------------------------------------------------------------------------------------


@dataclass
class PathAction:
    """
    One ``kgwalk/choose_path`` action: a 1-2 triple walk chosen by ``sender``.
    """

    sender: str
    score: float
    triples: List[Triple]
    render: str
    position: int  # index of the action in the row's Messages list

    def entities(self) -> List[str]:
        out: List[str] = []
        for s, _, o in self.triples:
            for e in (s, o):
                if e not in out:
                    out.append(e)
        return out

    @property
    def start(self) -> str:
        return self.triples[0][0]


@dataclass
class ChatTurn:
    """
    One speaker turn: consecutive chat messages of ``sender`` and the paths grounding it.
    """

    sender: str
    messages: List[str]
    paths: List[PathAction] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(self.messages)


@dataclass
class Dialogue:
    """
    One CSV row. ``index`` is the 0-based data row (DialogGSR ``unique_id - 1000000``).
    """

    index: int
    line: int
    turns: List[ChatTurn]
    user_rating: Dict
    assistant_rating: Dict
    num_chat_messages: int = 0
    num_meta_messages: int = 0
    #: path actions after the sender's last chat message (they ground nothing)
    unattached_paths: List[PathAction] = field(default_factory=list)

    @property
    def path_actions(self) -> List[PathAction]:
        paths = [p for t in self.turns for p in t.paths] + self.unattached_paths
        return sorted(paths, key=lambda p: p.position)


@dataclass
class AssistantTurn:
    """
    One assistant response to predict.

    ``text`` is the user turn just before it ("" when the assistant opens the
    dialogue); ``history`` holds the earlier turns' texts (``text`` excluded);
    ``gold_path`` the triples of the assistant's path action(s) grounding the response.
    """

    dialogue_id: int
    turn_index: int
    text: str
    response: str
    history: List[str]
    gold_paths: List[PathAction]
    user_paths: List[PathAction]
    entities: List[str]
    episode_done: bool = False

    @property
    def gold_path(self) -> List[Triple]:
        return [t for p in self.gold_paths for t in p.triples]


@dataclass
class OpendialkgData:
    """
    What :func:`read_opendialkg` read: the dialogues (bad rows skipped) and the number of
    data rows in the file (bad rows included, so row indices stay DialogGSR's).
    """

    path: str
    num_rows: int
    dialogues: List[Dialogue]


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _parse_path(action: dict, loc) -> Tuple[float, List[Triple], str]:
    meta = action.get("metadata")
    if not isinstance(meta, dict) or "path" not in meta:
        loc(f"{PATH_ACTION} action without metadata.path")
    path = meta["path"]
    if not isinstance(path, list) or len(path) != 3:
        loc("metadata.path should be a list [score, [[subject, relation, object], ...], render]")
    score, triples, render = path
    if not _is_number(score):
        loc(f"path score should be a number, got {type(score).__name__}")
    if not isinstance(triples, list) or not triples:
        loc("path triples should be a non-empty list of [subject, relation, object]")
    out: List[Triple] = []
    for j, t in enumerate(triples):
        if not isinstance(t, list) or len(t) != 3 or not all(isinstance(x, str) for x in t):
            loc(f"path triple {j} should be a list of 3 strings, got {json.dumps(t)[:80]}")
        out.append((t[0], t[1], t[2]))
    if not isinstance(render, str):
        loc(f"path render should be a string, got {type(render).__name__}")
    return score, out, render


def _parse_rating(value: str, column: str, loc) -> Dict:
    try:
        rating = json.loads(value)
    except json.JSONDecodeError as e:
        loc(f"column '{column}': invalid JSON: {e.msg} (column {e.colno})")
    if not isinstance(rating, dict):
        loc(f"column '{column}' should be a JSON object, got {type(rating).__name__}")
    return rating


def parse_row(
    row: Sequence[str], index: int, path: str = "", line: Optional[int] = None
) -> Dialogue:
    """
    Parse one data row ``[Messages, User Rating, Assistant Rating]`` of the CSV.

    :raises DatasetFormatError: naming ``path``, ``line`` and ``row <index>``.
    """
    where = f"row {index}"

    def loc(problem: str):
        raise DatasetFormatError(path, line, where, problem)

    if len(row) != len(HEADER):
        loc(f"expected {len(HEADER)} columns ({', '.join(HEADER)}), got {len(row)}")
    try:
        actions = json.loads(row[0])
    except json.JSONDecodeError as e:
        loc(f"column 'Messages': invalid JSON: {e.msg} (column {e.colno})")
    if not isinstance(actions, list):
        loc(f"column 'Messages' should be a JSON list, got {type(actions).__name__}")
    user_rating = _parse_rating(row[1], HEADER[1], loc)
    assistant_rating = _parse_rating(row[2], HEADER[2], loc)

    turns: List[ChatTurn] = []
    pending: Dict[str, List[PathAction]] = {s: [] for s in SENDERS}
    n_chat = n_meta = 0
    for k, act in enumerate(actions):
        if not isinstance(act, dict):
            loc(f"action {k} should be a JSON object, got {type(act).__name__}")
        sender = act.get("sender")
        if sender not in SENDERS:
            loc(f"action {k}: unknown sender {sender!r}")
        kind = act.get("type")
        if kind == "chat":
            message = act.get("message")
            if not isinstance(message, str):
                loc(f"action {k}: chat without a string 'message'")
            n_chat += 1
            if turns and turns[-1].sender == sender:
                turns[-1].messages.append(message)
                turns[-1].paths.extend(pending[sender])
            else:
                turns.append(ChatTurn(sender, [message], list(pending[sender])))
            pending[sender] = []
        elif kind == "action" and act.get("action_id") == PATH_ACTION:
            score, triples, render = _parse_path(
                act, lambda p, k=k: loc(f"action {k} ({PATH_ACTION}): {p}")
            )
            pending[sender].append(PathAction(sender, score, triples, render, k))
        elif kind == "action" and act.get("action_id") == META_ACTION:
            n_meta += 1
        else:
            loc(
                f"action {k}: unknown action (type={act.get('type')!r}, "
                f"action_id={act.get('action_id')!r})"
            )
    leftover = sorted(pending["user"] + pending["assistant"], key=lambda p: p.position)
    return Dialogue(
        index=index,
        line=line if line is not None else 0,
        turns=turns,
        user_rating=user_rating,
        assistant_rating=assistant_rating,
        num_chat_messages=n_chat,
        num_meta_messages=n_meta,
        unattached_paths=leftover,
    )


class _FieldLimit:
    """
    Raise the csv module's field size limit while reading (a session can be long).
    """

    def __enter__(self):
        self.old = csv.field_size_limit()
        csv.field_size_limit(max(self.old, 1 << 30))

    def __exit__(self, *exc):
        csv.field_size_limit(self.old)


def iter_csv_rows(path: str) -> Iterator[Tuple[int, int, Optional[List[str]], Optional[str]]]:
    """
    Yield ``(index, start_line, row, csv_problem)`` for each data row of ``path``.

    ``start_line`` is the physical line where the row starts (the reader's ``line_num``
    after the previous row, plus one). The header must be ``Messages,User Rating,
    Assistant Rating``.
    """
    with open(path, encoding="utf-8-sig", newline="") as f, _FieldLimit():
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise DatasetFormatError(path, 1, "header", "empty file (expected a header row)")
        except csv.Error as e:
            raise DatasetFormatError(path, 1, "header", f"CSV error: {e}")
        if [h.strip() for h in header] != HEADER:
            raise DatasetFormatError(
                path, 1, "header", f"expected header {','.join(HEADER)}, got {','.join(header)}"
            )
        index = 0
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                # the reader cannot resynchronise: the caller raises, skipping or not
                yield index, start, None, f"CSV error: {e}"
                return
            yield index, start, row, None
            index += 1


def read_opendialkg(path: str, bad_rows: Optional[BadRows] = None) -> OpendialkgData:
    """
    Read every session of an ``opendialkg.csv``-format file.

    A malformed row raises :class:`DatasetFormatError` (file, line, ``row <i>``), or is
    skipped and counted when ``bad_rows.skip`` is set; its index is still used up, so
    the indices of the other rows stay those of the file.
    """
    bad_rows = bad_rows if bad_rows is not None else BadRows()
    dialogues: List[Dialogue] = []
    num_rows = 0
    for index, line, row, problem in iter_csv_rows(path):
        num_rows = index + 1
        if problem is not None:
            # the CSV reader cannot go on past this point: never skippable
            raise DatasetFormatError(path, line, f"row {index}", problem)
        try:
            dialogues.append(parse_row(row, index, path, line))
        except DatasetFormatError as err:
            bad_rows.report(err)
    return OpendialkgData(path=path, num_rows=num_rows, dialogues=dialogues)


def assistant_turns(dialogue: Dialogue) -> List[AssistantTurn]:
    """
    Expand a dialogue into its assistant turns (the examples to predict).
    """
    out: List[AssistantTurn] = []
    history: List[str] = []
    seen: Dict[str, None] = {}  # ordered set of grounded entities
    turns = dialogue.turns
    n_assistant = sum(1 for t in turns if t.sender == "assistant")
    for i, turn in enumerate(turns):
        if turn.sender == "assistant":
            prev = turns[i - 1] if i > 0 else None
            user = prev if prev is not None and prev.sender == "user" else None
            entities = dict(seen)
            for p in turn.paths:
                entities.setdefault(p.start)
            out.append(
                AssistantTurn(
                    dialogue_id=dialogue.index,
                    turn_index=len(out),
                    text=user.text if user is not None else "",
                    response=turn.text,
                    history=history[:-1] if user is not None else list(history),
                    gold_paths=list(turn.paths),
                    user_paths=list(user.paths) if user is not None else [],
                    entities=list(entities),
                    episode_done=len(out) == n_assistant - 1,
                )
            )
        for p in turn.paths:
            for e in p.entities():
                seen.setdefault(e)
        history.append(turn.text)
    return out
