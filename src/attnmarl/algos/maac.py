"""MAAC (Iqbal & Sha 2019, "Actor-Attention-Critic for Multi-Agent Reinforcement Learning") and its
concatenation twin MADDPG+SAC, in one file in the style of CleanRL: every hyperparameter in
:class:`MAACConfig`, the whole loop in :func:`train`. The two differ only in ``critic``.

MAAC is discrete-action soft actor-critic for m agents with centralized critics:

- **actors** — decentralized and stochastic, pi(a^i | o^i; theta), a categorical distribution over the
  5 moves (the book's flat actor, :class:`attnmarl.nets.Actor`, shared by the agents of a type).
- **critics** — per-agent Q heads over all of agent i's actions, q_all^i(a') = Q^i(o, (a', a^{-i})), with
  the others' (o^j, a^j) combined by attention (MAAC) or concatenation (MADDPG+SAC)
  (:mod:`attnmarl.nets.maac`).
- **replay buffer** — joint transitions (o, a, r, o', terminated) of all agents, a one-hot per action
  (:class:`attnmarl.algos.maddpg.ReplayBuffer`), from ``num_envs`` batched environments that act by
  sampling pi (SAC explores through its entropy, not through added noise).

Chapter 10's Algorithm 10.1 states one iteration in six steps; the comments ``# Algorithm 10.1, step n`` mark
the lines of each, which the book shows under the step (:mod:`attnmarl.site.codelines`).
- **target networks** — pi' and Q' follow pi and Q slowly: w' <- tau w + (1 - tau) w'.

One update on a minibatch of joint transitions (rewards normalised per agent by the buffer's mean and
standard deviation, as MAAC's buffer does):

1. **critic** (MAAC's eq. 7) — the soft TD target of every agent, with a' ~ pi'(o') from the target
   actors: y^i = r^i + gamma (1 - terminated) [Q'^i(o', a') - temperature log pi'(a'^i | o'^i)], and the
   loss mean_i (q_hat^i(o, a) - y^i)^2 plus the attention-logit regulariser
   ``attention_reg`` * mean(logits^2) (MAAC's; the logits before the 1/sqrt(d_k) scaling).
2. **actors** (eqs. 8-10) — every agent's actions are sampled afresh from the current policies,
   a ~ pi(o) (not taken from the buffer); the counterfactual baseline marginalises agent i's action only,
   b^i = sum_a' pi(a' | o^i) Q^i(o, (a', a^{-i})), one critic pass giving every a'; the advantage is
   A^i = Q^i(o, a) - b^i and the loss mean_i log pi(a^i | o^i) (temperature log pi(a^i | o^i) - A^i)
   (the gradient flows through the first log pi only), plus ``policy_reg`` * mean(y^2) on the logits y.
3. **targets** — soft updates of pi' and Q'.

The temperature is SAC's entropy weight (MAAC's alpha = 1 / reward_scale); it is not called alpha here
because alpha is the attention weight.

Where the book's version differs from MAAC's code (``algorithms/attention_sac.py``, ``main.py``):

- **budget** — MAAC's ``main.py`` defaults are 50,000 episodes from 12 parallel environments with 4 updates
  of 1,024 transitions every 100 env steps, and its README sets collect_treasure's episodes to 100 steps:
  5 million env steps and about 200,000 updates. The book's runs fit about 10 CPU-minutes each (see
  :data:`attnmarl.train.MAAC_STEPS`): the same 4 updates per 100 env steps, of 256 transitions, with
  networks of width 64 (MAAC: 128) and a faster ``tau``.
- **episodes** — mpe2's ``collect_treasure_v1`` with its default 25 steps (MAAC: 100), so that scores are
  chapter 10's (random team and scripted treasure-hunter in ``assets/scale/treasure-baselines.json``).
- **parameters** — the actors are shared by the agents of a type (all collectors one actor, each
  deposit its own), as everywhere in the book; MAAC gives every agent its own. The critics' encoders are
  shared too (see :mod:`attnmarl.nets.maac`).
- **the soft target** — the entropy term is inside gamma's bracket, as in the paper's eq. 7 (MAAC's code
  subtracts it outside).
- **losses** — the critic's loss is the mean over agents, where MAAC sums them and scales the shared
  parameters' gradients by 1/m: the shared parameters get the same gradient, each head f^i 1/m of it
  (Adam's steps barely depend on that scale, but the critic's weight decay weighs m times more against
  the heads' loss here); no BatchNorm on inputs.

Everything is vectorised over environments and agents. The networks run and learn on ``device`` (the CPU by
default, or a GPU), as MADDPG's do (:mod:`attnmarl.algos.maddpg`): the replay buffer stays in the CPU's memory.
"""
from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..checks import check_choice, check_config_fields, check_finite, check_indices
from ..costs import RolloutBudget, check_off_policy_budget
from ..devices import check_device
from ..envs import make_batched
from ..envs.scenarios import given_port_kwargs
from ..nets import Actor
from ..nets.maac import MAACAttentionCritic, MAACConcatCritic, chosen
from .compile import compile_in_place
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
from .maddpg import OffPolicyProbe, ReplayBuffer, soft_update
from .mappo import EnvSpec, env_spec, log_prob, sample_actions

