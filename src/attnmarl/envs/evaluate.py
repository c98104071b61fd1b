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
    (:func:`attnmarl.envs.reference.check_policy_fits`) raises ``ValueError`` before the first episode."""
    check_episodes("episodes", episodes)
    check_seed(seed)
    env = make_reference(scenario, **scenario_kwargs)
    check_policy_fits(policy, env)
    returns = np.zeros((episodes, len(env.possible_agents)))
    for k in range(episodes):
        obs, _ = env.reset(seed=derived_seed(seed, k))
        while env.agents:
            obs, rewards, *_ = play(env, policy, obs)
            returns[k] += [rewards[agent] for agent in env.possible_agents]
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
