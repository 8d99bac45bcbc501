"""
Bundled offline assets, data only: ``tiny_gpt2/`` and ``tiny_t5/`` (config + tokenizer of
the tiny random models), the demo document, the web chat page and the held-out document
questions (``heldout/``). ``parlai_docgraph.scripts.make_tiny_gpt2`` / ``make_tiny_t5``
regenerate the tiny models' files.
"""
