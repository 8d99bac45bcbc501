"""
Reader for KOMODIS ``dataset.json`` and its reproducible split (no ParlAI imports).

File: ``<datapath>/komodis/dataset.json``, one JSON list of dialogues (docs:
datasets.md 4.1). Used fields, checked strictly; any other key is ignored:

* ``dialogue_id`` (int or str, unique), ``movie_title`` (str);
* ``dialogue``: a list of ``{"utterance": str, ...}``, delexicalised (``movie#0``,
  ``actor#0`` ...; kept as they are);
* ``facts``: ``{"first_speaker": [...], "second_speaker": [...]}`` of ``{subject,
  relation, object}``;
* ``attitudes``: the same shape, each ``{subject, relation, object, source}``
  (``object`` is an int 0..5, ``source`` the attitude sentence).

Objects are kept as strings (``str()`` of an int). The official GPT-2 loader keeps only
the ``has_trivia`` / ``has_plot`` facts; all facts are kept here.

Speakers: the official loader (``model/dataset.py``, ``_convert_dialogue_to_samples``)
makes a sample for ``num in range(len(dialogue) - 1)`` with history ending at utterance
``num`` and label utterance ``num + 1``, and gives it the facts of ``second_speaker``
when ``num % 2 == 0``. So utterance ``n`` (0-based) is said by ``second_speaker`` when
``n`` is odd and by ``first_speaker`` when ``n`` is even (utterance 0 is the first
speaker's).

``[eou]`` / ``[EOU]`` (end of a message the crowd worker split into several) become a
sentence break as in the official ``_replace_special_moviecorpus_tokens``: dropped when
the text before it already ends in ``. ? ! , ; :``, else replaced by ``.``; the marker
is attached to the preceding word and whitespace is collapsed (``"yes [eou] i did"``
-> ``"yes. i did"``).

The split is in :mod:`.komodis_split`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from parlai_docgraph.dataset_errors import BadRows, DatasetFormatError, require_type
from parlai_docgraph.jsonio import iter_json_array

SPEAKERS = ("first_speaker", "second_speaker")

Triple = Tuple[str, str, str]
Attitude = Tuple[str, str, str, str]


# ---------------------------------------------------------------------------------------
# utterances

_EOU_RE = re.compile(r"\s*\[eou\]", re.IGNORECASE)
_SENT_END = tuple(".?!,;:")


def clean_utterance(text: str) -> str:
    """
    Turn ``[eou]`` markers into sentence breaks and collapse whitespace.
    """
    out: List[str] = []
    pos = 0
    for m in _EOU_RE.finditer(text):
        out.append(text[pos : m.start()])
        before = "".join(out).rstrip()
        if before and not before.endswith(_SENT_END):
            out.append(".")
        out.append(" ")
        pos = m.end()
    out.append(text[pos:])
    return " ".join("".join(out).split())


def speaker_of(n: int) -> str:
    """
    The speaker of utterance ``n`` (0-based): ``second_speaker`` when ``n`` is odd.
    """
    return SPEAKERS[n % 2]


# ---------------------------------------------------------------------------------------
# dialogues


@dataclass
class KomodisDialogue:
    dialogue_id: object
    movie_title: str
    utterances: List[str]
    facts: Dict[str, List[Triple]]
    attitudes: Dict[str, List[Attitude]]
    index: int = 0
    line: Optional[int] = None

    def kg_triples(self) -> List[Triple]:
        """
        The dialogue's KG: both speakers' facts, then their attitudes as
        ``(subject, relation, object)``, each triple once, in that order.
        """
        seen, out = set(), []
        items = [t for s in SPEAKERS for t in self.facts[s]]
        items += [a[:3] for s in SPEAKERS for a in self.attitudes[s]]
        for t in items:
            if t not in seen:
                seen.add(t)
                out.append(t)
        return out


@dataclass
class KomodisTurn:
    """
    One utterance to predict: ``response`` (utterance ``utterance_index``) after ``text``.
    """

    dialogue_id: object
    movie_title: str
    utterance_index: int
    speaker: str
    text: str
    response: str
    facts: List[Triple]
    attitudes: List[Attitude]
    kg_triples: List[Triple]
    candidates: List[str] = field(default_factory=list)


def is_dialogue_id(value) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _scalar(value, path, line, where, name) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DatasetFormatError(
            path, line, where, f"field '{name}' should be str or int, got {type(value).__name__}"
        )
    return str(value)


def _speaker_items(value, path, line, where, name, keys) -> Dict[str, list]:
    require_type(value, dict, path, line, where, name)
    out: Dict[str, list] = {}
    for speaker in SPEAKERS:
        if speaker not in value:
            raise DatasetFormatError(path, line, where, f"missing field '{name}.{speaker}'")
        items = require_type(value[speaker], list, path, line, where, f"{name}.{speaker}")
        parsed = []
        for j, item in enumerate(items):
            iname = f"{name}.{speaker}[{j}]"
            require_type(item, dict, path, line, where, iname)
            row = []
            for key in keys:
                if key not in item:
                    raise DatasetFormatError(path, line, where, f"missing field '{iname}.{key}'")
                if key == "source" and item[key] is None:
                    row.append("")
                else:
                    row.append(_scalar(item[key], path, line, where, f"{iname}.{key}"))
            parsed.append(tuple(row))
        out[speaker] = parsed
    return out


def parse_dialogue(raw, path: str, line: int, index: int) -> KomodisDialogue:
    """
    Validate one raw dialogue and return it with cleaned utterances.
    """
    where = f"dialogue {index}"
    require_type(raw, dict, path, line, where, "dialogue")
    for key in ("dialogue_id", "movie_title", "dialogue", "facts", "attitudes"):
        if key not in raw:
            raise DatasetFormatError(path, line, where, f"missing field '{key}'")
    if not is_dialogue_id(raw["dialogue_id"]):
        raise DatasetFormatError(
            path, line, where, f"field 'dialogue_id' should be int or str, got {type(raw['dialogue_id']).__name__}"
        )
    where = f"dialogue {index} (id {raw['dialogue_id']})"
    require_type(raw["movie_title"], str, path, line, where, "movie_title")
    turns = require_type(raw["dialogue"], list, path, line, where, "dialogue")
    utterances = []
    for j, turn in enumerate(turns):
        require_type(turn, dict, path, line, where, f"dialogue[{j}]")
        if "utterance" not in turn:
            raise DatasetFormatError(path, line, where, f"missing field 'dialogue[{j}].utterance'")
        text = require_type(turn["utterance"], str, path, line, where, f"dialogue[{j}].utterance")
        text = clean_utterance(text)
        if not text:
            raise DatasetFormatError(path, line, where, f"dialogue[{j}].utterance is empty")
        utterances.append(text)
    facts = _speaker_items(raw["facts"], path, line, where, "facts", ("subject", "relation", "object"))
    attitudes = _speaker_items(
        raw["attitudes"], path, line, where, "attitudes", ("subject", "relation", "object", "source")
    )
    return KomodisDialogue(
        dialogue_id=raw["dialogue_id"],
        movie_title=raw["movie_title"],
        utterances=utterances,
        facts=facts,
        attitudes=attitudes,
        index=index,
        line=line,
    )


def read_komodis(
    path: str,
    bad_rows: Optional[BadRows] = None,
    keep_ids: Optional[Iterable] = None,
) -> List[KomodisDialogue]:
    """
    The dialogues of ``dataset.json`` (those whose id is in ``keep_ids`` when given).

    A malformed dialogue (or a repeated ``dialogue_id``) raises
    :class:`DatasetFormatError` with file and line, or is skipped and counted when
    ``bad_rows.skip`` is set. Dialogues outside ``keep_ids`` are still validated.
    """
    bad_rows = bad_rows if bad_rows is not None else BadRows()
    keep = None if keep_ids is None else set(keep_ids)
    seen: Dict[object, int] = {}
    out: List[KomodisDialogue] = []
    for index, line, raw in iter_json_array(path):
        try:
            dialogue = parse_dialogue(raw, path, line, index)
            if dialogue.dialogue_id in seen:
                raise DatasetFormatError(
                    path, line, f"dialogue {index}",
                    f"dialogue_id {dialogue.dialogue_id!r} repeats the one on line {seen[dialogue.dialogue_id]}",
                )
        except DatasetFormatError as err:
            bad_rows.report(err)
            continue
        seen[dialogue.dialogue_id] = line
        if keep is None or dialogue.dialogue_id in keep:
            out.append(dialogue)
    return out


def dialogue_episodes(dialogue: KomodisDialogue) -> List[List[KomodisTurn]]:
    """
    The dialogue's examples as two episodes, one per responding speaker.

    One example per utterance after the first (``text`` = the previous utterance,
    ``response`` = the utterance). Grouping by the speaker who answers keeps ParlAI's
    running history right (each episode alternates text/label): the ``second_speaker``
    episode answers utterances 0, 2, 4 ...; the ``first_speaker`` episode answers 1,
    3 ..., and its first ``text`` is utterances 0 and 1 joined by a newline so that it
    sees the whole dialogue so far.
    """
    utts = dialogue.utterances
    kg = dialogue.kg_triples()
    episodes: List[List[KomodisTurn]] = []
    for first in (1, 2):
        turns = []
        for n in range(first, len(utts), 2):
            speaker = speaker_of(n)
            text = utts[n - 1] if n != 2 else f"{utts[0]}\n{utts[1]}"
            turns.append(
                KomodisTurn(
                    dialogue_id=dialogue.dialogue_id,
                    movie_title=dialogue.movie_title,
                    utterance_index=n,
                    speaker=speaker,
                    text=text,
                    response=utts[n],
                    facts=list(dialogue.facts[speaker]),
                    attitudes=list(dialogue.attitudes[speaker]),
                    kg_triples=kg,
                )
            )
        if turns:
            episodes.append(turns)
    return episodes
