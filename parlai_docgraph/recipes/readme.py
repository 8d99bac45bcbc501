"""
The README's paper sections, generated from the recipe file so they cannot drift from it.

A README region is delimited by ``<!-- recipes:begin SECTION ... -->`` and
``<!-- recipes:end SECTION -->``; :func:`update_readme` replaces what lies between them with
:func:`section_markdown` of that section (the tables whose ``section`` is ``SECTION``). Each
table becomes the paper's figures by row with the recipe that reproduces the row and the
options that set it apart, then the full commands of one representative recipe (as
``parlai-docgraph recipes show`` prints them), the deviations from the paper and the
settings the paper does not state (hparams whose source starts with ``not stated:``).
"""

from __future__ import annotations

import re
import shlex
from typing import Dict, List, Sequence, Tuple

from parlai_docgraph.recipes import NOT_STATED, HParam, Recipe, RecipeBook, RecipeError

BEGIN = "<!-- recipes:begin {section} (generated from parlai_docgraph/recipes/recipes.yaml by " \
        "`parlai-docgraph recipes readme`; edit the file, not this region) -->"
END = "<!-- recipes:end {section} -->"
REGION = re.compile(r"(<!-- recipes:begin (\w+)[^\n]*-->\n)(.*?)(<!-- recipes:end \2 -->)", re.S)
#: opt keys never shown as what sets a row apart (paths, not settings)
NOT_DEFINING = {"init_model", "model_file"}
WIDTH = 92


def wrap_command(argv: Sequence[str], width: int = WIDTH) -> str:
    """``parlai <argv>`` shell-quoted, broken before options into ``\\``-continued lines."""
    tokens = ["parlai"] + [shlex.quote(a) for a in argv]
    # keep each option with its value
    units: List[str] = []
    for tok in tokens:
        if units and not tok.startswith("-") and units[-1].startswith("-") and " " not in units[-1]:
            units[-1] += " " + tok
        else:
            units.append(tok)
    lines, cur = [], ""
    for unit in units:
        if cur and len(cur) + 1 + len(unit) > width - 2:
            lines.append(cur + " \\")
            cur = "    " + unit
        else:
            cur = f"{cur} {unit}" if cur else unit
    lines.append(cur)
    return "\n".join(lines)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v) for v in value)
    return str(value)


def _flag(key: str, value: object) -> str:
    """``("num_epochs", 3.0) -> "`--num-epochs 3`"``; a list is comma-joined (``--betas``)."""
    return f"`--{key.replace('_', '-')} {_text(value)}`"


def _main(hparams: Sequence[HParam]) -> List[HParam]:
    """The hparams of the main training / evaluation stages (not of a pretraining stage)."""
    return [h for h in hparams if h.stage in ("train", "all", "eval") or "train" in h.stage_names]


def defining_options(book: RecipeBook, recipe: Recipe) -> str:
    """
    What sets the row apart within its table: the same run as another row; the runs it uses
    and the hparams that differ from theirs; or the hparams that the table's other training
    rows set differently or not at all.
    """
    if recipe.same_as:
        return f"same run as `{recipe.same_as}`"
    mine = {h.key: h.value for h in _main(recipe.hparams) if h.key not in NOT_DEFINING}
    if recipe.requires:
        theirs = {h.key: h.value for r in recipe.requires for h in _main(book.run_of(r).hparams)}
        parts = ["uses " + ", ".join(f"`{r}`" for r in recipe.requires)]
        parts += [_flag(k, v) for k, v in mine.items() if k in theirs and repr(theirs[k]) != repr(v)]
    else:
        peers = [r for r in book.in_table(recipe.table) if not r.same_as and not r.requires]
        sets = [{h.key: repr(h.value) for h in _main(r.hparams)} for r in peers]
        parts = [_flag(k, v) for k, v in mine.items()
                 if not all(k in s for s in sets) or len({s[k] for s in sets}) > 1]
    return "; ".join(parts) if parts else recipe.model


def _figure(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def table_markdown(book: RecipeBook, name: str) -> str:
    table = book.tables[name]
    paper = book.papers[table.paper]["short"]
    out = [f"**{paper} Table {table.table}**: {table.caption}. Paper figures by row; "
           "`parlai-docgraph recipes show NAME` prints a row's commands.", ""]
    labels = [c.label for c in table.columns]
    out.append("| row | recipe | " + " | ".join(labels) + " | what sets it apart |")
    out.append("|---|---|" + "---:|" * len(labels) + "---|")
    for r in book.in_table(name):
        cells = [_figure(r.reported[c.label], c.digits) if c.label in r.reported else "-"
                 for c in table.columns]
        out.append(f"| {r.row} | `{r.name}` | " + " | ".join(cells) + f" | {defining_options(book, r)} |")
    unmeasured = [c for c in table.columns if c.key is None]
    keyed = ", ".join(f"{c.label} = `{c.key}`" + (f" x {c.scale:g}" if c.scale != 1 else "")
                      for c in table.columns if c.key)
    out += ["", f"Report keys: {keyed}."]
    for c in unmeasured:
        out[-1] += f" {c.label}: {c.note}."
    if table.show:
        out += ["", "```bash", f"# {table.show}"]
        for rec, stage, argv in book.plan(table.show):
            out.append(f"# {stage}" + ("" if rec == book.run_of(table.show).name else f" of {rec}"))
            out.append(wrap_command(argv))
        out.append("```")
    deviations: List[str] = []
    for r in book.in_table(name):
        for d in book.run_of(r.name).deviations:
            if d not in deviations:
                deviations.append(d)
    if deviations:
        out += ["", "Deviations from the paper:"] + [f"- {d}" for d in deviations]
    choices = stated_choices(book, name)
    if choices:
        out += ["", "Settings the paper does not state (each recipe names them; "
                "`parlai-docgraph recipes check` fails on one left to a default):"]
        out += [f"- {c}" for c in choices]
    return "\n".join(out)


def stated_choices(book: RecipeBook, table: str) -> List[str]:
    """``"`--flag value`: why"`` for every hparam of the table's runs whose source starts
    with ``not stated:`` (once per key and reason; a value that differs between the runs is
    shown as ``(per recipe)``)."""
    grouped: Dict[Tuple[str, str], List[object]] = {}
    for r in book.in_table(table):
        for h in book.run_of(r.name).hparams:
            if h.source.startswith(NOT_STATED):
                values = grouped.setdefault((h.key, h.source[len(NOT_STATED):]), [])
                if h.value not in values:
                    values.append(h.value)
    out = []
    for (key, why), values in grouped.items():
        flag = _flag(key, values[0]) if len(values) == 1 else f"`--{key.replace('_', '-')}` (per recipe)"
        out.append(f"{flag}: {why}")
    return out


def section_markdown(book: RecipeBook, section: str) -> str:
    """Every table of ``section``, in file order, as Markdown."""
    names = [n for n, t in book.tables.items() if t.section == section]
    if not names:
        raise RecipeError(f"no table of the recipe file has section {section!r}")
    return "\n\n".join(table_markdown(book, n) for n in names) + "\n"


def update_readme(text: str, book: RecipeBook) -> str:
    """``text`` with every generated region rewritten from ``book`` (other text untouched)."""
    if not REGION.search(text):
        raise RecipeError("the README has no '<!-- recipes:begin SECTION -->' region")

    def repl(m: "re.Match") -> str:
        section = m.group(2)
        return BEGIN.format(section=section) + "\n" + section_markdown(book, section) \
            + END.format(section=section)

    return REGION.sub(repl, text)
