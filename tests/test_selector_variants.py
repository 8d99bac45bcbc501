"""
GraphSelectorAgent beyond the Li variants: ``multilevel`` (Zhang & Tan), ``paths`` (Li's
Graph Paths baseline), ``--background first_turn|per_turn``, ParlAI's own WoW message
format, Holl-E multi-reference metrics, and the reply fields / ``select()`` the pipeline
reads. Tiny random encoder (the fixture of ``test_graph_selector``), docgraph:sample.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest
import torch

from conftest import teacher_acts
from parlai_docgraph.graphs.concept_label import concept_label
from test_graph_selector import _agent, _as_eval, _observed

pytest.importorskip("transformers")


def _sample_acts(datapath: Path, n: int) -> List:
    acts = teacher_acts("docgraph:sample", datapath, "train:ordered", "--label-type",
                        "chosen_sent")
    return acts[:n]


# ---------------------------------------------------------------- multilevel
def test_multilevel_batch_word_targets_and_loss(tiny_encoder, datapath):
    """Zhang & Tan wiring: word nodes of the multi-level graph are scored; S' is the gold
    document's words, labelled 1 when linked to the gold segment; Eq. 9 combines the parts;
    a ``no_passages_used`` candidate is the graph's [no_passage_used] segment."""
    from parlai_docgraph.models.selector.multilevel_selector import MultiLevelSelector

    agent, opt = _agent(tiny_encoder, datapath, "--graph-variant", "multilevel",
                        "--word-loss-alpha", "0.25")
    assert isinstance(agent.selector, MultiLevelSelector)
    obs = _observed(agent, opt, 4)
    batch = agent.batchify(obs)
    for b, o in enumerate(obs):
        eg = agent.graphs.get(o["background_passages"])
        assert eg.graph.meta["builder"] == "multilevel"
        nochosen = batch.candidates[b].index("no_passages_used no_passages_used")
        flat = int((batch.cand2example < b).sum()) + nochosen
        assert int(batch.cand_node[flat]) == int(batch.no_passage_index[b])
    out = agent._forward(batch, with_gold=True)
    words = batch.concept_index
    assert out.word_logits.shape == (words.numel(), 2)
    src, dst = batch.graph_edge_index
    gold_nodes = batch.cand_node[out.gold]
    for j, (w, m, y) in enumerate(zip(words.tolist(), out.word_mask.tolist(),
                                      out.word_label.tolist())):
        g = int(gold_nodes[int(batch.concept2example[j])])
        same_doc = int(batch.graph_node_passage[w]) == int(batch.graph_node_passage[g])
        linked = bool(((src == g) & (dst == w)).any() or ((src == w) & (dst == g)).any())
        assert m == same_doc and y == int(linked)
    assert out.word_mask.any() and out.word_label.any()
    loss, parts = agent.selector.loss(out)
    torch.testing.assert_close(loss, 0.25 * parts["loss_c"] + 0.75 * parts["loss_n"])


