"""Multi-agent PPO with centralized critics and decentralized actors (MAPPO, Yu et al. 2022), in one
file in the style of CleanRL: every hyperparameter in :class:`MAPPOConfig`, the whole loop in
:func:`train`.

Centralized training: agent i is trained with the advantage of its own centralized value
v_hat^i = v([o^1..o^m]; w^i) — a concatenation or a self-attention critic (:mod:`attnmarl.nets.critics`,
figs. 17.7 and 17.8 of the source), which computes all m values in one pass. The actor is any policy of
:mod:`attnmarl.nets.policies` (``MAPPOConfig.actor``): decentralized, pi(a^i | o^i; theta), as in
MAPPO (chapter 7), or centralized, pi(a^i | [o^1..o^m]; theta^i) (chapter 8). All of them map the
observations (batch, m, obs_dim) to one vector per agent, y (batch, m, d_y), which becomes a
distribution over agent i's action:

- discrete actions: y^i are the logits of pi^i, a categorical distribution over the 5 moves;
- continuous actions (``continuous_actions=True``; mpe2's ``Box(0, 1, (5,))``): a Gaussian policy
  N(mu^i, diag(sigma^2)) with mean mu^i = sigmoid(y^i) in (0, 1)^5 and a learned log sigma per agent
  type; the sampled a^i is clipped to [0, 1] before the environment sees it (the log-probability is
  that of the unclipped sample, as in CleanRL's continuous PPO), and evaluation acts with the mean
  a^i = mu([o]; theta^i) — the deterministic policy of the source.

One update:

1. **Rollout** — ``rollout_steps`` steps of ``num_envs`` batched environments (numpy ports,
   auto-reset; :func:`collect_rollout`, which MAT's loop shares). Only the actor runs while stepping; the critic
   evaluates the whole rollout afterwards in one batched pass.
2. **GAE** (Schulman et al. 2016), per agent:
   delta_t = r_t + gamma V(o_{t+1}) - V(o_t),   A_t = delta_t + gamma lambda A_{t+1},
   with the recursion cut where an episode ended. When an episode was *truncated* at the time limit
   the next state still has a value — the observation does not show the clock — so V(o_{t+1}) is
   the value of ``info["final_obs"]`` (the last observation of that episode, not the first of the
   next); after a *termination* it is 0.
3. **PPO** (Schulman et al. 2017), ``update_epochs`` passes over ``num_minibatches`` minibatches:
   the clipped surrogate E[min(rho A, clip(rho, 1 - eps, 1 + eps) A)] with rho = pi_theta / pi_old,
   advantages normalised per minibatch (over all agents, or per agent in games), an entropy bonus,
   and the critic regressed onto the returns G_t = A_t + V(o_t). Targets are normalised per agent
   with running statistics (MAPPO's value normalisation), so the same learning rate suits
   simple_spread's small rewards and simple_tag's +-10.

Chapter 7's Algorithm 7.1 states an update in seven steps; the comments ``# Algorithm 7.1, step n`` mark the
lines of each, which the book shows under the step (:mod:`attnmarl.site.codelines`).

Everything is vectorised over environments and agents. The networks run and learn on ``device`` (the CPU by
default, or a GPU): the ports step on the CPU, each step's observations go to the device once, and the
rollout's buffers, the critic pass, GAE and the PPO epochs stay there.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..checks import check_choice, check_config_fields, check_finite, check_indices, check_sizes
from ..costs import RolloutBudget, check_numbers, check_on_policy_budget
from ..devices import check_device
from ..envs import BatchedEnv, make_batched, scenario_name
from ..envs.scenarios import given_port_kwargs
from ..envs.sight import check_rho, check_sight_scenario
from ..files.checkpoint import FORMAT, config_from, read_checkpoint, resolve_asset
from ..nets import Actor, AttentionCritic, AttentionPolicy, ConcatCritic, ConcatPolicy, EntityActor
from ..nets.messages import MESSAGES, CommActor
from ..nets.policies import MIXINGS, DecoyActor, DecoyEntityActor, check_decoy_view
from ..nets.sighted import SightedActor, SightedEntityActor
from .compile import compile_in_place
from .estimate import Probe, RunEstimate, measure, on_policy, probe, probe_observations, rollout_buffers, start

__all__ = ["MAPPOConfig", "CRITICS", "ACTORS", "EnvSpec", "env_spec", "ValueNorm", "MAPPOAgent", "make_agent",
           "ACTOR_ARCHITECTURE", "copy_actor", "load_actor_from", "normal_noise", "sample_actions", "log_prob",
           "gaussian_log_prob", "Rollout", "collect_rollout", "bootstrap_values", "gae", "normalize_advantages",
           "check_run_finite", "train_stats", "estimate", "train"]


@dataclass
class MAPPOConfig(RolloutBudget):
    """Every setting of a MAPPO run. ``asdict(config)`` is stored in each checkpoint."""

    # environment (a batched port; evaluation uses mpe2 with the same arguments)
    scenario: str = "simple_spread"
    scenario_kwargs: dict[str, Any] = field(default_factory=lambda: {"N": 3})
    num_envs: int = 128
    rollout_steps: int = 25
    total_steps: int = 5_000_000
    """Environment steps (one step of one environment, all its agents) over the whole run."""
    seed: int = 0
    # networks
    critic: str = "attention"
    """"attention" (fig. 17.8) or "concat" (fig. 17.7)."""
    d_x: int = 32
    """Width of the shared encoder's output x^i (and f^i of the concatenation critic)."""
    heads: int = 2
    """l, attention heads per block."""
    d_q: int = 16
    d_out: int = 16
    depth: int = 1
    """Attention -> FC blocks of the attention critic."""
    critic_hidden: int = 64
    """Hidden width of each agent's unshared head g^i."""
    actor: str = "flat"
    """"flat" (decentralized MLP), "concat" (centralized, fig. 17.7's shape), "attention" (centralized,
    fig. 17.8's shape, with the critic's d_x, heads, d_q, d_out and depth), "entity"
    (decentralized entity-token attention) or "comm" (entity encoders that exchange TarMAC messages,
    :class:`attnmarl.nets.messages.CommActor`)."""
    actor_hidden: int = 64
    """Hidden width of the flat actor's layers and of the centralized policies' heads g^i."""
    entity_d: int = 32
    """Token width d of the entity actor (split over ``entity_heads`` heads)."""
    entity_heads: int = 2
    entity_ff: int = 64
    """Hidden width of the entity actor's feed-forward layer."""
    entity_frame: str = "egocentric"
    """Tokens of the entity actor relative to the agent ("egocentric", decentralized) or in world
    coordinates from every agent's observation ("absolute", centralized; simple_spread only)."""
    entity_mixing: str = "attention"
    """How the entity actor mixes its tokens: "attention", or "mean" (uniform alpha over the tokens present:
    mean pooling, the control that changes only the weights; :data:`attnmarl.nets.policies.MIXINGS`)."""
    decoy_view: str = "bit"
    """Chapter 12's controls on simple_spread with decoys (:data:`attnmarl.nets.policies.DECOY_VIEWS`), for the
    "flat" and "entity" actors: "bit" (the observation as it is: the designs compared), "oracle" (the decoys hidden:
    the entity actor's key mask leaves out every slot whose is_target bit is 0, so a decoy gets alpha = 0; the flat
    actor, which has no mask, reads the decoy slots as zeros — the same information in the same width and shuffled
    order, so it still has to find its targets among the slots) or "no-bit" (every is_target bit zeroed: decoys look
    like targets). The actor applies it to the raw observation in its forward pass
    (:class:`attnmarl.nets.policies.DecoyView`), so the policy plays the plain environment, mpe2's reference too;
    the critic reads the full observations. A control is refused without decoys (another scenario, or decoys = 0),
    where it would silently train the plain design."""
    sight_radius: float | None = None
    """Limited sight (chapter 11; simple_spread, decentralized actors only): the radius rho within which agent i
    sees a landmark or another agent (:mod:`attnmarl.envs.sight`). The actor applies it to the raw observation
    in its forward pass (:mod:`attnmarl.nets.sighted`), so the policy plays plain mpe2; the critic keeps
    reading every full observation (CTDE). ``None``: full sight, as in mpe2."""
    messages: str = "none"
    """The "comm" actor's messages (:data:`attnmarl.nets.messages.MESSAGES`): "none" (c^i = 0), "mean" (alpha
    uniform over senders) or "attention" (TarMAC's targeted messages)."""
    message_rounds: int = 1
    """Rounds of messages of the "comm" actor before it acts (TarMAC's multi-round communication)."""
    message_d_k: int = 16
    """Width d_k of the "comm" actor's message keys and queries."""
    log_std_init: float = -1.0
    """Initial log sigma of the Gaussian policy (continuous actions only): sigma = 0.37 on a [0, 1] action."""
    init_actor: str = ""
    """Fine-tuning: a checkpoint whose actor (and log sigma) start this run instead of a fresh
    initialisation; the critic starts fresh. A path, or one relative to the shipped assets
    (``policy/pi-spread6-entity-seed{seed}.pt``, where ``{seed}`` becomes this run's seed). The actor
    must have the same architecture; m may differ only for an actor that does not depend on it (entity)."""
    # PPO
    lr_actor: float = 1e-3
    lr_critic: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 0.95
    """Discount. MPE episodes are 25 steps long and a truncated one is bootstrapped (treated as if it
    went on), so the critic predicts a discounted sum over about 1 / (1 - gamma) steps; with 0.99 (a
    100-step horizon, four times the episode) the bootstrapped targets fed back on themselves and
    simple_spread m = 6 diverged to NaN. 0.95 is MADDPG's value for MPE."""
    gae_lambda: float = 0.95
    update_epochs: int = 4
    num_minibatches: int = 2
    clip_coef: float = 0.2
    ent_coef: float = 0.003
    max_grad_norm: float = 0.5
    adv_norm_per_agent: bool = False
    """Normalise each agent's advantages separately in a minibatch (instead of all agents' together):
    for games whose agents' returns differ in scale, such as simple_tag's predators and prey."""
    # evaluation
    eval_deterministic: bool = True
    """Act greedily (argmax) when evaluated on mpe2; sample from pi otherwise."""

    def __post_init__(self) -> None:
        """Refuse a config that would train something other than it says (a ``ValueError`` naming the field)."""
        if not isinstance(self.scenario_kwargs, dict):
            raise ValueError(f"scenario_kwargs must be a dict of mpe2 arguments; got {self.scenario_kwargs!r}")
        self.scenario_kwargs = given_port_kwargs(self.scenario, self.scenario_kwargs)  # names, types ('no' is no bool)
        check_choice("critic", self.critic, CRITICS)
        check_choice("actor", self.actor, ACTORS)
        check_choice("entity_frame", self.entity_frame, ("egocentric", "absolute"))
        check_choice("entity_mixing", self.entity_mixing, MIXINGS)
        if self.entity_mixing != "attention" and self.actor != "entity":
            raise ValueError(f"entity_mixing = {self.entity_mixing!r} changes the entity actor only; this config's "
                             f"actor is {self.actor!r} (use actor='entity', or leave entity_mixing at 'attention')")
        check_decoy_view(self.decoy_view, self.scenario, self.scenario_kwargs)
        if self.decoy_view != "bit" and self.actor not in DECOY_ACTORS:
            raise ValueError(f"decoy_view = {self.decoy_view!r} is built for the actors {list(DECOY_ACTORS)}; this "
                             f"config's actor is {self.actor!r} (leave decoy_view at 'bit')")
        if not isinstance(self.init_actor, str):
            raise ValueError(f"init_actor must be a checkpoint's path, a string ('' for none); got {self.init_actor!r}")
        check_config_fields(self, _SIZES, _RANGES, _FLAGS)
        self._check_sight_and_messages()
        check_on_policy_budget(self)
        if self.adv_norm_per_agent and self.batch_size // self.num_minibatches < 2:
            raise ValueError(f"a minibatch of num_envs * rollout_steps / num_minibatches = "
                             f"{self.batch_size // self.num_minibatches} env step cannot normalise each agent's "
                             "advantages (adv_norm_per_agent: the std of one number is undefined); use at least 2 "
                             "env steps per minibatch")

    def _check_sight_and_messages(self) -> None:
        """Chapter 11's fields: a sight radius rho >= 0 (or None) on a scenario and actor it applies to, and
        messages only for the "comm" actor (``ValueError`` naming the field otherwise)."""
        check_choice("messages", self.messages, MESSAGES)
        if self.actor != "comm" and (self.messages != "none" or self.message_rounds != 1):
            raise ValueError(f"messages and message_rounds are the 'comm' actor's; this config's actor is "
                             f"{self.actor!r} (use actor='comm', or leave messages='none' and message_rounds=1)")
        if self.actor == "comm":
            check_sight_scenario(self.scenario)
            check_choice("entity_frame of the 'comm' actor", self.entity_frame, ("egocentric",))
        if self.sight_radius is None:
            return
        self.sight_radius = check_rho(self.sight_radius)
        check_sight_scenario(self.scenario)
        if self.actor not in SIGHTED_ACTORS or self.entity_frame != "egocentric":
            raise ValueError(f"sight_radius limits what a decentralized actor sees ({list(SIGHTED_ACTORS)}, egocentric "
                             f"tokens); this config's actor is {self.actor!r} with {self.entity_frame} tokens")


