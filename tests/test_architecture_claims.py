"""
The one-path claims of ``docs/architecture.md`` as checks (beside the layer test), read from
the source with :mod:`ast`, nothing imported, over the whole package (``parlai_docgraph/``
with ``bench/`` and ``scripts/``, ``tasks/``, ``zoo/``):

- graphs are built only by ``GraphFactory`` (the builders are called nowhere else);
- JSON is read only through ``parlai_docgraph/jsonio.py``: no ``json.load`` elsewhere, and a
  ``json.loads`` elsewhere only of text that is not a file (each listed with its reason);
- Hugging Face models and tokenizers are loaded or built only by ``models/hub.py``
  (``from_pretrained`` / ``from_config`` calls, or a ``transformers`` model class called
  directly), and by the one GGUF conversion of ``models/gguf.py``;
- in-process memos are ``LRUMemo``: ``functools.lru_cache`` / ``cache`` only on the listed
  loaders of process-wide resources, and no dict named as a cache or memo;
- spaCy is imported only by ``parlai_docgraph/nlp.py``.

Each rule names the few places it exempts, with the reason; a checker test plants a
violation of each to show the rule can fail.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
SOURCES = (ROOT / "parlai_docgraph", ROOT / "tasks", ROOT / "zoo")

BUILDERS = {"build_document_graph", "build_multilevel_graph", "extend_document_graph"}
#: modules that may call a graph builder: the factory's registered builder specs and the
#: builders themselves (an extension rebuilds)
BUILDER_CALLERS = {"parlai_docgraph/graphs/builders.py", "parlai_docgraph/graphs/semantic.py",
                   "parlai_docgraph/graphs/multilevel.py"}
JSON_MODULE = "parlai_docgraph/jsonio.py"
#: (module, the argument's source) -> why that ``json.loads`` reads no file of its own
JSON_TEXT_PARSERS = {
    ("parlai_docgraph/graphs/store.py", "text"): "a graph store entry, read by read_verified",
    ("parlai_docgraph/graphs/store.py", "body"): "the graph inside a verified entry",
    ("parlai_docgraph/graphs/parse_cache.py", "text"): "a parse cache entry, read_verified",
    ("parlai_docgraph/graphs/embed_cache.py", "body"): "an embedding cache entry, read_verified",
    ("parlai_docgraph/graphs/retrieval.py", "body"): "a document cache entry, read_verified",
    ("parlai_docgraph/graphs/dense_index.py", "body"): "a dense-vector cache entry, "
                                                       "read_verified",
    ("parlai_docgraph/scripts/chat_app.py", "b''.join(chunks).decode('utf-8') or '{}'"):
        "an HTTP request body",
    ("parlai_docgraph/bench/chat_memory.py", "data"): "an HTTP response body of the server "
                                                      "it measures",
    ("parlai_docgraph/scripts/demo_summary.py", "line"): "the JSON line of an eval report in "
                                                         "a log",
    ("parlai_docgraph/bench/long_documents.py", "done.stdout.strip().splitlines()[-1]"):
        "a child process's result line",
    ("tasks/docgraph/readers/opendialkg.py", "value"): "JSON inside a CSV cell",
    ("tasks/docgraph/readers/opendialkg.py", "row[0]"): "JSON inside a CSV cell",
}
HUB_MODULE = "parlai_docgraph/models/hub.py"
#: module -> the function of it that may load a model itself, and why
HF_LOADERS = {
    "parlai_docgraph/models/gguf.py": (
        "_convert", "the one-time GGUF conversion: transformers' GGUF reader de-quantises the "
        "file and the model is saved as a directory that hub.py then loads; hub.py resolves "
        "GGUF names through gguf.py, so gguf.py cannot call hub.py back"),
}
HF_LOAD_METHODS = {"from_pretrained", "from_config", "from_single_file"}
#: module -> functions it may decorate with functools.lru_cache: loaders of a process-wide
#: resource, called with a fixed handful of arguments (never keyed by data)
LRU_CACHED = {
    "parlai_docgraph/nlp.py": {"load_spacy", "english_stop_words"},
    "parlai_docgraph/text_metrics.py": {"_scorer"},
    "parlai_docgraph/reply_quality.py": {"_stemmer"},
    "parlai_docgraph/graphs/retrievers.py": {"_stemmer"},
    "tasks/docgraph/readers/holle.py": {"default_splitter"},
    "tasks/docgraph/readers/opendialkg_split.py": {"official_split"},
}
#: (module, name) -> why a dict named as a cache is not an in-process memo
DICT_CACHES = {
    ("parlai_docgraph/kg/constrained.py", "_cache"):
        "one LogitsProcessor's per-call table: it lives for one generate() call",
}
#: (module, "Class.attribute" or a module-level name) -> why a dict that is looked up and
#: filled after its creation (the shape of a memo) is not an in-process memo
FILLED_DICTS = {
    ("parlai_docgraph/agents/pipeline/web_sessions.py", "SessionStore.sessions"):
        "the web chat's live sessions, at most max_sessions (the least recently used go)",
    ("parlai_docgraph/bench/cli.py", "BENCHMARKS"): "the benchmark registry",
    ("parlai_docgraph/scripts/build_graphs.py", "_WORKER"):
        "a build_graphs worker process's factory and store, set once when it starts",
    ("parlai_docgraph/agents/gsr/agent.py", "GSRAgent._saved_wd"):
        "each parameter group's weight decay, saved while pretraining sets it to 0",
    ("parlai_docgraph/bench/long_documents.py", "StageTimer.seconds"): "seconds per stage",
    ("parlai_docgraph/graphs/assembly.py", "ClusterRun.first"):
        "one graph assembly's state: it lives for one build",
    ("parlai_docgraph/graphs/assembly.py", "ClusterRun._cluster_of"):
        "one graph assembly's state: it lives for one build",
    ("parlai_docgraph/graphs/builders.py", "BuilderRegistry._specs"): "the builder registry",
    ("parlai_docgraph/graphs/coref.py", "RuleCorefRun.first"):
        "one document's coreference run: it lives for one build",
    ("parlai_docgraph/graphs/coref.py", "RuleCorefRun.coargs"):
        "one document's coreference run: it lives for one build",
    **{("parlai_docgraph/graphs/coref.py", f"_Seen.{name}"):
       "one document's coreference run: it lives for one build"
       for name in ("names", "first_names", "by_sentence", "nouns")},
    ("parlai_docgraph/graphs/dense_index.py", "DenseRetriever._vectors"):
        "the index itself: the vectors of the documents of its last build, one entry each",
    ("parlai_docgraph/kg/path_ids.py", "PathEncoder._templates"):
        "one entry per path shape (which hops are inverse): a few, bounded by the hop count",
    ("parlai_docgraph/kg/store.py", "KnowledgeGraph._counted"):
        "one adjacency matrix per kind (directed, both): at most two",
    ("parlai_docgraph/kg/trie.py", "PathTrie._kids"):
        "the trie's children of the nodes a search visited: part of the trie, at most one "
        "entry per node, freed with it",
    ("parlai_docgraph/kg/trie.py", "PathTrie._entity_ids"): "the trie's entity numbering",
    ("parlai_docgraph/scripts/chat_http.py", "SessionRate.seen"):
        "per address, the times of its recent sessions; addresses idle for a window are "
        "dropped at every call",
}
SPACY_IMPORTERS = {"parlai_docgraph/nlp.py"}


@functools.lru_cache(maxsize=1)
def sources() -> Dict[str, ast.AST]:
    """Repository-relative path -> parsed module, for every module of the package (parsed
    once per test process; the checkers only read the trees)."""
    return {str(p.relative_to(ROOT)): ast.parse(p.read_text(encoding="utf-8"))
            for folder in SOURCES for p in sorted(folder.rglob("*.py"))}


def _called(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        base = func.value.id if isinstance(func.value, ast.Name) else ""
        return f"{base}.{func.attr}" if base else func.attr
    return ""


def call_nodes(tree: ast.AST) -> Iterator[ast.Call]:
    return (n for n in ast.walk(tree) if isinstance(n, ast.Call))


def calls(tree: ast.AST) -> Iterable[str]:
    """The names every call in ``tree`` calls (``f`` or ``module.f``)."""
    return (_called(n) for n in call_nodes(tree))


def functions(tree: ast.AST) -> Iterator[Tuple[str, ast.AST]]:
    """``(name, node)`` of every function, and ``("", tree)`` for the module itself."""
    yield "", tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node


def builder_calls(trees: Dict[str, ast.AST]) -> List[str]:
    return sorted(path for path, tree in trees.items() if path not in BUILDER_CALLERS
                  and any(c.split(".")[-1] in BUILDERS for c in calls(tree)))


def _json_names(tree: ast.AST) -> Set[str]:
    """``json.load`` / ``json.loads`` as this module may call them (``from json import``)."""
    names = {"json.load", "json.loads"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "json":
            names.update(a.asname or a.name for a in node.names if a.name in ("load", "loads"))
    return names


def json_reads(trees: Dict[str, ast.AST]) -> List[str]:
    """``path: call`` of each JSON parse outside ``jsonio.py`` that is not listed."""
    out = set()
    for path, tree in trees.items():
        if path == JSON_MODULE:
            continue
        names = _json_names(tree)
        for node in call_nodes(tree):
            name = _called(node)
            if name not in names:
                continue
            arg = ast.unparse(node.args[0]) if node.args else ""
            if name.endswith("loads") and (path, arg) in JSON_TEXT_PARSERS:
                continue
            out.add(f"{path}: {name}({arg})")
    return sorted(out)


def _transformers_models(tree: ast.AST) -> Set[str]:
    """Names this module imports from ``transformers`` that are model classes."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transformers"):
            for alias in node.names:
                name = alias.asname or alias.name
                if alias.name.endswith("Model") or "For" in alias.name:
                    out.add(name)
    return out


