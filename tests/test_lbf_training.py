"""Level-Based Foraging made trainable: the scenario ``"lbforaging"``, the entity actor's tokens, configs and runs.

- the registered reference is ``lbforaging``'s game with the team reward, the port replays it through
  ``make_batched``, and ``evaluate`` measures exactly the baselines' team return;
- the entity actor's torch tokens are :func:`attnmarl.envs.lbf_tokens`, and its key mask hides every empty slot
  (alpha = 0 there, and nothing written in one reaches the output), in both of its forms;
- the configs build at every team size and refuse what LBF cannot run; a short run learns to beat the random team
  on the reference, and its checkpoint loads and scores the same there.
"""
from __future__ import annotations

import json
from dataclasses import asdict, replace

import numpy as np
import pytest
import torch

from attnmarl.algos.mappo import MAPPOConfig, make_agent
from attnmarl.checkpoints import load_policy
from attnmarl.envs import entity_tokens, evaluate, lbf_tokens, make_batched, make_lbf_reference, make_reference
from attnmarl.envs.foraging import NAME, team_rewards
from attnmarl.envs.lbf_baselines import BASELINES_PATH, SCENARIOS, forager_actions, play_reference
from attnmarl.envs.reference import policy_from_arrays
from attnmarl.nets import EntityActor
from attnmarl.train import CONFIGS, LBF_DESIGNS, LBF_GAMMA, LBF_MS, named_config, run

pytestmark = pytest.mark.usefixtures("one_thread")


def kwargs_of(m: int) -> dict[str, int]:
    size, foods = SCENARIOS[m]
    return {"players": m, "size": size, "foods": foods}


def played(m: int, steps: int = 40, num_envs: int = 32, seed: int = 0) -> np.ndarray:
    """Observations (steps·num_envs, m, obs_dim) of the port under the scripted forager with one action in three
    random: players near food and each other, many slots empty and many not."""
    env = make_batched(NAME, num_envs, seed=seed, **kwargs_of(m))
    rng = np.random.default_rng(seed)
    obs, seen = env.reset(), []
    for _ in range(steps):
        seen.append(obs)
        actions = forager_actions(obs, rng, SCENARIOS[m][1])
        actions = np.where(rng.random(actions.shape) < 1 / 3, rng.integers(0, 6, actions.shape), actions)
        obs = env.step(actions)[0]
    return np.concatenate(seen)


# --------------------------------------------------------------------------------------------
# the scenario: reference, port, score
# --------------------------------------------------------------------------------------------


def test_the_registered_reference_is_lbforagings_game_with_the_team_reward() -> None:
    env, game = make_reference(NAME, **kwargs_of(3)), make_lbf_reference(3, 10, 3, 2, 50, seed=0)
    rng = np.random.default_rng(0)
    ends = set()
    for k in range(6):
        obs, _ = env.reset(seed=k)
        np.testing.assert_array_equal(np.stack(list(obs.values())), np.stack(game.reset(seed=k)[0]))
        while env.agents:
            actions = rng.integers(0, 6, 3)
            obs, rewards, terminated, truncated, _ = env.step(dict(zip(env.agents, actions.tolist())))
            expected_obs, expected_rewards, done, _, _ = game.step(actions.tolist())
            np.testing.assert_array_equal(np.stack(list(obs.values())), np.stack(expected_obs))
            assert list(rewards.values()) == [sum(expected_rewards)] * 3
            ends.update((done, terminated[agent], truncated[agent]) for agent in terminated)
        assert terminated["player_0"] == (not game.field.any())
    assert ends == {(False, False, False), (True, False, True)}  # random play never clears the field here


def test_the_port_replays_the_registered_reference() -> None:
    """Through ``make_batched``: an episode of the reference copied into a slot, then both stepped alike; equal
    observations, team rewards and ends, every step."""
    env, port = make_reference(NAME, **kwargs_of(6)), make_batched(NAME, 4, seed=1, **kwargs_of(6))
    assert port.agents == tuple(env.possible_agents) and port.n_actions == 6 and not port.continuous_actions
    rng = np.random.default_rng(1)
    rewarded = 0
    for k in range(3):
        env.reset(seed=k)
        port.load_state(2, env.game)
        obs = port.observe()
        while env.agents:
            actions = forager_actions(obs, rng, 6)
            ref_obs, ref_rewards, terminated, truncated, _ = env.step(dict(zip(env.agents, actions[2].tolist())))
            obs, rewards, port_terminated, port_truncated, info = port.step(actions)
            np.testing.assert_array_equal(info["final_obs"][2], np.stack(list(ref_obs.values())))
            np.testing.assert_array_equal(rewards[2], list(ref_rewards.values()))
            assert (port_terminated[2], port_truncated[2]) == (terminated["player_0"], truncated["player_0"])
            assert np.all(rewards == rewards[:, :1])  # every player has the team's reward, in every game
            rewarded += bool(rewards[2, 0] > 0)
    assert rewarded > 0