_SIZES = ("num_envs", "rollout_steps", "total_steps", "update_epochs", "num_minibatches", "d_x", "heads", "d_q",
          "d_out", "depth", "critic_hidden", "actor_hidden", "entity_d", "entity_heads", "entity_ff", "message_rounds",
          "message_d_k")
"""The fields of :class:`MAPPOConfig` that must be positive integers (sizes and counts)."""

_RANGES = (("gamma", 0.0, 1.0, True), ("gae_lambda", 0.0, 1.0, False), ("lr_actor", 0.0, 1.0, False),
           ("lr_critic", 0.0, 1.0, False), ("clip_coef", 0.0, math.inf, True),
           ("ent_coef", 0.0, math.inf, False), ("max_grad_norm", 0.0, math.inf, True),
           ("log_std_init", -20.0, 20.0, False))
"""(field, low, high, low end open): gamma in (0, 1], gae_lambda in [0, 1], rates in [0, 1] (0 freezes that network),
clip_coef and max_grad_norm > 0 (0 = no update), log sigma in [-20, 20] (sigma a float32), all finite."""

_FLAGS = ("anneal_lr", "adv_norm_per_agent", "eval_deterministic")
"""The fields that must be bools (a string such as 'no' would act as True)."""


CRITICS: dict[str, type[nn.Module]] = {"attention": AttentionCritic, "concat": ConcatCritic}
ACTORS: dict[str, type[nn.Module]] = {"flat": Actor, "concat": ConcatPolicy, "attention": AttentionPolicy,
                                      "entity": EntityActor, "comm": CommActor}