__all__ = ["MAACConfig", "MAAC_CRITICS", "MAACAgent", "make_agent", "one_hot", "counterfactual_advantage",
           "reward_statistics", "estimate", "train"]


@dataclass
class MAACConfig(RolloutBudget):
    """Every setting of a MAAC (or MADDPG+SAC) run. ``asdict(config)`` is stored in each checkpoint."""

    # environment (a batched port with discrete actions; evaluation uses mpe2 with the same arguments)
    scenario: str = "collect_treasure"
    scenario_kwargs: dict[str, Any] = field(
        default_factory=lambda: {"num_collectors": 2, "num_deposits": 2, "num_treasures": 2})
    num_envs: int = 20
    rollout_steps: int = 5
    """Steps of every environment between two rounds of updates (an *iteration*): 100 env steps."""
    total_steps: int = 200_000
    """Environment steps (one step of one environment, all its agents) over the whole run."""
    seed: int = 0
    # networks
    critic: str = "attention"
    """"attention" (MAAC) or "concat" (MADDPG+SAC)."""
    d: int = 64
    """Width of the encodings s^i, e^j and of the heads' hidden layer (MAAC: 128)."""
    heads: int = 4
    """l, attention heads (MAAC: 4); each has d / l dimensions."""
    actor_hidden: int = 64
    """Hidden width of the actor's two layers (MAAC: 128)."""
    # soft actor-critic
    buffer_size: int = 200_000
    """Joint transitions the replay buffer holds (MAAC: 1,000,000)."""
    minibatch_size: int = 256
    """MAAC: 1,024."""
    updates_per_iteration: int = 4
    """Updates after every iteration: 4 per 100 env steps, MAAC's ratio."""
    learning_starts: int = 1_024
    """Env steps collected before the first update."""
    lr_actor: float = 1e-3
    lr_critic: float = 1e-3
    critic_weight_decay: float = 1e-3
    """Adam's L2 weight decay on the critic (MAAC's)."""
    gamma: float = 0.99
    tau: float = 0.005
    """Soft-update rate of the target networks (MAAC: 0.001)."""
    temperature: float = 0.01
    """SAC's entropy weight on normalised rewards (MAAC: 1 / reward_scale = 1 / 100)."""
    reward_norm: bool = True
    """Normalise every agent's rewards by the mean and standard deviation of its rewards in the buffer
    (MAAC's buffer does)."""
    attention_reg: float = 1e-3
    """Weight of mean(logits^2) of the attention in the critic's loss (MAAC's)."""
    policy_reg: float = 1e-3
    """Weight of mean(y^2) of the actor's logits in its loss (MAAC's)."""
    max_grad_norm_actor: float = 0.5
    max_grad_norm_critic: float = 10.0
    """MAAC clips at 10 m, on a loss summed over agents; the book's is their mean."""
    # evaluation
    eval_deterministic: bool = True
    """Act with the most probable action when evaluated on mpe2; sample pi otherwise."""

    def __post_init__(self) -> None:
        """Refuse a config that would train something other than it says (a ``ValueError`` naming the field)."""
        if not isinstance(self.scenario_kwargs, dict):
            raise ValueError(f"scenario_kwargs must be a dict of mpe2 arguments; got {self.scenario_kwargs!r}")
        self.scenario_kwargs = given_port_kwargs(self.scenario, self.scenario_kwargs)  # names, types ('no' is no bool)
        check_choice("critic", self.critic, MAAC_CRITICS)
        if self.scenario_kwargs.get("continuous_actions", False) is not False:
            raise ValueError("MAAC's critic has one output per discrete action: scenario_kwargs must not set "
                             f"continuous_actions=True; got {self.scenario_kwargs!r}")
        check_config_fields(self, _SIZES, _RANGES, _FLAGS)
        if self.d % self.heads:
            raise ValueError(f"d = {self.d} must be a multiple of heads = {self.heads} (each head has d / heads "
                             "dimensions)")
        check_off_policy_budget(self)

    @property
    def actor(self) -> str:
        """The actor's design, for the run summaries: always the flat actor."""
        return "flat"


