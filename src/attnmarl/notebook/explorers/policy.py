"""The policy-network chapter's shipped results, measurements and explorers: what a trained attention
policy attends to when it decides.

- :func:`policy_runs`, :func:`policy_curve`, :func:`policy_checkpoint` read the trained agents and
  learning curves shipped in ``attnmarl/assets/policy`` (made by ``python -m attnmarl.train``);
- :func:`policy_alpha` runs a trained attention policy on every step of an mpe2 episode and returns
  alpha as "agent i attends to entity e" (entities in mpe2's ``world.entities`` order), for the
  entity actor (keys: itself, every landmark, every other agent) and for the centralized attention
  policy (keys: the m agents' encoded observations);
- :func:`action_probabilities` gives pi^i over the five moves;
- :func:`entity_attention_statistics` measures over episodes where the entity actor's weight goes:
  to landmarks or agents, to the landmark the agent is nearest, to the one it ends up covering, and
  whether the agents' most-attended landmarks are distinct (do they split the landmarks?);
- :func:`policy_episode_explorer` steps through an episode with rings of alpha on the arena (for the playground's
  entity actor the page plays the episode itself, and the reader may move an entity at any step:
  :func:`continue_episode`); :func:`policy_probe_explorer` freezes a state and lets the reader move a landmark or an
  agent.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...algos.mappo import MAPPOAgent, MAPPOConfig
from ...checkpoints import ASSETS, load_agent, shipped_checkpoint, shipped_curve, shipped_runs
from ...checks import check_episodes, check_index
from ...envs import BatchedEnv, make_reference
from ...nets import AttentionPolicy, EntityActor
from ..playground import ENTITY_ACTOR, entity_actor_weights, world_constants
from ..viz import Frame, Heatmap, frame_spec
from ..widgets import Control, Dropdown, Explorer, PageModel, Range, Slider
from .mpe import Episode, arena_panel, check_step, choice_label, scenario_text, short_label
from .value import check_drag, drag_lim, freeze_state, head_names, select_head, trained_episode

__all__ = ["POLICY_ASSETS", "MOVES", "NOTHING_MOVED", "policy_runs", "policy_curve", "policy_checkpoint", "PolicyAlpha",
           "ranked_entities", "policy_alpha", "action_probabilities", "entity_attention_statistics",
           "policy_episode_frame", "continue_episode", "moved_note", "plays_in_playground", "episode_page_data",
           "edit_controls", "policy_episode_page_data", "policy_episode_explorer", "PolicyProbe", "make_policy_probe",
           "policy_probe_frame", "policy_probe_explorer"]

POLICY_ASSETS = ASSETS / "policy"
"""Where the trained policy-network agents and their learning curves are shipped."""

MOVES = ("stay", "left", "right", "down", "up")
"""mpe2's five discrete moves, in action order (``attnmarl.envs.actions.DISCRETE_DIRECTION``)."""

NOTHING_MOVED = "nothing"
"""The episode explorers' "move" choice that leaves the recorded episode as it was."""


def policy_runs() -> list[dict[str, Any]]:
    """Every shipped run of the policy chapter (:func:`attnmarl.checkpoints.shipped_runs`)."""
    return shipped_runs("policy")


def policy_curve(name: str, seed: int) -> dict[str, np.ndarray]:
    """The learning curve of one shipped run (:func:`attnmarl.checkpoints.shipped_curve`)."""
    return shipped_curve("policy", name, seed)


def policy_checkpoint(name: str, seed: int = 0) -> Path:
    """Path of a shipped checkpoint (:func:`attnmarl.checkpoints.shipped_checkpoint`)."""
    return shipped_checkpoint("policy", name, seed)


