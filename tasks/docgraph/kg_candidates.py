"""
DialogGSR's per-turn candidate subgraph on KG-grounded teachers (OpenDialKG, KOMODIS).

Candidates are computed when an example is served, from the turns before the response
(``kg_history``) only: OpenDialKG's ~91k turns x ~100 paths would not fit in memory, and
computing them all at start-up would take many minutes.
"""

from __future__ import annotations

from typing import Any, Tuple

from parlai.core.opt import Opt

from parlai_docgraph.kg import fields as kg_fields


def add_kg_candidate_args(group) -> None:
    """Options of the per-turn candidate subgraph (shared with the KOMODIS teacher)."""
    group.add_argument(
        "--kg-candidates", type="bool", default=True,
        help="attach DialogGSR's per-turn candidate paths (k-hop ego graph of the entities "
        "linked in the history only), Katz scores and the gold path index to each message",
    )
    group.add_argument("--kg-hops", type=int, default=2, help="K: longest candidate path, in hops")
    group.add_argument(
        "--kg-katz-beta", type=float, default=kg_fields.DEFAULT_BETA,
        help="beta of the Katz scores put on the message (Eq. 6)",
    )
    group.add_argument(
        "--kg-max-paths-per-entity", type=int, default=100,
        help="candidate paths per mentioned entity and hop count",
    )
    group.add_argument(
        "--kg-max-per-relation", type=int, default=10,
        help="neighbours kept per (entity, relation) when expanding",
    )


def kg_candidate_kwargs(opt: Opt) -> dict:
    return dict(
        hops=int(opt["kg_hops"]),
        beta=float(opt["kg_katz_beta"]),
        max_paths_per_entity=int(opt["kg_max_paths_per_entity"]),
        max_per_relation=int(opt["kg_max_per_relation"]),
    )


class KgCandidatesMixin:
    """
    Adds ``kg_candidates``, ``kg_katz``, ``kg_gold_index``, ... (see
    :func:`parlai_docgraph.kg.fields.candidate_fields`) to every served message that has a
    ``kg_history``; subclasses say which KG and linker a message uses (:meth:`turn_kg`)
    and set ``kg_candidates`` (bool) and ``kg_kwargs`` (:func:`kg_candidate_kwargs`).
    """

    kg_candidates: bool = True
    kg_kwargs: dict = {}

    def turn_kg(self, msg: Any) -> Tuple[Any, Any]:
        """``(KnowledgeGraph, EntityLinker)`` of ``msg``'s turn."""
        raise NotImplementedError

    def with_candidates(self, msg: Any) -> Any:
        """``msg`` plus its turn's candidate fields (nothing of the response is used)."""
        if not self.kg_candidates or "kg_history" not in msg or "kg_candidates" in msg:
            return msg
        kg, linker = self.turn_kg(msg)
        gold = [kg_fields.json_to_path(p) for p in msg["kg_gold_paths"]]
        msg.update(kg_fields.candidate_fields(kg, linker, msg["kg_history"], gold, **self.kg_kwargs))
        return msg

    def get(self, episode_idx: int, entry_idx: int = 0):
        return self.with_candidates(super().get(episode_idx, entry_idx))

    def next_example(self):
        action, epoch_done = super().next_example()  # stream mode bypasses get()
        return self.with_candidates(action), epoch_done
