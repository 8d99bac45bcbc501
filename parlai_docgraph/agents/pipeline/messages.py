"""
Message plumbing of the ``-m docgraph`` pipeline (selector -> responder), kept apart from
the agent so it reads in one sitting: what the selector sees, how its choice is read back,
how the two parts' options and metrics are combined, and what a user's chat turn may be
(:func:`check_user_text`, :data:`LOAD_REFUSED`). ParlAI types only, no models.

The selector sees every message in the ``--label-type chosen_sent`` form of the WoW
teachers: candidates ``["no_passages_used no_passages_used", "{title} {sentence}", ...]``
over the pool in ``knowledge_passages`` (or, for ParlAI's own WoW teachers, the ``knowledge``
lines), the label ``"{title} {checked_sentence}"``, and as context the same dialogue
history the responder holds (``full_text``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from parlai.core.message import Message
from parlai.core.opt import Opt

from parlai_docgraph.agents.graph_selector.messages import message_passages
from parlai_docgraph.graphs.knowledge_lines import NO_KNOWLEDGE_LINE, NO_PASSAGE
from parlai_docgraph.graphs.selection import Selection, knowledge_candidate
from parlai_docgraph.textnorm import clean_text, replaced_note

#: the note that answers a chat message asking to load a file
LOAD_REFUSED = ("no chat message opens a file: documents come from --documents when the chat "
                "starts (the web chat: its Upload button or a pasted document)")
LABEL_KEYS = ("labels", "eval_labels")
#: options of a pipeline run that reach a part loaded from its own model file: always
#: (the run's data and mode, and for the responder the decoding, which the pipeline governs),
#: or when given on the command line
ALWAYS = ("datatype", "datapath", "interactive_mode")
DECODING = ("inference", "beam_size", "beam_min_length", "beam_length_penalty", "topk", "topp",
            "temperature", "skip_generation", "beam_block_ngram", "label_truncate",
            "block_earlier_replies")
WHEN_GIVEN = ("no_cuda", "gpu", "batchsize", "fp16", "graph_cache", "graph_memo_size")
#: the selector's inference options the pipeline governs (its saved value, or the command's)
SELECTION = ("named_document_boost",)


def knowledge_lines(msg: Any) -> List[Tuple[str, str, str]]:
    """
    ``(line, title, sentence)`` of every knowledge sentence of ``msg``, ``line`` being
    ``"{title} {sentence}"``: the pool from ``knowledge_passages`` (docgraph teachers,
    interactive documents) or ParlAI's ``knowledge`` text lines, read by the selector's own
    :func:`~parlai_docgraph.agents.graph_selector.messages.message_passages` so both parts see one pool; ``[]`` when the
    message carries neither.
    """
    return [(f"{title} {sent}", title, sent) for title, sents in message_pool(msg)
            for sent in sents]


def message_pool(msg: Any) -> List[Tuple[str, List[str]]]:
    """The message's knowledge pool as passages (:func:`knowledge_lines`' source), ``[]``
    when it carries neither ``knowledge_passages`` nor ``knowledge`` lines."""
    if msg.get("knowledge_passages") is None and not (msg.get("knowledge") or "").strip():
        return []
    return message_passages(msg)


def gold_line(msg: Any) -> Optional[str]:
    """The selector's label line for ``msg``; ``None`` when the message names no gold."""
    sentence = (msg.get("checked_sentence") or "").strip()
    title = (msg.get("title") or "").strip()
    if not sentence and not title:
        return None
    if not sentence or sentence == NO_PASSAGE or title == NO_PASSAGE:
        return NO_KNOWLEDGE_LINE
    return f"{title} {sentence}" if title else sentence


def selector_message(msg: Message, context: Optional[str]) -> Message:
    """
    The selector's view of a pipeline message (see the module docstring). Labels keep
    their key (``labels`` trains, ``eval_labels`` scores ``know_acc``); a message without a
    knowledge pool gets no candidates, so the selector skips it.
    """
    out = Message({k: v for k, v in msg.items() if k not in LABEL_KEYS + ("label_candidates",)})
    lines = knowledge_lines(msg)
    if lines:
        out["label_candidates"] = [NO_KNOWLEDGE_LINE] + [line for line, _, _ in lines]
    gold = gold_line(msg)
    for key in LABEL_KEYS:
        if key in msg and gold is not None:
            out[key] = [gold]
    if context is not None and "text" in out:
        out["full_text"] = context
    return out


