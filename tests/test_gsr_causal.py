"""
DialogGSR with decoder-only causal LMs: tiny random Llama- and Qwen-style
models built in the test; constrained retrieval with left padding and batched beams,
causal losses, pretraining rows, and train + eval through ParlAI.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
from pathlib import Path

import pytest
import torch

from conftest import run_cli, teacher_acts
from modern_lm import make_tiny_lm

from parlai_docgraph.agents.gsr.evaluation import entity_scores
from parlai_docgraph.models.gsr.inputs import GSRInputs
from parlai_docgraph.kg import fields as kg_fields
from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.kg.subgraph import Hop
from parlai_docgraph.models.gsr.model import LABEL_PAD, load_lm, load_gsr_tokenizer as load_tokenizer
from parlai_docgraph.models.gsr.build import build_gsr_model
from parlai_docgraph.models.gsr.causal import CausalGSRModel
from parlai_docgraph.models.gsr.model import GSRModel

FAMILIES = ("llama", "qwen")


@pytest.fixture(scope="module")
def lm_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("lms")
    return {f: make_tiny_lm(f, root / f) for f in FAMILIES}


def _build(directory: Path, seed: int = 0):
    lin = Linearizer(slot_tokens=2)
    tok = load_tokenizer(str(directory), None, lin.special_tokens())
    model = build_gsr_model(load_lm(str(directory), seed=seed), tok, lin.special_tokens())
    return model.eval(), tok, GSRInputs(tok, lin)


@pytest.fixture(scope="module")
def sample_turns(tmp_path_factory):
    acts = teacher_acts("docgraph:sample_kg", tmp_path_factory.mktemp("dp"))
    return [a for a in acts if a.get("kg_candidates")]


@pytest.mark.parametrize("family", FAMILIES)
def test_causal_model_is_picked_and_new_rows_exist(lm_dirs, family):
    model, tok, _ = _build(lm_dirs[family])
    assert isinstance(model, CausalGSRModel)
    assert model.lm.get_input_embeddings().num_embeddings == len(tok)
    assert tok.pad_token_id is not None
    # the structural tokens and the mask are single new tokens
    assert len(model.special_ids) == len(Linearizer(slot_tokens=2).special_tokens()) + 1


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("bsz", (1, 8))
def test_every_constrained_beam_is_in_the_kg(lm_dirs, sample_turns, family, bsz):
    """path_valid 1.0 under every constraint, left padding (prompts of different lengths), 5 beams."""
    model, tok, inputs = _build(lm_dirs[family])
    kg = kg_fields.load_kg(sample_turns[0]["kg_file"])[0]
    acts = sorted(sample_turns, key=lambda a: len(a["text"]))[:: max(len(sample_turns) // bsz, 1)][:bsz]
    infos = [(inputs.context(a["text"]), [kg_fields.json_to_path(p) for p in a["kg_candidates"]]) for a in acts]
    sources = [inputs.retrieve_source(c) for c, _ in infos]
    if bsz > 1:
        assert len({len(s) for s in sources}) > 1  # rows really are left-padded
    tries = [inputs.trie(cands) for _, cands in infos]
    for constraint in ("hard", "connection", "katz"):
        scores = None if constraint == "hard" else [
            entity_scores(kg, {"mentioned": a["kg_mentioned"], "candidates": c}, constraint, 0.1, 2)
            for a, (_, c) in zip(acts, infos)]
        out = model.generate_paths(sources, tries, entity_scores=scores, num_beams=5, num_return=5, max_new_tokens=80)
        assert len(out) == bsz
        for hyps, (_, cands) in zip(out, infos):
            assert len(hyps) == min(5, len(cands))
            for ids, _ in hyps:
                triples = inputs.lin.parse_triples(tok.decode(ids, skip_special_tokens=False))
                assert triples and all(kg.has_triple(*t) for t in triples), (constraint, triples)
                assert inputs.decode_path(ids) in cands
    free = model.generate_paths(sources, None, num_beams=5, num_return=5, max_new_tokens=30)
    assert sum(inputs.decode_path(ids) is not None for h in free for ids, _ in h) < sum(len(h) for h in free)


def test_causal_losses_cover_the_target_only(lm_dirs):
    model, tok, inputs = _build(lm_dirs["llama"])
    src = [inputs.ids("dialogue: hello there my friend") + [inputs.eos], inputs.ids("hi") + [inputs.eos]]
    tgt = [inputs.ids("a target") + [inputs.eos], inputs.ids("another longer target here") + [inputs.eos]]
    with torch.no_grad():
        loss, labels, notnull, _ = model.token_losses(src, tgt)
        alone, _, m1, _ = model.token_losses(src[1:], tgt[1:])
    assert int(notnull.sum()) == len(tgt[0]) + len(tgt[1])
    assert [labels[i][notnull[i]].tolist() for i in range(2)] == tgt
    assert (loss[~notnull] == 0).all() and (labels[~notnull] == LABEL_PAD).all()
    # right padding of the other row does not change a row's loss
    assert loss[1][notnull[1]].sum().item() == pytest.approx(alone[0][m1[0]].sum().item(), rel=1e-4)


def test_causal_pretraining_moves_only_new_rows_of_both_untied_tables(lm_dirs):
    model, tok, inputs = _build(lm_dirs["llama"], seed=1)
    model.train()
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model.train_only_rows()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.0)
    path = (Hop("Amélie", "has_genre", "Comedy"),)
    for seed in range(3):
        src, tgt = inputs.reconstruction_pair(path, random.Random(seed))
        loss, _, mask, _ = model.token_losses([src], [tgt])
        opt.zero_grad()
        (loss.sum() / mask.sum()).backward()
        opt.step()
    after = model.state_dict()
    tables = [k for k in after if k.endswith(("embed_tokens.weight", "lm_head.weight"))]
    assert len(tables) == 2
    for k, v in after.items():
        if k in tables:
            rows = set((v != before[k]).any(dim=1).nonzero().flatten().tolist())
            assert rows and rows <= set(model.special_ids), k
        else:
            assert torch.equal(v, before[k]), k
    model.release_rows()


def _report(text: str) -> dict:
    reports = re.findall(r"^\{.*\}$", text, flags=re.M)
    assert reports, text[-3000:]
    return json.loads(reports[-1])


def test_qwen_gsr_trains_and_evaluates_through_parlai(lm_dirs, tmp_path, datapath):
    mf = tmp_path / "gsr"
    common = ["-t", "docgraph:sample_kg", "--datapath", str(datapath)]
    out = run_cli(
        ["parlai", "train_model", "-m", "docgraph/gsr", "--gsr-model", str(lm_dirs["qwen"]), *common,
         "-mf", str(mf), "-bs", "8", "--max-train-steps", "4", "--gsr-pretrain-steps", "1",
         "--gsr-stage", "all", "-vstep", "100", "--validation-max-exs", "4", "--short-final-eval", "true"],
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads((tmp_path / "gsr.hf" / "config.json").read_text())["model_type"] == "qwen2"
    out = run_cli(
        ["parlai", "eval_model", "-mf", str(mf), *common, "-dt", "valid", "-bs", "4", "-ne", "8",
         "--gsr-constraint", "katz", "--gsr-retrieval-steps", "1"],
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = _report(out.stdout + "\n" + out.stderr)
    assert report["path_valid"] == 1.0
    for key in ("path@1", "ret_loss", "gen_loss", "resp_f1"):
        assert key in report, key


def test_chat_template_frames_the_sources_not_the_targets(lm_dirs, sample_turns):
    """With ``chat=True`` the retrieval and response sources are one templated user turn
    ending in the generation prompt; targets and tries are those of the plain layout, and
    constrained retrieval from the framed prompts stays inside the KG."""
    model, tok, plain = _build(lm_dirs["qwen"])
    framed = GSRInputs(tok, plain.lin, chat=True)
    before, after = framed.frame
    assert tok.decode(before) == "<|im_start|>user\n"
    assert tok.decode(after) == "<|im_end|>\n<|im_start|>assistant\n"
    act = sample_turns[0]
    context = plain.context(act["text"])
    body = plain.retrieve_source(context)[:-1]
    assert plain.retrieve_source(context) == body + [plain.eos]
    assert framed.retrieve_source(context) == before + body + after
    paths = [kg_fields.json_to_path(p) for p in act["kg_candidates"]]
    assert framed.respond_source(context, paths[:1]) == before + plain.respond_source(context, paths[:1])[:-1] + after
    assert framed.path_target(paths[0]) == plain.path_target(paths[0])
    out = model.generate_paths([framed.retrieve_source(context)], [framed.trie(paths)], num_beams=5,
                               num_return=5, max_new_tokens=80)
    assert len(out[0]) == 5 and all(framed.decode_path(ids) in paths for ids, _ in out[0])
    with pytest.raises(ValueError, match="chat template"):
        GSRInputs(load_tokenizer(str(lm_dirs["llama"]), None, plain.lin.special_tokens()), plain.lin, chat=True)


def test_gsr_chat_template_option(lm_dirs, tmp_path):
    """``--gsr-chat-template auto`` frames the prompts of a causal LM whose tokenizer has a
    template (Qwen) only; ``false`` never; ``true`` refuses a seq2seq LM; model files saved
    before the option existed keep the plain layout."""
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    from parlai_docgraph.agents.gsr.agent import GSRAgent

    def agent(model: str, setting: str):
        opt = ParlaiParser(True, True).parse_args(
            ["-m", "docgraph/gsr", "--gsr-model", model, "--datapath", str(tmp_path),
             "--gsr-chat-template", setting])
        return create_agent(opt)

    assert agent(str(lm_dirs["qwen"]), "auto").inputs.frame is not None
    assert agent(str(lm_dirs["qwen"]), "false").inputs.frame is None
    assert agent(str(lm_dirs["llama"]), "auto").inputs.frame is None  # no template
    assert agent("tiny", "auto").inputs.frame is None  # T5
    with pytest.raises(ValueError, match="decoder-only"):
        agent("tiny", "true")
    old = {"gsr_model": "x", "inference": "greedy", "beam_size": 1}
    assert GSRAgent.upgrade_opt(old)["gsr_chat_template"] == "false"


def test_lora_token_rows_are_merged_while_generating_and_restored_exactly(lm_dirs, monkeypatch):
    """peft's token adapter copies the whole embedding per forward call; generation runs
    with the trained rows written in instead (same logits, no copy) and the table is
    restored bit for bit afterwards (tied Qwen embedding: one table, two adapters)."""
    from peft.tuners.trainable_tokens.layer import TrainableTokensLayer

    from parlai_docgraph.models import adapters

    model, tok, inputs = _build(lm_dirs["qwen"], seed=2)
    model.lm = adapters.apply_lora(model.lm, adapters.LoraSettings(r=4), model.special_ids)
    model.train()
    path = (Hop("Amélie", "has_genre", "Comedy"),)
    src, tgt = inputs.reconstruction_pair(path, random.Random(0))
    loss, _, mask, _ = model.token_losses([src], [tgt])
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-1)
    (loss.sum() / mask.sum()).backward()
    opt.step()
    model.eval()
    layers = [m for m in model.lm.modules() if isinstance(m, TrainableTokensLayer)]
    assert len(layers) == 2  # the input embedding and the tied output embedding
    table = layers[0].base_layer.weight
    before = table.detach().clone()
    ids = torch.tensor([src])
    with torch.no_grad():
        expected = model.lm(input_ids=ids).logits
    copies = []
    real_merged = TrainableTokensLayer.get_merged_weights
    monkeypatch.setattr(TrainableTokensLayer, "get_merged_weights",
                        lambda self, names: copies.append(1) or real_merged(self, names))
    with adapters.token_rows_merged(model.lm), torch.no_grad():
        got = model.lm(input_ids=ids).logits
        assert not torch.equal(table, before)  # the trained rows are in the table
    assert copies == [] and torch.allclose(got, expected, atol=1e-5)
    assert torch.equal(table, before) and not any(m.merged for m in layers)
    with torch.no_grad():
        model.lm(input_ids=ids)
    assert len(copies) == 2  # outside: peft's per-call copy, for each of the two layers


def test_lora_updates_are_merged_while_generating_and_restored_exactly(lm_dirs, tmp_path):
    """Generation computes with each float32 LoRA update merged into its weight (one matrix
    product a projection, the same logits) and every weight is restored bit for bit on
    exit; a training model, or bf16 weights, are left as they are; the constrained paths of
    a trained adapter are the ones the unmerged model decodes."""
    from peft.tuners.lora import LoraLayer

    from parlai_docgraph.models import adapters

    model, tok, inputs = _build(lm_dirs["llama"], seed=3)
    model.lm = adapters.apply_lora(model.lm, adapters.LoraSettings(r=4), model.special_ids)
    lora = [m for m in model.lm.modules() if isinstance(m, LoraLayer)]
    assert lora
    with torch.no_grad():  # a trained adapter: B is zero at initialisation
        for m in lora:
            m.lora_B["default"].weight.normal_(0, 0.05)
    model.eval()
    weights = {id(m): m.get_base_layer().weight.detach().clone() for m in lora}
    ids = torch.tensor([inputs.retrieve_source(inputs.context("Do you like Se7en?"))])
    with torch.no_grad():
        expected = model.lm(input_ids=ids).logits
        with adapters.lora_merged(model.lm):
            assert all(m.merged for m in lora)
            merged = model.lm(input_ids=ids).logits
    assert torch.allclose(merged, expected, atol=1e-5)
    assert not any(m.merged for m in lora)
    assert all(torch.equal(m.get_base_layer().weight, weights[id(m)]) for m in lora)
    model.train()
    with adapters.lora_merged(model.lm):
        assert not any(m.merged for m in lora)
    model.eval()
    acts = [a for a in teacher_acts("docgraph:sample_kg", tmp_path / "dp") if a.get("kg_candidates")][:4]
    cands = [[kg_fields.json_to_path(p) for p in a["kg_candidates"]] for a in acts]
    sources = [inputs.retrieve_source(inputs.context(a["text"])) for a in acts]
    tries = [inputs.trie(c) for c in cands]
    with torch.no_grad():
        merged_paths = model.generate_paths(sources, tries, num_beams=5, num_return=5, max_new_tokens=60)
        plain_paths = GSRModel.generate_paths(model, sources, tries, num_beams=5, num_return=5,
                                              max_new_tokens=60)  # nothing merged
    assert [[ids for ids, _ in h] for h in merged_paths] == [[ids for ids, _ in h] for h in plain_paths]
    assert [s for h in merged_paths for _, s in h] == pytest.approx(
        [s for h in plain_paths for _, s in h], abs=1e-4)
    assert all(torch.equal(m.get_base_layer().weight, weights[id(m)]) for m in lora)
    first = lora[0].get_base_layer()
    first.weight.data = first.weight.data.to(torch.bfloat16)
    with adapters.lora_merged(model.lm):
        assert not lora[0].merged and all(m.merged for m in lora[1:])


def test_an_eval_batch_merges_the_adapters_once(lm_dirs, sample_turns, tmp_path, monkeypatch):
    """``eval_step`` merges the LoRA updates and token rows once for its losses, both path
    searches and the reply (each call merging on its own copied the embedding table in and
    out), and leaves every weight as it was."""
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser
    from peft.tuners.lora import LoraLayer
    from peft.tuners.trainable_tokens.layer import TrainableTokensLayer

    opt = ParlaiParser(True, True).parse_args(
        ["-m", "docgraph/gsr", "--gsr-model", str(lm_dirs["llama"]), "-t", "docgraph:sample_kg",
         "--datapath", str(tmp_path), "--gsr-stage", "all", "--gsr-retrieval-steps", "2",
         "--lora-r", "4", "--label-truncate", "8"])
    agent = create_agent(opt)
    lm = agent.gsr().lm
    with torch.no_grad():  # a trained adapter: B is zero at initialisation
        for m in lm.modules():
            if isinstance(m, LoraLayer):
                m.lora_B["default"].weight.normal_(0, 0.05)
    before = {k: v.detach().clone() for k, v in lm.state_dict().items()}
    merges = {"lora": 0, "rows": 0}
    lora_types = {type(m) for m in lm.modules() if isinstance(m, LoraLayer)}
    assert len(lora_types) == 1  # peft's LoRA linear layer, whose merge counts
    for cls, key in ((lora_types.pop(), "lora"), (TrainableTokensLayer, "rows")):
        real = cls.merge
        monkeypatch.setattr(cls, "merge", lambda self, *a, _real=real, _key=key, **k:
                            merges.__setitem__(_key, merges[_key] + 1) or _real(self, *a, **k))
    searches = []
    real_paths = type(agent.gsr()).generate_paths
    monkeypatch.setattr(type(agent.gsr()), "generate_paths",
                        lambda self, *a, **k: searches.append(1) or real_paths(self, *a, **k))
    obs = []
    for act in [a for a in sample_turns if a.get("kg_gold_paths")][:2]:
        obs.append(agent.observe(dict(act, episode_done=True)))
        agent.self_observe({})
    agent.eval_step(agent.batchify(obs))
    lora = sum(isinstance(m, LoraLayer) for m in lm.modules())
    rows = sum(isinstance(m, TrainableTokensLayer) for m in lm.modules())
    assert len(searches) >= 1 and lora and rows
    assert merges == {"lora": lora, "rows": rows}  # once for the batch's every call
    assert not any(getattr(m, "merged", False) for m in lm.modules()
                   if isinstance(m, (LoraLayer, TrainableTokensLayer)))
    for key, value in lm.state_dict().items():
        assert torch.equal(value, before[key]), key


@pytest.mark.parametrize("family", FAMILIES)
def test_prompt_cache_gives_the_same_beams_and_runs_each_prompt_once(lm_dirs, sample_turns,
                                                                     family, monkeypatch):
    """A beam search runs each (left-padded) prompt through the LM once, not once per beam,
    and decodes the same paths with the same scores as without the cache."""
    model, _, inputs = _build(lm_dirs[family], seed=1)
    acts = sorted(sample_turns, key=lambda a: len(a["text"]))[::4][:4]
    cands = [[kg_fields.json_to_path(p) for p in a["kg_candidates"]] for a in acts]
    sources = [inputs.retrieve_source(inputs.context(a["text"])) for a in acts]
    assert len({len(s) for s in sources}) > 1  # rows really are left-padded
    tries = [inputs.trie(c) for c in cands]
    rows = []
    # every row of the batch is computed (leaving done examples out is tested on its own:
    # tests/test_finished_rows.py), so the token counts differ by the prompts only
    monkeypatch.setattr(CausalGSRModel, "search_rows",
                        lambda self, cache, beams: contextlib.nullcontext())
    hook = model.lm.get_input_embeddings().register_forward_hook(
        lambda _m, args, _out: rows.append(args[0].numel()))

    def decode():
        rows.clear()
        with torch.no_grad():
            out = model.generate_paths(sources, tries, num_beams=5, num_return=5, max_new_tokens=60)
        return out, sum(rows)

    cached, cached_tokens = decode()
    monkeypatch.setattr(CausalGSRModel, "prompt_cache", lambda self, ids, mask, beams: {})
    plain, plain_tokens = decode()
    hook.remove()
    width = max(len(s) for s in sources)
    # prompts but their last token: once per example instead of once per beam
    assert plain_tokens - cached_tokens == 4 * (5 - 1) * (width - 1)
    assert [[ids for ids, _ in h] for h in cached] == [[ids for ids, _ in h] for h in plain]
    assert [s for h in cached for _, s in h] == pytest.approx([s for h in plain for _, s in h], abs=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_causal_losses_equal_the_full_logits_ones(lm_dirs, family):
    """The output layer runs on the target positions only: the losses and predictions are
    those of the whole sequence's logits there (right-padded rows of other lengths)."""
    model, tok, inputs = _build(lm_dirs[family])
    src = [inputs.ids("dialogue: hello there my friend") + [inputs.eos], inputs.ids("hi") + [inputs.eos]]
    tgt = [inputs.ids("a target") + [inputs.eos], inputs.ids("another longer target here") + [inputs.eos]]
    with torch.no_grad():
        loss, labels, notnull, preds = model.token_losses(src, tgt)
        full = [list(s) + list(t) for s, t in zip(src, tgt)]
        width = max(map(len, full))
        ids = torch.tensor([f + [model.pad_id] * (width - len(f)) for f in full])
        mask = torch.tensor([[1] * len(f) + [0] * (width - len(f)) for f in full])
        logits = model.lm(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
    expected = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels,
                                                 ignore_index=LABEL_PAD, reduction="none")
    assert torch.allclose(loss, expected, atol=1e-5) and bool(notnull.any())
    assert torch.equal(preds[notnull], logits.argmax(-1)[notnull])
    assert (preds[~notnull] == LABEL_PAD).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_trie_head_scores_equal_the_full_output_layer(lm_dirs, sample_turns, family, monkeypatch):
    """Constrained search with the output layer on the tries' tokens only (the default
    ``lm_norm="allowed"``): the paths of the full layer, scores to float rounding; the
    model's layer is itself again afterwards. ``vocab`` keeps the full layer. (These
    models' heads are small: the least saving is lowered so that they are restricted.)"""
    from parlai_docgraph.models.gsr import trie_head

    monkeypatch.setattr(trie_head, "MIN_SAVED_MACS", 0)
    model, tok, inputs = _build(lm_dirs[family])
    turns = sample_turns[:3]
    cands = [[kg_fields.json_to_path(p) for p in t["kg_candidates"]] for t in turns]
    sources = [inputs.retrieve_source(inputs.context(t["text"])) for t in turns]
    kg = kg_fields.load_kg(turns[0]["kg_file"])[0]
    scores = [entity_scores(kg, {"mentioned": t["kg_mentioned"], "candidates": c}, "katz", 0.1, 2)
              for t, c in zip(turns, cands)]
    head = model.lm.get_output_embeddings()

    def run(norm="allowed"):
        return model.generate_paths(sources, [inputs.trie(c) for c in cands], scores,
                                    num_beams=5, num_return=5, lm_norm=norm)

    compact = run()  # a causal model's default: the search over the compact vocabulary
    calls = []
    real = trie_head.restricted_head
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CausalGSRModel, "narrowed", GSRModel.narrowed)  # full width, -inf outside
        restricted = run()
        mp.setattr(trie_head, "restricted_head", lambda lm, cols: calls.append(cols) or
                   __import__("contextlib").nullcontext())
        full = run()
        run("vocab")
    assert len(calls) == 1  # only the allowed-token norm restricts the layer
    columns = calls[0]
    for narrowed in (restricted, compact):
        assert [[p for p, _ in ex] for ex in narrowed] == [[p for p, _ in ex] for ex in full]
        assert all(abs(a - b) < 1e-4 for ea, eb in zip(narrowed, full)
                   for (_, a), (_, b) in zip(ea, eb))
    embed = model.lm.get_input_embeddings()
    assert model.lm.get_output_embeddings() is head and "forward" not in vars(head)
    assert "forward" not in vars(embed)
    hidden = torch.randn(4, 1, head.in_features)
    with real(model.lm, columns), torch.no_grad():
        out = model.lm.get_output_embeddings()(hidden)
    with torch.no_grad():
        ref = head(hidden)
    outside = torch.ones(ref.shape[-1], dtype=torch.bool)
    outside[columns] = False
    assert torch.allclose(out[..., columns], ref[..., columns], atol=1e-5)
    assert torch.isinf(out[..., outside]).all() and int(inputs.eos) in columns.tolist()