@dataclass(frozen=True)
class PolicyAlpha:
    """alpha of a trained attention policy over a batch of states, as agent x entity.

    ``alpha`` is (S, l, m, n_entities): row (i) of head h holds how much agent i's decision attends
    to each entity of mpe2's ``world.entities`` (agents first, then landmarks); columns that are not
    keys of this policy are 0. ``keys`` lists the entity indices that are keys: every entity for the
    entity actor (agent i's own column is its self token), the m agents for the centralized policy.
    """

    alpha: np.ndarray
    keys: tuple[int, ...]
    entities: tuple[str, ...]

    @property
    def key_labels(self) -> list[str]:
        return [short_label(self.entities[k]) for k in self.keys]


@lru_cache(maxsize=32)
def _entity_names(scenario: str, kwargs: tuple[tuple[str, Any], ...]) -> tuple[str, ...]:
    """mpe2's ``world.entities`` names (agents, then landmarks), built once per scenario and arguments:
    the probe asks for them on every frame."""
    env = make_reference(scenario, **dict(kwargs))
    return tuple(e.name for e in env.unwrapped.world.entities)


def _check_discrete(agent: MAPPOAgent) -> None:
    if agent.continuous:
        raise ValueError("this needs a discrete policy (pi over moves); this agent has continuous actions")


def ranked_entities(episode: Episode, t: int, i: int) -> list[int]:
    """The entity (an index into ``world.entities``) behind each of agent i's collect_treasure tokens at
    step t: itself, then the other agents nearest first, then the live treasures nearest first and the
    collected ones last, sorted exactly as mpe2's ``observation`` sorts them (Python's stable sort on
    the same distances), from the positions the episode recorded."""
    position, n_agents = episode.positions[t], len(episode.agents)

    def distance(j: int) -> float:
        return float(np.sqrt(np.sum(np.square(position[j] - position[i]))))

    others = sorted((j for j in range(n_agents) if j != i), key=distance)
    treasures = sorted(range(n_agents, len(position)), key=lambda k: distance(k) if episode.visible[t, k] else 1e6)
    return [i, *others, *treasures]


def policy_alpha(agent: MAPPOAgent, config: MAPPOConfig, obs: np.ndarray,
                 episode: Episode | None = None) -> PolicyAlpha:
    """alpha of the agent's attention policy on observations ``obs`` (S, m, obs_dim), e.g. an
    episode's ``obs``, spread over the world's entities. collect_treasure's tokens are ranked by
    distance, not named, so there the recorded ``episode`` that ``obs`` comes from says which entity
    each token is (:func:`ranked_entities`). Raises ``ValueError`` for a policy without attention."""
    entities = _entity_names(config.scenario, tuple(sorted(config.scenario_kwargs.items())))
    o = torch.as_tensor(np.asarray(obs, dtype=np.float32))
    with torch.no_grad():
        if isinstance(agent.actor, EntityActor):
            _, alpha = agent.actor.outputs_and_alpha(o)  # (S, m, l, n_tokens)
            if isinstance(alpha, list):
                raise ValueError("agents of different types see different numbers of entities")
            S, m, l, _ = alpha.shape
            out = np.zeros((S, l, m, len(entities)))
            ranked = any(name.startswith("nearest_") for name in agent.actor.token_names[0])
            if ranked and (episode is None or episode.obs.shape[0] != S or not np.array_equal(episode.obs, obs)):
                raise ValueError(f"{config.scenario}'s tokens are ranked by distance: pass the recorded episode "
                                 "whose observations these are, to tell which entity each token is")
            for i, names in enumerate(agent.actor.token_names):
                if ranked:
                    for t in range(S):
                        out[t, :, i][:, ranked_entities(episode, t, i)] = alpha[t, i].numpy()
                else:
                    out[:, :, i, [entities.index(n) for n in names]] = alpha[:, i].numpy()
            return PolicyAlpha(out, tuple(range(len(entities))), entities)
        if isinstance(agent.actor, AttentionPolicy):
            alpha = agent.actor.outputs_and_alpha(o)[1][0].numpy()  # (S, l, m, m)
            out = np.zeros(alpha.shape[:-1] + (len(entities),))
            out[..., : alpha.shape[-1]] = alpha  # mpe2 lists the agents first among the entities
            return PolicyAlpha(out, tuple(range(alpha.shape[-1])), entities)
    raise ValueError(f"alpha needs an attention policy; this agent has a {type(agent.actor).__name__}")


