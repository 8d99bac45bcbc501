"""
Interactive use of ``-m docgraph``: documents -> passages, bad input (empty, very long,
missing documents), ``--show-graph``, and scripted chats through ParlAI's own
``interactive`` script (its ``LocalHumanAgent`` reads a fake ``input``), over ``--documents``
and over ``-t docgraph:sample`` topics (``tasks/docgraph/worlds.py``).
"""

from __future__ import annotations

import builtins
from typing import List

import pytest

from parlai_docgraph.agents.pipeline.messages import check_user_text
from parlai_docgraph.graphs.corpus import read_document, split_sentences
from parlai_docgraph.graphs.retrieval import DocumentIndex

pytest.importorskip("transformers")

DOC = """# Tide mills

A tide mill stores sea water behind a dam at high tide. The water is released through a \
wheel as the tide falls, so the mill can grind grain twice a day.

## Eling

The mill at Eling in Hampshire is still working. It grinds wholemeal flour for visitors \
and local bakers.
"""
PLAIN = """Salt marshes
Salt marshes grow where mud collects in sheltered bays. Grasses trap more mud each tide.

Many birds feed on the marsh in winter.
"""


@pytest.fixture
def docs(tmp_path) -> List[str]:
    a = tmp_path / "tide.md"
    a.write_text(DOC, encoding="utf-8")
    b = tmp_path / "marsh.txt"
    b.write_text(PLAIN, encoding="utf-8")
    return [str(a), str(b)]


# ------------------------------------------------------------------ documents
def test_paragraphs_are_passages_and_headings_titles(docs):
    passages = read_document(docs[0])
    assert [t for t, _ in passages] == ["Tide mills", "Tide mills / Eling"]
    assert passages[0][1] == [
        "A tide mill stores sea water behind a dam at high tide.",
        "The water is released through a wheel as the tide falls, so the mill can grind "
        "grain twice a day."]
    assert len(passages[1][1]) == 2
    plain = read_document(docs[1])  # first line without final punctuation: the title
    assert [t for t, _ in plain] == ["Salt marshes", "Salt marshes"]
    assert plain[0][1][0].startswith("Salt marshes grow")
    assert plain[1][1] == ["Many birds feed on the marsh in winter."]


def test_list_items_are_sentences_without_markers(tmp_path):
    """A table-like Markdown list: one sentence per item (items without a full stop too),
    markers dropped, an indented continuation line kept with its item."""
    path = tmp_path / "pool.md"
    path.write_text("# Pool\n\n## Hours\n\n- Monday: opens at 6:30.\n* Sunday: closed\n"
                    "  on public holidays.\n1. Lane 1 is for slow swimmers. Lane 2 is not.\n"
                    "Plain text after the list.\n", encoding="utf-8")
    assert read_document(str(path)) == [("Pool / Hours", [
        "Monday: opens at 6:30.", "Sunday: closed on public holidays.",
        "Lane 1 is for slow swimmers.", "Lane 2 is not.", "Plain text after the list."])]


