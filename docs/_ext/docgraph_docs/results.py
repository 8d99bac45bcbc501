"""
The results page and the README's figures, generated from the committed result files
(``docs/results/*.json``, written by the commands each file's ``meta.command`` names).

Each file is read by the first :class:`Kind` whose ``matches`` takes it; the kind checks the
fields its tables and plots read (:func:`problems`: a file that no longer has them fails the
schema test and the documentation build) and renders them with the functions that print the
same tables on the command line (``markdown_table`` of the benchmarks, ``result_table`` /
``worst_table`` of ``reply_eval`` and ``heldout_eval``): no figure is typed twice. A file of
no known kind is still shown (its run record and its numbers), so a new result file needs
no change here to appear; every file must carry the run record :data:`META`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

RESULTS = Path(__file__).resolve().parents[2] / "results"
#: the run record every result file carries
META = ("command", "commit", "time_utc", "machine")
#: the system whose replies the pages list as the worst
REPLY_SYSTEM = "generate (zoo model)"
ZOO = "zoo:docgraph/sample/model"


class SchemaError(ValueError):
    """A committed result file lacks what its page is made from."""


def _need(data: Any, path: str, types: Tuple[type, ...], out: List[str]) -> Any:
    """The value at ``path`` (``a.b.c``) of ``data``, or None with a problem in ``out``."""
    value = data
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            out.append(f"missing {path}")
            return None
        value = value[key]
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        out.append(f"{path} is {type(value).__name__}, expected "
                   + " or ".join(t.__name__ for t in types))
        return None
    return value


NUM = (int, float)


def _meta_problems(data: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    for key in META:
        _need(data, f"meta.{key}", (str,), out)
    return out


# ------------------------------------------------------------------ the kinds of result file
def _long_documents_problems(data: Dict[str, Any]) -> List[str]:
    from parlai_docgraph.bench.long_documents import STAGES

    out: List[str] = []
    result = _need(data, "long_documents", (dict,), out) or {}
    for key in ("largest", "smallest"):
        _need(result, key, (str,), out)
    for key in ("turn_latency_ratio", "first_reply_s_largest", "peak_rss_mb_largest"):
        _need(result, key, NUM, out)
    sizes = _need(result, "sizes", (dict,), out) or {}
    if not sizes:
        out.append("long_documents.sizes is empty")
    for name, figures in sizes.items():
        here: List[str] = []
        for key in ("bytes", "sentences", "index_s", "sentences_per_s", "first_reply_s",
                    "pool_sentences", "answer_in_pool", "peak_rss_mb"):
            _need(figures, key, NUM, here)
        for stage in dict.fromkeys(tuple(STAGES) + ("total",)):
            _need(figures, f"turn_ms.{stage}", NUM, here)
        out += [f"long_documents.sizes.{name}: {p}" for p in here]
    return out


def _chat_problems(data: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    for key in ("responder", "reply_mode"):
        _need(data, f"chat.{key}", (str,), out)
    for key in ("reply_tokens", "tokens_per_s", "torch_threads", "turns"):
        _need(data, f"chat.{key}", NUM, out)
    for stage in ("graph", "selection", "generation", "total"):
        _need(data, f"chat.turn_ms.{stage}", NUM, out)
    return out


def _heldout_problems(data: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    settings = _need(data, "settings", (list,), out) or []
    questions = _need(data, "questions", (list,), out) or []
    _need(data, "documents", (int,), out)
    _need(data, "gold", (list,), out)
    systems = _need(data, "systems", (dict,), out) or {}
    for name, system in systems.items():
        for setting in settings:
            suffix = "" if setting == "document" else f"_{setting}"
            _need(system, "accuracy" + suffix, NUM, out)
            chosen = _need(system, "chosen" + suffix, (list,), out)
            if chosen is not None and len(chosen) != len(questions):
                out.append(f"systems.{name}.chosen{suffix}: {len(chosen)} answers for "
                           f"{len(questions)} questions")
    if "all_documents" in settings:
        _need(data, "retrieval_recall", NUM, out)
    return out


#: the figures of one reply_eval system
REPLY_FIGURES = ("kf1_gold", "kf1_selected", "unsupported_share", "repeated_share",
                 "empty_share", "truncated_share", "distinct_2")


def _reply_problems(data: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    _need(data, "fold", (str,), out)
    n = _need(data, "questions", (int,), out)
    systems = _need(data, "systems", (dict,), out) or {}
    for name, system in systems.items():
        for key in REPLY_FIGURES:
            _need(system, key, NUM, out)
        _need(system, "worst", (list,), out)
        replies = _need(system, "replies_text", (list,), out)
        if replies is not None and n is not None and len(replies) != n:
            out.append(f"systems.{name}.replies_text: {len(replies)} replies for {n} questions")
    return out


def _gsr_real_problems(data: Dict[str, Any]) -> List[str]:
    from parlai_docgraph.bench.gsr_real import METRICS

    out: List[str] = []
    for key in ("task", "split"):
        _need(data, f"gsr_real.{key}", (str,), out)
    for key in ("gold_path_turns", "steps", "batch"):
        _need(data, f"gsr_real.{key}", NUM, out)
    systems = _need(data, "gsr_real.systems", (dict,), out) or {}
    if not systems:
        out.append("gsr_real.systems is empty")
    for name, figures in systems.items():
        for key in tuple(METRICS) + ("start@1", "train_s", "eval_s", "examples"):
            if _need(figures, key, NUM, []) is None:
                out.append(f"gsr_real.systems.{name}: missing {key}")
    return out


def _gsr_real_page(data: Dict[str, Any], img: Path) -> str:
    from parlai_docgraph.bench.gsr_real import markdown_table

    result = data["gsr_real"]
    names = list(result["systems"])
    series = {key: [result["systems"][n][key] for n in names]
              for key in ("path_valid", "path@1", "path@3", "start@1", "resp_f1")}
    plot = _grouped_bars(img / "gsr_real.png", names, series, "",
                         f"DialogGSR on {result['task']} {result['split']}")
    return markdown_table(result) + "\n\n" + plot


def _kg_ceiling_problems(data: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    _need(data, "kg_ceiling.task", (str,), out)
    splits = _need(data, "kg_ceiling.splits", (dict,), out) or {}
    if "test" not in splits:
        out.append("kg_ceiling.splits has no test split")
    for split in splits:
        for key in ("gold_path_turns", "path@1_max", "path@3_max", "p_gold_mean"):
            _need(data, f"kg_ceiling.splits.{split}.{key}", NUM, out)
    return out


def _kg_ceiling_page(data: Dict[str, Any], img: Path) -> str:
    from parlai_docgraph.bench.kg_ceiling import markdown_table

    return markdown_table(data["kg_ceiling"])


def _graph_margin_problems(data: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    runs = _need(data, "graph_margin.runs", (list,), out) or []
    if not runs and not out:
        out.append("graph_margin.runs is empty")
    for i, run in enumerate(runs):
        here: List[str] = []
        for key, types in (("set", (dict,)), ("commit", (str,)), ("variant", (str,)), ("epochs", (int,)),
                           ("seed", (int,)), ("options", (list,)), ("init_seed", (bool,)),
                           ("valid_know_acc", NUM), ("test_know_acc", NUM), ("command", (str,))):
            _need(run, key, types, here)
        out += [f"graph_margin.runs[{i}]: {p}" for p in here]
    _need(data, "graph_margin.summary", (list,), out)
    return out


def _graph_margin_page(data: Dict[str, Any], img: Path) -> str:
    from parlai_docgraph.bench.graph_margin import table

    return ("Each run is the stock `parlai train_model` command of its record (`-m "
            "docgraph/graph_selector -t docgraph:wow:topic_split --encoder-model minilm-l6 "
            "--label-type chosen_sent -bs 8`) on a set `tools/make_coref_groups.py` writes "
            "(`set`: train/eval dialogues, members, facts; `120/60` has 120 unseen-group turns "
            "in valid and in test, the guard's `40/10` has 20); `know_acc` of the kept model, "
            "mean (sd) [min-max] over the seeds:\n\n" + table(data))


def _long_documents_page(data: Dict[str, Any], img: Path) -> str:
    from parlai_docgraph.bench.long_documents import STAGES, markdown_table

    result = data["long_documents"]
    sizes = sorted(result["sizes"].items(), key=lambda kv: kv[1]["bytes"])
    plot = _stacked_bars(
        img / "long_documents_latency.png", [name for name, _ in sizes],
        {stage: [f["turn_ms"][stage] for _, f in sizes] for stage in STAGES if stage != "total"},
        "milliseconds per turn", "Latency of a chat turn per stage, by document size")
    return markdown_table(result) + "\n\n" + plot


def _chat_page(data: Dict[str, Any], img: Path) -> str:
    from parlai_docgraph.bench.chat import markdown_table

    result = data["chat"]
    stages = ("graph", "selection", "generation")
    plot = _stacked_bars(
        img / "chat_latency.png", [f"{result['responder']} ({result['reply_mode']})"],
        {stage: [result["turn_ms"][stage]] for stage in stages},
        "milliseconds per turn (median)", "Latency of a chat turn per stage")
    return markdown_table(result) + "\n\n" + plot


def _question_set_title(data: Dict[str, Any]) -> str:
    """The heading of a ``heldout_eval`` file: held-out questions, or a validation set
    (``--fold valid``, a folder named ``*_valid``) where options are chosen."""
    qset = data.get("question_set", "heldout")
    if qset == "heldout":
        return "Held-out document questions"
    if qset == "valid" or qset.endswith("_valid"):
        return f"Validation document questions, set {qset}"
    return f"Held-out document questions, set {qset}"


def _heldout_page(data: Dict[str, Any], img: Path) -> str:
    from parlai_docgraph.scripts.heldout_eval import result_table

    names = list(data["systems"])
    series = {}
    for setting in data["settings"]:
        suffix = "" if setting == "document" else f"_{setting}"
        series[setting.replace("_", " ")] = [data["systems"][n]["accuracy" + suffix] for n in names]
    qset = data.get("question_set", "heldout")
    plot = _grouped_bars(img / ("heldout_accuracy.png" if qset == "heldout"
                                else f"heldout_accuracy_{qset}.png"),
                         names, series, "selection accuracy",
                         f"{_question_set_title(data)} ({len(data['questions'])})")
    return result_table(data) + "\n\n" + plot


def _reply_page(data: Dict[str, Any], img: Path) -> str:
    from parlai_docgraph.scripts.reply_eval import result_table, worst_table

    names = list(data["systems"])
    series = {"knowledge F1 vs gold": [data["systems"][n]["kf1_gold"] for n in names],
              "share with unsupported words": [data["systems"][n]["unsupported_share"]
                                               for n in names]}
    plot = _grouped_bars(img / f"replies_{data['fold']}.png", names, series, "",
                         f"Replies to {data['questions']} {data['fold']} questions")
    text = result_table(data) + "\n\n" + plot
    if REPLY_SYSTEM in data["systems"] and data["systems"][REPLY_SYSTEM]["worst"]:
        text += (f"\n\nThe replies of `{REPLY_SYSTEM}` with the most content words found in "
                 "neither the selected sentence nor the question:\n\n"
                 + worst_table(data, REPLY_SYSTEM))
    return text


def _is_bench_ratios(data: Dict[str, Any]) -> bool:
    from parlai_docgraph.bench.cli import RATIOS

    return any(isinstance(data.get(bench), dict) and key in data[bench]
               for bench, key, _ in RATIOS)


def _bench_ratios_problems(data: Dict[str, Any]) -> List[str]:
    from parlai_docgraph.bench.cli import RATIOS, SPREAD

    out: List[str] = []
    for bench, key, _ in RATIOS:
        if not isinstance(data.get(bench), dict):
            continue
        _need(data, f"{bench}.{key}", NUM, out)
        for part in ("median", "min", "max", "reps"):
            _need(data, f"{bench}.{key}{SPREAD}.{part}", NUM, out)
    _need(data, "meta.threads", NUM, out)
    for when in ("before", "after"):
        _need(data, f"meta.load_average.{when}", NUM, out)
    return out


def _bench_ratios_page(data: Dict[str, Any], img: Path) -> str:
    from parlai_docgraph.bench.cli import ratio_table

    return ratio_table(data)


def _generic_problems(data: Dict[str, Any]) -> List[str]:
    return [] if _leaves(data) else ["no number in the file"]


def _leaves(data: Any, prefix: str = "") -> List[Tuple[str, Any]]:
    """``(dotted key, value)`` of every number or short string of ``data`` outside ``meta``."""
    out: List[Tuple[str, Any]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if not prefix and key == "meta":
                continue
            out += _leaves(value, f"{prefix}{key}.")
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        out.append((prefix[:-1], data))
    elif isinstance(data, (str, bool)) and len(str(data)) <= 80:
        out.append((prefix[:-1], data))
    return out


def _generic_page(data: Dict[str, Any], img: Path) -> str:
    rows = ["| figure | value |", "|---|---|"]
    for key, value in _leaves(data):
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        rows.append(f"| `{key}` | {shown.replace('|', '/')} |")
    return "\n".join(rows)


@dataclass(frozen=True)
class Kind:
    """A kind of result file: how to recognise it, what it must hold, how it is shown."""

    name: str
    title: str
    matches: Callable[[Dict[str, Any]], bool]
    problems: Callable[[Dict[str, Any]], List[str]]
    page: Callable[[Dict[str, Any], Path], str]


KINDS: Sequence[Kind] = (
    Kind("heldout", "Held-out document questions",
         lambda d: "settings" in d and "systems" in d, _heldout_problems, _heldout_page),
    Kind("replies", "Reply quality",
         lambda d: "fold" in d and "systems" in d, _reply_problems, _reply_page),
    Kind("long_documents", "Long documents", lambda d: "long_documents" in d,
         _long_documents_problems, _long_documents_page),
    Kind("chat", "Speed of a chat turn", lambda d: "chat" in d, _chat_problems, _chat_page),
    Kind("gsr_real", "DialogGSR on real weights", lambda d: "gsr_real" in d,
         _gsr_real_problems, _gsr_real_page),
    Kind("kg_ceiling", "Best possible retrieval on the sample KG", lambda d: "kg_ceiling" in d,
         _kg_ceiling_problems, _kg_ceiling_page),
    Kind("graph_margin", "The graph's margin on unseen coreference groups",
         lambda d: "graph_margin" in d, _graph_margin_problems, _graph_margin_page),
    Kind("bench_ratios", "Speed ratios at the floor", _is_bench_ratios, _bench_ratios_problems,
         _bench_ratios_page),
    Kind("other", "Other results", lambda d: True, _generic_problems, _generic_page),
)


def kind_of(data: Dict[str, Any]) -> Kind:
    return next(k for k in KINDS if k.matches(data))


def problems(data: Any) -> List[str]:
    """What the pages need from ``data`` and it lacks (empty: the file is usable)."""
    if not isinstance(data, dict):
        return ["not a JSON object"]
    return _meta_problems(data) + kind_of(data).problems(data)


def load(folder: Path = RESULTS) -> Dict[str, Dict[str, Any]]:
    """``{file name: data}`` of every result file, in name order; :class:`SchemaError`
    naming each file and what it lacks when one is not usable."""
    files, bad = {}, []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            bad.append(f"{path.name}: not JSON: {err}")
            continue
        found = problems(data)
        if found:
            bad.append(f"{path.name}: " + "; ".join(found))
        files[path.name] = data
    if bad:
        raise SchemaError("result files the pages cannot read:\n" + "\n".join(bad))
    return files


# ------------------------------------------------------------------ plots
def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path, title: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    _pyplot().close(fig)
    return f"![{title}](img/{path.name})"


def _stacked_bars(path: Path, labels: List[str], stages: Dict[str, List[float]],
                  ylabel: str, title: str) -> str:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.2))
    bottom = [0.0] * len(labels)
    for stage, values in stages.items():
        ax.bar(labels, values, bottom=bottom, label=stage)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small")
    return _save(fig, path, title)


def _grouped_bars(path: Path, labels: List[str], series: Dict[str, List[float]],
                  ylabel: str, title: str) -> str:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 3.2))
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        ax.bar([x + i * width for x in range(len(labels))], values, width, label=name)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(labels))])
    ax.set_xticklabels([_wrap(label) for label in labels], fontsize="small")
    ax.set_ylim(0, 1)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return _save(fig, path, title)


def _wrap(label: str, width: int = 18) -> str:
    words, lines = label.split(), [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + 1 + len(word) > width:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}".strip()
    return "\n".join(lines)


# ------------------------------------------------------------------ the page
PAGE_INTRO = """\
# Results

