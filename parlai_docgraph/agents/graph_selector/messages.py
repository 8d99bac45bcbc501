"""
Knowledge pools and gold sentences of the messages the selector reads, in every format it
accepts: the docgraph teachers' ``knowledge_passages`` and ParlAI's own Wizard of Wikipedia
teachers (``-t wizard_of_wikipedia``, ``wizard_of_wikipedia:WizardDialogKnowledgeTeacher``),
whose messages carry the pool only as text lines.

ParlAI's ``WizardDialogKnowledgeTeacher._format_example`` writes ``knowledge`` as one line
per sentence, ``"{title} {sentence}\\n"`` or, with ``--include-knowledge-separator true``,
``"{title} __knowledge__ {sentence}\\n"``, passages in pool order (the chosen topic's first);
``label_candidates`` are ``"no_passages_used no_passages_used"`` then the same lines, and
``title`` / ``checked_sentence`` (with ``--include-checked-sentence true``) name the gold.

No ParlAI imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

KNOWLEDGE_SEPARATOR = "__knowledge__"
NO_PASSAGE = "no_passages_used"

Passages = List[Tuple[str, List[str]]]


def _split_line(line: str, titles: Sequence[str]) -> Optional[Tuple[str, str]]:
    """``(title, sentence)`` of one knowledge line, ``None`` when it cannot be split exactly."""
    sep = f" {KNOWLEDGE_SEPARATOR} "
    if sep in line:
        title, sent = line.split(sep, 1)
        return title, sent
    for title in sorted((t for t in titles if t), key=len, reverse=True):
        if line.startswith(title + " "):
            return title, line[len(title) + 1:]
    return None


def _common_word_prefix(a: str, b: str) -> str:
    words = []
    for x, y in zip(a.split(" "), b.split(" ")):
        if x != y:
            break
        words.append(x)
    return " ".join(words)


def passages_from_lines(lines: Sequence[str], known_titles: Sequence[str] = ()) -> Passages:
    """
    Knowledge lines (``title [__knowledge__] sentence``) back into ``(title, [sentences])``
    passages, consecutive lines of one title forming one passage.

    With the separator the split is exact. Without it, a line starting with a known title
    (``chosen_topic``, ``title``) splits there; for any other run of lines the title is the
    longest word prefix its consecutive lines share (a passage of one sentence there keeps
    its first word as title). Such a guessed title only shapes the graph's passage nodes:
    every ``f"{title} {sentence}"`` still equals its line, so candidates map back exactly.
    ``--include-knowledge-separator true`` on ParlAI's teacher removes the guess.
    """
    nochosen = f"{NO_PASSAGE} {NO_PASSAGE}"
    rest = [line for line in lines if line.strip() and line.strip() != nochosen]
    rows: List[Optional[Tuple[str, str]]] = [_split_line(line, known_titles) for line in rest]
    i = 0
    while i < len(rows):  # guess titles of the unsplit runs
        if rows[i] is not None:
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j] is None:
            j += 1
        k = i
        while k < j:
            title = ""
            if k + 1 < j:
                title = _common_word_prefix(rest[k], rest[k + 1])
            if not title or title == rest[k]:
                title = rest[k].split(" ", 1)[0]
            end = k + 1
            while end < j and rest[end].startswith(title + " "):
                end += 1
            for m in range(k, end):
                rows[m] = (title, rest[m][len(title) + 1:])
            k = end
        i = j
    passages: Passages = []
    for title, sent in rows:  # type: ignore[misc]
        if passages and passages[-1][0] == title:
            passages[-1][1].append(sent)
        else:
            passages.append((title, [sent]))
    return passages


def message_passages(obs: Any) -> Passages:
    """
    The knowledge pool of a message as ``(title, [sentences])`` pairs, from (first found)
    ``knowledge_passages`` (docgraph teachers), ParlAI's ``knowledge`` text lines, or its
    knowledge ``label_candidates`` (``WizardDialogKnowledgeTeacher`` with
    ``--label-type chosen_sent``); ``ValueError`` saying what is missing.
    """
    raw = obs.get("knowledge_passages")
    if raw is not None:
        return [(str(title), [str(s) for s in sents]) for title, sents in raw]
    known = [str(t) for t in (obs.get("chosen_topic"), obs.get("title")) if t]
    knowledge = obs.get("knowledge")
    if isinstance(knowledge, str) and knowledge.strip():
        return passages_from_lines(knowledge.split("\n"), known)
    cands = obs.get("label_candidates")
    if cands and any(c.strip() != f"{NO_PASSAGE} {NO_PASSAGE}" for c in cands):
        return passages_from_lines(list(cands), known)
    raise ValueError(
        "GraphSelectorAgent needs the knowledge pool of each message: 'knowledge_passages' "
        "([[title, [sentences]], ...], the docgraph teachers), or ParlAI's WoW 'knowledge' "
        "lines / knowledge 'label_candidates' (-t wizard_of_wikipedia with --label-type "
        f"chosen_sent); message fields were {sorted(obs.keys())}")


def candidate_sentences(passages: Passages, candidates: Sequence[str]) -> List[int]:
    """
    Global sentence index (over ``passages`` in order) of each candidate line
    (``"{title} {sentence}"`` or ``"{title} __knowledge__ {sentence}"``, as the WoW teachers
    write knowledge lines), -1 for a candidate that is no knowledge sentence
    (``no_passages_used``). A line that occurs twice maps to its first sentence.
    """
    lookup: Dict[str, int] = {}
    g = 0
    for title, sents in passages:
        for sent in sents:
            for line in (f"{title} {sent}", f"{title} {KNOWLEDGE_SEPARATOR} {sent}"):
                lookup.setdefault(line.strip(), g)
            g += 1
    return [lookup.get(c.strip(), -1) for c in candidates]


def candidate_sentence_text(candidate: str, passages: Passages) -> str:
    """The sentence part of a candidate line (its title cut off), or the line itself."""
    index = candidate_sentences(passages, [candidate])[0]
    if index >= 0:
        flat = [s for _, sents in passages for s in sents]
        return flat[index]
    split = _split_line(candidate, [t for t, _ in passages])
    return split[1] if split else candidate


def multi_reference_gold(obs: Any, candidates: Sequence[str], passages: Passages) -> Optional[List[bool]]:
    """
    Holl-E multi-reference relevance (``docgraph:holle:multi``): candidate ``i`` is relevant
    when its sentence is any of ``multi_checked_sentences`` (``no_passages_used`` there makes
    the ``no_passages_used`` candidate relevant). ``None`` when the message has no such field.
    """
    golds = obs.get("multi_checked_sentences")
    if not golds:
        return None
    wanted: Set[str] = {str(g).strip() for g in golds}
    out = []
    for cand in candidates:
        if cand.strip().startswith(NO_PASSAGE) and NO_PASSAGE in wanted:
            out.append(True)
            continue
        out.append(candidate_sentence_text(cand, passages).strip() in wanted)
    return out


def check_has_candidates(msg) -> None:
    """
    ``ValueError`` for a labelled message without knowledge candidates: the selector ranks
    ``label_candidates`` and would otherwise skip every such example (``exps: 0``) and fail
    later for want of ``know_acc``.
    """
    if msg is None or not hasattr(msg, "get") or msg.get("batch_padding"):
        return
    labelled = msg.get("labels") or msg.get("eval_labels")
    if "text" in msg and labelled and not msg.get("label_candidates"):
        raise ValueError(
            f"docgraph/graph_selector: a message of {msg.get('id', 'the task')!r} has labels "
            "but no knowledge candidates (label_candidates), so there is nothing to rank. "
            "For the docgraph WoW-format teachers and ParlAI's wizard_of_wikipedia set "
            "--label-type chosen_sent (the knowledge sentence becomes the label and the pool "
            "the candidates).")


def recent_turns(history: str, turns: int) -> str:
    """The last ``turns`` newline-separated utterances of ``history`` (all when ``turns``
    is 0 or less)."""
    if turns <= 0:
        return history
    lines = [line for line in history.split("\n") if line.strip()]
    return "\n".join(lines[-turns:]) if lines else history


def passages_or_empty(obs) -> List:
    """The message's pool where it has one (multi-reference matching), else ``[]``."""
    try:
        return message_passages(obs)
    except ValueError:
        return []