_SIZES = ("num_envs", "rollout_steps", "total_steps", "d", "heads", "actor_hidden", "buffer_size",
          "minibatch_size", "updates_per_iteration")
"""The fields of :class:`MAACConfig` that must be positive integers."""

_RANGES = (("gamma", 0.0, 1.0, False), ("tau", 0.0, 1.0, True), ("lr_actor", 0.0, 1.0, False),
           ("lr_critic", 0.0, 1.0, False), ("critic_weight_decay", 0.0, math.inf, False),
           ("temperature", 0.0, math.inf, False), ("attention_reg", 0.0, math.inf, False),
           ("policy_reg", 0.0, math.inf, False), ("max_grad_norm_actor", 0.0, math.inf, True),
           ("max_grad_norm_critic", 0.0, math.inf, True))
"""(field, low, high, low end open) of the real-valued fields."""

_FLAGS = ("reward_norm", "eval_deterministic")
"""The fields that must be bools (a string such as 'no' would act as True)."""

MAAC_CRITICS: dict[str, type[nn.Module]] = {"attention": MAACAttentionCritic, "concat": MAACConcatCritic}


def one_hot(a: Tensor, n_actions: int) -> Tensor:
    """Integer actions (..., m) as float one-hots (..., m, n_actions), the critics' action input."""
    return nn.functional.one_hot(a, n_actions).float()


class MAACAgent(nn.Module):
    """The decentralized stochastic actor and the centralized all-actions Q critic (the target networks
    live in :func:`train` only: they are not part of a checkpoint)."""

    def __init__(self, actor: nn.Module, critic: nn.Module, spec: EnvSpec) -> None:
        super().__init__()
        self.actor, self.critic = actor, critic
        self.continuous = False
        self.n_actions = spec.n_actions

    def act(self, o: Tensor, generator: torch.Generator | None = None,
            deterministic: bool = False) -> tuple[Tensor, Tensor]:
        """Actions (batch, m) for observations (batch, m, obs_dim), sampled from pi or the most probable,
        and their log-probabilities (batch, m)."""
        y = self.actor(o)
        check_finite("the policy's logits y", y)
        a = y.argmax(-1) if deterministic else sample_actions(y, generator)
        return a, log_prob(y, a)[0]

    def q_all(self, o: Tensor, a: Tensor) -> Tensor:
        """q_all^i(a') = Q^i(o, (a', a^{-i})) for integer actions a (batch, m): (batch, m, n_actions)."""
        return self.critic(o, one_hot(a, self.n_actions).to(o))

    def env_actions(self, a: Tensor) -> np.ndarray:
        """Actions as the environment takes them: integers, on the CPU."""
        return a.cpu().numpy()


def make_agent(config: MAACConfig, spec: EnvSpec | None = None) -> MAACAgent:
    """A freshly initialised agent for ``config`` (the spec is read from the scenario if not given)."""
    spec = spec or env_spec(config.scenario, **config.scenario_kwargs)
    actor = Actor(spec.m, spec.obs_dim, spec.n_actions, spec.agent_types, d_hidden=config.actor_hidden)
    if config.critic == "attention":
        critic: nn.Module = MAACAttentionCritic(spec.m, spec.obs_dim, spec.n_actions, spec.agent_types,
                                                d=config.d, heads=config.heads)
    else:
        critic = MAACConcatCritic(spec.m, spec.obs_dim, spec.n_actions, spec.agent_types, d=config.d)
    return MAACAgent(actor, critic, spec)


def counterfactual_advantage(q_all: Tensor, pi: Tensor, a: Tensor) -> Tensor:
    """MAAC's multi-agent advantage (eqs. 9-10): A^i = q_all^i(a^i) - sum_a' pi(a' | o^i) q_all^i(a'),
    from q_all (batch, m, n_actions), the policies' probabilities pi (batch, m, n_actions) and integer
    actions a (batch, m): (batch, m)."""
    if pi.shape != q_all.shape:
        raise ValueError(f"pi must have the shape of q_all, {tuple(q_all.shape)}; got {tuple(pi.shape)}")
    check_indices("a", a, q_all.shape[-1], tuple(q_all.shape[:-1]), "action")
    q = q_all.gather(-1, a.unsqueeze(-1)).squeeze(-1)
    return q - (pi * q_all).sum(-1)


