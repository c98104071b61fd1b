"""Value decomposition (attnmarl.algos.qmix, attnmarl.nets.mixers): VDN is the sum, Qatten is
its formula computed by hand, QMIX and Qatten are monotonic in every Q^i, which mixers are
permutation-invariant, the double-Q TD target on a hand-made batch, the team reward, the epsilon
schedule, tiny runs, a smoke run of every named config through the CLI whose checkpoint plays on
mpe2, and bad input refused."""
import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from attnmarl import load_policy
from attnmarl.algos.qmix import (
    QMIXConfig,
    chosen_values,
    double_q_values,
    epsilon_at,
    make_agent,
    td_target,
    team_reward,
    train,
)
from attnmarl.checkpoints import agent_policy, load_agent, load_checkpoint, save_checkpoint
from attnmarl.envs import evaluate, make_batched
from attnmarl.nets.mixers import MIXERS, QMIX, VDN, Qatten
from attnmarl.train import CONFIGS, main

M, OBS_DIM = 3, 18
"""simple_spread with N = 3: 6 N numbers per observation."""
TINY = QMIXConfig(scenario_kwargs={"N": M}, num_envs=8, total_steps=8 * 40, learning_starts=160,
                  minibatch_size=32, buffer_size=1000, entity_d=16, entity_ff=16, qmix_embed=8,
                  hyper_hidden=16, qatten_heads=2, qatten_d=8, qatten_d_u=8)


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: conftest.py


def observations(batch: int = 5, N: int = M, seed: int = 0) -> torch.Tensor:
    """Real simple_spread observations (batch, N, 6 N), from the batched port after a few random
    steps (so that velocities are not all zero)."""
    env = make_batched("simple_spread", batch, seed=seed, N=N)
    env.reset()
    rng = np.random.default_rng(seed)
    for _ in range(3):
        o = env.step(rng.integers(5, size=(batch, N)))[0]
    return torch.from_numpy(o)


def values(batch: int = 5, m: int = M, seed: int = 1) -> torch.Tensor:
    return torch.randn(batch, m, generator=torch.Generator().manual_seed(seed)) * 3


def mixers(m: int = M, obs_dim: int = OBS_DIM) -> dict[str, torch.nn.Module]:
    """Every mixer, with random weights (PyTorch's initialisation plus noise), so that no
    property holds only because of how the weights start."""
    torch.manual_seed(0)
    built = {"vdn": VDN(m, obs_dim), "qmix": QMIX(m, obs_dim, embed=8, hyper_hidden=16),
             "qatten": Qatten("simple_spread", {"N": m}, m, obs_dim, heads=3, d=8, d_u=8,
                              hidden=16)}
    with torch.no_grad():
        for mixer in built.values():
            for w in mixer.parameters():
                w.add_(torch.randn_like(w) * 0.5)
    return built


def test_vdn_is_the_sum_of_the_agents_values():
    Q = values()
    torch.testing.assert_close(mixers()["vdn"](Q, observations()), Q.sum(-1), rtol=0, atol=0)