# ---------------------------------------------------------------- paths
def test_graph_paths_linearization():
    """BFS from the sentence: (subject, predicate, object), (modifier, subject), and a
    coreferent's roles one hop further; nothing from an unreachable sentence."""
    from parlai_docgraph.graphs.paths import linearized_paths
    from parlai_docgraph.graphs.schema import DocumentGraph, Edge, Node

    nodes = [
        Node(0, "passage", "T", 0),
        Node(1, "sentence", "Berlin wrote songs.", 0, 0),
        Node(2, "sentence", "He owned a theatre.", 0, 1),
        Node(3, "concept", "Berlin", 0, 0, (0, 6)),
        Node(4, "concept", "wrote", 0, 0, (7, 12), kind="predicate"),
        Node(5, "concept", "songs", 0, 0, (13, 18)),
        Node(6, "concept", "He", 0, 1, (0, 2)),
        Node(7, "concept", "owned", 0, 1, (3, 8), kind="predicate"),
        Node(8, "concept", "theatre", 0, 1, (11, 18)),
        Node(9, "concept", "a", 0, 1, (9, 10)),
    ]
    edges = [Edge(0, 1, "passage_sentence"), Edge(0, 2, "passage_sentence"),
             Edge(1, 3, "sentence_concept"), Edge(1, 4, "sentence_concept"),
             Edge(1, 5, "sentence_concept"), Edge(2, 6, "sentence_concept"),
             Edge(2, 7, "sentence_concept"), Edge(2, 8, "sentence_concept"),
             Edge(4, 3, "ARG0"), Edge(4, 5, "ARG1"), Edge(7, 6, "ARG0"), Edge(7, 8, "ARG1"),
             Edge(8, 9, "mod"), Edge(6, 3, "coref")]
    graph = DocumentGraph(nodes=nodes, edges=edges)
    text0 = linearized_paths(graph, 0, hops=3)
    assert text0.startswith("( Berlin , wrote , songs )")
    assert "( He , owned , theatre )" in text0 and "( a , theatre )" in text0
    assert linearized_paths(graph, 0, hops=0) == "( Berlin , wrote , songs )"
    assert linearized_paths(graph, 1, hops=1) == "( He , owned , theatre ) ( a , theatre )"
    assert linearized_paths(graph, 5) == ""


def test_paths_variant_concatenates_paths_to_candidates(tiny_encoder, datapath):
    # 256-token pairs (the default): room for paths after the sample's long sentences
    agent, opt = _agent(tiny_encoder, datapath, "--graph-variant", "paths",
                        "--pair-truncate", "256")
    obs = _observed(agent, opt, 2)
    batch = agent.batchify(_as_eval(obs))
    plain, _ = _agent(tiny_encoder, datapath, "--graph-variant", "none", "--pair-truncate", "256")
    base = plain.batchify(_as_eval(_observed(plain, opt, 2)))
    assert batch.get("graph_x") is None  # text only: the model is the ranking cross-encoder
    from parlai_docgraph.graphs.knowledge_lines import candidate_sentences
    from parlai_docgraph.graphs.paths import linearized_paths

    with_paths = []
    for o, cands in zip(obs, batch.candidates):
        graph = agent.graphs.get(o["background_passages"]).graph
        with_paths += [s >= 0 and bool(linearized_paths(graph, s))
                       for s in candidate_sentences(o["background_passages"], cands)]
    width = min(batch.cand_input_ids.size(1), base.cand_input_ids.size(1))
    changed = (batch.cand_input_ids[:, :width] != base.cand_input_ids[:, :width]).any(1)
    assert changed.tolist() == with_paths and sum(with_paths) > len(with_paths) // 2
    text = agent.tokenizer.decode(batch.cand_input_ids[1], skip_special_tokens=True)
    assert "(" in text and "," in text


def test_paths_inputs_always_keep_the_candidate(tiny_encoder, datapath):
    """Long path texts used to push the candidate out (the pair was cut from the left,
    longest first): with the default 256-token pairs and a short 48-token limit, every
    encoded input holds its candidate's own tokens right after [CLS], and at most
    ``--path-max-tuples`` tuples are added."""
    for limit in ("256", "48"):
        agent, opt = _agent(tiny_encoder, datapath, "--graph-variant", "paths",
                            "--pair-truncate", limit, "--path-hops", "4")
        obs = _observed(agent, opt, 4)
        batch = agent.batchify(_as_eval(obs))
        tok = agent.tokenizer
        ids = batch.cand_input_ids.tolist()
        flat = [c for cands in batch.candidates for c in cands]
        assert len(flat) == len(ids)
        for row, cand in zip(ids, flat):
            own = tok(cand, add_special_tokens=False)["input_ids"]
            if len(own) + 3 > int(limit) // 2:
                continue  # a candidate longer than half the pair is not extended
            assert row[1 : 1 + len(own)] == own, (cand, tok.decode(row))
            first = row[1 + len(own) : row.index(tok.sep_token_id)]  # the paths part
            assert tok.decode(first).count("(") <= 10


