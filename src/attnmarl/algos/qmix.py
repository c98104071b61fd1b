"""Value decomposition — VDN, QMIX and a Qatten-style attention mixer — in one file, in the
style of CleanRL: every hyperparameter in :class:`QMIXConfig`, the whole loop in
:func:`train`. The three differ only in ``mixer`` (:mod:`attnmarl.nets.mixers`).

The agents are a cooperative team trained on one reward, the **team reward**, so only a fully
cooperative scenario (:data:`COOPERATIVE_SCENARIOS`) is accepted: in simple_tag the mean of the
predators' and the prey's rewards would teach the prey to be caught. In simple_spread,
mpe2 gives agent i r^i = (1 - rho) G + rho L^i with rho = ``local_ratio`` (0.5 by default): the
global part G = -sum_l min_j |p_j - p_l| (each landmark's distance to its nearest agent) and the
local part L^i = -(the number of agents that touch agent i). The team reward is their mean,
r = (1/m) sum_i r^i = (1 - rho) G - rho (2/m) (the number of touching pairs), and its episode
sum is the score every chapter reports (the mean over the agents of their returns).

- **agent network** — one Q network shared by all agents, Q^i(o^i, a) for each of the 5 moves a,
  on agent i's own observation: chapter 8's entity-token attention network
  (:class:`attnmarl.nets.EntityActor`, its 5 outputs read as values; it runs at any m) or the
  flat MLP (:class:`attnmarl.nets.Actor`). Feed-forward, not recurrent as in QMIX's paper:
  simple_spread's o^i shows every landmark and agent.
- **mixer** — Q_tot = f(Q^1(o^1, a^1), .., Q^m(o^m, a^m); s), monotonic in every Q^i, so the
  greedy joint action is every agent's own argmax.
- **exploration** — epsilon-greedy for each agent, epsilon falling linearly from
  ``epsilon_start`` to ``epsilon_final`` over the first ``epsilon_fraction`` of the run.
- **replay buffer** — joint transitions (o, a, r, o', terminated) of all agents, the actions
  as one-hots (:class:`attnmarl.algos.maddpg.ReplayBuffer`), from ``num_envs`` batched
  environments.
- **target networks** — a copy of the agent network and the mixer that follows them slowly,
  w' <- tau w + (1 - tau) w'.

One update on a minibatch of joint transitions:

1. **double-Q target** (van Hasselt et al. 2016; pymarl's QMIX does the same): the online agent
   network picks each agent's next action, a*^i = argmax_a Q^i(o'^i, a), the target network
   values it, and the target mixer mixes those values:
   y = r + gamma (1 - terminated) Q'_tot(Q'^1(o'^1, a*^1), .., Q'^m(o'^m, a*^m); s').
   A truncated episode still has a future: o' is then ``info["final_obs"]``.
2. **TD loss** — mean (Q_tot(Q^1(o^1, a^1), .., Q^m(o^m, a^m); s) - y)^2, through the mixer into
   every agent's Q^i: each agent learns its share of the team's value from the team reward only.
3. **targets** — soft updates of the agent network and the mixer.

Chapter 11's Algorithm 11.1 states one iteration in five steps (the update above is its steps
3-5); the comments ``# Algorithm 11.1, step n`` mark the lines of each, which the book shows
under the step (:mod:`attnmarl.site.codelines`).

Acting needs no mixer: each agent takes argmax_a Q^i(o^i, a) (:meth:`QMIXAgent.act`), so a
trained team plays decentralized on mpe2. The networks run and learn on ``device`` (the CPU by
default), as MADDPG's do; the replay buffer stays in the CPU's memory.
"""
from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..checks import check_choice, check_config_fields, check_finite, check_indices, check_real
from ..costs import RolloutBudget, check_off_policy_budget
from ..devices import check_device
from ..envs import make_batched, scenario_name
from ..envs.scenarios import given_port_kwargs
from ..nets import Actor, EntityActor
from ..nets.mixers import MIXERS, QMIX, VDN, Qatten
from .estimate import (
    NoStep,
    Probe,
    RunEstimate,
    measure,
    off_policy,
    probe,
    replay_buffer,
    start,
)
from .maac import one_hot
from .maddpg import OffPolicyProbe, ReplayBuffer, soft_update
from .mappo import EnvSpec, env_spec