def test_qatten_agrees_with_its_formula_computed_by_hand():
    """Q_tot = c(s) + sum_h w_h(s) sum_i lambda^{i,h} Q^i, lambda^{i,h} = exp(e^{i,h}) / sum_j
    exp(e^{j,h}) with e^{i,h} = <q_h(s), k_h(u^i)> / sqrt(d): every sum written out, one agent,
    one head and one batch row at a time, in float64."""
    mixer = mixers()["qatten"].double().requires_grad_(False)
    o, Q = observations().double(), values().double()
    Q_tot, lambda_ = mixer.outputs(Q, o)
    u = mixer.phi(o)  # (batch, m, d_u): u^i = phi(o^i)
    H, d = mixer.heads, mixer.d
    W_q, W_k = mixer.W_q.weight.view(H, d, -1), mixer.W_k.weight.view(H, d, -1)
    for b in range(o.shape[0]):
        s = sum(u[b, i] for i in range(M)) / M
        hidden = torch.relu(mixer.W_s.weight @ s + mixer.W_s.bias)
        w = mixer.w_h[2].weight @ torch.relu(mixer.w_h[0].weight @ s + mixer.w_h[0].bias) \
            + mixer.w_h[2].bias
        c = mixer.c[2].weight @ torch.relu(mixer.c[0].weight @ s + mixer.c[0].bias) \
            + mixer.c[2].bias
        expected = float(c[0])
        for h in range(H):
            q_h = W_q[h] @ hidden
            e = [float(q_h @ (W_k[h] @ u[b, i])) / math.sqrt(d) for i in range(M)]
            lambdas = [math.exp(e_i) / sum(math.exp(e_j) for e_j in e) for e_i in e]
            for i in range(M):
                assert abs(lambda_[b, h, i].item() - lambdas[i]) < 1e-6
            expected += abs(float(w[h])) * sum(lambdas[i] * float(Q[b, i]) for i in range(M))
        assert abs(Q_tot[b].item() - expected) < 1e-6


def test_qatten_lambda_is_a_distribution_over_the_agents_for_every_head():
    _, lambda_ = mixers()["qatten"].outputs(values(), observations())
    assert lambda_.shape == (5, 3, M)
    assert (lambda_ >= 0).all()
    torch.testing.assert_close(lambda_.sum(-1), torch.ones(5, 3))
    assert lambda_.std(-1).amin() > 1e-3  # random weights: not the uniform weights of VDN


def test_qattens_control_weighs_every_agent_1_over_m_and_keeps_qattens_other_weights():
    """Qatten(uniform=True), chapter 11's exercise 3: drawn from the same seed as Qatten, every weight
    equal but W_k, which is zero and not trained; lambda = 1/m exactly for any state; Q_tot = c(s) +
    (1/m) sum_h |w_h(s)| sum_i Q^i; and after a tiny run W_k is still zero while the rest moved."""
    torch.manual_seed(3)
    plain = Qatten("simple_spread", {"N": M}, M, OBS_DIM, heads=3, d=8, d_u=8, hidden=16)
    torch.manual_seed(3)
    control = Qatten("simple_spread", {"N": M}, M, OBS_DIM, heads=3, d=8, d_u=8, hidden=16,
                     uniform=True)
    for (name, x), y in zip(plain.named_parameters(), control.parameters()):
        assert torch.equal(x, y) == (name != "W_k.weight"), name
    assert not control.W_k.weight.any() and not control.W_k.weight.requires_grad
    o, Q = observations(), values()
    Q_tot, lambda_ = control.outputs(Q, o)
    assert torch.equal(lambda_, torch.full_like(lambda_, 1 / M))
    s = control.phi(o).mean(1)
    expected = control.c(s).squeeze(-1) + control.w_h(s).abs().sum(-1) / M * Q.sum(-1)
    torch.testing.assert_close(Q_tot, expected)
    config = replace(TINY, qatten_uniform=True)
    trained, still = train(config), train(replace(config, lr=1e-12))
    assert not trained.mixer.W_k.weight.any()
    moved = [not torch.allclose(x, y) for (name, x), y in
             zip(trained.mixer.named_parameters(), still.mixer.parameters()) if name != "W_k.weight"]
    assert any(moved)
    with pytest.raises(ValueError, match="uniform must be True or False"):
        Qatten("simple_spread", {"N": M}, M, OBS_DIM, uniform="yes")


@pytest.mark.parametrize("name", ["vdn", "qmix", "qatten"])
def test_every_mixer_is_monotonic_in_every_agents_value(name):
    """dQ_tot / dQ^i >= 0 by autograd, on 200 random value vectors and real observations: the
    greedy joint action is every agent's own argmax. VDN's derivative is exactly 1."""
    mixer = mixers()[name]
    o = observations(batch=40).repeat(5, 1, 1)
    Q = (values(batch=200) * 5).requires_grad_(True)
    gradient, = torch.autograd.grad(mixer(Q, o).sum(), Q)
    assert (gradient >= 0).all()
    if name == "vdn":
        assert (gradient == 1).all()
    else:
        assert gradient.amax() > 1e-3


