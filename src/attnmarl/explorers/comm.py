"""Chapter 11's measurements of limited sight on the actors of earlier chapters.

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
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..algos.mappo import MAPPOAgent, MAPPOConfig, make_agent
from ..checkpoints import agent_policy, load_agent, load_policy, shipped_checkpoint
from ..envs import evaluate
from ..envs.sight import SIGHT_RHO, check_rho, sighted_policy

__all__ = ["sighted_agent", "sight_cost"]


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