def action_probabilities(agent: MAPPOAgent, obs: np.ndarray) -> np.ndarray:
    """pi^i(a | .) of every agent on observations (S, m, obs_dim): (S, m, 5), rows sum to 1."""
    _check_discrete(agent)
    with torch.no_grad():
        return torch.softmax(agent.actor(torch.as_tensor(np.asarray(obs, dtype=np.float32))), -1).numpy()


def entity_attention_statistics(agent: MAPPOAgent, config: MAPPOConfig, episodes: int = 20) -> dict[str, float]:
    """Where a trained entity actor puts its weight in simple_spread, over every step of ``episodes``
    mpe2 episodes (seeds 0, 1, ...) played greedily by the agent itself. Averages over steps, agents
    and heads (``uniform_*`` give the same numbers for weights spread evenly over the tokens):

    - ``on_landmarks`` / ``on_agents`` / ``on_self``: the share of alpha on each kind of entity;
    - ``nearest_landmark``: alpha on the landmark nearest to the agent at that step;
    - ``final_landmark``: alpha on the landmark the agent is nearest to at the end of the episode
      (the one it ends up covering);
    - ``final_is_top``: how often the most-attended landmark (mean of heads) is that final one;
    - ``distinct_top``: how often the m agents' most-attended landmarks are all different at a step
      (``chance_distinct``: the same for landmarks drawn independently and uniformly);
    - ``distinct_final``: how often the agents end the episode on m different landmarks.
    """
    if config.scenario != "simple_spread" or not isinstance(agent.actor, EntityActor):
        raise ValueError("these statistics are defined for the entity actor on simple_spread")
    check_episodes("episodes", episodes)  # 0 gave NaN statistics
    parts: dict[str, list[float]] = {k: [] for k in ("on_landmarks", "on_agents", "on_self", "nearest_landmark",
                                                     "final_landmark", "final_is_top", "distinct_top",
                                                     "distinct_final")}
    m = config.scenario_kwargs.get("N", 3)
    for seed in range(episodes):
        episode = trained_episode(agent, config, seed)
        weights = policy_alpha(agent, config, episode.obs).alpha  # (S, l, m, 2m): agents, then landmarks
        mean = weights.mean(1)  # (S, m, 2m)
        p = episode.positions  # (S, 2m, 2)
        dist = np.linalg.norm(p[:, :m, None] - p[:, None, m:], axis=-1)  # (S, m agents, m landmarks)
        nearest, final = dist.argmin(-1), dist[-1].argmin(-1)  # (S, m), (m,)
        on_landmark = mean[..., m:]
        rows = np.arange(m)
        parts["on_landmarks"].append(on_landmark.sum(-1).mean())
        parts["on_self"].append(mean[:, rows, rows].mean())
        parts["on_agents"].append(mean[..., :m].sum(-1).mean() - mean[:, rows, rows].mean())
        parts["nearest_landmark"].append(np.take_along_axis(on_landmark, nearest[..., None], -1).mean())
        parts["final_landmark"].append(on_landmark[:, rows, final].mean())
        top = on_landmark.argmax(-1)  # (S, m)
        parts["final_is_top"].append((top == final).mean())
        parts["distinct_top"].append(np.mean([len(set(row)) == m for row in top]))
        parts["distinct_final"].append(float(len(set(final)) == m))
    n_tokens = 2 * m
    stats = {k: float(np.mean(v)) for k, v in parts.items()}
    stats.update(uniform_on_landmarks=m / n_tokens, uniform_on_agents=(m - 1) / n_tokens, uniform_on_self=1 / n_tokens,
                 uniform_one_landmark=1 / n_tokens, chance_distinct=_chance_distinct(m), chance_final_is_top=1 / m)
    return stats