Every figure on this page is read from a result file committed under `docs/results/`
when the documentation is built; each file records the command that wrote it, the commit,
the time and the machine. To measure again, run the file's command and commit the file:
the page, the README's table and the tests that compare them follow.
"""


def run_record(name: str, data: Dict[str, Any]) -> str:
    meta = data["meta"]
    return (f"`docs/results/{name}`: `{meta['command']}` at commit `{meta['commit']}`, "
            f"{meta['time_utc']}, {meta['machine']}.")


def results_page(files: Dict[str, Dict[str, Any]], img: Path) -> str:
    """The Markdown of the results page; plots are written into ``img``."""
    order = {k.name: i for i, k in enumerate(KINDS)}
    out = [PAGE_INTRO]
    for name, data in sorted(files.items(), key=lambda kv: (order[kind_of(kv[1]).name], kv[0])):
        kind = kind_of(data)
        title = kind.title
        if kind.name == "replies":
            title += f", {data['fold']} questions"
        elif kind.name == "heldout":
            title = _question_set_title(data)
        elif kind.name == "other":
            title = Path(name).stem.replace("_", " ").capitalize()
        out += [f"## {title}", "", run_record(name, data), "", kind.page(data, img), ""]
    return "\n".join(out)


# ------------------------------------------------------------------ the README's table
README_BEGIN = ("<!-- results:begin (generated from docs/results/*.json by "
                "`make readme-table`; edit the files, not this region) -->")
README_END = "<!-- results:end -->"


def _summary_rows(files: Dict[str, Dict[str, Any]]) -> List[Tuple[str, str, str]]:
    """``(what, figure, file)`` for each result file that the README quotes."""
    rows: List[Tuple[str, str, str]] = []
    order = {k.name: i for i, k in enumerate(KINDS)}
    for name, data in sorted(files.items(), key=lambda kv: (order[kind_of(kv[1]).name], kv[0])):
        kind = kind_of(data)
        if kind.name == "heldout":
            systems = data["systems"]
            zoos = [n for n in systems if n.startswith(ZOO)]
            if len(zoos) > 1:  # one zoo row per option value (heldout_eval's boosts)
                rows.append(_variants_row(data, zoos, name))
                continue
            zoo = zoos[0] if zoos else None
            other = [n for n in systems if n != zoo]
            if zoo is None:
                continue
            figure = f"selection accuracy {systems[zoo]['accuracy']:.3f}"
            if other:
                figure += f" (zero-shot baseline {systems[other[0]]['accuracy']:.3f})"
            if "accuracy_all_documents" in systems[zoo]:
                figure += (f"; all {data['documents']} documents at once "
                           f"{systems[zoo]['accuracy_all_documents']:.3f}, retrieval recall "
                           f"{data['retrieval_recall']:.3f}")
                if data.get("retrieval_recall_paraphrased") is not None:
                    figure += (f" ({data['retrieval_recall_paraphrased']:.3f} where the question "
                               "shares no content word with its answer)")
            what = ("Knowledge selection on documents no model saw "
                    f"(`{ZOO}`, {len(data['questions'])} questions)")
            if data.get("question_set", "heldout") != "heldout":
                what = (f"Knowledge selection over collections of near-duplicate documents "
                        f"(`{ZOO}`, {len(data['questions'])} questions, set "
                        f"`{data['question_set']}`)")
            rows.append((what, figure, name))
        elif kind.name == "replies" and data["fold"] != "valid" and REPLY_SYSTEM in data["systems"]:
            s = data["systems"][REPLY_SYSTEM]
            figure = (f"knowledge F1 {s['kf1_selected']:.3f} against the selected sentence, "
                      f"{s['unsupported_share']:.1%} with unsupported words")
            if s.get("answer_kept_share") is not None:
                figure += (f", answer span kept in {s['answer_kept_share']:.1%} of "
                           f"{s['answer_kept_n']}")
                alone = data["systems"].get(f"{REPLY_SYSTEM}, before the answer check")
                if alone is not None and s.get("answer_check_share") is not None:
                    figure += (f" ({alone['answer_kept_share']:.1%} by the generator alone; "
                               f"the answer check replaced {s['answer_check_share']:.1%} of "
                               "the replies with the selected sentence)")
            asked = ("held-out questions" if data["fold"] == "test"
                     else f"questions of set `{data['fold']}`")
            rows.append((f"Grounded replies of the zoo model ({data['questions']} {asked})",
                         figure, name))
        elif kind.name == "long_documents":
            r = data["long_documents"]
            big = r["sizes"][r["largest"]]
            figure = (f"{r['largest']}: first reply {r['first_reply_s_largest']:.1f} s, "
                      f"{big['turn_ms']['total']:,.0f} ms a turn "
                      f"({r['turn_latency_ratio']:.2f}x the {r['smallest']} turn), peak "
                      f"{r['peak_rss_mb_largest']:,.0f} MB")
            if r.get("dense_build_s_largest") is not None:
                figure += (f"; retriever {r['retriever']}, its dense index "
                           f"{r['dense_build_s_largest']:,.0f} s"
                           + (" in the background" if r.get("dense_background_largest")
                              else ""))
            elif r.get("dense_ready_largest") is False:
                figure += (f"; retriever {r['retriever']}, its dense index not ready after "
                           f"{big['dense_elapsed_s']:,.0f} s in the background "
                           f"({big['dense_sentences_per_s']:,.0f} sentences/s)")
            rows.append(("Long documents: retrieve, then graph", figure, name))
        elif kind.name == "gsr_real":
            systems = data["gsr_real"]["systems"]
            real = next((n for n in systems if "random" not in n), None)
            if real is None:
                continue
            s = systems[real]
            rows.append((f"DialogGSR on real weights ({real})",
                         f"path_valid {s['path_valid']:.2f}, path@1 {s['path@1']:.3f}, path@3 "
                         f"{s['path@3']:.3f}, reply BLEU-4 {100 * s['resp_bleu-4']:.1f}", name))
        elif kind.name == "kg_ceiling":
            r = data["kg_ceiling"]
            t = r["splits"]["test"]
            rows.append((f"Best path@k any retriever can expect on `{r['task']}` test (its gold "
                         "paths are random walks)", f"path@1 {t['path@1_max']:.3f}, path@3 "
                         f"{t['path@3_max']:.3f} ({t['gold_path_turns']} turns)", name))
        elif kind.name == "graph_margin":
            row = data["graph_margin"].get("current")
            if not row:
                continue
            full, none = row["variants"]["full"]["test"], row["variants"]["none"]["test"]
            rows.append(("The graph selector against the cross-encoder on unseen coreference "
                         f"groups (`docgraph:wow:topic_split` set of `tools/make_coref_groups.py`, "
                         f"1 epoch, default options, {full['n']} seeds)",
                         f"know_acc full {full['mean']:.3f}, none {none['mean']:.3f}: margin "
                         f"{row['margin']['test']:+.3f}", name))
        elif kind.name == "bench_ratios":
            from parlai_docgraph.bench.cli import GOAL_MAXIMA, GOALS, RATIOS, SPREAD

            shown, reps = [], set()
            for bench, key, _ in RATIOS:
                figures = data.get(bench) or {}
                if key in figures:
                    sign = ">=" if key in GOALS else "<="
                    goal = GOALS[key] if key in GOALS else GOAL_MAXIMA[key]
                    shown.append(f"`{key}` {figures[key]} (goal {sign} {goal})")
                    reps.add(figures.get(key + SPREAD, {}).get("reps"))
            load = data["meta"]["load_average"]
            rows.append((f"Speed ratios at the floor (medians of {min(r for r in reps if r)} "
                         f"alternated repetitions, `bench{' --quick' if data['meta'].get('quick') else ''}`)",
                         ", ".join(shown) + f"; load average {load['before']}", name))
        elif kind.name == "chat":
            c = data["chat"]
            rows.append((f"Chat turn with the zoo model ({c['responder']})",
                         f"{c['turn_ms']['total']:,} ms a turn, {c['tokens_per_s']:g} "
                         f"tokens/s on {c['torch_threads']} torch thread(s)", name))
    return rows


def _variants_row(data: Dict[str, Any], zoos: Sequence[str], name: str
                  ) -> Tuple[str, str, str]:
    """The README row of a held-out file with several zoo rows (one per option value)."""
    parts = []
    for zoo in zoos:
        s = data["systems"][zoo]
        part = f"{zoo[len(ZOO):].lstrip(', ')}: {s['accuracy']:.3f}"
        if "accuracy_all_documents" in s:
            part += f", all documents at once {s['accuracy_all_documents']:.3f}"
        parts.append(part)
    what = (f"Selection with and without the zoo's `--named-document-boost` (`{ZOO}`, "
            f"{len(data['questions'])} questions, set `{data['question_set']}`)")
    return what, "; ".join(parts), name


def readme_table(files: Optional[Dict[str, Dict[str, Any]]] = None) -> str:
    """The README's table of current figures (between :data:`README_BEGIN` and
    :data:`README_END`)."""
    files = load() if files is None else files
    rows = ["| what | current figure | result file |", "|---|---|---|"]
    for what, figure, name in _summary_rows(files):
        rows.append(f"| {what} | {figure} | [`{name}`](docs/results/{name}) |")
    return "\n".join(rows)


def update_readme(text: str, files: Optional[Dict[str, Dict[str, Any]]] = None) -> str:
    """``text`` with its results region rewritten from the result files."""
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        raise SchemaError(f"the README has no region {README_BEGIN} ... {README_END}")
    return (text[:start] + README_BEGIN + "\n" + readme_table(files) + "\n" + text[end:])
