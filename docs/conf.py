"""Sphinx configuration of the parlai-docgraph documentation (``make docs``)."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "parlai-docgraph"
author = "parlai-docgraph contributors"
copyright = "parlai-docgraph contributors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "docgraph_docs",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "results", "Thumbs.db", ".DS_Store"]

html_theme = "furo"
html_title = "parlai-docgraph"
html_static_path = ["_static"]

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# the API pages document the library layers; torch, transformers and spaCy are imported as is