# ---------------------------------------------------------------- background
def _episode_pools(agent, acts):
    pools = []
    for act in acts:
        obs = agent.observe(act)
        agent.self_observe({})
        pools.append((obs["background_passages"], obs.get("background_base")))
    return pools


def test_background_first_turn_and_per_turn(tiny_encoder, datapath):
    """docgraph:sample's first episode retrieves new passages at later turns: first_turn
    keeps the first pool, per_turn grows it, and the extended graph equals a rebuild."""
    from parlai_docgraph.graphs.semantic import build_document_graph

    acts = _sample_acts(datapath, 6)
    assert acts[4]["episode_done"] and not any(a["episode_done"] for a in acts[:4])
    first, _ = _agent(tiny_encoder, datapath, "--background", "first_turn")
    per, _ = _agent(tiny_encoder, datapath, "--background", "per_turn")
    first_pools = _episode_pools(first, acts)
    per_pools = _episode_pools(per, acts)
    first_pool = [(t, list(s)) for t, s in acts[0]["knowledge_passages"]]
    assert all(p[:len(first_pool)] == first_pool for p, _ in first_pools[:5])
    assert first_pools[0] == (first_pool, None)
    titles = [[t for t, _ in p] for p, _ in per_pools]
    assert titles[1] == ["Eddystone Lighthouse", "Eddystone Lighthouse (1698)",
                         "Smeaton's Tower", "Lighthouse keeper"]
    assert titles[4] == titles[1]
    # a new episode starts from its own first pool
    own = [t for t, _ in acts[5]["knowledge_passages"]]
    assert titles[5] == own and [t for t, _ in first_pools[5][0]] == own
    # per_turn: the graph of turn 2 is turn 1's extended, equal to a rebuild
    pool, base = per_pools[1]
    assert base == per_pools[0][0]
    per.graphs.get(base)
    extended = per.graphs.get(pool, base)
    assert per.graphs.extended == 1
    parser, coref = per.graphs.factory.backends()
    rebuilt = build_document_graph(pool, parser=parser, coref=coref)
    from parlai_docgraph.graphs.assembly import canonical_form  # equal up to node ids

    assert canonical_form(extended.graph) == canonical_form(rebuilt)
    # per_turn and first_turn rank turn 2 over different graphs (first_turn's holds only
    # turn 2's own outside sentences and drops them again at turn 3)
    batch_per = per.batchify([_with_pool(acts[1], per_pools[1][0])])
    assert len(set(batch_per.cand_node.tolist())) == len(batch_per.candidates[0])


@pytest.mark.parametrize("variant", ["full", "multilevel"])
def test_background_first_turn_later_candidates_get_their_own_sentence_nodes(
        variant, tiny_encoder, datapath):
    """Li's first_turn background: the candidates of passages retrieved after the first
    turn used to share the zero-feature no-passage node (ranked on their context alone).
    Now each later turn's graph is the first-turn graph extended with that turn's outside
    sentences, so every candidate but no_passages_used has its own sentence node
    (multilevel: segment node) with features and edges; multilevel, refused before for this
    reason, now accepts first_turn."""
    acts = _sample_acts(datapath, 5)
    first, _ = _agent(tiny_encoder, datapath, "--background", "first_turn",
                      "--graph-variant", variant)
    pools = _episode_pools(first, acts)
    first_pool = pools[0][0]
    have = {(t, s) for t, ss in first_pool for s in ss}
    grown = 0
    for act, (pool, base) in zip(acts, pools):
        extra = pool[len(first_pool):]
        lines = [(t, s) for t, ss in act["knowledge_passages"] for s in ss]
        assert [(t, s) for t, ss in extra for s in ss] == [ts for ts in lines if ts not in have]
        assert base == (first_pool if extra else None)
        grown += bool(extra)
        batch = first.batchify([_with_pool(act, pool, base)])
        cands = batch.candidates[0]
        nochosen = cands.index("no_passages_used no_passages_used")
        nodes = batch.cand_node.tolist()
        assert len(set(nodes)) == len(cands)  # one node per candidate
        assert all(n != int(batch.no_passage_index[0])
                   for i, n in enumerate(nodes) if i != nochosen)
        assert all(float(batch.graph_x[n].abs().sum()) > 0 for n in nodes[:nochosen] + nodes[nochosen + 1:])
        src, dst = batch.graph_edge_index
        assert all(bool((dst == n).any() or (src == n).any())
                   for i, n in enumerate(nodes) if i != nochosen)
    assert grown >= 1
    assert (first.graphs.extended >= 1) == (variant == "full")  # multilevel: rebuilt


