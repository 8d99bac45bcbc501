"""
Knowledge-graph library for generative subgraph retrieval (DialogGSR, Park et al.).

Pure Python/numpy/scipy (plus ``torch``/``transformers`` in :mod:`.constrained` only);
no ParlAI imports, so the pieces can be used and tested on their own:

* :mod:`.store` -- :class:`KnowledgeGraph`: vocabularies, forward edges, reverse queries,
  sparse adjacency.
* :mod:`.katz` -- Katz-index entity informativeness (Eq. 5-6).
* :mod:`.subgraph` -- k-hop ego-graph candidate paths per turn.
* :mod:`.linearize` -- structure-aware linearization (Eq. 2) and its inverse parser.
* :mod:`.trie` -- token-level prefix trie over tokenized linearized paths.
* :mod:`.constrained` -- graph-constrained decoding ``LogitsProcessor`` (Eq. 3-4).
* :mod:`.linking` -- :class:`EntityLinker`: KG entity mentions in dialogue text, from
  the text alone (spaCy ``PhraseMatcher``; no gold or future-turn entities).
* :mod:`.turns` -- :func:`turn_candidates`: per-turn linking, Katz scores, k-hop
  candidate paths and their linearization from the dialogue history only.
* :mod:`.fields` -- the per-turn candidates as JSON-able message fields (teachers), and
  the cached KG + linker of a triples file.
* :mod:`.metrics` -- ``path@k``, ``path_valid``, BLEU, ``knowledge_entity_recall``.

The heavy modules are not imported here; import them directly.
"""
