"""Chapter 11's value decomposition, for its explorers: which agents a trained Qatten mixer
credits along an mpe2 episode.

:func:`credit_episode` plays one episode with the team's greedy decentralized agents
(a^i = argmax_a Q^i(o^i, a)) and runs the mixer on every step: each agent's value of its action,
the team's Q_tot and, for a Qatten mixer, lambda^{i,h}, the weight head h gives agent i's value.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..algos.qmix import QMIXAgent, QMIXConfig, chosen_values
from ..checkpoints import agent_policy
from ..nets.mixers import Qatten
from .mpe import Episode, record_episode

__all__ = ["Credit", "credit_episode"]


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


def credit_episode(agent: QMIXAgent, config: QMIXConfig, seed: int = 0) -> Credit:
    """Play one mpe2 episode (reset with ``seed``) with ``agent``'s greedy agents, and record
    what the mixer makes of every step (:class:`Credit`)."""
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
