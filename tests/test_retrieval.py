"""
Retrieve, then graph (:mod:`parlai_docgraph.graphs.retrieval`): ``--documents`` as files,
folders and globs; the passage index (BM25), its on-disk cache keyed by content, the turn's
pool within the sentence budget, small documents kept whole; language notes and Chinese
sentence splitting.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from parlai_docgraph.graphs.corpus import (
    document_paths, read_document, split_sentences,
)
from parlai_docgraph.graphs.retrieval import DocumentIndex, window_passages

OWLS = """# Owls

Owls hunt at night. They swallow their prey whole and cough up pellets.

## Ears

An owl's ears sit at different heights, so it can tell where a sound comes from.
"""
TRAMS = """# Lisbon trams

Tram 28 climbs through the old quarters of Lisbon. It is crowded in summer.

## Tickets

A single ticket bought on board costs three euros. A day pass is cheaper for four rides.
"""
FILLER = "\n\n".join(
    f"## Chapter {i}\n\nThe {w} committee met on day {i}. It discussed the {w} budget."
    for i, w in enumerate(["garden", "harbour", "museum", "library", "school", "bridge",
                           "market", "theatre", "station", "river"]))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "owls.md").write_text(OWLS, encoding="utf-8")
    (tmp_path / "docs" / "sub" / "trams.txt").write_text(TRAMS, encoding="utf-8")
    (tmp_path / "docs" / "sub" / "image.png").write_bytes(b"\x89PNG")
    (tmp_path / "docs" / "minutes.md").write_text(FILLER, encoding="utf-8")
    return tmp_path / "docs"


def test_documents_are_files_folders_and_globs(folder: Path):
    files, problems = document_paths([str(folder)])
    assert [Path(f).name for f in files] == ["minutes.md", "owls.md", "trams.txt"]
    assert problems == []
    files, problems = document_paths([str(folder / "*.md"), str(folder / "owls.md"),
                                      str(folder / "nope*.md"), str(folder / "missing.md")])
    assert [Path(f).name for f in files] == ["minutes.md", "owls.md"]  # each file once
    assert any("no file matches" in p and "nope*.md" in p for p in problems)
    assert any("document not found" in p and "missing.md" in p for p in problems)
    index = DocumentIndex(cache_root=None, progress=False)
    assert index.load([str(folder / "**" / "*.txt")]) == []
    # a passage's title names its document, then its section
    assert [t for t, _ in index.whole] == ["Lisbon trams", "Lisbon trams / Tickets"]


def test_long_paragraphs_are_cut_into_passages():
    pool = [("A", [f"s{i}." for i in range(7)]), ("B", ["t."])]
    assert window_passages(pool, 3) == [("A", ["s0.", "s1.", "s2."]), ("A", ["s3.", "s4.", "s5."]),
                                        ("A", ["s6."]), ("B", ["t."])]
    assert window_passages(pool, 0) == pool


def test_small_documents_keep_every_passage_uncut(folder: Path):
    index = DocumentIndex(cache_root=None, max_passage_sentences=1, progress=False)
    assert index.add([str(folder / "owls.md")]) == []
    assert index.num_sentences == 3 and len(index.passages) == 3
    assert index.retrieve(["where do trams go?"], budget=40) == read_document(
        str(folder / "owls.md"))


def test_turn_pool_is_the_best_passages_in_document_order(folder: Path):
    index = DocumentIndex(cache_root=None, progress=False)
    files, _ = document_paths([str(folder)])
    index.add(files)
    assert index.num_sentences == 27
    pool = index.retrieve(["How much is a ticket for the tram?"], budget=4)
    sentences = [s for _, ss in pool for s in ss]
    assert "A single ticket bought on board costs three euros." in sentences
    assert sum(len(ss) for _, ss in pool) <= 4
    order = [index.passages.index((t, ss)) for t, ss in pool]
    assert order == sorted(order)  # document order, for narrative edges and coreference
    # a follow-up that shares no word with any passage keeps the previous turn's pool
    assert index.retrieve(["How much is a ticket for the tram?", "three euros", "why?"],
                          budget=4) == pool
    # the dialogue's earlier turns count: an ambiguous turn leans to the topic of the chat
    owl_pool = index.retrieve(["Do owls hunt at night?", "Owls hunt at night.",
                               "and where does the sound come from?"], budget=4)
    assert any("different heights" in s for _, ss in owl_pool for s in ss)


def test_the_index_cache_is_keyed_by_content_and_survives_damage(folder: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    first = DocumentIndex(cache_root=cache, progress=False)
    first.add([str(folder / "owls.md")])
    assert not first.documents[0].cached
    renamed = tmp_path / "renamed.md"
    renamed.write_text(OWLS, encoding="utf-8")
    again = DocumentIndex(cache_root=cache, progress=False)
    again.add([str(renamed)])
    assert again.documents[0].cached and again.passages == first.passages
    entries = list(cache.rglob("*.json"))
    assert len(entries) == 1 and "documents-v" in entries[0].parent.name
    entries[0].write_text('{"lang": "en", "passages": [', encoding="utf-8")  # torn write
    third = DocumentIndex(cache_root=cache, progress=False)
    third.add([str(folder / "owls.md")])
    assert not third.documents[0].cached and third.passages == first.passages
    # the cache keeps the reader's passages; the window size applies after it
    other = DocumentIndex(cache_root=cache, max_passage_sentences=1, progress=False)
    other.add([str(folder / "owls.md")])
    assert other.documents[0].cached and len(other.passages) == 3
    assert other.whole == first.passages


def test_other_languages_get_a_note_and_chinese_is_split(tmp_path: Path):
    german = tmp_path / "muehle.md"
    german.write_text("# Die Mühle\n\nDie alte Mühle steht seit dreihundert Jahren am Fluss. "
                      "Sie mahlt noch heute jeden Samstag Mehl für die Bäcker des Dorfes.\n",
                      encoding="utf-8")
    chinese = tmp_path / "beijing.txt"
    chinese.write_text("北京是中国的首都。它有很多历史建筑！你去过吗？我很喜欢那里的公园。\n",
                       encoding="utf-8")
    index = DocumentIndex(cache_root=None, progress=False)
    notes = index.add([str(german), str(chinese)])
    assert any("muehle.md" in n and "German (de)" in n for n in notes), notes
    assert any("beijing.txt" in n and "Chinese (zh)" in n for n in notes), notes
    assert index.documents[1].passages[0][1] == [
        "北京是中国的首都。", "它有很多历史建筑！", "你去过吗？", "我很喜欢那里的公园。"]
    assert split_sentences("One. Two!  Three?") == ["One.", "Two!", "Three?"]


def test_a_fork_shares_the_index_until_it_grows(folder: Path):
    """The web chat indexes the server's documents once and forks the index per session."""
    base = DocumentIndex(cache_root=None, progress=False)
    base.add([str(folder / "owls.md")])
    fork = base.fork()
    assert fork.retrieve(["owls"], budget=2) == base.retrieve(["owls"], budget=2)
    fork.add([str(folder / "sub" / "trams.txt")])
    assert len(fork.documents) == 2 and len(base.documents) == 1
    assert base.num_sentences == 3 and fork.num_sentences == 7
    assert any("ticket" in s for _, ss in fork.retrieve(["ticket"], budget=2) for s in ss)
    assert not any("ticket" in s for _, ss in base.retrieve(["ticket"], budget=2) for s in ss)


