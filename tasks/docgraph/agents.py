"""
ParlAI teachers of the ``docgraph`` task family (``-t docgraph:<teacher>[:options]``).

| task                                   | teacher           |
|----------------------------------------|-------------------|
| ``docgraph`` / ``docgraph:sample``     | bundled WoW-format sample (offline default) |
| ``docgraph:wow[:random_split|:topic_split]`` | Wizard of Wikipedia (seen / unseen) |
| ``docgraph:holle[:multi]``             | Holl-E, SKT-style gold sentences (``:multi``: multi-reference test) |
| ``docgraph:komodis``                   | KOMODIS with facts, attitudes and per-dialogue KG |
| ``docgraph:opendialkg``                | OpenDialKG with gold KG paths (DialogGSR's seed-42 split) |
| ``docgraph:sample_kg``                 | bundled OpenDialKG-format sample (offline) |
| ``docgraph:synthetic[:topic_split|:random_split]`` | generated structure-only knowledge selection (unseen / seen people in valid/test) |
| ``docgraph:expedition[:topic_split|:random_split]`` | a second generated structure task: cross-passage coreference and narrative order |
| ``docgraph:docqa``                     | questions over whole documents (test: the held-out set of ``heldout_eval``) |
| ``docgraph:cmu_dog``                   | CMU_DoG (ParlAI's ``cmu_dog`` files) with pools, pseudo knowledge labels and graph fields |
"""

from parlai_docgraph.tasks.docgraph.cmu_dog import CmuDogTeacher
from parlai_docgraph.tasks.docgraph.docqa import DocqaTeacher
from parlai_docgraph.tasks.docgraph.expedition import ExpeditionTeacher
from parlai_docgraph.tasks.docgraph.holle import HolleTeacher
from parlai_docgraph.tasks.docgraph.komodis import KomodisTeacher
from parlai_docgraph.tasks.docgraph.opendialkg import OpendialkgTeacher, SampleKgTeacher
from parlai_docgraph.tasks.docgraph.synthetic import SyntheticTeacher
from parlai_docgraph.tasks.docgraph.wow import SampleTeacher, WowTeacher


class DefaultTeacher(SampleTeacher):
    pass


__all__ = ["DefaultTeacher", "SampleTeacher", "WowTeacher", "HolleTeacher", "KomodisTeacher", "OpendialkgTeacher", "SampleKgTeacher",
           "SyntheticTeacher", "ExpeditionTeacher", "DocqaTeacher", "CmuDogTeacher"]
