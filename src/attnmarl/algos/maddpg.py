"""MADDPG (Lowe et al. 2017) with a concatenation or a self-attention Q critic, in one file in the style
of CleanRL: every hyperparameter in :class:`MADDPGConfig`, the whole loop in :func:`train`.

MADDPG is DDPG for m agents with centralized training and decentralized decisions:

- **actors** — deterministic and decentralized, a^i = mu(o^i; theta^i). The actor outputs the force the
  agent wants, F^i = tanh(y^i) in [-1, 1]^2, and a^i is mpe2's 5-number continuous movement action
  that makes that force: a^i = [0, max(-u_x, 0), max(u_x, 0), max(-u_y, 0), max(u_y, 0)] in [0, 1]^5
  (mpe2 pushes with a[2] - a[1] and a[4] - a[3]; :func:`force_to_action`). Agents of one type share
  the actor's weights (theta^i = theta for every predator, say), as chapter 7's MAPPO does: each
  agent still acts on its own o^i only.
- **critics** — centralized: agent i's action value q_hat^i = q([o^1..o^m], [a^1..a^m]; w^i), all m
  in one pass (:mod:`attnmarl.nets.qnets`: the concatenation critic or fig. 17.9's self-attention critic).
- **replay buffer** — joint transitions (o, a, r, o', terminated) of every agent (:class:`ReplayBuffer`),
  collected by ``num_envs`` batched environments (numpy ports) with Gaussian exploration noise on F.
- **target networks** — mu' and q' follow mu and q slowly: w' <- tau w + (1 - tau) w' (:func:`soft_update`).

One update on a minibatch of joint transitions:

1. **critic** — the TD target of every agent, G^i = r^i + gamma (1 - terminated) q'^i(o', [mu'(o'^1)..mu'(o'^m)])
   (a truncated episode still has a future: o' is then ``info["final_obs"]``, the episode's last
   observation), and the loss mean_i (q_hat^i(o, a) - G^i)^2.
2. **actors** — agent i's deterministic policy gradient goes through its own critic with its own action
   from the current actor and the other agents' actions from the buffer:
   max E[q^i(o, [a^1, .., mu(o^i), .., a^m])]. All m of these are evaluated in one critic pass on m
   copies of the minibatch, copy i with agent i's action replaced (:func:`own_action_values`).
3. **targets** — soft updates of mu' and q'.

Everything is vectorised over environments and agents. The networks run and learn on ``device`` (the CPU by
default, or a GPU): each step's observations go there once for the actor, the replay buffer stays in the
CPU's memory, and each minibatch goes to the device for its update. Chapter 9's Algorithm 9.1 states the
whole loop in seven steps; the comments ``# Algorithm 9.1, step n`` mark the lines of each, which the book
shows under the step (:mod:`attnmarl.site.codelines`).
"""
from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..checks import check_choice, check_config_fields, check_finite, check_real
from ..costs import RolloutBudget, check_numbers, check_off_policy_budget, check_replay_buffer
from ..devices import check_device
from ..envs import make_batched
from ..envs.scenarios import given_port_kwargs
from ..nets import Actor, AttentionQ, ConcatQ, EntityActor
from .compile import compile_in_place
from .estimate import (
    MEASURED_BATCHES,
    NoStep,
    Probe,
    RunEstimate,
    measure,
    off_policy,
    probe,
    probe_observations,
    replay_buffer,
    start,
)
from .mappo import EnvSpec, env_spec, normal_noise

__all__ = ["MADDPGConfig", "Q_CRITICS", "MADDPG_ACTORS", "FORCE_DIM", "force_to_action", "MADDPGAgent",
           "make_agent", "ReplayBuffer", "soft_update", "own_action_values", "estimate", "train"]

FORCE_DIM = 2
"""The actor's output F^i: the force it wants along x and y."""


