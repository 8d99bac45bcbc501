# parlai-docgraph: two commands on a fresh machine.
#   make demo   bootstraps .venv and runs the main job on the bundled sample, offline
#   make test   bootstraps .venv and runs the test suite (what .ci/run calls)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.deps-installed
DATA   ?= data
# Offline by default: no hub or dataset downloads at run time.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PARLAI_DOCGRAPH_OFFLINE := 1

.PHONY: install dev demo test clean

$(STAMP): requirements/runtime.txt requirements/test.txt requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet --no-deps parlai==1.7.2
	$(BIN)/pip install --quiet -r requirements/runtime.txt -r requirements/test.txt \
		-c requirements/constraints.txt
	touch $(STAMP)

# The package itself is reinstalled every time so the venv never runs stale code.
install: $(STAMP)
	$(BIN)/pip install --quiet --no-deps --no-build-isolation --force-reinstall .

# Editable install for development: editable wheels do not carry the start-up .pth,
# so it is copied next to them.
dev: $(STAMP)
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	cp parlai_docgraph_hook.pth "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"

demo: install
	$(BIN)/parlai verify_data -t docgraph:sample --datapath $(DATA)
	$(BIN)/parlai verify_data -t docgraph:sample_kg --datapath $(DATA)
	@echo "== train (zoo:docgraph/sample/model is built from its bundled recipe on first use) and evaluate on the test split"
	$(BIN)/parlai eval_model -mf zoo:docgraph/sample/model -t docgraph:sample -dt test -bs 8 \
		--inference greedy --datapath $(DATA)
	@echo "== one scripted interactive turn over parlai_docgraph/assets/demo_document.md"
	printf 'Why did keepers on rock stations live without their families?\n[EXIT]\n' | \
		$(BIN)/parlai interactive -mf zoo:docgraph/sample/model --datapath $(DATA) \
		--documents parlai_docgraph/assets/demo_document.md --show-graph $(DATA)/demo_graph.html
	@echo "== graph of the last turn: $(DATA)/demo_graph.html"
	@echo "== docgraph:synthetic (unseen people): the graph selector against the plain cross-encoder"
	$(BIN)/parlai-docgraph ablate -t docgraph:synthetic --label-type chosen_sent \
		--variants full,none --steps 400 --seed 0 --out-dir $(DATA)/demo_ablation \
		--encoder-model tiny --selector-hidden 32 --type-dim 8 --pair-truncate 64 \
		--graph-cache memory --graph-memo-size 4000 -bs 8 -lr 3e-3 --gradient-clip 1.0 \
		--num-negatives 0 --synthetic-dialogues 2000 --synthetic-eval-dialogues 100 \
		--synthetic-facts 1 --synthetic-turns 1 --datapath $(DATA)
	@echo "== held-out document questions (documents no model saw): the zoo model's selector against zero-shot MiniLM cosine"
	$(BIN)/parlai-docgraph heldout_eval --model-files zoo:docgraph/sample/model --datapath $(DATA)
	@echo "== chat in the browser over your documents:"
	@echo "   $(BIN)/parlai-docgraph chat -mf zoo:docgraph/sample/model --datapath $(DATA) --documents parlai_docgraph/assets/demo_document.md"
	@echo "   then open http://127.0.0.1:8080/"

test: install
	$(BIN)/pytest -q tests

clean:
	rm -rf $(VENV) build *.egg-info
