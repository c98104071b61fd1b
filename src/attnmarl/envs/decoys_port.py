"""simple_spread with decoys beyond the reference: the batched port, entity tokens and scripted baselines.

The reference environment is :mod:`attnmarl.envs.decoys` (read its docstring for the task, the world and the
observation layout); this module holds what is built on it, and imports the rest of :mod:`attnmarl.envs`,
which the reference must not (it sits in the scenario registry that the rest imports):

- :class:`BatchedDecoySpread` — the batched numpy port, :class:`~attnmarl.envs.spread.BatchedSpread` (physics,
  spread reward, collisions, success: all on agents and targets) plus the decoys' positions and each agent's
  landmark order, which only the observation reads; held to the reference step by step in the parity tests;
- :func:`decoy_tokens` — an observation cut into entity tokens (the layout lives in
  :func:`attnmarl.envs.tokens.token_layout`: self ``[v, p]``, one token per landmark slot ``[dx, dy, is_target]``,
  one per other agent ``[dx, dy, c_0, c_1]``; with d = 0 exactly simple_spread's tokens) and a key mask. Two
  controls of chapter 12: ``oracle`` (a key mask that hides the decoys: the upper bound) and ``no_bit`` (the
  ``is_target`` bit zeroed: decoys look like targets, where every design should fall to); the actors apply the
  same controls inside their forward pass (:class:`attnmarl.nets.policies.DecoyView`);
- :func:`target_greedy_policy` — chapter 6's centralized greedy assignment
  (:func:`attnmarl.envs.baselines.greedy_assignment_policy`) played on the targets alone, and
  :func:`baseline_scores`, the random → greedy range per (m, d), shipped in ``assets/decoys/baselines.json``
  by ``python -m attnmarl.envs.decoys_port``.
"""
from __future__ import annotations

import argparse
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..checks import check_array, check_bool, cli_episodes
from ..files.atomic import save_result
from .baselines import greedy_assignment_policy, random_policy
from .decoys import NAME, ObservationLayout, observation_layout
from .evaluate import evaluate
from .reference import Policy, describe, make_reference
from .spread import BatchedSpread
from .tokens import EntityTokens, token_layout


class BatchedDecoySpread(BatchedSpread):
    """simple_spread with decoys for ``num_envs`` worlds at once; see :class:`~attnmarl.envs.batched.BatchedEnv`.

    ``landmark_pos`` holds the targets only (as ``world.landmarks`` does in the reference), so
    :class:`~attnmarl.envs.spread.BatchedSpread`'s physics, rewards and success test run unchanged. Scenario
    state beyond them: ``decoy_pos`` (E, k, 2) and ``landmark_order`` (E, m, m + k), the landmark in each
    agent's slots (targets 0 … m−1, then decoys), the reference's ``world.landmark_order``.
    """

    scenario = NAME

    def _configure(self) -> None:
        super()._configure()
        self.layout: ObservationLayout = observation_layout(self.n_agents, self.kwargs["decoys"])
        self.n_decoys = self.layout.n_decoys
        self.decoy_pos = np.zeros((self.num_envs, self.n_decoys, 2))
        self.landmark_order = np.tile(np.arange(self.layout.n_landmarks), (self.num_envs, self.n_agents, 1))

    def _reset_envs(self, done: np.ndarray) -> None:
        """Mirrors ``DecoyScenario.reset_world``: simple_spread's reset, decoys uniform in [−1, 1]², and a
        uniform permutation of the landmarks per agent (none without decoys)."""
        super()._reset_envs(done)
        count = int(done.sum())
        self.decoy_pos[done] = self.rng.uniform(-1.0, 1.0, (count, self.n_decoys, 2))
        if self.n_decoys:
            identity = np.tile(np.arange(self.layout.n_landmarks), (count, self.n_agents, 1))
            self.landmark_order[done] = self.rng.permuted(identity, axis=-1)

    def observe(self) -> np.ndarray:
        """Mirrors ``DecoyScenario.observation``: simple_spread's observation (``BatchedSpread.observe``) with
        its landmark block replaced by the shuffled ``[p_l − p, is_target]`` entries, the other agents after them."""
        obs = super().observe()
        if not self.n_decoys:
            return obs
        n, layout = self.n_agents, self.layout
        obs[..., layout.agent_start :] = obs[..., 4 + 2 * n : 6 * n].copy()  # other agents, (silent) communication
        every_landmark = np.concatenate([self.landmark_pos, self.decoy_pos], axis=1)  # (E, m + k, 2)
        for c in (0, 1):  # x and y planes (E, m, m + k): several times faster than a trailing axis of 2
            relative = every_landmark[:, None, :, c] - self.agent_pos[:, :, None, c]
            obs[..., 4 + c : layout.agent_start : 3] = np.take_along_axis(relative, self.landmark_order, axis=2)
        obs[..., 6 : layout.agent_start : 3] = self.landmark_order < layout.n_targets
        return obs

    def _load_scenario_state(self, slot: int, raw_env: Any) -> None:
        """Copy the decoys' positions and the agents' landmark order of the reference's episode."""
        world = raw_env.world
        if len(getattr(world, "decoys", ())) != self.n_decoys:
            raise ValueError(f"reference_env has {len(getattr(world, 'decoys', ()))} decoys; this port has "
                             f"{self.n_decoys}")
        self.decoy_pos[slot] = [decoy.state.p_pos for decoy in world.decoys] if world.decoys else 0.0
        self.landmark_order[slot] = world.landmark_order