@dataclass
class MADDPGConfig(RolloutBudget):
    """Every setting of a MADDPG run. ``asdict(config)`` is stored in each checkpoint."""

    # environment (a batched port with continuous actions; evaluation uses mpe2 with the same arguments)
    scenario: str = "simple_spread"
    scenario_kwargs: dict[str, Any] = field(default_factory=lambda: {"N": 3, "continuous_actions": True})
    num_envs: int = 64
    rollout_steps: int = 1
    """Steps of every environment between two rounds of updates (an *iteration*)."""
    total_steps: int = 1_000_000
    """Environment steps (one step of one environment, all its agents) over the whole run."""
    seed: int = 0
    # networks
    critic: str = "attention"
    """"attention" (fig. 17.9) or "concat" (MADDPG's concatenation critic)."""
    actor: str = "entity"
    """"flat" (an MLP on o^i, shared per agent type) or "entity" (chapter 8's egocentric entity-token
    attention actor, also decentralized and shared)."""
    d_x: int = 32
    """Width of the shared encoder's output x^j = phi([o^j; a^j]) (and f^j of the concatenation critic)."""
    heads: int = 2
    d_q: int = 16
    d_out: int = 16
    depth: int = 1
    critic_hidden: int = 64
    """Hidden width of each agent's unshared head g^i."""
    actor_hidden: int = 64
    entity_d: int = 32
    entity_heads: int = 2
    entity_ff: int = 64
    # MADDPG
    buffer_size: int = 200_000
    """Joint transitions the replay buffer holds (the oldest are overwritten)."""
    minibatch_size: int = 512
    updates_per_iteration: int = 1
    learning_starts: int = 10_000
    """Env steps of uniformly random actions before the first update."""
    lr_actor: float = 3e-3
    lr_critic: float = 3e-3
    gamma: float = 0.95
    tau: float = 0.02
    noise_std: float = 0.3
    """sigma of the Gaussian exploration noise on the force F^i at the start ..."""
    noise_final: float = 0.05
    """... decayed linearly to this by the end of the run."""
    actor_reg: float = 1e-3
    """Weight of mean(y^2), the actor's pre-tanh output, in its loss (as in Lowe et al.'s code): keeps tanh
    away from saturation, where the policy gradient vanishes."""
    max_grad_norm: float = 1.0
    # evaluation
    eval_deterministic: bool = True
    """Act with mu(o^i) (no noise) when evaluated on mpe2; add the final exploration noise otherwise."""

    def __post_init__(self) -> None:
        """Refuse a config that would train something other than it says (a ``ValueError`` naming the field)."""
        if not isinstance(self.scenario_kwargs, dict):
            raise ValueError(f"scenario_kwargs must be a dict of mpe2 arguments; got {self.scenario_kwargs!r}")
        self.scenario_kwargs = given_port_kwargs(self.scenario, self.scenario_kwargs)  # names, types ('no' is no bool)
        check_choice("critic", self.critic, Q_CRITICS)
        check_choice("actor", self.actor, MADDPG_ACTORS)
        if not isinstance(self.scenario_kwargs, dict) or self.scenario_kwargs.get("continuous_actions") is not True:
            raise ValueError("MADDPG needs continuous actions (a deterministic policy has no gradient through a "
                             f"discrete choice): scenario_kwargs must have continuous_actions=True; got "
                             f"{self.scenario_kwargs!r}")
        check_config_fields(self, _SIZES, _RANGES, _FLAGS)
        check_off_policy_budget(self)


_SIZES = ("num_envs", "rollout_steps", "total_steps", "d_x", "heads", "d_q", "d_out", "depth", "critic_hidden",
          "actor_hidden", "entity_d", "entity_heads", "entity_ff", "buffer_size", "minibatch_size",
          "updates_per_iteration")
"""The fields of :class:`MADDPGConfig` that must be positive integers."""

