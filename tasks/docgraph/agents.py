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
| ``docgraph:expedition[:topic_split|:random_split]`` | a second generated structure task: cross-passage coreference and narrative order (issue 17) |
| ``docgraph:docqa``                     | questions over whole documents (test: the held-out set of ``heldout_eval``) |
"""

from .docqa import DocqaTeacher
from .expedition import ExpeditionTeacher
from .holle import HolleTeacher
from .komodis import KomodisTeacher
from .opendialkg import OpendialkgTeacher, SampleKgTeacher
from .synthetic import SyntheticTeacher
from .wow import SampleTeacher, WowTeacher


class DefaultTeacher(SampleTeacher):
    pass


__all__ = ["DefaultTeacher", "SampleTeacher", "WowTeacher", "HolleTeacher", "KomodisTeacher", "OpendialkgTeacher", "SampleKgTeacher",
           "SyntheticTeacher", "ExpeditionTeacher", "DocqaTeacher"]