DECOY_ACTORS = ("flat", "entity")
"""The actors that ``decoy_view`` can put under a control (decentralized ones, each reading its own o^i)."""
SIGHTED_ACTORS = ("flat", "entity", "comm")
"""The actors that ``sight_radius`` can limit (decentralized ones: each reads its own o^i)."""


@dataclass(frozen=True)
class EnvSpec:
    """What the networks need to know about a scenario."""

    m: int
    obs_dim: int
    n_actions: int
    """Discrete moves, or the length of a continuous action (both 5 in the ported scenarios)."""
    continuous: bool
    agent_types: tuple[int, ...]
    """Type of each agent (0, 1, ... in order of first appearance): agents named ``adversary_*``
    have one type, ``agent_*`` another, and so on. Agents of a type share the actor's weights. In
    collect_treasure each deposit is a type of its own: deposit d accepts only treasure of type d, and
    its observation does not say which deposit it is, so deposits sharing weights could not tell
    which collectors to meet."""

    def __post_init__(self) -> None:
        check_sizes(m=self.m, obs_dim=self.obs_dim, n_actions=self.n_actions)
        if len(self.agent_types) != self.m:
            raise ValueError(f"agent_types must give one type per agent (m = {self.m}); got {self.agent_types}")


def agent_kind(scenario: str, agent: str) -> str:
    """What makes agents interchangeable (see :attr:`EnvSpec.agent_types`): ``adversary_2`` → ``adversary``,
    but each collect_treasure deposit is its own kind (``deposit_1`` → ``deposit_1``)."""
    if scenario_name(scenario) == "collect_treasure" and agent.startswith("deposit_"):
        return agent
    return agent.rsplit("_", 1)[0]


def env_spec(scenario: str, **scenario_kwargs: Any) -> EnvSpec:
    """The :class:`EnvSpec` of a ported scenario with these arguments."""
    env = make_batched(scenario, 1, **scenario_kwargs)
    kinds = [agent_kind(scenario, name) for name in env.agents]
    first = list(dict.fromkeys(kinds))
    return EnvSpec(env.n_agents, env.obs_dim, env.n_actions, env.continuous_actions,
                   tuple(first.index(k) for k in kinds))


class ValueNorm(nn.Module):
    """Running mean and variance of each agent's value targets (MAPPO's value normalisation).

    The critic predicts normalised values; v_hat = mean + std * prediction. Stored as buffers, so
    a checkpoint carries them.
    """

    def __init__(self, m: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("mean", torch.zeros(m))
        self.register_buffer("var", torch.ones(m))
        self.register_buffer("count", torch.tensor(0.0))

    def update(self, x: Tensor) -> None:
        """Fold a batch of targets (n, m), n >= 1, into the statistics (parallel variance formula). An empty batch
        (its mean and variance are NaN), targets of another m or non-finite ones raise ``ValueError``: each would
        turn the running statistics, and every value the critic predicts after, into NaN."""
        m = self.mean.shape[0]
        if not isinstance(x, Tensor) or x.dim() != 2 or x.shape[1] != m or x.shape[0] == 0:
            shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"the value targets must be a tensor of shape (n, m) = (n, {m}) with n >= 1 rows; got "
                             f"{shape}")
        check_finite("the value targets", x)
        n = x.shape[0]
        batch_mean, batch_var = x.mean(0), x.var(0, unbiased=False)
        total = self.count + n
        delta = batch_mean - self.mean
        self.var.copy_((self.var * self.count + batch_var * n + delta**2 * self.count * n / total) / total)
        self.mean.add_(delta * n / total)
        self.count.copy_(total)

    def normalize(self, x: Tensor) -> Tensor:
        return (x - self.mean) / (self.var + self.eps).sqrt()

    def denormalize(self, x: Tensor) -> Tensor:
        return x * (self.var + self.eps).sqrt() + self.mean


