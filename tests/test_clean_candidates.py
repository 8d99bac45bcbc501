"""
Clean candidates (issue 40): plain-text headings and numbered section titles become passage
titles, never sentences; a passage's title names its document; a quote that opens a
sentence stays with it. The documents are written here in the style of licence texts.
"""

from __future__ import annotations

from pathlib import Path

from parlai_docgraph.graphs.corpus import document_passages, read_document
from parlai_docgraph.nlp import rejoin_quotes, split_sentences

LICENCE = """\
Harbour Public Licence
Version 1.1, March 2024

TERMS AND CONDITIONS FOR USE AND SHARING

1. Definitions.

"Licence" means the terms of this document. "Source" form means the form in which changes are made. "Object" form means any form made from the Source form by a machine.

4. Trademarks. This Licence gives no right to use the names or marks of the Licensor. Names may be used only to say where the Work came from.

7. Accepting Support or Extra Duties. When you share the Work, you may offer support for a fee. You act only on your own behalf.

Section 3.2 Sharing the Object Form
If you share the Work in Object form, you must also offer its Source form.

5. Terms
--------

5.1. "Contributor"
    means each person who adds to the Work.

5.2. "Work"
    means the software under this Licence.
"""

RECIPE = """\
# Pancakes

1. Whisk the eggs.
2. Stir.
3. Rest the batter for ten minutes.

Serve them warm. Keep the rest in the fridge.
"""


def sentences_of(pool):
    return [s for _, ss in pool for s in ss]


def test_headings_in_plain_text_are_titles_not_sentences():
    pool = document_passages(LICENCE, "harbour")
    sents = sentences_of(pool)
    for heading in ("TERMS AND CONDITIONS FOR USE AND SHARING", "Definitions.", "Trademarks.",
                    "Accepting Support or Extra Duties.", "Terms", "--------",
                    "Section 3.2 Sharing the Object Form"):
        assert not any(s.startswith(heading) for s in sents), (heading, sents)
    titles = {t for t, _ in pool}
    assert titles >= {"Harbour Public Licence / 1. Definitions",
                      "Harbour Public Licence / 4. Trademarks",
                      "Harbour Public Licence / 7. Accepting Support or Extra Duties",
                      "Harbour Public Licence / Section 3.2 Sharing the Object Form",
                      "Harbour Public Licence / 5. Terms"}, titles
    title_of = {s: t for t, ss in pool for s in ss}
    assert title_of["This Licence gives no right to use the names or marks of the Licensor."] \
        == "Harbour Public Licence / 4. Trademarks"
    # a numbered definition keeps its term with its indented text
    assert '"Contributor" means each person who adds to the Work.' in sents
    assert "If you share the Work in Object form, you must also offer its Source form." in sents


def test_quotes_stay_with_their_sentence():
    sents = sentences_of(document_passages(LICENCE, "harbour"))
    assert '"Source" form means the form in which changes are made.' in sents
    assert '"Object" form means any form made from the Source form by a machine.' in sents
    assert not any(s.endswith('"') and s.count('"') % 2 for s in sents), sents
    assert split_sentences('He said "Stop." Then he left.') == ['He said "Stop."',
                                                                 "Then he left."]
    assert rejoin_quotes(["It ends here. \u201c", "Next one.\u201d Done."]) == [
        "It ends here.", "\u201cNext one.\u201d Done."]


def test_numbered_lists_and_markdown_are_unchanged(tmp_path: Path):
    pool = document_passages(RECIPE, "pancakes")
    assert pool == [("Pancakes", ["Whisk the eggs.", "Stir.",
                                  "Rest the batter for ten minutes."]),
                    ("Pancakes", ["Serve them warm.", "Keep the rest in the fridge."])]
    path = tmp_path / "faq.md"
    path.write_text("# Kettle FAQ\n\n## Cleaning\n\nDescale it monthly.\n", encoding="utf-8")
    assert read_document(str(path)) == [("Kettle FAQ / Cleaning", ["Descale it monthly."])]


def test_bundled_documents_keep_every_sentence():
    """The rules change no sentence of the bundled documents (their answers stay found)."""
    from parlai_docgraph.tasks.docgraph.docqa import DOCQA, HELDOUT, load_questions

    for folder in (DOCQA, HELDOUT):
        questions = load_questions(folder)
        assert all(q.gold.endswith(q.answer) for q in questions)


def test_a_question_that_names_a_document_prefers_its_lines():
    """The candidate line ``"{title} {sentence}"`` names its document, so the encoder that
    ranks candidates reads which document a sentence comes from: of two near-duplicate
    sentences, the one of the document the question names is ranked higher (MiniLM cosine,
    the zoo selector's zero-shot term)."""
    from parlai_docgraph.scripts.heldout_eval import cosine_ranker

    gym = document_passages("# Oakfield gym rules, winter timetable\n\n## Pool\n\n"
                            "The pool closes at nine in the evening.\n", "winter")
    summer = document_passages("# Oakfield gym rules, summer timetable\n\n## Pool\n\n"
                               "The pool closes at ten in the evening.\n", "summer")
    rank = cosine_ranker("minilm-l6")
    for season, pool in (("winter", gym), ("summer", summer)):
        best = rank(gym + summer, f"In the {season} timetable, when does the pool close?")[0]
        assert best == f"{pool[0][0]} {pool[0][1][0]}", (season, best)


def test_the_documents_a_turn_names():
    """``--named-document-boost``'s rule: a turn names a document with a word of its title
    that the other documents' titles do not all have."""
    from parlai_docgraph.graphs.knowledge_lines import (
        NO_PASSAGE, candidate_titles, named_documents,
    )

    titles = ["Library Lending Policy, 2023 Edition / Fines",
              "Library Lending Policy, 2025 Edition / Fines",
              "Library Lending Policy, 2025 Edition", "Dustra R7 robot vacuum / Charging",
              NO_PASSAGE]
    assert named_documents("Under the 2025 rules, is a late book fined?", titles) == [
        False, True, True, False, False]
    assert named_documents("How long does the R7 take to charge?", titles) == [
        False, False, False, True, False]
    # words every document's title has ("policy" here) name none of them
    assert named_documents("What does the policy say about fines?", titles[:3]) == [
        False] * 3
    assert named_documents("2025?", titles[1:3]) == [False, False]  # one document only
    pool = [("Doc A / Part", ["One.", "Two."]), ("Doc B", ["Three."])]
    assert candidate_titles(pool, ["Doc A / Part Two.", "Doc B Three.", "x"]) == [
        "Doc A / Part", "Doc B", NO_PASSAGE]
