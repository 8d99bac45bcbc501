"""
Paper recipes: one named entry per table row of the three papers this package implements
(Li et al. 2022 Tables 2, 3, 4, 6, 7; Zhang & Tan Tables 1-3; Park et al. Tables 1, 2, 3, 5).

``recipes.yaml`` (package data) is the single source: each recipe names its paper table and
row, its stages as stock ``parlai`` argument lists (``train_model`` / ``eval_model``, a
``pretrain`` stage where the paper has one), the hyper-parameters with where in the paper
each comes from, the model family and the paper's reported figures by table column. This
module loads and validates it (no ParlAI imports); ``parlai-docgraph recipes`` shows and
runs the commands (:mod:`parlai_docgraph.scripts.recipes`) and
:mod:`parlai_docgraph.recipes.readme` renders its tables, which the documentation's paper pages show.

``hparams`` maps an opt key to ``{value, source, stage}``; the stage defaults to ``train``
(``all``: every stage, ``eval``: every ``eval*`` stage, a list: those stages); ``KEY@STAGE``
lets one key have a different value per stage. A training stage must name its optimizer
settings (:data:`OPTIMIZER_KEYS`, checked by ``parlai-docgraph recipes check``): on its
command line and in ``hparams``, with the paper's value or ``not stated: <why this value>``. Recipe fields: ``same_as`` (the row is the same run as another recipe: no stages of its own),
``requires`` (recipes whose model files its stages read, e.g. a pipeline evaluation of a
trained selector and responder), ``deviations`` (what differs from the paper and why). Placeholders ``{datapath}`` and ``{runs}`` in arguments are filled in by
:meth:`RecipeBook.commands`.
"""

from __future__ import annotations

import difflib
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

RECIPES_FILE = Path(__file__).with_name("recipes.yaml")
#: recipe-file format this module reads
VERSION = 1
#: placeholder defaults: the README's ``--datapath data`` and ``runs/<recipe>/model``
DEFAULT_DATAPATH = "data"
DEFAULT_RUNS = "runs"
#: ``hparams.<key>.stage`` values besides a stage name
ALL_STAGES = "all"
EVAL_STAGES = "eval"  # every stage whose name starts with "eval"


#: optimizer settings every training stage names; with :func:`optimizer_keys` the ones
#: its optimizer and scheduler read (a ParlAI or agent default decides them otherwise)
OPTIMIZER_KEYS = ("optimizer", "gradient_clip", "lr_scheduler", "warmup_updates")
#: optimizers that read --betas / --adam-eps (torch.optim's Adam family in ParlAI)
ADAM_FAMILY = ("adam", "adamw", "adamax", "sparseadam", "mem_eff_adam", "fused_adam", "radam",
               "nadam", "qhadam")
#: a source of an optimizer setting: the paper (its short name first) or the stated choice
NOT_STATED = "not stated: "


def optimizer_keys(opt: Dict[str, Any]) -> List[str]:
    """
    The opt keys the training run of ``opt`` reads for optimisation: :data:`OPTIMIZER_KEYS`,
    ``weight_decay`` and, as the choices need them, ``betas`` and ``adam_eps`` (Adam family),
    ``momentum`` (sgd, rmsprop, qhm), ``lr_scheduler_patience`` and ``lr_scheduler_decay``
    (reduceonplateau, fixed), ``invsqrt_lr_decay_gamma`` (invsqrt), ``max_train_steps``
    (linear, cosine: the schedule's length) and ``warmup_rate`` (a warm-up).
    """
    keys = list(OPTIMIZER_KEYS) + ["weight_decay"]
    optimizer = str(opt.get("optimizer", ""))
    if optimizer in ADAM_FAMILY:
        keys += ["betas", "adam_eps"]
    elif optimizer in ("sgd", "rmsprop", "qhm"):
        keys.append("momentum")
    scheduler = opt.get("lr_scheduler")
    if scheduler in ("reduceonplateau", "fixed"):
        keys += ["lr_scheduler_patience", "lr_scheduler_decay"]
    elif scheduler == "invsqrt":
        keys.append("invsqrt_lr_decay_gamma")
    elif scheduler in ("linear", "cosine"):
        keys.append("max_train_steps")
    if (opt.get("warmup_updates") or 0) > 0:
        keys.append("warmup_rate")
    return keys


class RecipeError(ValueError):
    """A malformed recipe file or an unknown recipe name (the message says which and where)."""


