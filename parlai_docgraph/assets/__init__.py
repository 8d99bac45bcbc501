"""
Bundled offline assets (``tiny_gpt2/``: GPT-2 config + tokenizer) and the script that
regenerates them (``make_tiny_gpt2.py``).
"""