def reward_statistics(buffer: ReplayBuffer) -> tuple[Tensor, Tensor]:
    """Each agent's mean and standard deviation (m,) of the rewards in the buffer (the std at least 1e-6)."""
    r = buffer.r[: len(buffer)]
    return r.mean(0), r.std(0).clamp_min(1e-6) if len(buffer) > 1 else torch.ones(r.shape[1])


def estimate(config: MAACConfig, evaluation_episodes: int = 0) -> RunEstimate:
    """What a whole run of ``config`` will cost (:mod:`attnmarl.algos.estimate`), with ``evaluation_episodes``
    episodes on mpe2: its CPU time and peak memory, part by part, from a fresh agent's calls on four worlds'
    observations — acting, and one whole update (:func:`_update`, its optimizers' steps estimated) on minibatches
    of those observations. :func:`train` checks it first."""
    run, world = start(config, "MAAC", replay_buffer)
    return off_policy(run, config, world, probe(_probe, config, {}), 2, evaluation_episodes)


def _probe(config: MAACConfig) -> Probe:
    """The calls of a run of ``config`` measured on a fresh agent (:func:`attnmarl.algos.estimate.measure`): acting
    on the observations of four worlds, and :func:`_update` on a replay buffer of them (no optimizer steps)."""
    p = OffPolicyProbe.of(config, make_agent, discrete=True)
    actor_steps, critic_steps = NoStep(p.agent.actor.parameters()), NoStep(p.agent.critic.parameters())
    r_mean, r_std = torch.zeros(p.spec.m), torch.ones(p.spec.m)
    with torch.no_grad():
        act = measure(lambda b: p.agent.act(p.o[:b], p.generator))
    update = measure(lambda b: _update(p.agent, p.target, p.buffer, actor_steps, critic_steps, p.sized[b],
                                       p.generator, r_mean, r_std, torch.device("cpu")))
    return Probe.of({"act": act, "update": update}, p.agent, p.spec)

