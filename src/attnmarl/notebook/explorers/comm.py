"""Chapter 11's measurements of limited sight on the actors of earlier chapters, and its explorer of who listens
to whom.

- :func:`sighted_agent` gives a trained full-sight MAPPO agent the sight radius rho, zero-shot: its entity
  actor then masks the entities it does not see (the same weights; :class:`attnmarl.nets.SightedEntityActor`);
- :func:`sight_cost` scores a shipped chapter 8 actor on mpe2 with full sight and with sight rho: the entity
  actor with its key mask, the flat actor on zeroed features (it was trained without flags, so
  :func:`attnmarl.envs.sighted_policy` is all it can be shown).

Measured with the shipped seed-0 actors of ``pi-spread6-*`` (simple_spread m = 6, 200 episodes, greedy
actions; share of the random -39.0 -> greedy -14.2 range): the entity actor scores -15.98 (92.8%) with full
sight and, masked, -16.24 (91.8%) at rho = 1.0, -18.56 (82.4%) at 0.75, -23.32 (63.2%) at 0.5 and -32.60
(25.8%) at 0.25; shown the zeros without the mask at rho = 1.0 it scores -26.26 (51.4%), since a zeroed
landmark token reads as a landmark at its own position. The flat actor scores -30.25 (35.3%) with full sight
and -28.98 (40.4%) on zeroed features at rho = 1.0.

- :func:`sight_runs` lists the shipped runs of one design at one m and radius: chapters 8 and 10's actors under
  sight, and the communicating actor without messages, with averaged messages and with targeted ones.
- :func:`listening_profile` averages a trained actor's alpha over the pairs (receiver, another sender) of many
  episodes, by how many landmarks the sender sees and by how far it is from the receiver.
- :func:`listening_episode` plays one mpe2 episode with a trained communicating actor and records, at every
  step and round, alpha^{ij}: how much receiver i takes from sender j's message; :func:`listening_explorer`
  steps through it with the receiver's sight radius drawn (for the playground's targeted-messages actor the page
  plays the episode itself, and the reader may move an entity at any step).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...algos.mappo import MAPPOAgent, MAPPOConfig, make_agent
from ...checkpoints import agent_policy, load_agent, load_policy, shipped_checkpoint, shipped_runs
from ...checks import check_index
from ...envs import evaluate
from ...envs.sight import SIGHT_RHO, check_rho, sighted_policy, visibility
from ..playground import COMM_ACTORS, comm_actor_weights, world_constants
from ..viz import Frame, Heatmap
from ..widgets import Dropdown, Explorer, PageModel, Slider
from .mpe import Episode, arena_panel, check_step, choice_label, record_episode, scenario_text, short_label
from .policy import NOTHING_MOVED, continue_episode, edit_controls, episode_page_data, moved_note, plays_in_playground

__all__ = ["sighted_agent", "sight_cost", "SIGHT_DESIGNS", "SHIPPED_SIGHT_MS", "SHIPPED_TWO_ROUND_MS",
           "DECISIVE_SEEDS", "shipped_seeds", "sight_config", "sight_runs",
           "Listening", "listening_episode", "listening_of", "listening_frame", "listening_page_data",
           "listening_explorer", "listening_profile",
           "DISTANCE_BINS", "SIGHT_DISC"]

SIGHT_DESIGNS = ("flat", "entity", "none", "mean", "attention", "mean-2rounds", "attention-2rounds")
"""Chapter 11's designs under limited sight: chapter 8's flat and entity actors (``sight-`` configs), and the
communicating actor without messages, with messages averaged (alpha uniform) and with targeted messages, one round
or two (``comm-`` configs)."""


SHIPPED_SIGHT_MS: dict[bool, tuple[int, ...]] = {False: (6,), True: (3, 6, 12)}
"""The team sizes at which every one-round design of :data:`SIGHT_DESIGNS` ships its runs, by radius: ``True``
for the narrow radius (0.5), ``False`` for rho = 1 (as :func:`sight_config`'s ``narrow``). rho = 1 hid nothing
the entity actor needed at m = 6, so the other team sizes were trained under the narrow radius only."""


SHIPPED_TWO_ROUND_MS: tuple[int, ...] = (6,)
"""The team sizes at which the two-round designs (``mean-2rounds``, ``attention-2rounds``) ship their runs, under
the narrow radius only."""


DECISIVE_SEEDS: dict[tuple[int, str], int] = {(6, "mean"): 10, (6, "attention"): 10,
                                               (6, "mean-2rounds"): 10, (6, "attention-2rounds"): 10,
                                               (3, "none"): 10, (3, "mean"): 10, (3, "attention"): 10}
"""How many seeds ship where chapter 11 trained more than three, by (m, design), under the narrow radius: averaged
and targeted messages at m = 6 with one round and with two, whose differences three seeds left unresolved, and the
three communicating designs at m = 3, where the book leans on their differences (the seed plan). Every other run
ships seeds 0-2."""


def shipped_seeds(m: int, design: str, narrow: bool = True) -> int:
    """How many seeds (0, 1, ...) ship for ``design`` at m under the narrow radius (or rho = 1 with
    ``narrow=False``): :data:`DECISIVE_SEEDS` where it names the point, otherwise 3."""
    return DECISIVE_SEEDS.get((m, design), 3) if narrow else 3


def sight_config(m: int, design: str, narrow: bool = True) -> str:
    """The name of the config of ``design`` (:data:`SIGHT_DESIGNS`) at m under limited sight: the narrow radius
    :data:`attnmarl.envs.sight.NARROW_SIGHT_RHO` (0.5) or, with ``narrow=False``, :data:`SIGHT_RHO` (1)."""
    if design not in SIGHT_DESIGNS:
        raise ValueError(f"design must be one of {SIGHT_DESIGNS}; got {design!r}")
    kind = "sight" if design in ("flat", "entity") else "comm"
    return f"{kind}-{'narrow-' if narrow else ''}spread{m}-{design}"


def sight_runs(m: int, design: str, narrow: bool = True) -> list[dict]:
    """The shipped runs (every seed) of ``design`` at m under the narrow radius (or rho = 1 with
    ``narrow=False``), as the ``comm`` asset index lists them; ``ValueError`` if none are shipped."""
    name = sight_config(m, design, narrow)
    runs = shipped_runs("comm", name)
    if not runs:
        shipped = sorted({r["name"] for r in shipped_runs("comm")})
        raise ValueError(f"no shipped runs of {name}; chapter 11 ships {shipped}")
    return runs

SIGHT_DISC = "#e8eef6"
"""The fill of the disc that shows the receiver's sight radius in :func:`listening_frame`."""


def sighted_agent(path: str | Path, rho: float = SIGHT_RHO) -> tuple[MAPPOAgent, MAPPOConfig]:
    """The MAPPO agent of the checkpoint at ``path``, trained with full sight, rebuilt with sight radius ``rho``
    and its trained weights (in eval mode), and its config with ``sight_radius = rho``. Only an entity actor
    can: the sighted flat actor reads 2N − 1 flags more than the trained one (``ValueError``; use
    :func:`attnmarl.envs.sighted_policy` to show it zeroed features)."""
    agent, config = load_agent(path)
    if not isinstance(config, MAPPOConfig) or config.actor != "entity" or config.sight_radius is not None:
        raise ValueError(f"{path}: only a MAPPO entity actor trained with full sight can be given a sight radius "
                         "with its own weights (a flat actor would need the flags as inputs it never had)")
    sighted_config = replace(config, sight_radius=check_rho(rho))
    sighted = make_agent(sighted_config)
    sighted.load_state_dict(agent.state_dict())
    return sighted.eval(), sighted_config


def sight_cost(name: str = "pi-spread6-entity", rho: float = SIGHT_RHO, episodes: int = 200,
               folder: str = "policy", seed: int = 0) -> dict[str, tuple[float, float]]:
    """Mean per-agent mpe2 return ± sem of a shipped full-sight actor with full sight (``"full"``) and under
    sight ``rho``: ``"zeros"`` (the observations zeroed, no flags) for every actor, and ``"masked"`` (the
    unseen tokens masked) for an entity actor."""
    path = shipped_checkpoint(folder, name, seed)
    _, config = load_agent(path)
    policy = load_policy(path)
    scores = {"full": evaluate(policy, config.scenario, episodes, **config.scenario_kwargs),
              "zeros": evaluate(sighted_policy(policy, rho), config.scenario, episodes, **config.scenario_kwargs)}
    if config.actor == "entity":
        sighted, sighted_config = sighted_agent(path, rho)
        scores["masked"] = evaluate(agent_policy(sighted, sighted_config), config.scenario, episodes,
                                    **config.scenario_kwargs)
    return scores


@dataclass(frozen=True)
class Listening:
    """A communicating actor along one recorded mpe2 episode, steps t = 0 … T."""

    episode: Episode
    alpha: np.ndarray
    """(T + 1, rounds, m, m) alpha^{ij} per step and round: row i (the receiver) over senders j, i included."""
    seen: np.ndarray
    """(T + 1, m, 2m − 1) which entities each agent sees at each step (landmarks, then the other agents)."""
    rho: float
    messages: str


def listening_episode(agent: MAPPOAgent, config: MAPPOConfig, seed: int = 0) -> Listening:
    """Play one mpe2 episode (reset with ``seed``) with ``agent``'s communicating actor, taking its most likely
    moves, and record its message weights and what each agent sees (:class:`Listening`). ``ValueError`` for an
    actor that sends no messages."""
    if not isinstance(config, MAPPOConfig) or config.actor != "comm" or config.messages == "none":
        raise ValueError("listening_episode needs a communicating actor (actor='comm', messages 'mean' or "
                         f"'attention'); this one is {getattr(config, 'actor', type(config).__name__)!r}"
                         + (" without messages" if getattr(config, "messages", "") == "none" else ""))
    policy = agent_policy(agent, config, deterministic=True)
    return listening_of(agent, config, record_episode(config.scenario, seed, policy, **config.scenario_kwargs))


def listening_of(agent: MAPPOAgent, config: MAPPOConfig, episode: Episode) -> Listening:
    """The communicating actor's message weights and its agents' sight along ``episode`` (:class:`Listening`)."""
    with torch.no_grad():
        _, alpha = agent.actor.outputs_and_alpha(torch.from_numpy(episode.obs).float())
    return Listening(episode, alpha.numpy(), visibility(episode.obs, config.sight_radius), config.sight_radius,
                     config.messages)


def listening_frame(listening: Listening, t: int = 0, receiver: int = 0, round_: int = 0) -> Frame:
    """Step ``t`` as receiver ``receiver`` hears round ``round_``: the arena with the receiver's sight radius as
    a disc, each agent ringed by alpha^{ij} / max_j alpha^{ij}, and the whole matrix alpha (receivers × senders)."""
    episode = listening.episode
    t = check_step(episode, t)
    m = len(episode.agents)
    receiver = check_index("receiver", receiver, m, "agent index")
    round_ = check_index("round", round_, listening.alpha.shape[1], "round")
    alpha = listening.alpha[t, round_]  # (m, m)
    arena = arena_panel(episode, t, focus=receiver)
    shown = np.flatnonzero(episode.visible[t])
    row = alpha[receiver]
    emphasis = np.zeros(len(shown))
    emphasis[:m] = row / row.max()  # agents come first among the entities
    xy = np.vstack([episode.positions[t, receiver][None], arena.xy])
    names = [short_label(a) for a in episode.agents]
    seen = listening.seen[t, receiver]
    arena = replace(arena, xy=xy, radius=[listening.rho, *arena.radius], colors=[SIGHT_DISC, *arena.colors],
                    labels=["", *arena.labels], emphasis=[0.0, *emphasis.tolist()], focus=arena.focus + 1,
                    title=f"t = {t}: rings = α of {names[receiver]} over senders")
    matrix = Heatmap(alpha, names, names, title=f"α, round {round_ + 1}: receiver i (row) over senders j",
                     xlabel="sender j", ylabel="receiver i", vmin=0.0, vmax=1.0)
    loudest = int(np.argmax(np.where(np.arange(m) == receiver, -1.0, row)))
    return Frame([arena, matrix],
                 caption=f"step {t} of {episode.steps}: {names[receiver]} sees {int(seen[:m].sum())} of {m} "
                         f"landmarks and {int(seen[m:].sum())} of {m - 1} agents within ρ = {listening.rho:g}; "
                         f"of the others it listens most to {names[loudest]} (α = {row[loudest]:.2f}; "
                         f"uniform would be {1 / m:.2f}) and keeps {row[receiver]:.2f} for itself")


def listening_page_data(agent: MAPPOAgent, config: MAPPOConfig, listening: Listening) -> dict[str, Any]:
    """What the page computes :func:`listening_frame` from (live.js, model ``listening``, with playground.js's world
    and communicating actor): the episode's start (:func:`~attnmarl.notebook.explorers.policy.episode_page_data`),
    simple_spread's constants, the actor's weights, its sight radius and the sight disc's fill."""
    episode = listening.episode
    entities = [choice_label(e) for e in episode.entities]
    return {**episode_page_data(episode, entities, entities[:len(episode.agents)]),
            "world": world_constants("messages"), "messages": listening.messages, "rho": listening.rho,
            "sight_disc": SIGHT_DISC, "comm": comm_actor_weights(agent.actor, int(config.scenario_kwargs["N"]))}


def listening_explorer(agent: MAPPOAgent, config: MAPPOConfig, seed: int = 0) -> Explorer:
    """Step through one mpe2 episode of a trained communicating actor: who listens to whom
    (:func:`listening_frame`). For the playground's targeted-messages actor
    (:data:`attnmarl.notebook.playground.COMM_ACTORS`) the page plays the episode itself (live.js's ``listening``),
    and the reader may also move an entity at any step, by dragging it or with the arrow keys, and watch the team go
    on from there (:func:`~attnmarl.notebook.explorers.policy.continue_episode`); other actors show precomputed
    frames."""
    recorded = listening_episode(agent, config, seed)
    episode = recorded.episode
    agents = [choice_label(a) for a in episode.agents]
    entities = [choice_label(e) for e in episode.entities]
    rounds = [str(r + 1) for r in range(recorded.alpha.shape[1])]

    @lru_cache(maxsize=16)
    def played(moved: str, x: float, y: float, at: int) -> Listening:
        if moved == NOTHING_MOVED:
            return recorded
        if moved not in entities:
            raise ValueError(f"moved must be one of {[NOTHING_MOVED, *entities]}; got {moved!r}")
        return listening_of(agent, config, continue_episode(agent, config, episode, entities.index(moved), (x, y), at))

    def frame(t: int = 0, receiver: str = agents[0], round_: str = "1", moved: str = NOTHING_MOVED, x: float = 0.0,
              y: float = 0.0, at: int = 0) -> Frame:
        shown = listening_frame(played(moved, x, y, at), t, agents.index(receiver), int(round_) - 1)
        if moved == NOTHING_MOVED:
            return shown
        label = short_label(episode.entities[entities.index(moved)])
        return replace(shown, caption=shown.caption + moved_note(label, x, y, at))

    controls = [Slider("t", list(range(episode.steps + 1)), default=0, label="step t"),
                Dropdown("receiver", agents, label="receiver i")]
    if len(rounds) > 1:
        controls.append(Dropdown("round_", rounds, default="1", label="round"))
    in_page = plays_in_playground(agent.actor, list(COMM_ACTORS.values()))
    page = PageModel("listening", lambda: listening_page_data(agent, config, recorded),
                     "the playground's communicating actor plays this episode here, in JavaScript, on its exported "
                     "weights, from the recorded start (held to PyTorch and mpe2 within 1e-5 by the book's tests).",
                     scripts=("playground.js",))
    return Explorer(frame, controls + (edit_controls(episode, entities) if in_page else []),
                    title=f"Who listens to whom: {recorded.messages} messages over one mpe2 episode "
                          f"({scenario_text(config.scenario, config.scenario_kwargs)}, seed {seed}, "
                          f"sight ρ = {recorded.rho:g}); ring opacity = α / max α"
                          + ("; drag an entity to move it at that step" if in_page else ""),
                    page=page if in_page else None)


DISTANCE_BINS = (0.0, 0.5, 1.0, 1.5, np.inf)
"""The edges of :func:`listening_profile`'s distance bins, world units (the arena is [-1, 1]^2 at reset)."""


def listening_profile(agent: MAPPOAgent, config: MAPPOConfig, episodes: int = 30, seed: int = 1000,
                      round_: int = 0) -> dict[str, np.ndarray]:
    """Whom a trained communicating actor listens to, over ``episodes`` mpe2 episodes (resets ``seed``, …) of
    :func:`listening_episode`: alpha^{ij} of round ``round_`` over every step and every pair of a receiver i and
    another sender j, averaged by the number of landmarks j sees (``by_seen[k]``, k = 0 … m; NaN where no pair had
    k) and by the distance |p^j − p^i| in :data:`DISTANCE_BINS` (``by_distance``), with ``self`` (the mean
    alpha^{ii}), ``count_seen`` and ``count_distance`` (pairs in each group). Uniform weights give 1/m everywhere."""
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1; got {episodes}")
    alpha, seen, distance, own = [], [], [], []
    for k in range(episodes):
        listening = listening_episode(agent, config, seed + k)
        m = listening.alpha.shape[-1]
        if not 0 <= round_ < listening.alpha.shape[1]:
            raise ValueError(f"round_ must be in [0, {listening.alpha.shape[1]}); got {round_}")
        a = listening.alpha[:, round_]  # (T + 1, m, m)
        others = ~np.eye(m, dtype=bool)
        p = listening.episode.positions[:, :m]  # agents come first among the entities
        d = np.linalg.norm(p[:, None] - p[:, :, None], axis=-1)  # d[t, i, j] = |p^j - p^i|
        landmarks = np.broadcast_to(listening.seen[:, None, :, :m].sum(-1), a.shape)  # [t, i, j]: j sees
        alpha.append(a[:, others])
        seen.append(landmarks[:, others])
        distance.append(d[:, others])
        own.append(a[:, ~others])
    alpha_, seen_, distance_ = (np.concatenate(x).ravel() for x in (alpha, seen, distance))
    bins = np.digitize(distance_, DISTANCE_BINS[1:-1])
    count_seen = np.bincount(seen_.astype(int), minlength=m + 1)
    count_distance = np.bincount(bins, minlength=len(DISTANCE_BINS) - 1)
    with np.errstate(invalid="ignore"):
        by_seen = np.bincount(seen_.astype(int), alpha_, minlength=m + 1) / count_seen
        by_distance = np.bincount(bins, alpha_, minlength=len(DISTANCE_BINS) - 1) / count_distance
    return {"by_seen": by_seen, "by_distance": by_distance, "self": float(np.concatenate(own).mean()),
            "count_seen": count_seen, "count_distance": count_distance}