__all__ = ["COOPERATIVE_SCENARIOS", "QMIXConfig", "AGENT_NETS", "QMIXAgent", "make_agent", "copy_agent_net",
           "team_reward", "chosen_values", "double_q_values", "td_target", "epsilon_at",
           "estimate", "train"]


COOPERATIVE_SCENARIOS = ("simple_spread", "collect_treasure")
"""The ported scenarios whose agents form one cooperative team, the only ones value decomposition trains on:
every agent's reward there holds the same shared part (simple_spread's landmark coverage, collect_treasure's
treasure collected and deposited) and no agent gains from another's loss. simple_tag is refused: its
predators and prey have opposed rewards, and their mean, the team reward, would reward the prey for being
caught."""


@dataclass
class QMIXConfig(RolloutBudget):
    """Every setting of a value-decomposition run (``asdict(config)`` is in its checkpoint)."""

    # environment (a batched port, discrete actions; evaluated on mpe2 with the same arguments)
    scenario: str = "simple_spread"
    scenario_kwargs: dict[str, Any] = field(default_factory=lambda: {"N": 3})
    num_envs: int = 16
    rollout_steps: int = 1
    """Steps of every environment between two rounds of updates (an *iteration*)."""
    total_steps: int = 300_000
    """Environment steps (one step of one environment, all its agents) over the whole run."""
    seed: int = 0
    # networks
    mixer: str = "qatten"
    """"vdn" (Q_tot = sum_i Q^i), "qmix" (hypernetworks) or "qatten" (attention over agents)."""
    agent_net: str = "entity"
    """"entity" (chapter 8's entity-token attention network, any m) or "flat" (MLP on o^i)."""
    entity_d: int = 32
    entity_heads: int = 2
    entity_ff: int = 64
    actor_hidden: int = 64
    """Hidden width of the flat agent network's two layers."""
    qmix_embed: int = 32
    """E, QMIX's mixing width (pymarl: 32)."""
    hyper_hidden: int = 64
    """Hidden width of QMIX's hypernetworks and of Qatten's state networks (pymarl: 64)."""
    qatten_heads: int = 4
    """Qatten's heads h (Qatten: 4)."""
    qatten_d: int = 32
    """Width d of Qatten's queries and keys (Qatten: 32)."""
    qatten_d_u: int = 32
    """Width of the agents' features u^i = phi(o^i) in Qatten."""
    qatten_uniform: bool = False
    """Qatten's attention ablation (chapter 11's exercise 3): its keys' weights W_k fixed at zero, so
    lambda = 1/m for every head and state and only the state-dependent w_h(s) and c(s) remain."""
    # Q-learning
    buffer_size: int = 200_000
    """Joint transitions the replay buffer holds (the oldest are overwritten)."""
    minibatch_size: int = 256
    updates_per_iteration: int = 1
    learning_starts: int = 5_000
    """Env steps collected before the first update."""
    lr: float = 5e-4
    """Adam's learning rate, for the agent network and the mixer together (pymarl: 5e-4)."""
    gamma: float = 0.95
    tau: float = 0.01
    """Soft-update rate of the target networks."""
    epsilon_start: float = 1.0
    epsilon_final: float = 0.05
    epsilon_fraction: float = 0.3
    """Share of the run over which epsilon falls linearly from its start to its final value."""
    max_grad_norm: float = 10.0
    """pymarl: 10."""
    # evaluation
    eval_deterministic: bool = True
    """Act greedily (argmax_a Q^i) on mpe2; else epsilon-greedy with ``epsilon_final``."""

    def __post_init__(self) -> None:
        """Refuse a config that would train something else than it says (``ValueError``)."""
        if not isinstance(self.scenario_kwargs, dict):
            raise ValueError(f"scenario_kwargs must be a dict of mpe2 arguments; got "
                             f"{self.scenario_kwargs!r}")
        self.scenario_kwargs = given_port_kwargs(self.scenario, self.scenario_kwargs)
        if scenario_name(self.scenario) not in COOPERATIVE_SCENARIOS:
            raise ValueError(f"value decomposition (VDN, QMIX, Qatten) trains one team on the team reward, the mean "
                             f"of every agent's reward, so it needs a fully cooperative scenario, one of "
                             f"{list(COOPERATIVE_SCENARIOS)}; got scenario {self.scenario!r}, whose agents do not "
                             "share one goal (in simple_tag the prey would learn to be caught)")
        check_choice("mixer", self.mixer, MIXERS)
        check_choice("agent_net", self.agent_net, AGENT_NETS)
        if self.scenario_kwargs.get("continuous_actions", False) is not False:
            raise ValueError("Q-learning takes an argmax over discrete actions: "
                             "scenario_kwargs must not set continuous_actions=True; got "
                             f"{self.scenario_kwargs!r}")
        check_config_fields(self, _SIZES, _RANGES, _FLAGS)
        if self.qatten_uniform and self.mixer != "qatten":
            raise ValueError(f"qatten_uniform fixes Qatten's lambda at 1/m; the mixer is {self.mixer!r}, "
                             "which has no lambda (set mixer='qatten')")
        if self.epsilon_final > self.epsilon_start:
            raise ValueError(f"epsilon_final = {self.epsilon_final} must not exceed "
                             f"epsilon_start = {self.epsilon_start} (epsilon decays)")
        if self.entity_d % self.entity_heads or self.qatten_d_u % 2:
            raise ValueError(f"entity_d = {self.entity_d} must be a multiple of entity_heads = "
                             f"{self.entity_heads}, and qatten_d_u = {self.qatten_d_u} even "
                             "(Qatten's phi has 2 heads)")
        check_off_policy_budget(self)

    @property
    def critic(self) -> str:
        """The mixer, for the run summaries' critic column (it is the centralized part)."""
        return f"{self.mixer}-uniform" if self.qatten_uniform else self.mixer

    @property
    def actor(self) -> str:
        """The agent network, for the run summaries' actor column."""
        return self.agent_net


