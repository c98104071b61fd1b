"""MADDPG (attnmarl.algos.maddpg) and its Q critics (attnmarl.nets.qnets): shapes, the swap check,
parameters vs m, the replay buffer, target updates, the actor objective, a smoke run, checkpoints."""
import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from attnmarl import load_policy
from attnmarl.algos.maddpg import (
    MADDPGConfig,
    ReplayBuffer,
    force_to_action,
    own_action_values,
    soft_update,
    train,
)
from attnmarl.algos.mappo import MAPPOConfig
from attnmarl.checkpoints import agent_policy, load_agent, load_checkpoint, save_checkpoint
from attnmarl.envs import evaluate, make_batched, random_policy
from attnmarl.nets import AttentionQ, ConcatQ
from attnmarl.train import main

CONTINUOUS = {"N": 3, "continuous_actions": True}
TINY = MADDPGConfig("simple_spread", CONTINUOUS, num_envs=16, total_steps=16 * 40, learning_starts=160, d_x=16,
                    d_q=8, d_out=8, critic_hidden=16, actor_hidden=16, minibatch_size=64, buffer_size=2000)


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: conftest.py


def critics(m: int, obs_dim: int = 6, types=None):
    torch.manual_seed(0)
    return {"attention": AttentionQ(m, obs_dim, 5, types, d_x=16, d_q=8, d_out=8),
            "concat": ConcatQ(m, obs_dim, 5, types, d_x=16)}


@pytest.mark.parametrize("kind", ["attention", "concat"])
def test_q_critics_map_observations_and_actions_to_one_value_per_agent(kind):
    q = critics(4)[kind]
    o, a = torch.randn(7, 4, 6), torch.rand(7, 4, 5)
    assert q(o, a).shape == (7, 4)
    changed = a.clone()
    changed[:, 2] = torch.rand(7, 5)
    assert not torch.allclose(q(o, a), q(o, changed))  # the action is an input: q, not v


def test_attention_q_returns_alpha_rows_that_sum_to_one():
    q_hat, alphas = critics(5)["attention"].values_and_alpha(torch.randn(3, 5, 6), torch.rand(3, 5, 5))
    assert q_hat.shape == (3, 5) and len(alphas) == 1 and alphas[0].shape == (3, 2, 5, 5)
    torch.testing.assert_close(alphas[0].sum(-1), torch.ones(3, 2, 5))


def swapped(x: torch.Tensor, j: int, k: int) -> torch.Tensor:
    y = x.clone()
    y[:, [j, k]] = x[:, [k, j]]
    return y


@pytest.mark.parametrize("kind,invariant", [("attention", True), ("concat", False)])
def test_swapping_two_other_agents_observation_and_action_leaves_q_i_unchanged_only_with_attention(kind, invariant):
    """Fig. 17.9's property: q_hat^i reads the others as a set {(o^j, a^j)}, j != i."""
    q = critics(4)[kind]
    o, a = torch.randn(20, 4, 6), torch.rand(20, 4, 5)
    before, after = q(o, a)[:, 0], q(swapped(o, 2, 3), swapped(a, 2, 3))[:, 0]
    assert torch.allclose(before, after, atol=1e-5) == invariant
    if not invariant:
        assert (before - after).abs().max() > 1e-3


def test_attention_q_is_equivariant_when_agent_i_moves_too():
    q = critics(4)["attention"]
    o, a = torch.randn(6, 4, 6), torch.rand(6, 4, 5)
    perm = [2, 0, 3, 1]
    # moving every (o^j, a^j) moves the shared parts of the computation, but each head g^i is agent i's own,
    # so q_hat is only equivariant up to the heads: compare the attention outputs instead
    z = torch.cat([o, a], -1)
    h = q.phi(z)
    c, _ = q.blocks[0](h)
    c_perm, _ = q.blocks[0](h[:, perm])
    torch.testing.assert_close(c_perm, c[:, perm])


def test_parameters_grow_with_m_for_concatenation_and_only_in_the_heads_for_attention():
    def counts(m):
        return {kind: sum(p.numel() for p in net.parameters()) for kind, net in critics(m).items()}

    sizes = {m: counts(m) for m in (2, 4, 8)}
    heads = {m: sum(p.numel() for p in critics(m)["attention"].heads.parameters()) for m in (2, 4, 8)}
    shared = {m: sizes[m]["attention"] - heads[m] for m in sizes}
    assert shared[2] == shared[4] == shared[8]  # phi, attention and FC do not depend on m
    assert heads[8] == 4 * heads[2]  # m heads of one size
    growth = [sizes[m]["concat"] for m in (2, 4, 8)]
    assert growth[2] - growth[1] > 2 * (growth[1] - growth[0])  # superlinear: m heads of m d_x inputs