def _with_pool(act, pool, base=None):
    from parlai.core.message import Message

    msg = Message(act)
    msg["background_passages"] = pool
    msg["background_base"] = base
    msg["full_text"] = act["text"]
    return msg


# ---------------------------------------------------------------- ParlAI WoW format
def _parlai_message(act, separator: bool):
    """``act`` as ParlAI's WizardDialogKnowledgeTeacher writes it (no knowledge_passages)."""
    from parlai.core.message import Message

    sep = " __knowledge__ " if separator else " "
    lines = [f"{t}{sep}{s}" for t, sents in act["knowledge_passages"] for s in sents]
    label = act["labels"][0]
    if separator and not label.startswith("no_passages_used"):
        label = f"{act['title']}{sep}{act['checked_sentence']}"
    return Message({
        "id": "WizardDialogKnowledgeTeacher", "text": act["text"], "labels": [label],
        "chosen_topic": act["chosen_topic"], "episode_done": act["episode_done"],
        "label_candidates": ["no_passages_used no_passages_used"] + lines,
        "knowledge": "".join(line + "\n" for line in lines),
        "title": act["title"], "checked_sentence": act["checked_sentence"],
    })


@pytest.mark.parametrize("separator", [True, False])
def test_parlai_wow_messages(separator, tiny_encoder, datapath):
    """ParlAI's knowledge text lines (and, without ``knowledge``, its label_candidates)
    give the pool; with the separator it is exact; the agent trains on such messages."""
    from parlai_docgraph.agents.graph_selector.messages import message_passages
    from parlai_docgraph.graphs.knowledge_lines import candidate_sentences

    acts = _sample_acts(datapath, 4)
    for act in acts:
        msg = _parlai_message(act, separator)
        pool = message_passages(msg)
        gold = [(t, list(s)) for t, s in act["knowledge_passages"]]
        sents = candidate_sentences(pool, msg["label_candidates"])
        assert sents == [-1] + list(range(len(msg["label_candidates"]) - 1))
        # every line is rebuilt exactly, so candidates map to their sentence nodes
        assert [f"{t} {s}" for t, ss in pool for s in ss] == [
            line.replace(" __knowledge__ ", " ") for line in msg["label_candidates"][1:]]
        if separator:
            assert pool == gold
        del msg["knowledge"]
        assert message_passages(msg) == pool
    with pytest.raises(ValueError, match="knowledge_passages"):
        message_passages({"text": "hi"})
    agent, _ = _agent(tiny_encoder, datapath, "--graph-variant", "full")
    obs = []
    for act in acts:
        obs.append(agent.observe(_parlai_message(act, separator)))
        agent.self_observe({})
    batch = agent.batchify(obs)
    agent.train_step(batch)
    assert all(p.grad is not None for p in agent.model.parameters())


def test_title_guess_without_separator():
    from parlai_docgraph.graphs.knowledge_lines import passages_from_lines

    lines = ["Dog A dog barks.", "Dog A dog bites.", "Cat Cats purr.", "Cat They sleep."]
    assert passages_from_lines(lines, ["Dog"]) == [
        ("Dog", ["A dog barks.", "A dog bites."]), ("Cat", ["Cats purr.", "They sleep."])]


