"""TarMAC-style messages (chapter 11): hand computations, the controls, permutations over agents, decentralization.

- one round of targeted messages is q, k, v, a softmax over senders and a weighted sum, written out here;
- ``messages="mean"`` gives exactly uniform alpha, ``"none"`` no message at all;
- renumbering the agents renumbers alpha over senders and receivers and changes no agent's action distribution;
- agent i's message comes from its own observation only: without messages, agent i's output does not depend
  on o^j; with them it does;
- bad input raises ``ValueError``.
"""
from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pytest
import torch

from attnmarl.algos.mappo import MAPPOConfig, make_agent
from attnmarl.checkpoints import load_agent, load_agent_at, load_checkpoint, load_policy
from attnmarl.envs import evaluate, make_batched
from attnmarl.envs.sight import NARROW_SIGHT_RHO, SIGHT_RHO
from attnmarl.nets.messages import MESSAGES, CommActor, TargetedMessages
from attnmarl.train import CONFIGS, SIGHT_MS, _actor_variant, run

pytestmark = pytest.mark.usefixtures("one_thread")


def test_one_round_of_messages_is_the_hand_computation():
    torch.manual_seed(0)
    talk = TargetedMessages(d=6, d_k=4)
    h = torch.randn(2, 5, 6)
    c, alpha = talk(h)
    W_q, W_k, W_v = (W.detach() for W in (talk.W_q.weight, talk.W_k.weight, talk.W_v.weight))
    for b in range(2):
        for i in range(5):
            q_i = W_q @ h[b, i]
            scores = [float(q_i @ (W_k @ h[b, j])) / math.sqrt(4) for j in range(5)]  # every sender, i included
            weights = [math.exp(s - max(scores)) for s in scores]
            alpha_i = [w / sum(weights) for w in weights]
            c_i = sum(a * (W_v @ h[b, j]) for j, a in enumerate(alpha_i))
            torch.testing.assert_close(alpha[b, i], torch.tensor(alpha_i), atol=1e-6, rtol=0)
            torch.testing.assert_close(c[b, i], c_i, atol=1e-6, rtol=0)


def test_mean_messages_are_exactly_uniform_and_none_sends_nothing():
    torch.manual_seed(0)
    h = torch.randn(3, 4, 6)
    mean = TargetedMessages(6, 4, messages="mean")
    c, alpha = mean(h)
    assert torch.all(alpha == 0.25)
    torch.testing.assert_close(c, mean.W_v(h).mean(1, keepdim=True).expand(3, 4, 6), atol=1e-6, rtol=0)
    c, alpha = TargetedMessages(6, 4, messages="none")(h)
    assert torch.all(c == 0) and torch.all(alpha == 0)


def comm_actor(N: int, messages: str = "attention", rounds: int = 1, rho: float | None = SIGHT_RHO) -> CommActor:
    torch.manual_seed(0)
    return CommActor("simple_spread", {"N": N}, N, 6 * N, 5, rho, messages=messages, rounds=rounds).double()


def world_obs(N: int, order: list[int] | None = None, batch: int = 6) -> torch.Tensor:
    """Observations (batch, N, 6N) of random simple_spread worlds, their agents renumbered by ``order``
    (agent k of the result is agent ``order[k]`` of the original world)."""
    port = make_batched("simple_spread", batch, seed=3, N=N)
    port.agent_vel[:] = np.random.default_rng(0).normal(size=port.agent_vel.shape)
    if order is not None:
        port.agent_pos[:] = port.agent_pos[:, order]
        port.agent_vel[:] = port.agent_vel[:, order]
    return torch.from_numpy(port.observe()).double()


@pytest.mark.parametrize(("messages", "rounds"), [("attention", 1), ("attention", 2), ("mean", 1)])
def test_renumbering_the_agents_renumbers_alpha_and_changes_no_action_distribution(messages, rounds):
    actor, order = comm_actor(4, messages, rounds), [2, 0, 3, 1]
    y, alpha = actor.outputs_and_alpha(world_obs(4))
    y_perm, alpha_perm = actor.outputs_and_alpha(world_obs(4, order))
    torch.testing.assert_close(torch.softmax(y_perm, -1), torch.softmax(y[:, order], -1), atol=1e-10, rtol=0)
    torch.testing.assert_close(alpha_perm, alpha[:, :, order][:, :, :, order], atol=1e-10, rtol=0)
    assert alpha.shape == (6, rounds, 4, 4)


def test_each_message_comes_from_its_senders_own_observation():
    o = world_obs(3)
    changed = o.clone()
    changed[:, 2, :4] += 0.5  # agent 2's own velocity and position in its own observation only
    for messages, reaches in (("none", False), ("attention", True), ("mean", True)):
        actor = comm_actor(3, messages, rho=None)
        h, h_changed = actor.encodings(o), actor.encodings(changed)
        torch.testing.assert_close(h_changed[:, :2], h[:, :2], atol=0, rtol=0)  # encoders read o^i alone
        y, y_changed = actor(o), actor(changed)
        assert torch.equal(y_changed[:, :2], y[:, :2]) is not reaches, messages


def test_the_comm_actor_runs_at_any_m_with_the_same_weights():
    small, large = comm_actor(3), comm_actor(6)
    large.load_state_dict(small.state_dict())
    y, alpha = large.outputs_and_alpha(world_obs(6))
    assert y.shape == (6, 6, 5) and alpha.shape == (6, 1, 6, 6)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(6, 1, 6, dtype=torch.float64), atol=1e-12, rtol=0)


