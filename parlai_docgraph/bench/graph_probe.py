"""
Controlled probe of the graph selector on a generated structure task: the
encoder is frozen, every input vector is computed once, and only the selector's graph part
(context/node projections, EGAT, heads: what ``--graph-learningrate`` trains) is trained.
A setting takes minutes instead of an hour, so the factors that decide whether the graph can help at all (the
pooling of node and context vectors, the variant, the number of sampled negatives, the
graph rate) can be compared one at a time, which end-to-end MiniLM runs (about 0.4
updates/s on 2 CPU cores) cannot afford.

Not a test: it prints, per setting, P@1 on the unseen-people test turns and on as many
training turns (memorising shows as a gap), the seeds and the settings::

    python -m parlai_docgraph.bench.graph_probe --task expedition --dialogues 100 --pool cls,mean \\
        --variants full,none --negatives 5,0 --steps 40,150,300 --seeds 0

Inputs are built exactly as the agent builds them: the teacher's generator for the turns,
``GraphProvider`` for the graph and frozen node features, the pair ``[candidate line;
question]`` for the Eq. 1 context (the question alone: the agent's second turn also sees
the first question); ``cls`` reads the first token of the frozen encoder,
``mean`` the attention-masked mean (``graphs.embed``).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import time
from typing import Dict, List

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def turns_of(task: str, split: str, dialogues: int) -> List:
    if task == "expedition":
        from parlai_docgraph.tasks.docgraph.expedition import ExpeditionConfig, generate

        config = ExpeditionConfig(dialogues=dialogues, eval_dialogues=max(dialogues // 4, 40))
    else:
        from parlai_docgraph.tasks.docgraph.synthetic import SyntheticConfig, generate

        config = SyntheticConfig(dialogues=dialogues, eval_dialogues=max(dialogues // 4, 40))
    return [t for d in generate(config, split) for t in d]


def pooled(texts_a: List[str], texts_b: List[str], encoder, tokenizer) -> Dict[str, torch.Tensor]:
    """Frozen Eq. 1 vectors of the pairs ``[a; b]``: first token and masked mean."""
    from parlai_docgraph.models.selector.common import pool_tokens

    out: Dict[str, List] = {"cls": [], "mean": []}
    with torch.no_grad():
        for i in range(0, len(texts_a), 128):
            enc = tokenizer(texts_a[i:i + 128], texts_b[i:i + 128], padding=True,
                            truncation=True, max_length=256, return_tensors="pt")
            hidden = encoder(**enc).last_hidden_state
            for mode in out:
                out[mode].append(pool_tokens(hidden, enc["attention_mask"], mode))
    return {k: torch.cat(v) for k, v in out.items()}


def prepare(task: str, dialogues: int, pool: str, cache_dir: str) -> Dict[str, List]:
    """Per split, per turn: graph tensors, node features, candidate nodes, contexts, gold."""
    path = os.path.join(cache_dir, f"{task}-{dialogues}-v3.pt")
    if os.path.exists(path):
        data = torch.load(path, weights_only=False)
        return {split: [dict(r, x=r["x_" + pool], context=r["context_" + pool]) for r in rows]
                for split, rows in data.items()}
    from parlai_docgraph.models.selector.provider import GraphProvider
    from parlai_docgraph.models.encoders import load_encoder
    from parlai_docgraph.graphs.config import GraphConfig
    from parlai_docgraph.graphs.embed import embed_graph
    from parlai_docgraph.models.selector.dialog_aware import concept_labels

    from parlai_docgraph.models.selector.prior import last_turn
    from parlai_docgraph.models.selector.relevance import node_relevance

    encoder, tokenizer = load_encoder("minilm-l6")
    encoder.eval()
    provider = GraphProvider(GraphConfig(), encoder, tokenizer, None)
    data: Dict[str, List] = {}
    for split in ("train", "test"):
        rows = []
        for turn in turns_of(task, split, dialogues):
            eg = provider.get(turn.passages)
            x = {"cls": eg.x}
            x["mean"] = torch.cat([embed_graph(eg.graph, encoder, tokenizer,
                                               pooling="mean").vectors, eg.x[-1:]])
            lines = [f"{t} {s}" for t, ss in turn.passages for s in ss]
            flat = [(p, s) for p, (_, ss) in enumerate(turn.passages) for s in range(len(ss))]
            gold = flat.index(tuple(turn.gold))
            ctx = pooled(lines, [turn.text] * len(lines), encoder, tokenizer)
            lab = concept_labels(eg.graph, [gold])
            question = provider.question_vectors([last_turn(turn.text)])[0]
            rows.append(dict(
                x_cls=x["cls"], x_mean=x["mean"], edge_index=eg.tensors["edge_index"], node_type=eg.tensors["node_type"],
                edge_type=eg.tensors["edge_type"], cand_node=eg.sentence_node.clone(),
                context_cls=ctx["cls"], context_mean=ctx["mean"], gold=gold, concept_index=eg.concept_node.clone(),
                concept_label=torch.tensor([lab.get(i, 0.0) for i in eg.concept_node.tolist()]),
                relevance=node_relevance(eg.unit_x, question)))
        data[split] = rows
    os.makedirs(cache_dir, exist_ok=True)
    torch.save(data, path)
    return prepare(task, dialogues, pool, cache_dir)


def collate(rows: List[Dict]) -> Dict:
    keys = ("x", "edge_index", "node_type", "edge_type", "cand_node", "concept_index",
            "relevance")
    out = {k: [] for k in keys}
    c2e, ctx, gold, labels = [], [], [], []
    offset = 0
    for b, r in enumerate(rows):
        out["x"].append(r["x"])
        out["edge_index"].append(r["edge_index"] + offset)
        out["node_type"].append(r["node_type"])
        out["edge_type"].append(r["edge_type"])
        out["cand_node"].append(r["cand_node"] + offset)
        out["concept_index"].append(r["concept_index"] + offset)
        out["relevance"].append(r["relevance"])
        labels.append(r["concept_label"])
        c2e.append(torch.full((r["cand_node"].numel(),), b, dtype=torch.long))
        ctx.append(r["context"])
        gold.append(r["gold"])
        offset += r["x"].size(0)
    batch = {k: torch.cat(v, dim=1 if k == "edge_index" else 0) for k, v in out.items()}
    batch.update(cand2example=torch.cat(c2e), context=torch.cat(ctx),
                 gold=torch.tensor(gold), num_examples=len(rows))
    return batch, torch.cat(labels)


def run(data, variant: str, negatives: int, steps: int, lr: float, seed: int,
        relevance: bool = False) -> float:
    from parlai_docgraph.models.selector.dialog_aware import DialogAwareSelector

    torch.manual_seed(seed)
    rng = random.Random(seed)
    dim = data["train"][0]["x"].size(1)
    model = DialogAwareSelector(dim, dim, variant=variant, num_negatives=negatives,
                                relevance=relevance)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    train = data["train"]
    model.train()
    for _ in range(steps):
        batch, labels = collate(rng.sample(train, 16))
        out = model(**batch, generator=gen)
        loss, _ = model.loss(out, labels if model.use_concepts else None)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return accuracy(model, data["test"]), accuracy(model, train[:len(data["test"])])


def accuracy(model, rows: List[Dict]) -> float:
    """P@1 of ``model`` over ``rows`` (all candidates ranked)."""
    from parlai_docgraph.models.selector.common import rank_candidates

    correct = 0
    with torch.no_grad():
        for i in range(0, len(rows), 64):
            chunk = rows[i:i + 64]
            batch, _ = collate(chunk)
            batch.pop("gold")
            ranked = rank_candidates(model(**batch))
            correct += sum(int(r[0]) == row["gold"] for r, row in zip(ranked, chunk))
    return correct / len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="expedition", choices=["expedition", "synthetic"])
    parser.add_argument("--dialogues", type=int, default=100)
    parser.add_argument("--pool", default="cls,mean")
    parser.add_argument("--variants", default="full,none")
    parser.add_argument("--negatives", default="5")
    parser.add_argument("--lr", default="2e-3")
    parser.add_argument("--steps", default="300")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--relevance", default="false",
                        help="comma-separated true/false: --node-relevance of the model")
    parser.add_argument("--cache-dir", default="/tmp/graph_probe")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for pool in args.pool.split(","):
        data = prepare(args.task, args.dialogues, pool, args.cache_dir)
        grid = itertools.product(args.variants.split(","), args.negatives.split(","),
                                 args.lr.split(","), args.relevance.split(","),
                                 args.steps.split(","))
        for variant, k, lr, rel, steps in grid:
            start = time.time()
            accs = [run(data, variant, int(k), int(steps), float(lr), int(s), rel == "true")
                    for s in args.seeds.split(",")]
            print(f"task={args.task} pool={pool} variant={variant} negatives={k} "
                  f"relevance={rel} lr={lr} steps={steps} seeds={args.seeds} test_acc="
                  f"{' '.join(f'{a:.3f}' for a, _ in accs)} train_acc="
                  f"{' '.join(f'{b:.3f}' for _, b in accs)} "
                  f"({time.time() - start:.0f}s)", flush=True)


if __name__ == "__main__":
    main()