def test_trie_head_leaves_a_small_output_layer_alone(lm_dirs):
    """Where the columns left out are fewer multiply-adds a row than ``MIN_SAVED_MACS``
    (a tiny model's head: the restricted one costs more calls than it saves) the layer
    computes in full; at the bound it is restricted."""
    from parlai_docgraph.models.gsr import trie_head

    model, _, inputs = _build(lm_dirs["llama"])
    head = model.lm.get_output_embeddings()
    columns = torch.tensor(sorted(model.special_ids + [inputs.eos]))
    saved = (head.out_features - len(columns)) * head.in_features
    assert saved < trie_head.MIN_SAVED_MACS
    with trie_head.restricted_head(model.lm, columns):
        assert "forward" not in vars(head)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(trie_head, "MIN_SAVED_MACS", saved)
        with trie_head.restricted_head(model.lm, columns):
            assert isinstance(vars(head)["forward"], trie_head.ColumnHead)
        mp.setattr(trie_head, "MIN_SAVED_MACS", saved + 1)
        with trie_head.restricted_head(model.lm, columns):
            assert "forward" not in vars(head)


def test_trie_head_reads_peft_token_rows_while_they_are_merged(lm_dirs, monkeypatch):
    """A LoRA model's output layer is peft's token-row wrapper: while generation has its
    rows merged in, the restricted layer computes with them; otherwise it is left alone."""
    from parlai_docgraph.models import adapters
    from parlai_docgraph.models.gsr import trie_head
    from parlai_docgraph.models.gsr.trie_head import ColumnHead, restricted_head

    monkeypatch.setattr(trie_head, "MIN_SAVED_MACS", 0)

    model, tok, inputs = _build(lm_dirs["qwen"], seed=2)
    model.lm = adapters.apply_lora(model.lm, adapters.LoraSettings(r=4), model.special_ids)
    model.eval()
    head = model.lm.get_output_embeddings()
    columns = torch.tensor(sorted(model.special_ids + [inputs.eos]))
    hidden = torch.randn(2, 1, model.lm.config.hidden_size)
    with restricted_head(model.lm, columns):
        assert "forward" not in vars(head)  # not merged: peft's own forward
    with adapters.merged_for_inference(model.lm), torch.no_grad():
        ref = head(hidden)
        with restricted_head(model.lm, columns):
            assert isinstance(vars(head)["forward"], ColumnHead)
            out = head(hidden)
    assert torch.allclose(out[..., columns], ref[..., columns], atol=1e-5)
    assert "forward" not in vars(head)