_RANGES = (("gamma", 0.0, 1.0, True), ("tau", 0.0, 1.0, True), ("lr_actor", 0.0, 1.0, False),
           ("lr_critic", 0.0, 1.0, False), ("noise_std", 0.0, math.inf, False),
           ("noise_final", 0.0, math.inf, False), ("actor_reg", 0.0, math.inf, False),
           ("max_grad_norm", 0.0, math.inf, True))
"""(field, low, high, low end open) of the real-valued fields."""

_FLAGS = ("eval_deterministic",)
"""The fields that must be bools (a string such as 'no' would act as True)."""

Q_CRITICS: dict[str, type[nn.Module]] = {"attention": AttentionQ, "concat": ConcatQ}
MADDPG_ACTORS: dict[str, type[nn.Module]] = {"flat": Actor, "entity": EntityActor}


def force_to_action(F: Tensor) -> Tensor:
    """mpe2's continuous movement action (..., 5) in [0, 1] that pushes with the force F (..., 2) in [-1, 1]:
    [no-op, left, right, down, up] = [0, max(-u_x, 0), max(u_x, 0), max(-u_y, 0), max(u_y, 0)].
    Anything but a floating-point tensor of :data:`FORCE_DIM` = 2 components on its last axis is a
    ``ValueError`` (a third component would be silently ignored)."""
    if not isinstance(F, Tensor) or not F.is_floating_point() or F.dim() < 1 or F.shape[-1] != FORCE_DIM:
        got = (f"dtype {F.dtype} and shape {tuple(F.shape)}" if isinstance(F, Tensor) else type(F).__name__)
        raise ValueError(f"force_to_action: the force F must be a floating-point tensor (..., {FORCE_DIM}), one "
                         f"component along x and one along y; got {got}")
    return torch.cat([torch.zeros_like(F[..., :1]), torch.relu(-F[..., :1]), torch.relu(F[..., :1]),
                      torch.relu(-F[..., 1:]), torch.relu(F[..., 1:])], dim=-1)


class MADDPGAgent(nn.Module):
    """The decentralized deterministic actor and the centralized Q critic (the target networks live in
    :func:`train` only: they are not part of a checkpoint)."""

    def __init__(self, actor: nn.Module, critic: nn.Module, spec: EnvSpec, noise_std: float = 0.0) -> None:
        super().__init__()
        self.actor, self.critic = actor, critic
        self.continuous = True
        self.noise_std = noise_std
        """The exploration noise of :meth:`act` when not deterministic."""

    def forward_mu(self, o: Tensor) -> tuple[Tensor, Tensor]:
        """The actor's pre-tanh output y (batch, m, 2) and the force F = tanh(y)."""
        y = self.actor(o)
        return y, torch.tanh(y)

    def mu(self, o: Tensor) -> Tensor:
        """a^i = mu(o^i; theta) for every agent: observations (batch, m, obs_dim) -> actions (batch, m, 5)."""
        return force_to_action(self.forward_mu(o)[1])

    def q_hat(self, o: Tensor, a: Tensor) -> Tensor:
        """q_hat^1..q_hat^m of observations (batch, m, obs_dim) and actions (batch, m, 5): (batch, m)."""
        return self.critic(o, a)

    def act(self, o: Tensor, generator: torch.Generator | None = None, deterministic: bool = True,
            noise_std: float | None = None) -> tuple[Tensor, Tensor]:
        """Actions (batch, m, 5) for observations (batch, m, obs_dim), and the forces F (batch, m, 2) they make.

        Deterministic: a = mu(o). Otherwise the force gets Gaussian noise of sigma ``noise_std`` (default:
        :attr:`noise_std`) and is clipped to [-1, 1] — DDPG's exploration (the noise: :func:`normal_noise`)."""
        F = self.forward_mu(o)[1]
        check_finite("the actor's forces F", F)
        if not deterministic:
            sigma = self.noise_std if noise_std is None else noise_std
            F = (F + sigma * normal_noise(F, generator)).clamp(-1.0, 1.0)
        return force_to_action(F), F

    def env_actions(self, a: Tensor) -> np.ndarray:
        """Actions as the environment takes them (already in [0, 1]), on the CPU."""
        return a.cpu().numpy()


