"""attnmarl.nets.policies and continuous MAPPO: shapes, what each policy's output may depend on, the
entity actor against nn.MultiheadAttention, one set of weights for any m, errors, checkpoints."""
import importlib

import numpy as np
import pytest
import torch
from torch import nn

from attnmarl import load_policy
from attnmarl.algos.mappo import MAPPOConfig, gaussian_log_prob, make_agent, train
from attnmarl.checkpoints import agent_policy, load_agent, save_checkpoint, shipped_checkpoint
from attnmarl.envs import (
    episode_returns,
    evaluate,
    make_batched,
    make_reference,
    mixed_teams,
    obs_to_array,
    random_policy,
    token_layout,
)
from attnmarl.nets import Actor, AttentionPolicy, ConcatPolicy, EntityActor, EntityAttention

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: conftest.py


def spread_obs(batch: int, m: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(batch, m, 6 * m, generator=torch.Generator().manual_seed(seed))


def all_policies(m: int, d_y: int = 5) -> dict[str, nn.Module]:
    torch.manual_seed(0)
    return {"flat": Actor(m, 6 * m, d_y), "concat": ConcatPolicy(m, 6 * m, d_y),
            "attention": AttentionPolicy(m, 6 * m, d_y),
            "entity": EntityActor("simple_spread", {"N": m}, m, 6 * m, d_y)}


@pytest.mark.parametrize("m", [1, 3, 6])
def test_every_policy_gives_one_output_vector_per_agent(m):
    o = spread_obs(4, m)
    for name, policy in all_policies(m).items():
        y = policy(o)
        assert y.shape == (4, m, 5) and torch.isfinite(y).all(), name


def test_outputs_start_small_so_every_action_starts_about_equally_likely():
    for name, policy in all_policies(3).items():
        probabilities = torch.softmax(policy(spread_obs(64, 3)), -1)
        assert (probabilities - 0.2).abs().max() < 0.05, name


def swap(o: torch.Tensor, j: int, k: int) -> torch.Tensor:
    swapped = o.clone()
    swapped[:, [j, k]] = o[:, [k, j]]
    return swapped


def test_centralized_policies_read_every_observation_decentralized_ones_only_their_own():
    """y^1 after changing o^3: the centralized policies move, the flat and entity actors cannot."""
    o = spread_obs(8, 3)
    changed = o.clone()
    changed[:, 2] += 1.0
    for name, policy in all_policies(3).items():
        with torch.no_grad():
            moved = (policy(changed)[:, 0] - policy(o)[:, 0]).abs().max().item()
        assert (moved > 1e-4) == (name in ("concat", "attention")), (name, moved)


def test_swapping_two_other_agents_leaves_the_attention_policy_unchanged_but_not_the_concatenation():
    """The swap check of flaw 3, on f^i = softmax(y^i): o^2 and o^3 trade places, agent 1 decides."""
    o = spread_obs(16, 4)
    policies = all_policies(4)
    with torch.no_grad():
        for name, should_hold in (("attention", True), ("concat", False)):
            before = torch.softmax(policies[name](o)[:, 0], -1)
            after = torch.softmax(policies[name](swap(o, 1, 2))[:, 0], -1)
            assert torch.allclose(before, after, atol=1e-6) == should_hold, name
            own = torch.softmax(policies[name](swap(o, 0, 1))[:, 0], -1)  # its own observation replaced
            assert not torch.allclose(before, own, atol=1e-4), name


def permute_landmarks(o: torch.Tensor, m: int, order: list[int]) -> torch.Tensor:
    """Agent observations with their landmark blocks (columns 4 .. 4 + 2m) reordered."""
    blocks = o[..., 4:4 + 2 * m].reshape(*o.shape[:-1], m, 2)[..., order, :]
    return torch.cat([o[..., :4], blocks.flatten(-2), o[..., 4 + 2 * m:]], dim=-1)


def test_the_entity_actor_sees_a_set_of_landmarks_the_flat_actor_a_list():
    m = 4
    o = spread_obs(16, m)
    shuffled = permute_landmarks(o, m, [2, 0, 3, 1])
    policies = all_policies(m)
    with torch.no_grad():
        assert torch.allclose(policies["entity"](o), policies["entity"](shuffled), atol=1e-6)
        assert not torch.allclose(policies["flat"](o), policies["flat"](shuffled), atol=1e-4)


def test_entity_attention_is_the_self_row_of_full_multi_head_self_attention():
    torch.manual_seed(3)
    actor = EntityActor("simple_spread", {"N": 4}, 4, 24, 5)
    net = actor.nets[0]
    o = spread_obs(7, 4)
    y, alpha = actor.outputs_and_alpha(o)
    tokens = actor.tokens(o)[0]  # (7, 4, n = 1 + 4 + 3, d_tokens)
    assert tokens.shape[:3] == (7, 4, 8)
    e = net.embed(tokens)
    z = net.ln_attn(e).flatten(0, 1)
    mha = nn.MultiheadAttention(32, 2, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([net.W_q.weight, net.W_kv.weight]))
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(net.W_o.weight)
        mha.out_proj.bias.copy_(net.W_o.bias)
        out, weights = mha(z, z, z, average_attn_weights=False)  # every token queries: (28, n, 32), (28, l, n, n)
        h = e[..., 0, :] + out[:, 0].view(7, 4, 32)
        h = h + net.ff(net.ln_ff(h))
        torch.testing.assert_close(y, net.W_y(net.ln_out(h)), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(alpha, weights[:, :, 0].view(7, 4, 2, 8), atol=1e-6, rtol=1e-5)
    assert torch.allclose(alpha.sum(-1), torch.ones(()))


FOLDED_CASES = {  # scenario, its arguments, agent types, token frame
    "spread m=3": ("simple_spread", {"N": 3}, None, "egocentric"),
    "spread m=12": ("simple_spread", {"N": 12}, None, "egocentric"),
    "spread absolute": ("simple_spread", {"N": 4}, None, "absolute"),
    "tag, two types": ("simple_tag", {}, (0, 0, 0, 1), "egocentric"),
    "treasure, two types": ("collect_treasure", {}, (0, 0, 0, 0, 0, 0, 1, 1), "egocentric"),
}


def perturbed_actor(scenario, kwargs, types, frame) -> tuple[EntityActor, torch.Tensor]:
    """A float64 entity actor with random (not initial) weights, and observations of a real port
    scaled up, so layer norms and softmaxes are far from their trivial start."""
    torch.manual_seed(5)
    o = torch.from_numpy(make_batched(scenario, 8, seed=2, **kwargs).reset()).double() * 3
    actor = EntityActor(scenario, kwargs, o.shape[1], o.shape[2], 5, types, frame=frame).double()
    with torch.no_grad():
        for p in actor.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return actor, o


@pytest.mark.parametrize("case", FOLDED_CASES)
def test_the_folded_entity_actor_equals_the_reference_in_outputs_and_gradients(case):
    """forward (EntityAttention.folded, what training runs) and outputs_and_alpha (the formulation
    chapter 8 teaches) compute the same function: equal in float64 to rounding, and so are the
    gradients of every parameter."""
    actor, o = perturbed_actor(*FOLDED_CASES[case])
    parameters = list(actor.parameters())
    y_reference = actor.outputs_and_alpha(o)[0]
    y_folded = actor(o)
    torch.testing.assert_close(y_folded, y_reference, rtol=1e-12, atol=1e-12)
    loss_weights = torch.randn_like(y_folded)
    g_reference = torch.autograd.grad((y_reference * loss_weights).sum(), parameters)
    g_folded = torch.autograd.grad((y_folded * loss_weights).sum(), parameters)
    for (name, _), a, b in zip(actor.named_parameters(), g_folded, g_reference):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10, msg=name)


def test_the_folded_form_masks_tokens_like_the_reference():
    """A mask hides the same tokens in both forms (the folded one lists tokens kind by kind, feature-major):
    the outputs agree, and hidden tokens change nothing."""
    actor, o = perturbed_actor(*FOLDED_CASES["spread m=3"])
    net, tokens, parts = actor.nets[0], actor.tokens(o)[0], actor.kind_tokens(o)[0]
    assert [p.shape[:2] for p in parts] == [(4, 1), (2, 3), (4, 2)]  # self, landmarks, other agents: (w_k, n_k)
    mask = torch.rand(tokens.shape[:-1], generator=torch.Generator().manual_seed(0)) > 0.4  # (batch, m_type, n)
    mask[..., 0] = True
    feature_major = mask.permute(2, 1, 0)  # (n, m_type, batch), the folded form's order
    y_reference, _ = net(tokens, mask)
    torch.testing.assert_close(net.folded(parts, feature_major), y_reference, rtol=1e-12, atol=1e-12)
    scrambled = [p.clone() for p in parts]
    scrambled[1][:, ~feature_major[1:4]] = 1e3  # whatever a hidden landmark holds
    torch.testing.assert_close(net.folded(scrambled, feature_major), y_reference, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="self token"):
        net.folded(parts, ~feature_major)
    with pytest.raises(ValueError, match="mask must be a bool tensor"):
        net.folded(parts, feature_major.double())
    with pytest.raises(ValueError, match=r"mask must be a bool tensor of shape \(6, 3, 8\)"):
        net.folded(parts, mask)  # the token-major order of the reference form


def test_the_folded_form_refuses_tokens_it_was_not_built_for():
    actor, o = perturbed_actor(*FOLDED_CASES["spread m=3"])
    net, parts = actor.nets[0], actor.kind_tokens(o)[0]
    with pytest.raises(ValueError, match="expected tokens of 3 kinds"):
        net.folded(parts[:2])
    with pytest.raises(ValueError, match="w_k = 2"):
        net.folded([parts[0], parts[2], parts[2]])
    with pytest.raises(ValueError, match="without kind_widths"):
        EntityAttention(7, 5).folded(parts)
    with pytest.raises(ValueError, match="kind widths"):
        EntityAttention(7, 5, kind_widths=[4, 2])


def test_entity_tokens_follow_the_layout_of_chapter_6():
    actor = EntityActor("simple_spread", {"N": 3}, 3, 18, 5)
    o = spread_obs(2, 3)
    tokens = actor.tokens(o)[0]  # (2, 3, 6, d_tokens): self, 3 landmarks, 2 other agents
    layout = token_layout("simple_spread", 1, N=3)
    assert actor.token_names[1] == layout.names
    for n, columns in enumerate(layout.columns):
        features, kind_flags = tokens[:, 1, n, :-3], tokens[:, 1, n, -3:]
        expected = o[:, 1, list(columns)]  # the token's features sit in its kind's block, zeros elsewhere
        assert torch.equal(features[features != 0], expected[expected != 0])
        assert torch.equal(kind_flags.sum(-1), torch.ones(2))  # one kind flag per token


def test_one_entity_actor_runs_any_number_of_agents():
    small = EntityActor("simple_spread", {"N": 3}, 3, 18, 5)
    large = EntityActor("simple_spread", {"N": 8}, 8, 48, 5)
    large.load_state_dict(small.state_dict())
    y3, y8 = small(spread_obs(2, 3)), large(spread_obs(2, 8))
    assert y3.shape == (2, 3, 5) and y8.shape == (2, 8, 5)
    assert sum(p.numel() for p in small.parameters()) == sum(p.numel() for p in large.parameters())
    with pytest.raises(RuntimeError):
        Actor(8, 48, 5).load_state_dict(Actor(3, 18, 5).state_dict())


def test_heterogeneous_agents_get_one_entity_network_per_type():
    actor = EntityActor("simple_tag", {}, 4, 16, 5, agent_types=(0, 0, 0, 1))
    assert len(actor.nets) == 2
    y, alpha = actor.outputs_and_alpha(torch.randn(3, 4, 16))
    assert y.shape == (3, 4, 5) and alpha.shape == (3, 4, 2, 6)
    assert actor.token_names[3][0] == "agent_0" and actor.token_names[0][0] == "adversary_0"


def test_bad_input_is_refused_with_a_clear_message():
    actor = EntityActor("simple_spread", {"N": 3}, 3, 18, 5)
    with pytest.raises(ValueError, match=r"\(batch, m, obs_dim\) = \(batch, 3, 18\)"):
        actor(torch.randn(2, 4, 18))
    with pytest.raises(ValueError, match="floating-point"):
        actor(torch.zeros(2, 3, 18, dtype=torch.long))
    with pytest.raises(ValueError, match="divisible"):
        EntityActor("simple_spread", {"N": 3}, 3, 18, 5, d=30, heads=4)
    with pytest.raises(ValueError, match="obs_dim"):
        EntityActor("simple_spread", {"N": 3}, 3, 20, 5)
    with pytest.raises(ValueError, match="actor must be one of"):
        MAPPOConfig(actor="lstm")
    with pytest.raises(ValueError, match=r"\(batch, m, obs_dim\)"):
        AttentionPolicy(3, 18, 5)(torch.randn(3, 18))


def test_gaussian_log_prob_and_entropy_match_torch_distributions():
    torch.manual_seed(0)
    mu, log_std, a = torch.rand(6, 3, 5), torch.randn(3, 5) * 0.3 - 1, torch.rand(6, 3, 5)
    log_p, entropy = gaussian_log_prob(mu, log_std, a)
    normal = torch.distributions.Normal(mu, log_std.exp())
    torch.testing.assert_close(log_p, normal.log_prob(a).sum(-1))
    torch.testing.assert_close(entropy, normal.entropy().sum(-1))


def test_continuous_mappo_trains_and_its_checkpoint_plays_mpe2(tmp_path):
    config = MAPPOConfig("simple_spread", {"N": 3, "continuous_actions": True}, actor="attention", num_envs=16,
                         total_steps=16 * 25 * 2)
    agent = train(config)
    assert agent.continuous and agent.log_std.shape == (1, 5)
    assert not torch.allclose(agent.log_std, torch.full((1, 5), config.log_std_init))  # sigma is learned
    o = spread_obs(5, 3)
    with torch.no_grad():
        mean_action, _ = agent.act(o, deterministic=True)
        sampled, _ = agent.act(o, torch.Generator().manual_seed(0))
    assert ((mean_action > 0) & (mean_action < 1)).all()  # mu = sigmoid(y) lies inside mpe2's box
    clipped = agent.env_actions(sampled)
    assert clipped.min() >= 0 and clipped.max() <= 1 and (sampled.numpy() != clipped).any()
    save_checkpoint(tmp_path / "mu.pt", agent, config)
    policy = load_policy(tmp_path / "mu.pt")
    mean, _ = evaluate(policy, "simple_spread", 2, N=3, continuous_actions=True)
    assert np.isfinite(mean)


def test_a_checkpoint_of_one_actor_refuses_another(tmp_path):
    config = MAPPOConfig("simple_spread", {"N": 3}, actor="entity", num_envs=8, total_steps=200)
    save_checkpoint(tmp_path / "entity.pt", make_agent(config), config)
    agent, loaded = load_agent(tmp_path / "entity.pt")
    assert isinstance(agent.actor, EntityActor) and loaded.actor == "entity"
    with pytest.raises(ValueError, match="actor: checkpoint 'entity', requested 'attention'"):
        load_agent(tmp_path / "entity.pt", MAPPOConfig("simple_spread", {"N": 3}, actor="attention"))


def test_a_centralized_policy_plays_mpe2_from_every_agents_observation(tmp_path):
    """load_policy hands the centralized actor all m observations: agent 1's greedy move in mpe2 is the
    package's argmax, and changing only agent 3's observation changes agent 1's move."""
    torch.manual_seed(1)  # an untrained actor whose move visibly turns on agent 3's observation; the generator's
    # state left by the tests before it decided which actor this was (loading a checkpoint draws as building one)
    config = MAPPOConfig("simple_spread", {"N": 3}, actor="concat", num_envs=8, total_steps=200)
    agent = make_agent(config)
    with torch.no_grad():
        agent.actor.heads.out.W.mul_(1000.0)  # make the untrained policy decisive
    save_checkpoint(tmp_path / "concat.pt", agent, config)
    policy = load_policy(tmp_path / "concat.pt")
    env = make_reference("simple_spread", N=3)
    obs, _ = env.reset(seed=0)
    with torch.no_grad():
        expected = agent.actor(torch.from_numpy(obs_to_array(env, obs)).unsqueeze(0))[0].argmax(-1)
    assert [policy(obs)[a] for a in env.possible_agents] == expected.tolist()
    moves = set()
    for shift in np.linspace(-3, 3, 13):
        changed = dict(obs, agent_2=obs["agent_2"] + np.float32(shift))
        moves.add(policy(changed)["agent_0"])
    assert len(moves) > 1


def test_absolute_tokens_are_the_world_state_of_the_port():
    env = make_batched("simple_spread", 2, seed=1, N=3)
    o = torch.from_numpy(env.reset())
    env.step(np.full((2, 3), 2))  # everyone moves right, so velocities are not zero
    o = torch.from_numpy(env.observe())
    tokens = EntityActor("simple_spread", {"N": 3}, 3, 18, 5, frame="absolute").tokens(o)[0]  # (2, 3, 6, 13)
    for i in range(3):
        np.testing.assert_allclose(tokens[:, i, 0, 0:4], np.concatenate([env.agent_vel[:, i], env.agent_pos[:, i]], -1),
                                   atol=1e-6)
        np.testing.assert_allclose(tokens[:, i, 1:4, 4:6], env.landmark_pos, atol=1e-6)
        others = [j for j in range(3) if j != i]
        np.testing.assert_allclose(tokens[:, i, 4:6, 8:10], env.agent_pos[:, others], atol=1e-6)
        np.testing.assert_allclose(tokens[:, i, 4:6, 6:8], env.agent_vel[:, others], atol=1e-6)
    with pytest.raises(ValueError, match="simple_spread only"):
        EntityActor("simple_tag", {}, 4, 16, 5, agent_types=(0, 0, 0, 1), frame="absolute")


def as_one_by_one(side_by_side: np.ndarray, one_by_one: np.ndarray) -> bool:
    """Episode returns played side by side are those played one by one, but for the rare episode where a batched
    matrix product rounds a logit's last bit otherwise at a near-tie of two greedy actions (attnmarl.envs.evaluate.
    _side_by_side): at most one episode in 20 differs (at least one is allowed), and the mean moves by less than
    0.01, a thirtieth of the standard error of a 200-episode score."""
    differ = (side_by_side != one_by_one).any(axis=1).sum()
    return differ <= max(1, len(one_by_one) // 20) and abs(side_by_side.mean() - one_by_one.mean()) < 0.01


def test_a_greedy_checkpoint_plays_its_episodes_side_by_side_to_the_returns_one_by_one(monkeypatch):
    """episode_returns plays the episodes of a greedy policy with discrete actions side by side, one network call
    per step for up to SIDE_BY_SIDE games (attnmarl.envs.evaluate): the returns are those of the episodes played
    one after another (as_one_by_one), across batches too (SIDE_BY_SIDE 32, 60 episodes), also for two greedy
    teams playing each other (mixed_teams; with a random team, one by one). A sampling policy, whose draws would
    come in another order, and continuous actions, which a batched matmul would move by rounding at every step,
    play one by one; an agent that draws random numbers while it acts greedily is refused rather than played so."""
    evaluation = importlib.import_module("attnmarl.envs.evaluate")  # the module, not the function envs.evaluate
    monkeypatch.setattr(evaluation, "SIDE_BY_SIDE", 32)
    path = shipped_checkpoint("policy", "pi-spread3-entity", 0)
    policy = load_policy(path)
    batched, calls = policy.many, []
    policy.many = lambda observations: calls.append(len(observations)) or batched(observations)
    side_by_side = episode_returns(policy, "simple_spread", 60, seed=0, N=3)
    assert calls == [32] * 25 + [28] * 25  # one call per step for each batch of games, 25 steps an episode
    del policy.many
    assert as_one_by_one(side_by_side, episode_returns(policy, "simple_spread", 60, seed=0, N=3))
    assert not hasattr(load_policy(path, deterministic=False), "many")
    predators, prey = (load_policy(shipped_checkpoint("policy", f"pi-tag-{actor}", 0))
                       for actor in ("attention", "flat"))
    game = mixed_teams(predators, prey)  # two greedy teams: side by side too
    side_by_side = episode_returns(game, "simple_tag", 7, seed=5)
    del game.many
    assert as_one_by_one(side_by_side, episode_returns(game, "simple_tag", 7, seed=5))
    assert not hasattr(mixed_teams(predators, random_policy("simple_tag", seed=0)), "many")
    assert not hasattr(load_policy(shipped_checkpoint("policy", "mu-spread3-concat", 0)), "many")
    agent, config = load_agent(path)
    greedy_act = agent.act

    def drawing_act(o, generator=None, deterministic=False):
        torch.rand(1, generator=generator)
        return greedy_act(o, generator, deterministic)

    agent.act = drawing_act
    with pytest.raises(RuntimeError, match="drew random numbers while acting greedily"):
        evaluate(agent_policy(agent, config, deterministic=True), "simple_spread", 2, N=3)