def hf_loads(trees: Dict[str, ast.AST]) -> List[str]:
    """``path: function: call`` of each model or tokenizer load outside ``models/hub.py``."""
    out = set()
    for path, tree in trees.items():
        if path == HUB_MODULE:
            continue
        allowed = HF_LOADERS.get(path, (None, ""))[0]
        models = _transformers_models(tree)
        for name, func in functions(tree):
            if name and name == allowed:
                continue
            body = list(call_nodes(func))
            if not name:  # the module level: calls outside any function
                inside = {id(c) for _, f in functions(tree) if f is not tree
                          for c in call_nodes(f)}
                body = [c for c in body if id(c) not in inside]
            for node in body:
                called = _called(node)
                if called.split(".")[-1] in HF_LOAD_METHODS or called in models:
                    out.add(f"{path}: {name or '<module>'}: {called}")
    return sorted(out)


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def _is_dict_value(node: ast.expr) -> bool:
    if isinstance(node, ast.Dict):
        return True
    return isinstance(node, ast.Call) and _called(node).split(".")[-1] in (
        "dict", "OrderedDict", "defaultdict")


def memo_violations(trees: Dict[str, ast.AST]) -> List[str]:
    """``functools`` caches on unlisted functions, and dicts named as caches or memos that
    outlive a call: an attribute (``self._cache = {}``) or a module-level name (a local
    variable of a function lives for one call)."""
    out = set()
    for path, tree in trees.items():
        if path == "parlai_docgraph/memo.py":
            continue
        module_level = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(_decorator_name(d) in ("lru_cache", "cache") for d in node.decorator_list) \
                        and node.name not in LRU_CACHED.get(path, ()):
                    out.add(f"{path}: @lru_cache {node.name}")
            targets: List[ast.expr] = []
            if isinstance(node, ast.Assign) and _is_dict_value(node.value):
                targets = list(node.targets)
            elif isinstance(node, ast.AnnAssign) and node.value is not None \
                    and _is_dict_value(node.value):
                targets = [node.target]
            for target in targets:
                name = (target.attr if isinstance(target, ast.Attribute)
                        else target.id if isinstance(target, ast.Name)
                        and id(node) in module_level else "")
                if ("cache" in name.lower() or "memo" in name.lower()) \
                        and (path, name) not in DICT_CACHES:
                    out.add(f"{path}: dict {name}")
    return sorted(out)


