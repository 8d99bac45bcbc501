"""
Full-size model families on CPU, registered as the ``families`` benchmark of
``parlai-docgraph bench``: what one training step of each model the paper recipes name
costs, so a user can size a GPU before downloading anything.

Each family is built from its published configuration with random weights (no download:
the shapes, not the values, set the cost) and trained for a few AdamW steps through this
project's own code path, on random token ids of the recipes' sequence lengths:

============== ====================================== ==============================================
name           config                                 one step (``--quick``: smaller, no Qwen)
============== ====================================== ==============================================
roberta-base   125M, 12 x 768, positions 514          selector encoder, 8 pairs x 256 tokens (Li Eq. 1,
                                                      ``--pair-truncate 256``), first-token score, backward
bert-base      110M, 12 x 768 (bert-base-uncased)     same as roberta-base
gpt2           124M, 12 x 768, n_positions 1024       responder, 4 x 286 tokens (``--responder-max-length``):
                                                      knowledge 128 + context 128 + 2 separators, 28 reply
t5-small       60M, 6 + 6 x 512                       DialogGSR, 8 x (256 source -> 64 target)
qwen-0.5b      494M, 24 x 896, GQA 14/2, vocab 151936 decoder-only DialogGSR, 2 x (256 source -> 64
               (Qwen2.5-0.5B's shape, tied embedding) target)
============== ====================================== ==============================================

Figures per family: ``params_m`` (millions), ``s_per_step`` (median of the measured steps
after one warm-up step), ``peak_rss_gb`` (the child process's peak resident memory less its
resident memory before the model was built: weights, gradients, AdamW's two moments and the
activations of one step, fp32), ``weights_gb`` (fp32 parameters alone) and
``s_per_step_vs_bert`` (the step time over bert-base's, measured in the same run),
``optimizer`` (AdamW, or SGD with ``--optimizer sgd`` where memory is short) and
``adamw_state_gb`` (computed, not measured: AdamW's two fp32 moments, 8 bytes per
parameter, what an SGD figure lacks). Each
family runs in its own spawned process so peaks do not mix. A GPU step in fp32 needs about
``peak_rss_gb`` of device memory (``--fp16`` / bf16 weights halve the weights part, AdamW's
moments stay fp32).

Run: ``parlai-docgraph bench --only families [--quick]`` or
``python -m parlai_docgraph.bench.families [--quick] [--only gpt2,t5-small]``.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import resource
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.bench.cli import register_benchmark

GB = 1024 ** 3
#: name -> (sequence shapes (full), shapes (quick)); a shape is (batch, source, target)
WORKLOADS: Dict[str, Tuple[Tuple[int, int, int], Optional[Tuple[int, int, int]]]] = {
    "roberta-base": ((8, 256, 0), (4, 128, 0)),
    "bert-base": ((8, 256, 0), (4, 128, 0)),
    "gpt2": ((4, 258, 28), (2, 100, 28)),
    "t5-small": ((8, 256, 64), (2, 128, 32)),
    "qwen-0.5b": ((2, 256, 64), None),
}


def config(name: str) -> Any:
    """The published configuration of ``name`` (written out: nothing is downloaded)."""
    import transformers as tf

    if name == "roberta-base":
        return tf.RobertaConfig(vocab_size=50265, hidden_size=768, num_hidden_layers=12,
                                num_attention_heads=12, intermediate_size=3072,
                                max_position_embeddings=514, type_vocab_size=1, pad_token_id=1,
                                bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5)
    if name == "bert-base":
        return tf.BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12,
                             num_attention_heads=12, intermediate_size=3072,
                             max_position_embeddings=512, type_vocab_size=2, pad_token_id=0)
    if name == "gpt2":
        return tf.GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12,
                             n_head=12, bos_token_id=50256, eos_token_id=50256)
    if name == "t5-small":
        return tf.T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6,
                           num_decoder_layers=6, num_heads=8, feed_forward_proj="relu",
                           pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
                           tie_word_embeddings=True)
    if name == "qwen-0.5b":
        return tf.Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                              num_hidden_layers=24, num_attention_heads=14,
                              num_key_value_heads=2, max_position_embeddings=32768,
                              rope_theta=1000000.0, tie_word_embeddings=True,
                              eos_token_id=151643, pad_token_id=151643)
    raise ValueError(f"unknown family {name!r}; known: {sorted(WORKLOADS)}")


def _rss_now() -> int:
    """Resident bytes of this process now (Linux ``/proc``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def _step_fn(name: str, shape: Tuple[int, int, int], seed: int = 0) -> Tuple[Any, Callable[[], Any]]:
    """``(model, loss_fn)``: the project's module for ``name`` and one step's loss on random ids."""
    import torch

    from parlai_docgraph.models import hub
    from parlai_docgraph.models.gsr.build import build_gsr_model
    from parlai_docgraph.models.responder.model import Responder

    torch.manual_seed(seed)
    cfg = config(name)
    bsz, src_len, tgt_len = shape
    vocab = cfg.vocab_size
    gen = torch.Generator().manual_seed(seed)

    def ids(n: int) -> List[List[int]]:
        return torch.randint(5, vocab - 1, (bsz, n), generator=gen).tolist()

    if name in ("roberta-base", "bert-base"):
        encoder = hub.model_from_config(cfg, "encoder", seed=seed)  # without its pooler
        head = torch.nn.Linear(cfg.hidden_size, 1)
        model = torch.nn.ModuleDict({"encoder": encoder, "head": head})
        batch = torch.tensor(ids(src_len))
        first = 0 if name == "roberta-base" else 101
        batch[:, 0] = first  # <s> / [CLS]: the vector the selector scores
        mask = torch.ones_like(batch)

        def loss() -> Any:
            hidden = encoder(input_ids=batch, attention_mask=mask).last_hidden_state[:, 0]
            return torch.nn.functional.cross_entropy(head(hidden).view(1, -1), torch.zeros(1, dtype=torch.long))

        return model, loss
    if name == "gpt2":
        lm = hub.model_from_config(cfg, "causal", seed=seed)
        model = Responder(lm, eos_id=cfg.eos_token_id)
        prompts, targets = ids(src_len), ids(tgt_len)

        def loss() -> Any:
            per_token, _, tmask, _ = model.token_losses(prompts, targets)
            return per_token.sum() / tmask.sum()

        return model, loss
    lm = hub.model_from_config(cfg, "lm", seed=seed)  # causal or seq2seq, as the config says
    tok = _FakeTokenizer(cfg)
    model = build_gsr_model(lm, tok, ())
    sources, targets = ids(src_len), ids(tgt_len)

    def loss() -> Any:
        per_token, _, notnull, _ = model.token_losses(sources, targets)
        return per_token.sum() / notnull.sum()

    return model, loss


class _FakeTokenizer:
    """What :func:`build_gsr_model` reads of a tokenizer, for a config without one."""

    def __init__(self, cfg: Any) -> None:
        self.pad_token_id = cfg.pad_token_id
        self.eos_token_id = cfg.eos_token_id
        self._n = cfg.vocab_size

    def __len__(self) -> int:
        return self._n

    def convert_tokens_to_ids(self, tokens: Sequence[str]) -> List[int]:
        return [self.eos_token_id for _ in tokens]


def measure(name: str, quick: bool, steps: int, threads: int, optimizer: str = "adamw"
            ) -> Dict[str, Any]:
    """One family's figures (run in a fresh process: see :func:`family_benchmark`)."""
    import torch

    torch.set_num_threads(threads)
    shape = WORKLOADS[name][1 if quick else 0]
    before = _rss_now()
    model, loss_fn = _step_fn(name, shape)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    if optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    else:  # sgd: no optimizer state, for a machine without room for AdamW's two moments
        opt = torch.optim.SGD(model.parameters(), lr=1e-5)
    times = []
    for _ in range(steps + 1):  # the first step (allocations, AdamW state) is a warm-up
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
    if not torch.isfinite(loss.detach()):
        raise RuntimeError(f"{name}: non-finite loss")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return {
        "shape": {"batch": shape[0], "source": shape[1], "target": shape[2]},
        "params_m": round(params / 1e6, 1),
        "weights_gb": round(params * 4 / GB, 2),
        "optimizer": optimizer,
        "adamw_state_gb": round(params * 8 / GB, 2),  # computed: two fp32 moments
        "s_per_step": round(statistics.median(times[1:]), 2),
        "peak_rss_gb": round((peak - before) / GB, 2),
    }


def _child(name: str, quick: bool, steps: int, threads: int, queue: Any,
           optimizer: str = "adamw") -> None:
    try:
        queue.put(measure(name, quick, steps, threads, optimizer))
    except BaseException as err:  # reported by the parent, which goes on with the others
        queue.put({"error": f"{type(err).__name__}: {err}"})


def family_benchmark(quick: bool = False, names: Optional[Sequence[str]] = None,
                     steps: Optional[int] = None, threads: Optional[int] = None,
                     optimizer: str = "adamw") -> Dict[str, Any]:
    """``{family: figures}`` plus ``threads``; each family in its own spawned process."""
    import torch

    names = [n for n in (names or WORKLOADS) if not quick or WORKLOADS[n][1] is not None]
    steps = steps or (1 if quick else 2)
    threads = threads or torch.get_num_threads()
    ctx = mp.get_context("spawn")
    out: Dict[str, Any] = {}
    for name in names:
        queue = ctx.Queue()
        proc = ctx.Process(target=_child, args=(name, quick, steps, threads, queue, optimizer))
        proc.start()
        while proc.is_alive() and queue.empty():
            proc.join(timeout=1.0)
        try:
            out[name] = queue.get(timeout=30)
        except Exception as err:  # the child died without a word (killed: out of memory)
            out[name] = {"error": f"no result ({type(err).__name__}); exit code {proc.exitcode}"}
        proc.join()
    base = out.get("bert-base", {}).get("s_per_step")
    for name, figures in out.items():
        if base and "s_per_step" in figures:
            figures["s_per_step_vs_bert"] = round(figures["s_per_step"] / base, 2)
    out["threads"] = threads
    out["steps_measured"] = steps
    return out


@register_benchmark("families")
def families_benchmark(quick: bool = False) -> Dict[str, Any]:
    """Seconds per training step and peak memory of each full-size family."""
    return family_benchmark(quick)


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter sequences, no Qwen, 1 step")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {list(WORKLOADS)}")
    parser.add_argument("--steps", type=int, default=None, help="measured steps (after a warm-up)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw",
                        help="sgd keeps no state: peak memory without AdamW's moments "
                        "(adamw_state_gb says what they add)")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or None
    # the package's copy, so spawned children unpickle their target from it
    from parlai_docgraph.bench.families import family_benchmark as run

    print(json.dumps(run(args.quick, names, args.steps, args.threads, args.optimizer), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