@dataclass(frozen=True)
class Column:
    """A table column: the paper's label, the stage and report key it is read from, its scale
    (the paper's figure = report value x scale; key None: no metric of ours computes it) and
    the decimals the paper prints."""

    label: str
    stage: str
    key: Optional[str]
    scale: float = 1.0
    note: Optional[str] = None
    digits: int = 2


@dataclass(frozen=True)
class Table:
    name: str
    paper: str
    table: str
    section: str
    caption: str
    columns: Tuple[Column, ...]
    show: Optional[str] = None


@dataclass(frozen=True)
class HParam:
    """An opt key's paper value, where it comes from, and the stage(s) it applies to
    (``stage``: a stage name, ``all``, ``eval``, or a tuple of stage names)."""

    key: str
    value: Any
    source: str
    stage: Union[str, Tuple[str, ...]] = "train"

    def applies_to(self, stage: str) -> bool:
        if isinstance(self.stage, tuple):
            return stage in self.stage
        if self.stage == ALL_STAGES:
            return True
        if self.stage == EVAL_STAGES:
            return stage.startswith("eval")
        return self.stage == stage

    @property
    def stage_names(self) -> Tuple[str, ...]:
        """The named stages of a tuple or single stage (``()`` for ``all`` / ``eval``)."""
        if isinstance(self.stage, tuple):
            return self.stage
        return () if self.stage in (ALL_STAGES, EVAL_STAGES) else (self.stage,)

    def describe_stage(self) -> str:
        return ",".join(self.stage) if isinstance(self.stage, tuple) else self.stage


@dataclass(frozen=True)
class Recipe:
    name: str
    table: str
    row: str
    model: str = ""
    same_as: Optional[str] = None
    requires: Tuple[str, ...] = ()
    note: Optional[str] = None
    stages: Dict[str, List[str]] = field(default_factory=dict)
    hparams: Tuple[HParam, ...] = ()
    reported: Dict[str, float] = field(default_factory=dict)
    deviations: Tuple[str, ...] = ()


def fill(args: Sequence[str], datapath: str = DEFAULT_DATAPATH, runs: str = DEFAULT_RUNS) -> List[str]:
    """The arguments with ``{datapath}`` and ``{runs}`` replaced."""
    return [a.replace("{datapath}", datapath).replace("{runs}", runs) for a in args]


def shell_command(argv: Sequence[str]) -> str:
    """``["train_model", "-m", "x"] -> "parlai train_model -m x"`` (shell-quoted)."""
    return shlex.join(["parlai", *argv])


def option_value(argv: Sequence[str], *names: str) -> Optional[str]:
    """The value after the first of ``names`` in ``argv`` (e.g. ``-mf``), or None."""
    for i, arg in enumerate(argv[:-1]):
        if arg in names:
            return argv[i + 1]
    return None