_SIZES = ("num_envs", "rollout_steps", "total_steps", "entity_d", "entity_heads", "entity_ff",
          "actor_hidden", "qmix_embed", "hyper_hidden", "qatten_heads", "qatten_d",
          "qatten_d_u", "buffer_size", "minibatch_size", "updates_per_iteration")
"""The fields of :class:`QMIXConfig` that must be positive integers."""

_RANGES = (("lr", 0.0, 1.0, False), ("gamma", 0.0, 1.0, False), ("tau", 0.0, 1.0, True),
           ("epsilon_start", 0.0, 1.0, False), ("epsilon_final", 0.0, 1.0, False),
           ("epsilon_fraction", 0.0, 1.0, True), ("max_grad_norm", 0.0, math.inf, True))
"""(field, low, high, low end open) of the real-valued fields."""

_FLAGS = ("eval_deterministic", "qatten_uniform")
"""The fields that must be bools (a string such as 'no' would act as True)."""

AGENT_NETS: dict[str, type[nn.Module]] = {"entity": EntityActor, "flat": Actor}


class QMIXAgent(nn.Module):
    """The shared agent network Q^i(o^i, .) and the mixer (the target networks live in
    :func:`train` only: they are not part of a checkpoint). :attr:`actor` and :attr:`critic`
    name the two parts as the command line's summaries name those of the other algorithms."""

    def __init__(self, q_net: nn.Module, mixer: nn.Module, spec: EnvSpec,
                 epsilon: float = 0.0) -> None:
        super().__init__()
        self.q_net, self.mixer = q_net, mixer
        self.continuous = False
        self.n_actions = spec.n_actions
        self.epsilon = epsilon
        """Exploration of :meth:`act` when not deterministic."""

    @property
    def actor(self) -> nn.Module:
        """The agent network: what plays."""
        return self.q_net

    @property
    def critic(self) -> nn.Module:
        """The mixer: what only training needs."""
        return self.mixer

    def q_values(self, o: Tensor) -> Tensor:
        """Q^i(o^i, a), every agent and action: (batch, m, obs_dim) -> (batch, m, n_actions)."""
        Q = self.q_net(o)
        check_finite("the agent network's values Q^i", Q)
        return Q

    def Q_tot(self, o: Tensor, a: Tensor) -> Tensor:
        """The team's value Q_tot(o, a) (batch,) of integer joint actions a (batch, m)."""
        return self.mixer(chosen_values(self.q_values(o), a), o)

    def act(self, o: Tensor, generator: torch.Generator | None = None,
            deterministic: bool = True, epsilon: float | None = None) -> tuple[Tensor, Tensor]:
        """Actions (batch, m) and all values Q (batch, m, n_actions) for o (batch, m, obs_dim).

        Deterministic: a^i = argmax_a Q^i(o^i, a). Otherwise each agent acts uniformly at random
        with probability ``epsilon`` (default :attr:`epsilon`), drawn from ``generator`` on the
        CPU."""
        Q = self.q_values(o)
        a = Q.argmax(-1)
        if not deterministic:
            eps = check_real("epsilon", self.epsilon if epsilon is None else epsilon, 0.0, 1.0)
            explore = torch.rand(a.shape, generator=generator) < eps
            random = torch.randint(self.n_actions, a.shape, generator=generator)
            a = torch.where(explore.to(a.device), random.to(a.device), a)
        return a, Q

    def env_actions(self, a: Tensor) -> np.ndarray:
        """Actions as the environment takes them: integers, on the CPU."""
        return a.cpu().numpy()


