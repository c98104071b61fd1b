"""Chapter 11's value decomposition, for its explorers: which agents a trained Qatten mixer
credits along an mpe2 episode, and whether a trained mixer's Q_tot is the team's value at all.

:func:`credit_episode` plays one episode with the team's greedy decentralized agents
(a^i = argmax_a Q^i(o^i, a)) and runs the mixer on every step: each agent's value of its action,
the team's Q_tot and, for a Qatten mixer, lambda^{i,h}, the weight head h gives agent i's value.
:func:`credit_explorer` steps through it. :func:`calibration` sets the mixer's Q_tot at the start of greedy
episodes beside the discounted team return those episodes earned, and measures the mixer's gain dQ_tot / dQ^i.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from ...algos.qmix import QMIXAgent, QMIXConfig, chosen_values
from ...checkpoints import agent_policy, shipped_runs
from ...nets.mixers import Qatten
from ..viz import Frame, Heatmap
from ..widgets import Explorer, Slider
from .mpe import Episode, arena_panel, check_step, record_episode, scenario_text, short_label

__all__ = ["MIX_MS", "SHIPPED_MIX_MS", "MIX_CONTROL_MS", "MIX_SEEDS", "mix_seeds", "mix_runs", "Credit",
           "credit_episode", "credit_frame", "credit_explorer", "Calibration", "episode_target", "calibration"]


MIX_MS = (3, 6, 12)
"""The team sizes of chapter 11's ``qmix-spread{m}-{mixer}`` runs."""

SHIPPED_MIX_MS = (3, 6, 12)
"""The team sizes at which all three mixers ship their runs."""

MIX_CONTROL_MS = (3,)
"""The team sizes at which Qatten's attention ablation ships (``qmix-spread{m}-qatten-uniform``: Qatten with its
lambda fixed at 1/m, chapter 11's exercise 3): where ten seeds resolve Qatten against VDN."""

MIX_SEEDS: dict[tuple[int, str], int] = {(3, "vdn"): 10, (3, "qatten"): 10, (3, "qatten-uniform"): 10}
"""Seeds shipped at the points (m, mixer) that carry a verdict (seeds 0 to n - 1); three at every other point."""


def mix_seeds(m: int, mixer: str) -> int:
    """The number of seeds shipped for ``mixer`` at m: :data:`MIX_SEEDS` where it names the point, otherwise 3."""
    return MIX_SEEDS.get((m, mixer), 3)


def mix_runs(m: int, mixer: str) -> list[dict]:
    """The shipped runs (every seed) of the ``mixer`` ("vdn", "qmix", "qatten" or Qatten's control "qatten-uniform")
    at m, as the ``mix`` asset index
    lists them; ``ValueError`` if none are shipped."""
    name = f"qmix-spread{m}-{mixer}"
    runs = shipped_runs("mix", name)
    if not runs:
        raise ValueError(f"no shipped runs of {name}; chapter 11 ships "
                         f"{sorted({r['name'] for r in shipped_runs('mix')})}")
    return runs


@dataclass(frozen=True)
class Credit:
    """The mixer along a recorded episode, steps t = 0 … T (as :class:`Episode` counts them)."""

    episode: Episode
    Q: np.ndarray
    """(T + 1, m) each agent's value Q^i(o^i, a^i) of the action it takes at step t."""
    Q_tot: np.ndarray
    """(T + 1,) the team's value of that joint action."""
    lambda_: np.ndarray | None
    """(T + 1, heads, m) Qatten's weights over the agents, per head; None for VDN and QMIX."""


def _check_mix_agent(what: str, agent: object, config: object) -> None:
    """``ValueError`` unless ``agent`` is a value-decomposition agent (:class:`attnmarl.algos.qmix.QMIXAgent`:
    VDN, QMIX or Qatten) and ``config`` its :class:`attnmarl.algos.qmix.QMIXConfig`: ``what`` reads a mixer,
    which a MAPPO, MADDPG or MAAC agent does not have."""
    if not isinstance(agent, QMIXAgent) or not isinstance(config, QMIXConfig):
        raise ValueError(f"{what} needs a value-decomposition agent (a QMIXAgent: VDN, QMIX or Qatten, whose mixer it "
                         f"reads) and its QMIXConfig; got a {type(agent).__name__} and a {type(config).__name__} "
                         "(load one of chapter 11's qmix-spread runs)")


def credit_episode(agent: QMIXAgent, config: QMIXConfig, seed: int = 0) -> Credit:
    """Play one mpe2 episode (reset with ``seed``) with ``agent``'s greedy agents, and record
    what the mixer makes of every step (:class:`Credit`). Any other agent than a value-decomposition one
    (VDN, QMIX, Qatten) is a ``ValueError`` naming it."""
    _check_mix_agent("credit_episode", agent, config)
    policy = agent_policy(agent, config, deterministic=True)
    episode = record_episode(config.scenario, seed, policy, **config.scenario_kwargs)
    with torch.no_grad():
        o = torch.from_numpy(episode.obs)
        Q_all = agent.q_values(o)
        Q = chosen_values(Q_all, Q_all.argmax(-1))
        if isinstance(agent.mixer, Qatten):
            Q_tot, lambda_ = agent.mixer.outputs(Q, o)
            return Credit(episode, Q.numpy(), Q_tot.numpy(), lambda_.numpy())
        return Credit(episode, Q.numpy(), agent.mixer(Q, o).numpy(), None)


