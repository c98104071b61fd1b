"""attnmarl.attention against PyTorch's own attention, its properties, and its errors."""
import math

import pytest
import torch
import torch.nn.functional as F

from attnmarl.attention import (
    MultiHeadSelfAttention,
    SelfAttention,
    SelfAttentionStack,
    additive_score,
    causal_mask,
    cosine_score,
    dot_score,
    from_torch_multihead,
    general_score,
    masked_softmax,
    scaled_dot_score,
    self_attention,
)

SIZES = [(1, 1, 1, 1, 1), (3, 5, 4, 2, 7), (8, 2, 16, 3, 1), (2, 12, 6, 6, 3)]  # batch, m, d_in, d_q, d_out


def reference(layer: MultiHeadSelfAttention, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """The same layer computed head by head with torch.nn.functional.scaled_dot_product_attention."""
    heads = []
    for h in range(layer.heads):
        q, k, v = x @ layer.W_q[h].T, x @ layer.W_k[h].T, x @ layer.W_v[h].T
        attn_mask = None if mask is None else (mask.unsqueeze(1) if mask.dim() == 2 else mask)
        heads.append(F.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, scale=1 / math.sqrt(layer.d_q) if layer.scale else 1.0))
    return torch.cat(heads, dim=-1)


@pytest.mark.parametrize("batch,m,d_in,d_q,d_out", SIZES)
@pytest.mark.parametrize("scale", [False, True])
def test_single_head_matches_sdpa(batch, m, d_in, d_q, d_out, scale):
    torch.manual_seed(batch * 100 + m)
    layer = SelfAttention(d_in, d_q, d_out, scale=scale)
    x = torch.randn(batch, m, d_in)
    c, alpha = layer(x)
    assert c.shape == (batch, m, d_out) and alpha.shape == (batch, m, m)
    assert layer.W_q.shape == (d_q, d_in) and layer.W_k.shape == (d_q, d_in) and layer.W_v.shape == (d_out, d_in)
    q, k, v = x @ layer.W_q.T, x @ layer.W_k.T, x @ layer.W_v.T
    expected = F.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(d_q) if scale else 1.0)
    torch.testing.assert_close(c, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("batch,m,d_in,d_q,d_out", SIZES)
@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("scale", [False, True])
def test_multi_head_matches_sdpa_with_padding_mask(batch, m, d_in, d_q, d_out, heads, scale):
    torch.manual_seed(batch + m + heads)
    layer = MultiHeadSelfAttention(d_in, d_q, d_out, heads=heads, scale=scale)
    x = torch.randn(batch, m, d_in)
    lengths = torch.randint(1, m + 1, (batch,))
    mask = torch.arange(m) < lengths[:, None]  # sets of different sizes in one batch
    c, alpha = layer(x, mask=mask)
    assert c.shape == (batch, m, heads * d_out) and alpha.shape == (batch, heads, m, m)
    torch.testing.assert_close(c, reference(layer, x, mask), atol=1e-5, rtol=1e-5)
    assert torch.all(alpha.masked_select(~mask[:, None, None, :].expand_as(alpha)) == 0)


def test_padded_set_equals_the_smaller_set_alone():
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention(4, 3, 2, heads=2)
    x = torch.randn(1, 6, 4)
    mask = torch.tensor([[True, True, True, True, False, False]])
    c_padded, _ = layer(x, mask=mask)
    c_small, _ = layer(x[:, :4])
    torch.testing.assert_close(c_padded[:, :4], c_small, atol=1e-6, rtol=1e-6)


def test_full_mask_matches_sdpa_causal():
    torch.manual_seed(1)
    layer = SelfAttention(5, 4, 3)
    x = torch.randn(2, 7, 5)
    c, alpha = layer(x, mask=causal_mask(7).expand(2, 7, 7))
    q, k, v = x @ layer.W_q.T, x @ layer.W_k.T, x @ layer.W_v.T
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0)
    torch.testing.assert_close(c, expected, atol=1e-5, rtol=1e-5)
    assert torch.all(alpha.triu(1) == 0)


def test_unbatched_input_gives_unbatched_output():
    torch.manual_seed(2)
    layer = MultiHeadSelfAttention(3, 2, 4, heads=2)
    x = torch.randn(5, 3)
    c, alpha = layer(x)
    c_b, alpha_b = layer(x.unsqueeze(0))
    assert c.shape == (5, 8) and alpha.shape == (2, 5, 5)
    torch.testing.assert_close(c, c_b[0])
    torch.testing.assert_close(alpha, alpha_b[0])