def test_force_to_action_makes_mpe2s_force():
    u = torch.tensor([[0.5, -0.25], [-1.0, 1.0], [0.0, 0.0]])
    a = force_to_action(u)
    assert a.shape == (3, 5) and (a >= 0).all() and (a <= 1).all() and (a[:, 0] == 0).all()
    torch.testing.assert_close(torch.stack([a[:, 2] - a[:, 1], a[:, 4] - a[:, 3]], -1), u)


def test_replay_buffer_wraps_around_and_samples_only_what_it_holds():
    buffer = ReplayBuffer(5, 2, 3, 5)
    with pytest.raises(ValueError, match="empty"):
        buffer.sample(4)

    def batch(start, n):
        ids = torch.arange(start, start + n, dtype=torch.float32)
        return (ids.view(n, 1, 1).expand(n, 2, 3), torch.zeros(n, 2, 5), ids.view(n, 1).expand(n, 2),
                -ids.view(n, 1, 1).expand(n, 2, 3), ids % 2 == 0)

    buffer.add(*batch(0, 3))
    assert len(buffer) == 3 and buffer.position == 3
    o, a, r, o_next, terminated = buffer.sample(200, torch.Generator().manual_seed(0))
    assert set(r[:, 0].tolist()) == {0.0, 1.0, 2.0}  # only the three stored, each drawn
    torch.testing.assert_close(o_next[:, 0, 0], -o[:, 0, 0])  # transitions stay whole
    assert torch.equal(terminated, r[:, 0] % 2 == 0)
    buffer.add(*batch(3, 4))  # 7 transitions into 5 slots: 0 and 1 are overwritten by 5 and 6
    assert len(buffer) == 5 and buffer.position == 2
    assert sorted(buffer.r[:, 0].tolist()) == [2.0, 3.0, 4.0, 5.0, 6.0]
    assert set(buffer.sample(300, torch.Generator().manual_seed(1))[2][:, 0].tolist()) == {2.0, 3.0, 4.0, 5.0, 6.0}
    with pytest.raises(ValueError, match=r"r must have shape \(2, 2\)"):
        buffer.add(torch.zeros(2, 2, 3), torch.zeros(2, 2, 5), torch.zeros(2, 3), torch.zeros(2, 2, 3),
                   torch.zeros(2, dtype=torch.bool))


def test_soft_update_moves_the_target_a_fraction_tau_of_the_way():
    source, target = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    before = [p.detach().clone() for p in target.parameters()]
    soft_update(target, source, 0.1)
    for w_target, w_before, w in zip(target.parameters(), before, source.parameters()):
        torch.testing.assert_close(w_target, 0.9 * w_before + 0.1 * w)
    soft_update(target, source, 1.0)  # tau = 1 copies
    for w_target, w in zip(target.parameters(), source.parameters()):
        torch.testing.assert_close(w_target, w)
    with pytest.raises(ValueError, match="tau"):
        soft_update(target, source, 1.5)


def test_the_actor_objective_replaces_only_agent_is_own_action():
    q = critics(3)["concat"]
    o, a, a_own = torch.randn(4, 3, 6), torch.rand(4, 3, 5), torch.rand(4, 3, 5)
    values = own_action_values(q, o, a, a_own)
    for i in range(3):
        mixed = a.clone()
        mixed[:, i] = a_own[:, i]
        torch.testing.assert_close(values[:, i], q(o, mixed)[:, i])


def test_a_short_run_learns_and_is_reproducible():
    """Smoke run on continuous simple_spread N = 2 (about 10 CPU seconds): the critic's loss falls and the
    deterministic policy mu beats random actions on mpe2 by a clear margin."""
    config = MADDPGConfig("simple_spread", {"N": 2, "continuous_actions": True}, num_envs=32, total_steps=32 * 800,
                          learning_starts=640, minibatch_size=128, actor="flat", d_x=16, d_q=8, d_out=8,
                          critic_hidden=32, actor_hidden=32, buffer_size=20_000, noise_final=0.1)
    history = []
    agent = train(config, lambda stats, agent: history.append(stats))
    losses = [s["critic_loss"] for s in history if np.isfinite(s["critic_loss"])]
    assert np.mean(losses[-50:]) < 0.5 * np.mean(losses[:20])
    kwargs = {"N": 2, "continuous_actions": True}
    ours, _ = evaluate(agent_policy(agent, config), "simple_spread", episodes=20, **kwargs)
    baseline, _ = evaluate(random_policy("simple_spread", **kwargs), "simple_spread", episodes=20, **kwargs)
    assert ours > baseline + 3.0  # -14.7 against -20.0 when measured
    tiny = [p.clone() for p in train(TINY).parameters()]
    assert all(torch.equal(x, y) for x, y in zip(tiny, train(TINY).parameters()))