def _chance_distinct(m: int) -> float:
    """P(m independent uniform picks among m landmarks are all different) = m! / m^m."""
    return float(np.prod(np.arange(1, m + 1) / m))


def _ring_emphasis(row: np.ndarray) -> np.ndarray:
    """Ring opacities for one agent's alpha over entities: alpha / max alpha (the strongest is opaque)."""
    top = row.max()
    return row / top if top > 0 else np.zeros_like(row)


def policy_episode_frame(episode: Episode, weights: PolicyAlpha, probs: np.ndarray, t: int = 0, agent: int = 0,
                         head: str = "mean") -> Frame:
    """Step ``t`` of an episode as agent ``agent``'s policy sees it: the arena with every entity
    ringed by its alpha (opacity alpha / max alpha), alpha per head, and every agent's pi over moves."""
    t = check_step(episode, t)
    agent = check_index("agent", agent, len(episode.agents), "agent index")
    alpha = weights.alpha[t]  # (l, m, n_entities)
    row = select_head(alpha, head)[agent]
    arena = arena_panel(episode, t, focus=agent)
    names = [short_label(a) for a in episode.agents]
    arena = replace(arena, emphasis=_ring_emphasis(row)[episode.visible[t]].tolist(),  # collected treasures are off
                    title=f"t = {t}: rings = α of {names[agent]}'s policy")
    keys = list(weights.keys)
    per_head = Heatmap(np.vstack([alpha[:, agent][:, keys], alpha.mean(0)[agent][keys]]),
                       [f"head {h + 1}" for h in range(alpha.shape[0])] + ["mean"], weights.key_labels,
                       title=f"α of {names[agent]}'s policy", xlabel="key: entity", ylabel="head")
    pi = Heatmap(probs[t], names, list(MOVES), title="πⁱ(a) of every agent", xlabel="move", ylabel="agent i",
                 vmin=0.0, vmax=1.0)
    strongest = weights.key_labels[int(np.argmax(row[keys]))]
    return Frame([arena, per_head, pi],
                 caption=f"step {t} of {episode.steps}: {names[agent]} attends most to {strongest} "
                         f"(α = {row.max():.2f}; uniform would be {1 / len(keys):.2f}) and moves "
                         f"{MOVES[int(probs[t, agent].argmax())]} (π = {probs[t, agent].max():.2f})")


def continue_episode(agent: MAPPOAgent, config: MAPPOConfig, episode: Episode, moved: int,
                     xy: tuple[float, float], at: int) -> Episode:
    """The recorded ``episode`` as it goes on when entity ``moved`` (an index into ``world.entities``: agents, then
    landmarks) is put at ``xy`` at step ``at``, an agent put there at rest (as the playground puts a dragged one):
    mpe2 replays the first ``at`` steps (:func:`freeze_state`), then the batched port, parity-tested against mpe2,
    plays on to the episode's last step with the agent's greedy actions. Positions, observations and rewards from
    step ``at`` on are the new ones."""
    at = check_step(episode, at)
    _, port = freeze_state(agent, config, episode.seed, at)
    m = port.n_agents
    moved = check_index("moved", moved, m + port.n_landmarks, "entity index")
    if moved < m:
        port.agent_pos[0, moved], port.agent_vel[0, moved] = check_drag(*xy), 0.0
    else:
        port.landmark_pos[0, moved - m] = check_drag(*xy)
    port.steps[:] = 0  # the port would start a new episode at max_cycles, overwriting the last step's positions
    positions, obs, rewards = [episode.positions[:at]], [episode.obs[:at]], [episode.rewards[:at + 1]]
    for step in range(at, episode.steps + 1):
        o = port.observe()
        positions.append(np.concatenate([port.agent_pos, port.landmark_pos], 1))
        obs.append(o)
        if step < episode.steps:
            with torch.no_grad():
                a, _ = agent.act(torch.from_numpy(o), deterministic=True)
            rewards.append(port.step(agent.env_actions(a))[1])
    return replace(episode, positions=np.concatenate(positions), obs=np.concatenate(obs),
                   rewards=np.concatenate(rewards))