def read_selection(msg: Any, reply: Any, margin: Optional[float] = None) -> Selection:
    """
    The :class:`~parlai_docgraph.graphs.selection.Selection` of the selector's reply to
    ``msg``: its ``selected_candidate`` (the position among the candidates
    :func:`selector_message` gave it), or with a ``margin`` (``--no-knowledge-margin``) the
    best pool sentence unless no-knowledge leads it by more
    (:func:`~parlai_docgraph.graphs.selection.knowledge_candidate`), located in the
    message's pool; the no-knowledge selection for that candidate, for no reply, or for a
    message without a pool.
    """
    reply = reply or {}
    scores = reply.get("candidate_scores")
    candidate, gap = knowledge_candidate(reply.get("selected_candidate"),
                                         reply.get("candidate_order"), scores, margin)
    return Selection.from_candidate(message_pool(msg), candidate, scores,
                                    reply.get("top_concepts") or (), gap)


def keep_answer(reply: Message, selection: Selection, user_text: str) -> None:
    """
    ``--reply-keeps-answer``: where a generated ``reply`` left out a content word of the
    selected sentence that the user's last turn does not hold
    (:func:`~parlai_docgraph.reply_quality.dropped_words`: the "why", the "how much"), its
    text becomes the sentence itself; the generated text and the dropped words stay beside
    it (``generated_text``, ``answer_dropped``).
    """
    # imported here: this module is read without the selector's models (test_lazy_imports)
    from parlai_docgraph.models.selector.prior import last_turn
    from parlai_docgraph.reply_quality import dropped_words

    if not reply.get("text") or not selection.uses_knowledge:
        return
    dropped = dropped_words(reply["text"], selection.sentence, last_turn(user_text))
    if dropped:
        reply["generated_text"] = reply["text"]
        reply["answer_dropped"] = dropped
        reply.force_set("text", selection.sentence)


def merge_metrics(responder: Optional[Dict], selector: Optional[Dict]) -> Dict[str, Any]:
    """
    One metrics dict: the responder's names as they are (``loss``, ``ppl``, ``rouge_*``),
    the selector's as they are (``know_acc``, ...) except clashing names, prefixed ``sel_``.
    """
    merged = dict(responder or {})
    for key, value in (selector or {}).items():
        merged[key if key not in merged else f"sel_{key}"] = value
    return merged


def part_opt(opt: Opt, part: str, model: str, dict_class: str, model_file: Optional[str],
             extra: Dict[str, Any]) -> Opt:
    """
    The opt of a freshly built part: the pipeline's opt (which carries both parts'
    arguments) with the part's own class, files and learning rate.
    """
    sub = Opt(opt)
    sub.update(extra)
    sub["model"] = model
    sub["dict_class"] = dict_class
    sub["model_file"] = model_file
    sub["dict_file"] = f"{model_file}.dict" if model_file else None
    sub["init_model"] = None
    lr = opt[f"{part}_learningrate"]
    if lr is not None:
        sub["learningrate"] = lr
    sub["override"] = {}
    return sub


def part_overrides(opt: Opt, part: str) -> Dict[str, Any]:
    """
    What a part loaded from its model file takes from this run (see :data:`ALWAYS`,
    :data:`DECODING`, :data:`SELECTION`, :data:`WHEN_GIVEN`); the selector ranks the
    message's own candidates, interactively too.
    """
    given = opt.get("override") or {}
    always = ALWAYS + (DECODING if part == "responder" else SELECTION)
    keep = {k: opt[k] for k in always if k in opt}
    keep.update({k: v for k, v in given.items() if k in WHEN_GIVEN})
    if part == "selector":
        keep["interactive_candidates"] = "inline"
    return keep


def check_user_text(text: Optional[str], max_chars: int) -> Tuple[Optional[str], Optional[str]]:
    """
    ``(text to use, note for the user)``: characters no later stage can encode (a lone
    surrogate, which a tokenizer refuses, ...) replaced (:func:`~parlai_docgraph.textnorm.clean_text`)
    and said so; ``(None, note)`` for an empty turn; a turn longer than ``max_chars`` keeps
    its last ``max_chars`` characters (the latest words matter most to the context encoder)
    and says so.
    """
    text, replaced = clean_text((text or "").strip())
    notes = [replaced_note("your message", replaced)] if replaced else []
    if not text:
        return None, "empty message: type a question or a remark ([DONE] ends the chat)"
    if max_chars > 0 and len(text) > max_chars:
        notes.append(f"your message has {len(text)} characters; only its last {max_chars} "
                     "are used (--interactive-max-chars)")
        text = text[-max_chars:]
    return text, " | ".join(notes) or None