def test_without_the_absolute_value_qmix_would_not_be_monotonic():
    """The control: the same QMIX with its hypernetworks' |.| replaced by the identity has
    negative derivatives somewhere, so the test above checks something that |.| provides."""
    mixer = mixers()["qmix"]
    o = observations(batch=40).repeat(5, 1, 1)
    Q = (values(batch=200) * 5).requires_grad_(True)
    s = mixer.state(o)
    W_1 = mixer.hyper_W1(s).view(-1, M, mixer.embed)
    h = torch.nn.functional.elu(torch.einsum("bi,bie->be", Q, W_1) + mixer.hyper_b1(s))
    Q_tot = (h * mixer.hyper_W2(s)).sum(-1) + mixer.V(s).squeeze(-1)
    gradient, = torch.autograd.grad(Q_tot.sum(), Q)
    assert (gradient < 0).any()


@pytest.mark.parametrize("name,invariant", [("vdn", True), ("qatten", True), ("qmix", False)])
def test_permuting_the_agents_leaves_q_tot_unchanged_with_vdn_and_qatten(name, invariant):
    """Agents given other places, their Q^i and o^i moved together: a set for VDN's sum and
    Qatten's attention (whose lambda moves with them), places in QMIX's concatenated state and
    its rows of W_1, so QMIX's Q_tot changes."""
    mixer = mixers()[name]
    o, Q = observations(), values()
    for order in ([1, 2, 0], [0, 2, 1]):
        if invariant:
            torch.testing.assert_close(mixer(Q[:, order], o[:, order]), mixer(Q, o))
        else:
            assert (mixer(Q[:, order], o[:, order]) - mixer(Q, o)).abs().amax() > 1e-3
    if name == "qatten":
        _, lambda_ = mixer.outputs(Q, o)
        _, lambda_swapped = mixer.outputs(Q[:, [1, 2, 0]], o[:, [1, 2, 0]])
        torch.testing.assert_close(lambda_swapped, lambda_[..., [1, 2, 0]])


def test_a_qatten_mixer_runs_at_any_m_with_the_same_weights_and_qmix_does_not():
    small = mixers()["qatten"]
    large = Qatten("simple_spread", {"N": 6}, 6, 36, heads=3, d=8, d_u=8, hidden=16)
    large.load_state_dict(small.state_dict())
    Q_tot, lambda_ = large.outputs(values(m=6), observations(N=6))
    assert Q_tot.shape == (5,) and lambda_.shape == (5, 3, 6)
    with pytest.raises(RuntimeError, match="size mismatch"):
        QMIX(6, 36, embed=8, hyper_hidden=16).load_state_dict(mixers()["qmix"].state_dict())


def test_the_double_q_target_on_a_hand_made_batch():
    """Two transitions, two agents, three actions. The online network picks a* (here not the
    target network's own argmax), the target network values it, VDN sums, and a terminated
    transition keeps its reward only."""
    Q_online = torch.tensor([[[1.0, 5.0, 2.0], [0.0, 0.0, 3.0]],
                             [[9.0, 1.0, 0.0], [2.0, 8.0, 1.0]]])
    Q_target = torch.tensor([[[7.0, 1.5, 9.0], [4.0, 6.0, -2.0]],
                             [[0.5, 9.0, 9.0], [1.0, -1.0, 7.0]]])
    Q_next = double_q_values(Q_online, Q_target)
    torch.testing.assert_close(Q_next, torch.tensor([[1.5, -2.0], [0.5, -1.0]]))
    r = torch.tensor([[-1.0, -3.0], [-0.5, -0.5]])
    y = td_target(team_reward(r), torch.tensor([False, True]), VDN(2, 4)(Q_next), gamma=0.9)
    torch.testing.assert_close(y, torch.tensor([-2.0 + 0.9 * (1.5 - 2.0), -0.5]))
    max_q = td_target(team_reward(r), torch.tensor([False, True]),
                      Q_target.amax(-1).sum(-1), gamma=0.9)
    assert y[0] < max_q[0]  # plain max Q would take 9 + 6: double Q's estimate is lower