# ---------------------------------------------------------------- multi-reference
def test_multi_reference_metrics(tiny_encoder, datapath):
    """know_*_multi: relevant = any gold of multi_checked_sentences; the single-gold
    metrics are unchanged and never exceed the multi-reference ones."""
    from parlai.core.message import Message

    agent, opt = _agent(tiny_encoder, datapath, "--graph-variant", "none")
    obs = _as_eval(_observed(agent, opt, 4))
    every = []
    for i, o in enumerate(obs):
        m = Message(o)
        sents = [s for _, ss in o["knowledge_passages"] for s in ss]
        m["multi_checked_sentences"] = (
            [o["checked_sentence"]] + (sents if i == 0 else sents[:2]))
        every.append(m)
    replies = agent.batch_act(every)
    for i, (r, o) in enumerate(zip(replies, every)):
        met = r["metrics"]
        relevant = {s.strip() for s in o["multi_checked_sentences"]}
        ranked = r["text_candidates"]
        hits = [any(c.endswith(" " + s) for s in relevant) or c == o["eval_labels"][0]
                for c in ranked]
        assert met["know_acc_multi"].value() == float(hits[0])
        assert met["know_mrr_multi"].value() == pytest.approx(1 / (hits.index(True) + 1))
        assert met["know_acc_multi"].value() >= met["know_acc"].value()
        assert met["know_mrr_multi"].value() >= met["know_mrr"].value()
    assert replies[0]["metrics"]["know_acc_multi"].value() == 1.0 or \
        replies[0]["text"].startswith("no_passages_used")
    plain = agent.batch_act(obs)
    assert "know_acc_multi" not in plain[0]["metrics"]


def test_ranking_replies_multi_unit():
    from parlai_docgraph.agents.graph_selector.evaluation import ranking_replies

    r = ranking_replies(torch.tensor([0.1, 0.9, 0.5]), torch.tensor([0, 0, 0]),
                        [["a", "b", "c"]], torch.tensor([0]), [[False, False, True]])
    assert r["know_acc"][0].value() == 0.0 and r["know_mrr"][0].value() == pytest.approx(1 / 3)
    assert r["know_acc_multi"][0].value() == 0.0
    assert r["know_mrr_multi"][0].value() == pytest.approx(1 / 2)
    assert r["know_map_multi"][0].value() == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert r["cands"][0] == ["b", "c", "a"] and r["scores"][0] == pytest.approx([0.9, 0.5, 0.1])


# ---------------------------------------------------------------- reply fields, select()
@pytest.mark.parametrize("variant", ["full", "multilevel", "none"])
def test_reply_fields_and_select(variant, tiny_encoder, datapath):
    agent, opt = _agent(tiny_encoder, datapath, "--graph-variant", variant)
    obs = _as_eval(_observed(agent, opt, 2))
    for r, o in zip(agent.batch_act(obs), obs):
        scores = r["candidate_scores"]
        assert len(scores) == len(r["text_candidates"]) == len(o["label_candidates"])
        assert scores == sorted(scores, reverse=True)
        assert r["text_candidates"][0] == r["text"]
        if variant == "none":
            assert r["top_concepts"] == []
        else:
            graph = agent.graphs.get(o["background_passages"]).graph
            kind = "word" if variant == "multilevel" else "concept"
            texts = {concept_label(n.text, n.kind) for n in graph.nodes_of_type(kind)}
            shown = r["top_concepts"]
            assert 1 <= len(shown) <= 5 and set(shown) <= texts - {None}
            assert len(set(shown)) == len(shown)
    pool = [(t, list(s)) for t, s in obs[0]["knowledge_passages"]]
    out = agent.select(pool, obs[0]["text"])
    lines = [f"{t} {s}" for t, ss in pool for s in ss]
    assert sorted(out["scores"]) == sorted(lines)
    assert out["sentence"] == next(iter(out["scores"]))
    assert list(out["scores"].values()) == sorted(out["scores"].values(), reverse=True)
    assert (out["top_concepts"] == []) == (variant == "none")
    # the same ranking as the teacher path for the same candidates and context
    reply = agent.batch_act([obs[0]])[0]
    again = agent.select(pool, obs[0]["full_text"], obs[0]["label_candidates"])
    assert list(again["scores"]) == reply["text_candidates"]
    # and the same scores: select() feeds the model what batchify does (node relevance too)
    assert list(again["scores"].values()) == pytest.approx(reply["candidate_scores"], abs=1e-5)
    with pytest.raises(ValueError, match="candidate"):
        agent.select([], "hi")


