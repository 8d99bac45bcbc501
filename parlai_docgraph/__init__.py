"""
parlai-docgraph: document semantic graphs and KG subgraph retrieval for ParlAI.

This module is imported by the start-up hook (``parlai_docgraph._hook``) in every
interpreter of the environment, so it must stay free of heavy imports.
"""

__version__ = "0.1.0"
