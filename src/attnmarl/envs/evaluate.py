"""Evaluating a policy on the real mpe2 environment — how every trained policy in the book is judged."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..checks import check_episodes, check_seed, derived_seed
from .reference import Policy, check_policy_fits, make_reference, mixed_teams, play


def episode_returns(
    policy: Policy, scenario: str, episodes: int = 200, seed: int = 0, **scenario_kwargs: Any
) -> np.ndarray:
    """Per-agent return of each episode, ``(episodes, n_agents)``: the sum of each agent's rewards
    over the episode (``max_cycles`` steps unless it terminates early). Episode k is reset with
    seed ``seed + k`` (within 64 bits: :func:`attnmarl.checks.derived_seed`); ``policy`` maps the observation
    dict to the action dict. A policy that says it was built for another scenario, team or action space
    (:func:`attnmarl.envs.reference.check_policy_fits`) raises ``ValueError`` before the first episode. A policy
    that carries ``many`` (a greedy checkpoint with discrete actions) has its episodes played side by side
    (:func:`_side_by_side`)."""
    check_episodes("episodes", episodes)
    check_seed(seed)
    env = make_reference(scenario, **scenario_kwargs)
    check_policy_fits(policy, env)
    if getattr(policy, "many", None) is not None:
        return _side_by_side(policy, env, episodes, seed, scenario, scenario_kwargs)
    returns = np.zeros((episodes, len(env.possible_agents)))
    for k in range(episodes):
        obs, _ = env.reset(seed=derived_seed(seed, k))
        while env.agents:
            obs, rewards, *_ = play(env, policy, obs)
            returns[k] += [rewards[agent] for agent in env.possible_agents]
    return returns


SIDE_BY_SIDE = 50
"""Episodes a policy with ``many`` plays at once (:func:`_side_by_side`): one network call per step for all of
them. On a 2-core CPU a batch of 50 costs the network about what one game does; mpe2's own step, one game at a
time, is then most of the time."""


def _side_by_side(policy: Policy, env, episodes: int, seed: int, scenario: str,
                  scenario_kwargs: dict[str, Any]) -> np.ndarray:
    """:func:`episode_returns` for a policy with ``many`` (:func:`attnmarl.envs.policy_from_arrays`): the same
    episodes, each reset with its own seed and stepped with the same checks (:func:`play`), up to
    :data:`SIDE_BY_SIDE` at a time, the policy asked once per step for all of them. Its actions in one episode do
    not depend on the others, so the returns are those of the episodes played one after another, but for
    rounding: a matrix product over a batch may round the last bit of a logit otherwise than over one game, and
    where two actions' logits tie to that bit the greedy choice can flip. bench/bench_evaluate.py counts them: on
    five shipped seed-0 checkpoints (the entity actor at m = 3 and 6, MAT at m = 3 and 6, chapter 7's actor), 200
    episodes each, one episode of the m = 3 entity actor differed and moved its mean by 0.0004, where the mean's
    standard error is 0.28; every other return was the same to the last bit."""
    envs = [env] + [make_reference(scenario, **scenario_kwargs) for _ in range(min(episodes, SIDE_BY_SIDE) - 1)]
    agents = env.possible_agents
    returns = np.zeros((episodes, len(agents)))
    for start in range(0, episodes, SIDE_BY_SIDE):
        batch = range(start, min(start + SIDE_BY_SIDE, episodes))
        obs = {k: game.reset(seed=derived_seed(seed, k))[0] for k, game in zip(batch, envs)}
        running = list(zip(batch, envs))
        while running:
            chosen = policy.many([obs[k] for k, _ in running])
            if len(chosen) != len(running):
                raise ValueError(f"the policy's many must return one action dict per game; it was given {len(running)} "
                                 f"games and returned {len(chosen)}")
            for (k, game), actions in zip(running, chosen):
                obs[k], rewards, *_ = play(game, lambda _, decided=actions: decided, obs[k])
                returns[k] += [rewards[agent] for agent in agents]
            running = [(k, game) for k, game in running if game.agents]
    return returns


def evaluate(
    policy: Policy, scenario: str, episodes: int = 200, seed: int = 0, **scenario_kwargs: Any
) -> tuple[float, float]:
    """Mean per-agent return on mpe2 and its standard error: ``(mean, sem)``.

    Each episode's return is averaged over agents, ``R_k = (1/m) Σ_i Σ_t r^i_t``; the result is
    the mean of ``R_k`` over episodes and ``std(R_k, ddof=1) / √episodes`` (0 for one episode).
    """
    per_episode = episode_returns(policy, scenario, episodes, seed, **scenario_kwargs).mean(axis=1)
    sem = per_episode.std(ddof=1) / np.sqrt(episodes) if episodes > 1 else 0.0
    return float(per_episode.mean()), float(sem)


def cross_play(teams: dict[str, Policy], scenario: str = "simple_tag", episodes: int = 200,
               **scenario_kwargs: Any) -> dict[tuple[str, str], np.ndarray]:
    """Every team's adversaries against every team's other agents (:func:`mixed_teams`), on the same
    episode seeds: ``{(adversaries' team, others' team): episode returns (episodes, n_agents)}``."""
    return {(chasers, prey): episode_returns(mixed_teams(teams[chasers], teams[prey]), scenario, episodes,
                                             **scenario_kwargs)
            for chasers in teams for prey in teams}
