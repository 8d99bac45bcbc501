"""
Reader for Wizard of Wikipedia raw split files (no ParlAI imports).

One :class:`KnowledgeTurn` per Wizard turn. The knowledge pool follows ParlAI's
``WizardDialogKnowledgeTeacher``: the chosen topic's passage, then the passages retrieved
for the partner's (Apprentice) previous turn, then those of the Wizard's own previous
turn; a title seen earlier in the pool is not added again.

The gold sentence follows the key grammar of ``checked_sentence`` /
``checked_passage`` (docs: datasets.md 1.2): ``{"no_passages_used": ...}`` or ``{}``
mean no knowledge; the passage title is taken from ``checked_passage`` when that passage
holds the sentence, otherwise from the sentence key (``{source}_{Title}_{idx}``, where
``chosen`` always says ``_0``), otherwise from the first pool passage holding it.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Tuple

from parlai_docgraph.dataset_errors import BadRows, DatasetFormatError, require_type
from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE
from parlai_docgraph.jsonio import iter_json_array
from parlai_docgraph.tasks.docgraph.readers.turns import KnowledgeTurn, Passage


def _first(d: Dict[str, str]) -> Tuple[str, str]:
    for k, v in d.items():
        return k, v
    return "", ""


def _title_from_sentence_key(key: str) -> str:
    """
    ``partner_Royal_Blue_(train)_0`` -> ``Royal Blue (train)``.
    """
    parts = key.split("_")
    return " ".join(parts[1:-1])


def _find(pool: List[Passage], title: str, sentence: str) -> Optional[Tuple[int, int]]:
    for p, (t, sents) in enumerate(pool):
        if t == title and sentence in sents:
            return p, sents.index(sentence)
    return None


def resolve_gold(turn: dict, pool: List[Passage]) -> Tuple[str, str, Optional[Tuple[int, int]]]:
    """
    Return ``(title, sentence, gold)`` for a Wizard turn's checked sentence.
    """
    sentence_dict = turn.get("checked_sentence") or {}
    passage_dict = turn.get("checked_passage") or {}
    _, sentence = _first(sentence_dict)
    if not sentence_dict or sentence == NO_PASSAGE:
        return NO_PASSAGE, NO_PASSAGE, None
    key, _ = _first(sentence_dict)
    candidates = [v for k, v in passage_dict.items() if v != NO_PASSAGE and k != NO_PASSAGE]
    candidates.append(_title_from_sentence_key(key))
    for title in candidates:
        gold = _find(pool, title, sentence)
        if gold is not None:
            # Prefer the index the key names when the sentence occurs twice.
            idx = key.rsplit("_", 1)[-1]
            sents = pool[gold[0]][1]
            if idx.isdigit() and int(idx) < len(sents) and sents[int(idx)] == sentence:
                gold = (gold[0], int(idx))
            return title, sentence, gold
    for p, (title, sents) in enumerate(pool):
        if sentence in sents:
            return title, sentence, (p, sents.index(sentence))
    title = candidates[0] if candidates[0] else _title_from_sentence_key(key)
    return title, sentence, None


def _passages(value, path: str, line: int, where: str) -> List[Passage]:
    require_type(value, list, path, line, where, "retrieved_passages")
    out: List[Passage] = []
    for j, item in enumerate(value):
        if not isinstance(item, dict) or len(item) != 1:
            raise DatasetFormatError(
                path, line, where, f"retrieved_passages[{j}] should be a 1-key dict {{title: [sentences]}}"
            )
        (title, sents), = item.items()
        if not isinstance(sents, list) or not all(isinstance(s, str) for s in sents):
            raise DatasetFormatError(
                path, line, where, f"retrieved_passages[{j}] ('{title}') should map to a list of strings"
            )
        out.append((title, sents))
    return out


def _validate(dialogue, path: str, line: int, index: int) -> None:
    where = f"dialogue {index}"
    require_type(dialogue, dict, path, line, where, "dialogue")
    for key in ("chosen_topic", "chosen_topic_passage", "dialog"):
        if key not in dialogue:
            raise DatasetFormatError(path, line, where, f"missing field '{key}'")
    require_type(dialogue["chosen_topic"], str, path, line, where, "chosen_topic")
    passage = require_type(dialogue["chosen_topic_passage"], list, path, line, where, "chosen_topic_passage")
    if not all(isinstance(s, str) for s in passage):
        raise DatasetFormatError(path, line, where, "chosen_topic_passage should be a list of strings")
    turns = require_type(dialogue["dialog"], list, path, line, where, "dialog")
    for t, turn in enumerate(turns):
        twhere = f"{where} turn {t}"
        require_type(turn, dict, path, line, twhere, "turn")
        for key in ("speaker", "text"):
            if key not in turn:
                raise DatasetFormatError(path, line, twhere, f"missing field '{key}'")
            require_type(turn[key], str, path, line, twhere, key)
        if "Wizard" not in turn["speaker"] and "Apprentice" not in turn["speaker"]:
            raise DatasetFormatError(path, line, twhere, f"unknown speaker '{turn['speaker']}'")
        _passages(turn.get("retrieved_passages", []), path, line, twhere)
        for key in ("checked_sentence", "checked_passage"):
            if turn.get(key) is not None:
                require_type(turn[key], dict, path, line, twhere, key)


def wizard_turns(
    dialogue: dict,
    dialogue_id: str,
    add_missing_turns: bool = True,
    delimiter: str = "\n",
    path: str = "",
    line: int = 0,
) -> List[KnowledgeTurn]:
    """
    Expand one raw dialogue into its Wizard turns.

    :param add_missing_turns: keep the last Wizard turn of Wizard-first dialogues, which
        ParlAI's teacher drops unless ``--add-missing-turns`` is set.
    """
    turns = dialogue["dialog"]
    topic = dialogue["chosen_topic"]
    wizard_first = bool(turns) and "Wizard" in turns[0]["speaker"]
    wizard_idx = [i for i, t in enumerate(turns) if "Wizard" in t["speaker"]]
    if wizard_first and not add_missing_turns and wizard_idx:
        wizard_idx = wizard_idx[: (len(turns) - 1) // 2]
    out: List[KnowledgeTurn] = []
    for n, idx in enumerate(wizard_idx):
        where = f"dialogue {dialogue_id} turn {idx}"
        pool: List[Passage] = [(topic, list(dialogue["chosen_topic_passage"]))]
        seen = {topic}
        sources = []
        if idx >= 1:
            sources.append(turns[idx - 1].get("retrieved_passages", []))
        if idx >= 2:
            sources.append(turns[idx - 2].get("retrieved_passages", []))
        for src in sources:
            for title, sents in _passages(src, path, line, where):
                if title not in seen:
                    seen.add(title)
                    pool.append((title, sents))
        if idx == 0:
            text = topic
        elif idx == 1:
            text = f"{topic}{delimiter}{turns[0]['text']}"
        else:
            text = turns[idx - 1]["text"]
        title, sentence, gold = resolve_gold(turns[idx], pool)
        cands = turns[idx].get("candidate_responses") or []
        out.append(
            KnowledgeTurn(
                dialogue_id=dialogue_id,
                turn_index=idx,
                chosen_topic=topic,
                text=text,
                response=turns[idx]["text"],
                passages=pool,
                title=title,
                checked_sentence=sentence,
                gold=gold,
                candidate_responses=list(cands),
                episode_done=n == len(wizard_idx) - 1,
                previous_response=turns[idx - 2]["text"] if idx >= 2 else None,
                source_line=line,
            )
        )
    return out


def read_wow(
    path: str, bad_rows: Optional[BadRows] = None, add_missing_turns: bool = True
) -> Iterator[List[KnowledgeTurn]]:
    """
    Yield the Wizard turns of each dialogue (one list per dialogue) of a split file.

    A malformed dialogue raises :class:`DatasetFormatError` with file and line, or is
    skipped and counted when ``bad_rows.skip`` is set.
    """
    bad_rows = bad_rows if bad_rows is not None else BadRows()
    for index, line, dialogue in iter_json_array(path):
        try:
            _validate(dialogue, path, line, index)
            turns = wizard_turns(
                dialogue, f"{index}", add_missing_turns=add_missing_turns, path=path, line=line
            )
        except DatasetFormatError as err:
            bad_rows.report(err)
            continue
        if turns:
            yield turns
