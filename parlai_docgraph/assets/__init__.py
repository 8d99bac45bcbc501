"""
Bundled offline assets, data only: ``tiny_gpt2/`` and ``tiny_t5/`` (config + tokenizer of
the tiny random models), the demo document, the web chat page and the held-out document
questions (``heldout/``). ``tools/make_tiny_gpt2.py`` / ``tools/make_tiny_t5.py`` (not installed)
regenerate the tiny models' files.
"""
