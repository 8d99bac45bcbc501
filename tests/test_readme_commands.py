"""
Every ``parlai interactive``, ``parlai self_chat`` and ``parlai-docgraph chat`` command of
the ``bash`` blocks of the README and the documentation pages (``tests/doc_sources.py``)
that talks to ``zoo:docgraph/sample/model`` (what a user runs
after ``make demo``), run as written through the CLI (a subprocess per command). The others
chat with a model their own section trains first (DialogGSR's ``-mf /tmp/gsr/model``, a
LoRA-tuned local LM): a test checks that each names a model file a ``train_model`` command
of the documentation writes; training them is not repeated here.

Each runs in a temporary folder that holds the files it names (each ``--documents`` file,
a few sentences of text), with ParlAI's datapath (``PARLAI_DATAPATH``, the README's scheme:
"Quick start", "One datapath") holding the stand-in for ``zoo:docgraph/sample/model``
(``tests/zoo_standin.py``: the real recipe's layout, quickly trained, resolved by ParlAI's
own zoo lookup). ``interactive`` reads one question and ``[EXIT]`` on stdin. ``chat`` is
started, one page is requested once its port listens, and it is stopped; its ``--port`` is
replaced by a free one, the only change to a command, so that runs on one machine do not
collide. The README's Wizard of Wikipedia training and evaluation run on the bundled
WoW-format sample through ParlAI's own teacher (shortened, tiny models).
"""

from __future__ import annotations

import re
import shlex
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import List

import pytest

from conftest import BIN, offline_env, run_cli
from doc_sources import bash_commands, doc_text

PROGRAMS = (("parlai", "interactive"), ("parlai", "self_chat"), ("parlai-docgraph", "chat"))
QUESTION = "Why did the keepers live without their families?"


def readme_commands() -> List[List[str]]:
    """The commands of :data:`PROGRAMS` in the documentation's bash blocks, as argument
    lists; a command given on two pages once."""
    commands: List[List[str]] = []
    for args in bash_commands():
        if tuple(args[:2]) in PROGRAMS and args not in commands:
            commands.append(args)
    return commands


ALL_COMMANDS = readme_commands()
#: zoo models built on first use from data a user installs (run as written over a stand-in
#: in the test file named)
BUILT_ON_FIRST_USE = {"zoo:docgraph/cmu_dog/model": "tests/test_cmu_dog_zoo.py"}
#: the commands run here: those over the zoo model
COMMANDS = [a for a in ALL_COMMANDS if "zoo:docgraph/sample/model" in a]


def _documents(args: List[str]) -> List[str]:
    """The file names after ``--documents`` (up to the next option)."""
    if "--documents" not in args:
        return []
    names = []
    for arg in args[args.index("--documents") + 1:]:
        if arg.startswith("-"):
            break
        names.append(arg)
    return names


def _prepare(args: List[str], folder: Path) -> None:
    """Write each document the command names: a heading and a few sentences (for a folder,
    ``name/``, a document inside it; for a glob pattern, a document it matches)."""
    for i, name in enumerate(_documents(args)):
        if name.endswith("/"):
            name += "notes.md"
        path = folder / name.replace("**", "sub").replace("*", "notes")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Keepers {i}\n\nStations built on rocks at sea had no room for "
                        f"families. Keepers served there for several weeks.\n\n## Supplies\n\n"
                        f"Boats brought food and oil when the sea was calm.\n")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_readme_has_the_chat_commands():
    programs = {tuple(args[:2]) for args in COMMANDS}
    assert programs == set(PROGRAMS), programs
    # the README's scheme: ParlAI's datapath, as make demo uses it (no --datapath)
    assert not [args for args in COMMANDS if "--datapath" in args or "-dp" in args]
    trained = set(re.findall(r"parlai train_model [^\n`]*?-mf (\S+)",
                             doc_text().replace("\\\n", " ")))
    for args in ALL_COMMANDS:
        if args not in COMMANDS:
            model = args[args.index("-mf") + 1]
            assert model in trained or model in BUILT_ON_FIRST_USE, \
                f"{' '.join(args)}: no documented command trains {model}"


@pytest.mark.parametrize("args", [a for a in COMMANDS if a[:2] == ["parlai", "interactive"]],
                         ids=lambda a: " ".join(a[2:]))