def test_gradients_match_sdpa():
    torch.manual_seed(3)
    layer = MultiHeadSelfAttention(6, 4, 5, heads=2, scale=True)
    x = torch.randn(4, 9, 6, requires_grad=True)
    c, _ = layer(x)
    (grad_ours,) = torch.autograd.grad(c.square().sum(), x)
    (grad_ref,) = torch.autograd.grad(reference(layer, x).square().sum(), x)
    torch.testing.assert_close(grad_ours, grad_ref, atol=1e-5, rtol=1e-5)


def test_alpha_rows_are_distributions():
    torch.manual_seed(4)
    _, alpha = MultiHeadSelfAttention(5, 3, 3, heads=4)(torch.randn(6, 10, 5) * 3)
    assert torch.all(alpha > 0)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(6, 4, 10))


def test_permutation_equivariance():
    torch.manual_seed(5)
    layer = MultiHeadSelfAttention(4, 3, 2, heads=2)
    x = torch.randn(3, 8, 4)
    perm = torch.randperm(8)
    c, alpha = layer(x)
    c_p, alpha_p = layer(x[:, perm])
    torch.testing.assert_close(c_p, c[:, perm], atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(alpha_p, alpha[:, :, perm][:, :, :, perm], atol=1e-6, rtol=1e-6)


def test_parameter_count_is_independent_of_m_and_linear_in_heads():
    one = sum(p.numel() for p in SelfAttention(7, 3, 5).parameters())
    assert one == 3 * 7 + 3 * 7 + 5 * 7
    assert sum(p.numel() for p in MultiHeadSelfAttention(7, 3, 5, heads=4).parameters()) == 4 * one
    layer = MultiHeadSelfAttention(7, 3, 5, heads=2)
    for m in (1, 4, 50):
        c, _ = layer(torch.randn(2, m, 7))
        assert c.shape == (2, m, 10)


def test_scaling_divides_scores_by_sqrt_dq():
    torch.manual_seed(6)
    plain = SelfAttention(4, 16, 2)
    scaled = SelfAttention(4, 16, 2, scale=True)
    scaled.load_state_dict(plain.state_dict())
    x = torch.randn(1, 5, 4)
    logits = (x @ plain.W_q.T) @ (x @ plain.W_k.T).transpose(-1, -2)
    torch.testing.assert_close(scaled(x)[1], torch.softmax(logits / 4.0, -1))
    torch.testing.assert_close(plain(x)[1], torch.softmax(logits, -1))


def test_matches_torch_multihead_attention():
    torch.manual_seed(7)
    E, l = 12, 3
    mha = torch.nn.MultiheadAttention(E, l, bias=False, batch_first=True)
    ours = from_torch_multihead(mha)
    x = torch.randn(4, 6, E)
    mask = torch.tensor([[True] * 6, [True] * 3 + [False] * 3, [True] * 5 + [False], [True] + [False] * 5])
    expected, expected_alpha = mha(x, x, x, key_padding_mask=~mask, average_attn_weights=False)
    c, alpha = ours(x, mask=mask)
    torch.testing.assert_close(c, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(alpha, expected_alpha, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match="bias=False"):
        from_torch_multihead(torch.nn.MultiheadAttention(E, l, batch_first=True))


def test_stack_keeps_equivariance_and_returns_each_alpha():
    torch.manual_seed(8)
    stack = SelfAttentionStack(4, 3, 5, heads=2, d_hidden=6, depth=3)
    x = torch.randn(2, 7, 4)
    perm = torch.randperm(7)
    y, alphas = stack(x)
    y_p, _ = stack(x[:, perm])
    assert y.shape == (2, 7, 6) and len(alphas) == 3 and all(a.shape == (2, 2, 7, 7) for a in alphas)
    torch.testing.assert_close(y_p, y[:, perm], atol=1e-6, rtol=1e-6)


# ---- score functions, each against a hand computation --------------------------------------

def test_score_functions_against_hand_computation():
    torch.manual_seed(9)
    q, k = torch.randn(3, 4), torch.randn(5, 4)
    W = torch.randn(4, 4)
    W_q, W_k, v = torch.randn(6, 4), torch.randn(6, 4), torch.randn(6)
    for i in range(3):
        for j in range(5):
            assert torch.isclose(dot_score(q, k)[i, j], (q[i] * k[j]).sum(), atol=1e-6)
            assert torch.isclose(scaled_dot_score(q, k)[i, j], (q[i] * k[j]).sum() / 2.0, atol=1e-6)
            assert torch.isclose(general_score(q, k, W)[i, j], q[i] @ W @ k[j], atol=1e-5)
            additive = v @ torch.tanh(W_q @ q[i] + W_k @ k[j])
            assert torch.isclose(additive_score(q, k, W_q, W_k, v)[i, j], additive, atol=1e-5)
            assert torch.isclose(cosine_score(q, k)[i, j], F.cosine_similarity(q[i], k[j], dim=0), atol=1e-6)


def test_masked_softmax_zeroes_masked_entries_exactly():
    scores = torch.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, 9.0]])
    mask = torch.tensor([[True, False, True], [True, True, False]])
    alpha = masked_softmax(scores, mask)
    assert alpha[0, 1] == 0 and alpha[1, 2] == 0
    torch.testing.assert_close(alpha[0, [0, 2]], torch.softmax(torch.tensor([1.0, 3.0]), 0))
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2))