def moved_note(label: str, x: float, y: float, at: int) -> str:
    """What an episode explorer's caption adds while an entity is moved (live.js's ``movedNote``)."""
    return f"; {label} put at ({x:+.2f}, {y:+.2f}) at step {at}"


def edit_controls(episode: Episode, entities: list[str]) -> list[Control]:
    """The controls of an in-page episode explorer that move an entity: which (one of ``entities``, or
    :data:`NOTHING_MOVED`), where, and at which step; dragging an entity in the arena sets all four."""
    return [Dropdown("moved", [NOTHING_MOVED, *entities], default=NOTHING_MOVED, label="move"),
            Range("x", -1.5, 1.5, 0.01, default=0.0, label="to x"),
            Range("y", -1.5, 1.5, 0.01, default=0.0, label="y"),
            Slider("at", list(range(episode.steps + 1)), default=0, label="at step")]


@lru_cache(maxsize=8)
def _shipped_actor_state(run: tuple[str, str, int]) -> dict[str, torch.Tensor]:
    """The actor's weights of a shipped run (folder, name, seed), loaded once."""
    return load_agent(shipped_checkpoint(*run[:2], seed=run[2]))[0].actor.state_dict()


def plays_in_playground(actor: torch.nn.Module, runs: list[tuple[str, str, int]]) -> bool:
    """Whether ``actor`` holds exactly the weights of one of the playground's shipped ``runs``: then a chapter that
    shows the playground already carries the code that runs it, and its episode explorer runs it in the page too."""
    state = actor.state_dict()
    return any(state.keys() == shipped.keys() and all(torch.equal(state[k], shipped[k]) for k in state)
               for shipped in map(_shipped_actor_state, runs))


def episode_page_data(episode: Episode, choices: list[str], agents: list[str]) -> dict[str, Any]:
    """What every in-page episode explorer (live.js's ``episodeRun``) starts from: the recorded episode's first
    positions (the agents at rest, as mpe2 resets them), its length, the arena's drawing at step 0 and the menus'
    choices (``choices``: every entity; ``agents``: the agents)."""
    m = len(episode.agents)
    if np.any(episode.obs[0, :, :2]):
        raise ValueError("the page starts every agent at rest, as mpe2 resets simple_spread")
    return {"pos": episode.positions[0, :m].tolist(), "landmarks": episode.positions[0, m:].tolist(),
            "steps": episode.steps, "arena": frame_spec(Frame([arena_panel(episode, 0)]), digits=12)["panels"][0],
            "choices": choices, "agents": agents}


def policy_episode_page_data(agent: MAPPOAgent, config: MAPPOConfig, episode: Episode) -> dict[str, Any]:
    """What the page computes :func:`policy_episode_frame` from (live.js, model ``policyEpisode``, with playground.js's
    world and entity actor): the episode's start (:func:`episode_page_data`), simple_spread's constants and the
    actor's weights."""
    entities = [choice_label(e) for e in episode.entities]
    return {**episode_page_data(episode, entities, entities[:len(episode.agents)]),
            "world": world_constants("simple_spread"), "moves": list(MOVES),
            "entity": entity_actor_weights(agent.actor, int(config.scenario_kwargs["N"]))}