def test_chosen_values_pick_each_agents_action():
    Q = torch.arange(12.0).view(1, 2, 6)[..., :5]
    torch.testing.assert_close(chosen_values(Q, torch.tensor([[4, 0]])),
                               torch.tensor([[4.0, 6.0]]))
    with pytest.raises(ValueError, match="action"):
        chosen_values(Q, torch.tensor([[5, 0]]))


def test_the_team_reward_is_the_mean_of_mpe2s_rewards():
    """simple_spread's team reward (1/m) sum_i r^i = (1 - rho) G - rho (2/m) #touching pairs."""
    env = make_batched("simple_spread", 64, seed=3, N=4)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(10):
        r = env.step(rng.integers(5, size=(64, 4)))[1]
    p, landmarks = env.agent_pos, env.landmark_pos
    G = -np.linalg.norm(p[:, :, None] - landmarks[:, None], axis=-1).min(1).sum(1)
    gap = np.linalg.norm(p[:, :, None] - p[:, None], axis=-1)
    pairs = np.triu(gap < 2 * env.params.agent_size[0], k=1).sum((1, 2))
    expected = 0.5 * G - 0.5 * 2 * pairs / 4
    np.testing.assert_allclose(team_reward(torch.from_numpy(r)).numpy(), expected, atol=1e-6)