def make_agent(config: MADDPGConfig, spec: EnvSpec | None = None) -> MADDPGAgent:
    """A freshly initialised MADDPG agent for ``config`` (the spec is read from the scenario if not given)."""
    spec = spec or env_spec(config.scenario, **config.scenario_kwargs)
    m, obs_dim, types = spec.m, spec.obs_dim, spec.agent_types
    if config.actor == "flat":
        actor: nn.Module = Actor(m, obs_dim, FORCE_DIM, types, d_hidden=config.actor_hidden)
    else:
        actor = EntityActor(config.scenario, config.scenario_kwargs, m, obs_dim, FORCE_DIM, types, d=config.entity_d,
                            heads=config.entity_heads, d_ff=config.entity_ff)
    if config.critic == "attention":
        critic: nn.Module = AttentionQ(m, obs_dim, spec.n_actions, types, d_x=config.d_x, d_q=config.d_q,
                                       d_out=config.d_out, heads=config.heads, depth=config.depth,
                                       d_hidden=config.critic_hidden)
    else:
        critic = ConcatQ(m, obs_dim, spec.n_actions, types, d_x=config.d_x, d_hidden=config.critic_hidden)
    return MADDPGAgent(actor, critic, spec, config.noise_final)


class ReplayBuffer:
    """A ring buffer of joint transitions (o, a, r, o', terminated), ``capacity`` of them; the oldest are
    overwritten first. Shapes per transition: o and o' (m, obs_dim), a (m, action_dim), r (m,)."""

    def __init__(self, capacity: int, m: int, obs_dim: int, action_dim: int) -> None:
        check_replay_buffer(capacity, m, obs_dim, action_dim)
        self.capacity = capacity
        self.o = torch.zeros(capacity, m, obs_dim)
        self.a = torch.zeros(capacity, m, action_dim)
        self.r = torch.zeros(capacity, m)
        self.o_next = torch.zeros(capacity, m, obs_dim)
        self.terminated = torch.zeros(capacity, dtype=torch.bool)
        self.position = 0
        """Where the next transition goes."""
        self.size = 0
        """How many transitions the buffer holds (at most ``capacity``)."""

    @classmethod
    def holding(cls, o: Tensor, a: Tensor) -> ReplayBuffer:
        """A buffer of exactly the transitions (o, a, no reward, o again, not terminated) of observations o
        (n, m, obs_dim) and actions a (n, m, action_dim): what an estimate's measured update draws from."""
        buffer = cls(o.shape[0], o.shape[1], o.shape[2], a.shape[2])
        buffer.add(o, a, torch.zeros(o.shape[:2]), o, torch.zeros(o.shape[0], dtype=torch.bool))
        return buffer

    def __len__(self) -> int:
        return self.size

    def add(self, o: Tensor, a: Tensor, r: Tensor, o_next: Tensor, terminated: Tensor) -> None:
        """Store n transitions at once: o, o' (n, m, obs_dim), a (n, m, action_dim), r (n, m), terminated (n,)."""
        n = o.shape[0]
        if n > self.capacity:
            raise ValueError(f"cannot add {n} transitions to a buffer of capacity {self.capacity}")
        expected = {"o": (n, *self.o.shape[1:]), "a": (n, *self.a.shape[1:]), "r": (n, *self.r.shape[1:]),
                    "o_next": (n, *self.o_next.shape[1:]), "terminated": (n,)}
        for name, x in zip(expected, (o, a, r, o_next, terminated)):
            if tuple(x.shape) != expected[name]:
                raise ValueError(f"{name} must have shape {expected[name]}; got {tuple(x.shape)}")
        rows = (self.position + torch.arange(n)) % self.capacity
        self.o[rows], self.a[rows], self.r[rows] = o, a, r
        self.o_next[rows], self.terminated[rows] = o_next, terminated
        self.position = (self.position + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, n: int, generator: torch.Generator | None = None) -> tuple[Tensor, ...]:
        """n transitions drawn uniformly with replacement from those stored: (o, a, r, o', terminated)."""
        check_numbers("a minibatch of observations o", ("n", n), ("m", self.o.shape[1]), ("obs_dim", self.o.shape[2]))
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        rows = torch.randint(self.size, (n,), generator=generator)
        return self.o[rows], self.a[rows], self.r[rows], self.o_next[rows], self.terminated[rows]


