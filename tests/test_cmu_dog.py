"""
CMU_DoG (issue 37) on a release written for the tests (``tests/cmu_dog_fixture.py``): the
offline install, ``docgraph:cmu_dog`` against ParlAI's own teacher, the pools and pseudo
labels, and ParlAI's ``-t cmu_dog`` messages as the agents read them. The agents through
the stock CLI are in ``test_cmu_dog_agents.py``.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

import cmu_dog_fixture as fx
from conftest import teacher_acts
from parlai_docgraph.dataset_errors import MissingDatasetFile
from parlai_docgraph.graphs.knowledge_lines import NO_KNOWLEDGE_LINE, NO_PASSAGE
from parlai_docgraph.graphs.movie_articles import (
    PSEUDO_LABEL_F1, article_pool, facts_passage, pseudo_label, turn_pool,
)
from parlai_docgraph.tasks.docgraph import install as inst


@pytest.fixture
def cmu_datapath(datapath: Path, tmp_path: Path) -> Path:
    fx.install_fixture(datapath, tmp_path)
    return datapath


def _episodes(acts):
    out, current = [], []
    for act in acts:
        current.append(act)
        if act.get("episode_done"):
            out.append(current)
            current = []
    return out


# ---------------------------------------------------------------------- install


def test_install_from_a_folder_builds_parlais_layout(datapath, tmp_path):
    root = fx.write_release(tmp_path / "release")
    logged = []
    path = inst.install_cmu_dog(str(datapath), str(root), fx.release_spec(root), logged.append)
    folder = Path(path)
    assert (folder / ".built").read_text().splitlines()[-1] == "1.2"
    wiki = json.loads((folder / "wiki_data.json").read_text())
    assert sorted(wiki) == ["0", "1"]
    deduped = {n: sorted(json.loads((folder / "conversations" / f"{n}_deduped.json").read_text()))
               for n in ("train", "valid", "test")}
    # harbour_a is in train and test: ParlAI's build keeps it in test only
    assert deduped == {"train": sorted(["chalk_a", "harbour_b"] + fx.EXTRA),
                       "valid": ["harbour_c"], "test": ["chalk_b", "harbour_a"]}
    unseen = json.loads((folder / "conversations/test_unseen_split_seen_unseen.json").read_text())
    assert sorted(unseen) == ["chalk_a", "chalk_b"]  # article 1: held out as unseen
    assert not list(datapath.glob(".cmu_dog-install-*"))  # the staging folder is gone
    assert any("check out" in line for line in logged)
    # a second install leaves the built folder alone
    inst.install_cmu_dog(str(datapath), str(root), fx.release_spec(root), logged.append)
    assert "installed already" in logged[-1]


def test_install_from_the_zip_and_the_folder_inside_it(tmp_path):
    root = fx.write_release(tmp_path / "release")
    spec = fx.release_spec(root)
    archive = fx.write_zip(root, tmp_path / "cmu_dog.zip", spec.folder)
    for n, source in enumerate([archive, root.parent]):
        datapath = tmp_path / f"data{n}"
        if n == 1:  # a folder holding the zip's top folder
            shutil.copytree(root, tmp_path / spec.folder)
            source = tmp_path
        inst.install_cmu_dog(str(datapath), str(source), spec, log=lambda _: None)
        assert (datapath / "cmu_dog" / ".built").is_file()


def test_install_refuses_other_files_and_says_why(datapath, tmp_path):
    root = fx.write_release(tmp_path / "release")
    spec = fx.release_spec(root)
    (root / "Conversations" / "valid" / "harbour_c.json").unlink()
    with pytest.raises(inst.InstallError) as err:
        inst.install_cmu_dog(str(datapath), str(root), spec, log=lambda _: None)
    assert "Conversations/valid: 0 JSON files, expected 1" in str(err.value)
    assert "content sha256" in str(err.value)
    assert not (datapath / "cmu_dog").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(inst.InstallError, match="no Conversations/"):
        inst.install_cmu_dog(str(datapath), str(tmp_path / "empty"), spec)
    with pytest.raises(inst.InstallError, match="no such file or folder"):
        inst.install_cmu_dog(str(datapath), str(tmp_path / "missing"), spec)
    (tmp_path / "notzip.zip").write_text("x")
    with pytest.raises(inst.InstallError, match="not a zip file"):
        inst.install_cmu_dog(str(datapath), str(tmp_path / "notzip.zip"), spec)


def test_install_checks_the_built_splits(datapath, tmp_path):
    root = fx.write_release(tmp_path / "release")
    spec = fx.release_spec(root)
    wrong = inst.CmuDogRelease(spec.commit, spec.zip_sha256, spec.digest, spec.files,
                               {"test_deduped.json": (2, "0000000000000000")})
    with pytest.raises(inst.InstallError, match="test_deduped.json: 2 conversations"):
        inst.install_cmu_dog(str(datapath), str(root), wrong, log=lambda _: None)
    assert not (datapath / "cmu_dog").exists()


def test_the_real_release_pins():
    """The pins name the release ParlAI's build downloads and the splits the figures use."""
    real = inst.CMU_DOG
    assert real.folder == "datasets-CMU_DoG-618a14f27546165859305649aa84e6ac8710bb63"
    assert sum(real.files.values()) == 3373 + 229 + 619 + 30
    assert real.built["test_seen_split_seen_unseen.json"][0] == 198
    assert real.built["test_unseen_split_seen_unseen.json"][0] == 207


