"""Benchmark: our MultiHeadSelfAttention vs PyTorch's fused attention, and the live explorer's update time.

Forward + backward at batch 1024, m in {4, 16, 64}, l = 4 heads of d_q = d_out = 16 on d_in = 64
(so that nn.MultiheadAttention(64, 4) computes the same function). "With α" is the default
path, which materialises the m x m weights the book draws; need_weights=False is the training
path (PyTorch's fused kernel underneath). The variants are timed interleaved in one run and the
medians compared; ratios > 1 mean ours is slower.
Run: make bench   (or .venv/bin/python bench/bench_attention.py)
"""
from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from attnmarl.attention import MultiHeadSelfAttention, from_torch_multihead
from attnmarl.notebook.explorers.self_attention import alpha_explorer, heads_explorer

BATCH, D_IN, HEADS, REPEATS = 1024, 64, 4, 15


def fused(layer: MultiHeadSelfAttention, x: torch.Tensor) -> torch.Tensor:
    """The same layer with steps 2-3 done by torch's fused scaled_dot_product_attention (no alpha returned)."""
    q = torch.einsum("bmi,hqi->bhmq", x, layer.W_q)
    k = torch.einsum("bmi,hqi->bhmq", x, layer.W_k)
    v = torch.einsum("bmi,hoi->bhmo", x, layer.W_v)
    c = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2)
    return c @ layer.W_o.T


def step_time(fn, x: torch.Tensor) -> float:
    start = time.perf_counter()
    fn(x).square().mean().backward()
    return time.perf_counter() - start


def attention_table() -> list[str]:
    rows = ["| m | ours, with α (ms) | ours, no α (ms) | SDPA (ms) | nn.MHA (ms) "
            "| with α / SDPA | no α / SDPA | with α / nn.MHA |",
            "|---|---|---|---|---|---|---|---|"]
    for m in (4, 16, 64):
        torch.manual_seed(0)
        torch_mha = nn.MultiheadAttention(D_IN, HEADS, bias=False, batch_first=True)
        ours = from_torch_multihead(torch_mha)
        x = torch.randn(BATCH, m, D_IN, requires_grad=True)
        variants = {
            "ours": lambda x, ours=ours: ours(x)[0],
            "ours_fused": lambda x, ours=ours: ours(x, need_weights=False)[0],
            "sdpa": lambda x, ours=ours: fused(ours, x),
            "mha": lambda x, torch_mha=torch_mha: torch_mha(x, x, x, need_weights=False)[0],
        }
        times = {name: [] for name in variants}
        for fn in variants.values():  # warm-up
            step_time(fn, x)
        for _ in range(REPEATS):  # interleaved, so all variants see the same machine state
            for name, fn in variants.items():
                times[name].append(step_time(fn, x))
        med = {name: statistics.median(t) * 1e3 for name, t in times.items()}
        rows.append(f"| {m} | {med['ours']:.2f} | {med['ours_fused']:.2f} | {med['sdpa']:.2f} | {med['mha']:.2f} | "
                    f"{med['ours'] / med['sdpa']:.2f} | {med['ours_fused'] / med['sdpa']:.2f} | "
                    f"{med['ours'] / med['mha']:.2f} |")
    return rows


def explorer_table() -> list[str]:
    rows = ["| explorer | median update (ms) | max update (ms) |", "|---|---|---|"]
    for name, explorer, changes in (
        ("α explorer (m = 8, d_q = 16)", alpha_explorer(), [dict(m=8, d_q=16, x1_0=v) for v in (-2.0, 0.0, 2.0)] * 10),
        ("per-head α explorer (l = 4, m = 8)", heads_explorer(), [dict(heads=4, m=8, seed=s) for s in range(10)] * 3),
    ):
        explorer.live()
        times = []
        for change in changes:
            start = time.perf_counter()
            explorer.update(**change)
            times.append((time.perf_counter() - start) * 1e3)
        rows.append(f"| {name} | {statistics.median(times):.1f} | {max(times):.1f} |")
    return rows


if __name__ == "__main__":
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; batch {BATCH}, d_in {D_IN}, "
          f"{HEADS} heads, forward + backward, median of {REPEATS}\n")
    print("\n".join(attention_table()))
    print("\nLive explorer update (recompute with the real layer + redraw the SVG); target < 100 ms\n")
    print("\n".join(explorer_table()))
