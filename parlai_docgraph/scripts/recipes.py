"""
``parlai-docgraph recipes list|show NAME|run NAME [--dry-run]|check [NAME]|readme [--check]``:
the papers' table rows as named recipes (:mod:`parlai_docgraph.recipes`, ``recipes.yaml``).

* ``list``: every recipe with its paper, table and row (``same as`` rows reuse another run).
* ``show NAME``: the exact stock ``parlai`` commands of the row (and of the recipes it
  requires), the hyper-parameters with their sources, the paper's figures, the deviations.
* ``run NAME``: runs those commands with the stock ``parlai`` (``python -m parlai``) one after
  the other; training stages of required recipes whose model file exists are skipped.
  ``--dry-run`` prints what would run. ``--datapath`` (default ``data``, as in the README)
  and ``--runs-dir`` (default ``runs``: model files are ``runs/<recipe>/model``) fill the
  recipe's placeholders.
* ``check [NAME]``: resolves every stage of every (or one) recipe through ParlAI's own parser
  (the script's ``setup_args`` plus the agent's and teacher's ``add_cmdline_args``): every
  option name must exist and every listed hyper-parameter must equal the resolved opt. A
  training stage must also name each optimizer setting it reads
  (:func:`parlai_docgraph.recipes.optimizer_keys`: optimizer, gradient clip, scheduler and
  its patience/decay or length, warm-up, betas, eps, weight decay) on its command line and
  in ``hparams``, with the paper's value (the source starts with the paper's name) or
  ``not stated: <why>``: a setting left to a ParlAI or agent default is reported. Nothing is
  loaded or downloaded. ``--recipes-file`` checks another file.
* ``readme [--check]``: rewrites the README's generated paper sections (or says whether
  they are current).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import os
import re
import subprocess
import sys
from typing import Any, Dict, List, Sequence, Tuple

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script
from parlai.utils import logging

from parlai_docgraph import recipes as rb
from parlai_docgraph.recipes import readme as rm

ACTIONS = ("list", "show", "run", "check", "readme")
_NUMBER = re.compile(r"^-\d|^-\.\d")


# ---------------------------------------------------------------------- resolution
def script_parser(script: str) -> ParlaiParser:
    """The parser of the stock ``parlai <script>`` (e.g. train_model), as ParlAI builds it."""
    from parlai.core.script import SCRIPT_REGISTRY

    if script not in SCRIPT_REGISTRY:
        try:
            importlib.import_module(f"parlai.scripts.{script}")
        except ImportError as err:
            raise rb.RecipeError(f"no parlai script {script!r}") from err
    if script not in SCRIPT_REGISTRY:
        raise rb.RecipeError(f"no parlai script {script!r}")
    return SCRIPT_REGISTRY[script].klass.setup_args()


def unknown_options(parser: ParlaiParser, args: Sequence[str]) -> List[str]:
    """Option names in ``args`` that ``parser`` (with the agent's and teacher's options) lacks."""
    parser.add_extra_args(list(args))
    known = parser._option_string_actions
    unknown = []
    for arg in args:
        name = arg.split("=", 1)[0]
        if not arg.startswith("-") or _NUMBER.match(arg):
            continue
        # ParlAI registers "-t" as "--t" and reads "-t" as "--t" (_handle_single_dash_parsearg)
        if name not in known and not (not name.startswith("--") and "-" + name in known):
            unknown.append(name)
    return unknown


def resolve(argv: Sequence[str]) -> Dict[str, Any]:
    """
    The final opt of ``parlai <argv>`` (argv[0] is the script) from ParlAI's parser;
    :class:`RecipeError` naming unknown options or the parser's complaint.
    """
    parser = script_parser(argv[0])
    args = list(argv[1:])
    unknown = unknown_options(parser, args)
    if unknown:
        raise rb.RecipeError(f"unknown options {unknown} for parlai {argv[0]}")
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return dict(parser.parse_args(args))
    except SystemExit as exc:
        last = (err.getvalue().strip().splitlines() or [f"exit {exc.code}"])[-1]
        raise rb.RecipeError(f"parlai {argv[0]} refuses the arguments: {last}") from None


def same_value(actual: Any, expected: Any) -> bool:
    """Opt value equal to the file's value (numbers compared as floats; a list as ParlAI's
    tuple of ``--betas``)."""
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(actual) == len(expected) and all(map(same_value, actual, expected))
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected or actual == expected and type(actual) is type(expected)
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(float(actual), float(expected), rel_tol=1e-9, abs_tol=0.0)
    return actual == expected


def unnamed_defaults(book: rb.RecipeBook, name: str, stage: str, opt: Dict[str, Any]) -> List[str]:
    """
    The optimizer settings a training stage leaves to a default: each key of
    :func:`~parlai_docgraph.recipes.optimizer_keys` must be on the command line (ParlAI's
    ``opt["override"]``) and in ``hparams`` with a paper source or ``not stated: <why>``.
    Also AdamW with no weight decay, which ParlAI does not pass on (torch's 0.01 applies).
    """
    run = book.run_of(name)
    given = set(opt.get("override") or {})
    stated = {h.key: h for h in book.hparams_of(name, stage)}
    papers = [p["short"].split()[0] for p in book.papers.values()]
    problems = []
    for key in rb.optimizer_keys(opt):
        where = f"{run.name}.{stage}: {key} = {opt.get(key)!r}"
        if key not in given:
            problems.append(f"{where} is inherited from a ParlAI/agent default: name it on the "
                            f"command line (--{key.replace('_', '-')})")
        if key not in stated:
            problems.append(f"{where} is not stated in hparams (the paper's value, or "
                            f"'{rb.NOT_STATED}<why this value>')")
        elif not (stated[key].source.startswith(rb.NOT_STATED)
                  or any(stated[key].source.startswith(p) for p in papers)):
            problems.append(f"{where}: its source must cite the paper ({', '.join(papers)} ...) "
                            f"or start with '{rb.NOT_STATED}'")
    if opt.get("optimizer") == "adamw" and not opt.get("weight_decay"):
        problems.append(f"{run.name}.{stage}: adamw with --weight-decay {opt.get('weight_decay')} "
                        "trains with torch's default 0.01 (ParlAI passes only a non-zero value); "
                        "use --optimizer adam for none")
    return problems


def check_recipe(book: rb.RecipeBook, name: str, datapath: str = rb.DEFAULT_DATAPATH,
                 runs: str = rb.DEFAULT_RUNS) -> List[str]:
    """Problems of ``name``'s run: unknown options, refused arguments, hparam mismatches,
    optimizer settings of a training stage left to a default (:func:`unnamed_defaults`)."""
    problems: List[str] = []
    run = book.run_of(name)
    for stage, argv in book.commands(name, datapath, runs):
        try:
            opt = resolve(argv)
        except rb.RecipeError as err:
            problems.append(f"{run.name}.{stage}: {err}")
            continue
        if argv[0] == "train_model":
            problems += unnamed_defaults(book, name, stage, opt)
        for h in book.hparams_of(name, stage):
            expected = rb.fill([h.value], datapath, runs)[0] if isinstance(h.value, str) else h.value
            if h.key not in opt:
                problems.append(f"{run.name}.{stage}: hparam {h.key} is no option of this command")
            elif not same_value(opt[h.key], expected):
                problems.append(f"{run.name}.{stage}: {h.key} resolves to {opt[h.key]!r}, the "
                                f"file says {expected!r} ({h.source})")
    return problems


# ---------------------------------------------------------------------- text
def describe(book: rb.RecipeBook, name: str, datapath: str, runs: str) -> str:
    """What ``show`` prints: commands, hyper-parameters with sources, figures, deviations."""
    recipe = book.get(name)
    table = book.tables[recipe.table]
    paper = book.papers[table.paper]["short"]
    run = book.run_of(name)
    lines = [f"# {name}: {paper} Table {table.table}, row '{recipe.row}' ({table.caption})"]
    if recipe.same_as:
        lines.append(f"# the same run as {recipe.same_as}")
    if run.model:
        lines.append(f"# model: {run.model}")
    for note in filter(None, (recipe.note, run.note if run is not recipe else None)):
        lines.append(f"# note: {note}")
    for rec, stage, argv in book.plan(name, datapath, runs):
        tag = stage if rec == run.name else f"{stage} of {rec} (required)"
        lines += [f"# {tag}", rb.shell_command(argv)]
    if run.hparams:
        lines.append("# hyper-parameters (opt key = value  [stage] source):")
        lines += [f"#   {h.key} = {h.value}  [{h.describe_stage()}] {h.source}" for h in run.hparams]
    columns = {c.label: c for c in table.columns}
    if recipe.reported:
        lines.append("# reported in the paper (report key x scale):")
        for label, value in recipe.reported.items():
            c = columns[label]
            where = f"{c.stage}: {c.key} x {c.scale:g}" if c.key else f"{c.stage}: {c.note}"
            lines.append(f"#   {label} = {value:g}  ({where})")
    for dev in run.deviations:
        lines.append(f"# deviation: {dev}")
    return "\n".join(lines)


def listing(book: rb.RecipeBook) -> str:
    rows = []
    for r in book.recipes.values():
        t = book.tables[r.table]
        extra = f"  (same run as {r.same_as})" if r.same_as else ""
        rows.append(f"{r.name:36s} {book.papers[t.paper]['short']} T{t.table}: {r.row}{extra}")
    return "\n".join(rows)


def run_recipe(book: rb.RecipeBook, name: str, datapath: str, runs: str, dry_run: bool) -> List[List[str]]:
    """Run (or, dry, list) ``name``'s plan with the stock parlai; the argvs that ran/would run."""
    run = book.run_of(name)
    done: List[List[str]] = []
    for rec, stage, argv in book.plan(name, datapath, runs):
        model_file = rb.option_value(argv, "-mf", "--model-file")
        if rec != run.name and model_file and os.path.isfile(model_file):
            logging.info(f"recipes: {rec}.{stage} skipped, {model_file} exists")
            continue
        print(("[dry run] " if dry_run else "") + rb.shell_command(argv), flush=True)
        done.append(argv)
        if not dry_run:
            subprocess.run([sys.executable, "-m", "parlai", *argv], check=True)
    return done


@register_script("recipes", hidden=False)
class Recipes(ParlaiScript):
    """
    The papers' table rows as named recipes: list, show (the exact parlai commands), run,
    check (resolve every opt through ParlAI's parser), readme (regenerate its sections).
    """

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(True, False, description=cls.__doc__.strip())
        group = parser.add_argument_group("recipes")
        # no argparse choices: ParlAI's super-command pre-parses the whole command line
        # (script name included) with this parser, so the choice is checked in run()
        group.add_argument("action", help="what to do: " + "|".join(ACTIONS))
        group.add_argument("name", nargs="?", default=None, help="recipe name (see list)")
        group.add_argument("--dry-run", action="store_true", default=False,
                           help="run: print the commands instead of running them")
        group.add_argument("--runs-dir", type=str, default=rb.DEFAULT_RUNS,
                           help="folder of the recipes' model files (<runs-dir>/<recipe>/model)")
        group.add_argument("--recipes-file", type=str, default=None,
                           help="recipe file (default: the packaged recipes.yaml)")
        group.add_argument("--readme", type=str, default="README.md",
                           help="readme: the README whose generated sections to rewrite/check")
        group.add_argument("--check", action="store_true", default=False,
                           help="readme: only say whether the README's sections are current "
                           "(exit status 1 if not)")
        return parser

    def run(self) -> Any:
        opt = self.opt
        book = rb.load(opt.get("recipes_file"))
        # the README's placeholder default unless --datapath was given
        datapath = opt["datapath"] if "datapath" in opt.get("override", {}) else rb.DEFAULT_DATAPATH
        runs, name, action = opt["runs_dir"], opt.get("name"), opt["action"]
        if action not in ACTIONS:
            raise rb.RecipeError(f"recipes {action}: unknown action (one of {', '.join(ACTIONS)})")
        if action in ("show", "run") and not name:
            raise rb.RecipeError(f"recipes {action} needs a recipe name (see: recipes list)")
        if action == "list":
            print(listing(book))
            return list(book.recipes)
        if action == "show":
            print(describe(book, name, datapath, runs))
            return book.plan(name, datapath, runs)
        if action == "run":
            return run_recipe(book, name, datapath, runs, bool(opt["dry_run"]))
        if action == "check":
            names = [name] if name else list(book.recipes)
            problems = {n: check_recipe(book, n) for n in names}
            for n in names:
                print(f"{n:36s} {'FAILED' if problems[n] else 'ok'}")
                for p in problems[n]:
                    print(f"    {p}")
            if any(problems.values()):
                sys.exit(1)
            return problems
        return readme_action(book, opt["readme"], bool(opt["check"]))


def readme_action(book: rb.RecipeBook, path: str, check_only: bool) -> Tuple[bool, str]:
    from parlai_docgraph.atomic import write_text_atomic

    with open(path, encoding="utf-8") as f:
        text = f.read()
    new = rm.update_readme(text, book)
    current = new == text
    if check_only:
        print(f"{path}: generated sections are {'current' if current else 'OUT OF DATE'}")
        if not current:
            sys.exit(1)
    elif not current:
        write_text_atomic(path, new)
        print(f"{path}: generated sections rewritten")
    else:
        print(f"{path}: generated sections already current")
    return current, new


if __name__ == "__main__":
    Recipes.main()