# ---- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("x,mask,message", [
    (torch.randn(2, 3, 5), None, "last dimension 5 .* d_in = 4"),
    (torch.randn(2, 0, 4), None, "m = 0"),
    (torch.randn(2, 3, 4, 1), None, r"shape \(batch, m, d_in\)"),
    (torch.randn(2, 3, 4), torch.ones(2, 4, dtype=torch.bool), r"mask must have shape \(batch, m\)"),
    (torch.randn(2, 3, 4), torch.ones(3, 2, dtype=torch.bool), r"mask must have shape"),
    (torch.randn(2, 3, 4), torch.ones(2, 3), "bool"),
    (torch.randn(2, 3, 4), torch.tensor([[True, True, True], [False, False, False]]),
     "every key is masked for batch element 1"),
    (torch.randn(2, 3, 4), torch.eye(3, dtype=torch.bool).expand(2, 3, 3) & torch.tensor([True, True, False]),
     "every key is masked for query 2 of batch element 0"),
])
def test_bad_input_raises_value_error(x, mask, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadSelfAttention(4, 3, 2, heads=2)(x, mask=mask)


@pytest.mark.parametrize("kwargs", [dict(d_in=0, d_q=3, d_out=2), dict(d_in=4, d_q=-1, d_out=2),
                                    dict(d_in=4, d_q=3, d_out=2.5), dict(d_in=4, d_q=3, d_out=2, heads=0)])
def test_bad_sizes_raise_value_error(kwargs):
    with pytest.raises(ValueError, match="positive integer"):
        MultiHeadSelfAttention(**kwargs)


def test_score_function_shape_errors():
    with pytest.raises(ValueError, match="same last dimension"):
        dot_score(torch.randn(3, 4), torch.randn(5, 3))
    with pytest.raises(ValueError, match=r"W must have shape"):
        general_score(torch.randn(3, 4), torch.randn(5, 3), torch.randn(4, 4))
    with pytest.raises(ValueError, match="additive score needs"):
        additive_score(torch.randn(3, 4), torch.randn(5, 4), torch.randn(6, 4), torch.randn(6, 3), torch.randn(6))
    with pytest.raises(ValueError, match="does not broadcast"):
        masked_softmax(torch.randn(2, 3), torch.ones(3, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match="x must be a torch.Tensor"):
        self_attention([[1.0]], torch.randn(2, 1), torch.randn(2, 1), torch.randn(2, 1))


@pytest.mark.parametrize("scale", [False, True])
@pytest.mark.parametrize("full_mask", [False, True])
def test_fused_path_computes_the_same_function(scale, full_mask):
    torch.manual_seed(10)
    layer = MultiHeadSelfAttention(6, 4, 3, heads=3, scale=scale, d_proj=5)
    x = torch.randn(4, 7, 6, requires_grad=True)
    lengths = torch.tensor([7, 3, 1, 5])
    mask = torch.arange(7) < lengths[:, None]
    if full_mask:
        mask = mask[:, None, :] & causal_mask(7)
    c, alpha = layer(x, mask=mask)
    c_fused, no_alpha = layer(x, mask=mask, need_weights=False)
    assert no_alpha is None and alpha.shape == (4, 3, 7, 7)
    torch.testing.assert_close(c_fused, c, atol=1e-5, rtol=1e-5)
    (grad,) = torch.autograd.grad(c.square().sum(), x)
    (grad_fused,) = torch.autograd.grad(c_fused.square().sum(), x)
    torch.testing.assert_close(grad_fused, grad, atol=1e-5, rtol=1e-5)