def test_epsilon_falls_linearly_then_stays_and_acting_follows_it():
    config = replace(TINY, epsilon_start=1.0, epsilon_final=0.1, epsilon_fraction=0.5)
    assert epsilon_at(config, 0) == 1.0
    assert epsilon_at(config, config.total_steps // 4) == pytest.approx(0.55)
    assert epsilon_at(config, config.total_steps // 2) == pytest.approx(0.1)
    assert epsilon_at(config, config.total_steps) == pytest.approx(0.1)
    agent = make_agent(TINY)
    o = observations(batch=400)
    greedy, Q = agent.act(o)
    torch.testing.assert_close(greedy, Q.argmax(-1))
    generator = torch.Generator().manual_seed(0)
    assert torch.equal(agent.act(o, generator, deterministic=False, epsilon=0.0)[0], greedy)
    explored = agent.act(o, generator, deterministic=False, epsilon=1.0)[0]
    counts = torch.bincount(explored.flatten(), minlength=5)
    assert counts.min() > 150  # 1,200 uniform draws over 5 actions


@pytest.mark.parametrize("mixer", list(MIXERS))
def test_a_tiny_run_is_reproducible_and_trains_the_agent_network_and_the_mixer(mixer):
    config = replace(TINY, mixer=mixer)
    history = []
    agent = train(config, lambda stats, agent: history.append(stats))
    assert len(history) == config.num_updates and history[-1]["env_steps"] == config.total_steps
    assert math.isfinite(history[-1]["td_loss"]) and history[-1]["epsilon"] < 1.0
    again = train(config)
    assert all(torch.equal(x, y) for x, y in zip(agent.parameters(), again.parameters()))
    still = train(replace(config, lr=1e-12))
    parts = ("q_net", "mixer") if mixer != "vdn" else ("q_net",)
    for part in parts:
        moved = [not torch.allclose(x, y) for x, y in zip(getattr(agent, part).parameters(),
                                                          getattr(still, part).parameters())]
        assert any(moved), part


def test_a_checkpoint_plays_greedily_on_mpe2_at_its_m_and_another(tmp_path):
    agent = train(TINY)
    path = tmp_path / "tiny.pt"
    save_checkpoint(path, agent, TINY, note="test")
    assert torch.load(path, weights_only=True)["format"] == "attnmarl.qmix/1"
    loaded, config = load_agent(path, TINY)
    o = observations()
    torch.testing.assert_close(loaded.Q_tot(o, o.new_zeros(5, M, dtype=torch.long)),
                               agent.Q_tot(o, o.new_zeros(5, M, dtype=torch.long)))
    policy = load_policy(path)
    actions = policy({f"agent_{i}": o[0, i].numpy() for i in range(M)})
    greedy = agent.q_values(o[:1])[0].argmax(-1).tolist()
    assert [int(actions[f"agent_{i}"]) for i in range(M)] == greedy
    assert evaluate(policy, "simple_spread", episodes=2, N=M) == evaluate(
        agent_policy(agent, TINY), "simple_spread", episodes=2, N=M)
    six = load_policy(path, N=6)  # the entity agent network at another m
    assert math.isfinite(evaluate(six, "simple_spread", episodes=1, N=6)[0])
    with pytest.raises(ValueError, match="mixer: checkpoint 'qatten', requested 'vdn'"):
        load_agent(path, replace(TINY, mixer="vdn"))
    flat = replace(TINY, agent_net="flat", mixer="vdn")
    save_checkpoint(tmp_path / "flat.pt", train(flat), flat)
    with pytest.raises(ValueError, match="only the entity network runs at any m"):
        load_policy(tmp_path / "flat.pt", N=4)


@pytest.mark.parametrize("name", [f"qmix-spread{m}-{mixer}" for m in (3, 6, 12)
                                  for mixer in ("vdn", "qmix", "qatten")]
                         + ["qmix-spread3-qatten-uniform"])
def test_every_named_config_trains_through_the_cli_and_its_checkpoint_plays(name, tmp_path):
    # 5,120 env steps: 320 iterations of 16, the last 8 after learning_starts = 5,000 update
    main(["--config", name, "--steps", "5120", "--out", str(tmp_path), "--evals", "1",
          "--eval-episodes", "1", "--final-episodes", "2"])
    summary = json.loads((tmp_path / f"{name}-seed0.json").read_text())
    m = CONFIGS[name].scenario_kwargs["N"]
    assert summary["critic"] == CONFIGS[name].critic and summary["actor"] == "entity"
    assert summary["env_steps"] == 5120 and len(summary["final_per_agent"]) == m
    config, _, metadata = load_checkpoint(tmp_path / f"{name}-seed0.pt")
    assert isinstance(config, QMIXConfig) and metadata["run_id"] == summary["run_id"]
    score, _ = evaluate(load_policy(tmp_path / f"{name}-seed0.pt"), "simple_spread", episodes=2,
                        N=m)
    assert score == pytest.approx(summary["final_return"], abs=1e-3)  # the same seeds 0 and 1
    assert (tmp_path / f"{name}-seed0.csv").read_text().startswith("env_steps,")


def test_the_named_configs_of_one_m_differ_only_in_the_mixer():
    for m in (3, 6, 12):
        vdn = CONFIGS[f"qmix-spread{m}-vdn"]
        assert vdn.scenario == "simple_spread" and vdn.scenario_kwargs == {"N": m}
        for mixer in ("qmix", "qatten"):
            assert replace(vdn, mixer=mixer) == CONFIGS[f"qmix-spread{m}-{mixer}"]
    assert CONFIGS["qmix-spread3-qatten-uniform"] == replace(CONFIGS["qmix-spread3-qatten"],
                                                             qatten_uniform=True)


@pytest.mark.parametrize("change,named", [
    ({"mixer": "qplex"}, "mixer must be one of"),
    ({"agent_net": "rnn"}, "agent_net must be one of"),
    ({"scenario_kwargs": {"N": 3, "continuous_actions": True}}, "discrete actions"),
    ({"epsilon_final": 0.5, "epsilon_start": 0.1}, "must not exceed epsilon_start"),
    ({"epsilon_fraction": 0.0}, "epsilon_fraction must be a finite number"),
    ({"gamma": 1.5}, r"gamma must be a finite number in \[0, 1\]"),
    ({"tau": 0.0}, r"tau must be a finite number in \(0, 1\]"),
    ({"entity_heads": 3}, "must be a multiple of entity_heads"),
    ({"eval_deterministic": "no"}, "eval_deterministic must be True or False"),
    ({"qatten_uniform": 1}, "qatten_uniform must be True or False"),
    ({"mixer": "vdn", "qatten_uniform": True}, "qatten_uniform fixes Qatten's lambda"),
    ({"learning_starts": 10_000}, "ends before learning_starts"),
    ({"minibatch_size": 0}, "minibatch_size must be a positive integer"),
])
def test_nonsense_qmix_configs_are_refused(change, named):
    with pytest.raises(ValueError, match=named):
        replace(TINY, **change)


@pytest.mark.parametrize("name", ["vdn", "qmix", "qatten"])
def test_bad_values_and_observations_are_refused_by_every_mixer(name):
    mixer, o, Q = mixers()[name], observations(), values()
    with pytest.raises(ValueError, match=r"Q must have shape \(batch, m\) = \(batch, 3\)"):
        mixer(Q[:, :2], o)
    with pytest.raises(ValueError, match=r"Q must have shape"):
        mixer(Q.unsqueeze(-1), o)
    bad = Q.clone()
    bad[2, 1] = torch.nan
    with pytest.raises(ValueError, match="Q holds 1 NaN"):
        mixer(bad, o)
    with pytest.raises(ValueError, match="floating-point"):
        mixer(Q.long(), o)
    with pytest.raises(ValueError, match="observations must have shape"):
        mixer(Q, o[:, :, :-1])
    with pytest.raises(ValueError, match="one batch"):
        mixer(Q, o[:4])


def test_bad_targets_are_refused():
    with pytest.raises(ValueError, match="one shape"):
        double_q_values(torch.zeros(2, 3, 5), torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="terminated must have the shape of Q_tot_next"):
        td_target(torch.zeros(2), torch.zeros(3, dtype=torch.bool), torch.zeros(2), 0.9)
    with pytest.raises(ValueError, match="gamma"):
        td_target(torch.zeros(2), torch.zeros(2, dtype=torch.bool), torch.zeros(2), 1.5)
    with pytest.raises(ValueError, match="compile_nets=False"):
        train(TINY, compile_nets=True)


@pytest.mark.parametrize("mixer", list(MIXERS))
def test_the_credit_along_an_episode_is_the_mixer_on_the_greedy_agents_values(mixer):
    """credit_episode: every step's Q^i of the greedy action, the mixer's Q_tot of them and, for
    Qatten, lambda (T + 1, heads, m), each head's distribution over the agents."""
    from attnmarl.notebook.explorers.mix import credit_episode

    config = replace(TINY, mixer=mixer)
    agent = make_agent(config)
    credit = credit_episode(agent, config, seed=4)
    T = credit.episode.steps
    o = torch.from_numpy(credit.episode.obs)
    with torch.no_grad():
        Q = agent.q_values(o).amax(-1)
        torch.testing.assert_close(torch.from_numpy(credit.Q), Q)
        torch.testing.assert_close(torch.from_numpy(credit.Q_tot), agent.mixer(Q, o))
    assert credit.Q.shape == (T + 1, M) and credit.Q_tot.shape == (T + 1,)
    if mixer == "qatten":
        assert credit.lambda_.shape == (T + 1, config.qatten_heads, M)
        np.testing.assert_allclose(credit.lambda_.sum(-1), 1.0, rtol=1e-5)
    else:
        assert credit.lambda_ is None
