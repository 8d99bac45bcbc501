"""
The worlds of ParlAI's own ``cmu_dog`` task: the start-up hook maps
``parlai.tasks.cmu_dog.worlds`` (which ParlAI 1.7.2 does not have) onto this module, so
``parlai interactive -t cmu_dog`` and ``parlai self_chat -t cmu_dog`` chat about one movie
per episode with its article as the knowledge pool, as ``-t docgraph:cmu_dog`` does
(:class:`~.worlds.InteractiveCmu_dogWorld`); without it, ParlAI's fallback world gives the
model no article and its self-chat fails (see :mod:`.worlds`).
"""

from parlai_docgraph.tasks.docgraph.worlds import (
    InteractiveCmu_dogWorld as InteractiveWorld, SelfChatCmu_dogWorld as SelfChatWorld,
)

__all__ = ["InteractiveWorld", "SelfChatWorld"]