def test_install_wow_and_holle_from_local_copies(datapath, tmp_path):
    wow = tmp_path / "wow"
    wow.mkdir()
    for name in inst.WOW_FILES[:5]:
        (wow / name).write_text("[]")
    logged = []
    inst.install_wow(str(datapath), str(wow), logged.append)
    assert sorted(p.name for p in (datapath / "wizard_of_wikipedia").iterdir()) == sorted(
        inst.WOW_FILES[:5])
    assert "not marked built" in logged[-1]
    (tmp_path / "wow.tgz").write_bytes(b"not the archive")
    with pytest.raises(inst.InstallError, match="sha256"):
        inst.install_wow(str(tmp_path / "d2"), str(tmp_path / "wow.tgz"))
    with tarfile.open(tmp_path / "real.tgz", "w:gz") as tar:
        tar.add(wow / "train.json", "train.json")
    with pytest.raises(inst.InstallError, match="sha256"):  # any other archive
        inst.install_wow(str(tmp_path / "d3"), str(tmp_path / "real.tgz"))
    holle = tmp_path / "holle"
    holle.mkdir()
    (holle / "dev_data.json").write_text("[]")
    inst.install_holle(str(datapath), str(holle), logged.append)
    assert (datapath / "holl_e" / "dev_data.json").read_text() == "[]"
    assert "no published checksum" in logged[-1] and "still missing" in logged[-1]
    (holle / "train_data.json").write_text("[]")  # not the published file
    with pytest.raises(inst.InstallError, match="train_data.json: sha256"):
        inst.install_holle(str(datapath), str(holle))
    with pytest.raises(inst.InstallError, match="no installer"):
        inst.install("squad", str(datapath), str(holle))


# ---------------------------------------------------------------------- pools, labels


def test_facts_and_scene_pools():
    article = fx.MOVIES[0]
    movie, facts = facts_passage(article["0"])
    assert movie == "The Glass Harbour"
    assert facts[:2] == ["The Glass Harbour is a 1987 drama about a coastal town.",
                         "It follows a harbour master during one winter."]
    assert "director: Mara Ellison" in facts and "cast: Tomas Reed as the ferry pilot" in facts
    # a list entry of several sentences is split like any text, the key on its first
    assert facts[-2:] == ["critical response: A quiet storm of a film.",
                          "It never raises its voice."]
    pool = turn_pool(article["1"], movie, (movie, facts))
    assert [t for t, _ in pool] == ["The Glass Harbour (plot)", "The Glass Harbour"]
    assert pool[0][1][0] == "A storm wrecks the ferry near the old harbour."
    assert turn_pool(article["0"], movie, (movie, facts)) == [(movie, facts)]
    assert turn_pool(None, movie) == []  # the speaker could not see the article
    whole = article_pool(article)
    assert [t for t, _ in whole] == ["The Glass Harbour", "The Glass Harbour (plot)"]
    assert len(whole[1][1]) == 9  # the three scenes' sentences