def make_agent(config: QMIXConfig, spec: EnvSpec | None = None) -> QMIXAgent:
    """A freshly initialised agent for ``config`` (the spec is read from the scenario if not
    given)."""
    spec = spec or env_spec(config.scenario, **config.scenario_kwargs)
    m, obs_dim, types = spec.m, spec.obs_dim, spec.agent_types
    if config.agent_net == "entity":
        q_net: nn.Module = EntityActor(config.scenario, config.scenario_kwargs, m, obs_dim,
                                       spec.n_actions, types, d=config.entity_d,
                                       heads=config.entity_heads, d_ff=config.entity_ff)
    else:
        q_net = Actor(m, obs_dim, spec.n_actions, types, d_hidden=config.actor_hidden)
    if config.mixer == "vdn":
        mixer: nn.Module = VDN(m, obs_dim)
    elif config.mixer == "qmix":
        mixer = QMIX(m, obs_dim, embed=config.qmix_embed, hyper_hidden=config.hyper_hidden)
    else:
        mixer = Qatten(config.scenario, config.scenario_kwargs, m, obs_dim, types,
                       heads=config.qatten_heads, d=config.qatten_d, d_u=config.qatten_d_u,
                       hidden=config.hyper_hidden, uniform=config.qatten_uniform)
    return QMIXAgent(q_net, mixer, spec, config.epsilon_final)


def copy_agent_net(agent: QMIXAgent, config: QMIXConfig, saved: QMIXConfig,
                   state: dict[str, Tensor], path: str | Path) -> None:
    """Copy the trained agent network of a checkpoint already read (its config ``saved``, its
    ``state``) into ``agent``, built for ``config`` (other scenario arguments, N = 6 say): the
    entity network runs at any m; a flat network's shapes depend on m (``ValueError``). The
    mixer is not copied: playing needs the agent network only."""
    weights = {key.removeprefix("q_net."): x for key, x in state.items()
               if key.startswith("q_net.")}
    try:
        agent.q_net.load_state_dict(weights)
    except RuntimeError:
        raise ValueError(f"{path}: its {saved.agent_net} agent network was trained with "
                         f"{saved.scenario_kwargs} and its weights do not fit the one for "
                         f"{config.scenario_kwargs} (only the entity network runs at any m)"
                         ) from None


def team_reward(r: Tensor) -> Tensor:
    """The team reward r = (1/m) sum_i r^i (batch,) of every agent's rewards r (batch, m)."""
    return r.mean(-1)


def chosen_values(Q: Tensor, a: Tensor) -> Tensor:
    """Q^i(o^i, a^i): each agent's value (batch, m) of its action, from all its values Q
    (batch, m, n_actions) and integer actions a (batch, m)."""
    check_indices("a", a, Q.shape[-1], tuple(Q.shape[:-1]), "action")
    return Q.gather(-1, a.unsqueeze(-1)).squeeze(-1)