# --------------------------------------------------------------------------------------------
# entity tokens
# --------------------------------------------------------------------------------------------


def decoy_tokens(obs: np.ndarray, agent: str | int, oracle: bool = False, no_bit: bool = False,
                 **scenario_kwargs: Any) -> tuple[EntityTokens, np.ndarray]:
    """``agent``'s decoy observation ``obs`` ``(..., obs_dim)`` cut into tokens (the layout of
    :func:`attnmarl.envs.tokens.token_layout` for ``"simple_spread_decoys"``), and the key mask ``(..., n_tokens)``
    an attention layer reads (True = takes part, as in :func:`attnmarl.attention.masked_softmax`).

    The mask is all True unless ``oracle``: then the decoy slots (``is_target`` = 0) are False — the oracle
    control, which sees the targets only. ``no_bit`` zeroes the ``is_target`` feature of every landmark token
    — the no-bit control, where decoys cannot be told from targets (the oracle mask, if asked for, still
    follows the true bit). Without decoys there is no bit and nothing to hide: the tokens are simple_spread's.
    """
    oracle, no_bit = check_bool("oracle", oracle), check_bool("no_bit", no_bit)
    layout = token_layout(NAME, agent, **scenario_kwargs)
    obs = check_array("obs", obs)
    if obs.ndim < 1 or obs.shape[-1] != layout.obs_dim:
        raise ValueError(f"obs of agent {agent!r} must end in {layout.obs_dim} numbers, got shape {obs.shape}")
    for t, features in enumerate(layout.features):
        if "is_target" in features:
            _check_bits(obs[..., layout.columns[t][features.index("is_target")]])
    tokens = [obs[..., list(columns)] for columns in layout.columns]  # copies (fancy indexing): no_bit may write
    mask = np.ones(obs.shape[:-1] + (len(tokens),), dtype=bool)
    for t, features in enumerate(layout.features):
        if "is_target" in features:
            bit = features.index("is_target")
            if oracle:
                mask[..., t] = tokens[t][..., bit] == 1.0
            if no_bit:
                tokens[t][..., bit] = 0.0
    return EntityTokens(layout, tuple(tokens)), mask


# --------------------------------------------------------------------------------------------
# baselines
# --------------------------------------------------------------------------------------------


def _check_bits(bits: np.ndarray) -> None:
    """Raise ``ValueError`` unless every ``is_target`` entry is 0 or 1: another value is no observation the
    environment makes, and would be read as a decoy (the oracle mask and :func:`target_view` test ``== 1``)."""
    not_bits = bits[~np.isin(bits, (0, 1))]
    if not_bits.size:
        raise ValueError(f"the is_target entries of an observation must be 0 or 1; got {float(not_bits[0])}")


