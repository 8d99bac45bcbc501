"""
A question asked again in one ``-m docgraph`` chat: selection is greedy and deterministic,
so the same question in the same dialogue context gets the same sentence (and the same
scores); what can change it is the context, which the selector reads by design (Li et al.
Eq. 1: the last ``--context-turns`` utterances, the model's own previous reply among them;
README, "Chatting").

The model is the stand-in for ``zoo:docgraph/sample/model`` (``tests/zoo_standin.py``).
"""

from __future__ import annotations

from typing import List, Tuple

import pytest

NOTES = ("# Lighthouse keepers\n\n"
         "Keepers trimmed the wicks and polished the lenses every evening. "
         "Stations built on rocks at sea had no room for families.\n\n"
         "## Automation\n\nThe last keepers left in 1998. Lamps are now checked remotely.\n")
QUESTION = "Why did keepers live without their families?"
OTHER = "When did the last keepers leave?"

Turn = Tuple[str, str, List[float]]  # (selector context, selected sentence, scores)


@pytest.fixture(scope="module")
def agent_shared(zoo_datapath, tmp_path_factory):
    """The loaded model over the notes, to copy per chat (ParlAI ``share()``)."""
    from parlai.core.agents import create_agent_from_model_file

    notes = tmp_path_factory.mktemp("docs") / "notes.md"
    notes.write_text(NOTES)
    model_file = str(zoo_datapath / "models" / "docgraph" / "sample" / "model")
    agent = create_agent_from_model_file(model_file, {
        "interactive_mode": True, "datapath": str(zoo_datapath), "documents": [str(notes)]})
    assert agent.documents, "the notes were not loaded"
    return agent.share()


def _chat(shared, turns: List[Tuple[str, bool]]) -> List[Turn]:
    """One chat (a fresh agent copy): ``(text, episode_done)`` turns as ``parlai
    interactive`` sends them; for each turn the models answered, what the selector read
    and chose."""
    from parlai.core.agents import create_agent_from_shared

    agent = create_agent_from_shared(shared)
    out = []
    for text, done in turns:
        observation = agent.observe({"text": text, "episode_done": done})
        reply = agent.act()
        if observation.get("docgraph_answered"):
            continue  # an empty turn ([DONE] alone): the models do not run
        context = observation["docgraph_selector"]["full_text"]
        out.append((context, reply["selected_sentence"], list(agent.last_selection.scores)))
    return out


def test_same_dialogue_same_selections(agent_shared):
    """Two chats with the same turns select the same sentences with the same scores."""
    turns = [(QUESTION, False), (QUESTION, False), (OTHER, False), (QUESTION, False)]
    assert _chat(agent_shared, turns) == _chat(agent_shared, turns)


def test_repeated_question_in_an_unchanged_context_gets_the_same_selection(agent_shared):
    """Within one chat: after [DONE] the dialogue starts afresh, so the question asked
    again is read in the same context as the first time and gets the same selection."""
    first, again = _chat(agent_shared, [(QUESTION, False), ("", True), (QUESTION, False)])
    assert first[0] == again[0] == QUESTION  # the context: the question alone, both times
    assert again == first


def test_repeated_question_is_read_with_the_previous_reply(agent_shared):
    """Without [DONE] the second asking's context holds the model's own previous reply
    (the last two utterances): the selector reads the dialogue, not only the question."""
    (context1, selected1, _), (context2, _, _) = _chat(
        agent_shared, [(QUESTION, False), (QUESTION, False)])
    assert context1 == QUESTION
    assert context2 == f"{selected1}\n{QUESTION}"  # extract replies: the selected sentence