class MAPPOAgent(nn.Module):
    """The actor, the centralized critic, the critic's value normalisation and, for continuous actions,
    the log sigma of each agent type's Gaussian policy."""

    def __init__(self, actor: nn.Module, critic: nn.Module, value_norm: ValueNorm, spec: EnvSpec,
                 log_std_init: float = -1.0) -> None:
        super().__init__()
        self.actor, self.critic, self.value_norm = actor, critic, value_norm
        self.continuous = spec.continuous
        self.log_std = (nn.Parameter(torch.full((max(spec.agent_types) + 1, spec.n_actions), log_std_init))
                        if spec.continuous else None)
        self.register_buffer("_types", torch.tensor(spec.agent_types), persistent=False)

    def v_hat(self, o: Tensor) -> Tensor:
        """Values v_hat^1..v_hat^m of observations (batch, m, obs_dim), in return units: (batch, m)."""
        return self.value_norm.denormalize(self.critic(o))

    def policy_parameters(self) -> list[nn.Parameter]:
        """The parameters the policy-gradient step trains: the actor's and log sigma."""
        return list(self.actor.parameters()) + ([self.log_std] if self.log_std is not None else [])

    def mean_action(self, y: Tensor) -> Tensor:
        """mu^i = sigmoid(y^i): the continuous policy's mean, (..., m, 5), inside mpe2's [0, 1]."""
        return torch.sigmoid(y)

    def act(self, o: Tensor, generator: torch.Generator | None = None,
            deterministic: bool = False) -> tuple[Tensor, Tensor]:
        """Actions for observations (batch, m, obs_dim) and their log-probabilities (batch, m).

        Discrete: a (batch, m) ints, sampled or the argmax. Continuous: a (batch, m, 5), a Gaussian
        sample around mu (unclipped; see :meth:`env_actions`) or mu itself.
        """
        y = self.actor(o)
        check_finite("the policy's outputs y", y)  # argmax and clamp would turn NaN into a plausible action
        if not self.continuous:
            a = y.argmax(-1) if deterministic else sample_actions(y, generator)
            return a, log_prob(y, a)[0]
        mu = self.mean_action(y)
        std = self.log_std[self._types].exp()
        a = mu if deterministic else mu + std * normal_noise(mu, generator)
        return a, gaussian_log_prob(mu, self.log_std[self._types], a)[0]

    def evaluate_actions(self, o: Tensor, a: Tensor) -> tuple[Tensor, Tensor]:
        """log pi(a^i | .) of the given actions and the entropy of each pi^i, both (batch, m)."""
        y = self.actor(o)
        if not self.continuous:
            return log_prob(y, a)
        return gaussian_log_prob(self.mean_action(y), self.log_std[self._types], a)

    def env_actions(self, a: Tensor) -> np.ndarray:
        """Actions as the environment takes them, on the CPU: ints, or continuous ones clipped to [0, 1]."""
        return (a.clamp(0.0, 1.0) if self.continuous else a).cpu().numpy()


def make_agent(config: MAPPOConfig, spec: EnvSpec | None = None) -> MAPPOAgent:
    """A freshly initialised agent for ``config`` (the spec is read from the scenario if not given)."""
    spec = spec or env_spec(config.scenario, **config.scenario_kwargs)
    m, obs_dim, d_y, types = spec.m, spec.obs_dim, spec.n_actions, spec.agent_types
    rho = config.sight_radius
    if config.actor == "flat" and rho is not None:
        actor: nn.Module = SightedActor(config.scenario, m, obs_dim, d_y, rho, types, d_hidden=config.actor_hidden)
    elif config.actor == "flat" and config.decoy_view != "bit":
        actor = DecoyActor(config.scenario, config.scenario_kwargs, m, obs_dim, d_y, config.decoy_view, types,
                           d_hidden=config.actor_hidden)
    elif config.actor == "flat":
        actor = Actor(m, obs_dim, d_y, types, d_hidden=config.actor_hidden)
    elif config.actor == "concat":
        actor = ConcatPolicy(m, obs_dim, d_y, types, d_x=config.d_x, d_hidden=config.actor_hidden)
    elif config.actor == "attention":
        actor = AttentionPolicy(m, obs_dim, d_y, types, d_x=config.d_x, d_q=config.d_q, d_out=config.d_out,
                                heads=config.heads, depth=config.depth, d_hidden=config.actor_hidden)
    elif config.actor == "comm":
        actor = CommActor(config.scenario, config.scenario_kwargs, m, obs_dim, d_y, rho, types, d=config.entity_d,
                          heads=config.entity_heads, d_ff=config.entity_ff, mixing=config.entity_mixing,
                          messages=config.messages, rounds=config.message_rounds, d_k=config.message_d_k,
                          d_hidden=config.actor_hidden)
    elif rho is not None:
        actor = SightedEntityActor(config.scenario, config.scenario_kwargs, m, obs_dim, d_y, rho, types,
                                   d=config.entity_d, heads=config.entity_heads, d_ff=config.entity_ff,
                                   mixing=config.entity_mixing)
    elif config.decoy_view != "bit":
        actor = DecoyEntityActor(config.scenario, config.scenario_kwargs, m, obs_dim, d_y, config.decoy_view, types,
                                 d=config.entity_d, heads=config.entity_heads, d_ff=config.entity_ff,
                                 mixing=config.entity_mixing)
    else:
        actor = EntityActor(config.scenario, config.scenario_kwargs, m, obs_dim, d_y, types, d=config.entity_d,
                            heads=config.entity_heads, d_ff=config.entity_ff, frame=config.entity_frame,
                            mixing=config.entity_mixing)
    if config.critic == "attention":
        critic: nn.Module = AttentionCritic(m, obs_dim, types, d_x=config.d_x, d_q=config.d_q,
                                            d_out=config.d_out, heads=config.heads, depth=config.depth,
                                            d_hidden=config.critic_hidden)
    else:
        critic = ConcatCritic(m, obs_dim, types, d_x=config.d_x, d_hidden=config.critic_hidden)
    return MAPPOAgent(actor, critic, ValueNorm(m), spec, config.log_std_init)


ACTOR_ARCHITECTURE = ("scenario", "actor", "d_x", "heads", "d_q", "d_out", "depth", "actor_hidden", "entity_d",
                      "entity_heads", "entity_ff", "entity_frame", "entity_mixing", "decoy_view", "sight_radius",
                      "messages", "message_rounds", "message_d_k")
"""The fields that fix the actor's design. Its shapes may still depend on m (``scenario_kwargs``): only
the entity actor's do not, so only its weights move to another number of agents."""


