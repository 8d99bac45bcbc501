"""
The two test loops: ``make test-fast`` (``-m "not slow"``) and ``make test`` (everything).

A test is ``slow`` (left out of the fast loop) when

* it carries ``@pytest.mark.slow`` itself, or it is listed in :data:`SLOW_TESTS` (measured:
  in-process work that takes many seconds, such as a training loop or long generation);
* it, a fixture it uses (directly or through other fixtures), or a function of its own
  test module that one of them calls, names one of :data:`SLOW_CALLS` in its source: a
  subprocess (the stock ``parlai`` CLI, a server, a browser, a Ray cluster), a training run
  (``TrainModel``, the ablate script), a zoo build or the real pretrained LM (its GGUF
  conversion and load). This is read from the source, so a
  new test that runs the CLI or trains is slow without anyone listing it.

The fast loop must still import every module of the package: with
``--require-every-module`` (``make test-fast`` passes it) the run fails when a module of an
installed package under ``parlai_docgraph/``, ``tasks/`` or ``zoo/`` (the
``test_import_layers.module_files`` list, less scripts in folders that are no package) was
not imported by the selected tests. Under pytest-xdist each worker reports the modules it
imported and the controller checks their union.

The files that take longest are collected first (:data:`LONGEST_FILES`), so that
pytest-xdist starts them first.
"""

from __future__ import annotations

import functools
import inspect
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Set

import pytest

TESTS = Path(__file__).resolve().parent
#: tests/<file>::<test name, with or without its parameters> -> why that test is slow
#: (measured with --durations: each takes several seconds on two idle cores)
SLOW_TESTS: Dict[str, str] = {
    "tests/test_graph_selector.py::test_overfits_a_handful_of_examples": "150 training steps",
    "tests/test_selector_prior.py::test_own_loss_weight_trains_the_models_own_ranking":
        "32 training steps",
    "tests/test_responder.py::test_rouge_of_generated_replies_multi_reference_max":
        "untrained GPT-2 generates to the length limit",
    "tests/test_responder.py::test_rouge_reaches_one_on_a_copied_reference":
        "untrained GPT-2 generates to the length limit",
    "tests/test_responder.py::test_short_overfit_drops_ppl": "a training loop",
    "tests/test_responder.py::test_block_ngram_within_the_reply_batched_equals_unbatched":
        "beam search batched and one by one",
    "tests/test_gsr.py::test_train_knowledge_gold_or_retrieved": "retrieval by beam search",
    "tests/test_gsr_causal.py::test_every_constrained_beam_is_in_the_kg[8-llama]":
        "5 beams x 3 constraints over 8 prompts",
    "tests/test_gsr_causal.py::test_every_constrained_beam_is_in_the_kg[8-qwen]":
        "5 beams x 3 constraints over 8 prompts",
    "tests/test_heldout.py::test_zero_shot_cosine_has_headroom": "MiniLM over every question",
    "tests/test_lazy_scripts.py::test_the_parlai_table_is_its_registry":
        "imports all 29 ParlAI scripts (scikit-learn, a Transformer agent, safety_bench)",
    "tests/test_graph_scripts.py::test_two_workers_equal_one": "starts worker processes",
    "tests/test_graphs.py::test_real_wow_every_dialogue_links_a_named_person_to_later_pronouns":
        "parses every real WoW dialogue",
    "tests/test_scale.py::test_extend_passage_by_passage_equals_rebuild_on_real_wow":
        "builds real WoW graphs twice",
    "tests/test_kg_linking.py::test_real_entity_list": "links over the real entity list",
    "tests/test_graph_selector.py::test_minilm_smoke": "loads and runs MiniLM",
    "tests/test_bench_selector.py::test_quick_figures": "runs the selector benchmark",
    "tests/test_responder.py::test_batched_greedy_equals_unbatched":
        "untrained GPT-2 generates to the length limit, batched and one by one",
    "tests/test_responder.py::test_batched_beam_equals_unbatched":
        "beam search batched and one by one",
    "tests/test_responder.py::test_sampling_emits_only_tokens_of_the_filtered_set":
        "samples many replies per setting",
    "tests/test_gsr.py::test_every_constrained_beam_is_a_valid_kg_path": "constrained beams",
    "tests/test_gsr.py::test_constrained_and_unconstrained_differ": "constrained beams",
    "tests/test_gsr.py::test_katz_prior_reweights_the_beams": "constrained beams",
    "tests/test_gsr.py::test_length_penalty_reaches_the_beams": "constrained beams",
    "tests/test_gsr_causal.py::test_every_constrained_beam_is_in_the_kg[1-qwen]":
        "constrained beams",
}
#: source text of a test, a fixture or a test-module helper they call -> why it is slow
SLOW_CALLS = {
    "run_cli(": "runs the CLI in a subprocess",
    "subprocess.": "runs a subprocess",
    "Popen(": "runs a subprocess",
    "TrainModel": "trains through train_model",
    "ablate(": "trains through the ablate script",
    "Ablate.main(": "trains through the ablate script",
    "sample.download(": "builds the zoo model",
    "build_standin": "builds the zoo stand-in",
    "gguf.converted_dir(": "converts and loads the real SmolLM2-135M weights",
    "sync_playwright(": "starts a browser",
}
#: modules whose functions are not followed (``conftest.run_cli`` is named above)
NO_FOLLOW = {"conftest"}
OPTION = "--require-every-module"
#: the key a worker's imported modules travel under to the controller
WORKER_KEY = "docgraph_modules"