def test_the_config_builds_the_comm_actor_with_its_messages_and_rounds():
    for messages in MESSAGES:
        config = MAPPOConfig("simple_spread", {"N": 3}, actor="comm", messages=messages, message_rounds=2,
                             sight_radius=SIGHT_RHO)
        actor = make_agent(config).actor
        assert type(actor) is CommActor and actor.messages == messages and actor.rounds == 2
        assert actor.rho == SIGHT_RHO


def test_bad_messages_are_refused():
    with pytest.raises(ValueError, match="messages must be one of"):
        MAPPOConfig("simple_spread", {"N": 3}, actor="comm", messages="broadcast")
    with pytest.raises(ValueError, match="messages must be one of"):
        TargetedMessages(8, messages="max")
    with pytest.raises(ValueError, match="the 'comm' actor's"):
        MAPPOConfig("simple_spread", {"N": 3}, actor="entity", messages="attention")
    with pytest.raises(ValueError, match="the 'comm' actor's"):
        MAPPOConfig("simple_spread", {"N": 3}, actor="flat", message_rounds=2)
    with pytest.raises(ValueError, match="message_rounds must be"):
        MAPPOConfig("simple_spread", {"N": 3}, actor="comm", message_rounds=0)
    with pytest.raises(ValueError, match="limited sight is defined for"):
        MAPPOConfig("simple_tag", {}, actor="comm")
    with pytest.raises(ValueError, match="entity_frame of the 'comm' actor"):
        MAPPOConfig("simple_spread", {"N": 3}, actor="comm", entity_frame="absolute")
    with pytest.raises(ValueError, match="h must be a tensor"):
        TargetedMessages(8)(torch.zeros(2, 3, 7))


def test_chapter_11_configs_differ_from_their_baselines_where_their_names_say():
    for m in SIGHT_MS:
        for actor in ("flat", "entity"):
            full_sight = CONFIGS[f"pi-spread6-{actor}" if m == 6 else f"scale-spread{m}-{actor}"]
            assert differences(f"sight-spread{m}-{actor}", full_sight) == {"sight_radius": SIGHT_RHO}
        for messages in MESSAGES:
            said = {"actor": "comm"} | ({"messages": messages} if messages != "none" else {})
            assert differences(f"comm-spread{m}-{messages}", CONFIGS[f"sight-spread{m}-entity"]) == said
        for messages in ("mean", "attention"):
            assert differences(f"comm-spread{m}-{messages}-2rounds", CONFIGS[f"comm-spread{m}-{messages}"]) == {
                "message_rounds": 2}
        assert CONFIGS[f"sight-spread{m}-entity"].total_steps * m == 12_000_000
    for actor in ("flat", "entity"):
        assert differences(f"sight-narrow-spread6-{actor}", CONFIGS[f"sight-spread6-{actor}"]) == {
            "sight_radius": NARROW_SIGHT_RHO}
    for messages in MESSAGES:
        assert differences(f"comm-narrow-spread6-{messages}", CONFIGS[f"comm-spread6-{messages}"]) == {
            "sight_radius": NARROW_SIGHT_RHO}
    assert 0 < NARROW_SIGHT_RHO < SIGHT_RHO


def differences(name: str, base: MAPPOConfig) -> dict[str, object]:
    config = vars(CONFIGS[name])
    return {key: value for key, value in config.items() if vars(base)[key] != value}


SMOKE = ["sight-spread3-flat", "sight-spread3-entity", "comm-spread3-none", "comm-spread3-mean",
         "comm-spread3-attention", "comm-spread3-attention-2rounds"]


@pytest.mark.parametrize("name", SMOKE)
def test_a_short_run_writes_a_checkpoint_that_plays_plain_mpe2(name, tmp_path):
    summary = run(name, steps=3_200, out=tmp_path, evals=1, eval_episodes=1, final_episodes=2, progress=False)
    path = tmp_path / f"{name}-seed0.pt"
    config, _, _ = load_checkpoint(path)
    assert config.sight_radius == SIGHT_RHO and summary["env_steps"] == 3_200
    mean, _ = evaluate(load_policy(path), "simple_spread", 2, N=3)  # mpe2 with its own arguments
    assert math.isfinite(mean)
    agent, _ = load_agent(path)
    assert agent.actor.rho == SIGHT_RHO
    if name.endswith("flat"):
        with pytest.raises(ValueError, match="cannot run with"):
            load_policy(path, N=5)
    else:  # the entity and comm actors run at another m, with the same radius
        mean, _ = evaluate(load_policy(path, N=5), "simple_spread", 2, N=5)
        assert math.isfinite(mean)
        assert load_agent_at(path, N=5)[0].actor.rho == SIGHT_RHO


def test_the_index_of_runs_names_the_sight_radius_and_the_messages():
    assert _actor_variant(asdict(CONFIGS["comm-spread6-attention-2rounds"])) == (
        " (sight 1, attention messages, 2 rounds)")
    assert _actor_variant(asdict(CONFIGS["sight-spread6-flat"])) == " (sight 1)"
    assert _actor_variant(asdict(CONFIGS["pi-spread6-entity"])) == ""
