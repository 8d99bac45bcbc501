"""
Evaluation half of ``-m docgraph/gsr``: iterative constrained retrieval, response
generation and the DialogGSR metrics (see :mod:`parlai_docgraph.kg.metrics`).

Recorded per example (ParlAI averages them):

* ``path@1`` / ``path@3`` -- the first gold path among the top 1 / 3 beams of the first
  retrieval step (turns with a gold path only; an unreachable gold path is a miss);
* ``path_valid`` -- share of first-step beams whose triples all exist in the KG;
* ``paths_retrieved`` -- number of paths in the retrieved subgraph (iterative retrieval);
* ``resp_bleu-1..4`` -- corpus BLEU as Park et al. compute it (NLTK ``corpus_bleu``,
  whitespace tokens with their case, smoothing method1 with epsilon 1e-12; lower-cased with
  ``--gsr-bleu-lowercase``) over everything evaluated:
  :class:`CorpusBleuMetric` carries the additive n-gram counts, so ParlAI's metric sums
  across batches, the epoch and worker processes give the exact corpus figure;
* ``resp_sbleu-1..4`` -- mean sentence-level BLEU (the former ``resp_bleu``);
* ``resp_rouge_1/2/L``, ``resp_f1`` (ParlAI's ``F1Metric``),
  ``knowledge_entity_recall`` (not KQA; see :mod:`parlai_docgraph.kg.metrics`) -- for the
  generated response, when the stage generates one. They carry a ``resp_`` prefix so they
  never merge with the teacher's own ``f1`` / ``bleu-4`` of the ``text`` field (which, in
  the ``retrieve`` stage, is the retrieved path).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from parlai.core.metrics import AverageMetric, F1Metric, Metric
from parlai.core.torch_agent import Output

from parlai_docgraph.kg import fields as kg_fields
from parlai_docgraph.kg import metrics as kgm
from parlai_docgraph.kg.katz import katz_scores
from parlai_docgraph.kg.store import KnowledgeGraph
from parlai_docgraph.kg.subgraph import Path, path_triples
from parlai_docgraph.models.adapters import merged_for_inference
from parlai_docgraph.text_metrics import rouge

Beams = List[Optional[Path]]


class CorpusBleuMetric(Metric):
    """
    Corpus BLEU-``n`` as a ParlAI metric: holds :func:`kgm.bleu_stats` (hypothesis and
    closest reference lengths, clipped n-gram matches and totals), which ``+`` sums, and
    reports :func:`kgm.bleu_from_stats` -- equal to NLTK ``corpus_bleu`` over every
    example added, whatever the batching or number of processes.
    """

    __slots__ = ("_n", "_stats")

    @property
    def macro_average(self) -> bool:
        return False

    def __init__(self, n: int, stats: Sequence[float]) -> None:
        self._n = int(n)
        self._stats = tuple(float(x) for x in stats)

    def __add__(self, other: Optional["CorpusBleuMetric"]) -> "CorpusBleuMetric":
        if other is None:
            return self
        return type(self)(self._n, [a + b for a, b in zip(self._stats, other._stats)])

    def value(self) -> float:
        return kgm.bleu_from_stats(self._stats, self._n)


def example_kg(info: dict) -> Optional[KnowledgeGraph]:
    """The KG of one example: its triples file (cached) or its own triples (KOMODIS)."""
    if info.get("kg_file"):
        return kg_fields.load_kg(info["kg_file"])[0]
    if info.get("kg_triples"):
        return KnowledgeGraph.from_triples(info["kg_triples"], reverse_prefix=None)
    return None


def entity_scores(kg: Optional[KnowledgeGraph], info: dict, constraint: str, beta: float, hops: int,
                  adjacency: str = "count") -> Dict[str, float]:
    """Informativeness of the candidate entities: Katz (Eq. 6) or connection (K = 1, beta = 1),
    over the ``adjacency`` kind (``--katz-adjacency``, :mod:`parlai_docgraph.kg.katz`)."""
    if kg is None or not info["mentioned"]:
        return {}
    among = {h.target for p in info["candidates"] for h in p} | {p[0].source for p in info["candidates"]}
    if constraint == "connection":
        return katz_scores(kg, info["mentioned"], 1.0, k=1, among=among, adjacency=adjacency)
    return katz_scores(kg, info["mentioned"], beta, k=hops, among=among, adjacency=adjacency)


class GSREvalMixin:
    """``eval_step`` of :class:`~parlai_docgraph.agents.gsr.agent.GSRAgent`."""

    # ------------------------------------------------------------------ retrieval
    def _beams_to_paths(self, hyps, index: Dict[tuple, int], cands: Sequence[Path]) -> Beams:
        """Beams as paths; an empty beam (the model stopped) is dropped, a malformed one is None."""
        out: Beams = []
        for ids, _ in hyps:
            if not ids:
                continue
            i = index.get(tuple(ids))
            out.append(cands[i] if i is not None else self.inputs.decode_path(ids))
        return out

    def retrieve(self, infos: List[dict], kgs: List[Optional[KnowledgeGraph]]) -> Tuple[List[Beams], List[List[Path]]]:
        """
        Iterative retrieval (Fig. 1). Returns the first step's beams (for ``path@k``) and
        the retrieved subgraph per example (step 0's best path, then further paths each
        conditioned on the earlier ones, until the model generates the empty path).
        """
        opt = self.opt
        constraint = opt["gsr_constraint"]
        beams_n = int(opt["gsr_num_beams"])
        steps = max(int(opt["gsr_retrieval_steps"]), 1)
        hops = self.linearizer.max_hops
        adjacency = opt["katz_adjacency"]
        scores = [entity_scores(kg, info, constraint, float(opt["katz_beta"]), hops, adjacency)
                  for kg, info in zip(kgs, infos)]
        indexes = [self.inputs.path_index(info["candidates"]) for info in infos]
        longest = max([len(k) for ix in indexes for k in ix] + [16])
        first: List[Beams] = []
        got: List[List[Path]] = [[] for _ in infos]
        active = list(range(len(infos)))
        for step in range(steps):
            if not active:
                break
            sources, tries, table = [], [], []
            for b in active:
                sources.append(self.inputs.retrieve_source(infos[b]["context"], got[b]))
                if constraint != "none":
                    left = [p for p in infos[b]["candidates"] if p not in got[b]]
                    tries.append(self.inputs.trie(left, allow_stop=step > 0))
                    table.append(scores[b])
            hyps = self.gsr().generate_paths(
                sources,
                tries if constraint != "none" else None,
                entity_scores=table if constraint in ("katz", "connection") else None,
                num_beams=beams_n,
                length_penalty=float(opt["gsr_length_penalty"]),
                num_return=beams_n,
                max_new_tokens=longest + 2,
                alpha=float(opt["gsr_alpha"]),
                lm_norm=opt["gsr_lm_norm"],
            )
            still = []
            for b, h in zip(active, hyps):
                paths = self._beams_to_paths(h, indexes[b], infos[b]["candidates"])
                if step == 0:
                    first.append(paths)
                stopped = not h or not h[0][0]  # the best beam is the empty path: stop
                best = None if stopped else paths[0]
                if best is not None and best not in got[b]:
                    got[b].append(best)
                    still.append(b)
            active = still
        return first, got

    # ------------------------------------------------------------------ metrics
    def _record(self, name: str, values: List[Optional[float]], weights: Optional[List[int]] = None) -> None:
        metrics = []
        for i, v in enumerate(values):
            if v is None:
                metrics.append(AverageMetric(0, 0))
            else:
                metrics.append(AverageMetric(v * (weights[i] if weights else 1), weights[i] if weights else 1))
        self.record_local_metric(name, metrics)

    def _retrieval_metrics(self, infos, kgs, first: List[Beams], got: List[List[Path]]) -> None:
        p1, p3, valid, nvalid = [], [], [], []
        for info, kg, beams in zip(infos, kgs, first):
            gold = [p for p in info["gold"] if p]
            retrieved = [path_triples(p) if p else [] for p in beams]
            if gold:
                want = path_triples(gold[0])
                p1.append(float(kgm.path_at_k(retrieved, want, 1)))
                p3.append(float(kgm.path_at_k(retrieved, want, 3)))
            else:
                p1.append(None)
                p3.append(None)
            if beams and kg is not None:
                valid.append(sum(kgm.path_valid(kg, t) for t in retrieved) / len(beams))
                nvalid.append(len(beams))
            else:
                valid.append(None)
                nvalid.append(1)
        self._record("path@1", p1)
        self._record("path@3", p3)
        self._record("path_valid", valid, nvalid)
        self._record("paths_retrieved", [float(len(g)) for g in got])

    def _response_metrics(self, infos, texts: List[str]) -> None:
        cols: Dict[str, List[Optional[float]]] = {}
        lower = bool(self.opt["gsr_bleu_lowercase"])
        f1s = []
        corpus: List[Optional[List[int]]] = []
        for info, text in zip(infos, texts):
            refs = info["labels"]
            row: Dict[str, Optional[float]] = {}
            corpus.append(kgm.bleu_stats(text, refs, lowercase=lower) if refs else None)
            if refs:
                row.update({f"resp_s{k}": v for k, v in kgm.bleu(text, refs, lowercase=lower).items()})
                row.update({f"resp_{k}": v for k, v in rouge(text, refs).items()})
                row["knowledge_entity_recall"] = kgm.knowledge_entity_recall(text, [path_triples(p) for p in info["gold"]])
                f1s.append(F1Metric.compute(text, refs))
            else:
                f1s.append(AverageMetric(0, 0))
            for k in ("resp_sbleu-1", "resp_sbleu-2", "resp_sbleu-3", "resp_sbleu-4",
                      "resp_rouge_1", "resp_rouge_2", "resp_rouge_L", "knowledge_entity_recall"):
                cols.setdefault(k, []).append(row.get(k))
        for k, vals in cols.items():
            self._record(k, vals)
        self.record_local_metric("resp_f1", f1s)
        for n in range(1, 5):
            self.record_local_metric(f"resp_bleu-{n}", [CorpusBleuMetric(n, st or [0] * 10) for st in corpus])

    # ------------------------------------------------------------------ eval
    def eval_step(self, batch):
        if batch.text_vec is None or batch.get("gsr") is None:
            return None
        self.model.eval()
        # merged once for the batch (no gradient here; restored on exit): the losses, the
        # path searches and the reply reuse it, where each merging on its own copied the
        # 49,172 x 576 embedding table in and out (0.29 s a call on SmolLM2-135M)
        with merged_for_inference(self.gsr().lm):
            return self._eval_merged(batch)

    def _eval_merged(self, batch):
        """:meth:`eval_step` of a batch with examples, the model's adapters merged."""
        infos = batch["gsr"]
        if batch.label_vec is not None:
            self.compute_loss(batch)
        if self.stage == "pretrain":
            return Output([""] * len(infos))
        kgs = [example_kg(info) for info in infos]
        need_retrieval = self.stage in ("retrieve", "all") or self.opt["gsr_eval_knowledge"] == "retrieved"
        got: List[List[Path]] = [[] for _ in infos]
        if need_retrieval:
            first, got = self.retrieval_agent().retrieve(infos, kgs)
            self._retrieval_metrics(infos, kgs, first, got)
        if self.stage == "retrieve":
            return Output([self.linearizer.linearize(g[:1]) for g in got])
        knowledge = got
        if self.opt["gsr_eval_knowledge"] == "gold" and self.stage == "respond":
            knowledge = [[p for p in info["gold"] if len(p) <= self.linearizer.max_hops] for info in infos]
        sources = [self.inputs.respond_source(info["context"], k) for info, k in zip(infos, knowledge)]
        from parlai_docgraph.models.decoding import generation_config

        config = generation_config(self.opt, max(self.beam_size, 1), self.label_truncate or 64)
        hyps = self.gsr().generate_text(sources, config)
        tok = self.dict.hf_tokenizer
        texts = [tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False).strip() for ids, _ in hyps]
        self._response_metrics(infos, texts)
        out = Output(texts)
        out.retrieved = [self.linearizer.linearize(k) for k in knowledge]
        return out