def test_interactive_command_as_written(args, zoo_datapath, tmp_path):
    _prepare(args, tmp_path)
    done = subprocess.run([str(BIN / args[0]), *args[1:]], cwd=tmp_path,
                          input=f"{QUESTION}\n[EXIT]\n", capture_output=True, text=True,
                          timeout=300, env=offline_env({"PARLAI_DATAPATH": str(zoo_datapath)}))
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert re.search(r"\[selected_sentence\]: \S", out), out[-3000:]
    assert re.search(r"\[Docgraph\]: \S", out), out[-3000:]
    assert "Traceback" not in out
    # every file, folder and glob the command names was found and read
    for note in ("document not found", "no file matches", "document not used", "files in the"):
        assert note not in out, out[-3000:]
    if "--show-graph" in args:
        assert (tmp_path / args[args.index("--show-graph") + 1]).is_file()
    if not (zoo_datapath / "models" / "docgraph" / "sample" / "model").is_file():
        pytest.fail("the zoo model is gone from the datapath")


@pytest.mark.parametrize("args", [a for a in COMMANDS if a[:2] == ["parlai", "self_chat"]],
                         ids=lambda a: " ".join(a[2:]))
def test_self_chat_command_as_written(args, zoo_datapath, tmp_path):
    _prepare(args, tmp_path)
    done = run_cli(args, tmp_path, env={"PARLAI_DATAPATH": str(zoo_datapath)})
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert len(re.findall(r"\[Docgraph_[12]\]: \S", out)) >= 2, out[-3000:]
    if "--outfile" in args:
        assert (tmp_path / f"{args[args.index('--outfile') + 1]}.jsonl").is_file()


@pytest.mark.parametrize("args", [a for a in COMMANDS if a[:2] == ["parlai-docgraph", "chat"]],
                         ids=lambda a: " ".join(a[2:]))
def test_web_chat_command_as_written(args, zoo_datapath, tmp_path):
    _prepare(args, tmp_path)
    port = _free_port()
    args = list(args)
    if "--port" in args:
        args[args.index("--port") + 1] = str(port)
    else:
        args += ["--port", str(port)]
    proc = subprocess.Popen([str(BIN / args[0]), *args[1:]], cwd=tmp_path,
                            env=offline_env({"PARLAI_DATAPATH": str(zoo_datapath)}),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 240
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{' '.join(args)} exited ({proc.returncode}):\n"
                            + proc.stdout.read()[-3000:])
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, f"nothing listens on port {port}"
                time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60) as response:
            status, page = response.status, response.read().decode("utf-8", "replace")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert status == 200
    assert "<html" in page.lower()


def test_wizard_of_wikipedia_commands_as_written(tmp_path):
    """The README's training and evaluation of ``-m docgraph`` on ParlAI's own
    ``wizard_of_wikipedia`` teacher, as typed, over the bundled WoW-format sample laid out as
    ParlAI's build leaves the data (``data.json`` included: the teacher reads it for its rare
    words); only the run is shortened and the models made tiny (no hub), and the datapath
    given, since ParlAI would otherwise download WoW."""
    from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH

    text = doc_text().replace("\\\n", " ")
    [train] = {line.strip() for line in text.splitlines()
               if line.startswith("parlai train_model -t wizard_of_wikipedia -m docgraph")}
    model = train.split("-mf ")[1].split()[0]
    [evaluate] = {line.strip() for line in text.splitlines()
                  if line.startswith(f"parlai eval_model -mf {model} -t wizard_of_wikipedia")}
    wow = tmp_path / "data" / "wizard_of_wikipedia"
    shutil.copytree(Path(SAMPLE_DATAPATH) / "wizard_of_wikipedia", wow)
    shutil.copy(wow / "train.json", wow / "data.json")
    (wow / ".built").write_text("built\n1.0")
    short = ["--datapath", "data", "--responder-model", "tiny", "--encoder-model", "tiny",
             "--max-train-steps", "2", "-bs", "2", "--skip-generation", "true",
             "--validation-max-exs", "4"]
    done = run_cli(shlex.split(train) + short, tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert (tmp_path / model).is_file() and "know_acc" in done.stdout + done.stderr
    done = run_cli(shlex.split(evaluate) + ["--datapath", "data", "--num-examples", "4",
                                            "--skip-generation", "true"], tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "know_acc" in done.stdout + done.stderr