def double_q_values(Q_online_next: Tensor, Q_target_next: Tensor) -> Tensor:
    """Double Q: Q'^i(o'^i, a*^i) with a*^i = argmax_a Q^i(o'^i, a) — the online network picks,
    the target network values. Both inputs (batch, m, n_actions); returns (batch, m)."""
    if Q_online_next.shape != Q_target_next.shape:
        raise ValueError(f"the online and target values must have one shape; got "
                         f"{tuple(Q_online_next.shape)} and {tuple(Q_target_next.shape)}")
    return chosen_values(Q_target_next, Q_online_next.argmax(-1))


def td_target(r: Tensor, terminated: Tensor, Q_tot_next: Tensor, gamma: float) -> Tensor:
    """y = r + gamma (1 - terminated) Q'_tot(s', a*), from team rewards r (batch,), bools
    terminated (batch,) and the target mixer's values of the next step Q_tot_next (batch,)."""
    check_real("gamma", gamma, 0.0, 1.0)
    for name, x in (("r", r), ("terminated", terminated)):
        if x.shape != Q_tot_next.shape:
            raise ValueError(f"{name} must have the shape of Q_tot_next, "
                             f"{tuple(Q_tot_next.shape)}; got {tuple(x.shape)}")
    return r + gamma * (~terminated).to(r.dtype) * Q_tot_next


def epsilon_at(config: QMIXConfig, env_steps: int) -> float:
    """epsilon after ``env_steps``: linear from ``epsilon_start`` to ``epsilon_final`` over the
    first ``epsilon_fraction`` of the run, then constant."""
    progress = min(1.0, env_steps / (config.epsilon_fraction * config.total_steps))
    return config.epsilon_start + (config.epsilon_final - config.epsilon_start) * progress


def estimate(config: QMIXConfig, evaluation_episodes: int = 0) -> RunEstimate:
    """What a whole run of ``config`` will cost (:mod:`attnmarl.algos.estimate`), with ``evaluation_episodes``
    episodes on mpe2: its CPU time and peak memory, part by part, from a fresh agent's calls on four worlds'
    observations — acting epsilon-greedily, and one whole update (:func:`_update`, its optimizer's step
    estimated) on minibatches of those observations. :func:`train` checks it first."""
    run, world = start(config, "value-decomposition", replay_buffer)
    return off_policy(run, config, world, probe(_probe, config, {}), 1, evaluation_episodes)


def _probe(config: QMIXConfig) -> Probe:
    """The calls of a run of ``config`` measured on a fresh agent (:func:`attnmarl.algos.estimate.measure`): acting
    on the observations of four worlds, and :func:`_update` on a replay buffer of them (no optimizer step)."""
    p = OffPolicyProbe.of(config, make_agent, discrete=True)
    steps = NoStep(p.agent.parameters())
    with torch.no_grad():
        act = measure(lambda b: p.agent.act(p.o[:b], p.generator, deterministic=False, epsilon=0.5))
    update = measure(lambda b: _update(p.agent, p.target, p.buffer, steps, p.sized[b], p.generator,
                                       torch.device("cpu")))
    return Probe.of({"act": act, "update": update}, p.agent, p.spec)