@dataclass
class OffPolicyProbe:
    """What an off-policy algorithm's ``_probe`` measures its calls on (:func:`attnmarl.algos.estimate.measure`): a
    fresh agent and its target copy, the observations ``o`` (4, m, obs_dim) of four worlds, a replay buffer holding
    them, a seeded generator, and the config at each of the measured minibatch sizes."""

    spec: EnvSpec
    o: Tensor
    agent: Any
    target: Any
    generator: torch.Generator
    buffer: ReplayBuffer
    sized: dict[int, Any]

    @classmethod
    def of(cls, config: Any, make: Callable[[Any, EnvSpec], Any], discrete: bool) -> OffPolicyProbe:
        """The probe of ``config``, its agent built by ``make(config, spec)`` without touching the global random
        state; the buffer's actions are action 0 of every agent, as one-hots when ``discrete``, else zero forces."""
        spec, o = env_spec(config.scenario, **config.scenario_kwargs), probe_observations(config)
        with torch.random.fork_rng(devices=[]):
            agent = make(config, spec)
        a = torch.zeros(len(o), spec.m, spec.n_actions)
        if discrete:
            a[..., 0] = 1.0
        return cls(spec, o, agent, copy.deepcopy(agent), torch.Generator().manual_seed(0), ReplayBuffer.holding(o, a),
                   {b: replace(config, minibatch_size=b) for b in MEASURED_BATCHES})


def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """Polyak averaging of the target network: w' <- tau w + (1 - tau) w' for every parameter."""
    check_real("tau", tau, 0.0, 1.0)
    with torch.no_grad():
        for w_target, w in zip(target.parameters(), source.parameters()):
            w_target.lerp_(w, tau)


def own_action_values(critic: Callable[[Tensor, Tensor], Tensor], o: Tensor, a: Tensor, a_own: Tensor) -> Tensor:
    """q_hat^i(o, [a^1, .., a_own^i, .., a^m]) for every i: agent i's value when *it* plays ``a_own^i``
    and the others play what ``a`` says — MADDPG's actor objective. o (B, m, obs_dim), a and a_own
    (B, m, d) -> (B, m).

    One critic pass on m copies of the batch: copy i takes agent i's action from ``a_own``, and its
    i-th output is kept (the diagonal)."""
    B, m = a.shape[:2]
    own = torch.eye(m, dtype=torch.bool, device=a.device).view(1, m, m, 1)  # copy i, agent j: j == i
    mixed = torch.where(own, a_own.unsqueeze(1), a.unsqueeze(1))  # (B, m copies, m agents, d)
    q = critic(o.unsqueeze(1).expand(B, m, *o.shape[1:]).reshape(B * m, *o.shape[1:]), mixed.flatten(0, 1))
    return q.view(B, m, m).diagonal(dim1=1, dim2=2)


def estimate(config: MADDPGConfig, evaluation_episodes: int = 0) -> RunEstimate:
    """What a whole run of ``config`` will cost (:mod:`attnmarl.algos.estimate`), with ``evaluation_episodes``
    episodes on mpe2: its CPU time and peak memory, part by part, from a fresh agent's calls on four worlds'
    observations — acting with noise, and one whole update (:func:`_update`, its optimizers' steps estimated)
    on minibatches of those observations. :func:`train` checks it first."""
    run, world = start(config, "MADDPG", replay_buffer)
    return off_policy(run, config, world, probe(_probe, config, {"depth": True}), 2, evaluation_episodes)


