"""
``parlai-docgraph ablate -t <task> --variants full,sentence,...``: train and evaluate each
knowledge-selection variant with the same seed, and print the ablation table of Li et al.
Table 7 / Zhang & Tan Table 2 (Acc, MAP, MRR, concept MAP/MRR) as Markdown; write it as
JSON (and Markdown) under ``--out-dir``.

Each variant is one in-process ParlAI ``train_model`` run (``--max-train-steps``, no
validation during training, so every variant gets exactly the same steps and seed) whose
final ``valid`` and ``test`` reports give the figures; the table shows ``--report-split``
(``test`` by default: the unseen-topic split of ``docgraph:synthetic`` /
``docgraph:wow:topic_split``). Every other option given (agent or teacher options such as
``--label-type chosen_sent``, ``--encoder-model``, ``-bs``, ``-lr``) is passed to each run;
``--seed`` (train_model's, default 0 here) seeds every run alike.

Variants are named option sets in :data:`VARIANTS` (``name -> (agent, options)``); other
agents add theirs with :func:`register_variant`, e.g. a later GSR agent::

    register_variant("gsr", "docgraph/gsr", {"gsr_mode": "paths"})

Example::

    parlai-docgraph ablate -t docgraph:synthetic --label-type chosen_sent \\
        --variants full,sentence,coref,homogeneous,none --steps 300 --out-dir /tmp/abl
"""

from __future__ import annotations

import json
import math
import os
import random
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script
from parlai.utils import logging

from parlai_docgraph.recipes.gsr_ablations import cli_args, flat_variants as gsr_variants
from parlai_docgraph.graphs.config import GraphVariant

GRAPH_SELECTOR = "docgraph/graph_selector"
GSR = "docgraph/gsr"
#: table columns per agent: report keys (Li Table 7 / Zhang & Tan Table 2; Park Table 5)
COLUMNS: Dict[str, Sequence[str]] = {
    GRAPH_SELECTOR: ("know_acc", "know_map", "know_mrr", "concept_map", "concept_mrr"),
    GSR: ("resp_bleu-1", "resp_bleu-2", "resp_bleu-3", "resp_bleu-4", "path@1", "path@3",
          "path_valid", "resp_rouge_L", "resp_f1", "knowledge_entity_recall"),
}
#: options of this script, never passed on to the training runs
OWN_OPTIONS = ("variants", "steps", "seed", "out_dir", "report_split", "model", "model_file")


@dataclass(frozen=True)
class VariantSpec:
    """A named ablation row: the agent (``-m``) and the options that define the variant."""

    agent: str
    options: Dict[str, Any] = field(default_factory=dict)


#: ablation rows by name; see :func:`register_variant`
VARIANTS: Dict[str, VariantSpec] = {
    name: VariantSpec(GRAPH_SELECTOR, {"graph_variant": name}) for name in GraphVariant.names()
}
# DialogGSR (Park et al. Table 5): run with ``-m docgraph/gsr`` so its options parse
VARIANTS.update((name, VariantSpec(GSR, options)) for name, options in gsr_variants().items())


def register_variant(name: str, agent: str, options: Optional[Dict[str, Any]] = None) -> None:
    """Add (or replace with the same definition) the ablation row ``name``."""
    spec = VariantSpec(agent, dict(options or {}))
    if name in VARIANTS and VARIANTS[name] != spec:
        raise ValueError(f"ablation variant {name!r} is already registered as {VARIANTS[name]}")
    VARIANTS[name] = spec


def parse_variants(text: str) -> List[str]:
    """``"full,none"`` -> ``["full", "none"]``; ``ValueError`` naming unknown ones."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [v for v in names if v not in VARIANTS]
    if not names or unknown:
        raise ValueError(f"--variants: unknown or empty {unknown or text!r}; registered: "
                         f"{', '.join(VARIANTS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"--variants: a variant is named twice in {text!r}")
    return names


def _number(value: Any) -> Optional[float]:
    """A report entry (ParlAI ``Metric`` or number) as a float; None when absent/not finite."""
    if value is None:
        return None
    value = value.value() if hasattr(value, "value") else value
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def columns_of(agents: Sequence[str]) -> List[str]:
    """The table columns of rows trained with ``agents`` (in first-seen order, no repeats)."""
    out: List[str] = []
    for agent in agents:
        for key in COLUMNS.get(agent, COLUMNS[GRAPH_SELECTOR]):
            if key not in out:
                out.append(key)
    return out


def figures(report: Dict[str, Any], agent: str = GRAPH_SELECTOR) -> Dict[str, Optional[float]]:
    """The table's metrics of ``agent`` (and ``exs``) of one ParlAI report."""
    out = {key: _number(report.get(key)) for key in columns_of([agent])}
    out["exs"] = _number(report.get("exs"))
    return out