def train(config: QMIXConfig,
          callback: Callable[[dict[str, float], QMIXAgent], None] | None = None,
          compile_nets: bool = False, device: str | torch.device = "cpu") -> QMIXAgent:
    """Train a value-decomposition agent on the batched port of ``config.scenario``; returns it.

    After every iteration (``rollout_steps`` steps of ``num_envs`` environments, then
    ``updates_per_iteration`` updates) ``callback(stats, agent)`` is called with ``stats``:
    ``update`` (the iteration), ``env_steps``, ``train_return`` (mean over agents and over the
    episodes that ended in this iteration; NaN if none did), ``train_return_<i>``, ``td_loss``,
    ``Q_tot_mean``, ``epsilon`` and ``wall_seconds``. Runs are reproducible from
    ``config.seed``; a run whose loss stops being finite raises ``RuntimeError``.
    ``compile_nets=True`` is refused (``ValueError``: these networks are not compiled);
    ``device`` is where the networks run and learn, as in :func:`attnmarl.algos.mappo.train`, and
    the run's :func:`estimate` is checked first, as there.
    """
    if compile_nets:
        raise ValueError("value decomposition trains without torch.compile: give "
                         "compile_nets=False")
    device = check_device(device)
    estimate(config).check()
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    env = make_batched(config.scenario, config.num_envs, seed=config.seed,
                       **config.scenario_kwargs)
    spec = env_spec(config.scenario, **config.scenario_kwargs)
    agent = make_agent(config, spec).to(device)
    target = copy.deepcopy(agent)
    target.requires_grad_(False)
    optimizer = torch.optim.Adam(agent.parameters(), lr=config.lr)
    buffer = ReplayBuffer(config.buffer_size, spec.m, spec.obs_dim, spec.n_actions)
    E, m = config.num_envs, spec.m
    episode_return = np.zeros((E, m))
    o = torch.from_numpy(env.reset())
    losses = {"td_loss": math.nan, "Q_tot_mean": math.nan}
    start = time.perf_counter()

    for iteration in range(config.num_updates):
        env_steps = iteration * config.batch_size
        epsilon = epsilon_at(config, env_steps)
        finished = []
        for _ in range(config.rollout_steps):  # Algorithm 11.1, step 1 (act, store)
            with torch.no_grad():
                a = agent.act(o.to(device), generator, deterministic=False, epsilon=epsilon)[0]
            a = a.cpu()
            o_next, r, terminated, truncated, info = env.step(agent.env_actions(a))
            final = torch.from_numpy(info["final_obs"])  # o' of a truncated episode: its last o
            buffer.add(o, one_hot(a, spec.n_actions), torch.from_numpy(r).float(), final,
                       torch.from_numpy(terminated))
            episode_return += r
            ended = terminated | truncated
            if ended.any():
                finished.append(episode_return[ended].copy())
                episode_return[ended] = 0.0
            o = torch.from_numpy(o_next)
            env_steps += E

        if env_steps >= max(config.learning_starts, 1):
            for _ in range(config.updates_per_iteration):
                losses = _update(agent, target, buffer, optimizer, config, generator, device)
                if not math.isfinite(losses["td_loss"]):
                    raise RuntimeError(
                        f"training diverged: non-finite TD loss in iteration {iteration + 1} "
                        f"(after {env_steps:,} env steps) of the {config.mixer} mixer on "
                        f"{config.scenario} {config.scenario_kwargs}, seed {config.seed}")

        if callback is not None:
            episodes = np.concatenate(finished) if finished else np.full((1, m), np.nan)
            per_agent = episodes.mean(0)
            stats = {"update": iteration + 1, "env_steps": env_steps, "epsilon": epsilon,
                     "wall_seconds": time.perf_counter() - start,
                     "train_return": float(per_agent.mean()), **losses,
                     **{f"train_return_{i}": float(per_agent[i]) for i in range(m)}}
            callback(stats, agent)
    return agent


def _update(agent: QMIXAgent, target: QMIXAgent, buffer: ReplayBuffer,
            optimizer: torch.optim.Optimizer, config: QMIXConfig, generator: torch.Generator,
            device: torch.device) -> dict[str, float]:
    """One update on a minibatch, on ``device``: double-Q target, TD loss, target update."""
    minibatch = buffer.sample(config.minibatch_size, generator)  # Algorithm 11.1, step 2
    o, a, r, o_next, terminated = (x.to(device) for x in minibatch)
    a = a.argmax(-1)  # the stored one-hots as integer actions (batch, m)
    with torch.no_grad():  # Algorithm 11.1, step 3: the double-Q target y
        Q_next = double_q_values(agent.q_values(o_next), target.q_values(o_next))
        y = td_target(team_reward(r), terminated, target.mixer(Q_next, o_next), config.gamma)
    Q_tot = agent.Q_tot(o, a)  # Algorithm 11.1, step 4
    td_loss = (Q_tot - y).pow(2).mean()  # through the mixer into every Q^i
    optimizer.zero_grad(set_to_none=True)
    td_loss.backward()
    nn.utils.clip_grad_norm_(agent.parameters(), config.max_grad_norm)
    optimizer.step()
    soft_update(target, agent, config.tau)  # Algorithm 11.1, step 5: w' <- tau w + (1 - tau) w'
    return {"td_loss": td_loss.item(), "Q_tot_mean": Q_tot.mean().item()}
