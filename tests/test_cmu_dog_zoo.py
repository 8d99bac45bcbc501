"""
``zoo:docgraph/cmu_dog/model`` and the CMU_DoG figures (issue 37, items 4 and 5), on the
release written for the tests: the recipe read from ``recipes.yaml``, the error without the
data, a build by the zoo's code path from a tiny recipe (the real one trains for half an
hour), the documented evaluation through ParlAI's zoo resolution, and ``cmu_dog_eval``
writing a result file the results page reads.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import List

import pytest

import cmu_dog_fixture as fx
from conftest import run_cli
from doc_sources import bash_commands
from parlai_docgraph.dataset_errors import MissingDatasetFile
from parlai_docgraph.recipes import RecipeError, zoo_recipe

STEPS = ["--max-train-steps", "2", "-bs", "2", "-vstep", "2", "-vme", "2",
         "--short-final-eval", "true"]


def tiny_recipe(encoder: str) -> dict:
    """The real recipe's layout with tiny models and 2 steps per part."""
    return {
        "name": "docgraph-cmu_dog-standin", "seed": 0,
        "selector": ["-m", "docgraph/graph_selector", "-t", "docgraph:cmu_dog",
                     "--cmu-dog-split-type", "seen", "--label-type", "chosen_sent",
                     "--encoder-model", encoder, "--selector-hidden", "16", "--type-dim", "8",
                     "--pair-truncate", "48", *STEPS],
        "responder": ["-m", "docgraph/gpt2_responder", "--responder-model", "tiny", "-t",
                      "docgraph:cmu_dog", "--cmu-dog-split-type", "seen",
                      "--skip-generation", "true", *STEPS],
        "pipeline": ["--reply-mode", "generate", "--inference", "greedy", "--label-truncate",
                     "8", "--no-knowledge-margin", "1.5"],
    }


def test_the_recipe_comes_from_recipes_yaml_with_the_datas_version(datapath, tmp_path):
    from parlai_docgraph.zoo import cmu_dog

    fx.install_fixture(datapath, tmp_path)
    zoo = zoo_recipe("cmu_dog")
    build = cmu_dog.recipe(str(datapath))
    assert (build["selector"], build["responder"], build["pipeline"]) == (
        zoo.selector, zoo.responder, zoo.pipeline)
    assert "--cmu-dog-split-type" in zoo.selector and "--max-train-steps" in zoo.responder
    before = build["data"]["cmu_dog"]
    test_file = datapath / "cmu_dog" / "conversations" / "test.json"
    test_file.write_text(test_file.read_text() + " ")
    assert cmu_dog.recipe(str(datapath))["data"]["cmu_dog"] != before  # other data: rebuilt
    assert set(zoo.evaluation) == {"test_seen", "test_unseen", "test_original"}


def test_without_the_data_the_error_names_the_install(datapath):
    from parlai_docgraph.zoo import cmu_dog

    with pytest.raises(MissingDatasetFile, match="datasets install cmu_dog --from DIR_OR_ZIP"):
        cmu_dog.download(str(datapath))


def test_malformed_zoo_recipes_are_refused(tmp_path):
    path = tmp_path / "recipes.yaml"
    path.write_text("zoo:\n  x:\n    seed: 1\n    selector: [a]\n    responder: [b]\n")
    with pytest.raises(RecipeError, match="missing field 'pipeline'"):
        zoo_recipe("x", path)
    with pytest.raises(RecipeError, match="no zoo recipe 'y'"):
        zoo_recipe("y", path)


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_encoder):
    """The fixture data and ``zoo:docgraph/cmu_dog/model`` built from the tiny recipe, marked
    with the real recipe's version so ParlAI's zoo lookup finds it built."""
    from parlai_docgraph.zoo import cmu_dog
    from parlai_docgraph.zoo.recipe import mark_built, recipe_version

    root = tmp_path_factory.mktemp("cmu_dog_zoo")
    datapath = root / "data"
    fx.install_fixture(datapath, root)
    model_file = cmu_dog.download(str(datapath), tiny_recipe(tiny_encoder))
    mark_built(str(Path(model_file).parent), recipe_version(cmu_dog.recipe(str(datapath))))
    return {"root": root, "data": datapath, "model": Path(model_file)}


def test_documented_evaluation_through_the_zoo(built):
    """The recipe's evaluation commands, as written (``{model}`` the zoo name)."""
    zoo = zoo_recipe("cmu_dog")
    for stage in ("test_seen", "test_unseen"):
        args = [a.replace("{model}", "zoo:docgraph/cmu_dog/model") for a in zoo.evaluation[stage]]
        done = run_cli(["parlai", *args, "--datapath", str(built["data"]), "--skip-generation",
                        "false"], cwd=built["root"])
        out = done.stdout + done.stderr
        assert done.returncode == 0, out[-3000:]
        assert "knowledge_f1" in out and "rare_word_f1" in out and "know_acc" in out