def train(config: MAACConfig, callback: Callable[[dict[str, float], MAACAgent], None] | None = None,
          compile_nets: bool = False, device: str | torch.device = "cpu") -> MAACAgent:
    """Train a MAAC (or MADDPG+SAC) agent on the batched port of ``config.scenario``; returns it.

    After every iteration (``rollout_steps`` steps of ``num_envs`` environments, then
    ``updates_per_iteration`` updates) ``callback(stats, agent)`` is called with ``stats``: ``update``
    (the iteration), ``env_steps``, ``train_return`` (mean over agents and over the episodes that ended
    in this iteration; NaN if none did), ``train_return_<i>``, ``critic_loss``, ``actor_loss``,
    ``q_mean``, ``entropy`` and ``wall_seconds``. Runs are reproducible from ``config.seed``. A run whose
    losses stop being finite raises ``RuntimeError``. ``compile_nets`` runs the networks through
    ``torch.compile``; ``device`` is where they run and learn, as in :func:`attnmarl.algos.mappo.train`, and the
    run's :func:`estimate` is checked first, as there.
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
    critic_optimizer = torch.optim.Adam(agent.critic.parameters(), lr=config.lr_critic,
                                        weight_decay=config.critic_weight_decay)
    buffer = ReplayBuffer(config.buffer_size, spec.m, spec.obs_dim, spec.n_actions)
    E, m = config.num_envs, spec.m
    episode_return = np.zeros((E, m))
    o = torch.from_numpy(env.reset())
    losses = {"critic_loss": math.nan, "actor_loss": math.nan, "q_mean": math.nan, "entropy": math.nan}
    start = time.perf_counter()

    for iteration in range(config.num_updates):
        env_steps = iteration * config.batch_size
        finished = []
        for _ in range(config.rollout_steps):  # Algorithm 10.1, step 1 (act and store)
            with torch.no_grad():
                a = agent.act(o.to(device), generator)[0].cpu()
            o_next, r, terminated, truncated, info = env.step(agent.env_actions(a))
            final = torch.from_numpy(info["final_obs"])  # o' of a truncated episode: its own last observation
            buffer.add(o, one_hot(a, spec.n_actions), torch.from_numpy(r).float(), final,
                       torch.from_numpy(terminated))
            episode_return += r
            ended = terminated | truncated
            if ended.any():
                finished.append(episode_return[ended].copy())
                episode_return[ended] = 0.0
            o = torch.from_numpy(o_next)
            env_steps += E

        if env_steps >= max(config.learning_starts, 1):  # Algorithm 10.1, step 2
            statistics = reward_statistics(buffer) if config.reward_norm else (torch.zeros(m), torch.ones(m))
            r_mean, r_std = (x.to(device) for x in statistics)
            for _ in range(config.updates_per_iteration):
                losses = _update(agent, target, buffer, actor_optimizer, critic_optimizer, config, generator,
                                 r_mean, r_std, device)
                if not all(math.isfinite(losses[k]) for k in ("critic_loss", "actor_loss")):
                    raise RuntimeError(f"training diverged: non-finite loss in iteration {iteration + 1} (after "
                                       f"{env_steps:,} env steps) of the {config.critic} critic on "
                                       f"{config.scenario} {config.scenario_kwargs}, seed {config.seed}")

        if callback is not None:
            episodes = np.concatenate(finished) if finished else np.full((1, m), np.nan)
            per_agent = episodes.mean(0)
            stats = {"update": iteration + 1, "env_steps": env_steps, "wall_seconds": time.perf_counter() - start,
                     "train_return": float(per_agent.mean()), **losses,
                     **{f"train_return_{i}": float(per_agent[i]) for i in range(m)}}
            callback(stats, agent)
    return agent


def _update(agent: MAACAgent, target: MAACAgent, buffer: ReplayBuffer, actor_optimizer: torch.optim.Optimizer,
            critic_optimizer: torch.optim.Optimizer, config: MAACConfig, generator: torch.Generator,
            r_mean: Tensor, r_std: Tensor, device: torch.device) -> dict[str, float]:
    """One MAAC update on a minibatch, on ``device``: critic, actors, targets. Returns the losses, mean q_hat and
    the policies' mean entropy."""
    o, a, r, o_next, terminated = (x.to(device) for x in buffer.sample(config.minibatch_size, generator))
    r = (r - r_mean) / r_std
    # Algorithm 10.1, step 3 (critic's target, eq. 7), with a' ~ pi'(o'):
    # y^i = r^i + gamma (1 - terminated) [Q'^i(o', a') - temperature log pi'(a'^i | o'^i)]
    with torch.no_grad():
        a_next, log_pi_next = target.act(o_next, generator)
        q_next = target.q_all(o_next, a_next).gather(-1, a_next.unsqueeze(-1)).squeeze(-1)
        y = r + config.gamma * (~terminated).float().unsqueeze(-1) * (q_next - config.temperature * log_pi_next)
    q_all, _, logits = agent.critic.outputs(o, a)  # Algorithm 10.1, step 4
    q = chosen(q_all, a)
    critic_loss = (q - y).pow(2).mean()
    regulariser = config.attention_reg * logits.pow(2).mean() if logits is not None else 0.0
    critic_optimizer.zero_grad(set_to_none=True)
    (critic_loss + regulariser).backward()
    nn.utils.clip_grad_norm_(agent.critic.parameters(), config.max_grad_norm_critic)
    critic_optimizer.step()
    # Algorithm 10.1, step 5 (actors, eqs. 9-10): a ~ pi(o) for every agent;
    # A^i = Q^i(o, a) - sum_a' pi(a' | o^i) Q^i(o, (a', a^{-i}))
    logits_pi = agent.actor(o)
    log_pi_all = torch.log_softmax(logits_pi, dim=-1)
    a_new = sample_actions(logits_pi.detach(), generator)
    log_pi = log_pi_all.gather(-1, a_new.unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        advantage = counterfactual_advantage(agent.q_all(o, a_new), log_pi_all.exp(), a_new)
    actor_loss = (log_pi * (config.temperature * log_pi.detach() - advantage)).mean()
    actor_optimizer.zero_grad(set_to_none=True)
    (actor_loss + config.policy_reg * logits_pi.pow(2).mean()).backward()
    nn.utils.clip_grad_norm_(agent.actor.parameters(), config.max_grad_norm_actor)
    actor_optimizer.step()
    soft_update(target, agent, config.tau)  # Algorithm 10.1, step 6
    entropy = -(log_pi_all.exp() * log_pi_all).sum(-1).mean()
    return {"critic_loss": critic_loss.item(), "actor_loss": actor_loss.item(), "q_mean": q.mean().item(),
            "entropy": entropy.item()}