def load_actor_from(agent: MAPPOAgent, config: MAPPOConfig, path: str | Path) -> None:
    """Copy the actor (and, for continuous actions, log sigma) of the MAPPO checkpoint at ``path`` into
    ``agent``, built for ``config``, which may have other scenario arguments (another m). A relative path
    that does not exist is looked up in the shipped assets. Raises ``ValueError`` when the file is no
    MAPPO checkpoint, when the actors differ in design or action space, or when the checkpoint's actor
    depends on m and m differs (a flat actor reads a fixed-width o^i)."""
    path = resolve_asset(path)
    data = read_checkpoint(path)
    if data["format"] != FORMAT:
        raise ValueError(f"{path} holds a {data['format']} agent, not a MAPPO one ({FORMAT}): only a MAPPO "
                         "actor can start a MAPPO run")
    copy_actor(agent, config, config_from(MAPPOConfig, path, data["config"]), data["state_dict"], path)


def copy_actor(agent: nn.Module, config: Any, saved: Any, state: dict[str, Tensor], path: str | Path) -> None:
    """Copy the actor (and log sigma, if any) of a checkpoint already read — its config ``saved`` and its
    ``state`` — into ``agent``, built for ``config`` (a MAPPO or MADDPG config of the same algorithm)."""
    differ = [f"{name}: checkpoint {getattr(saved, name, None)!r}, here {getattr(config, name, None)!r}"
              for name in ACTOR_ARCHITECTURE if getattr(saved, name, None) != getattr(config, name, None)]
    if type(config) is not type(saved):
        differ.insert(0, f"algorithm: checkpoint {type(saved).__name__}, here {type(config).__name__}")
    continuous = [bool(c.scenario_kwargs.get("continuous_actions", False)) for c in (saved, config)]
    if continuous[0] != continuous[1]:
        differ.append(f"action space: checkpoint {_action_space(continuous[0])}, here {_action_space(continuous[1])} "
                      "(continuous_actions; an actor's outputs are logits for discrete actions, means for continuous "
                      "ones)")
    if differ:
        raise ValueError(f"{path} holds another actor than this config's — " + "; ".join(differ))
    actor = {key.removeprefix("actor."): value for key, value in state.items() if key.startswith("actor.")}
    try:
        agent.actor.load_state_dict(actor)
    except RuntimeError:
        raise ValueError(_actor_misfit(path, saved, config)) from None
    if getattr(agent, "log_std", None) is not None and "log_std" in state:
        with torch.no_grad():
            agent.log_std.copy_(state["log_std"])


def _token_kinds(config: Any) -> list[str]:
    """The kinds of entity token (self, landmark, agent, ...) that some agent of ``config``'s scenario reads."""
    from ..envs import make_reference
    from ..envs.tokens import token_layout

    kinds: dict[str, None] = {}
    for i in range(len(make_reference(config.scenario, **config.scenario_kwargs).possible_agents)):
        kinds.update(dict.fromkeys(token_layout(config.scenario, i, **config.scenario_kwargs).kinds))
    return list(kinds)


def _actor_misfit(path: str | Path, saved: Any, config: Any) -> str:
    """Why the actor of the checkpoint at ``path`` (config ``saved``) does not fit the one built for ``config``.
    The entity actor's weights do not depend on m, but it has an embedding for each kind of token it was
    trained on: a team without some kind (no other agent at m = 1) has a narrower token layout."""
    if saved.actor == "entity":
        trained, here = _token_kinds(saved), _token_kinds(config)
        missing = [kind for kind in trained if kind not in here]
        if missing:
            alone = " (a team of one has no other agent)" if "agent" in missing else ""
            return (f"{path}: its entity actor was trained on {saved.scenario_kwargs}, on tokens of the kinds "
                    f"{trained}, and has an embedding for each kind; with {config.scenario_kwargs} no agent has a "
                    f"token of the kind {' or '.join(repr(kind) for kind in missing)}{alone}, so the layout of its "
                    "tokens differs and the actor cannot run there: give a team with every kind of entity it was "
                    "trained on (for simple_spread, N >= 2)")
        return (f"{path}: its entity actor was trained with {saved.scenario_kwargs} on tokens of the kinds {trained}, "
                f"and with {config.scenario_kwargs} the tokens have the kinds {here}, in another layout, so its "
                "weights do not fit")
    return (f"{path}: its {saved.actor} actor was trained with {saved.scenario_kwargs}, and its weights have shapes "
            f"that depend on them, so it cannot run with {config.scenario_kwargs} (only the entity actor runs at "
            "any m)")


def _action_space(continuous: bool) -> str:
    return "continuous actions" if continuous else "discrete actions"


def normal_noise(like: Tensor, generator: torch.Generator | None) -> Tensor:
    """N(0, 1) noise of ``like``'s shape, drawn on the CPU in float32 from ``generator`` (a CPU generator) and
    moved to ``like``'s device and dtype, so that a run draws the same numbers on every device."""
    return torch.randn(like.shape, generator=generator, dtype=torch.float32).to(like)


def sample_actions(logits: Tensor, generator: torch.Generator | None) -> Tensor:
    """a ~ softmax(logits) by the Gumbel-max trick: argmax(logits - log E), E ~ Exp(1).

    E is drawn on the CPU in float32 from ``generator`` (a CPU generator) and moved to the logits' device
    and dtype, so that a run draws the same numbers on every device. NaN or infinite logits raise
    ``ValueError`` (argmax would read NaN as the largest and pick it)."""
    check_finite("logits", logits)
    exponential = torch.empty(logits.shape, dtype=torch.float32).exponential_(generator=generator).to(logits)
    return (logits - exponential.log()).argmax(-1)


def log_prob(logits: Tensor, actions: Tensor) -> tuple[Tensor, Tensor]:
    """log pi(a | o) of the given actions, (..., m) integers in [0, n_actions), and the entropy of pi, both (..., m)."""
    check_indices("actions", actions, logits.shape[-1], tuple(logits.shape[:-1]), "action")
    log_pi = torch.log_softmax(logits, dim=-1)
    entropy = -(log_pi.exp() * log_pi).sum(-1)
    return log_pi.gather(-1, actions.unsqueeze(-1)).squeeze(-1), entropy


