"""
The reply figures of ``parlai-docgraph reply_eval`` (:mod:`parlai_docgraph.reply_quality`)
on hand-made replies whose right answers are known, and the script on the zoo stand-in.
"""

from __future__ import annotations

import json

import pytest

from parlai_docgraph.reply_quality import (
    distinct, dropped_words, keeps_span, knowledge_f1, repeats_phrase, score_reply, summarise,
    unsupported_words,
)

KNOWLEDGE = "If you bring the boat back late, you pay for a full extra hour."
QUESTION = "What happens if I return the boat late?"


def test_knowledge_f1_is_parlai_unigram_f1():
    assert knowledge_f1(KNOWLEDGE, KNOWLEDGE) == 1.0
    assert knowledge_f1("Nothing alike here.", KNOWLEDGE) == 0.0
    # "you pay extra hour" against the 12 normalised knowledge tokens: P 4/4, R 4/12
    assert knowledge_f1("You pay an extra hour.", KNOWLEDGE) == pytest.approx(2 * (4 / 12) / (1 + 4 / 12))
    assert knowledge_f1("anything", "") == 0.0


def test_unsupported_words_compare_stems_and_skip_stop_words():
    assert unsupported_words("Returning the boat late costs an extra hour.", [KNOWLEDGE, QUESTION]) \
        == ["costs"]
    assert unsupported_words("You would pay for a full extra hour.", [KNOWLEDGE]) == []
    assert unsupported_words("I'm sure you don't pay an extra hour.", [KNOWLEDGE]) == ["sure"]
    assert unsupported_words("The fee is 20 euros, paid in 2014.", [KNOWLEDGE]) == \
        ["fee", "20", "euros", "paid", "2014"]


def test_repetition_and_distinct():
    assert repeats_phrase("the old yellow tram goes past the old yellow tram")
    assert not repeats_phrase("the old yellow tram goes past the old church")
    assert distinct(["red sky glows", "red sky falls"]) == pytest.approx(3 / 4)
    assert distinct([""]) == 0.0


def test_summary_shares_and_worst():
    scores = [score_reply(KNOWLEDGE, QUESTION, [], KNOWLEDGE, KNOWLEDGE),
              score_reply("It costs twenty euros, twenty euros.", QUESTION, [], KNOWLEDGE, KNOWLEDGE,
                          truncated=True),
              score_reply("", QUESTION, [], KNOWLEDGE, KNOWLEDGE)]
    got = summarise(scores)
    assert got["replies"] == 3
    assert got["kf1_selected"] == pytest.approx(1 / 3)
    assert got["unsupported_share"] == pytest.approx(1 / 3)
    assert got["repeated_share"] == 0.0  # "twenty euros" twice is a bigram, not a trigram
    assert got["empty_share"] == pytest.approx(1 / 3) and got["truncated_share"] == pytest.approx(1 / 3)
    assert [w["reply"] for w in got["worst"]] == ["It costs twenty euros, twenty euros."]
    with pytest.raises(ValueError):
        summarise([])


WHY = ("The wealthy families moved to the hill on the north side of the town because the "
       "river flooded the lower streets every spring.")


def test_answer_span_kept_and_dropped_words():
    """Issue 40's reply: 'Why did the wealthy families move?' answered without the reason."""
    short = "The wealthy families moved to the hill on the north side of the town."
    span = "because the river flooded the lower streets every spring"
    assert keeps_span(WHY, span) and not keeps_span(short, span)
    assert keeps_span("It floods, because THE river flooded the lower streets every spring!",
                      span)  # ParlAI's normalisation: case and punctuation do not count
    assert not keeps_span("the river flooded", "")
    question = "Why did the wealthy families move?"
    assert dropped_words(short, WHY, question) == ["river", "flooded", "lower", "streets",
                                                   "spring"]
    assert dropped_words(WHY, WHY, question) == []
    # words the question already says may go; a reworded reply keeps the stems it needs
    assert dropped_words("They moved up the hill on the town's north side because the river "
                         "floods the lower streets each spring.", WHY, question) == []
    kept = score_reply(WHY, question, [], WHY, WHY, span=span)
    lost = score_reply(short, question, [], WHY, WHY, span=span)
    other = score_reply(short, question, [], WHY, "The hill was quiet.", span=span)
    assert (kept.answer_kept, lost.answer_kept, other.answer_kept) == (True, False, None)
    got = summarise([kept, lost, other, score_reply(WHY, question, [], WHY, WHY)])
    assert got["answer_kept_n"] == 2 and got["answer_kept_share"] == 0.5
    assert [d["reply"] for d in got["answer_dropped"]] == [short]


def test_script_rows_on_the_standin(zoo_datapath, tmp_path):
    """The script's rows over the zoo stand-in: extract replies are the selected sentence
    (knowledge F1 1 against it), each row has every figure, the table is made from them."""
    from parlai_docgraph.scripts.reply_eval import ReplyEval, parse_responders, result_table

    # one-sentence documents: the stand-in (an untrained selector) must select the answer,
    # so every reply's selected sentence holds its span
    folder = tmp_path / "questions"
    folder.mkdir()
    rows = [("ferry.md", "When does the ferry leave?", "The ferry leaves at nine o'clock.",
             "nine o'clock"),
            ("bakery.md", "Why is the bakery closed?", "The bakery is closed because the "
             "oven broke.", "because the oven broke"),
            ("museum.md", "How much is a museum ticket?", "A museum ticket costs six euros.",
             "six euros"),
            ("garden.md", "Who waters the garden?", "The neighbours water the garden.",
             "The neighbours")]
    for name, question, answer, span in rows:
        (folder / name).write_text(f"# {name[:-3].title()}\n\n{answer}\n", encoding="utf-8")
    (folder / "questions.jsonl").write_text("".join(
        json.dumps({"document": n, "question": q, "answer": a, "span": s}) + "\n"
        for n, q, a, s in rows), encoding="utf-8")
    out = tmp_path / "replies.json"
    got = ReplyEval.main("--datapath", str(zoo_datapath), "--questions-dir", str(folder),
                         "--out", str(out))
    data = json.loads(out.read_text(encoding="utf-8"))
    assert set(got) == set(data["systems"]) == {
        "extract (zoo model)", "generate (zoo model)",
        "generate (zoo model), before the answer check"}
    extract = data["systems"]["extract (zoo model)"]
    generate = data["systems"]["generate (zoo model)"]
    before = data["systems"]["generate (zoo model), before the answer check"]
    # every selection holds its span and is counted; the untrained GPT-2's text keeps none,
    # so the answer check replaces every reply and every reply then keeps its span
    assert generate["answer_kept_n"] == extract["answer_kept_n"] == 4
    assert extract["answer_kept_share"] == 1.0 and generate["answer_kept_share"] == 1.0
    assert before["answer_kept_share"] == 0.0 and generate["answer_check_share"] == 1.0
    assert extract["kf1_selected"] == 1.0 and extract["unsupported_share"] == 0.0
    assert len(extract["replies_text"]) == data["questions"] == 4
    assert data["meta"]["commit"] is not None or data["meta"]["command"]
    assert "| extract (zoo model) | " in result_table(data)
    with pytest.raises(ValueError, match="label="):
        parse_responders("no-label-here")
