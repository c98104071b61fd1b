"""attnmarl.nets: shapes, the permutation property of fig. 17.8 (and its absence in fig. 17.7), masks, errors."""
import pytest
import torch
from torch import nn

from attnmarl.nets import Actor, AgentLinear, AttentionCritic, ConcatCritic

CRITICS = [AttentionCritic, ConcatCritic]


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: conftest.py


def observations(batch: int, m: int, obs_dim: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(batch, m, obs_dim, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("critic", CRITICS)
@pytest.mark.parametrize("batch,m,obs_dim", [(1, 1, 4), (5, 3, 18), (2, 12, 72)])
def test_critics_give_one_value_per_agent(critic, batch, m, obs_dim):
    torch.manual_seed(0)
    net = critic(m, obs_dim)
    v_hat = net(observations(batch, m, obs_dim))
    assert v_hat.shape == (batch, m) and v_hat.dtype == torch.float32 and torch.isfinite(v_hat).all()


def test_attention_critic_returns_alpha_and_agrees_with_the_fused_path():
    torch.manual_seed(0)
    batch, m, obs_dim, heads, depth = 4, 5, 10, 3, 2
    net = AttentionCritic(m, obs_dim, heads=heads, depth=depth)
    o = observations(batch, m, obs_dim)
    v_hat, alphas = net.values_and_alpha(o)
    assert len(alphas) == depth
    for alpha in alphas:
        assert alpha.shape == (batch, heads, m, m)  # (batch, l, query i, key j)
        torch.testing.assert_close(alpha.sum(-1), torch.ones(batch, heads, m))
    torch.testing.assert_close(v_hat, net(o), atol=1e-5, rtol=1e-5)  # SDPA path, no alpha stored


def own_value_moves_when_others_swap(net: nn.Module, o: torch.Tensor, i: int, j: int, k: int) -> bool:
    """Does v_hat^i change when o^j and o^k (j, k != i) trade places?"""
    swapped = o.clone()
    swapped[:, [j, k]] = o[:, [k, j]]
    with torch.no_grad():
        return not torch.allclose(net(o)[:, i], net(swapped)[:, i], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("m,i,j,k", [(3, 0, 1, 2), (6, 2, 0, 5), (6, 5, 3, 1)])
def test_swapping_two_other_observations_leaves_v_i_unchanged_only_with_attention(m, i, j, k):
    torch.manual_seed(1)
    o = observations(8, m, 6 * m, seed=m)
    assert not own_value_moves_when_others_swap(AttentionCritic(m, 6 * m, depth=2), o, i, j, k)
    assert own_value_moves_when_others_swap(ConcatCritic(m, 6 * m), o, i, j, k)


def test_swapping_agent_i_itself_changes_its_value_in_both_critics():
    torch.manual_seed(2)
    o = observations(8, 4, 8)
    for critic in CRITICS:
        assert own_value_moves_when_others_swap(critic(4, 8), o, 0, 0, 2)  # head i reads o^i itself


def test_parameters_of_the_attention_critic_grow_only_through_the_heads():
    def counts(net: nn.Module) -> tuple[int, int]:
        heads = sum(p.numel() for p in net.heads.parameters())
        return sum(p.numel() for p in net.parameters()) - heads, heads

    shared = {m: counts(AttentionCritic(m, 18))[0] for m in (3, 6, 12)}
    assert len(set(shared.values())) == 1  # encoder and attention do not depend on m
    assert counts(AttentionCritic(12, 18))[1] == 4 * counts(AttentionCritic(3, 18))[1]  # heads: linear in m
    concat_heads = {m: counts(ConcatCritic(m, 18))[1] for m in (3, 6)}
    assert concat_heads[6] > 3.5 * concat_heads[3]  # each head reads all m features: ~m^2


def test_a_masked_agent_is_never_attended_to():
    torch.manual_seed(3)
    m, obs_dim = 5, 12
    net = AttentionCritic(m, obs_dim, heads=2, depth=2)
    o = observations(6, m, obs_dim)
    mask = torch.ones(6, m, dtype=torch.bool)
    mask[:, 3] = False
    v_hat, alphas = net.values_and_alpha(o, mask)
    assert all((alpha[..., 3] == 0).all() for alpha in alphas)
    changed = o.clone()
    changed[:, 3] = 100.0 * torch.randn(6, obs_dim)
    present = [0, 1, 2, 4]
    torch.testing.assert_close(net(changed, mask)[:, present], v_hat[:, present], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(net(changed)[:, present], net(o)[:, present])  # without the mask it matters


def test_agent_types_keep_the_property_within_a_type():
    torch.manual_seed(4)
    types = (0, 0, 0, 1)  # simple_tag: three adversaries, one good agent
    o = observations(8, 4, 16)
    net = AttentionCritic(4, 16, agent_types=types)
    assert not own_value_moves_when_others_swap(net, o, 0, 1, 2)  # two adversaries trade places
    assert own_value_moves_when_others_swap(net, o, 0, 1, 3)  # an adversary and the good agent: types differ


def test_agent_linear_is_m_separate_linear_layers():
    torch.manual_seed(5)
    m, d_in, d_out = 4, 7, 3
    layer = AgentLinear(m, d_in, d_out)
    h = torch.randn(10, m, d_in)
    expected = torch.stack([h[:, i] @ layer.W[i].T + layer.b[i] for i in range(m)], dim=1)
    torch.testing.assert_close(layer(h), expected)
    shared = torch.randn(10, d_in)  # one input read by all m layers
    torch.testing.assert_close(layer(shared), layer(shared.unsqueeze(1).expand(-1, m, -1)))


def test_actor_is_decentralized_and_shared_within_a_type():
    torch.manual_seed(6)
    types = (1, 0, 0, 1)
    actor = Actor(4, 9, 5, agent_types=types)
    o = observations(3, 4, 9)
    o[:, 1] = o[:, 2] = o[:, 0]  # agents 0, 1, 2 see the same; 1 and 2 share parameters, 0 does not
    logits = actor(o)
    assert logits.shape == (3, 4, 5)
    torch.testing.assert_close(logits[:, 1], logits[:, 2])
    assert not torch.allclose(logits[:, 0], logits[:, 1])
    changed = o.clone()
    changed[:, 3] += 1.0  # agent i's action depends on o^i only
    torch.testing.assert_close(actor(changed)[:, :3], logits[:, :3])


@pytest.mark.parametrize("net", [AttentionCritic(3, 18), ConcatCritic(3, 18), Actor(3, 18, 5)],
                         ids=["attention", "concat", "actor"])
@pytest.mark.parametrize("bad,problem", [
    (torch.randn(4, 18), r"\(batch, m, obs_dim\) = \(batch, 3, 18\)"),
    (torch.randn(4, 2, 18), r"got \(4, 2, 18\)"),
    (torch.randn(4, 3, 17), r"got \(4, 3, 17\)"),
    (torch.zeros(4, 3, 18, dtype=torch.long), "floating-point"),
    ([[0.0] * 18] * 3, "torch.Tensor"),
])
def test_wrong_observations_are_refused(net, bad, problem):
    with pytest.raises(ValueError, match=problem):
        net(bad)


def test_bad_construction_and_masks_are_refused():
    with pytest.raises(ValueError, match="one type per agent"):
        AttentionCritic(3, 18, agent_types=(0, 1))
    with pytest.raises(ValueError, match="without gaps"):
        Actor(3, 18, 5, agent_types=(0, 2, 2))
    with pytest.raises(ValueError, match="positive int"):
        ConcatCritic(0, 18)
    net = AttentionCritic(3, 18)
    with pytest.raises(ValueError, match=r"mask must be a bool tensor of shape \(batch, m\)"):
        net(torch.randn(2, 3, 18), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="every key is masked"):
        net(torch.randn(2, 3, 18), torch.zeros(2, 3, dtype=torch.bool))