def run_variant(
    name: str, passthrough: Dict[str, Any], steps: int, seed: int, out_dir: str
) -> Dict[str, Any]:
    """Train ``name`` for ``steps`` updates with ``seed``; its valid and test figures."""
    from parlai.scripts.train_model import TrainModel

    spec = VARIANTS[name]
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    kwargs = dict(passthrough)
    kwargs.update(spec.options)
    kwargs.update(model=spec.agent, model_file=os.path.join(folder, "model"),
                  max_train_steps=steps, seed=seed)
    random.seed(seed)
    import torch

    torch.manual_seed(seed)
    logging.info(f"ablate: training {name} (-m {spec.agent} {' '.join(cli_args(spec.options))}) "
                 f"for {steps} steps")
    valid, test = TrainModel.main(**kwargs)
    return {"agent": spec.agent, "options": spec.options, "valid": figures(valid, spec.agent),
            "test": figures(test, spec.agent)}


def markdown_table(results: Dict[str, Dict[str, Any]], split: str) -> str:
    """One row per variant: the ``split`` figures, ``-`` where a variant has none."""
    columns = columns_of([res.get("agent", GRAPH_SELECTOR) for res in results.values()])
    head = "| variant | " + " | ".join(columns) + " |"
    rule = "|---|" + "---:|" * len(columns)
    rows = [head, rule]
    for name, res in results.items():
        cells = []
        for key in columns:
            value = res[split].get(key)
            cells.append("-" if value is None else f"{value:.3f}")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def ablate(
    variants: Sequence[str], passthrough: Dict[str, Any], steps: int, seed: int, out_dir: str,
    split: str = "test",
) -> Dict[str, Any]:
    """Run every variant; write ``ablation.json`` and ``ablation.md`` in ``out_dir``."""
    from parlai_docgraph.atomic import write_text_atomic

    if steps < 1:
        raise ValueError(f"--steps must be >= 1, got {steps}")
    os.makedirs(out_dir, exist_ok=True)
    results = {name: run_variant(name, passthrough, steps, seed, out_dir) for name in variants}
    table = markdown_table(results, split)
    out = {"task": passthrough.get("task"), "steps": steps, "seed": seed, "split": split,
           "options": {k: v for k, v in passthrough.items() if k != "task"},
           "variants": results, "table": table}
    write_text_atomic(os.path.join(out_dir, "ablation.json"),
                      json.dumps(out, indent=2, sort_keys=True, default=str))
    write_text_atomic(os.path.join(out_dir, "ablation.md"), table + "\n")
    return out


@register_script("ablate", hidden=False)
class Ablate(ParlaiScript):
    """
    Train and evaluate knowledge-selection variants with one seed; print the ablation table
    (Markdown) and write it as JSON.
    """

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        from parlai.scripts.train_model import setup_args as train_model_args

        # train_model's parser: its loop options (-bs, -lr, --log-every-n-steps, ...) pass on
        parser = train_model_args(ParlaiParser(True, True, description=cls.__doc__.strip()))
        group = parser.add_argument_group("ablate")
        group.add_argument("--variants", type=str, default="full,sentence,coref,homogeneous,none",
                           help=f"comma-separated rows (registered: {', '.join(VARIANTS)})")
        group.add_argument("--steps", type=int, default=200,
                           help="training updates per variant (--max-train-steps)")
        group.add_argument("--out-dir", type=str, default="ablation",
                           help="folder for the models, ablation.json and ablation.md")
        group.add_argument("--report-split", type=str, default="test",
                           choices=["valid", "test"], help="split the table shows")
        # the graph selector's options parse (and pass through) without -m
        parser.set_defaults(model=GRAPH_SELECTOR)
        return parser

    def run(self) -> Dict[str, Any]:
        opt = self.opt
        variants = parse_variants(opt["variants"])
        # what the user set explicitly is passed on; defaults stay each run's own
        passthrough = {k: v for k, v in opt.get("override", {}).items() if k not in OWN_OPTIONS}
        passthrough.setdefault("task", opt["task"])
        passthrough.setdefault("datapath", opt["datapath"])
        seed = opt.get("seed")  # train_model's --seed; every variant runs with the same one
        out = ablate(variants, passthrough, opt["steps"], 0 if seed is None else seed, opt["out_dir"],
                     opt["report_split"])
        print(out["table"])  # the script's output, as ParlAI's display scripts print
        return out


if __name__ == "__main__":
    Ablate.main()