def gaussian_log_prob(mu: Tensor, log_std: Tensor, actions: Tensor) -> tuple[Tensor, Tensor]:
    """log N(a; mu, diag(sigma^2)) summed over the action's dimensions, and the Gaussian's entropy,
    both (..., m). ``mu`` and ``actions`` are (..., m, d); ``log_std`` (m, d) broadcasts."""
    z = (actions - mu) / log_std.exp()
    log_p = -0.5 * z.pow(2) - log_std - 0.5 * math.log(2 * math.pi)
    entropy = (log_std + 0.5 * math.log(2 * math.pi * math.e)).sum(-1).expand(log_p.shape[:-1])
    return log_p.sum(-1), entropy


@dataclass
class Rollout:
    """The buffers of a rollout, T steps of E batched environments with m agents, which :func:`collect_rollout`
    refills every update, and what carries over from one rollout to the next (episodes run across rollouts)."""

    o: Tensor
    """The observations o_t the actions were taken on, (T, E, m, obs_dim)."""
    a: Tensor
    """The actions a_t: (T, E, m) integers, or (T, E, m, n_actions) continuous ones as sampled (unclipped)."""
    logp: Tensor
    """log pi_old(a^i_t | .), (T, E, m)."""
    r: Tensor
    """The rewards r^i_t, (T, E, m)."""
    terminated: Tensor
    """(T, E) bool: the episode ended at step t by the scenario's own end (the next state's value is 0)."""
    truncated: Tensor
    """(T, E) bool: the episode reached its time limit at step t (the next state's value is V(final_obs))."""
    o_next: Tensor
    """The observation after the last step, (E, m, obs_dim): the next rollout starts from it."""
    episode_return: np.ndarray
    """Each environment's return so far in its running episode, (E, m)."""
    finals: list[tuple[int, Tensor, Tensor]] = field(default_factory=list)
    """(t, the environments truncated at step t, their ``info["final_obs"]``), for :func:`bootstrap_values`."""
    finished: list[np.ndarray] = field(default_factory=list)
    """The returns (n, m) of the episodes that ended in the last rollout, step by step."""

    @classmethod
    def start(cls, env: BatchedEnv, steps: int, spec: EnvSpec, device: torch.device) -> Rollout:
        """Empty buffers on ``device`` for rollouts of ``steps`` steps of ``env``, which is reset: the first
        rollout starts from its first observation."""
        T, E, m, D = steps, env.num_envs, spec.m, spec.obs_dim
        check_numbers("the rollout's observations", ("rollout_steps", T), ("num_envs", E), ("m", m), ("obs_dim", D))
        return cls(o=torch.zeros(T, E, m, D, device=device),
                   a=torch.zeros((T, E, m, spec.n_actions) if spec.continuous else (T, E, m),
                                 dtype=torch.float32 if spec.continuous else torch.long, device=device),
                   logp=torch.zeros(T, E, m, device=device), r=torch.zeros(T, E, m, device=device),
                   terminated=torch.zeros(T, E, dtype=torch.bool, device=device),
                   truncated=torch.zeros(T, E, dtype=torch.bool, device=device),
                   o_next=torch.from_numpy(env.reset()).to(device), episode_return=np.zeros((E, m)))

    @property
    def ended(self) -> Tensor:
        """(T, E) bool: an episode ended at step t (terminated or truncated), which cuts GAE's recursion."""
        return self.terminated | self.truncated


def collect_rollout(env: BatchedEnv, agent: nn.Module, rollout: Rollout, generator: torch.Generator,
                    **act_kwargs: Any) -> None:
    """Refill ``rollout`` with T steps of ``env`` from ``rollout.o_next`` on; call it under ``torch.no_grad()``.

    ``agent.act(o, generator, **act_kwargs)`` gives every agent's action and its log-probability (MAPPO's
    actors all at once, MAT's decoder agent by agent) and ``agent.env_actions(a)`` the actions the environment
    takes. The environments reset themselves where an episode ends; where one was truncated at the time limit,
    ``rollout.finals`` keeps its last observation, ``info["final_obs"]``, to bootstrap from."""
    rollout.finals, rollout.finished = [], []
    o, device = rollout.o_next, rollout.o.device
    for t in range(rollout.o.shape[0]):
        rollout.o[t] = o
        a, rollout.logp[t] = agent.act(o, generator, **act_kwargs)
        rollout.a[t] = a
        o_next, r, terminated, truncated, info = env.step(agent.env_actions(a))
        rollout.r[t] = torch.from_numpy(r)
        rollout.terminated[t], rollout.truncated[t] = torch.from_numpy(terminated), torch.from_numpy(truncated)
        rollout.episode_return += r
        ended = terminated | truncated
        if ended.any():
            rollout.finished.append(rollout.episode_return[ended].copy())
            rollout.episode_return[ended] = 0.0
            if truncated.any():
                rollout.finals.append((t, torch.from_numpy(truncated.nonzero()[0]).to(device),
                                       torch.from_numpy(info["final_obs"][truncated]).to(device)))
        o = torch.from_numpy(o_next).to(device)
    rollout.o_next = o


def bootstrap_values(v_hat: Callable[[Tensor], Tensor], o_buf: Tensor, o_last: Tensor, terminated: Tensor,
                     finals: list[tuple[int, Tensor, Tensor]]) -> tuple[Tensor, Tensor]:
    """V(o_t) and the value of the state after each step t, for a rollout, in one critic pass.

    ``o_buf`` (T, E, m, obs_dim) holds the observations the actions were taken on and ``o_last``
    (E, m, obs_dim) the observation after the last step. After step t the next state's value is
    V(o_{t+1}); but where an episode ended at t, o_{t+1} is the first observation of the *next*
    episode, so it is 0 after a termination (``terminated`` (T, E)) and V(final_obs) after a
    truncation: ``finals`` lists (t, the truncated envs, their ``info["final_obs"]``).
    Returns ``values`` and ``next_values``, both (T, E, m).
    """
    T, E, m = o_buf.shape[:3]
    values = v_hat(torch.cat([o_buf.flatten(0, 1), o_last])).view(T + 1, E, m)
    next_values = values[1:].clone()
    next_values[terminated] = 0.0
    if finals:
        final_values = v_hat(torch.cat([o for _, _, o in finals])).split([len(envs) for _, envs, _ in finals])
        for (t, envs, _), v in zip(finals, final_values):
            next_values[t, envs] = v
    return values[:T], next_values