# ---------------------------------------------------------------- Zhang & Tan protocol
def test_zhang_tan_text_tags_turns_from_the_last_user_turn():
    from parlai_docgraph.models.selector.inputs import zhang_tan_text

    assert zhang_tan_text("a\nb\nc\nd", "s") == "[agent] a [user] b [agent] c [user] d [know] s"
    assert zhang_tan_text("only", "s") == "[user] only [know] s"


def test_long_candidate_keeps_its_beginning():
    """A candidate longer than its share of --pair-truncate loses its end, never its
    opening words (a 150-word candidate at 128 tokens used to keep only its last ~20 words);
    the context still loses its oldest tokens; the pair lengths are those of Hugging Face's
    longest_first; a short pair is encoded exactly as the tokenizer encodes it."""
    from parlai_docgraph.models.encoders import load_encoder
    from parlai_docgraph.models.selector.inputs import (
        add_format_tokens, encode_candidates, pair_lengths,
    )

    encoder, tok = load_encoder("tiny")
    words = [f"w{i}" for i in range(150)]
    long_cand = " ".join(words)
    context = "\n".join(["first old turn with several words"] * 6 + ["the latest turn"])
    own = tok(long_cand, add_special_tokens=False)["input_ids"]
    ctx = tok(context, add_special_tokens=False)["input_ids"]
    enc = encode_candidates(tok, [long_cand, "short one"], [context, "hi"], 128)
    row = [t for t in enc["input_ids"][0].tolist() if t != tok.pad_token_id]
    assert len(row) == 128
    first, second = pair_lengths(len(own), len(ctx), 128 - 3)
    assert row[: 1 + first] == [tok.cls_token_id] + own[:first]  # the opening survives
    assert tok.decode(row[1:1 + first]).split()[:3] == ["w0", "w1", "w2"]
    assert row[2 + first: -1] == ctx[len(ctx) - second:]  # the latest context survives
    # the counts are HF's longest_first: only which tokens are cut changed
    hf = tok(long_cand, context, truncation="longest_first", max_length=128)["input_ids"]
    assert len(hf) == len(row) and hf.count(tok.sep_token_id) == 2
    assert hf.index(tok.sep_token_id) == row.index(tok.sep_token_id)
    short = tok("short one", "hi")
    assert enc["input_ids"][1][: len(short["input_ids"])].tolist() == short["input_ids"]
    assert enc["token_type_ids"][1][: len(short["input_ids"])].tolist() == short["token_type_ids"]
    assert pair_lengths(10, 10, 15) == (8, 7) and pair_lengths(3, 50, 20) == (3, 17)
    # Zhang & Tan's one sequence: the context goes first; a candidate that alone exceeds
    # the limit keeps its beginning after [know]
    add_format_tokens(encoder, tok, "zhang_tan")
    row = encode_candidates(tok, [long_cand], [context], 64, "zhang_tan")["input_ids"][0].tolist()
    know = tok.convert_tokens_to_ids("[know]")
    assert row[:2] == [tok.cls_token_id, know] and row[2:-1] == own[:61]


