"""Level-Based Foraging as a scenario of the book: ``"lbforaging"``, played with a team reward.

:mod:`attnmarl.envs.lbf` holds LBF's reference (``lbforaging``'s gymnasium ``ForagingEnv``) and its exact batched
port. This module makes the game one of the scenarios the rest of the package trains and evaluates by name
(:mod:`attnmarl.envs.scenarios`), beside mpe2's, with two small pieces:

- :class:`ForagingParallelEnv` — the reference in the PettingZoo parallel API the book's evaluation plays
  (:func:`attnmarl.envs.evaluate`, the checkpoints' policies): agents ``player_0 … player_{m−1}``, observation
  and action dicts, an episode that ends for every player at once. ``make_reference("lbforaging", players=3,
  size=10, foods=3)`` builds it through :func:`raw_env`, whose signature is the scenario's arguments and their
  defaults (the registered ``Foraging-2s-10x10-3p-3f-v3``);
- :class:`BatchedTeamForaging` — :class:`~attnmarl.envs.lbf.BatchedForaging` with the arguments and attributes of
  the book's ports (:mod:`attnmarl.envs.batched`), what ``make_batched("lbforaging", num_envs, ...)`` trains on.

Both give every player the **team reward**, r_t = Σ_j r^j_t, the sum of the players' rewards of that step —
the common reward with which Papoudakis et al. (2021) benchmark LBF — so a player's episode return is the
team's: with LBF's normalised rewards, the share of the spawned food levels collected (0 … 1). The mean over
agents that :func:`attnmarl.envs.evaluate` reports is then exactly ``team_return`` of
:mod:`attnmarl.envs.lbf_baselines`, and a trained team lands on the same scale as the random and scripted teams.
Both also split LBF's ``done`` as the ports do: ``terminated`` when every food is collected, ``truncated`` at the
step limit with food left.

``lbforaging`` is imported only where the reference is built (:func:`attnmarl.envs.lbf.make_lbf_reference`).
Like :mod:`attnmarl.envs.decoys`, this module imports nothing of :mod:`attnmarl.envs` beyond the LBF modules, so
that the scenario registry can import it.
"""
from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from .lbf import N_ACTIONS, BatchedForaging, make_lbf_reference

NAME = "lbforaging"
"""The scenario's name in the registry of :mod:`attnmarl.envs.scenarios`."""


def agent_names(players: int) -> tuple[str, ...]:
    """The players' names, in LBF's order: ``player_0 … player_{m−1}``."""
    return tuple(f"player_{i}" for i in range(players))


def team_rewards(rewards: np.ndarray) -> np.ndarray:
    """Every player's reward replaced by the team's, the sum over players (the last axis): (..., m) → (..., m)."""
    rewards = np.asarray(rewards, dtype=np.float64)
    return np.repeat(rewards.sum(-1, keepdims=True), rewards.shape[-1], axis=-1)


class ForagingParallelEnv(ParallelEnv):
    """The reference LBF game (:func:`attnmarl.envs.lbf.make_lbf_reference`) as a PettingZoo parallel environment
    with the team reward (module docstring). ``reset(seed=k)`` reseeds the game's generator, as LBF's own does;
    ``step`` takes one action (0 … 5) per player and returns the five per-agent dicts, after which ``agents`` is
    empty once the episode has ended. The gymnasium game is ``game``."""

    metadata = {"name": NAME, "render_modes": [], "is_parallelizable": True}

    def __init__(self, players: int = 3, size: int = 10, foods: int = 3, sight: int = 2, max_steps: int = 50,
                 force_coop: bool = False, penalty: float = 0.0, normalize_reward: bool = True) -> None:
        self.game = make_lbf_reference(players, size, foods, sight, max_steps, seed=0, force_coop=force_coop,
                                       penalty=penalty, normalize_reward=normalize_reward)
        self.possible_agents = list(agent_names(len(self.game.players)))
        self.agents: list[str] = []
        self.continuous_actions = False
        """Discrete actions, as :func:`attnmarl.envs.reference.describe` and the policies read it."""
        self.n_actions = N_ACTIONS
        """LBF's six actions (mpe2's have five moves), as :func:`attnmarl.envs.reference.actions_to_dict` checks."""
        space = self.game.observation_space[0]
        self.observation_spaces = dict.fromkeys(self.possible_agents, space)
        self.action_spaces = {agent: spaces.Discrete(N_ACTIONS) for agent in self.possible_agents}

    def observation_space(self, agent: str) -> spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
        """A new episode (LBF's ``reset``); returns the observation and info dicts."""
        obs, _ = self.game.reset(seed=seed)
        self.agents = list(self.possible_agents)
        return dict(zip(self.agents, obs)), {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """One step of LBF with every player's action; the team reward for each player (module docstring)."""
        if not self.agents:
            raise ValueError("the episode has ended (every agent is done); call reset(seed=...) to start another")
        if not isinstance(actions, dict) or actions.keys() != set(self.agents):
            given = sorted(actions) if isinstance(actions, dict) else type(actions).__name__
            raise ValueError(f"actions must hold one action for each of {self.agents}; got {given}")
        obs, rewards, done, _, _ = self.game.step([int(actions[agent]) for agent in self.agents])
        team = float(sum(rewards))
        terminated = bool(done) and not self.game.field.any()
        truncated = bool(done) and not terminated
        agents, self.agents = self.agents, ([] if done else self.agents)
        return (dict(zip(agents, obs)), dict.fromkeys(agents, team), dict.fromkeys(agents, terminated),
                dict.fromkeys(agents, truncated), {agent: {} for agent in agents})


def raw_env(players: int = 3, size: int = 10, foods: int = 3, sight: int = 2, max_steps: int = 50,
            force_coop: bool = False, penalty: float = 0.0, normalize_reward: bool = True) -> ForagingParallelEnv:
    """The scenario's reference; its signature lists the scenario's arguments, which the registry checks
    (:func:`attnmarl.envs.scenarios.reference_kwargs`). Defaults: LBF's ``Foraging-2s-10x10-3p-3f-v3``."""
    return ForagingParallelEnv(players, size, foods, sight, max_steps, force_coop, penalty, normalize_reward)


parallel_env = raw_env
"""What :func:`attnmarl.envs.make_reference` calls (mpe2's modules have it beside ``raw_env``)."""


class BatchedTeamForaging(BatchedForaging):
    """``make_batched("lbforaging", num_envs, seed, **arguments)``: the exact port with the team reward (module
    docstring), built as the book's other ports are — ``(num_envs, seed, **scenario_kwargs)`` with the defaults of
    :func:`raw_env` — and with their attributes ``agents``, ``n_actions`` and ``continuous_actions``. Its
    observations, ends and auto-reset are :class:`~attnmarl.envs.lbf.BatchedForaging`'s."""

    scenario = NAME

    def __init__(self, num_envs: int, seed: int = 0, **scenario_kwargs: Any) -> None:
        try:
            arguments = inspect.signature(raw_env).bind(**scenario_kwargs)
        except TypeError:
            known = list(inspect.signature(raw_env).parameters)
            raise ValueError(f"{NAME} takes the arguments {known}; got {sorted(scenario_kwargs)}") from None
        arguments.apply_defaults()
        super().__init__(num_envs, seed=seed, **arguments.arguments)
        self.agents = agent_names(self.n_agents)
        self.n_actions = N_ACTIONS
        self.continuous_actions = False

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """:meth:`BatchedForaging.step` with every player given the team's reward (E, m)."""
        obs, rewards, terminated, truncated, info = super().step(actions)
        return obs, team_rewards(rewards), terminated, truncated, info