def test_pseudo_label_is_the_best_f1_sentence_above_the_threshold():
    article = fx.MOVIES[0]
    facts = facts_passage(article["0"])
    pool = turn_pool(article["1"], facts[0], facts)
    label = pseudo_label("A storm wrecks the ferry near the harbour.", pool)
    assert label.sentence(pool) == "A storm wrecks the ferry near the old harbour."
    assert label.title(pool) == "The Glass Harbour (plot)" and label.f1 > 0.8
    assert pseudo_label("Mara Ellison directed it.", pool).sentence(pool) == "director: Mara Ellison"
    chat = pseudo_label("ok, bye then", pool)
    assert chat.position is None and chat.f1 < PSEUDO_LABEL_F1
    # equal F1s keep the first sentence; an F1 equal to the threshold labels
    tiny = [("T", ["alpha beta", "alpha gamma"])]
    assert pseudo_label("alpha", tiny).position == (0, 0)
    edge = pseudo_label("alpha delta epsilon zeta eta theta", tiny, threshold=0.25)
    assert edge.f1 == pytest.approx(0.25) and edge.position == (0, 0)
    assert pseudo_label("alpha delta epsilon zeta eta theta", tiny, threshold=0.3).position is None


def test_counted_f1_is_parlais_f1():
    from parlai.core.metrics import F1Metric

    from parlai_docgraph.graphs.movie_articles import PoolWords, counted_f1

    words = PoolWords()
    texts = ["A storm wrecks the ferry near the old harbour.", "the the harbour, harbour!",
             "Ada Brenner plays Captain Iris Vale.", "ok", "", "Iris, Iris and the storm"]
    for reply in texts:
        for sentence in texts:
            want = F1Metric.compute(reply, [sentence]).value()
            assert counted_f1(words(reply), words(sentence)) == pytest.approx(want, abs=1e-12)


# ---------------------------------------------------------------------- teachers


def test_docgraph_cmu_dog_serves_parlais_turns(cmu_datapath):
    """Text and labels equal ParlAI's teacher's (compat's fixes on), but for the opening
    context: the movie name instead of the shown section's text."""
    for dt in ("train", "valid", "test"):
        ours = teacher_acts("docgraph:cmu_dog", cmu_datapath, f"{dt}:ordered" if dt == "train" else dt)
        theirs = teacher_acts("cmu_dog", cmu_datapath, f"{dt}:ordered" if dt == "train" else dt)
        assert len(ours) == len(theirs) > 0
        for a, b in zip(_episodes(ours), _episodes(theirs)):
            assert [m["eval_labels" if dt != "train" else "labels"] for m in a] == \
                   [m["eval_labels" if dt != "train" else "labels"] for m in b]
            assert [m["text"] for m in a[1:]] == [m["text"] for m in b[1:]]
            assert a[0]["text"] == a[0]["chosen_topic"] == b[0]["title"]
            assert b[0]["text"].startswith("cast:")  # ParlAI: the section as text
            assert [m["gold_knowledge"] for m in a] == [m["checked_sentence"] for m in b]


def test_second_speaker_texts_are_not_doubled(cmu_datapath):
    """ParlAI 1.7.2 joined consecutive messages twice in every second-speaker episode;
    both teachers read them once here (docgraph:cmu_dog's reader, compat's fix)."""
    for task in ("docgraph:cmu_dog", "cmu_dog"):
        acts = teacher_acts(task, cmu_datapath, "test")
        labels = [m["eval_labels"][0] for m in acts]
        assert "Sounds exciting. I should watch it." in labels, (task, labels)
        assert not any("I should watch it. I should watch it." in x for x in labels)


def test_pools_and_pseudo_labels_in_the_messages(cmu_datapath):
    acts = teacher_acts("docgraph:cmu_dog", cmu_datapath, "test")
    by_reply = {m["eval_labels"][0]: m for m in acts}
    directed = by_reply["Mara Ellison directed it."]
    assert (directed["title"], directed["checked_sentence"]) == (
        "The Glass Harbour", "director: Mara Ellison")
    lines = directed["knowledge"].splitlines()
    assert lines[directed["checked_sentence_index"]] == "The Glass Harbour director: Mara Ellison"
    storm = by_reply["A storm wrecks the ferry near the old harbour."]
    assert [t for t, _ in storm["knowledge_passages"]] == ["The Glass Harbour (plot)",
                                                           "The Glass Harbour"]
    assert storm["doc_idx"] == 1 and storm["pseudo_label_f1"] == 1.0
    bye = by_reply["ok, bye then"]
    assert bye["title"] == bye["checked_sentence"] == NO_PASSAGE
    assert bye["conversation_id"] == "harbour_a" and bye["rating"] == 3
    chosen = teacher_acts("docgraph:cmu_dog", cmu_datapath, "test", "--label-type", "chosen_sent")
    by_line = {m["eval_labels"][0] for m in chosen}
    assert "The Glass Harbour director: Mara Ellison" in by_line and NO_KNOWLEDGE_LINE in by_line
    assert all(m["label_candidates"][0] == NO_KNOWLEDGE_LINE for m in chosen)
    only = teacher_acts("docgraph:cmu_dog", cmu_datapath, "test", "--knowledge-turns-only", "true")
    assert 0 < len(only) < len(acts) and all(m["title"] != NO_PASSAGE for m in only)