def policy_episode_explorer(agent: MAPPOAgent, config: MAPPOConfig, seed: int = 0,
                            ring_heads: bool = True) -> Explorer:
    """Step through one mpe2 episode of a trained attention policy and watch each agent's alpha. With
    ``ring_heads`` a menu chooses whose alpha the rings draw (the mean over heads or one head); without it the
    rings draw the mean and the heatmap beside them each head: a third of the frames, which is what a page can
    carry for a team of 12 (chapter 10).

    For the entity actor the playground runs (:data:`attnmarl.notebook.playground.ENTITY_ACTOR`) the page plays the
    episode itself (live.js's ``policyEpisode``): the reader may also move an entity at any step, by dragging it or
    with the arrow keys, and watch the team go on from there (:func:`continue_episode`). Other actors show frames
    precomputed when the book is built."""
    _check_discrete(agent)
    episode = trained_episode(agent, config, seed)
    recorded = (episode, policy_alpha(agent, config, episode.obs, episode), action_probabilities(agent, episode.obs))
    heads = head_names(recorded[1].alpha.shape[1])
    agents = [choice_label(a) for a in episode.agents]
    entities = [choice_label(e) for e in episode.entities]

    @lru_cache(maxsize=16)
    def played(moved: str, x: float, y: float, at: int) -> tuple[Episode, PolicyAlpha, np.ndarray]:
        if moved == NOTHING_MOVED:
            return recorded
        if moved not in entities:
            raise ValueError(f"moved must be one of {[NOTHING_MOVED, *entities]}; got {moved!r}")
        edited = continue_episode(agent, config, episode, entities.index(moved), (x, y), at)
        return edited, policy_alpha(agent, config, edited.obs, edited), action_probabilities(agent, edited.obs)

    def frame(t: int = 0, agent_index: str = agents[0], head: str = "mean", moved: str = NOTHING_MOVED,
              x: float = 0.0, y: float = 0.0, at: int = 0) -> Frame:
        shown = policy_episode_frame(*played(moved, x, y, at), t, agents.index(agent_index), head)
        if moved == NOTHING_MOVED:
            return shown
        label = short_label(episode.entities[entities.index(moved)])
        return replace(shown, caption=shown.caption + moved_note(label, x, y, at))

    controls = [Slider("t", list(range(episode.steps + 1)), default=0, label="step t"),
                Dropdown("agent_index", agents, label="agent i (who decides)")]
    if ring_heads:
        controls.append(Dropdown("head", heads, default="mean", label="head"))
    in_page = (config.scenario == "simple_spread" and isinstance(agent.actor, EntityActor)
               and plays_in_playground(agent.actor, [ENTITY_ACTOR]))
    page = PageModel("policyEpisode", lambda: policy_episode_page_data(agent, config, episode),
                     "the playground's entity actor plays this episode here, in JavaScript, on its exported weights, "
                     "from the recorded start (held to PyTorch and mpe2 within 1e-5 by the book's tests).",
                     scripts=("playground.js",))
    rings = "α / max α" if ring_heads else "mean α over heads / its max"
    return Explorer(frame, controls + (edit_controls(episode, entities) if in_page else []),
                    title=f"α of the {config.actor} policy over one mpe2 episode "
                          f"({scenario_text(config.scenario, config.scenario_kwargs)}, seed {seed}); "
                          f"ring opacity = {rings}" + ("; drag an entity to move it at that step" if in_page else ""),
                    page=page if in_page else None)


