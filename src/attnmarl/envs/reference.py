"""Thin helpers over the real `mpe2` environments (PettingZoo parallel API): the reference.

``make_reference`` builds the mpe2 environment itself — the object the book teaches — and the
other helpers only translate between its per-agent dicts and the arrays the rest of the package
uses (same layout as the batched ports: agents in ``possible_agents`` order, observations
zero-padded to the widest agent), or render its frames.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

from ..checks import check_seed, derived_seed, is_int
from .actions import N_MOVES, check_actions
from .scenarios import reference_kwargs, reference_module

Policy = Callable[[dict[str, np.ndarray]], dict[str, Any]]
"""A policy in the PettingZoo parallel convention: observation dict → action dict."""


def make_reference(scenario: str, **scenario_kwargs: Any):
    """The mpe2 parallel environment ``<scenario>_v*.parallel_env(**scenario_kwargs)``.

    ``scenario`` is a name such as ``"simple_spread"`` (a version suffix is accepted);
    arguments are checked first (unknown names, counts below one, … raise ``ValueError``).
    Pass ``render_mode="rgb_array"`` to render frames; no display is needed.
    """
    kwargs = reference_kwargs(scenario, **scenario_kwargs)
    return reference_module(scenario).parallel_env(**kwargs)


def obs_dims(env) -> tuple[int, ...]:
    """Observation size of each agent of an mpe2 env, in ``possible_agents`` order."""
    return tuple(env.observation_space(a).shape[0] for a in env.possible_agents)


def running_agents(env, what: str) -> list[str]:
    """The agents of ``env``'s episode in progress; ``ValueError`` saying what to do when there is none: before the
    first ``reset`` (mpe2 raises a bare ``AttributeError``) or after the episode ended (a step would fail deep in
    mpe2 with a ``KeyError``). ``what`` names the caller."""
    try:
        agents = list(env.agents)
    except AttributeError:
        raise ValueError(f"{what}: the environment has no episode yet; call env.reset(seed=...) first") from None
    if not agents:
        raise ValueError(f"{what}: the episode has ended (every agent is done); call env.reset(seed=...) to start "
                         "another")
    return agents


def obs_to_array(env, obs: dict[str, np.ndarray]) -> np.ndarray:
    """Stack an observation dict into float32 ``(n_agents, max obs_dim)``, zero-padded per agent; an observation
    dict without every agent's observation of its size (an empty one before ``reset``) raises ``ValueError``."""
    dims = obs_dims(env)
    if not isinstance(obs, dict) or obs.keys() != set(env.possible_agents) or any(
            np.shape(obs[agent]) != (dim,) for agent, dim in zip(env.possible_agents, dims)):
        given = (", ".join(f"{a} {np.shape(o)}" for a, o in obs.items()) or "none") if isinstance(obs, dict) else (
            type(obs).__name__)
        raise ValueError(f"obs must hold the observation of every agent of {describe(env)}; got {given}")
    array = np.zeros((len(dims), max(dims)), dtype=np.float32)
    for i, agent in enumerate(env.possible_agents):
        array[i, : dims[i]] = obs[agent]
    return array


def actions_to_dict(env, actions: np.ndarray) -> dict[str, Any]:
    """Split an action array — ``(n_agents,)`` ints or ``(n_agents, 5)`` floats — into mpe2's action dict (or that of
    Level-Based Foraging's reference, whose game has ``n_actions`` = 6: :mod:`attnmarl.envs.foraging`)."""
    continuous = env.unwrapped.continuous_actions
    n_actions = getattr(env.unwrapped, "n_actions", N_MOVES)
    actions = check_actions(actions, (len(env.possible_agents),), continuous, n_actions)
    return {agent: actions[i] for i, agent in enumerate(env.possible_agents)}


def step_arrays(env, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool, bool]:
    """One parallel step of an mpe2 env with an action array; returns arrays.

    Returns ``(obs (n_agents, max obs_dim) float32, rewards (n_agents,) float64, terminated, truncated)``;
    the flags are mpe2's (identical for all agents, which this checks). Outside an episode (before ``reset``,
    after its end) it raises ``ValueError`` (:func:`running_agents`).
    """
    running_agents(env, "step_arrays")
    obs, rewards, terminations, truncations, _ = env.step(actions_to_dict(env, actions))
    agents = env.possible_agents
    terminated = {bool(terminations[a]) for a in agents}
    truncated = {bool(truncations[a]) for a in agents}
    assert len(terminated) == 1 and len(truncated) == 1, "mpe2 ended some agents but not others"
    reward_array = np.array([rewards[a] for a in agents], dtype=np.float64)
    return obs_to_array(env, obs), reward_array, terminated.pop(), truncated.pop()


