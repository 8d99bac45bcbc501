"""
The documentation a user reads, as the tests read it: the README and the Markdown sources of
the documentation site (``docs/**/*.md``, without the pages generated at build time into
``docs/gen/`` and the build output ``docs/_build/``). Tests that run the documented commands
as typed take them from here, so a command that moves between the README and a page is
still run. Importing this module also makes the site's generators importable
(``docgraph_docs``).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: the documentation's generators (``docs/_ext/docgraph_docs``, the Sphinx extension), which
#: the tests import as ``docgraph_docs``
EXTENSIONS = DOCS / "_ext"
if str(EXTENSIONS) not in sys.path:
    sys.path.insert(0, str(EXTENSIONS))
#: folders of docs/ that hold no hand-written source
NOT_SOURCE = {"gen", "_build", "_ext"}


def doc_files() -> List[Path]:
    """The README, then every Markdown source of the site, in path order."""
    pages = [p for p in sorted(DOCS.rglob("*.md"))
             if not NOT_SOURCE & set(p.relative_to(DOCS).parts[:-1])]
    return [README] + pages


def doc_text() -> str:
    """Every documentation source, one after the other (a blank line between two)."""
    return "\n\n".join(p.read_text(encoding="utf-8") for p in doc_files())


def page(name: str) -> str:
    """One page of the site by its path under ``docs/`` (``guide/chat.md``)."""
    return (DOCS / name).read_text(encoding="utf-8")


def bash_commands() -> List[List[str]]:
    """Every command line of the documentation's ``bash`` blocks (continued lines joined,
    comments dropped, blank lines skipped), as argument lists, in reading order."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", doc_text(), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            args = shlex.split(line, comments=True)
            if args:
                commands.append(args)
    return commands
