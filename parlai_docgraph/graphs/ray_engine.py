"""
Graph precomputation on a Ray cluster (``build_graphs --engine ray [--address ADDR]``).

Ray (``pip install 'parlai-docgraph[ray]'``) schedules *tasks* that each build a chunk of
pools with a :class:`~.factory.GraphFactory` (backends loaded once per Ray worker process and
reused by later tasks) and return the graphs; the driver writes them into the
:class:`~.store.GraphStore` as they arrive (atomic, content-hash keyed: the same bytes as a
single-process build, and nothing depends on the workers sharing a file system). Resuming
after a kill is the store's: the caller only submits keys not stored yet.

Failures: an exception while building one pool is that pool's reported failure (it is
deterministic: retrying would fail again); a task that fails as a whole (worker crash,
node lost, out of memory, backend failing to load) is submitted again up to ``retries``
times, then each of its pools is reported failed with the reason, never silently missing.
With ``parse_cache`` in the factory's state each worker reads and fills the SQLite parse cache
at that path on its own machine (one cache per machine; one shared cache on a local cluster).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.memo import LRUMemo

RAY_MISSING = ("build_graphs --engine ray needs Ray: pip install 'parlai-docgraph[ray]' "
               "(or pip install 'ray>=2.60'), or use the default --engine pool")
Job = Tuple[str, Any]
#: per Ray worker process: factory state -> loaded factory (a worker serves one build)
_FACTORIES: LRUMemo[str, Any] = LRUMemo(2)


def _build_chunk(
    state: Dict[str, Any], chunk: Sequence[Job],
) -> List[Tuple[str, Any, Optional[str]]]:
    """(Ray task) ``(key, graph, None)`` or ``(key, None, reason)`` per pool of ``chunk``."""
    import json

    from parlai_docgraph.graphs.factory import GraphFactory

    # a backend that cannot load fails the task (retried, then reported)
    factory = _FACTORIES.get_or_make(json.dumps(state, sort_keys=True),
                                     lambda: GraphFactory.from_state(state).load())
    out: List[Tuple[str, Any, Optional[str]]] = []
    for key, passages in chunk:
        try:
            out.append((key, factory.build(passages), None))
        except Exception as exc:  # reported per pool; the other pools go on
            out.append((key, None, f"{type(exc).__name__}: {exc}"))
    return out


def build_with_ray(
    jobs: Dict[str, Any], state: Dict[str, Any], save: Callable[[str, Any], Any],
    address: Optional[str] = None, num_cpus: Optional[int] = None, chunk_size: int = 4,
    retries: int = 2, progress: bool = True,
) -> Tuple[Dict[str, Optional[str]], int]:
    """
    Build ``jobs`` (key -> passages) on Ray with the factory of ``state``
    (:meth:`~.factory.GraphFactory.state`); ``save(key, graph)`` stores each graph as it
    arrives. ``address``: a running cluster (``127.0.0.1:6379``, ``auto``, ``ray://...``),
    else a local Ray started with ``num_cpus`` CPUs and shut down at the end. Returns
    ``(key -> None or failure reason, number of task retries)``.
    """
    try:
        import ray
    except ImportError:
        raise RuntimeError(RAY_MISSING) from None
    from tqdm import tqdm

    results: Dict[str, Optional[str]] = {}
    if not jobs:
        return results, 0
    started = not ray.is_initialized()
    if started:
        kwargs: Dict[str, Any] = dict(include_dashboard=False, log_to_driver=False)
        if not address or _is_loopback(address):
            # a one-machine cluster talks over loopback only; without this Ray picks the
            # host's outward-facing address for the driver
            kwargs["_node_ip_address"] = "127.0.0.1"
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=num_cpus, **kwargs)
    retried = 0
    bar = tqdm(total=len(jobs), unit="doc", desc="build_graphs[ray]", disable=not progress,
               file=sys.stderr, dynamic_ncols=True, smoothing=0.1)
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(_build_chunk)
        items = list(jobs.items())
        chunks = [items[i:i + chunk_size] for i in range(0, len(items), chunk_size)]
        state_ref = ray.put(state)
        width = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        pending: Dict[Any, Tuple[List[Job], int]] = {}
        queue = [(c, 0) for c in chunks]
        while queue or pending:
            while queue and len(pending) < width:
                chunk, attempt = queue.pop(0)
                pending[task.remote(state_ref, chunk)] = (chunk, attempt)
            [ref], _ = ray.wait(list(pending), num_returns=1)
            chunk, attempt = pending.pop(ref)
            try:
                built = ray.get(ref)
            except Exception as exc:  # the task as a whole failed
                if attempt < retries:
                    retried += 1
                    queue.append((chunk, attempt + 1))
                    continue
                reason = f"task failed {attempt + 1} times: {type(exc).__name__}: {exc}"
                built = [(key, None, reason[:500]) for key, _ in chunk]
            for key, graph, error in built:
                if graph is not None:
                    save(key, graph)
                results[key] = error
                bar.update(1)
    finally:
        bar.close()
        if started:
            ray.shutdown()
    return results, retried


def _is_loopback(address: str) -> bool:
    """Whether ``address`` (``HOST:PORT``) names this machine's loopback interface."""
    host = address.rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")
