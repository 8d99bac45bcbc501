"""
The selector's training-speed ratio (``full`` / ``none``, MiniLM) measured two ways in one
process with the same two agents: steps interleaved (``bench.selector.train_rates``, what
``parlai-docgraph bench --only selector`` reports) and then a block-by-block
loop (all steps of one agent, then the other's). Prints one JSON line.

    OMP_NUM_THREADS=1 python -m parlai_docgraph.bench.train_speed_methods [--steps 6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time


def main(argv=None) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="timed steps per agent and method")
    args = parser.parse_args(argv)

    import torch

    from parlai_docgraph.bench.selector import (
        _observed, make_agent, train_messages, train_rates,
    )

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as datapath:
        messages = train_messages(datapath, 32)
        agents = {v: make_agent(v, datapath) for v in ("full", "none")}
        interleaved = train_rates(agents, messages, args.steps, 16)
        blocks = {}
        for name, agent in agents.items():
            batches = _observed(agent, messages, 16)
            times = []
            for step in range(args.steps):
                obs = batches[step % len(batches)]
                start = time.perf_counter()
                agent.batch_act(obs)
                times.append((time.perf_counter() - start) / len(obs))
            blocks[name] = 1 / statistics.mean(times)
    out = {"interleaved_rates": interleaved,
           "interleaved_ratio": interleaved["none"] / interleaved["full"],
           "block_rates": blocks, "block_ratio": blocks["none"] / blocks["full"]}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
