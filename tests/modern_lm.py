"""Tiny random Llama- and Qwen-style LMs: now part of :mod:`families` (every model family)."""

from families import QWEN_TEMPLATE, make_tiny_lm  # noqa: F401