def test_missing_and_empty_documents_are_reported_not_fatal(docs, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    index = DocumentIndex(cache_root=None, progress=False)
    problems = index.load([str(tmp_path / "nope.md"), docs[0], str(empty)])
    passages = index.whole
    assert len(passages) == 2
    assert any("document not found" in p and "nope.md" in p for p in problems)
    assert any("empty.txt" in p and "no text" in p for p in problems)


def test_empty_and_long_user_turns():
    assert check_user_text("   ", 100)[0] is None
    assert "empty message" in check_user_text("", 100)[1]
    text, note = check_user_text("x" * 50 + "tail", 10)
    assert text == "x" * 6 + "tail" and "54 characters" in note
    assert check_user_text("fine", 10) == ("fine", None)
    assert split_sentences("One. Two!  Three?") == ["One.", "Two!", "Three?"]


# ------------------------------------------------------------------ model
@pytest.fixture(scope="module")
def model_file(docgraph_model_file) -> str:
    """A ``-m docgraph`` model file trained for 2 steps (tiny encoder, tiny GPT-2): conftest's
    ``docgraph_model_file``, trained once per run (this file, the web chat's and the
    held-out tests use it)."""
    return docgraph_model_file


def _chat(monkeypatch, capsys, lines: List[str], *args: str) -> str:
    """Run ParlAI's ``interactive`` with ``lines`` typed by the (fake) human."""
    from parlai.scripts.interactive import Interactive

    feed = iter(lines)

    def fake_input(prompt=""):
        try:
            return next(feed)
        except StopIteration:
            raise EOFError
    monkeypatch.setattr(builtins, "input", fake_input)
    Interactive.main(*args)
    return capsys.readouterr().out


def test_chat_over_documents_with_bad_input_and_graph(model_file, docs, tmp_path,
                                                      monkeypatch, capsys):
    html = tmp_path / "graph.html"
    long_turn = "tell me about the mill " * 200
    out = _chat(monkeypatch, capsys,
                ["how does a tide mill work?", "", long_turn, "/load /etc/passwd",
                 "is eling still working?", "who is root?", "[EXIT]"],
                "-mf", model_file, "--documents", docs[0], str(tmp_path / "missing.txt"),
                "--show-graph", str(html), "--datapath", str(tmp_path / "data"))
    sentences = [s for _, ss in read_document(docs[0]) for s in ss]
    shown = [line.split("]: ", 1)[1] for line in out.splitlines()
             if "[selected_sentence]:" in line]
    assert len(shown) == 4, out  # four turns reached the models: not the empty / /load ones
    assert all(s in sentences for s in shown), shown
    assert out.count("[top_concepts]:") == 4
    assert "document not found" in out and "missing.txt" in out
    assert "retriever hybrid" in out  # the default --retriever, said with the index summary
    assert "empty message" in out
    assert "only its last 2000 are used" in out
    # the long turn overflows what the generator reads: capped, and said once
    assert out.count("the dialogue is longer than the generator reads: it sees the last 128") == 1
    # no chat message opens a file: /load is refused, nothing of the file reaches a reply
    assert "no chat message opens a file" in out
    assert "root:" not in out and "/bin/" not in out
    assert out.count("[Docgraph]:") >= 3
    page = html.read_text(encoding="utf-8")
    assert "who is root?" in page  # the last turn's graph
    assert 'class="node selected' in page


def test_the_retriever_embeds_with_the_selectors_frozen_encoder(model_file, docs, tmp_path):
    """``--retriever`` dense / hybrid read the selector's frozen node encoder (the graphs
    layer gets it from the agent); bm25 loads no encoder."""
    from parlai.core.agents import create_agent_from_model_file, create_agent_from_shared

    for kind in ("hybrid", "dense", "bm25"):
        agent = create_agent_from_model_file(model_file, {
            "interactive_mode": True, "documents": docs, "retriever": kind,
            "datapath": str(tmp_path / "data")})
        retriever = agent.index.retriever
        assert retriever.name == kind and retriever.ready
        if kind != "bm25":
            dense = getattr(retriever, "dense", retriever)
            assert dense.embedder.encoder is agent.selector.graphs.node_encoder
            assert dense.stats["sentences"] == agent.index.num_sentences
        copy = create_agent_from_shared(agent.share())
        assert copy.index.retriever is retriever  # a web session shares the index
        agent.shutdown()


def test_a_reply_that_drops_the_answer_is_the_selected_sentence(model_file, docs, tmp_path):
    """``--reply-keeps-answer`` (default): the tiny random GPT-2's text leaves out the
    sentence's words, so the reply is the selected sentence, the generated text and the
    dropped words kept beside it; without the check the reply is the generated text."""
    from parlai.core.agents import create_agent_from_model_file

    from parlai_docgraph.reply_quality import dropped_words

    question = "how does a tide mill work?"
    for keeps in (True, False):
        agent = create_agent_from_model_file(model_file, {
            "interactive_mode": True, "documents": [docs[0]], "reply_mode": "generate",
            "reply_keeps_answer": keeps, "datapath": str(tmp_path / "data")})
        agent.observe({"text": question, "episode_done": False})
        reply = agent.act()
        selected, generated = reply["selected_sentence"], reply.get("generated_text")
        if keeps:
            assert reply["text"] == selected and generated and generated != selected
            assert reply["answer_dropped"] == dropped_words(generated, selected, question)
            assert reply["answer_dropped"]
        else:
            assert "answer_dropped" not in reply and generated is None
            assert dropped_words(reply["text"], selected, question)  # it did drop words
        agent.shutdown()


def test_a_named_document_is_preferred(model_file, tmp_path):
    """``--named-document-boost b``: the candidates of the document the turn names gain b,
    every other score is unchanged; the pipeline passes its own value to the selector."""
    from parlai.core.agents import create_agent_from_model_file

    agent = create_agent_from_model_file(model_file, {
        "interactive_mode": True, "named_document_boost": 50.0,
        "datapath": str(tmp_path / "data")})
    selector = agent.selector
    assert selector.opt["named_document_boost"] == 50.0
    pool = [("Pool rules, winter timetable / Hours", ["The pool closes at nine."]),
            ("Pool rules, summer timetable / Hours", ["The pool closes at ten."])]
    question = "In summer, when does the pool close?"
    boosted = selector.select(pool, question)
    assert boosted["sentence"] == "Pool rules, summer timetable / Hours The pool closes at ten."
    selector.opt["named_document_boost"] = 0.0
    plain = selector.select(pool, question)["scores"]
    for line, score in boosted["scores"].items():
        assert score == pytest.approx(plain[line] + (50.0 if "summer" in line else 0.0),
                                      abs=1e-4)
    agent.shutdown()


def test_the_selector_reads_each_candidates_document_title(model_file, tmp_path, monkeypatch):
    """Where a candidate's document enters the selector: over ``--documents`` each
    candidate line is ``"{Document / Section} {sentence}"``, and that whole line is the
    ``s_i`` of the encoder's input pair ``[s_i; x]`` (Li Eq. 1), so two near-duplicate
    sentences of two documents reach the encoder as different inputs naming their
    documents."""
    from parlai.core.agents import create_agent_from_model_file

    for season, hour in (("winter", "nine"), ("summer", "ten")):
        (tmp_path / f"{season}.md").write_text(
            f"# Oakfield gym rules, {season} timetable\n\n## Pool\n\n"
            f"The pool closes at {hour} in the evening. Towels are lent at the desk.\n",
            encoding="utf-8")
    agent = create_agent_from_model_file(model_file, {
        "interactive_mode": True, "datapath": str(tmp_path / "data"), "documents": None,
        "named_document_boost": 0.0})
    agent.load_documents([str(tmp_path / "winter.md"), str(tmp_path / "summer.md")])
    seen = []
    real = agent.selector._collate
    monkeypatch.setattr(agent.selector, "_collate",
                        lambda *a, **k: seen.append(real(*a, **k)) or seen[-1])
    agent.observe({"text": "When does the pool close in summer?", "episode_done": False})
    agent.act()
    tokenizer = agent.selector.tokenizer
    pairs = ["".join(tokenizer.decode(ids, skip_special_tokens=True).lower().split())
             for ids in seen[-1]["cand_input_ids"]]
    for season, hour in (("winter", "nine"), ("summer", "ten")):
        line = f"oakfieldgymrules,{season}timetable/poolthepoolclosesat{hour}"
        assert sum(p.startswith(line) and p.endswith("whendoesthepoolcloseinsummer?")
                   for p in pairs) == 1, (season, pairs)
    agent.shutdown()


def test_extract_reply_mode_answers_with_the_selected_sentence(model_file, docs, tmp_path,
                                                              monkeypatch, capsys):
    """``--reply-mode extract``: each reply is exactly the turn's selected sentence."""
    out = _chat(monkeypatch, capsys, ["how does a tide mill work?", "is eling working?",
                                      "[EXIT]"],
                "-mf", model_file, "--documents", docs[0], "--reply-mode", "extract",
                "--datapath", str(tmp_path / "data"))
    lines = out.splitlines()
    shown = [line.split("]: ", 1)[1] for line in lines if "[selected_sentence]:" in line]
    replies = [line.split("]: ", 1)[1] for line in lines if line.startswith("[Docgraph]:")]
    sentences = [s for _, ss in read_document(docs[0]) for s in ss]
    assert len(shown) == 2 and all(s in sentences for s in shown), out
    assert replies == shown, out


def test_chat_about_task_topics(model_file, tmp_path, monkeypatch, capsys):
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    data = str(tmp_path / "data")
    out = _chat(monkeypatch, capsys, ["what is it famous for?", "[EXIT]"],
                "-mf", model_file, "-t", "docgraph:sample", "--datapath", data)
    topic_line = next(line for line in out.splitlines() if line.startswith("[topic]:"))
    topic = topic_line.split("]: ", 1)[1].split("  (")[0]
    opt = ParlaiParser(True, False).parse_args(
        ["-t", "docgraph:sample", "-dt", "valid", "--datapath", data])
    teacher = create_task_agent_from_taskname(opt)[0]
    first = teacher.act()
    assert topic == first["chosen_topic"]
    pool = [s for _, ss in first["knowledge_passages"] for s in ss] + ["no_passages_used"]
    selected = next(line.split("]: ", 1)[1] for line in out.splitlines()
                    if "[selected_sentence]:" in line)
    assert selected in pool


def test_unknown_topic_is_a_clear_error(model_file, tmp_path, monkeypatch, capsys):
    with pytest.raises(ValueError, match="not a topic"):
        _chat(monkeypatch, capsys, ["hi"], "-mf", model_file, "-t", "docgraph:sample",
              "--topic", "No Such Topic", "--datapath", str(tmp_path / "data"))


def test_chat_without_documents_says_so_once(model_file, tmp_path, monkeypatch, capsys):
    out = _chat(monkeypatch, capsys, ["hello", "and again", "[EXIT]"],
                "-mf", model_file, "--datapath", str(tmp_path / "data"))
    assert out.count("no documents: replies use no knowledge") == 1
    assert "/load" not in out  # no chat message opens a file: the note names none
    assert out.count("[Docgraph]:") == 2 and "[selected_sentence]" not in out


def test_input_ending_after_done_ends_the_chat_cleanly(model_file, docs, tmp_path,
                                                      monkeypatch, capsys):
    """Piped input that stops after ``[DONE]`` (no ``[EXIT]``): the end-of-input act has no
    text, and nothing may try to answer it (it used to crash the responder's batchify)."""
    out = _chat(monkeypatch, capsys, ["how does a tide mill work?", "[DONE]"],
                "-mf", model_file, "--documents", docs[0], "--datapath", str(tmp_path / "data"))
    assert out.count("[Docgraph]:") == 1
    assert out.count("CHAT DONE") >= 1


def test_chat_over_a_folder_retrieves_each_turns_pool(model_file, tmp_path, monkeypatch,
                                                      capsys):
    """``--documents FOLDER``: the documents are indexed once; a turn's pool is the passages
    retrieved for it (``--retrieval-sentences``), and ``--show-graph`` shows the graph the
    selector scored, over that pool only."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "tide.md").write_text(DOC, encoding="utf-8")
    (folder / "marsh.txt").write_text(PLAIN, encoding="utf-8")
    (folder / "owls.md").write_text("# Owls\n\nOwls hunt at night. They swallow their prey "
                                    "whole.\n", encoding="utf-8")
    html = tmp_path / "graph.html"
    out = _chat(monkeypatch, capsys, ["when do owls hunt?", "[EXIT]"],
                "-mf", model_file, "--documents", str(folder), "--retrieval-sentences", "3",
                "--show-graph", str(html), "--datapath", str(tmp_path / "data"))
    assert "3 documents, 5 passages, 9 sentences indexed" in out, out
    selected = next(line.split("]: ", 1)[1] for line in out.splitlines()
                    if "[selected_sentence]:" in line)
    assert selected in ("Owls hunt at night.", "They swallow their prey whole.")
    page = html.read_text(encoding="utf-8")
    assert "Owls hunt at night." in page and "tide" not in page.lower()


def test_unencodable_characters_of_a_turn_are_replaced_with_a_note():
    """Issue 39: a lone surrogate in the history had the tokenizer refuse every later turn."""
    text, note = check_user_text("tide \ud800 mill\uffff", 100)
    assert text == "tide \ufffd mill\ufffd" and "your message: 2 characters" in note
    text, note = check_user_text("\udc80" + "x" * 20, 10)
    assert text == "x" * 10 and "2 characters" not in note and "1 character " in note
    assert "only its last 10" in note
