"""
One training command, one result (issue 42): ParlAI's training teachers pick their episodes
from Python's global ``random`` stream, and ``train_model`` seeds it (``--seed``) only after
it has built the agent. Loading spaCy draws from that stream (through weasel, httpx and rich),
so a pipeline first loaded in the middle of training shifted every later pick; the selector's
initial weights are covered in ``test_graph_selector.py``.
"""

from __future__ import annotations

import random
import subprocess
import sys

from conftest import offline_env


def test_random_state_kept_restores_the_stream():
    from parlai_docgraph.nlp import random_state_kept

    random.seed(5)
    want = [random.random() for _ in range(3)]
    random.seed(5)
    with random_state_kept():
        random.getrandbits(64)
        random.shuffle(list(range(10)))
    assert [random.random() for _ in range(3)] == want


#: a fresh process: import spaCy and load the pipeline through nlp.py, then draw
DRAWS_AFTER_LOAD = """
import random, sys
random.seed(7)
want = [random.random() for _ in range(3)]
random.seed(7)
assert "spacy" not in sys.modules and "rich" not in sys.modules
from parlai_docgraph import nlp
nlp.load_spacy()
nlp.sentences("One sentence. Two sentences.")
nlp.english_stop_words()
assert "rich" in sys.modules  # what drew a number at import before
print([random.random() for _ in range(3)] == want)
"""


def test_loading_spacy_leaves_the_global_random_stream_alone():
    out = subprocess.run([sys.executable, "-c", DRAWS_AFTER_LOAD], capture_output=True,
                         text=True, env=offline_env(), timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "True", out.stdout