def _probe(config: MADDPGConfig) -> Probe:
    """The calls of a run of ``config`` measured on a fresh agent (:func:`attnmarl.algos.estimate.measure`): acting
    on the observations of four worlds, and :func:`_update` on a replay buffer of them (no optimizer steps)."""
    p = OffPolicyProbe.of(config, make_agent, discrete=False)
    actor_steps, critic_steps = NoStep(p.agent.actor.parameters()), NoStep(p.agent.critic.parameters())
    with torch.no_grad():
        act = measure(lambda b: p.agent.act(p.o[:b], p.generator, deterministic=False))
    update = measure(lambda b: _update(p.agent, p.target, p.buffer, actor_steps, critic_steps, p.sized[b],
                                       p.generator, torch.device("cpu")))
    return Probe.of({"act": act, "update": update}, p.agent, p.spec)

def train(config: MADDPGConfig, callback: Callable[[dict[str, float], MADDPGAgent], None] | None = None,
          compile_nets: bool = False, device: str | torch.device = "cpu") -> MADDPGAgent:
    """Train a MADDPG agent on the batched port of ``config.scenario``; returns the trained agent.

    After every iteration (``rollout_steps`` steps of ``num_envs`` environments, then
    ``updates_per_iteration`` updates) ``callback(stats, agent)`` is called with ``stats``: ``update``
    (the iteration), ``env_steps``, ``train_return`` (mean over agents and over the episodes that ended
    in this iteration; NaN if none did), ``train_return_<i>``, ``critic_loss``, ``actor_loss``,
    ``q_mean``, ``noise_std`` and ``wall_seconds``. Runs are reproducible from ``config.seed``. A run
    whose losses stop being finite raises ``RuntimeError``. ``compile_nets`` runs the actor and the
    critic, and their targets, through ``torch.compile`` (:mod:`attnmarl.algos.compile`). ``device`` is
    where the networks run and learn, as in :func:`attnmarl.algos.mappo.train`, and the run's :func:`estimate` is
    checked first, as there.
    """
    device = check_device(device)
    estimate(config).check()
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    env = make_batched(config.scenario, config.num_envs, seed=config.seed, **config.scenario_kwargs)
    spec = env_spec(config.scenario, **config.scenario_kwargs)
    agent = make_agent(config, spec).to(device)
    target = copy.deepcopy(agent)
    for parameter in target.parameters():
        parameter.requires_grad_(False)
    if compile_nets:
        compile_in_place(agent.actor, agent.critic, target.actor, target.critic)
    actor_optimizer = torch.optim.Adam(agent.actor.parameters(), lr=config.lr_actor)
    critic_optimizer = torch.optim.Adam(agent.critic.parameters(), lr=config.lr_critic)
    buffer = ReplayBuffer(config.buffer_size, spec.m, spec.obs_dim, spec.n_actions)
    E, m = config.num_envs, spec.m
    episode_return = np.zeros((E, m))
    o = torch.from_numpy(env.reset())
    critic_loss = actor_loss = q_mean = torch.tensor(math.nan)
    start = time.perf_counter()

    for iteration in range(config.num_updates):
        env_steps = iteration * config.batch_size
        sigma = config.noise_std + (config.noise_final - config.noise_std) * iteration / config.num_updates
        finished = []
        for _ in range(config.rollout_steps):  # act and store
            with torch.no_grad():  # Algorithm 9.1, step 1 (explore: random at first, then mu(o) + noise)
                if env_steps < config.learning_starts:
                    a = force_to_action(torch.rand(E, m, FORCE_DIM, generator=generator) * 2 - 1)
                else:
                    a = agent.act(o.to(device), generator, deterministic=False, noise_std=sigma)[0].cpu()
            o_next, r, terminated, truncated, info = env.step(agent.env_actions(a))  # Algorithm 9.1, step 2
            final = torch.from_numpy(info["final_obs"])  # o' of a truncated episode: its own last observation
            buffer.add(o, a, torch.from_numpy(r).float(), final, torch.from_numpy(terminated))
            episode_return += r
            ended = terminated | truncated
            if ended.any():
                finished.append(episode_return[ended].copy())
                episode_return[ended] = 0.0
            o = torch.from_numpy(o_next)
            env_steps += E

        if env_steps >= config.learning_starts:
            for _ in range(config.updates_per_iteration):
                critic_loss, actor_loss, q_mean = _update(agent, target, buffer, actor_optimizer, critic_optimizer,
                                                          config, generator, device)
                if not (math.isfinite(critic_loss) and math.isfinite(actor_loss)):
                    raise RuntimeError(f"training diverged: non-finite loss in iteration {iteration + 1} (after "
                                       f"{env_steps:,} env steps) of the {config.critic} Q critic on "
                                       f"{config.scenario} {config.scenario_kwargs}, seed {config.seed}")

        if callback is not None:
            episodes = np.concatenate(finished) if finished else np.full((1, m), np.nan)
            per_agent = episodes.mean(0)
            stats = {"update": iteration + 1, "env_steps": env_steps, "wall_seconds": time.perf_counter() - start,
                     "train_return": float(per_agent.mean()), "critic_loss": float(critic_loss),
                     "actor_loss": float(actor_loss), "q_mean": float(q_mean), "noise_std": sigma,
                     **{f"train_return_{i}": float(per_agent[i]) for i in range(m)}}
            callback(stats, agent)
    agent.noise_std = config.noise_final
    return agent


