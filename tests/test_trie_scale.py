"""
The compact path trie and the piecewise path encoder: the numpy trie
answers exactly like a nested-dict trie, and names tokenized once give exactly the ids and
entity values of tokenizing whole linearized paths, for T5-, GPT-2-, Llama- and Qwen-style
tokenizers.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest

from modern_lm import make_tiny_lm

from parlai_docgraph.models.gsr.inputs import PlainLinearizer
from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.kg.path_ids import PathEncoder, _named
from parlai_docgraph.kg.store import KnowledgeGraph
from parlai_docgraph.kg.subgraph import Hop, candidate_paths
from parlai_docgraph.kg.trie import PathTrie, build_path_trie

SAMPLE_TRIPLES = Path(__file__).resolve().parents[1] / "tasks" / "docgraph" / "sample_data" / "opendialkg" / "opendialkg_triples.txt"
# names a tokenizer may treat differently inside a sentence than alone
ODD_NAMES = ["Amélie", "R&B", "3:10 to Yuma", "Iron Man 2", "Iron  Man", "C++", "naïve-café", "日本", "x"]


class DictTrie:
    """The reference: one dict per node, a set of entities per node."""

    def __init__(self) -> None:
        self.kids: List[Dict[int, int]] = [{}]
        self.vals: List[set] = [set()]

    def insert(self, ids: Sequence[int], values: Sequence[Optional[str]]) -> None:
        node = 0
        for tok, v in zip(ids, values):
            if tok not in self.kids[node]:
                self.kids[node][tok] = len(self.kids)
                self.kids.append({})
                self.vals.append(set())
            node = self.kids[node][tok]
            if v is not None:
                self.vals[node].add(v)

    def walk(self, prefix: Sequence[int]) -> Optional[int]:
        node: Optional[int] = 0
        for tok in prefix:
            node = self.kids[node].get(tok)  # type: ignore[index]
            if node is None:
                return None
        return node


def _assert_same(trie: PathTrie, ref: DictTrie, seqs: List[List[int]]) -> None:
    assert trie.num_nodes == len(ref.kids)
    for seq in seqs:
        for k in range(len(seq) + 1):
            node, rnode = trie.node(seq[:k]), ref.walk(seq[:k])
            assert sorted(trie.allowed(seq[:k])) == sorted(ref.kids[rnode])
            assert set(trie.values(node)) == ref.vals[rnode]
            for tok in (-5, 10_000):  # off the trie
                assert trie.node(seq[:k] + [tok]) is None and trie.allowed(seq[:k] + [tok]) == []


@pytest.mark.parametrize("seed", range(4))
def test_compact_trie_answers_like_a_dict_trie(seed: int) -> None:
    rng = random.Random(seed)
    vocab, ents = rng.randint(2, 12), ["a", "b", "c", "d"]
    seqs = [[rng.randrange(vocab) for _ in range(rng.randint(0, 9))] for _ in range(rng.randint(1, 60))]
    seqs += [list(s) for s in rng.sample(seqs, min(5, len(seqs)))]  # duplicates
    seqs += [s[: len(s) // 2] for s in seqs[:5]]  # proper prefixes of other sequences
    vals = [[rng.choice(ents + [None, None]) for _ in s] for s in seqs]
    trie, ref = PathTrie(), DictTrie()
    half = len(seqs) // 2
    for s, v in zip(seqs[:half], vals[:half]):
        trie.insert(s, v)
        ref.insert(s, v)
    _assert_same(trie, ref, seqs[:half])  # built ...
    for s, v in zip(seqs[half:], vals[half:]):  # ... then grown and rebuilt
        trie.insert(s, v)
        ref.insert(s, v)
    _assert_same(trie, ref, seqs)
    assert trie.num_sequences == len(seqs)


def test_extend_maps_entity_indices_and_rejects_misaligned_values() -> None:
    trie = PathTrie()
    trie.insert([1, 2], ["z", None])
    trie.extend([[1, 3], [4]], [[1, -1], [0]], ["y", "x"])
    assert set(trie.values(trie.node([1]))) == {"z", "x"} and trie.values(trie.node([4])) == ("y",)
    with pytest.raises(ValueError):
        trie.extend([[1, 2]], [[0]], ["y"])
    with pytest.raises(ValueError):
        trie.insert([1, 2], ["y"])
    empty = PathTrie()
    assert empty.num_nodes == 1 and empty.allowed([]) == [] and empty.node([3]) is None


def _tokenizers(root: Path):
    from parlai_docgraph.models.gsr.model import load_gsr_tokenizer as load_tokenizer
    from parlai_docgraph.models.responder.model import TINY_DIR as GPT2_DIR

    lin = Linearizer(slot_tokens=2)
    out = {"t5": load_tokenizer("tiny", None, lin.special_tokens()),
           "gpt2": load_tokenizer(GPT2_DIR, None, lin.special_tokens())}
    for family in ("llama", "qwen"):
        out[family] = load_tokenizer(str(make_tiny_lm(family, root / family)), None, lin.special_tokens())
    return lin, out


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    return _tokenizers(tmp_path_factory.mktemp("toks"))


def _paths() -> List[tuple]:
    kg = KnowledgeGraph.from_file(SAMPLE_TRIPLES)
    paths = candidate_paths(kg, kg.entities[:40], hops=2, max_paths_per_entity=20)
    odd = [(Hop(a, "related_to", b, rev),) for a, b, rev in zip(ODD_NAMES, ODD_NAMES[1:] + ODD_NAMES[:1], [False, True] * 5)]
    odd += [(Hop("Iron Man", "~weird rel", "Iron Man 2"), Hop("Iron Man 2", "has_genre", "Amélie", True))]
    return odd + paths


@pytest.mark.parametrize("family", ["t5", "gpt2", "llama", "qwen"])
def test_piecewise_encoding_equals_whole_path_tokenization(tokenizers, family: str) -> None:
    lin, toks = tokenizers
    tok = toks[family]
    paths = _paths()
    enc = PathEncoder(lin, tok)
    got = enc.encode(paths)
    assert enc.fast is True  # these tokenizers split on the structural tokens first
    assert _named(got) == _named(enc.encode_text(paths))
    again = enc.encode(list(reversed(paths)))  # from the cache
    assert _named(again) == list(reversed(_named(got)))
    # the trie holds exactly the ids the retriever is trained on (GSRInputs.path_target)
    trie = build_path_trie(paths, lin, tok, encoder=enc)
    for p in paths:
        ids = tok(lin.linearize_path(p), add_special_tokens=False)["input_ids"]
        assert trie.allowed(ids) == [tok.eos_token_id]


def test_plain_markers_fall_back_to_whole_paths(tokenizers) -> None:
    _, toks = tokenizers
    lin = PlainLinearizer()
    enc = PathEncoder(lin, toks["gpt2"])
    paths = _paths()[:30]
    assert enc.fast is False
    assert _named(enc.encode(paths)) == _named(enc.encode_text(paths))


def test_bad_names_still_raise(tokenizers) -> None:
    lin, toks = tokenizers
    enc = PathEncoder(lin, toks["t5"])
    with pytest.raises(ValueError):
        enc.encode([(Hop("a [Tail] b", "r", "c"),)])
    with pytest.raises(ValueError):
        enc.encode([(Hop("a", "r", "b"), Hop("c", "r", "d"))])  # hop 2 does not continue hop 1
