"""
The paper-reproduction pages, one per paper of ``parlai_docgraph/recipes/recipes.yaml``.

Each page has a section per paper table, made by the same code as ``parlai-docgraph recipes
show`` and the recipe tables: :func:`parlai_docgraph.recipes.readme.table_markdown` (the rows
with the paper's figures, what sets each row apart, the commands of one representative row,
the deviations and the settings the paper does not state), then every row's recipe as
:func:`parlai_docgraph.scripts.recipes.describe` prints it (commands, hyper-parameters with
their sources, the reported figures, deviations).
"""

from __future__ import annotations

from typing import Dict

from parlai_docgraph.recipes import DEFAULT_DATAPATH, DEFAULT_RUNS, RecipeBook
from parlai_docgraph.recipes import load as load_book
from parlai_docgraph.recipes.readme import table_markdown

INTRO = """\
Every row of the paper's tables that this package implements (rows of other systems are
not) is a named recipe in `parlai_docgraph/recipes/recipes.yaml`; this page is generated
from that file when the documentation is built. `parlai-docgraph recipes list` names the
recipes, `parlai-docgraph recipes show NAME` prints a row's stock `parlai` commands with the
source of each hyper-parameter in the paper, `parlai-docgraph recipes run NAME [--dry-run]
[--datapath DIR] [--runs-dir DIR]` runs them (training the recipes a row requires first), and
`parlai-docgraph recipes check [NAME]` resolves every stage through ParlAI's own parser and
compares the result with the file. The recipes name hub models (`roberta-base`,
`bert-base-uncased`, `gpt2`, `t5-small`), read from `<datapath>/hf/<name>/` or the hub cache;
replace a name by a local model directory to use another copy. The figures below are the
paper's; these runs need the full datasets and, in practice, a GPU, and none has been run
for this documentation."""


def paper_page(book: RecipeBook, paper: str) -> str:
    """The Markdown page of ``paper`` (a key of the file's ``papers``)."""
    from parlai_docgraph.scripts.recipes import describe

    info = book.papers[paper]
    out = [f"# {info['short']}", "", f"*{info['cite']}*", "", INTRO]
    for name, table in book.tables.items():
        if table.paper != paper:
            continue
        out += ["", f"## Table {table.table}: {table.caption}", "", table_markdown(book, name),
                "", f"### The recipes of Table {table.table}"]
        for recipe in book.in_table(name):
            out += ["", f"`{recipe.name}` ({recipe.row}):", "", "```bash",
                    describe(book, recipe.name, DEFAULT_DATAPATH, DEFAULT_RUNS), "```"]
    return "\n".join(out) + "\n"


def pages(book: RecipeBook = None) -> Dict[str, str]:
    """``{paper key: page}`` for every paper of the recipe file, in file order."""
    book = book or load_book()
    return {paper: paper_page(book, paper) for paper in book.papers}
