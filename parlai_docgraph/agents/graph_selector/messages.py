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

Of ParlAI it uses only the ``Message`` type.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Set

from parlai.core.message import Message

from parlai_docgraph.graphs.knowledge_lines import (
    NO_KNOWLEDGE_LINE, NO_PASSAGE, Passages, candidate_sentence_text, passages_from_lines,
)

def message_passages(obs: Message) -> Passages:
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
    if cands and any(c.strip() != NO_KNOWLEDGE_LINE for c in cands):
        return passages_from_lines(list(cands), known)
    raise ValueError(
        "GraphSelectorAgent needs the knowledge pool of each message: 'knowledge_passages' "
        "([[title, [sentences]], ...], the docgraph teachers), or ParlAI's WoW 'knowledge' "
        "lines / knowledge 'label_candidates' (-t wizard_of_wikipedia with --label-type "
        f"chosen_sent); message fields were {sorted(obs.keys())}")


def multi_reference_gold(obs: Message, candidates: Sequence[str], passages: Passages) -> Optional[List[bool]]:
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


def check_has_candidates(msg: Optional[Message]) -> None:
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


def passages_or_empty(obs: Message) -> List:
    """The message's pool where it has one (multi-reference matching), else ``[]``."""
    try:
        return message_passages(obs)
    except ValueError:
        return []