def test_only_the_last_turns_of_the_dialogue_count(folder: Path, monkeypatch):
    """The query is the last turn plus the ``history_turns`` before it (not the whole chat:
    an old topic neither leans the pool nor makes every turn's query longer)."""
    index = DocumentIndex(cache_root=None, progress=False)
    index.load([str(folder)])
    asked = []
    real = index.retriever.scores
    monkeypatch.setattr(index.retriever, "scores", lambda text: asked.append(text) or real(text))
    dialogue = ["Tell me about owls.", "Owls hunt at night.", "What does a ticket cost?",
                "three euros", "and a day pass?"]
    index.retrieve(dialogue, budget=4)
    assert set(asked) == {"and a day pass?", "What does a ticket cost? three euros"}
    asked.clear()
    index.history_turns = 4
    index.retrieve(dialogue, budget=4)
    assert " ".join(dialogue[:4]) in asked


def test_a_path_read_again_replaces_its_document_and_remove_drops_one(folder: Path):
    """The web chat's re-upload of a name: the same path indexed again replaces its earlier
    version in place (it was indexed twice); a version that cannot be used keeps the earlier."""
    index = DocumentIndex(cache_root=None, progress=False)
    owls, trams = folder / "owls.md", folder / "sub" / "trams.txt"
    index.add([str(owls), str(trams)])
    owls.write_text("# Owls\n\nBarn owls nest in church towers.\n", encoding="utf-8")
    index.add([str(owls)])
    assert [d.path for d in index.documents] == [str(owls), str(trams)]
    assert index.whole[0] == ("Owls", ["Barn owls nest in church towers."])
    assert index.num_sentences == 1 + 4 and index.retrieve(["barn"], budget=1) == [index.whole[0]]
    owls.write_text("\n", encoding="utf-8")
    notes = index.add([str(owls)])
    assert "no text" in notes[0] and index.whole[0][1] == ["Barn owls nest in church towers."]
    assert index.remove([str(owls)]) == 1 and [d.path for d in index.documents] == [str(trams)]
    assert index.num_sentences == 4 and not any("owl" in s.lower() for _, ss in
                                                 index.retrieve(["owls"], budget=1) for s in ss)
    assert index.remove([str(trams)]) == 1 and index.retrieve(["tram"]) == []


def test_bytes_that_are_not_utf8_are_replaced_with_a_note(tmp_path: Path, folder: Path):
    """``--documents``: a surrogate written as UTF-8 bytes (``ED A0 80``) or a stray Latin-1
    byte no longer refuses the document; a file mostly not UTF-8 still is."""
    odd = tmp_path / "odd.md"
    odd.write_bytes(OWLS.encode() + b"\nThe caf\xe9 owl \xed\xa0\x80 hoots.\n")
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes(("Owls hunt at night. " * 20).encode("utf-16"))
    latin = tmp_path / "latin.md"
    latin.write_bytes("# Café\n\nLe café crème est très léger. À côté, un thé glacé.\n"
                      .encode("latin-1") * 3)
    index = DocumentIndex(cache_root=tmp_path / "cache", progress=False)
    notes = index.add([str(odd), str(utf16), str(latin)])
    assert [d.path for d in index.documents] == [str(odd)] and index.documents[0].replaced == 4
    assert any(n.startswith(f"{odd}: 4 characters") and "replaced" in n for n in notes), notes
    for name, why in (("utf16.txt", "NUL bytes"), ("latin.md", "30 of its 180")):
        assert any(n.startswith(f"document not used: {tmp_path / name}: not UTF-8 text")
                   and why in n for n in notes), (name, notes)
    assert "The caf\ufffd owl \ufffd\ufffd\ufffd hoots." in index.whole[-1][1]
    again = DocumentIndex(cache_root=tmp_path / "cache", progress=False)
    assert any("4 characters" in n for n in again.add([str(odd)]))  # from the cache too
    assert again.documents[0].cached