def gae(rewards: Tensor, values: Tensor, next_values: Tensor, ended: Tensor, gamma: float,
        lam: float) -> Tensor:
    """Generalised advantage estimates A_t (T, E, m).

    ``rewards``, ``values`` (V(o_t)) and ``next_values`` (the value of the state after step t: of
    the next observation, of ``final_obs`` after a truncation, 0 after a termination) are (T, E, m);
    ``ended`` (T, E) is True where an episode ended at step t, which cuts the recursion. Other shapes are
    a ``ValueError`` naming them, never a silent broadcast.
    """
    _check_gae_inputs(rewards, values, next_values, ended)
    deltas = rewards + gamma * next_values - values
    keep = (~ended).unsqueeze(-1).to(rewards.dtype) * gamma * lam
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[0])
    for t in reversed(range(rewards.shape[0])):
        running = deltas[t] + keep[t] * running
        advantages[t] = running
    return advantages


def _check_gae_inputs(rewards: Tensor, values: Tensor, next_values: Tensor, ended: Tensor) -> None:
    """The inputs of :func:`gae`: ``rewards``, ``values`` and ``next_values`` tensors of one shape (T, E, m)
    and ``ended`` a bool tensor (T, E); else ``ValueError`` naming the shapes (values of shape (T, E, 1)
    would broadcast against rewards (T, E, m) and give every agent the same wrong advantages)."""
    named = {"rewards": rewards, "values": values, "next_values": next_values, "ended": ended}
    for name, x in named.items():
        if not isinstance(x, Tensor):
            raise ValueError(f"gae: {name} must be a torch.Tensor; got {type(x).__name__}")
    if rewards.dim() != 3 or values.shape != rewards.shape or next_values.shape != rewards.shape:
        raise ValueError(f"gae: rewards, values and next_values must all have shape (T, E, m); got "
                         f"{tuple(rewards.shape)}, {tuple(values.shape)} and {tuple(next_values.shape)}")
    if ended.dtype != torch.bool or ended.shape != rewards.shape[:2]:
        raise ValueError(f"gae: ended must be a bool tensor of shape (T, E) = {tuple(rewards.shape[:2])}, the "
                         f"rewards' first two dimensions; got dtype {ended.dtype} and shape {tuple(ended.shape)}")


def normalize_advantages(adv: Tensor, per_agent: bool) -> Tensor:
    """Advantages (minibatch, m) shifted and scaled to mean 0 and std 1: over all entries, or
    separately for each agent (column) with ``per_agent``. Fewer than two advantages to normalise together
    (one row per agent, one entry, none) have no standard deviation: ``ValueError``, not NaN."""
    if not isinstance(adv, Tensor) or adv.dim() != 2:
        got = tuple(adv.shape) if isinstance(adv, Tensor) else type(adv).__name__
        raise ValueError(f"adv must be a tensor (minibatch, m); got {got}")
    together = adv.shape[0] if per_agent else adv.numel()
    if together < 2:
        raise ValueError(f"normalising advantages needs at least two of them {'per agent' if per_agent else 'in all'}: "
                         f"a standard deviation of {together} is undefined (NaN); got adv of shape {tuple(adv.shape)} "
                         "(a larger minibatch)")
    if per_agent:
        return (adv - adv.mean(0)) / (adv.std(0) + 1e-8)
    return (adv - adv.mean()) / (adv.std() + 1e-8)


def estimate(config: MAPPOConfig, evaluation_episodes: int = 0) -> RunEstimate:
    """What a whole run of ``config`` will cost (:mod:`attnmarl.algos.estimate`), with ``evaluation_episodes``
    episodes on mpe2 along or after it: its CPU time and its peak memory, part by part, from a fresh agent's calls
    on four worlds' observations — acting, the critic over a rollout, one minibatch's update — and its optimizer's
    step. :meth:`~attnmarl.algos.estimate.RunEstimate.check` refuses a run estimated beyond the limits;
    :func:`train` checks it first."""
    run, world = start(config, "MAPPO", rollout_buffers)
    return on_policy(run, config, world, probe(_probe, config, {"depth": True, "message_rounds": False}),
                     evaluation_episodes)


def _probe(config: MAPPOConfig) -> Probe:
    """The calls of a run of ``config`` measured on a fresh agent (:func:`attnmarl.algos.estimate.measure`) with
    the observations of four worlds: acting, the value of a rollout, and one minibatch's losses and gradients."""
    spec, o = env_spec(config.scenario, **config.scenario_kwargs), probe_observations(config)
    with torch.random.fork_rng(devices=[]):
        agent = make_agent(config, spec)
    generator = torch.Generator().manual_seed(0)
    a = agent.act(o, generator)[0].detach()

    def update(b: int) -> None:
        agent.zero_grad(set_to_none=True)
        log_p, entropy = agent.evaluate_actions(o[:b], a[:b])
        (log_p.mean() + entropy.mean() + agent.critic(o[:b]).mean()).backward()

    with torch.no_grad():
        act, values = measure(lambda b: agent.act(o[:b], generator)), measure(lambda b: agent.v_hat(o[:b]))
    return Probe.of({"act": act, "values": values, "update": measure(update)}, agent, spec)