def describe(env) -> str:
    """What an mpe2 env is, in the words of an error message: scenario, team and action space
    (``simple_spread with 3 agents (agent_0, agent_1, agent_2), observations of 18 numbers, discrete actions``)."""
    agents = list(env.possible_agents)
    team = ", ".join(agents) if len(agents) <= 6 else f"{agents[0]}, {agents[1]}, …, {agents[-1]}"
    dims = sorted(set(obs_dims(env)))
    sizes = " or ".join(str(d) for d in dims)
    actions = "continuous" if env.unwrapped.continuous_actions else "discrete"
    return (f"{env.metadata['name'].rsplit('_v', 1)[0]} with {len(agents)} agents ({team}), observations of "
            f"{sizes} numbers, {actions} actions")


def check_policy_fits(policy: Policy, env) -> None:
    """Raise ``ValueError`` if ``policy`` says it was built for another game than ``env`` (another
    scenario, team, observation size or action space): a policy made by :func:`policy_from_arrays`
    carries ``built_for``, the :func:`describe` of its own env. Other policies pass."""
    built_for = getattr(policy, "built_for", None)
    if built_for is not None and built_for != describe(env):
        raise ValueError(f"the policy was built for {built_for}; it cannot play {describe(env)}")


def play(env, policy: Policy, obs: dict[str, np.ndarray]) -> tuple:
    """One step of an mpe2 env with ``policy``'s actions for ``obs`` (what ``env.step`` returns), after
    checking them: a dict with one action for every agent, each of its agent's action space — an integer
    move in range, or a continuous action of the right shape, finite and within the space's bounds (mpe2 would
    fail deep inside, with a bare ``KeyError`` or ``AssertionError``, and clip out-of-range continuous actions
    with only a warning; the batched ports refuse them too, :func:`attnmarl.envs.actions.check_actions`), and
    only within an episode (:func:`running_agents`)."""
    if not callable(policy):
        raise ValueError(f"policy must be a function from the observation dict to the action dict; got "
                         f"{type(policy).__name__}")
    running_agents(env, "play")
    actions = policy(obs)
    if not isinstance(actions, dict) or actions.keys() != set(env.agents):
        got = sorted(actions) if isinstance(actions, dict) else type(actions).__name__
        raise ValueError(f"the policy must return one action for each agent of {describe(env)}: "
                         f"{sorted(env.agents)}; got {got}")
    for agent, action in actions.items():
        space = env.action_space(agent)
        if isinstance(space, spaces.Discrete):
            fits = is_int(action) or (
                isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer))
            fits = fits and space.start <= int(action) < space.start + space.n
        else:
            array = np.asarray(action)
            fits = (array.shape == space.shape and np.issubdtype(array.dtype, np.number)
                    and not np.iscomplexobj(array) and bool(np.isfinite(array).all()))
            if fits and not (np.all(array >= space.low) and np.all(array <= space.high)):
                raise ValueError(f"the policy's action for {agent}, {action!r}, lies outside its action space {space} "
                                 f"({describe(env)}): values from {array.min():g} to {array.max():g}; mpe2 would clip "
                                 "it silently to the bounds, and the batched ports refuse it, so clip it in the policy "
                                 "if that is what it means")
        if not fits:
            raise ValueError(f"the policy's action for {agent}, {action!r}, is not in its action space {space} "
                             f"({describe(env)})")
    return env.step(actions)


