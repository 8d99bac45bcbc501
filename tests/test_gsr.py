"""
DialogGSR (``-m docgraph/gsr``): tiny offline T5, constrained retrieval, losses, freezing,
teacher candidates from the history only, metrics, and train + eval through ParlAI.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import run_cli, teacher_acts

from parlai_docgraph.models.gsr.inputs import GSRInputs, PlainLinearizer, make_linearizer
from parlai_docgraph.kg import fields as kg_fields
from parlai_docgraph.kg import metrics as kgm
from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.kg.subgraph import Hop
from parlai_docgraph.models.gsr.model import (
    LABEL_PAD, TINY_DIR, GSRModel, GSRUnavailable, load_seq2seq, load_gsr_tokenizer as load_tokenizer,
)

SLOTS = 2


@pytest.fixture(scope="module")
def tiny():
    lin = Linearizer(slot_tokens=SLOTS)
    tok = load_tokenizer("tiny", None, lin.special_tokens())
    model = GSRModel(
        load_seq2seq("tiny", seed=0), tok.pad_token_id, tok.eos_token_id,
        tok.convert_tokens_to_ids(lin.special_tokens()),
    ).eval()
    return model, tok, GSRInputs(tok, lin)


@pytest.fixture(scope="module")
def sample_turns(tmp_path_factory):
    """Sample-KG training messages that have candidates (history-only, from the teacher)."""
    acts = teacher_acts("docgraph:sample_kg", tmp_path_factory.mktemp("dp"))
    return [a for a in acts if a.get("kg_candidates")]


def _info(inputs, act):
    return (
        inputs.context(act["text"]),
        [kg_fields.json_to_path(p) for p in act["kg_candidates"]],
        [kg_fields.json_to_path(p) for p in act["kg_gold_paths"]],
    )


# ----------------------------------------------------------------------------- assets


def test_tiny_t5_assets_small_reproducible_and_hold_the_tokens():
    import os

    size = sum(os.path.getsize(os.path.join(TINY_DIR, f)) for f in os.listdir(TINY_DIR))
    assert size < 2_000_000
    out = subprocess.run(
        [sys.executable, "tools/make_tiny_t5.py", "--check"],
        capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(__file__)),
    )
    assert out.returncode == 0, out.stderr
    tok = load_tokenizer("tiny")
    for t in Linearizer(slot_tokens=2).special_tokens() + Linearizer(slot_tokens=1).special_tokens():
        ids = tok(t, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1, t  # never split
    n = sum(p.numel() for p in load_seq2seq("tiny").parameters())
    assert 100_000 < n < 1_000_000


def test_offline_hub_name_fails_clearly():
    with pytest.raises(GSRUnavailable) as err:
        load_tokenizer("docgraph-tests/no-such-t5", "/nonexistent/dp")
    msg = str(err.value)
    assert "offline" in msg and "hf download docgraph-tests/no-such-t5" in msg
    assert "/nonexistent/dp/hf/docgraph-tests/no-such-t5" in msg and "--gsr-model tiny" in msg


# ----------------------------------------------------------------------------- losses


def test_padding_is_never_a_label(tiny):
    model, tok, inputs = tiny
    src = [inputs.ids("dialogue: hello there") + [inputs.eos], inputs.ids("hi") + [inputs.eos]]
    tgt = [inputs.ids("a long target sentence here") + [inputs.eos], [inputs.eos]]
    with torch.no_grad():
        loss, labels, notnull, _ = model.token_losses(src, tgt)
        alone, _, m1, _ = model.token_losses(src[1:], tgt[1:])
    assert labels.shape[1] == len(tgt[0])
    assert (labels[1, 1:] == LABEL_PAD).all() and labels[1, 0] == inputs.eos
    assert (labels != tok.pad_token_id).all()  # pad id 0 never appears as a label
    assert notnull.sum() == len(tgt[0]) + 1
    assert (loss[1, 1:] == 0).all()
    assert loss[1, 0].item() == pytest.approx(alone[0, 0].item(), rel=1e-4, abs=1e-5)


def test_pretraining_trains_only_special_token_rows(tiny):
    _, tok, inputs = tiny
    lin = inputs.lin
    special = tok.convert_tokens_to_ids(lin.special_tokens())
    model = GSRModel(load_seq2seq("tiny", seed=1), tok.pad_token_id, tok.eos_token_id, special).train()
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model.train_only_rows()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.0)
    path = (Hop("Amélie", "has_genre", "Comedy"), Hop("Comedy", "has_genre", "Big", True))
    rng = random.Random(0)
    for _ in range(3):
        src, tgt = inputs.reconstruction_pair(path, rng)
        loss, _, mask, _ = model.token_losses([src], [tgt])
        opt.zero_grad()
        (loss.sum() / mask.sum()).backward()
        opt.step()
    after = model.state_dict()
    emb_key = [k for k in after if k.endswith("shared.weight")][0]
    changed_rows = (after[emb_key] != before[emb_key]).any(dim=1).nonzero().flatten().tolist()
    assert changed_rows and set(changed_rows) <= set(special)
    for k, v in after.items():
        if not torch.equal(v, before[k]):
            assert v.data_ptr() == after[emb_key].data_ptr() or k.endswith(("shared.weight", "embed_tokens.weight", "lm_head.weight")), k
    model.release_rows()
    assert all(p.requires_grad for p in model.parameters())


def test_reconstruction_masks_exactly_one_element(tiny):
    _, _, inputs = tiny
    path = (Hop("Amélie", "has_genre", "Comedy"), Hop("Comedy", "has_genre", "Big", True))
    seen = set()
    for seed in range(40):
        src, tgt = inputs.reconstruction_pair(path, random.Random(seed))
        text = inputs.tok.decode(src, skip_special_tokens=False)
        assert text.count("<extra_id_0>") == 1
        parsed = inputs.lin.parse_paths(text.replace("</s>", ""))[0]
        names = [parsed[0].source] + [x for h in parsed for x in (h.relation, h.target)]
        want = ["Amélie", "has_genre", "Comedy", "has_genre", "Big"]
        diff = [i for i, (a, b) in enumerate(zip(names, want)) if a != b]
        assert len(diff) == 1 and names[diff[0]] == "<extra_id_0>"
        seen.add(diff[0])
        assert tgt == inputs.path_target(path)
    assert seen == set(range(5))  # entities and relations both get masked


def test_retrieval_pairs_iterate_and_stop(tiny):
    _, _, inputs = tiny
    p1, p2 = (Hop("A", "r", "B"),), (Hop("B", "s", "C"),)
    pairs = inputs.retrieval_pairs([5, 6], [p1, p2], steps=2)
    assert [t for _, t in pairs] == [inputs.path_target(p1), inputs.path_target(p2)]
    pairs = inputs.retrieval_pairs([5, 6], [p1], steps=2)
    assert pairs[1][1] == [inputs.eos]  # learn to stop after the gold subgraph
    assert inputs.ids(inputs.lin.linearize([p1])) == pairs[1][0][len(inputs._ret):][: len(inputs.ids(inputs.lin.linearize([p1])))]


# ----------------------------------------------------------------------------- decoding


def test_every_constrained_beam_is_a_valid_kg_path(tiny, sample_turns):
    from parlai_docgraph.agents.gsr.evaluation import entity_scores

    model, tok, inputs = tiny
    kg = kg_fields.load_kg(sample_turns[0]["kg_file"])[0]
    acts = sample_turns[:8]
    infos = [_info(inputs, a) for a in acts]
    sources = [inputs.retrieve_source(c) for c, _, _ in infos]
    tries = [inputs.trie(cands) for _, cands, _ in infos]
    for scores in (None, [entity_scores(kg, {"mentioned": a["kg_mentioned"], "candidates": i[1]}, "katz", 0.1, 2)
                          for a, i in zip(acts, infos)]):
        out = model.generate_paths(sources, tries, entity_scores=scores, num_beams=5, num_return=5, max_new_tokens=80)
        total = 0
        for hyps, (_, cands, _) in zip(out, infos):
            assert len(hyps) == min(5, len(cands))
            for ids, _ in hyps:
                text = tok.decode(ids, skip_special_tokens=False)
                triples = inputs.lin.parse_triples(text)  # strict: raises if malformed
                assert triples and all(kg.has_triple(*t) for t in triples), text
                assert inputs.decode_path(ids) in cands
                total += 1
        assert total >= 20


def test_constrained_and_unconstrained_differ(tiny, sample_turns):
    model, tok, inputs = tiny
    infos = [_info(inputs, a) for a in sample_turns[:4]]
    sources = [inputs.retrieve_source(c) for c, _, _ in infos]
    free = model.generate_paths(sources, None, num_beams=5, num_return=5, max_new_tokens=40)
    cons = model.generate_paths(sources, [inputs.trie(c) for _, c, _ in infos], num_beams=5, num_return=5, max_new_tokens=80)
    assert [h[0][0] for h in free] != [h[0][0] for h in cons]
    # an untrained model does not write valid paths on its own
    assert sum(inputs.decode_path(ids) is not None for hyps in free for ids, _ in hyps) < sum(len(h) for h in free)


def test_katz_prior_reweights_the_beams(tiny, sample_turns):
    model, _, inputs = tiny
    act = max(sample_turns, key=lambda a: len(a["kg_candidates"]))
    ctx, cands, _ = _info(inputs, act)
    src = [inputs.retrieve_source(ctx)]
    top = {e for p in cands for e in (p[-1].target,)}
    skew = [{e: (1.0 if i % 7 == 0 else 1e-6) for i, e in enumerate(sorted(top))}]
    hard = model.generate_paths(src, [inputs.trie(cands)], None, max_new_tokens=80)
    soft = model.generate_paths(src, [inputs.trie(cands)], skew, alpha=0.2, max_new_tokens=80)
    assert [h for h, _ in hard[0]] != [h for h, _ in soft[0]]


def test_plain_linearizer_round_trips():
    lin = make_linearizer(False, 2, 2)
    assert isinstance(lin, PlainLinearizer) and lin.special_tokens() == []
    path = (Hop("Amélie", "has_genre", "Comedy"), Hop("Comedy", "has_genre", "The Wolf", True))
    text = lin.linearize([path, path[:1]])
    assert "[" not in text and lin.parse_paths(text) == [path, path[:1]]


# ----------------------------------------------------------------------------- teacher


def test_teacher_candidates_come_from_the_history_only(tmp_path):
    from parlai_docgraph.tasks.docgraph.readers.opendialkg import assistant_turns, read_opendialkg

    acts = teacher_acts("docgraph:sample_kg", tmp_path)
    kg, linker = kg_fields.load_kg(acts[0]["kg_file"])
    data = read_opendialkg(acts[0]["kg_file"].replace("opendialkg_triples.txt", "opendialkg.csv"))
    turns = {(t.dialogue_id, t.turn_index): t for d in data.dialogues for t in assistant_turns(d)}
    leaked_candidates = 0
    for act in acts:
        turn = turns[(act["dialogue_id"], act["turn_id"])]
        history = turn.history + ([turn.text] if turn.text else [])
        assert act["kg_history"] == history
        assert act["kg_mentioned"] == [e for e in linker.link_turns(history) if kg.has_entity(e)]
        assert set(act["kg_mentioned"]) <= set(linker.link_turns(history))
        # the response and later turns play no part: recomputing from the history alone
        again = kg_fields.candidate_fields(kg, linker, history, [])
        assert again["kg_candidates"] == act["kg_candidates"]
        future = set(linker.link_turns([act["labels"][0]])) - set(linker.link_turns(history))
        leaked_candidates += bool(future & set(act["kg_mentioned"]))
        if act["kg_gold_index"] >= 0:
            gold = kg_fields.json_to_path(act["kg_gold_paths"][0])
            assert kg_fields.json_to_path(act["kg_candidates"][act["kg_gold_index"]]) == gold
    assert leaked_candidates == 0
    assert sum(a["kg_gold_index"] >= 0 for a in acts) > len(acts) // 3
    off = teacher_acts("docgraph:sample_kg", tmp_path, "train:ordered", "--kg-candidates", "false")
    assert "kg_candidates" not in off[0] and "kg_history" not in off[0]
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    opt = ParlaiParser(True, False).parse_args(
        ["-t", "docgraph:sample_kg", "--datapath", str(tmp_path), "-dt", "train:stream"]
    )
    stream = create_task_agent_from_taskname(opt)[0]  # stream mode bypasses get()
    for act in acts[:5]:
        assert stream.act()["kg_candidates"] == act["kg_candidates"]


# ----------------------------------------------------------------------------- metrics


def test_retrieval_and_response_metrics():
    from parlai_docgraph.kg.store import KnowledgeGraph

    kg = KnowledgeGraph.from_triples([("A", "r", "B"), ("B", "s", "C")])
    gold = [("A", "r", "B")]
    assert kgm.path_at_k([[("B", "s", "C")], gold], gold, 1) is False
    assert kgm.path_at_k([[("B", "s", "C")], gold], gold, 3) is True
    assert kgm.path_valid(kg, gold) and not kgm.path_valid(kg, [("A", "s", "B")])
    assert kgm.bleu("the cat sat on the mat", ["the cat sat on the mat"])["bleu-4"] == pytest.approx(1.0)
    assert kgm.bleu("dog", ["the cat sat"])["bleu-1"] < 0.1
    assert kgm.knowledge_entity_recall("I loved a. And b!", [gold]) == 1.0
    assert kgm.knowledge_entity_recall("I loved A.", [gold]) == 0.5
    assert kgm.knowledge_entity_recall("x", []) is None
    c = kgm.corpus_bleu(["the cat sat", "a dog"], [["the cat sat"], ["a dog ran"]])
    assert 0 < c["bleu-2"] < 1


# ----------------------------------------------------------------------------- ParlAI


def _report(text: str) -> dict:
    reports = re.findall(r"^\{.*\}$", text, flags=re.M)
    assert reports, text[-3000:]
    return json.loads(reports[-1])


def test_train_and_eval_through_parlai(tmp_path, datapath):
    mf = tmp_path / "gsr"
    common = ["-t", "docgraph:sample_kg", "--datapath", str(datapath)]
    out = run_cli(
        ["parlai", "train_model", "-m", "docgraph/gsr", "--gsr-model", "tiny", *common,
         "-mf", str(mf), "-bs", "8", "--max-train-steps", "8", "--gsr-pretrain-steps", "2",
         "--gsr-stage", "all", "-vstep", "8", "--validation-max-exs", "4", "--short-final-eval", "true",
         "-vmt", "loss", "-vmm", "min"],
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "gsr.hf" / "tokenizer.json").exists()
    reports = {}
    for constraint in ("katz", "none"):
        out = run_cli(
            ["parlai", "eval_model", "-mf", str(mf), *common, "-dt", "valid", "-bs", "4", "-ne", "12",
             "--gsr-constraint", constraint, "--gsr-retrieval-steps", "1"],
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        reports[constraint] = _report(out.stdout + "\n" + out.stderr)
    katz = reports["katz"]
    assert katz["path_valid"] == 1.0
    assert 0 <= katz["path@1"] <= katz["path@3"] <= 1
    for key in ("resp_bleu-1", "resp_sbleu-1", "resp_rouge_L", "resp_f1", "knowledge_entity_recall", "ret_loss", "gen_loss"):
        assert key in katz, key
    assert reports["none"]["path_valid"] < 1.0

    # interactive over a triples file: the retrieved path is shown and lies in that KG
    from conftest import BIN, offline_env
    from parlai_docgraph.kg.linearize import Linearizer
    from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH

    triples = Path(SAMPLE_DATAPATH) / "opendialkg" / "opendialkg_triples.txt"
    chat = subprocess.run(
        [str(BIN / "parlai"), "interactive", "-mf", str(mf), "--gsr-kg-file", str(triples)],
        input="I just watched Amélie, what should I watch next?\n[EXIT]\n", text=True,
        capture_output=True, cwd=str(tmp_path), env=offline_env(), timeout=300)
    assert chat.returncode == 0, chat.stderr[-3000:]
    shown = [line.split("[retrieved]: ", 1)[1] for line in chat.stdout.splitlines()
             if "[retrieved]: " in line]
    assert shown and shown[0].startswith("[Head] Amélie"), chat.stdout[-2000:]
    kg_lines = {tuple(line.rstrip("\n").split("\t")) for line in triples.open(encoding="utf-8")}
    for h, r, t in Linearizer(slot_tokens=2).parse_triples(shown[0]):
        assert (h, r, t) in kg_lines, (h, r, t)


def test_validation_evaluates_in_batches_of_eight_unless_told():
    """train_model's validation batches (--eval-batchsize) default to 8 for DialogGSR: a CPU
    decoding step costs about the same for 2 rows as for 10 (bench/gsr_eval_speed.py)."""
    from parlai.scripts.train_model import TrainModel

    from parlai_docgraph.agents.gsr.args import EVAL_BATCHSIZE

    base = ["-m", "docgraph/gsr", "-t", "docgraph:sample_kg", "-bs", "2", "-mf", "/tmp/x"]
    assert TrainModel.setup_args().parse_args(base)["eval_batchsize"] == EVAL_BATCHSIZE == 8
    assert TrainModel.setup_args().parse_args(base + ["--eval-batchsize", "3"])["eval_batchsize"] == 3
    assert TrainModel.setup_args().parse_args(base)["batchsize"] == 2  # training batches: -bs


def test_pretrain_stage_through_parlai_moves_only_special_rows(tmp_path, datapath):
    """``--gsr-stage pretrain`` with weight decay and AdamW: all but the special rows stay put."""
    from parlai.scripts.train_model import TrainModel

    mf = tmp_path / "pre"
    TrainModel.main(
        model="docgraph/gsr", gsr_model="tiny", task="docgraph:sample_kg", datapath=str(datapath),
        model_file=str(mf), batchsize=8, max_train_steps=3, gsr_stage="pretrain", weight_decay=0.1,
        validation_every_n_steps=1000, short_final_eval=True, validation_max_exs=2,
    )
    state = torch.load(str(mf), map_location="cpu", weights_only=False)["model"]
    fresh = load_seq2seq("tiny", seed=0).state_dict()
    tok = load_tokenizer("tiny", None, Linearizer(slot_tokens=SLOTS).special_tokens())
    special = set(tok.convert_tokens_to_ids(Linearizer(slot_tokens=SLOTS).special_tokens()))
    moved = set()
    for key, value in fresh.items():
        saved = state["lm." + key]
        if key.endswith("shared.weight") or key.endswith("embed_tokens.weight") or key == "lm_head.weight":
            moved |= set((saved != value).any(dim=1).nonzero().flatten().tolist())
        else:
            assert torch.equal(saved, value), key
    assert moved and moved <= special


def test_ablation_option_sets_parse():
    from parlai.core.params import ParlaiParser

    from parlai_docgraph.recipes.gsr_ablations import ABLATIONS, PAPER_TABLE5, cli_args

    assert set(ABLATIONS) == set(PAPER_TABLE5)
    for name, variant in ABLATIONS.items():
        args = ["-m", "docgraph/gsr", *cli_args(variant["train"]), *cli_args(variant["eval"])]
        opt = ParlaiParser(True, True).parse_args(args)
        for key, value in {**variant["train"], **variant["eval"]}.items():
            assert opt[key] == value, (name, key)


def test_length_penalty_reaches_the_beams(tiny, sample_turns):
    model, _, inputs = tiny
    infos = [_info(inputs, a) for a in sample_turns[:2]]
    sources = [inputs.retrieve_source(c) for c, _, _ in infos]
    tries = [inputs.trie(c) for _, c, _ in infos]
    short = model.generate_paths(sources, tries, num_beams=3, num_return=3, max_new_tokens=80, length_penalty=0.0)
    long_ = model.generate_paths(sources, tries, num_beams=3, num_return=3, max_new_tokens=80, length_penalty=2.0)
    # HF semantics: beam score = sum log p / len^penalty, so the scores of the best beams change
    assert [h[0][1] for h in short] != [h[0][1] for h in long_]
    text = model.generate_text(sources, num_beams=3, max_new_tokens=8, length_penalty=0.0)
    assert len(text) == len(sources)


def _gsr_agent(datapath, *args):
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    opt = ParlaiParser(True, True).parse_args(
        ["-m", "docgraph/gsr", "--gsr-model", "tiny", "-t", "docgraph:sample_kg",
         "--datapath", str(datapath), "--gsr-retrieval-steps", "1", *args])
    return create_agent(opt)


def test_train_knowledge_gold_or_retrieved(datapath, sample_turns):
    """``--gsr-train-knowledge``: the response loss conditions on the gold paths (default)
    or, as Park et al. Eq. 10, on the subgraph the model itself retrieves for the turn;
    evaluation losses keep the gold paths."""
    acts = [a for a in sample_turns if a.get("kg_gold_paths")][:4]
    sources = {}
    for mode in ("gold", "retrieved"):
        agent = _gsr_agent(datapath, "--gsr-stage", "respond", "--gsr-train-knowledge", mode)
        obs = []
        for act in acts:
            obs.append(agent.observe(dict(act, episode_done=True)))
            agent.self_observe({})
        batch = agent.batchify(obs)
        agent.is_training = True
        agent.model.train()
        gen = agent.stage_pairs(batch)["gen"]
        assert [i for i, _, _ in gen] == list(range(len(acts)))
        infos = batch["gsr"]
        if mode == "retrieved":
            from parlai_docgraph.agents.gsr.evaluation import example_kg

            assert agent.model.training  # retrieval ran in eval mode, then training resumed
            agent.model.eval()  # the same decoding, without dropout
            with torch.no_grad():
                _, got = agent.retrieve(infos, [example_kg(i) for i in infos])
            want = [agent.inputs.respond_source(info["context"], g) for info, g in zip(infos, got)]
        else:
            want = [agent.inputs.respond_source(info["context"], info["gold"][:1]) for info in infos]
        assert [src for _, src, _ in gen] == want
        sources[mode] = want
        agent.is_training = False  # evaluation: gold paths whatever the option
        gold_eval = [agent.inputs.respond_source(info["context"], info["gold"][:1]) for info in infos]
        assert [src for _, src, _ in agent.stage_pairs(batch)["gen"]] == gold_eval
        agent.is_training = True
        agent.train_step(batch)  # one ParlAI update through the option's path
        assert any(p.grad is not None and float(p.grad.abs().sum()) > 0
                   for p in agent.model.parameters())
    assert sources["gold"] != sources["retrieved"]  # an untrained retriever misses gold paths


def test_staged_training_respond_reads_a_frozen_retriever(tmp_path, datapath, sample_turns):
    """Park 3.4's stages: a retrieve-stage model, then a respond-stage model whose responses
    are conditioned on what that retriever (frozen, --gsr-retriever-model-file) retrieves,
    in training and evaluation; the retriever decodes with the caller's options."""
    from parlai.scripts.train_model import TrainModel

    from parlai_docgraph.agents.gsr.evaluation import example_kg

    common = dict(model="docgraph/gsr", gsr_model="tiny", task="docgraph:sample_kg",
                  datapath=str(datapath), batchsize=4, validation_every_n_steps=1000,
                  short_final_eval=True, validation_max_exs=2, gsr_retrieval_steps=1)
    retriever_file = tmp_path / "retriever"
    TrainModel.main(**common, model_file=str(retriever_file), max_train_steps=3,
                    gsr_stage="retrieve")
    before = torch.load(str(retriever_file), map_location="cpu", weights_only=False)["model"]
    agent = _gsr_agent(datapath, "--gsr-stage", "respond", "--gsr-train-knowledge", "retrieved",
                       "--gsr-retriever-model-file", str(retriever_file), "--init-model",
                       str(retriever_file), "--gsr-constraint", "hard")
    retriever = agent.retrieval_agent()
    assert retriever is not agent and not retriever.model.training
    assert retriever.opt["gsr_constraint"] == "hard" and retriever.stage == "retrieve"
    assert not any(p.requires_grad for p in retriever.model.parameters())
    acts = [a for a in sample_turns if a.get("kg_gold_paths")][:4]
    obs = []
    for act in acts:
        obs.append(agent.observe(dict(act, episode_done=True)))
        agent.self_observe({})
    batch = agent.batchify(obs)
    agent.is_training = True
    agent.model.train()
    infos = batch["gsr"]
    _, got = retriever.retrieve(infos, [example_kg(i) for i in infos])
    want = [agent.inputs.respond_source(info["context"], g) for info, g in zip(infos, got)]
    assert [src for _, src, _ in agent.stage_pairs(batch)["gen"]] == want
    agent.train_step(batch)
    # the response model trained; the retriever did not
    assert any(p.grad is not None for p in agent.model.parameters())
    for key, value in retriever.model.state_dict().items():
        assert torch.equal(value, before[key]), key
    # a respond-stage model file reloads its retriever for evaluation (path@k are its)
    respond_file = tmp_path / "respond"
    TrainModel.main(**common, model_file=str(respond_file), max_train_steps=2, gsr_stage="respond",
                    gsr_train_knowledge="retrieved", init_model=str(retriever_file),
                    gsr_retriever_model_file=str(retriever_file))
    from parlai.scripts.eval_model import EvalModel

    report = EvalModel.main(model_file=str(respond_file), task="docgraph:sample_kg",
                            datapath=str(datapath), datatype="valid", num_examples=4,
                            batchsize=2, gsr_retrieval_steps=1)
    assert "path@1" in report and "resp_bleu-1" in report
    with pytest.raises(ValueError, match="--gsr-stage respond"):
        _gsr_agent(datapath, "--gsr-stage", "all", "--gsr-retriever-model-file", str(retriever_file))
    with pytest.raises(ValueError, match="tokenizer differs"):
        _gsr_agent(datapath, "--gsr-stage", "respond", "--gsr-hops", "3",
                   "--gsr-retriever-model-file", str(retriever_file))