def credit_frame(credit: Credit, t: int = 0) -> Frame:
    """Step ``t`` as the Qatten mixer credits it: every agent ringed by its weight lambda^i (the mean over heads,
    relative to the largest), lambda per head, and each agent's value Q^i of its action beside Q_tot."""
    if credit.lambda_ is None:
        raise ValueError("credit_frame draws Qatten's weights lambda; VDN and QMIX have none (Credit.lambda_ is None)")
    episode = credit.episode
    t = check_step(episode, t)
    m = len(episode.agents)
    lam = credit.lambda_[t]  # (heads, m)
    mean = lam.mean(0)
    names = [short_label(a) for a in episode.agents]
    arena = arena_panel(episode, t)
    emphasis = np.zeros(len(arena.xy))
    emphasis[:m] = mean / mean.max()  # agents come first among the entities
    arena = replace(arena, emphasis=emphasis.tolist(), title=f"t = {t}: rings = λ of each agent")
    per_head = Heatmap(np.vstack([lam, mean]), [f"head {h + 1}" for h in range(lam.shape[0])] + ["mean"], names,
                       title="λ, per head h", xlabel="agent i", ylabel="head h",
                       vmin=0.0, vmax=1.0)
    spread = float(np.abs(credit.Q).max()) or 1.0
    values = Heatmap(credit.Q[t][None], ["Qⁱ"], names, title=f"each agent's Qⁱ of its action (Q_tot = "
                     f"{credit.Q_tot[t]:.2f})", xlabel="agent i", ylabel="", vmin=-spread, vmax=spread, cmap="RdBu_r")
    top = int(mean.argmax())
    return Frame([arena, per_head, values],
                 caption=f"step {t} of {episode.steps}: the mixer weighs {names[top]} most (mean λ = "
                         f"{mean[top]:.2f}; uniform would be {1 / m:.2f}); Q_tot = {credit.Q_tot[t]:.2f}")


def credit_explorer(agent: QMIXAgent, config: QMIXConfig, seed: int = 0) -> Explorer:
    """Step through one mpe2 episode of a trained Qatten team: which agents the mixer credits
    (:func:`credit_frame`)."""
    _check_mix_agent("credit_explorer", agent, config)
    if not isinstance(agent.mixer, Qatten):
        raise ValueError(f"credit_explorer shows Qatten's weights; this team's mixer is {config.mixer!r}")
    credit = credit_episode(agent, config, seed)

    def frame(t: int = 0) -> Frame:
        return credit_frame(credit, t)

    return Explorer(frame, [Slider("t", list(range(credit.episode.steps + 1)), default=0, label="step t")],
                    title=f"Which agents the Qatten mixer credits over one mpe2 episode "
                          f"({scenario_text(config.scenario, config.scenario_kwargs)}, seed {seed}); "
                          "ring opacity = λ / max λ")


@dataclass(frozen=True)
class Calibration:
    """A trained mixer against what its greedy team earns, over episodes (one row each)."""

    Q_tot: np.ndarray
    """(episodes,) the mixer's Q_tot of the greedy joint action at t = 0."""
    earned: np.ndarray
    """(episodes,) the discounted team reward the episode earned from t = 0, sum_{t=1}^{T} gamma^(t-1) r_t."""
    target: np.ndarray
    """(episodes,) what Q_tot at t = 0 estimates, from the episode itself: :func:`episode_target`."""
    gain: np.ndarray
    """(episodes, m) dQ_tot / dQ^i, averaged over the steps of each episode: how much a change in one agent's
    value moves the team's (1 for VDN)."""


def episode_target(credit: Credit, gamma: float) -> tuple[float, float]:
    """What the greedy team earned from t = 0, sum_{t=1}^{T} gamma^(t-1) r_t (r the team reward, the mean over the
    agents as :func:`attnmarl.algos.qmix.team_reward`), and the target Q_tot(s_0) estimates: that sum plus
    gamma^T Q_tot(s_T), the mixer's own value of the last state for what follows the time limit, as the TD target
    treats a truncated episode."""
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1]; got {gamma}")
    r = credit.episode.rewards[1:].mean(-1)  # r_1 .. r_T, the team reward on arriving at each step
    T = len(r)
    earned = float((gamma ** np.arange(T) * r).sum())
    return earned, earned + gamma ** T * float(credit.Q_tot[T])


def calibration(agent: QMIXAgent, config: QMIXConfig, episodes: int = 20, seed: int = 1000) -> Calibration:
    """Play ``episodes`` greedy mpe2 episodes (resets ``seed``, ``seed`` + 1, …) and set the mixer's Q_tot at t = 0
    beside what each episode earned and :func:`episode_target` with ``config.gamma``, with the gain dQ_tot / dQ^i
    along each episode (by autograd, at the values of the greedy actions). A mixer whose Q_tot is the team's value
    puts Q_tot and the target close; monotonicity only asks the gain to be >= 0."""
    _check_mix_agent("calibration", agent, config)
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1; got {episodes}")
    Q_tot, earned, target, gain = [], [], [], []
    for k in range(episodes):
        credit = credit_episode(agent, config, seed + k)
        Q_tot.append(float(credit.Q_tot[0]))
        earned_k, target_k = episode_target(credit, config.gamma)
        earned.append(earned_k)
        target.append(target_k)
        o = torch.from_numpy(credit.episode.obs)
        Q = torch.from_numpy(credit.Q).requires_grad_(True)
        dQ_tot, = torch.autograd.grad(agent.mixer(Q, o).sum(), Q)
        gain.append(dQ_tot.mean(0).numpy())
    return Calibration(np.array(Q_tot), np.array(earned), np.array(target), np.stack(gain))