def _dict_attribute(node: ast.AST) -> str:
    """``attr`` of ``self.attr`` (else "")."""
    return (node.attr if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "self" else "")


def filled_dicts(trees: Dict[str, ast.AST],
                 exemptions: Optional[Mapping[Tuple[str, str], str]] = None) -> List[str]:
    """
    Dicts with a memo's shape: a class attribute made a dict in a method, then filled
    (``self.x[k] = v``, ``setdefault``) and looked up (``.get``, ``in``) in its other
    methods; a module-level dict filled inside a function. Each is a memo unless
    ``exemptions`` (default :data:`FILLED_DICTS`) says why not.
    """
    exemptions = FILLED_DICTS if exemptions is None else exemptions
    out = set()
    for path, tree in trees.items():
        if path == "parlai_docgraph/memo.py":
            continue
        found: List[str] = []
        module_dicts = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                        and n.value is not None and _is_dict_value(n.value)
                        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                        if isinstance(t, ast.Name)}
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Assign):
                        found += [t.value.id for t in node.targets if isinstance(t, ast.Subscript)
                                  and isinstance(t.value, ast.Name) and t.value.id in module_dicts]
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            methods = [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            made = {_dict_attribute(t) for m in methods for n in ast.walk(m)
                    if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
                    and _is_dict_value(n.value)
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])} - {""}
            filled, read = set(), set()
            for m in (m for m in methods if m.name != "__init__"):
                for n in ast.walk(m):
                    if isinstance(n, ast.Assign):
                        filled |= {_dict_attribute(t.value) for t in n.targets
                                   if isinstance(t, ast.Subscript)}
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                            and n.func.attr in ("get", "setdefault"):
                        read.add(_dict_attribute(n.func.value))
                        if n.func.attr == "setdefault":
                            filled.add(_dict_attribute(n.func.value))
                    if isinstance(n, ast.Compare):
                        read |= {_dict_attribute(c) for c in n.comparators}
            found += [f"{cls.name}.{a}" for a in made & filled & read]
        out |= {f"{path}: {name}" for name in found if (path, name) not in exemptions}
    return sorted(out)