def test_seen_split_leaves_the_original_test_out_of_train_and_valid(cmu_datapath):
    test_ids = set(json.loads((cmu_datapath / "cmu_dog/conversations/test.json").read_text()))
    for dt in ("train:ordered", "valid"):
        kept = teacher_acts("docgraph:cmu_dog", cmu_datapath, dt, "--cmu-dog-split-type", "seen")
        assert not {m["conversation_id"] for m in kept} & test_ids
        every = teacher_acts("docgraph:cmu_dog", cmu_datapath, dt, "--cmu-dog-split-type", "seen",
                             "--cmu-dog-exclude-original-test", "false")
        assert len(every) >= len(kept) > 0
    # the fixture's seen valid drew harbour_a, a conversation of the release's test file
    assert "harbour_a" in {m["conversation_id"] for m in every}


def test_named_knowledge_and_conversation_sample(cmu_datapath):
    """--cmu-dog-knowledge names what the responder reads; --cmu-dog-conversations draws a
    seeded sample of whole conversations."""
    pseudo = teacher_acts("docgraph:cmu_dog", cmu_datapath, "test")
    by_mode = {mode: teacher_acts("docgraph:cmu_dog", cmu_datapath, "test",
                                  "--cmu-dog-knowledge", mode)
               for mode in ("random", "none", "section")}
    assert all(m["checked_sentence"] == NO_PASSAGE for m in by_mode["none"])
    assert [m["checked_sentence"] for m in by_mode["section"]] == [
        m["gold_knowledge"] for m in pseudo]
    for m in by_mode["random"]:
        line = f"{m['title']} {m['checked_sentence']}"
        assert m["knowledge"].splitlines()[m["checked_sentence_index"]] == line
    again = teacher_acts("docgraph:cmu_dog", cmu_datapath, "test", "--cmu-dog-knowledge", "random")
    assert [m["checked_sentence"] for m in again] == [m["checked_sentence"] for m in by_mode["random"]]
    # the labels and the texts do not change
    for acts in by_mode.values():
        assert [m["eval_labels"] for m in acts] == [m["eval_labels"] for m in pseudo]
    with pytest.raises(ValueError, match="go by the pseudo labels"):
        teacher_acts("docgraph:cmu_dog", cmu_datapath, "test", "--cmu-dog-knowledge", "none",
                     "--label-type", "chosen_sent")
    one = teacher_acts("docgraph:cmu_dog", cmu_datapath, "train:ordered",
                       "--cmu-dog-conversations", "3", "--cmu-dog-sample-seed", "1")
    assert len({m["conversation_id"] for m in one}) == 3
    same = teacher_acts("docgraph:cmu_dog", cmu_datapath, "train:ordered",
                        "--cmu-dog-conversations", "3", "--cmu-dog-sample-seed", "1")
    assert [m["eval_labels" if "eval_labels" in m else "labels"] for m in one] == \
        [m["eval_labels" if "eval_labels" in m else "labels"] for m in same]


def test_missing_data_names_the_install_command(datapath):
    with pytest.raises(MissingDatasetFile) as err:
        teacher_acts("docgraph:cmu_dog", datapath, "valid")
    assert "parlai-docgraph datasets install cmu_dog --from DIR_OR_ZIP" in str(err.value)


# ---------------------------------------------------------------------- the agents' view


@pytest.mark.parametrize("label_type", ["response", "chosen_sent"])
def test_parlai_messages_adapted_equal_docgraph_cmu_dog(cmu_datapath, label_type):
    """What the agents make of ParlAI's -t cmu_dog messages is -t docgraph:cmu_dog's."""
    from parlai_docgraph.agents.article_turns import ArticleTurns

    keys = ["text", "knowledge_passages", "knowledge", "title", "checked_sentence",
            "checked_sentence_index", "chosen_topic", "eval_labels"]
    if label_type == "chosen_sent":
        keys.append("label_candidates")
    ours = teacher_acts("docgraph:cmu_dog", cmu_datapath, "test", "--label-type", label_type)
    turns = ArticleTurns()
    adapted = [turns.adapt(m, label_type) for m in teacher_acts("cmu_dog", cmu_datapath, "test")]
    assert len(adapted) == len(ours)
    for a, b in zip(adapted, ours):
        assert {k: a.get(k) for k in keys} == {k: b.get(k) for k in keys}
        assert a["gold_knowledge"] == b["gold_knowledge"]
    # a message already in the docgraph form passes unchanged
    assert turns.adapt(ours[0], label_type) is ours[0]