def test_cmu_dog_eval_writes_a_result_file_the_page_reads(built):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "_ext"))
    from docgraph_docs.results import kind_of, problems

    out = built["root"] / "cmu_dog.json"
    rows = "zoo model,graph selector,random sentence,no knowledge"
    done = run_cli(["parlai-docgraph", "cmu_dog_eval", "--rows", rows, "--splits", "seen,unseen",
                    "--conversations", "2", "--out", str(out), "--datapath",
                    str(built["data"])], cwd=built["root"])
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    data = json.loads(out.read_text())
    assert kind_of(data).name == "cmu_dog" and problems(data) == []
    systems = data["cmu_dog"]["systems"]
    assert set(systems) == set(rows.split(","))
    for row in systems.values():
        assert set(row) == {"seen", "unseen"} and all(f["exs"] > 0 for f in row.values())
    # the same turns for every row, and each row's eval_model command recorded
    assert len({f["exs"] for r in systems.values() for s, f in r.items() if s == "seen"}) == 1
    assert "--cmu-dog-knowledge none" in data["cmu_dog"]["commands"]["no knowledge"]["seen"]
    # the zoo row runs the model's own --no-knowledge-margin (saved by the build)
    assert "--no-knowledge-margin 1.5" in data["cmu_dog"]["commands"]["zoo model"]["seen"]
    # the selecting rows carry their selection on the knowledge turns
    for row in ("zoo model", "graph selector", "random sentence"):
        assert 0 <= systems[row]["seen"]["know_acc_k"] <= systems[row]["seen"]["know_mrr_k"] <= 1


def _documented(program: str) -> List[str]:
    """The one command of the documentation's bash blocks that starts with ``program``."""
    found = [a for a in bash_commands() if a[:len(program.split())] == program.split()]
    assert len(found) == 1, (program, found)
    return found[0]


def _set(args: List[str], option: str, value: str) -> None:
    args[args.index(option) + 1] = value


def test_valid_settings_run_as_documented(built):
    """``parlai-docgraph cmu_dog_valid`` as the zoo page gives it, on the built model (one
    valid conversation, the files under the test's folder): each setting is one whole
    ``eval_model`` run over the same valid turns, its options laid over the model's own."""
    out = built["root"] / "cmu_dog_valid.json"
    args = _documented("parlai-docgraph cmu_dog_valid")
    _set(args, "--conversations", "1")
    _set(args, "--out", str(out))
    _set(args, "--logs-dir", str(built["root"] / "valid_logs"))
    # the stand-in's replies have at most 8 new tokens (its --label-truncate)
    _set(args, "--settings", args[args.index("--settings") + 1].replace(
        "--beam-min-length 20", "--beam-min-length 4"))
    done = run_cli([*args, "--datapath", str(built["data"])], cwd=built["root"])
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    result = json.loads(out.read_text())["cmu_dog_valid"]
    assert set(result["settings"]) == {"beam 3, min 20", "never a sentence"}
    assert result["chosen"] in result["settings"]
    runs = result["settings"]
    assert runs["beam 3, min 20"]["figures"]["exs"] == runs["never a sentence"]["figures"]["exs"] > 0
    assert runs["never a sentence"]["command"].endswith(
        "--no-knowledge-margin -1000 -t docgraph:cmu_dog --cmu-dog-split-type seen -dt valid "
        "--cmu-dog-conversations 1 --cmu-dog-sample-seed 0 --metrics default,bleu-1 -bs 8 "
        "--skip-generation false --datapath " + str(built["data"]) + " --world-logs "
        + shlex.quote(str(built["root"] / "valid_logs" / "never a sentence.jsonl")))


def test_documented_result_commands_run_as_written(built):
    """Every ``parlai-docgraph cmu_dog_eval`` line of the documentation as written, on the
    built stand-in: one conversation a split instead of 15 or 20, the files under the
    test's folder, and one row (each row is an ``eval_model`` run; all of them are run by
    the test above). The two one-split lines share one result file, as the page says."""
    commands = [a for a in bash_commands() if a[:2] == ["parlai-docgraph", "cmu_dog_eval"]]
    assert len(commands) == 3, commands
    logs, results = built["root"] / "documented_logs", built["root"] / "documented"
    results.mkdir()
    for args in commands:
        out = results / Path(args[args.index("--out") + 1]).name
        _set(args, "--conversations", "1")
        _set(args, "--out", str(out))
        if "--world-logs-dir" in args:
            _set(args, "--world-logs-dir", str(logs))
        done = run_cli([*args, "--rows", "zoo model", "--datapath", str(built["data"])],
                       cwd=built["root"])
        assert done.returncode == 0, (args, (done.stdout + done.stderr)[-3000:])
    shared = json.loads((results / "cmu_dog.json").read_text())["cmu_dog"]["systems"]
    assert set(shared) == {"zoo model"} and set(shared["zoo model"]) == {"seen", "unseen"}
    assert {"zoo_model_seen.jsonl", "zoo_model_unseen.jsonl"} <= {p.name for p in logs.iterdir()}


def test_documented_chat_commands_as_written(built):
    """The documentation's ``parlai interactive`` commands over ``zoo:docgraph/cmu_dog/model``,
    as written, over the stand-in (the fixture's movies: --topic names one of them)."""
    import subprocess

    from conftest import BIN, offline_env
    from test_readme_commands import ALL_COMMANDS

    commands = [a for a in ALL_COMMANDS if "zoo:docgraph/cmu_dog/model" in a]
    assert commands
    for args in commands:
        args = list(args)
        if "--topic" in args:
            args[args.index("--topic") + 1] = "The Glass Harbour"
        done = subprocess.run([str(BIN / args[0]), *args[1:]], cwd=built["root"],
                              input="Who directed it?\n[EXIT]\n", capture_output=True,
                              text=True, timeout=300,
                              env=offline_env({"PARLAI_DATAPATH": str(built["data"])}))
        out = done.stdout + done.stderr
        assert done.returncode == 0, (shlex.join(args), out[-3000:])
        assert "[topic]: The Glass Harbour" in out and "[selected_sentence]" in out
