"""
The options of ``-m docgraph/gpt2_responder`` in one place (ParlAI's ``agents/rag/args.py``
pattern): the responder's own group and the LoRA / bf16 group
(:func:`~parlai_docgraph.agents.lm_adapters.add_adapter_args`). The agent's
``add_cmdline_args`` calls :func:`add_responder_args` and sets ParlAI defaults.
"""

from __future__ import annotations

from parlai.core.params import ParlaiParser

from parlai_docgraph.agents.lm_adapters import add_adapter_args
from parlai_docgraph.models.responder import chat

#: what models saved before an option existed did (the agent's ``upgrade_opt``): the
#: system-message chat layout, the knowledge line "title: sentence"
SAVED_BEFORE = {"chat_prompt": "system", "knowledge_title": "prefix"}
#: ``--knowledge-title``: how the passage title reaches the knowledge line
KNOWLEDGE_TITLE = ("prefix", "none")


def add_responder_args(parser: ParlaiParser) -> None:
    """Register the ``docgraph GPT-2 responder`` group and the LoRA / bf16 options."""
    group = parser.add_argument_group("docgraph GPT-2 responder")
    group.add_argument(
        "--responder-model",
        type=str,
        default="gpt2",
        help="causal LM: a hub name (cached when offline), a local directory, or "
        "'tiny' (bundled offline GPT-2 config + tokenizer, seeded random weights)",
    )
    group.add_argument(
        "--responder-context-truncate",
        type=int,
        default=128,
        help="keep the latest N context tokens",
    )
    group.add_argument(
        "--responder-knowledge-truncate",
        type=int,
        default=128,
        help="keep the first N knowledge tokens",
    )
    group.add_argument(
        "--responder-max-length",
        type=int,
        default=286,
        help="max tokens of input + reply",
    )
    group.add_argument(
        "--responder-seed",
        type=int,
        default=0,
        help="seed of the initial weights when the source has none (e.g. 'tiny')",
    )
    group.add_argument(
        "--chat-template",
        type=str,
        default="auto",
        choices=chat.SETTINGS,
        help="feed knowledge (system message) and history (user/assistant turns) through "
        "the tokenizer's chat template, replies ending with its end-of-turn token; auto: "
        "when the tokenizer has one (instruction-tuned models), false: the plain "
        "'knowledge <eos> context <eos>' layout",
    )
    group.add_argument(
        "--chat-prompt",
        type=str,
        default="system",
        choices=chat.LAYOUTS,
        help="with a chat template, where the knowledge goes: 'system' (a system message "
        "'Knowledge: ...') or 'fact' (the newest user turn reads 'Fact: <knowledge>', the "
        "turn, then 'Reply in one sentence, using the fact.'; what small instruct models "
        "follow)",
    )
    group.add_argument(
        "--knowledge-title",
        type=str,
        default="prefix",
        choices=KNOWLEDGE_TITLE,
        help="the knowledge line of the prompt: 'prefix' ('title: sentence', the Wizard of "
        "Wikipedia format of the GPT-2 paper rows) or 'none' (the sentence alone, so that "
        "a small instruct model does not begin its reply with the title)",
    )
    group.add_argument(
        "--block-earlier-replies",
        type=int,
        default=0,
        help="N > 0: a generated reply repeats no token N-gram of the responder's earlier "
        "replies in the episode (the history's assistant turns) unless the N-gram is in "
        "the knowledge it answers from; unlike --beam-context-block-ngram, the user's "
        "words stay free. 0: off",
    )
    add_adapter_args(parser)