def test_truncated_episodes_store_their_last_observation_as_o_next(monkeypatch):
    from attnmarl.algos import maddpg

    stored = []
    config = replace(TINY, total_steps=16 * 25, learning_starts=16 * 25)
    maddpg.estimate(config)  # measured first (on a buffer of its own), so that only the run's transitions are recorded
    original = maddpg.ReplayBuffer.add
    monkeypatch.setattr(maddpg.ReplayBuffer, "add", lambda self, *args: (stored.append(args), original(self, *args)))
    train(config)
    env = make_batched("simple_spread", 16, seed=0, **CONTINUOUS)
    o = env.reset()
    for t, (o_buf, a, _, o_next, terminated) in enumerate(stored):
        np.testing.assert_array_equal(o_buf.numpy(), o)
        o, _, _, truncated, info = env.step(a.numpy())
        assert truncated.all() == (t == 24)
        np.testing.assert_array_equal(o_next.numpy(), info["final_obs"])  # not the reset observation
        assert not terminated.any()


def test_a_checkpoint_round_trips_plays_on_mpe2_and_refuses_another_architecture(tmp_path):
    agent = train(TINY)
    path = tmp_path / "tiny.pt"
    save_checkpoint(path, agent, TINY, note="test")
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == "attnmarl.maddpg/1" and raw["metadata"] == {"note": "test"}
    assert not any(key.startswith("target") for key in raw["state_dict"])
    loaded, config = load_agent(path, TINY)
    assert config == TINY
    o, a = torch.randn(5, 3, 18), torch.rand(5, 3, 5)
    torch.testing.assert_close(loaded.q_hat(o, a), agent.q_hat(o, a))
    policy = load_policy(path)
    obs = {f"agent_{i}": o[0, i].numpy() for i in range(3)}
    actions = policy(obs)
    expected = agent.mu(o[:1])[0].detach().numpy()
    for i in range(3):
        np.testing.assert_allclose(actions[f"agent_{i}"], expected[i], rtol=1e-6)
    assert evaluate(policy, "simple_spread", episodes=2, **CONTINUOUS) == evaluate(
        agent_policy(agent, TINY), "simple_spread", episodes=2, **CONTINUOUS)
    with pytest.raises(ValueError, match="critic: checkpoint 'attention', requested 'concat'"):
        load_agent(path, replace(TINY, critic="concat"))
    with pytest.raises(ValueError, match="d_x: checkpoint 16, requested 32"):
        load_agent(path, replace(TINY, d_x=32))
    with pytest.raises(ValueError, match="holds a MADDPGConfig agent, not the MAPPOConfig one"):
        load_agent(path, MAPPOConfig())
    load_agent(path, replace(TINY, seed=4, lr_actor=0.1))  # training settings may differ


def test_the_cli_trains_maddpg_and_writes_its_files(tmp_path, capsys):
    # 10,048 env steps: the first whole iteration of 64 at or after learning_starts = 10,000, so one update
    main(["--config", "q-spread3-attention", "--steps", "10048", "--out", str(tmp_path), "--evals", "1",
          "--eval-episodes", "2", "--final-episodes", "3"])
    summary = json.loads((tmp_path / "q-spread3-attention-seed0.json").read_text())
    assert summary["critic"] == "attention" and summary["env_steps"] == 10048 and summary["final_episodes"] == 3
    config, _, metadata = load_checkpoint(tmp_path / "q-spread3-attention-seed0.pt")
    assert isinstance(config, MADDPGConfig) and metadata["run_id"] == summary["run_id"]
    assert "mpe2 return over 3 episodes" in capsys.readouterr().out