def _update(agent: MADDPGAgent, target: MADDPGAgent, buffer: ReplayBuffer, actor_optimizer: torch.optim.Optimizer,
            critic_optimizer: torch.optim.Optimizer, config: MADDPGConfig, generator: torch.Generator,
            device: torch.device) -> tuple[float, float, float]:
    """One MADDPG update on a minibatch, on ``device``: critic, actors, targets. Returns the two losses and mean
    q_hat."""
    minibatch = buffer.sample(config.minibatch_size, generator)  # Algorithm 9.1, step 3
    o, a, r, o_next, terminated = (x.to(device) for x in minibatch)
    # Algorithm 9.1, step 4 (critic's target): y = G^i = r^i + gamma (1 - terminated) q'^i(o', mu'(o'))
    with torch.no_grad():
        y = r + config.gamma * (~terminated).float().unsqueeze(-1) * target.q_hat(o_next, target.mu(o_next))
    q = agent.q_hat(o, a)  # Algorithm 9.1, step 5
    critic_loss = (q - y).pow(2).mean()
    critic_optimizer.zero_grad(set_to_none=True)
    critic_loss.backward()
    nn.utils.clip_grad_norm_(agent.critic.parameters(), config.max_grad_norm)
    critic_optimizer.step()
    # Algorithm 9.1, step 6 (actors): maximise q^i(o, [a^1, .., mu(o^i), .., a^m]) for every i
    pre_tanh, F = agent.forward_mu(o)
    agent.critic.requires_grad_(False)  # the critic only passes the gradient on to the actions
    actor_loss = -own_action_values(agent.q_hat, o, a, force_to_action(F)).mean()
    actor_optimizer.zero_grad(set_to_none=True)
    (actor_loss + config.actor_reg * pre_tanh.pow(2).mean()).backward()
    agent.critic.requires_grad_(True)
    nn.utils.clip_grad_norm_(agent.actor.parameters(), config.max_grad_norm)
    actor_optimizer.step()
    soft_update(target, agent, config.tau)  # Algorithm 9.1, step 7 (targets: w' <- tau w + (1 - tau) w')
    return critic_loss.item(), actor_loss.item(), q.mean().item()
