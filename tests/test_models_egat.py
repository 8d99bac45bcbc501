"""Li et al. Eq. 2-3: the edge-aware graph attention layer (``models/selector/egat.py``)."""

from __future__ import annotations

import math
from typing import Tuple

import pytest
import torch
import torch.nn.functional as F

from parlai_docgraph.models import EGATConv

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _random_graph(seed: int, n: int = 7, e: int = 16) -> Tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    edge_index = torch.randint(0, n, (2, e), generator=g)
    node_type = torch.randint(0, 3, (n,), generator=g)
    edge_type = torch.randint(0, 4, (e,), generator=g)
    return x, edge_index, node_type, edge_type


def _dense_egat(conv: EGATConv, x, edge_index, node_type, edge_type) -> torch.Tensor:
    """Naive per-target loop over incoming edges, straight from Li Eq. 2-3."""
    heads, dim = conv.heads, conv.channels // conv.heads
    tn, te = conv.node_type_emb.weight, conv.edge_type_emb.weight
    out = []
    for t in range(x.size(0)):
        incoming = [j for j in range(edge_index.size(1)) if int(edge_index[1, j]) == t]
        total = torch.zeros(conv.channels)
        if incoming:
            msgs, logits = [], []
            for j in incoming:
                s, et = int(edge_index[0, j]), int(edge_type[j])
                src = torch.cat([x[s], tn[node_type[s]]])
                msgs.append(conv.lin_v(src) + conv.lin_e(te[et]))
                q = conv.lin_q(src).view(heads, dim)
                k = conv.lin_k(torch.cat([x[t], tn[node_type[t]], te[et]])).view(heads, dim)
                logits.append((q * k).sum(-1) / math.sqrt(dim))
            alpha = torch.softmax(torch.stack(logits), dim=0)  # [deg, heads]
            weighted = torch.stack(msgs).view(len(incoming), heads, dim) * alpha.unsqueeze(-1)
            total = weighted.sum(0).view(-1)
        out.append(F.gelu(conv.mlp(total) + x[t]))
    return torch.stack(out)


@pytest.mark.parametrize("heads", [1, 2])
def test_egat_matches_dense_loop_and_shapes(heads: int) -> None:
    torch.manual_seed(0)
    conv = EGATConv(8, num_node_types=3, num_edge_types=4, type_dim=5, heads=heads)
    x, ei, nt, et = _random_graph(1)
    out, (ei_out, alpha) = conv(x, ei, nt, et, return_attention_weights=True)
    assert out.shape == (7, 8) and alpha.shape == (16, heads)
    assert torch.equal(ei_out, ei)
    torch.testing.assert_close(out, _dense_egat(conv, x, ei, nt, et), atol=1e-5, rtol=1e-5)
    sums = torch.zeros(7, heads).index_add_(0, ei[1], alpha)
    has_in = torch.bincount(ei[1], minlength=7) > 0
    torch.testing.assert_close(sums[has_in], torch.ones(int(has_in.sum()), heads))
    assert "EGATConv(8, heads=" in repr(conv)


def test_egat_permutation_equivariant_and_grads() -> None:
    torch.manual_seed(0)
    conv = EGATConv(8, 3, 4, type_dim=5, heads=2)
    x, ei, nt, et = _random_graph(2)
    perm = torch.randperm(7)
    inv = perm.argsort()  # new id of old node i is inv[i]
    out = conv(x, ei, nt, et)
    out_p = conv(x[perm], inv[ei], nt[perm], et)
    torch.testing.assert_close(out_p, out[perm], atol=1e-5, rtol=1e-5)
    # edge order does not matter either
    eperm = torch.randperm(ei.size(1))
    torch.testing.assert_close(conv(x, ei[:, eperm], nt, et[eperm]), out, atol=1e-5, rtol=1e-5)
    out.square().sum().backward()
    for name, p in conv.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