@dataclass(frozen=True)
class PolicyProbe:
    """One frozen mpe2 state for the policy probe: the episode it comes from, the step ``t``, and a
    one-environment batched port holding that state (its ``observe`` recomputes every observation
    after an entity has been moved)."""

    agent: MAPPOAgent
    config: MAPPOConfig
    episode: Episode
    t: int
    port: BatchedEnv

    def run(self, moved: int, xy: tuple[float, float] | None) -> tuple[PolicyAlpha, np.ndarray]:
        """Move entity ``moved`` (an index into ``world.entities``: agents, then landmarks) to ``xy``
        (None: leave it), recompute the observations and run the policy: alpha and pi (1, m, 5)."""
        port = self.port
        moved = check_index("moved", moved, port.n_agents + port.n_landmarks, "entity index")
        xy = None if xy is None else check_drag(*xy)
        positions = port.agent_pos if moved < port.n_agents else port.landmark_pos
        k = moved if moved < port.n_agents else moved - port.n_agents
        saved = positions[0, k].copy()
        try:
            if xy is not None:
                positions[0, k] = xy
            obs = port.observe()
        finally:
            positions[0, k] = saved
        return policy_alpha(self.agent, self.config, obs), action_probabilities(self.agent, obs)

    @cached_property
    def true_probabilities(self) -> np.ndarray:
        """pi (m, 5) in the frozen state itself, computed once: every probe frame compares with it."""
        return self.run(0, None)[1][0]


def make_policy_probe(agent: MAPPOAgent, config: MAPPOConfig, seed: int = 0, t: int = 5) -> PolicyProbe:
    """Play mpe2 (reset with ``seed``) for ``t`` steps with the agent's greedy policy and freeze the
    state: it is copied into a one-environment port with :meth:`BatchedEnv.load_state`. An entity actor whose
    tokens are ranked by distance (collect_treasure's) is refused: moving an entity reorders its tokens, so alpha
    could not be told entity by entity."""
    _check_discrete(agent)
    if isinstance(agent.actor, EntityActor) and any(name.startswith("nearest_") for name in agent.actor.token_names[0]):
        raise ValueError(f"the policy probe moves an entity and reads alpha entity by entity, but {config.scenario}'s "
                         "tokens are ranked by distance (nearest first), so a moved entity changes which token is "
                         "which; step through a recorded episode with policy_episode_explorer(agent, config) instead")
    episode, port = freeze_state(agent, config, seed, t)
    return PolicyProbe(agent, config, episode, t, port)


def policy_probe_frame(probe: PolicyProbe, moved: int = 0, x: float = 0.0, y: float = 0.0, query: int = 0) -> Frame:
    """The frozen state with entity ``moved`` at (x, y): the arena ringed by the alpha of agent
    ``query`` (mean of heads), every agent's alpha over the entities, and every agent's pi over moves."""
    m = probe.port.n_agents
    query = check_index("query", query, m, "agent index")
    x, y = check_drag(x, y)
    weights, probs = probe.run(moved, (x, y))
    alpha = weights.alpha[0].mean(0)  # (m, n_entities)
    arena = arena_panel(probe.episode, probe.t, focus=query)
    labels = list(arena.labels)
    xy = arena.xy.copy()
    xy[moved] = (x, y)
    arena = replace(arena, xy=xy, emphasis=_ring_emphasis(alpha[query]).tolist(), lim=drag_lim(arena.lim, x, y),
                    title=f"{labels[moved]} moved; rings = α of {labels[query]}")
    keys = list(weights.keys)
    agents = labels[:m]
    matrix = Heatmap(alpha[:, keys], agents, weights.key_labels, title="α, mean of heads", xlabel="key: entity",
                     ylabel="agent i (query)")
    pi = Heatmap(probs[0], agents, list(MOVES), title="πⁱ(a)", xlabel="move", ylabel="agent i", vmin=0.0, vmax=1.0)
    before = probe.true_probabilities
    changed = [f"{agents[i]}: {MOVES[int(before[i].argmax())]} → {MOVES[int(probs[0, i].argmax())]}"
               for i in range(m) if before[i].argmax() != probs[0, i].argmax()]
    true_x, true_y = probe.episode.positions[probe.t, moved]
    return Frame([arena, matrix, pi],
                 caption=f"{labels[moved]} at ({x:+.2f}, {y:+.2f}); it really stood at ({true_x:+.2f}, "
                         f"{true_y:+.2f}). Most likely moves that changed: {', '.join(changed) or 'none'}")


