"""
The Holl-E knowledge pool of a chat (plot, review, comments, fact table) and the gold
sentence of a response in it (see :mod:`.holle` for the conversion rules).
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.tasks.docgraph.readers.holle_spans import PUNCS_RE, SpanMatch, match_span
from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE
from parlai_docgraph.tasks.docgraph.readers.turns import Passage

#: ``labels`` value -> source passage title; 4 means no knowledge
LABEL_SOURCES: Dict[int, str] = {0: "plot", 1: "review", 2: "comments", 3: "fact_table"}
NO_KNOWLEDGE_LABEL = 4
#: pool order
SOURCES = ("plot", "review", "comments", "fact_table")

_WS_RE = re.compile(r"\s+")


def clean_pool_text(text: str) -> str:
    return _WS_RE.sub(" ", text).strip()


def _unique(items: Sequence[str]) -> List[str]:
    seen, out = set(), []
    for item in items:
        item = clean_pool_text(item)
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _valid_spacy_sentence(sent: str) -> bool:
    return len(PUNCS_RE.sub("", sent).strip()) > 1


def fact_table_items(fact_table: dict) -> List[str]:
    """
    awards + taglines + similar_movies + box_office, SKT's ``_extract_fact_table``.
    """
    if len(fact_table) == 2:
        return []
    items: List[str] = []
    for key in ("awards", "taglines", "similar_movies"):
        items += [x for x in fact_table[key] if len(x) > 0]
    box_office = fact_table.get("box_office")
    if isinstance(box_office, str) and box_office:
        items.append(box_office)
    return items


def build_pool(documents: dict, splitter: Callable[[str], List[str]]) -> List[Passage]:
    """
    The knowledge pool of a chat: plot, review, comments, fact_table passages.
    """
    raw = {
        "plot": [s for s in splitter(documents["plot"]) if _valid_spacy_sentence(s)],
        "review": [s for s in splitter(documents["review"]) if _valid_spacy_sentence(s)],
        "comments": list(documents["comments"]),
        "fact_table": fact_table_items(documents["fact_table"]),
    }
    pool: List[Passage] = []
    for title in SOURCES:
        sents = _unique(raw[title])
        if sents:
            pool.append((title, sents))
    return pool


def _merge_run(pool: List[Passage], match: SpanMatch) -> Tuple[List[Passage], int]:
    """
    Replace the sentences of a run by one joined sentence; return the new pool and index.
    """
    title, sents = pool[match.passage]
    joined = " ".join(sents[match.start : match.end])
    merged = sents[: match.start] + [joined] + sents[match.end :]
    out = list(pool)
    out[match.passage] = (title, merged)
    return out, match.start


def resolve_gold(
    pool: List[Passage], label: int, span: str, response: str
) -> Tuple[List[Passage], str, str, Optional[Tuple[int, int]], str]:
    """
    Return ``(pool, title, checked_sentence, gold, kind)`` for one response.

    ``pool`` differs from the input only when the span is a run of sentences.
    """
    if label == NO_KNOWLEDGE_LABEL:
        return pool, NO_PASSAGE, NO_PASSAGE, None, "none"
    source = LABEL_SOURCES[label]
    index = next((p for p, (t, _) in enumerate(pool) if t == source), None)
    if index is None:
        return pool, source, clean_pool_text(span), None, "unmatched"
    sub = [pool[index]]
    match = match_span(span, response, sub)
    if match.kind == "unmatched":
        return pool, source, clean_pool_text(span), None, "unmatched"
    match = SpanMatch(match.kind, index, match.start, match.end)
    if match.end - match.start > 1:
        pool, s = _merge_run(pool, match)
    else:
        s = match.start
    return pool, source, pool[index][1][s], (index, s), match.kind