def test_team_rewards_sum_over_players() -> None:
    rewards = np.array([[0.25, 0.0, 0.125], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(team_rewards(rewards), [[0.375] * 3, [0.0] * 3])


def test_the_score_is_the_baselines_team_return() -> None:
    """``evaluate`` (the mean over agents of each player's return) equals :func:`play_reference`'s team return (the sum
    over players), episode seeds and all, for a deterministic team; and the random team lands on the shipped
    baseline's scale."""
    team = lambda obs, rng: forager_actions(obs, np.random.default_rng(0), 3)  # noqa: E731 (a pure function of obs)
    reference = make_reference(NAME, **kwargs_of(3))
    policy = policy_from_arrays(reference, lambda obs: team(obs, None))
    mean, _ = evaluate(policy, NAME, episodes=20, **kwargs_of(3))
    assert mean == pytest.approx(play_reference(team, 3, 10, 3, episodes=20)["team_return"].mean(), abs=1e-12)
    assert mean > 0.1
    shipped = json.loads(BASELINES_PATH.read_text())["rows"][0]["random"]["team_return"]
    rng = np.random.default_rng(0)
    random_policy = policy_from_arrays(reference, lambda obs: rng.integers(0, 6, 3))
    random_mean, random_sem = evaluate(random_policy, NAME, episodes=100, **kwargs_of(3))
    assert abs(random_mean - shipped[0]) < 3 * np.hypot(random_sem, shipped[1])


@pytest.mark.parametrize(("build", "match"), [
    (lambda: make_batched(NAME, 4, N=3), r"takes the arguments \['players'"),
    (lambda: make_reference(NAME, N=3), r"lbforaging takes no argument\(s\) \['N'\]"),
    (lambda: make_batched(NAME, 4, players=0), "players must be a positive integer"),
    (lambda: make_reference(NAME, players=200, size=10), "do not fit on a 10 x 10 grid"),
    (lambda: make_reference(NAME, size=2), "size must be an integer >= 3"),
    (lambda: make_reference(NAME, penalty="no"), "penalty"),
    (lambda: entity_tokens(NAME, np.zeros(18), 0, players=3), "use attnmarl.envs.lbf_tokens"),
])
def test_bad_games_are_refused(build, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build()


def test_bad_policies_and_steps_are_refused() -> None:
    env = make_reference(NAME, **kwargs_of(3))
    with pytest.raises(ValueError, match="the episode has ended"):
        env.step({})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="one action for each of"):
        env.step({"player_0": 0})
    with pytest.raises(ValueError, match=r"discrete actions must lie in \[0, 5\]"):
        evaluate(policy_from_arrays(env, lambda obs: np.full(3, 6)), NAME, episodes=1, **kwargs_of(3))


# --------------------------------------------------------------------------------------------
# the entity actor's tokens and mask
# --------------------------------------------------------------------------------------------


def entity_actor(m: int, mixing: str = "attention", seed: int = 0) -> EntityActor:
    torch.manual_seed(seed)
    return EntityActor(NAME, kwargs_of(m), m, 3 * (SCENARIOS[m][1] + m), 6, mixing=mixing)


@pytest.mark.parametrize("m", LBF_MS)
def test_torch_tokens_are_lbf_tokens(m: int) -> None:
    """Both forms' tokens (:meth:`EntityActor.tokens`, kind blocks side by side; :meth:`EntityActor.kind_tokens`,
    feature-major) and the key mask equal the numpy tokens, on observations with every kind of empty slot."""
    obs = played(m)
    tokens, mask = lbf_tokens(obs, SCENARIOS[m][1])
    assert mask[..., 1:].any() and (~mask[..., 1:1 + SCENARIOS[m][1]]).all(-1).any()  # slots seen, and none
    actor = entity_actor(m)
    o = torch.from_numpy(obs)
    blocks = actor.tokens(o)[0]  # (batch, m, n, 3 kinds x 3 features + 3 kind flags)
    np.testing.assert_array_equal(sum(blocks[..., 3 * k:3 * k + 3] for k in range(3)).numpy(), tokens)
    feature_major = torch.cat(actor.kind_tokens(o)[0], dim=1)  # (3, n, m, batch)
    np.testing.assert_array_equal(feature_major.permute(3, 2, 1, 0).numpy(), tokens)
    np.testing.assert_array_equal(actor.masks(o)[0].numpy(), mask)
    assert actor.token_names[0][:2] == ("self", "food 0")


def scrambled(obs: np.ndarray, foods: int, seed: int = 0) -> np.ndarray:
    """``obs`` with new x and level in every empty slot (its y stays LBF's −1, which marks it empty)."""
    rng = np.random.default_rng(seed)
    triples = obs.reshape(obs.shape[:-1] + (-1, 3)).copy()
    empty = triples[..., 0] == -1
    triples[..., 1] = np.where(empty, rng.integers(-3, 8, empty.shape), triples[..., 1])
    triples[..., 2] = np.where(empty, rng.integers(0, 7, empty.shape), triples[..., 2])
    return triples.reshape(obs.shape)


@pytest.mark.parametrize("mixing", ["attention", "mean"])
def test_empty_slots_get_no_weight_and_change_nothing(mixing: str) -> None:
    m, foods = 6, SCENARIOS[6][1]
    obs = played(m, steps=10)
    _, mask = lbf_tokens(obs, foods)
    actor = entity_actor(m, mixing)
    o, o_scrambled = torch.from_numpy(obs), torch.from_numpy(scrambled(obs, foods))
    assert not torch.equal(o, o_scrambled)
    with torch.no_grad():
        y, alpha = actor.outputs_and_alpha(o)
        y_scrambled, alpha_scrambled = actor.outputs_and_alpha(o_scrambled)
        hidden = torch.from_numpy(~mask)[:, :, None].expand_as(alpha)
        assert torch.all(alpha[hidden] == 0) and torch.all(alpha[~hidden] > 0)
        assert torch.equal(y, y_scrambled) and torch.equal(alpha, alpha_scrambled)
        torch.testing.assert_close(actor(o), y, rtol=0, atol=1e-5)
        assert torch.equal(actor(o), actor(o_scrambled))
        heavier = obs.reshape(obs.shape[:-1] + (-1, 3)).copy()
        heavier[..., :foods, 2] += mask[..., 1:1 + foods]  # every food seen one level higher
        assert not torch.allclose(actor(torch.from_numpy(heavier.reshape(obs.shape))), y)  # a seen slot does count


def test_a_player_that_sees_nothing_attends_to_itself() -> None:
    """Every food and every other player out of sight: alpha is all on the self token, in both forms, and finite."""
    m, foods = 3, 3
    triples = np.tile(np.array([-1.0, -1.0, 0.0], dtype=np.float32), (1, m, foods + m, 1))
    triples[:, :, foods] = [2.0, 2.0, 1.0]  # each player's own (y, x, level)
    o = torch.from_numpy(triples.reshape(1, m, -1))
    for mixing in ("attention", "mean"):
        actor = entity_actor(m, mixing)
        with torch.no_grad():
            y, alpha = actor.outputs_and_alpha(o)
            assert torch.isfinite(y).all() and torch.equal(alpha[..., 0], torch.ones_like(alpha[..., 0]))
            torch.testing.assert_close(actor(o), y, rtol=0, atol=1e-5)


def test_tokens_are_egocentric() -> None:
    """Moving a player and everything it sees by the same cells (in its view) changes only its self token."""
    m = 3
    obs = played(m, steps=5)
    triples = obs.reshape(obs.shape[:-1] + (-1, 3))
    seen = triples[..., 0] != -1
    shifted = np.where(seen[..., None], triples + np.array([1.0, -1.0, 0.0], dtype=np.float32), triples)
    actor = entity_actor(m)
    tokens, shifted_tokens = (sum(actor.tokens(torch.from_numpy(x.reshape(obs.shape)))[0][..., 3 * k:3 * k + 3]
                                  for k in range(3)) for x in (triples, shifted))
    assert torch.equal(tokens[..., 1:, :], shifted_tokens[..., 1:, :])
    assert torch.equal(shifted_tokens[..., 0, :2] - tokens[..., 0, :2], torch.tensor([-1.0, 1.0]).expand_as(
        tokens[..., 0, :2]))


# --------------------------------------------------------------------------------------------
# configs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("m", LBF_MS)
def test_configs_build_at_every_team_size(m: int) -> None:
    """Each design's agent builds, acts (six actions for m players) and values (m values); within an m the designs
    differ from the entity run only in their field; the budget is 12 million agent-decisions."""
    o = torch.from_numpy(played(m, steps=2, num_envs=3))
    entity = asdict(CONFIGS[f"lbf{m}p-entity"])
    for design, change in LBF_DESIGNS.items():
        config = CONFIGS[f"lbf{m}p-{design}"]
        assert config.scenario_kwargs == kwargs_of(m) and config.gamma == LBF_GAMMA and not config.eval_deterministic
        assert {key for key, value in asdict(config).items() if entity[key] != value} == set(change)
        assert 12_000_000 - 3200 * m < config.num_updates * config.batch_size * m <= 12_000_000
        agent = make_agent(config)
        with torch.no_grad():
            assert agent.actor(o).shape == (o.shape[0], m, 6) and agent.critic(o).shape == (o.shape[0], m)
    chapter_8 = asdict(CONFIGS["pi-spread6-entity"])
    changed = {key for key, value in entity.items() if chapter_8[key] != value}
    assert changed - {"total_steps"} == {"scenario", "scenario_kwargs", "gamma", "eval_deterministic"}


@pytest.mark.parametrize(("changes", "match"), [
    ({"scenario_kwargs": {"players": 3, "N": 3}}, r"lbforaging port does not implement argument\(s\) \['N'\]"),
    ({"scenario_kwargs": {"players": 101, "size": 10}}, "do not fit on a 10 x 10 grid"),
    ({"scenario_kwargs": {"players": 3, "foods": 0}}, "foods must be a positive integer"),
    ({"sight_radius": 1.0}, "sight"),
    ({"actor": "comm"}, "simple_spread"),
    ({"entity_frame": "absolute"}, "absolute tokens are built for simple_spread only"),
    ({"decoy_view": "oracle"}, "decoy"),
])
def test_bad_configs_are_refused(changes: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        config = replace(CONFIGS["lbf3p-entity"], **changes)
        make_agent(config)


# --------------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------------

SHORT = {"num_envs": 32, "rollout_steps": 25, "total_steps": 800 * 60}
"""A short run: 60 updates of 800 env steps, about 30 CPU seconds with one thread (0.219 ± 0.023 when written)."""


def test_a_short_run_learns_and_its_checkpoint_scores_the_same_on_the_reference(tmp_path, monkeypatch) -> None:
    """The entity design at m = 3 with a short budget beats the random team on the reference (0.084, shipped) by a
    clear margin, and the checkpoint, loaded, plays the reference to the same score."""
    monkeypatch.setitem(CONFIGS, "lbf3p-short", replace(CONFIGS["lbf3p-entity"], **SHORT))
    summary = run("lbf3p-short", seed=0, out=tmp_path, evals=1, eval_episodes=10, final_episodes=100, progress=False)
    random, random_sem = json.loads(BASELINES_PATH.read_text())["rows"][0]["random"]["team_return"]
    margin = summary["final_return"] - random
    assert margin > 3 * np.hypot(summary["final_sem"], random_sem) and margin > random, summary
    policy = load_policy(tmp_path / "lbf3p-short-seed0.pt")
    mean, sem = evaluate(policy, NAME, episodes=100, **kwargs_of(3))
    assert (round(mean, 3), round(sem, 3)) == (summary["final_return"], summary["final_sem"])
    assert summary["scenario"] == NAME and named_config("lbf3p-short").eval_deterministic is False


def test_a_budget_of_no_whole_update_is_refused() -> None:
    with pytest.raises(ValueError, match="not a whole number of lbf9p-flat's updates"):
        named_config("lbf9p-flat", steps=3200 * 10 + 1000)
    assert isinstance(CONFIGS["lbf9p-flat"], MAPPOConfig)