class RecipeBook:
    """The validated contents of a recipe file: papers, tables and recipes (in file order)."""

    def __init__(self, papers: Dict[str, dict], tables: Dict[str, Table],
                 recipes: Dict[str, Recipe], source: str = "") -> None:
        self.papers, self.tables, self.recipes, self.source = papers, tables, recipes, source

    # ------------------------------------------------------------------ lookup
    def get(self, name: str) -> Recipe:
        """The recipe ``name``; :class:`RecipeError` with the closest names otherwise."""
        if name not in self.recipes:
            close = difflib.get_close_matches(name, list(self.recipes), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise RecipeError(f"no recipe {name!r}{hint} (parlai-docgraph recipes list)")
        return self.recipes[name]

    def run_of(self, name: str) -> Recipe:
        """The recipe whose stages ``name`` runs (``same_as`` followed)."""
        recipe = self.get(name)
        return self.get(recipe.same_as) if recipe.same_as else recipe

    def in_table(self, table: str) -> List[Recipe]:
        return [r for r in self.recipes.values() if r.table == table]

    def hparams_of(self, name: str, stage: str) -> List[HParam]:
        """The hyper-parameters of ``name``'s run that apply to ``stage``."""
        return [h for h in self.run_of(name).hparams if h.applies_to(stage)]

    # ------------------------------------------------------------------ commands
    def commands(self, name: str, datapath: str = DEFAULT_DATAPATH,
                 runs: str = DEFAULT_RUNS) -> List[Tuple[str, List[str]]]:
        """``[(stage, argv)]`` of ``name``'s own run, placeholders filled, in order."""
        return [(stage, fill(args, datapath, runs)) for stage, args in self.run_of(name).stages.items()]

    def plan(self, name: str, datapath: str = DEFAULT_DATAPATH,
             runs: str = DEFAULT_RUNS) -> List[Tuple[str, str, List[str]]]:
        """
        Everything ``run`` would do for ``name``: ``[(recipe, stage, argv)]``, the training
        stages of the recipes it requires first (each once, depth first), then its own stages.
        """
        out: List[Tuple[str, str, List[str]]] = []
        seen: set = set()

        def visit(n: str, own: bool) -> None:
            run = self.run_of(n)
            if run.name in seen:
                return
            seen.add(run.name)
            for req in run.requires:
                visit(req, False)
            for stage, argv in self.commands(run.name, datapath, runs):
                if own or argv[0] != "eval_model":
                    out.append((run.name, stage, argv))

        visit(name, True)
        return out


# ---------------------------------------------------------------------- loading
def _need(entry: dict, key: str, where: str, kind: type = str) -> Any:
    if key not in entry:
        raise RecipeError(f"{where}: missing field {key!r}")
    value = entry[key]
    if not isinstance(value, kind):
        raise RecipeError(f"{where}: {key} must be a {kind.__name__}, got {value!r}")
    return value


def _table(name: str, entry: dict, papers: Dict[str, dict], where: str) -> Table:
    paper = _need(entry, "paper", where)
    if paper not in papers:
        raise RecipeError(f"{where}: unknown paper {paper!r} (papers: {', '.join(papers)})")
    columns = []
    for i, c in enumerate(_need(entry, "columns", where, list)):
        cw = f"{where}.columns[{i}]"
        columns.append(Column(_need(c, "label", cw), _need(c, "stage", cw), c.get("key"),
                              float(c.get("scale", 1.0)), c.get("note"), int(c.get("digits", 2))))
    return Table(name, paper, str(_need(entry, "table", where, (str, int))),
                 _need(entry, "section", where), _need(entry, "caption", where),
                 tuple(columns), entry.get("show"))


def _recipe(name: str, entry: dict, where: str) -> Recipe:
    known = {"table", "row", "model", "same_as", "requires", "note", "stages",
             "hparams", "reported", "deviations"}
    unknown = set(entry) - known
    if unknown:
        raise RecipeError(f"{where}: unknown fields {sorted(unknown)} (known: {sorted(known)})")
    stages: Dict[str, List[str]] = {}
    for stage, args in (entry.get("stages") or {}).items():
        if not isinstance(args, list) or not args or not all(isinstance(a, str) for a in args):
            raise RecipeError(f"{where}.stages.{stage}: a non-empty list of strings "
                              "(the parlai script, then its arguments)")
        stages[stage] = list(args)
    hparams = []
    for key, h in (entry.get("hparams") or {}).items():
        hw = f"{where}.hparams.{key}"
        if not isinstance(h, dict) or "value" not in h:
            raise RecipeError(f"{hw}: a mapping with 'value' and 'source'")
        # "key@stage" names the stage in the key, so one opt key can differ between stages
        opt_key, _, stage = key.partition("@")
        if stage and "stage" in h:
            raise RecipeError(f"{hw}: the stage is named twice ('@{stage}' and stage:)")
        given = stage or h.get("stage", "train")
        if isinstance(given, list):
            if not given or not all(isinstance(x, str) for x in given):
                raise RecipeError(f"{hw}: stage must be a stage name or a non-empty list of them")
            given = tuple(given)
        hparams.append(HParam(opt_key, h["value"], _need(h, "source", hw), given))
    reported = entry.get("reported") or {}
    for label, value in reported.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise RecipeError(f"{where}.reported.{label}: a number, got {value!r}")
    return Recipe(
        name=name, table=_need(entry, "table", where), row=_need(entry, "row", where),
        model=entry.get("model", ""), same_as=entry.get("same_as"),
        requires=tuple(entry.get("requires") or ()),
        note=entry.get("note"), stages=stages, hparams=tuple(hparams),
        reported={k: float(v) for k, v in reported.items()},
        deviations=tuple(entry.get("deviations") or ()))


def _check(book: RecipeBook) -> None:
    """Cross-references: tables, same_as, requires, stages of hparams and columns, labels."""
    for r in book.recipes.values():
        where = f"{book.source}: recipes.{r.name}"
        if r.table not in book.tables:
            raise RecipeError(f"{where}: unknown table {r.table!r}")
        if r.same_as is not None:
            target = book.recipes.get(r.same_as)
            if target is None or target.same_as is not None:
                raise RecipeError(f"{where}: same_as {r.same_as!r} must name a recipe with its own stages")
            if r.stages or r.hparams or r.requires:
                raise RecipeError(f"{where}: a same_as recipe has no stages, hparams or requires")
        elif not r.stages:
            raise RecipeError(f"{where}: no stages (and no same_as)")
        for req in r.requires:
            if req not in book.recipes:
                raise RecipeError(f"{where}: requires unknown recipe {req!r}")
        run = book.run_of(r.name)
        for h in r.hparams:
            for name in h.stage_names:
                if name not in r.stages:
                    raise RecipeError(f"{where}.hparams.{h.key}: no stage {name!r}")
            if not any(h.applies_to(s) for s in r.stages):
                raise RecipeError(f"{where}.hparams.{h.key}: applies to none of its stages")
        columns = {c.label: c for c in book.tables[r.table].columns}
        for label in r.reported:
            if label not in columns:
                raise RecipeError(f"{where}.reported: {label!r} is not a column of {r.table} "
                                  f"({', '.join(columns)})")
            if columns[label].stage not in run.stages:
                raise RecipeError(f"{where}.reported.{label}: the run ({run.name}) has no stage "
                                  f"{columns[label].stage!r}")
    for t in book.tables.values():
        if t.show is not None and book.recipes.get(t.show, None) is None:
            raise RecipeError(f"{book.source}: tables.{t.name}.show: unknown recipe {t.show!r}")


def _read(path: Path) -> Any:
    import yaml

    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as err:
        raise RecipeError(f"{path}: not valid YAML: {err}") from err


def load(path: Union[str, Path, None] = None) -> RecipeBook:
    """Read and validate a recipe file (default: the packaged ``recipes.yaml``)."""
    path = Path(path) if path is not None else RECIPES_FILE
    data = _read(path)
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise RecipeError(f"{path}: expected a mapping with version: {VERSION}")
    papers = _need(data, "papers", str(path), dict)
    tables = {name: _table(name, t, papers, f"{path}: tables.{name}")
              for name, t in _need(data, "tables", str(path), dict).items()}
    recipes = {name: _recipe(name, r, f"{path}: recipes.{name}")
               for name, r in _need(data, "recipes", str(path), dict).items()}
    book = RecipeBook(papers, tables, recipes, str(path))
    _check(book)
    return book


# ---------------------------------------------------------------------- zoo recipes
#: the argument lists of a zoo recipe (``zoo.<name>`` of the file): the two ``train_model``
#: runs (without ``-mf`` / ``--datapath`` / ``--seed``) and the composed model's options
ZOO_PARTS = ("selector", "responder", "pipeline")


@dataclass(frozen=True)
class ZooRecipe:
    """A zoo model's build (:mod:`parlai_docgraph.zoo.recipe`): its seed, each part's
    ``train_model`` arguments, the composed model's options, and ``evaluation``: the
    ``eval_model`` argument lists its figures come from (``{model}`` is the model file)."""

    name: str
    seed: int
    selector: List[str]
    responder: List[str]
    pipeline: List[str]
    evaluation: Dict[str, List[str]] = field(default_factory=dict)


def zoo_recipe(name: str, path: Union[str, Path, None] = None) -> ZooRecipe:
    """The zoo recipe ``name`` of the file's ``zoo`` section (:class:`RecipeError` naming
    what is missing or malformed)."""
    path = Path(path) if path is not None else RECIPES_FILE
    zoo = (_read(path) or {}).get("zoo") or {}
    if name not in zoo:
        raise RecipeError(f"{path}: no zoo recipe {name!r} (zoo recipes: {', '.join(zoo) or 'none'})")
    entry, where = zoo[name], f"{path}: zoo.{name}"
    lists = {}
    for part in ZOO_PARTS:
        args = _need(entry, part, where, list)
        if not all(isinstance(a, str) for a in args):
            raise RecipeError(f"{where}.{part}: a list of strings")
        lists[part] = list(args)
    evaluation = {}
    for stage, args in (entry.get("evaluation") or {}).items():
        if not isinstance(args, list) or not args or not all(isinstance(a, str) for a in args):
            raise RecipeError(f"{where}.evaluation.{stage}: a non-empty list of strings")
        evaluation[stage] = list(args)
    return ZooRecipe(name, int(_need(entry, "seed", where, int)), evaluation=evaluation, **lists)