def spacy_imports(trees: Dict[str, ast.AST]) -> List[str]:
    out = set()
    for path, tree in trees.items():
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            if any(n == "spacy" or n.startswith("spacy.") for n in names) \
                    and path not in SPACY_IMPORTERS:
                out.add(path)
    return sorted(out)


SENTINEL_MODULE = "parlai_docgraph/graphs/knowledge_lines.py"
#: string values that spell the no-knowledge sentinel or its candidate line
SENTINEL_SPELLINGS = ("no_passages_used", "no_passage_used")


def _docstrings(tree: ast.AST) -> Set[int]:
    """ids of the docstring constants of ``tree``'s module, classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def sentinel_spellings(trees: Dict[str, ast.AST]) -> List[str]:
    """Code strings that spell the no-knowledge sentinel outside its one home (docstrings,
    ``help=`` texts and f-string pieces of messages are prose, not values)."""
    out = set()
    for path, tree in trees.items():
        if path == SENTINEL_MODULE:
            continue
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "help":
                prose |= {id(n) for n in ast.walk(node.value)}
            if isinstance(node, ast.JoinedStr):
                prose |= {id(n) for n in node.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in prose \
                    and node.value.strip("[] ") in SENTINEL_SPELLINGS + (
                        " ".join(SENTINEL_SPELLINGS[:1] * 2),):
                out.add(f"{path}:{node.lineno}")
    return sorted(out)


def test_the_no_knowledge_sentinel_has_one_home():
    assert not sentinel_spellings(sources()), (
        "spell the sentinel as knowledge_lines.NO_PASSAGE / NO_KNOWLEDGE_LINE")


def test_sentinel_checker_flags_a_planted_spelling():
    trees = {
        "parlai_docgraph/graphs/multilevel.py": ast.parse(
            '"""no_passages_used in a docstring is prose."""\nNO = "[no_passage_used]"\n'
            'def f(p):\n    p.add_argument("--x", help="no_passages_used")\n'
            '    return "no_passages_used no_passages_used"\n'),
        SENTINEL_MODULE: ast.parse('NO_PASSAGE = "no_passages_used"\n'),
    }
    assert sentinel_spellings(trees) == ["parlai_docgraph/graphs/multilevel.py:2",
                                         "parlai_docgraph/graphs/multilevel.py:5"]


def test_the_checks_read_the_whole_package():
    paths = set(sources())
    for module in ("parlai_docgraph/bench/scale.py", "parlai_docgraph/scripts/chat_app.py",
                   "tasks/docgraph/komodis.py", "zoo/sample.py", "parlai_docgraph/nlp.py"):
        assert module in paths, module
    listed = ({p for p, _ in JSON_TEXT_PARSERS} | set(HF_LOADERS) | set(LRU_CACHED)
              | {p for p, _ in DICT_CACHES} | BUILDER_CALLERS)
    assert listed <= paths, listed - paths  # no exemption outlives its module
    exempted = {f"{p}: {name}" for p, name in FILLED_DICTS}
    unexempted = filled_dicts(sources(), exemptions={})
    assert exempted <= set(unexempted), exempted - set(unexempted)  # each still exists


def test_the_memo_checker_flags_a_planted_memo():
    planted = ast.parse(
        "SEEN = {}\n"
        "def remember(k, v):\n    SEEN[k] = v\n"
        "class Parser:\n"
        "    def __init__(self):\n        self.parsed = {}\n        self.fixed = {}\n"
        "    def parse(self, text):\n"
        "        if text not in self.parsed:\n            self.parsed[text] = len(text)\n"
        "        return self.parsed[text], self.fixed.get(text)\n")
    assert filled_dicts({"parlai_docgraph/x.py": planted}) == [
        "parlai_docgraph/x.py: Parser.parsed", "parlai_docgraph/x.py: SEEN"]


def test_graphs_are_built_only_by_the_factory():
    assert not builder_calls(sources()), "graph builders called outside GraphFactory"


def test_json_is_read_only_through_jsonio():
    assert not json_reads(sources()), "JSON read outside parlai_docgraph/jsonio.py"


def test_hf_models_are_loaded_only_by_hub():
    assert not hf_loads(sources()), "Hugging Face models loaded outside models/hub.py"


def test_memos_are_lru_memos():
    assert not memo_violations(sources()), "a memo that is not an LRUMemo"
    assert not filled_dicts(sources()), "a dict filled and looked up like a memo"


def test_spacy_is_imported_only_by_nlp():
    assert not spacy_imports(sources()), "spaCy imported outside parlai_docgraph/nlp.py"


def test_checkers_flag_planted_violations():
    trees = {
        "parlai_docgraph/agents/pipeline/x.py": ast.parse(
            "from parlai_docgraph.graphs.semantic import build_document_graph\n"
            "def f(p):\n    return build_document_graph(p)\n"),
        "parlai_docgraph/bench/b.py": ast.parse(
            "import json\nfrom json import loads as parse\n"
            "def f(path, done):\n    rows = [json.loads(l) for l in open(path)]\n"
            "    json.loads(done.stdout.strip().splitlines()[-1])\n"
            "    return parse(open(path).read())\n"),
        "parlai_docgraph/graphs/store.py": ast.parse(
            "import json\ndef f(text, path):\n    json.loads(text)\n"
            "    return json.load(open(path))\n"),
        "parlai_docgraph/kg/z.py": ast.parse("from spacy.util import filter_spans\n"),
        "parlai_docgraph/graphs/builders.py": ast.parse(
            "def f(p):\n    return build_document_graph(p)\n"),
        "parlai_docgraph/models/gguf.py": ast.parse(
            "from transformers import AutoModelForCausalLM as A, T5ForConditionalGeneration\n"
            "def _convert(p):\n    return A.from_pretrained(p)\n"
            "def other(p):\n    return A.from_pretrained(p)\n"
            "LM = T5ForConditionalGeneration(None)\n"),
        "parlai_docgraph/models/hub.py": ast.parse(
            "def load(auto, c):\n    return auto.from_config(c)\n"),
        "parlai_docgraph/bench/families.py": ast.parse(
            "import transformers as tf\ndef f(c):\n    return tf.AutoModel.from_config(c)\n"),
        "parlai_docgraph/nlp.py": ast.parse(
            "from functools import lru_cache, cache\n@lru_cache(maxsize=8)\ndef load_spacy(m):\n"
            "    pass\n@cache\ndef sentences_of(text):\n    pass\n"
            "class S:\n    def __init__(self):\n        self._cache = {}\n"
            "        self.memo: dict = dict()\n        self.seen = {}\n"
            "def f():\n    cache = {}\n_CACHE = {}\n"),
    }
    assert builder_calls(trees) == ["parlai_docgraph/agents/pipeline/x.py"]
    assert json_reads(trees) == [  # a listed parse is listed for its module only
        "parlai_docgraph/bench/b.py: json.loads(done.stdout.strip().splitlines()[-1])",
        "parlai_docgraph/bench/b.py: json.loads(l)",
        "parlai_docgraph/bench/b.py: parse(open(path).read())",
        "parlai_docgraph/graphs/store.py: json.load(open(path))"]
    assert hf_loads(trees) == [
        "parlai_docgraph/bench/families.py: f: from_config",
        "parlai_docgraph/models/gguf.py: <module>: T5ForConditionalGeneration",
        "parlai_docgraph/models/gguf.py: other: A.from_pretrained"]
    assert memo_violations(trees) == [
        "parlai_docgraph/nlp.py: @lru_cache sentences_of", "parlai_docgraph/nlp.py: dict _CACHE",
        "parlai_docgraph/nlp.py: dict _cache", "parlai_docgraph/nlp.py: dict memo"]
    assert spacy_imports(trees) == ["parlai_docgraph/kg/z.py"]