def add_option(parser: pytest.Parser) -> None:
    parser.addoption(OPTION, action="store_true", help=(
        "fail the run unless the selected tests import every module of the package "
        "(make test-fast: the fast loop still covers every module)"))


@functools.lru_cache(maxsize=None)
def _slow_source(func) -> str:
    """Why ``func`` is slow by its source, or by the source of a function of its own
    module it calls (followed by name, recursively); ``""`` when nothing says so."""
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        return ""
    for call, reason in SLOW_CALLS.items():
        if call in source:
            return reason
    module = getattr(func, "__module__", None)
    if module in NO_FOLLOW:
        return ""
    names = getattr(getattr(func, "__code__", None), "co_names", ())
    for name in names:
        helper = getattr(func, "__globals__", {}).get(name)
        if inspect.isfunction(helper) and helper is not func and helper.__module__ == module:
            reason = _slow_source(helper)
            if reason:
                return f"{name}: {reason}"
    return ""


def slow_reason(item: pytest.Item) -> str:
    """Why ``item`` is slow, or ``""`` (see the module docstring)."""
    path = Path(str(item.fspath)).resolve()
    name = getattr(item, "originalname", item.name)
    listed = (SLOW_TESTS.get(f"tests/{path.name}::{item.name}")
              or SLOW_TESTS.get(f"tests/{path.name}::{name}"))
    if listed:
        return listed
    func = getattr(item, "function", None)
    reason = _slow_source(func) if func is not None else ""
    if reason:
        return reason
    info = getattr(item, "_fixtureinfo", None)
    for fixture in getattr(item, "fixturenames", ()):
        for definition in (info.name2fixturedefs.get(fixture, ()) if info else ()):
            reason = _slow_source(definition.func)
            if reason:
                return f"fixture {fixture}: {reason}"
    return ""


#: the test files that take longest, longest first (``--durations`` of the whole suite on two
#: cores): they are collected first, so pytest-xdist, which hands out whole files in
#: collection order (``--dist loadfile``), starts them first and the short files fill in
#: around them instead of one long file running alone at the end
LONGEST_FILES = (
    "test_synthetic.py", "test_expedition.py", "test_responder.py", "test_results_files.py",
    "test_lora.py", "test_graph_selector.py", "test_stock_scripts.py", "test_interactive.py",
    "test_pipeline.py", "test_zoo.py", "test_readme_commands.py", "test_gsr_causal.py",
    "test_gsr.py", "test_web_chat.py", "test_heldout.py",
)


def longest_first(items: List[pytest.Item]) -> None:
    """Reorder ``items`` in place: the files of :data:`LONGEST_FILES` first, in that order,
    then the others as collected; the tests of a file keep their order."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))


def mark_slow(items: Iterable[pytest.Item]) -> None:
    """Add the ``slow`` marker where :func:`slow_reason` gives a reason."""
    for item in items:
        if item.get_closest_marker("slow") is None:
            reason = slow_reason(item)
            if reason:
                item.add_marker(pytest.mark.slow(reason=reason))


def package_modules() -> Set[str]:
    """Installed module names of the package: ``test_import_layers.module_files`` less the
    maintainer scripts in folders that are no package (no ``__init__.py``)."""
    from test_import_layers import PACKAGE_ROOTS, module_files

    out = set()
    for name, path in module_files().items():
        root = next(r for r in PACKAGE_ROOTS if r == path.parent or r in path.parents)
        folders = [p for p in [path.parent, *path.parents] if p == root or root in p.parents]
        if all((folder / "__init__.py").exists() for folder in folders):
            out.add(name)
    return out


def imported_modules() -> Set[str]:
    """The package's modules imported in this process."""
    return {m for m in sys.modules if m == "parlai_docgraph" or m.startswith("parlai_docgraph.")}


class ModuleCheck:
    """The ``--require-every-module`` check, a pytest plugin (see the module docstring)."""

    def __init__(self) -> None:
        self.seen: Set[str] = set()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        """xdist controller: a worker finished; keep the modules it imported."""
        self.seen.update(getattr(node, "workeroutput", {}).get(WORKER_KEY, ()))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        if hasattr(config, "workeroutput"):  # an xdist worker: report to the controller
            config.workeroutput[WORKER_KEY] = sorted(imported_modules())
            return
        if session.exitstatus != 0 or not session.testscollected:
            return
        missing = sorted(package_modules() - imported_modules() - self.seen)
        if missing:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(
                    f"{OPTION}: {len(missing)} module(s) of the package were not imported "
                    "by the selected tests; add a fast test that uses each:", red=True)
                for name in missing:
                    reporter.write_line(f"  {name}", red=True)


def register(config: pytest.Config) -> None:
    """Register the module check when asked for (the ``slow`` marker is in pytest.ini)."""
    if config.getoption(OPTION):
        config.pluginmanager.register(ModuleCheck(), "docgraph-module-check")
