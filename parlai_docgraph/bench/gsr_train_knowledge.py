"""
Seconds per DialogGSR training update (``batch_act``, stage ``all``, bs 8, the bundled tiny
T5, ``docgraph:sample_kg``) with ``--gsr-train-knowledge gold`` against ``retrieved`` (one
constrained retrieval per batch), interleaved in the same run; prints both and their ratio.

    python -m parlai_docgraph.bench.gsr_train_knowledge
"""
import tempfile
import time

import torch
from parlai.core.agents import create_agent
from parlai.core.params import ParlaiParser
from parlai.core.teachers import create_task_agent_from_taskname


def agent_for(mode: str, dp: str):
    opt = ParlaiParser(True, True).parse_args(
        ["-m", "docgraph/gsr", "--gsr-model", "tiny", "-t", "docgraph:sample_kg", "--datapath", dp,
         "--gsr-stage", "all", "--gsr-train-knowledge", mode, "-bs", "8", "-dt", "train:ordered"])
    return create_agent(opt), opt


def main() -> None:
    """Both agents on the same 32 examples, steps interleaved; prints s/step and the ratio."""
    torch.set_num_threads(1)
    dp = tempfile.mkdtemp()
    agents, opt = {}, None
    for mode in ("gold", "retrieved"):
        agents[mode], opt = agent_for(mode, dp)
    teacher = create_task_agent_from_taskname(opt)[0]
    acts = [teacher.act() for _ in range(32)]
    times = {m: 0.0 for m in agents}
    steps = 0
    for rep in range(2):
        for i in range(0, 32, 8):
            steps += 1
            for mode, agent in agents.items():
                obs = []
                for a in acts[i:i + 8]:
                    obs.append(agent.observe(dict(a, episode_done=True)))
                    agent.self_observe({})
                t = time.perf_counter()
                agent.batch_act(obs)  # labelled: batchify + one training update
                times[mode] += time.perf_counter() - t
    for m in times:
        print(f"{m}: {times[m] / steps:.3f} s/step over {steps} steps")
    print(f"ratio retrieved/gold: {times['retrieved'] / times['gold']:.2f}")


if __name__ == "__main__":
    main()