def train(config: MAPPOConfig, callback: Callable[[dict[str, float], MAPPOAgent], None] | None = None,
          compile_nets: bool = False, device: str | torch.device = "cpu") -> MAPPOAgent:
    """Train a MAPPO agent on the batched port of ``config.scenario``; returns the trained agent.

    After every update ``callback(stats, agent)`` is called with ``stats``: ``update``,
    ``env_steps``, ``train_return`` (mean over agents and over the episodes that ended in this
    rollout; NaN if none ended), ``train_return_<i>`` per agent, the losses, ``entropy``,
    ``approx_kl``, ``clip_frac``, ``explained_variance`` and ``wall_seconds``. Runs are reproducible
    from ``config.seed`` (the same seed, the same torch thread count, the same numbers). A run whose
    value targets or loss stop being finite raises ``RuntimeError`` at once. ``compile_nets`` runs the
    actor and the critic through ``torch.compile`` (:mod:`attnmarl.algos.compile`).

    ``device`` ("cpu", "cuda" or "auto": :func:`attnmarl.devices.check_device`) is where the agent runs and
    learns; it is built on the CPU and every random number is drawn there, so a run on a GPU starts from
    the same weights and draws the same numbers. Its sums round differently, though, so its numbers drift
    from the CPU's over a run (a different sampled action, then a different episode): the same run, scores
    equal within noise, not bit for bit.

    Before anything of the run exists, its :func:`estimate` is checked: a run estimated at more than a day of CPU
    or half this machine's memory is refused (``ValueError`` naming its biggest part; ``ATTNMARL_ALLOW_COSTLY=1``
    lets it start). Estimating leaves the random state as it was, so a run trains the same numbers either way.
    """
    device = check_device(device)
    estimate(config).check()
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    env = make_batched(config.scenario, config.num_envs, seed=config.seed, **config.scenario_kwargs)
    spec = env_spec(config.scenario, **config.scenario_kwargs)
    agent = make_agent(config, spec)
    if config.init_actor:
        load_actor_from(agent, config, config.init_actor.format(seed=config.seed))
    agent.to(device)
    if compile_nets:
        compile_in_place(agent.actor, agent.critic)
    optimizer = torch.optim.Adam([
        {"params": agent.policy_parameters(), "lr": config.lr_actor},
        {"params": agent.critic.parameters(), "lr": config.lr_critic},
    ], eps=1e-5)
    m = spec.m
    if config.batch_size // config.num_minibatches * m < 2:
        raise ValueError(f"a minibatch of {config.batch_size // config.num_minibatches} env step with m = {m} agent "
                         "holds one advantage, which cannot be normalised; use at least 2 env steps per minibatch")
    rollout = Rollout.start(env, config.rollout_steps, spec, device)
    start = time.perf_counter()

    for update in range(config.num_updates):
        if config.anneal_lr:
            frac = 1.0 - update / config.num_updates
            optimizer.param_groups[0]["lr"] = frac * config.lr_actor
            optimizer.param_groups[1]["lr"] = frac * config.lr_critic

        # 1. rollout: only the actor runs while stepping
        with torch.no_grad():
            collect_rollout(env, agent, rollout, generator)  # Algorithm 7.1, step 1

            # 2. the critic on the whole rollout at once, then GAE
            values, next_values = bootstrap_values(agent.v_hat, rollout.o, rollout.o_next,  # Algorithm 7.1, step 2
                                                   rollout.terminated, rollout.finals)
            advantages = gae(rollout.r, values, next_values, rollout.ended,  # Algorithm 7.1, step 3
                             config.gamma, config.gae_lambda)
            returns = advantages + values  # Algorithm 7.1, step 4
            check_run_finite(returns, "value targets", update, config)
            agent.value_norm.update(returns.flatten(0, 1))

        # 3. PPO epochs over minibatches of env-steps (each with all m agents)
        b_o, b_a, b_logp = rollout.o.flatten(0, 1), rollout.a.flatten(0, 1), rollout.logp.flatten(0, 1)
        b_adv, b_target = advantages.flatten(0, 1), agent.value_norm.normalize(returns.flatten(0, 1))
        minibatch = config.batch_size // config.num_minibatches
        approx_kl, clip_frac = torch.zeros(()), torch.zeros(())
        for _ in range(config.update_epochs):  # Algorithm 7.1, step 5
            order = torch.randperm(config.batch_size, generator=generator).to(device)
            for idx in order.split(minibatch):
                new_logp, entropy = agent.evaluate_actions(b_o[idx], b_a[idx])
                log_ratio = new_logp - b_logp[idx]
                ratio = log_ratio.exp()  # Algorithm 7.1, step 6
                adv = normalize_advantages(b_adv[idx], config.adv_norm_per_agent)
                pg_loss = -torch.min(ratio * adv, ratio.clamp(1 - config.clip_coef, 1 + config.clip_coef) * adv).mean()
                v_loss = 0.5 * (agent.critic(b_o[idx]) - b_target[idx]).pow(2).mean()  # Algorithm 7.1, step 7
                entropy = entropy.mean()
                loss = pg_loss - config.ent_coef * entropy + v_loss
                check_run_finite(loss, "loss", update, config)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(agent.policy_parameters(), config.max_grad_norm)
                nn.utils.clip_grad_norm_(agent.critic.parameters(), config.max_grad_norm)
                optimizer.step()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - log_ratio).mean()
                    clip_frac = ((ratio - 1).abs() > config.clip_coef).float().mean()

        if callback is not None:
            callback(train_stats(update, config, rollout.finished, pg_loss, v_loss, entropy, approx_kl, clip_frac,
                                 returns, values, time.perf_counter() - start, m), agent)
    return agent


def check_run_finite(x: Tensor, what: str, update: int, config: Any) -> None:
    """Stop a diverged run loudly instead of training on NaNs (and shipping them): ``RuntimeError`` naming ``what``
    (the value targets, the loss), the update and the run, if ``x`` holds NaN or an infinity. ``config`` is a
    MAPPO or MAT config."""
    if not torch.isfinite(x).all():
        raise RuntimeError(
            f"training diverged: non-finite {what} in update {update + 1} (after "
            f"{update * config.batch_size:,} env steps) of {config.critic} critic on {config.scenario} "
            f"{config.scenario_kwargs}, seed {config.seed}"
        )


def train_stats(update: int, config: Any, finished: list[np.ndarray], pg_loss: Tensor, v_loss: Tensor,
                entropy: Tensor, approx_kl: Tensor, clip_frac: Tensor, returns: Tensor, values: Tensor,
                wall_seconds: float, m: int) -> dict[str, float]:
    """The numbers :func:`train` (and MAT's, :func:`attnmarl.algos.mat.train`) reports after an update, for a MAPPO
    or MAT ``config``; ``finished`` holds the returns of the episodes that ended in the rollout
    (:attr:`Rollout.finished`), and the losses are those of the last minibatch."""
    episodes = np.concatenate(finished) if finished else np.full((1, m), np.nan)
    per_agent = episodes.mean(0)
    explained = 1.0 - float((returns - values).var() / returns.var().clamp_min(1e-8))
    stats = {
        "update": update + 1,
        "env_steps": (update + 1) * config.batch_size,
        "wall_seconds": wall_seconds,
        "train_return": float(per_agent.mean()),
        "policy_loss": pg_loss.item(),
        "value_loss": v_loss.item(),
        "entropy": entropy.item(),
        "approx_kl": float(approx_kl),
        "clip_frac": float(clip_frac),
        "explained_variance": explained,
    }
    stats.update({f"train_return_{i}": float(per_agent[i]) for i in range(m)})
    return stats