def test_prepended_knowledge_block_is_cut_off():
    from parlai_docgraph.agents.article_turns import strip_knowledge_block

    assert strip_knowledge_block("__knowledge__ cast:x __endknowledge__\nHi there") == "Hi there"
    assert strip_knowledge_block("__knowledge__ cast:x __endknowledge__") == ""
    assert strip_knowledge_block("plain") == "plain"


def test_pseudo_labels_against_a_reading(cmu_datapath, tmp_path):
    from conftest import run_cli
    from parlai_docgraph.graphs.movie_articles import flat_index
    from parlai_docgraph.scripts.cmu_dog_labels import agreement, labels_of

    article = fx.MOVIES[0]
    facts = facts_passage(article["0"])
    scene = turn_pool(article["1"], facts[0], facts)
    storm = flat_index(scene, pseudo_label("A storm wrecks the ferry near the old harbour.",
                                           scene).position)
    # harbour_a's messages, a speaker's consecutive ones joined: 2 "Mara Ellison directed
    # it." (read here as using another sentence than its label, the director line), 4 the
    # storm, 5 "Sounds exciting. I should watch it." (read as using sentence 0), 6 "ok, bye then"
    reading = [{"conversation_id": "harbour_a", "message": 4, "used": [storm]},
               {"conversation_id": "harbour_a", "message": 6, "used": []},
               {"conversation_id": "harbour_a", "message": 5, "used": [0]},
               {"conversation_id": "harbour_a", "message": 2, "used": [99]}]
    labels = labels_of(str(cmu_datapath / "cmu_dog"), reading, [0.25, 1.1])
    assert labels[0.25][:3] == [storm, -1, -1] and labels[0.25][3] >= 0
    assert labels[1.1] == [-1] * 4
    # agree: the storm and the goodbye; the wrong sentence and the missed one do not
    assert agreement(reading, labels[0.25]) == {"agree": 2, "labelled": 2, "labelled_right": 1}
    assert agreement(reading, labels[1.1]) == {"agree": 1, "labelled": 0, "labelled_right": 0}
    with pytest.raises(ValueError, match="no message 40"):
        labels_of(str(cmu_datapath / "cmu_dog"), [dict(reading[0], message=40)], [0.25])
    with pytest.raises(ValueError, match="conversations not in"):
        labels_of(str(cmu_datapath / "cmu_dog"), [dict(reading[0], conversation_id="x")], [0.25])
    # the command as documented writes the result file
    path = tmp_path / "reading.json"
    path.write_text(json.dumps(reading))
    out = tmp_path / "labels.json"
    done = run_cli(["parlai-docgraph", "cmu_dog_labels", "--reading", str(path), "--datapath",
                    str(cmu_datapath), "--out", str(out)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())["cmu_dog_pseudo_labels"]
    assert result["turns"] == 4 and result["turns_using_the_pool"] == 3
    assert result["by_threshold"]["0.25"]["agree"] == 2


def test_speed_study_trains_the_recipe_without_its_run_length():
    """The CMU_DoG speed study times the zoo recipe's parts as they train, less the options
    that only set how long the recipe runs and how it logs."""
    from parlai_docgraph.bench.cmu_dog_speed import RUN_ONLY, recipe_part
    from parlai_docgraph.recipes import zoo_recipe

    for part in ("selector", "responder"):
        full = list(getattr(zoo_recipe("cmu_dog"), part))
        args = recipe_part(part)
        assert any(flag in full for flag in RUN_ONLY)
        assert not set(RUN_ONLY) & set(args)
        assert len(full) - len(args) == 2 * sum(flag in full for flag in RUN_ONLY)
        assert args[args.index("-m") + 1] == full[full.index("-m") + 1]


def test_margin_choice_combines_the_two_valid_runs_per_turn(tmp_path):
    """``cmu_dog_margin``: at margin m a turn reads its sentence where its gap is at most m;
    F1 at each margin combines the two runs' replies, and the best F1 (smallest margin among
    equals) is chosen. Runs over different turns are refused."""
    from parlai_docgraph.scripts.cmu_dog_margin import best_margin, logged_turns, margin_curve

    def log(path, replies, gaps):
        humans = ["the shark is big", "i liked the ending", "who directed it"]
        dialog = [[{"id": "cmu_dog", "eval_labels": [h]},
                   {"id": "Docgraph", "text": r, **({} if g is None else
                                                    {"no_knowledge_gap": g})}]
                  for h, r, g in zip(humans, replies, gaps)]
        path.write_text(json.dumps({"dialog": dialog[:2]}) + "\n"
                        + json.dumps({"dialog": dialog[2:]}) + "\n")
        return logged_turns(str(path))

    with_sentence = log(tmp_path / "s.jsonl", ["the shark is big", "no idea", "spielberg"],
                        [0.5, 2.0, None])
    without = log(tmp_path / "n.jsonl", ["hello", "i liked the ending", "who directed it"],
                  [None, None, None])
    assert [t[2] for t in with_sentence] == [0.5, 2.0, None]
    # the generator's own text where the answer check replaced it
    checked = json.loads((tmp_path / "s.jsonl").read_text().splitlines()[0])
    checked["dialog"][1][1].update(text="the whole sentence", generated_text="no idea")
    (tmp_path / "c.jsonl").write_text(json.dumps(checked) + "\n")
    assert [t[1] for t in logged_turns(str(tmp_path / "c.jsonl"))] == [
        "the shark is big", "the whole sentence"]
    assert logged_turns(str(tmp_path / "c.jsonl"), generated=True)[1][1] == "no idea"
    curve = margin_curve(with_sentence, without)
    assert [p["margin"] for p in curve] == [float("-inf"), 0.5, 2.0]
    assert [round(p["sentence_turns"], 3) for p in curve] == [0.0, 0.333, 0.667]
    # -inf: 0 + 1 + 1; 0.5: 1 + 1 + 1 (the gapless third turn never reads a sentence); 2.0: 1 + 0 + 1
    assert [round(p["f1"], 3) for p in curve] == [0.667, 1.0, 0.667]
    assert best_margin(curve)["margin"] == 0.5
    assert best_margin([{"margin": 1.0, "f1": 0.5}, {"margin": -1.0, "f1": 0.5}])["margin"] == -1.0
    with pytest.raises(ValueError, match="different turns"):
        margin_curve(with_sentence, without[:2])


def test_margin_script_without_logs_dir_fails_clearly(tmp_path):
    """``--logs-dir`` is checked by the script, not by argparse (a required option made
    ``parlai-docgraph --help`` print this script's usage): without it the script stops
    before building or reading anything."""
    from parlai_docgraph.scripts.cmu_dog_margin import CmuDogMargin

    with pytest.raises(ValueError, match="--logs-dir"):
        CmuDogMargin.main("--datapath", str(tmp_path))
    assert not any(tmp_path.iterdir())


def test_valid_settings_are_parsed_stored_and_chosen_by_f1(tmp_path):
    """``cmu_dog_valid``: ``name=options;...`` settings; each run is added to one result file
    under a lock and the setting of highest F1 is chosen (the first listed among equals); a
    file measured on other turns is refused; without settings the script stops before
    building anything."""
    from parlai_docgraph.scripts.cmu_dog_valid import CmuDogValid, parse_settings, store_setting

    assert parse_settings("greedy=--inference greedy; beam3=--inference beam --beam-size 3") == [
        ("greedy", ["--inference", "greedy"]), ("beam3", ["--inference", "beam", "--beam-size", "3"])]
    for bad in ("", "--inference greedy", "a=x;a=y", "=x"):
        with pytest.raises(ValueError, match="--settings"):
            parse_settings(bad)
    out, setup = str(tmp_path / "valid.json"), {"fold": "valid", "conversations": 2}
    for name, f1 in (("a", 0.11), ("b", 0.12), ("c", 0.12)):
        data = store_setting(out, name, {"figures": {"f1": f1}, "options": name}, setup)
    assert data["cmu_dog_valid"]["chosen"] == "b"
    assert set(json.loads((tmp_path / "valid.json").read_text())["cmu_dog_valid"]["settings"]) == {
        "a", "b", "c"}
    with pytest.raises(ValueError, match="other turns"):
        store_setting(out, "d", {"figures": {"f1": 0.5}}, {"fold": "valid", "conversations": 3})
    with pytest.raises(ValueError, match="--settings"):
        CmuDogValid.main("--datapath", str(tmp_path / "dp"))
    assert not (tmp_path / "dp").exists()