def target_view(observations: np.ndarray, layout: ObservationLayout) -> np.ndarray:
    """The simple_spread observations ``(m, 6m)`` of the targets alone, from all agents' decoy observations
    ``(m, obs_dim)``: each agent's target entries (``is_target`` = 1), put into one order for every agent —
    agent 0's, each other agent's targets matched to it by absolute position ``p + (p_l − p)`` — as
    simple_spread's greedy assignment needs (its cost matrix has one column per landmark for all agents)."""
    if not isinstance(layout, ObservationLayout):
        raise ValueError(f"layout must be an ObservationLayout (attnmarl.envs.decoys.observation_layout(N, decoys)); "
                         f"got {type(layout).__name__}")
    observations = check_array("observations", observations)
    m = layout.n_agents
    if observations.shape != (m, layout.obs_dim):
        raise ValueError(f"observations must be one row per agent of one world, (m, obs_dim) = {(m, layout.obs_dim)} "
                         f"for this layout; got shape {observations.shape}")
    if not layout.n_decoys:
        return observations
    entries = observations[:, layout.landmark_columns]  # (m, m + k, 3)
    _check_bits(entries[..., 2])
    if not (entries[..., 2].sum(-1) == m).all():
        raise ValueError(f"each agent's observation must mark m = {m} landmarks as targets (is_target = 1); got "
                         f"{entries[..., 2].sum(-1).astype(int).tolist()} per agent")
    targets = entries[entries[..., 2] == 1.0][:, :2].reshape(m, m, 2)  # each agent's targets, in its slot order
    absolute = targets + observations[:, None, 2:4]
    match = np.linalg.norm(absolute[:, :, None] - absolute[0][None, None], axis=-1).argmin(axis=1)  # (m, m)
    in_order = np.take_along_axis(targets, match[..., None], axis=1)
    return np.concatenate([observations[:, :4], in_order.reshape(m, 2 * m), observations[:, layout.agent_start:]],
                          axis=1)


def target_greedy_policy(continuous_actions: bool = False, **scenario_kwargs: Any) -> Policy:
    """Chapter 6's centralized greedy assignment (:func:`attnmarl.envs.baselines.greedy_assignment_policy`)
    played on the targets alone (:func:`target_view`): the decoys cost it nothing, since it reads the bit."""
    env = make_reference(NAME, continuous_actions=continuous_actions, **scenario_kwargs)
    raw = env.unwrapped
    layout = observation_layout(len(env.possible_agents), len(raw.world.decoys) // len(env.possible_agents))
    greedy = greedy_assignment_policy(continuous_actions)

    def policy(obs: dict[str, np.ndarray]) -> dict[str, Any]:
        agents = list(obs)
        view = target_view(np.stack([obs[agent] for agent in agents]).astype(np.float64), layout)
        return greedy(dict(zip(agents, view)))

    policy.built_for = describe(env)  # checked by evaluate before it plays
    return policy


BASELINES_PATH = resources.files("attnmarl") / "assets" / "decoys" / "baselines.json"
"""The shipped random and greedy scores on the reference, written by :func:`main`."""


def baseline_scores(ms: tuple[int, ...] = (3, 6, 12), ds: tuple[int, ...] = (0, 1, 3),
                    episodes: int = 200) -> list[dict[str, Any]]:
    """The random → greedy range on the reference for each team size m and decoys per agent d, measured as
    chapter 6 measures simple_spread's (:func:`attnmarl.envs.evaluate`: the mean over agents of the 25-step
    episode return, episodes seeded 0 … episodes − 1, discrete actions): one row per (m, d) with
    ``random`` and ``greedy`` as ``[mean, sem]`` and the CPU seconds the row took.

    Neither baseline reacts to the decoys (random actions ignore every observation; the greedy one reads the
    targets alone), and the decoys are drawn after the agents and targets, so each d replays d = 0's episodes:
    at a fixed m the range is simple_spread's for every d. A trained actor is judged by the share of it it
    closes, as on simple_spread."""
    rows = []
    for m in ms:
        for d in ds:
            kwargs = {"N": m, "decoys": d}
            start = time.process_time()
            scores = {"random": evaluate(random_policy(NAME, **kwargs), NAME, episodes, **kwargs),
                      "greedy": evaluate(target_greedy_policy(**kwargs), NAME, episodes, **kwargs)}
            rows.append({"m": m, "d": d, **{key: [round(v, 4) for v in value] for key, value in scores.items()},
                         "cpu_seconds": round(time.process_time() - start, 1)})
    return rows


def main() -> None:
    """``python -m attnmarl.envs.decoys_port [--episodes E] [--out PATH]``: measure :func:`baseline_scores`
    and write them as JSON (by default over the shipped :data:`BASELINES_PATH`)."""
    parser = argparse.ArgumentParser(description="Random and greedy scores on simple_spread with decoys (mpe2)")
    parser.add_argument("--episodes", type=cli_episodes(), default=200)
    parser.add_argument("--out", type=Path, default=Path(str(BASELINES_PATH)))
    args = parser.parse_args()
    rows = baseline_scores(episodes=args.episodes)
    document = {"scenario": NAME, "episodes": args.episodes, "seeds": f"0-{args.episodes - 1}",
                "measure": "mean over agents of the episode return (max_cycles=25), discrete actions",
                "command": "python -m attnmarl.envs.decoys_port", "rows": rows}
    save_result(args.out, document)
    for row in rows:
        print(row, flush=True)


if __name__ == "__main__":
    main()
