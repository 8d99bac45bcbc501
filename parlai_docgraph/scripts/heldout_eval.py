"""
``parlai-docgraph heldout_eval``: sentence-selection accuracy on document questions that no
model was trained or tuned on: does the default model pick the right sentence over documents
it has never seen?

The bundled set (``parlai_docgraph/assets/heldout``) has 10 documents of different kinds
(Markdown notes, two how-tos, a biography and a company history told with pronouns, two
table-like lists, a science explainer, a travel guide, a product FAQ) and 56 questions, each
answered by one sentence of its document; it is also the ``test`` split of ``docgraph:docqa``
(:mod:`parlai_docgraph.tasks.docgraph.docqa`, which reads and validates it). A question's
candidates are every sentence of its document.

Systems (one table row each):

* ``cosine``: zero-shot sentence-embedding similarity, no training. Question and sentences
  are embedded by ``--cosine-encoder`` (default the installed MiniLM) with mean pooling over
  the attention mask, the pooling the all-MiniLM-L6-v2 checkpoint was trained with; the
  sentence with the highest cosine similarity is selected.
* every ``-mf`` in ``--model-files`` (comma separated; ``zoo:`` names work): a
  ``docgraph/graph_selector`` model, or a ``-m docgraph`` pipeline whose selector is used;
  its :meth:`select` ranks the document's sentences for the question as in a chat turn.

Two settings (``--settings``): ``document`` gives each question its own document (every
sentence a candidate); ``all_documents`` asks it against all the documents at once, as
``parlai interactive --documents`` does: its pool is what
:class:`~parlai_docgraph.graphs.retrieval.DocumentIndex` retrieves for it within
``--retrieval-sentences`` (the retrieval recall, the share of questions whose answer is in
the retrieved pool, is reported beside it).

Example::

    parlai-docgraph heldout_eval --model-files zoo:docgraph/sample/model --cosine true
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

import dataclasses

from parlai_docgraph.agents.pipeline.args import add_retriever_args
from parlai_docgraph.graphs.corpus import Pool as Passages
from parlai_docgraph.graphs.retrieval import DEFAULT_BUDGET, DocumentIndex
from parlai_docgraph.graphs.retrievers import DEFAULT_RRF_K, SentenceEmbedder, retriever_factory
from parlai_docgraph.models.encoders import MINILM, load_encoder
from parlai_docgraph.atomic import write_text_atomic
from parlai_docgraph.env import run_record
from parlai_docgraph.tasks.docgraph.docqa import (
    DOCQA, HELDOUT, VALID_DOCUMENTS, Question, load_questions,
)

#: ``rank(passages, question) -> candidate lines best first`` (``"title sentence"``)
Ranker = Callable[[Passages, str], List[str]]


def accuracy(questions: Sequence[Question], rank: Ranker) -> Tuple[float, List[str]]:
    """Top-1 selection accuracy of ``rank`` and its selected line per question."""
    chosen = [rank(q.passages, q.question)[0] for q in questions]
    hits = sum(c == q.gold for c, q in zip(chosen, questions))
    return hits / len(questions), chosen


def cosine_ranker(encoder_name: str) -> Ranker:
    """Zero-shot ranking by cosine similarity of mean-pooled sentence embeddings."""
    import torch

    from parlai_docgraph.models.encoders import load_encoder
    from parlai_docgraph.graphs.embed import sentence_vectors

    encoder, tokenizer = load_encoder(encoder_name)
    encoder.eval()

    def rank(passages: Passages, question: str) -> List[str]:
        lines = [f"{t} {s}" for t, ss in passages for s in ss]
        sims = sentence_vectors(lines, encoder, tokenizer) @ sentence_vectors(
            [question], encoder, tokenizer)[0]
        order = torch.sort(sims, descending=True, stable=True).indices.tolist()
        return [lines[i] for i in order]

    return rank


def load_model(model_file: str, datapath: Optional[str] = None) -> Any:
    """
    A selector or ``-m docgraph`` pipeline from ``model_file``, loaded once for both the
    ranking: evaluation mode, ``--reply-mode extract`` for pipelines (replies are measured
    by ``parlai-docgraph reply_eval``).
    """
    from parlai.core.agents import create_agent_from_model_file

    overrides: Dict[str, Any] = {"datatype": "valid"}
    if is_pipeline(model_file):
        overrides.update(reply_mode="extract", inference="greedy")
    if datapath:
        overrides["datapath"] = datapath
    return create_agent_from_model_file(model_file, overrides)


def selector_ranker(agent: Any, model_file: str = "", boost: Optional[float] = None
                    ) -> Ranker:
    """Ranking by a trained graph selector (or a ``-m docgraph`` pipeline's selector), with
    its ``--named-document-boost`` set to ``boost`` while it ranks (``None``: its own)."""
    selector = agent if hasattr(agent, "select") else getattr(agent, "selector", None)
    if not hasattr(selector, "select"):
        raise ValueError(f"{model_file}: neither a graph selector nor a -m docgraph pipeline")

    def rank(passages: Passages, question: str) -> List[str]:
        own = selector.opt.get("named_document_boost")
        if boost is not None:
            selector.opt["named_document_boost"] = boost
        try:
            return list(selector.select(passages, question)["scores"])
        finally:
            selector.opt["named_document_boost"] = own

    return rank


def make_retriever(kind: str, encoder_name: str = MINILM, rrf_k: int = DEFAULT_RRF_K) -> Any:
    """``--retriever`` as the chat builds it, over the frozen ``encoder_name`` (the zoo
    selector's frozen encoder is the installed MiniLM); always built in the foreground."""
    embedder = None
    if kind != "bm25":
        encoder, tokenizer = load_encoder(encoder_name)
        encoder.requires_grad_(False).eval()
        embedder = SentenceEmbedder(encoder, tokenizer)
    return retriever_factory(kind, embedder, None, rrf_k=rrf_k, background_over=0,
                             progress=False)


def retrieved_questions(questions: Sequence[Question], folder: str, budget: int,
                        retriever: Any = None) -> Tuple[List[Question], List[bool]]:
    """
    ``(questions, found)``: each question with the pool ``retriever`` (default BM25)
    retrieves for it from all the documents of ``folder`` at once (the chat's index and
    retrieval), and per question whether its gold line is in that pool.
    """
    from pathlib import Path

    index = DocumentIndex(cache_root=None, progress=False, retriever=retriever)
    index.add([str(Path(folder) / d) for d in sorted({q.document for q in questions})])
    out, found = [], []
    for q in questions:
        index.last_pool = None  # one question, one dialogue
        pool = index.retrieve([q.question], budget)
        found.append(q.gold in {f"{t} {s}" for t, ss in pool for s in ss})
        out.append(dataclasses.replace(q, passages=pool))
    return out, found


def paraphrased(question: Question) -> bool:
    """Whether ``question`` shares no content word with its answer sentence (words of
    letters and digits, lower-cased, stemmed by NLTK's Snowball stemmer, without spaCy's
    English stop words)."""
    from parlai_docgraph.reply_quality import content_stems

    return not content_stems(question.question) & content_stems(question.answer)


def question_set(folder: str) -> str:
    """The name of a question folder in result files (``heldout`` for the bundled one)."""
    from pathlib import Path

    path = Path(folder).resolve()
    return "heldout" if path == HELDOUT.resolve() else path.name


def is_pipeline(model_file: str) -> bool:
    """Whether ``model_file`` is a ``-m docgraph`` pipeline (its saved opt says so)."""
    from parlai.core.opt import Opt

    from parlai.core.loader import load_agent_module

    from parlai_docgraph.agents.pipeline.agent import DocgraphAgent

    model = str(Opt.load(f"{model_file}.opt").get("model", ""))
    # the class, not the saved name: files saved before the agents became packages name
    # parlai_docgraph.agents.agents:DocgraphAgent
    return bool(model) and load_agent_module(model) is DocgraphAgent


def result_table(data: Dict[str, Any]) -> str:
    """:func:`table` of a result file that ``--out`` wrote (what the README quotes)."""
    rows = [(name, {s: figures["accuracy" + ("" if s == "document" else f"_{s}")]
                    for s in data["settings"]})
            for name, figures in data["systems"].items()]
    para = data.get("paraphrased") or []
    return table(rows, len(data["questions"]), data["documents"], data["retrieval_recall"],
                 data.get("retriever", "bm25"), data.get("retrieval_recall_paraphrased"),
                 sum(para))


def table(rows: Sequence[Tuple[str, Dict[str, float]]], n: int, docs: int,
          recall: Optional[float] = None, retriever: str = "bm25",
          recall_paraphrased: Optional[float] = None, paraphrased: int = 0) -> str:
    """The Markdown table of ``(system, {setting: accuracy})`` rows; ``recall`` (and on the
    ``paraphrased`` questions that share no content word with their answer,
    ``recall_paraphrased``) of the ``retriever`` of the all-documents setting."""
    settings = list(rows[0][1]) if rows else []
    retrieval = ""
    if recall is not None:
        retrieval = f" ({retriever} retrieval, recall {recall:.3f}"
        if recall_paraphrased is not None:
            retrieval += (f"; {recall_paraphrased:.3f} on the {paraphrased} questions that "
                          "share no content word with their answer")
        retrieval += ")"
    names = {"document": "own document",
             "all_documents": f"all {docs} documents at once{retrieval}"}
    out = [f"| system ({n} questions) | " + " | ".join(names[s] for s in settings) + " |",
           "|---" * (len(settings) + 1) + "|"]
    out += [f"| {name} | " + " | ".join(f"{acc[s]:.3f}" for s in settings) + " |"
            for name, acc in rows]
    return "\n".join(out)


@register_script("heldout_eval", hidden=False)
class HeldoutEval(ParlaiScript):
    """Sentence-selection accuracy on the bundled held-out document questions."""

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(True, False, description=cls.__doc__.strip())
        group = parser.add_argument_group("heldout_eval")
        group.add_argument("--model-files", type=str, default="",
                           help="comma-separated selector or -m docgraph model files "
                           "(zoo: names work), one table row each")
        group.add_argument("--cosine", type="bool", default=True,
                           help="add the zero-shot cosine-similarity row (no training)")
        group.add_argument("--cosine-encoder", type=str, default="minilm-l6",
                           help="sentence encoder of the cosine row (minilm-l6: the "
                           "installed all-MiniLM-L6-v2; or a local directory)")
        group.add_argument("--questions-dir", type=str, default=str(HELDOUT),
                           help="folder with questions.jsonl and its documents")
        group.add_argument("--settings", type=str, default="document,all_documents",
                           help="comma-separated: document (each question over its own "
                           "document), all_documents (over all documents at once, the pool "
                           "retrieved as in a chat)")
        group.add_argument("--retrieval-sentences", type=int, default=DEFAULT_BUDGET,
                           help="all_documents: the sentence budget of a retrieved pool")
        add_retriever_args(group, background=False)  # built before the questions
        group.add_argument("--retrieval-encoder", type=str, default=MINILM,
                           help="dense, hybrid: the frozen sentence encoder (minilm-l6, "
                           "the zoo selector's frozen encoder; or a local directory)")
        group.add_argument("--fold", type=str, default="",
                           choices=["", "valid"],
                           help="valid: the docgraph:docqa valid questions and documents "
                           "instead of --questions-dir (where the retriever and the recipes "
                           "are chosen)")
        group.add_argument("--named-document-boosts", type=str, default="",
                           help="comma-separated values of the selector's "
                           "--named-document-boost: one row per model file and value, to "
                           "measure what the boost adds (empty: each model's own value)")
        group.add_argument("--num-questions", type=int, default=0,
                           help="evaluate only the first N questions (0: all; quick checks)")
        group.add_argument("--out", type=str, default=None,
                           help="also write the figures and per-question choices as JSON")
        return parser

    def run(self) -> Dict[str, float]:
        from parlai.core.build_data import modelzoo_path as resolve  # zoo: names

        opt = self.opt
        folder = str(DOCQA) if opt["fold"] == "valid" else opt["questions_dir"]
        questions = load_questions(folder)
        if opt["fold"] == "valid":
            questions = [q for q in questions if q.document in VALID_DOCUMENTS]
        if opt["num_questions"] > 0:
            questions = questions[: opt["num_questions"]]
        systems: List[Tuple[str, Ranker]] = []
        if opt["cosine"]:
            systems.append((f"zero-shot cosine ({opt['cosine_encoder']})",
                            cosine_ranker(opt["cosine_encoder"])))
        boosts = [float(b) for b in opt["named_document_boosts"].split(",") if b.strip()]
        for name in filter(None, (m.strip() for m in opt["model_files"].split(","))):
            path = resolve(opt["datapath"], name)
            agent = load_model(path, opt["datapath"])
            if not boosts:
                systems.append((name, selector_ranker(agent, path)))
            for boost in boosts:
                systems.append((f"{name}, named-document boost {boost:g}",
                                selector_ranker(agent, path, boost)))
        if not systems:
            raise ValueError("heldout_eval: nothing to evaluate (give --model-files or "
                             "--cosine true)")
        settings = [x.strip() for x in opt["settings"].split(",") if x.strip()]
        unknown = set(settings) - {"document", "all_documents"}
        if unknown or not settings:
            raise ValueError(f"--settings {opt['settings']!r}: use document, all_documents")
        asked = {"document": questions}
        found: List[bool] = []
        if "all_documents" in settings:
            retriever = make_retriever(opt["retriever"], opt["retrieval_encoder"], opt["rrf_k"])
            asked["all_documents"], found = retrieved_questions(
                questions, folder, opt["retrieval_sentences"], retriever)
        recall = sum(found) / len(found) if found else None
        para = [paraphrased(q) for q in questions]
        rows, detail = [], {}
        for name, rank in systems:
            accs: Dict[str, float] = {}
            detail[name] = {}
            for setting in settings:
                acc, chosen = accuracy(asked[setting], rank)
                accs[setting] = acc
                key = "" if setting == "document" else f"_{setting}"
                detail[name].update({f"accuracy{key}": acc, f"chosen{key}": chosen})
            rows.append((name, accs))
        docs = len({q.document for q in questions})
        para_found = [f for f, p in zip(found, para) if p]
        recall_para = sum(para_found) / len(para_found) if para_found else None
        text = table(rows, len(questions), docs, recall, opt["retriever"], recall_para,
                     sum(para))
        print(text)  # the script's output: the table
        if opt.get("out"):
            write_text_atomic(opt["out"], json.dumps(
                {"meta": run_record(), "question_set": opt["fold"] or question_set(folder),
                 "documents": docs, "settings": settings,
                 "questions": [q.question for q in questions],
                 "gold": [q.gold for q in questions], "paraphrased": para,
                 "retrieval_recall": recall, "retrieval_found": found,
                 "retrieval_recall_paraphrased": recall_para,
                 "retriever": opt["retriever"], "rrf_k": opt["rrf_k"],
                 "retrieval_sentences": opt["retrieval_sentences"], "systems": detail},
                indent=1))
        return {name: accs[settings[0]] for name, accs in rows}


if __name__ == "__main__":
    HeldoutEval.main()