@pytest.mark.parametrize("change,named", [
    ({"critic": "mlp"}, "critic must be one of"),
    ({"actor": "attention"}, "actor must be one of"),
    ({"scenario_kwargs": {"N": 3}}, "MADDPG needs continuous actions"),
    ({"tau": 0.0}, r"tau must be a finite number in \(0, 1\]"),
    ({"noise_std": -0.1}, "noise_std must be a finite number"),
    ({"minibatch_size": 0}, "minibatch_size must be a positive integer"),
    ({"learning_starts": -1}, "learning_starts must be a non-negative integer"),
    ({"buffer_size": 8}, "cannot hold one iteration"),
    ({"total_steps": 8}, "less than one iteration"),
])
def test_nonsense_maddpg_configs_are_refused(change, named):
    with pytest.raises(ValueError, match=named):
        replace(TINY, **change)


def test_q_critics_refuse_actions_of_the_wrong_shape_or_values():
    q = critics(3)["attention"]
    o = torch.randn(2, 3, 6)
    with pytest.raises(ValueError, match=r"actions must have shape \(batch, m, action_dim\) = \(2, 3, 5\)"):
        q(o, torch.rand(2, 3, 2))
    with pytest.raises(ValueError, match="actions holds 1 NaN"):
        q(o, torch.rand(2, 3, 5).index_put_((torch.tensor(0), torch.tensor(1), torch.tensor(2)), torch.tensor(np.nan)))
    with pytest.raises(ValueError, match="actions must be a floating-point"):
        q(o, torch.ones(2, 3, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="observations must have shape"):
        q(torch.randn(2, 4, 6), torch.rand(2, 4, 5))


def test_every_q_network_config_ships_its_seeds_and_its_pair_differs_only_in_the_critic():
    """Three seeds a config, ten where the ten-seed plan (attnmarl.notebook.explorers.synthesis.seed_plan) has
    finished it."""
    from attnmarl.checkpoints import shipped_table
    from attnmarl.notebook.explorers.qnet import qnet_curve, qnet_runs, tag_versus
    from attnmarl.notebook.explorers.synthesis import seed_plan
    from attnmarl.train import CONFIGS

    runs = qnet_runs()
    names = sorted(name for name in CONFIGS if name.startswith("q-"))
    ten = {row["config"] for row in seed_plan() if not row["to_train"]}
    assert {"q-spread3-attention", "q-spread3-concat"} <= ten
    assert sorted((r["name"], r["seed"]) for r in runs) == [(name, seed) for name in names
                                                            for seed in range(10 if name in ten else 3)]
    for r in runs:
        curve = qnet_curve(r["name"], r["seed"])
        assert r["config"]["total_steps"] == CONFIGS[r["name"]].total_steps
        assert curve["env_steps"][-1] == r["env_steps"] and curve["eval_episodes"][-1] == 200
    for name in names:
        if name.endswith("-attention"):
            partner = {**vars(CONFIGS[name]), "critic": "concat"}
            assert partner == vars(CONFIGS[name.replace("-attention", "-concat")])
    versus = tag_versus()
    assert sorted((r["run"], r["seed"]) for r in versus["runs"]) == sorted(
        (r["name"], r["seed"]) for r in runs if r["scenario"] == "simple_tag")
    assert versus["episodes"] == 200 and set(versus["references"]) == {"chase script", "random"}
    with pytest.raises(ValueError, match=r"no shipped table 'nope.json' in 'qnet'; shipped tables: \['tag-versus"):
        shipped_table("qnet", "nope.json")


def test_config_differences_lists_exactly_the_changed_fields_and_breaks_lines_only_between_them():
    """What chapters 7-9 print to show that two compared runs differ only where the text says."""
    from attnmarl.train import CONFIGS, config_differences

    assert config_differences("q-spread3-concat", "q-spread3-attention") == \
        "q-spread3-concat vs q-spread3-attention: critic = 'concat'"
    assert config_differences("q-spread3-concat", "q-spread3-concat").endswith(": no difference")
    text = config_differences("q-tag-attention", "q-spread3-attention", width=40)
    fields = [field.strip() for line in text.splitlines()[1:] for field in line.split(";") if field.strip()]
    tag, spread = vars(CONFIGS["q-tag-attention"]), vars(CONFIGS["q-spread3-attention"])
    assert [field.split(" = ")[0] for field in fields] == [k for k in tag if tag[k] != spread[k]]
    assert "scenario = 'simple_tag'" in fields and "scenario_kwargs = {'continuous_actions': True}" in fields
    with pytest.raises(ValueError, match="configs of two algorithms share no fields"):
        config_differences("q-spread3-concat", "spread3-concat")
