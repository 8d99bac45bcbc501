"""
The placeholder ParlAI dictionary of ``-m docgraph/graph_selector`` (the encoder's own
Hugging Face tokenizer does the tokenizing: :mod:`parlai_docgraph.models.encoders`).
"""

from __future__ import annotations

from parlai.core.dict import DictionaryAgent

#: where model files saved before this module existed name the class (``--dict-class``);
#: the agent's ``upgrade_opt`` rewrites it
OLD_PATHS = ("parlai_docgraph.agents.graph_selector.encoder:GraphSelectorDictionaryAgent",)


class GraphSelectorDictionaryAgent(DictionaryAgent):
    """
    A placeholder ParlAI dictionary: the selector tokenizes with its encoder's Hugging Face
    tokenizer, so ``train_model`` must not spend a pass over the data building a vocabulary.
    """

    def is_prebuilt(self) -> bool:
        return True