def test_input_format_zhang_tan_encodes_tagged_context_then_knowledge(tiny_encoder, datapath):
    """Zhang & Tan Eq. 2 input: one sequence '[CLS] [user] u .. [know] s_i [SEP]' over the
    last --context-turns 4 utterances; the three tags are single added tokens with their own
    embedding rows, and a short limit cuts the oldest context, never the sentence."""
    for limit in ("256", "40"):
        agent, opt = _agent(tiny_encoder, datapath, "--graph-variant", "none", "--input-format",
                            "zhang_tan", "--context-turns", "4", "--pair-truncate", limit)
        tok = agent.tokenizer
        tags = tok.convert_tokens_to_ids(["[user]", "[agent]", "[know]"])
        assert len(set(tags)) == 3 and tok.unk_token_id not in tags
        emb = agent.selector.context_encoder.get_input_embeddings()
        assert emb.num_embeddings == len(tok) and max(tags) < len(tok)
        obs = _observed(agent, opt, 6)
        batch = agent.batchify(_as_eval(obs))
        assert batch.get("cand_token_type_ids") is None or int(batch.cand_token_type_ids.max()) == 0
        flat = [c for cands in batch.candidates for c in cands]
        c2e = batch.cand2example.tolist()
        for row, cand, b in zip(batch.cand_input_ids.tolist(), flat, c2e):
            row = [t for t in row if t != tok.pad_token_id]
            assert row[0] == tok.cls_token_id and row[-1] == tok.sep_token_id
            assert row.count(tok.sep_token_id) == 1 and row.count(tags[2]) == 1
            own = tok(cand, add_special_tokens=False)["input_ids"]
            know = row.index(tags[2])
            if len(own) + 3 <= int(limit):
                assert row[know + 1:-1] == own
            context = obs[b]["full_text"].split("\n")
            assert len(context) <= 4
            if limit == "256":  # the whole context fits: one tag per utterance, user last
                assert tok.decode(row[1:know]).count("[user]") == (len(context) + 1) // 2
                assert row[1] == tags[(len(context) - 1) % 2]
    plain, _ = _agent(tiny_encoder, datapath, "--graph-variant", "none")
    assert "[know]" not in plain.tokenizer.get_vocab()  # li adds nothing


def test_multilevel_ablations_build_the_table3_graphs(tiny_encoder, datapath):
    """Zhang & Tan Table 3 as --multilevel-ablation: no_topic_nodes drops topic nodes,
    no_word_nodes keeps segments only (no word targets: L = alpha L_know); both train.
    Set for another variant, the option is an error rather than ignored."""
    obs_by = {}
    for ablation in ("none", "no_topic_nodes", "no_word_nodes"):
        agent, opt = _agent(tiny_encoder, datapath, "--graph-variant", "multilevel",
                            "--multilevel-ablation", ablation)
        obs = _observed(agent, opt, 4)
        eg = agent.graphs.get(obs[0]["background_passages"])
        kinds = {n.type for n in eg.graph.nodes}
        edges = {e.type for e in eg.graph.edges}
        assert ("topic" in kinds) == (ablation != "no_topic_nodes")
        assert ("topic_sentence" in edges) == (ablation != "no_topic_nodes")
        assert ("word" in kinds) == (ablation != "no_word_nodes")
        assert not ({"sentence_word", "word_word"} & edges) == (ablation == "no_word_nodes")
        obs_by[ablation] = len([n for n in eg.graph.nodes if n.type == "sentence"])
        batch = agent.batchify(obs)
        out = agent._forward(batch, with_gold=True)
        loss, parts = agent.selector.loss(out)
        if ablation == "no_word_nodes":
            assert batch.concept_index.numel() == 0
            torch.testing.assert_close(loss, 0.5 * parts["loss_c"])
        loss.backward()
        assert float(loss) > 0
    assert len(set(obs_by.values())) == 1  # the same segment nodes in every ablation
    with pytest.raises(ValueError, match="--multilevel-ablation"):
        _agent(tiny_encoder, datapath, "--graph-variant", "full", "--multilevel-ablation",
               "no_topic_nodes")
