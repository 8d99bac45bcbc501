"""
Speed benchmarks, all in one place (not tests: they measure and print ratios against a
baseline measured in the same run; ``README.md`` here explains every figure).

``cli`` is ``parlai-docgraph bench`` and its registry; importing this package registers the
benchmarks ``graphs``, ``selector``, ``gsr``, ``gsr_real``, ``kg_ceiling``, ``trie``, ``families``, ``scale``,
``long_documents``, ``chat`` and ``chat_memory``. The
standalone studies run as modules: ``python -m parlai_docgraph.bench.graph_probe``,
``.train_speed_methods``, ``.gsr_train_knowledge``.
"""

from parlai_docgraph.bench import cli  # noqa: F401  (the bench script and registry)
from parlai_docgraph.bench import (  # noqa: F401
    chat, chat_memory, families, gsr, gsr_real, kg_ceiling, long_documents, scale, selector,
    trie,
)