def policy_probe_page_data(probe: PolicyProbe) -> dict[str, Any]:
    """What the page computes :func:`policy_probe_frame` from (``static/live.js``, model ``policyProbe``, with
    playground.js's entity actor): the frozen state, the actor's weights, which entity each agent's tokens are,
    the arena at step ``t`` and the names. Only an egocentric simple_spread entity actor (chapter 8's)."""
    actor, port = probe.agent.actor, probe.port
    if probe.config.scenario != "simple_spread" or not isinstance(actor, EntityActor):
        raise ValueError("the in-page policy probe runs chapter 8's simple_spread entity actor; got a "
                         f"{type(actor).__name__} on {probe.config.scenario}")
    weights = probe.run(0, None)[0]
    entities = list(weights.entities)
    return {
        "entity": entity_actor_weights(actor, int(probe.config.scenario_kwargs["N"])),
        "vel": port.agent_vel[0].tolist(), "pos": port.agent_pos[0].tolist(),
        "landmarks": port.landmark_pos[0].tolist(), "obs_dim": int(port.obs_dim),
        "token_entities": [[entities.index(name) for name in names] for names in actor.token_names],
        "keys": list(weights.keys), "key_labels": list(weights.key_labels), "moves": list(MOVES),
        "arena": frame_spec(Frame([arena_panel(probe.episode, probe.t)]), digits=12)["panels"][0],
        "choices": [choice_label(e) for e in probe.episode.entities],
        "true_xy": probe.episode.positions[probe.t].tolist(),
    }


def policy_probe_explorer(agent: MAPPOAgent, config: MAPPOConfig, seed: int = 0, t: int = 5) -> Explorer:
    """Freeze an mpe2 state (:func:`make_policy_probe`), move a landmark or an agent over the arena and
    watch every agent's alpha and pi. Positions run over [-1, 1] in steps of 0.01; for chapter 8's entity actor
    the page of the built book runs the actor itself (:func:`policy_probe_page_data`), for other policies it
    shows frames precomputed on a 0.25 grid."""
    probe = make_policy_probe(agent, config, seed, t)
    policy_alpha(agent, config, probe.episode.obs[:1])  # refuse a policy without attention now, not on first draw
    entities = [choice_label(e) for e in probe.episode.entities]  # mpe2's entities: agents, then landmarks
    agents = entities[: probe.port.n_agents]
    static = [round(float(v), 2) for v in np.linspace(-1.0, 1.0, 9)]
    landmark = probe.port.n_agents  # the first landmark is moved by default
    nearest = [min(static, key=lambda v: abs(v - c)) for c in probe.episode.positions[t, landmark]]

    def frame(moved: str = entities[landmark], x: float = nearest[0], y: float = nearest[1],
              query: str = agents[0]) -> Frame:
        return policy_probe_frame(probe, entities.index(moved), x, y, agents.index(query))

    in_page = (config.scenario == "simple_spread" and isinstance(agent.actor, EntityActor)
               and agent.actor.frame == "egocentric" and agent.actor.mixing == "attention")
    page = PageModel("policyProbe", lambda: policy_probe_page_data(probe),
                     "the trained entity actor runs here, in JavaScript, on its exported weights, and the observations "
                     "are recomputed for every position (held to PyTorch within 1e-5 by the book's tests).",
                     scripts=("playground.js",))
    return Explorer(frame, [
        Dropdown("moved", entities, default=entities[landmark], label="move"),
        Range("x", -1.0, 1.0, 0.01, default=nearest[0], label="x", static=static),
        Range("y", -1.0, 1.0, 0.01, default=nearest[1], label="y", static=static),
        Dropdown("query", agents, label="rings for agent"),
    ], title=f"Policy probe: move a landmark or an agent, watch α and π "
             f"({scenario_text(config.scenario, config.scenario_kwargs)}, mpe2 seed {seed}, step {t})",
        page=page if in_page else None)

