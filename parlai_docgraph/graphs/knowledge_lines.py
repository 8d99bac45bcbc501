"""
Knowledge pools as lines: the ``"{title} {sentence}"`` / ``"{title} __knowledge__
{sentence}"`` lines that Wizard of Wikipedia teachers write, back into ``(title,
[sentences])`` passages (:func:`passages_from_lines`), and candidate lines onto the
sentences of a pool (:func:`candidate_sentences`), and which candidates come from a document
the user's turn names (:func:`named_documents`). No ParlAI imports: the selector's message
reader (``agents/graph_selector/messages.py``) and the collation use it.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

KNOWLEDGE_SEPARATOR = "__knowledge__"
#: The package's one no-knowledge sentinel: the title and sentence of the candidate that says
#: "no knowledge used" (ParlAI's WoW ``TOKEN_NOCHOSEN``), also the multi-level graph's
#: no-passage topic and segment text.
NO_PASSAGE = "no_passages_used"
#: The no-knowledge candidate line, first among ParlAI's WoW ``label_candidates``.
NO_KNOWLEDGE_LINE = f"{NO_PASSAGE} {NO_PASSAGE}"
#: between a document's title and its section in a passage title (graphs/corpus.py)
SECTION_SEPARATOR = " / "

Passages = List[Tuple[str, List[str]]]


def _split_line(line: str, titles: Sequence[str]) -> Optional[Tuple[str, str]]:
    """``(title, sentence)`` of one knowledge line, ``None`` when it cannot be split exactly."""
    sep = f" {KNOWLEDGE_SEPARATOR} "
    if sep in line:
        title, sent = line.split(sep, 1)
        return title, sent
    for title in sorted((t for t in titles if t), key=len, reverse=True):
        if line.startswith(title + " "):
            return title, line[len(title) + 1:]
    return None


def _common_word_prefix(a: str, b: str) -> str:
    words = []
    for x, y in zip(a.split(" "), b.split(" ")):
        if x != y:
            break
        words.append(x)
    return " ".join(words)


def passages_from_lines(lines: Sequence[str], known_titles: Sequence[str] = ()) -> Passages:
    """
    Knowledge lines (``title [__knowledge__] sentence``) back into ``(title, [sentences])``
    passages, consecutive lines of one title forming one passage.

    With the separator the split is exact. Without it, a line starting with a known title
    (``chosen_topic``, ``title``) splits there; for any other run of lines the title is the
    longest word prefix its consecutive lines share (a passage of one sentence there keeps
    its first word as title). Such a guessed title only shapes the graph's passage nodes:
    every ``f"{title} {sentence}"`` still equals its line, so candidates map back exactly.
    ``--include-knowledge-separator true`` on ParlAI's teacher removes the guess.
    """
    rest = [line for line in lines if line.strip() and line.strip() != NO_KNOWLEDGE_LINE]
    rows: List[Optional[Tuple[str, str]]] = [_split_line(line, known_titles) for line in rest]
    i = 0
    while i < len(rows):  # guess titles of the unsplit runs
        if rows[i] is not None:
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j] is None:
            j += 1
        k = i
        while k < j:
            title = ""
            if k + 1 < j:
                title = _common_word_prefix(rest[k], rest[k + 1])
            if not title or title == rest[k]:
                title = rest[k].split(" ", 1)[0]
            end = k + 1
            while end < j and rest[end].startswith(title + " "):
                end += 1
            for m in range(k, end):
                rows[m] = (title, rest[m][len(title) + 1:])
            k = end
        i = j
    passages: Passages = []
    for title, sent in rows:  # type: ignore[misc]
        if passages and passages[-1][0] == title:
            passages[-1][1].append(sent)
        else:
            passages.append((title, [sent]))
    return passages


def candidate_sentences(passages: Passages, candidates: Sequence[str]) -> List[int]:
    """
    Global sentence index (over ``passages`` in order) of each candidate line
    (``"{title} {sentence}"`` or ``"{title} __knowledge__ {sentence}"``, as the WoW teachers
    write knowledge lines), -1 for a candidate that is no knowledge sentence
    (``no_passages_used``). A line that occurs twice maps to its first sentence.
    """
    lookup: Dict[str, int] = {}
    g = 0
    for title, sents in passages:
        for sent in sents:
            for line in (f"{title} {sent}", f"{title} {KNOWLEDGE_SEPARATOR} {sent}"):
                lookup.setdefault(line.strip(), g)
            g += 1
    return [lookup.get(c.strip(), -1) for c in candidates]


def candidate_sentence_text(candidate: str, passages: Passages) -> str:
    """The sentence part of a candidate line (its title cut off), or the line itself."""
    index = candidate_sentences(passages, [candidate])[0]
    if index >= 0:
        flat = [s for _, sents in passages for s in sents]
        return flat[index]
    split = _split_line(candidate, [t for t, _ in passages])
    return split[1] if split else candidate


def candidate_titles(passages: Passages, candidates: Sequence[str]) -> List[str]:
    """The passage title of each candidate line (:func:`candidate_sentences`), or
    :data:`NO_PASSAGE` for a line that is no sentence of ``passages``."""
    titles = [t for t, sents in passages for _ in sents]
    return [titles[i] if i >= 0 else NO_PASSAGE
            for i in candidate_sentences(passages, candidates)]


def title_terms(text: str) -> Set[str]:
    """The Snowball stems of the words of ``text`` (bm25s's ``\\w\\w+`` tokens, lower-cased)
    that are not spaCy English stop words."""
    import bm25s

    from parlai_docgraph.graphs.retrievers import _stemmer
    from parlai_docgraph.nlp import english_stop_words

    return set(bm25s.tokenize([text], stopwords=sorted(english_stop_words()),
                              stemmer=_stemmer(), return_ids=False, show_progress=False)[0])


def named_documents(turn: str, titles: Sequence[str]) -> List[bool]:
    """
    Per candidate (given by its passage title, ``"Document / Section"``), whether ``turn``
    names its document: of the documents among ``titles``, those whose title (its part
    before :data:`SECTION_SEPARATOR`) shares the most terms with the turn (terms:
    lower-cased words without spaCy's English stop words, "how", "what", ...,
    Snowball-stemmed), when that is at least one and not every document does: "the 2025
    edition" names "Lending Policy, 2025 Edition" (two terms) over "Lending Policy, 2023
    Edition" (one), "the R7" the R7's guide. All ``False`` when the candidates come from
    one document or the turn names none.
    """
    docs = [t.split(SECTION_SEPARATOR)[0] if t != NO_PASSAGE else "" for t in titles]
    asked = title_terms(turn)
    found = {d: len(title_terms(d) & asked) for d in set(docs) if d}
    best = max(found.values(), default=0)
    named = {d for d, n in found.items() if n == best}
    if best == 0 or len(named) == len(found):
        return [False] * len(titles)
    return [d in named for d in docs]