def test_decoding_options_reach_the_beams(datapath, sample_turns, monkeypatch):
    """--katz-adjacency and --gsr-lm-norm (defaults: Park's counted paths and p_LM
    renormalised over the valid set) reach the entity scores and the logits processor;
    models saved before them keep the binary adjacency and the full-vocabulary p_LM."""
    from parlai_docgraph.agents.gsr import agent as gsr_agent
    from parlai_docgraph.agents.gsr import evaluation
    from parlai_docgraph.agents.gsr.agent import GSRAgent

    seen = {}
    real_scores = evaluation.entity_scores

    def spy_scores(*args, **kw):
        seen["adjacency"] = args[5] if len(args) > 5 else kw.get("adjacency")
        return real_scores(*args, **kw)

    monkeypatch.setattr(evaluation, "entity_scores", spy_scores)
    acts = [a for a in sample_turns if a.get("kg_candidates")][:2]
    for args, want in (((), ("count", "allowed")),
                       (("--katz-adjacency", "directed", "--gsr-lm-norm", "vocab"), ("directed", "vocab"))):
        agent = _gsr_agent(datapath, "--gsr-stage", "retrieve", *args)
        model = agent.gsr()
        real = model.generate_paths

        def spy_paths(*a, **kw):
            seen["lm_norm"] = kw.get("lm_norm")
            return real(*a, **kw)

        monkeypatch.setattr(model, "generate_paths", spy_paths)
        obs = [agent.observe(dict(a, episode_done=True)) for a in acts[:1]]
        batch = agent.batchify(obs)
        agent.retrieve(batch["gsr"], [evaluation.example_kg(i) for i in batch["gsr"]])
        assert (seen["adjacency"], seen["lm_norm"]) == want
    from parlai.core.params import ParlaiParser

    saved = ParlaiParser(True, True).parse_args(["-m", "docgraph/gsr"])
    assert (saved["katz_adjacency"], saved["gsr_lm_norm"]) == ("count", "allowed")
    for key in ("katz_adjacency", "gsr_lm_norm"):
        del saved[key]  # an opt file written before the options
    old = GSRAgent.upgrade_opt(saved)
    assert (old["katz_adjacency"], old["gsr_lm_norm"]) == ("binary", "vocab")
    assert gsr_agent.SAVED_BEFORE == {"katz_adjacency": "binary", "gsr_lm_norm": "vocab",
                                      "gsr_chat_template": "false"}


def test_the_frozen_retriever_refuses_a_wrong_stage_or_a_missing_file(tmp_path):
    """``--gsr-retriever-model-file`` is read in the response stage only, and a path with no
    model file there is named in the error (the staged training itself is trained above)."""
    from parlai_docgraph.agents.gsr.retriever import load_retriever

    opt = {"gsr_retriever_model_file": str(tmp_path / "absent"), "gsr_stage": "all",
           "datapath": str(tmp_path)}
    with pytest.raises(ValueError, match=r"is for --gsr-stage respond .*got --gsr-stage all"):
        load_retriever(opt, None)
    opt["gsr_stage"] = "respond"
    with pytest.raises(ValueError, match="absent: no model file there"):
        load_retriever(opt, None)