def policy_from_arrays(env, act: Callable[[np.ndarray], np.ndarray],
                       act_many: Callable[[np.ndarray], np.ndarray] | None = None) -> Policy:
    """Wrap an array policy (``(n_agents, max obs_dim)`` → action array) as an mpe2 dict policy.

    The policy is for ``env``'s game only: it carries ``built_for`` (:func:`describe`), which
    :func:`attnmarl.envs.episode_returns` checks before playing, and observations of other agents or
    sizes raise ``ValueError`` saying what it was built for.

    ``act_many``, the same policy over a batch of games (``(games, n_agents, max obs_dim)`` → one action array per
    game), is for a policy whose actions in one game never depend on another game or on the order it is asked in
    (a greedy network that draws no random numbers): the policy then carries ``many`` (a list of observation dicts
    → a list of action dicts), and :func:`attnmarl.envs.episode_returns` plays its episodes side by side, one
    network call per step for all of them (:func:`attnmarl.envs.evaluate._side_by_side` says how close to one by
    one that is)."""
    dims = dict(zip(env.possible_agents, obs_dims(env)))

    def check(obs: dict[str, np.ndarray]) -> np.ndarray:
        if obs.keys() != dims.keys() or any(np.shape(obs[a]) != (d,) for a, d in dims.items()):
            given = ", ".join(f"{a} {np.shape(o)}" for a, o in obs.items())
            raise ValueError(f"the policy was built for {policy.built_for}; it was given the observations of "
                             f"{len(obs)} agents: {given}")
        return obs_to_array(env, obs)

    def policy(obs: dict[str, np.ndarray]) -> dict[str, Any]:
        return actions_to_dict(env, act(check(obs)))

    def many(observations: list[dict[str, np.ndarray]]) -> list[dict[str, Any]]:
        return [actions_to_dict(env, a) for a in act_many(np.stack([check(obs) for obs in observations]))]

    policy.built_for = describe(env)
    if act_many is not None:
        policy.many = many
    return policy


def render_episode(
    scenario: str, policy: Policy | None = None, seed: int = 0, **scenario_kwargs: Any
) -> list[np.ndarray]:
    """Frames (uint8 ``(700, 700, 3)`` each) of one mpe2 episode, the first after reset.

    ``policy`` maps the observation dict to the action dict; ``None`` samples random actions
    (seeded by ``seed``). Works headless (pygame draws to an off-screen surface). The env is not
    closed: mpe2's ``close`` calls ``pygame.quit()``, which would break other envs still rendering.
    """
    check_seed(seed)
    env = make_reference(scenario, render_mode="rgb_array", **scenario_kwargs)
    obs, _ = env.reset(seed=seed)
    for i, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(derived_seed(seed, i))
    frames = [env.render()]
    while env.agents:
        if policy is None:
            obs, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})
        else:
            obs, *_ = play(env, policy, obs)
        frames.append(env.render())
    return frames


def mixed_teams(adversaries: Policy, others: Policy) -> Policy:
    """One policy from two teams' policies: the agents named ``adversary_*`` (simple_tag's predators)
    take ``adversaries``' actions, every other agent ``others``'. For games: a trained team against
    another trained team (cross-play), or a random team in a trained team's place. A team that returns
    something other than an action dict, or no action for one of the agents it plays, is a ``ValueError``
    naming the team and the agent. When both teams carry ``many`` (:func:`policy_from_arrays`), so does the mixed
    policy: two trained teams' episodes are played side by side too."""
    teams = {"adversaries": adversaries, "others": others}
    for name, team in teams.items():
        if not callable(team):
            raise ValueError(f"mixed_teams: {name} must be a policy, a function from the observation dict to the "
                             f"action dict; got {type(team).__name__}")

    def policy(obs: dict[str, np.ndarray]) -> dict[str, Any]:
        return mix(obs, {name: team(obs) for name, team in teams.items()})

    def many(observations: list[dict[str, np.ndarray]]) -> list[dict[str, Any]]:
        chosen = {name: team.many(observations) for name, team in teams.items()}
        return [mix(obs, {name: chosen[name][k] for name in teams}) for k, obs in enumerate(observations)]

    def mix(obs: dict[str, np.ndarray], actions: dict[str, Any]) -> dict[str, Any]:
        for name, returned in actions.items():
            if not isinstance(returned, dict):
                raise ValueError(f"mixed_teams: the {name} team's policy must return a dict of actions; got "
                                 f"{type(returned).__name__}")
        mixed = {}
        for agent in obs:
            name = "adversaries" if agent.startswith("adversary") else "others"
            if agent not in actions[name]:
                raise ValueError(f"mixed_teams: the {name} team's policy returned no action for {agent}, which it "
                                 f"plays; it returned actions for {sorted(actions[name]) or 'no agent'}")
            mixed[agent] = actions[name][agent]
        return mixed

    if all(getattr(team, "many", None) is not None for team in teams.values()):
        policy.many = many
    return policy
