"""
Chat-template prompts for instruction-tuned causal LMs. No ParlAI.

An instruction-tuned model (Llama-3-Instruct, Qwen2.5-Instruct, ...) was trained on its
tokenizer's chat template, so the responder feeds it knowledge and history through that
template instead of the plain ``knowledge <eos> context <eos>`` layout:

* the knowledge (the first ``knowledge_truncate`` knowledge tokens of
  ``"<title: sentence>"``), placed as ``--chat-prompt`` says (:data:`LAYOUTS`):
  ``system``: a system message ``"Knowledge: <knowledge>"``, folded into the first user
  message when the template refuses a system role; ``fact``: no system message of ours
  (the template's own default applies), the newest user turn reads
  ``"Fact: <knowledge>\\n<turn>\\n<FACT_INSTRUCTION>"`` (:data:`FACT_INSTRUCTION`; without
  knowledge, ``no_passages_used``, the turn alone). A small instruct model (SmolLM2-135M)
  follows a fact beside the question far more than one in a system message: knowledge F1
  of its zero-shot greedy replies on 12 ``docgraph:docqa`` valid questions 0.70 against
  0.27;
* the dialogue turns, newest last as ``user``, alternating ``assistant`` / ``user``
  backwards; the oldest turns are dropped until the turns fit ``context_truncate`` tokens
  (the newest turn alone is cut to its last ``context_truncate`` tokens), and a leading
  ``assistant`` turn is dropped so the conversation opens with the user;
* the template's generation prompt (``add_generation_prompt=True``);
* the reply is followed by the template's end-of-turn token (Qwen's ``<|im_end|>``,
  Llama-3's ``<|eot_id|>``): the first token the template writes after an assistant
  message, when it is a special token; else the tokenizer's EOS.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE

SETTINGS = ("auto", "true", "false")
#: ``--chat-prompt``: where the knowledge goes (module docstring)
LAYOUTS = ("system", "fact")
FACT_INSTRUCTION = "Reply in one sentence, using the fact."
_PROBE = "\u2063reply\u2063"  # a content string no template rewrites


def has_template(tokenizer: Any) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def use_template(setting: str, tokenizer: Any) -> bool:
    """``--chat-template``: ``auto`` = whenever the tokenizer has one; ``true`` insists."""
    setting = str(setting).lower()
    if setting not in SETTINGS:
        raise ValueError(f"--chat-template must be one of {SETTINGS}, got {setting!r}")
    if setting == "true" and not has_template(tokenizer):
        raise ValueError(
            "--chat-template true: the responder's tokenizer has no chat template "
            "(tokenizer_config.json 'chat_template' or chat_template.jinja); use an "
            "instruction-tuned model or --chat-template false"
        )
    return setting != "false" and has_template(tokenizer)


def end_of_turn_id(tokenizer: Any) -> int:
    """The special token the template puts after an assistant message, else EOS."""
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "x"}, {"role": "assistant", "content": _PROBE}], tokenize=False
    )
    after = text.split(_PROBE, 1)[1] if _PROBE in text else ""
    ids = tokenizer(after, add_special_tokens=False)["input_ids"] if after.strip() else []
    if ids and ids[0] in set(tokenizer.all_special_ids):
        return int(ids[0])
    return int(tokenizer.eos_token_id)


def _render(tokenizer: Any, messages: List[Dict[str, str]]) -> List[int]:
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False))


def chat_prompt(
    tokenizer: Any, knowledge: str, turns: Sequence[str], context_truncate: int = 128,
    knowledge_truncate: int = 128, layout: str = "system", max_tokens: Optional[int] = None,
) -> List[int]:
    """
    Prompt ids of ``knowledge`` and the dialogue ``turns`` (oldest first) through the chat
    template, the knowledge placed as ``layout`` (:data:`LAYOUTS`) says.

    ``max_tokens``: the prompt's most tokens, template included. The truncations alone do
    not bound it (the template adds a default system message, role markers and the fact's
    instruction: 40 to 60 SmolLM2 tokens), so a longer prompt is rebuilt with a context
    budget smaller by the excess, down to one token, then with less knowledge. Why: a
    responder's prompt and reply share ``--responder-max-length`` positions, and on
    CMU_DoG valid 2 of 106 prompts (knowledge 128 + context 128 + template) left no reply
    position at all, and more left two or three: empty or cut replies.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"--chat-prompt must be one of {LAYOUTS}, got {layout!r}")

    def ids(text: str) -> List[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    def decode(tokens: Sequence[int]) -> str:
        return tokenizer.decode(list(tokens), skip_special_tokens=True, clean_up_tokenization_spaces=False)

    know = ids(knowledge)
    context_budget = context_truncate if context_truncate and context_truncate > 0 else None
    knowledge_budget = knowledge_truncate if knowledge_truncate and knowledge_truncate > 0 else None
    while True:
        shown = knowledge
        if knowledge_budget is not None and len(know) > knowledge_budget:
            shown = decode(know[:knowledge_budget])
        prompt = _layout(tokenizer, shown, _newest_turns(turns, context_budget, ids, decode), layout)
        over = len(prompt) - max_tokens if max_tokens is not None else 0
        if over <= 0:
            return prompt
        context = context_budget if context_budget is not None else len(ids(" ".join(turns)))
        if context > 1:
            context_budget = max(context - over, 1)
            continue
        shown_len = len(know) if knowledge_budget is None else min(knowledge_budget, len(know))
        if shown_len == 0:
            raise ValueError(
                f"the chat template alone takes {len(prompt)} tokens, more than the prompt's "
                f"{max_tokens}: raise --responder-max-length")
        knowledge_budget = max(shown_len - over, 0)


def _newest_turns(turns: Sequence[str], budget: Optional[int], ids: Any, decode: Any) -> List[str]:
    """The newest ``turns`` within ``budget`` tokens (None: all); the newest turn alone too
    long: its last ``budget`` tokens."""
    kept: List[str] = []
    for turn in reversed([t for t in turns if t and t.strip()] or [""]):
        n = len(ids(turn))
        if budget is not None and n > budget:
            if not kept:  # the newest turn alone is too long: keep its end
                kept.append(decode(ids(turn)[-budget:]))
            break
        kept.append(turn)
        if budget is not None:
            budget -= n
    kept.reverse()
    return kept


def _layout(tokenizer: Any, knowledge: str, kept: List[str], layout: str) -> List[int]:
    """The rendered prompt of ``knowledge`` and the ``kept`` turns (newest last: ``user``)."""
    roles = ["user" if (len(kept) - 1 - i) % 2 == 0 else "assistant" for i in range(len(kept))]
    if roles and roles[0] == "assistant":
        kept, roles = kept[1:], roles[1:]
    dialogue = [{"role": r, "content": t} for r, t in zip(roles, kept)]
    if layout == "fact":
        if knowledge.strip() and knowledge.strip() != NO_PASSAGE and dialogue:
            last = dialogue[-1]["content"]
            dialogue[-1] = {"role": "user",
                            "content": f"Fact: {knowledge}\n{last}\n{FACT_INSTRUCTION}"}
        return _render(tokenizer, dialogue)
    system = f"Knowledge: {knowledge}"
    try:
        return _render(tokenizer, [{"role": "system", "content": system}] + dialogue)
    except Exception:  # jinja2 TemplateError: e.g. "System role not supported"
        first = dict(dialogue[0])
        first["content"] = f"{system}\n\n{first['content']}"
        return _render(tokenizer, [first] + dialogue[1:])
