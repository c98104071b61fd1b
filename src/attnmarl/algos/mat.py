"""Training the Multi-Agent Transformer (MAT; Wen et al., NeurIPS 2022) and MAT-Dec with one PPO loss, in one
file in the style of CleanRL: every hyperparameter in :class:`MATConfig`, the whole loop in :func:`train`.

The network (:class:`attnmarl.nets.mat.MultiAgentTransformer`) is actor and critic at once: its encoder gives
every agent's value V(o_hat^i), its decoder every agent's policy pi(a^i | o, a^1..a^{i-1}). One update
(chapter 13's Algorithm 13.1; the comments ``# Algorithm 13.1, step n`` mark its steps in :func:`train`):

1. **Rollout** — ``rollout_steps`` steps of ``num_envs`` batched environments, collected as MAPPO's are
   (:func:`attnmarl.algos.mappo.collect_rollout`); acting decodes agent by agent (m decoder passes per step).
   With ``shuffle_order`` each rollout draws a random decision order per environment, and the update trains in
   that order.
2. **Values and GAE** — the book's GAE per agent (:func:`attnmarl.algos.mappo.gae`) on values from
   :func:`attnmarl.algos.mappo.bootstrap_values`: a truncated episode is bootstrapped from the value of its
   final observation, a terminated one from 0. The paper (its encoder's loss and the text after its
   decoder's) estimates one joint advantage from the mean of the agents' values; in simple_spread every agent
   has its own reward, so each agent here gets its own advantage, A^i_t from r^i and V(o_hat^i).
3. **PPO** — ``update_epochs`` passes over ``num_minibatches`` minibatches of one loss over both halves
   (the paper's encoder and decoder losses, in PPO's clipped form):

       L = - mean_{t,i} min(rho^i A^i, clip(rho^i, 1 - eps, 1 + eps) A^i)              (the decoder's)
           + value_coef mean_{t,i} max((V^i - G^i)^2, (V_old^i + clip(V^i - V_old^i, -eps, eps) - G^i)^2)
           - ent_coef mean_{t,i} H(pi^i)

   with rho^i = pi_theta(a^i | o, a^{<i}) / pi_old(a^i | o, a^{<i}) from one teacher-forced pass, advantages
   normalised over the minibatch, and values and returns G = A + V_old in normalised units: the targets are
   normalised with running statistics (the paper's value normalisation), one mean and variance for all agents,
   since the agents share one value head and one set of weights at any m.

MAT's recipe where it matters, from its released code's simple_spread script (``mat/scripts/train_mpe.sh``; the
paper's benchmarks are SMAC, Multi-Agent MuJoCo, Dexterous Hands and Google Research Football, none of them MPE):
128 environments, 25-step rollouts, 10 epochs of one minibatch, a small clip, eps = 0.05, also bounding how far a
value moves per update; value normalisation and entropy coefficient 0.01 (the code's defaults); learning rate 5e-4,
the code's default (the script sets 7e-4), and the book's budget (the script runs 20 million env-steps). The
value loss is the clipped squared error (the code's default is a Huber loss). The widths are the book's entity
actor's (d = 32, 2 heads), not the code's defaults (64, 1 head), so that MAT and the entity actor compare at one
width; gamma is the book's 0.95 (see :attr:`attnmarl.algos.mappo.MAPPOConfig.gamma`). The paper's decoder loss
weighs every agent by one joint advantage, by GAE on the mean of the agents' values; its released code, with value
normalisation, runs GAE per agent, as this module does (step 2).

Evaluation acts greedily agent by agent in agent order (:meth:`MATAgent.act`); :func:`order_scores` scores a
checkpoint under random decision orders. The networks run and learn on ``device``, as MAPPO's do.
"""
from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..checks import (
    MAX_EPISODES,
    check_bool,
    check_choice,
    check_config_fields,
    check_episodes,
    check_indices,
    check_int,
    check_seed,
)
from ..costs import RolloutBudget, check_numbers, check_on_policy_budget
from ..devices import check_device
from ..envs import make_batched, scenario_name
from ..envs.decoys import NAME as DECOYS
from ..envs.scenarios import given_port_kwargs
from ..nets.mat import MultiAgentTransformer
from .estimate import Probe, RunEstimate, measure, on_policy, probe, probe_observations, rollout_buffers, start
from .mappo import (
    EnvSpec,
    Rollout,
    ValueNorm,
    bootstrap_values,
    check_run_finite,
    collect_rollout,
    env_spec,
    gae,
    log_prob,
    normalize_advantages,
    sample_actions,
    train_stats,
)
from .qmix import COOPERATIVE_SCENARIOS

__all__ = ["VARIANTS", "MAT_SCENARIOS", "MATConfig", "MATAgent", "make_agent", "random_orders", "order_scores",
           "estimate", "train"]

MAT_SCENARIOS = (*COOPERATIVE_SCENARIOS, DECOYS)
"""The scenarios MAT trains on: the cooperative ones of mpe2 the book ports, and chapter 12's simple_spread with
decoys, whose agents are one team as simple_spread's are (decoys pay nothing to anyone). Each agent's token is the
entity encoder over that scenario's tokens, so the decoys reach MAT as landmark tokens with their is_target bit."""

VARIANTS = ("mat", "mat-dec")
"""``"mat"``: the encoder-decoder; ``"mat-dec"``: the same encoder as critic, decentralized actors pi(a^i | x^i)."""


@dataclass
class MATConfig(RolloutBudget):
    """Every setting of a MAT or MAT-Dec run. ``asdict(config)`` is stored in each checkpoint."""

    # environment (a batched port with discrete actions; evaluation uses mpe2 with the same arguments)
    scenario: str = "simple_spread"
    scenario_kwargs: dict[str, Any] = field(default_factory=lambda: {"N": 3})
    num_envs: int = 128
    rollout_steps: int = 25
    total_steps: int = 1_500_000
    """Environment steps (one step of one environment, all its agents) over the whole run."""
    seed: int = 0
    # network
    variant: str = "mat"
    """"mat" or "mat-dec" (:data:`VARIANTS`)."""
    d: int = 32
    """Width of the agent tokens, the encoder and the decoder (the paper: 64; the book's entity actor: 32)."""
    heads: int = 2
    """Heads of the encoder's and decoder's attentions (the paper: 1)."""
    d_ff: int = 64
    """Hidden width of every feed-forward block (the entity encoder's too)."""
    entity_heads: int = 2
    """Heads of the entity encoder that makes each agent's token."""
    blocks: int = 1
    """Encoder blocks, and as many decoder blocks (the paper: 1 on most tasks)."""
    shuffle_order: bool = False
    """Draw a random decision order per environment for every rollout (and train in it); else agent order."""
    # PPO, MAT's recipe
    lr: float = 5e-4
    """Adam's learning rate; 0 keeps the network as it is (a frozen policy, as the order tests train one)."""
    anneal_lr: bool = True
    gamma: float = 0.95
    gae_lambda: float = 0.95
    update_epochs: int = 10
    num_minibatches: int = 1
    clip_coef: float = 0.05
    """eps of the policy ratio's clip and of the value clip (the paper's small clip)."""
    value_coef: float = 1.0
    ent_coef: float = 0.01
    max_grad_norm: float = 0.5
    # evaluation
    eval_deterministic: bool = True
    """Act with the most probable action when evaluated on mpe2; sample pi otherwise."""

    def __post_init__(self) -> None:
        """Refuse a config that would train something else than it says (``ValueError`` naming the field)."""
        if not isinstance(self.scenario_kwargs, dict):
            raise ValueError(f"scenario_kwargs must be a dict of mpe2 arguments; got {self.scenario_kwargs!r}")
        self.scenario_kwargs = given_port_kwargs(self.scenario, self.scenario_kwargs)
        if scenario_name(self.scenario) not in MAT_SCENARIOS:
            raise ValueError(f"MAT supports the scenarios {list(MAT_SCENARIOS)} only; got {self.scenario!r}. "
                             "It decodes one team's joint action from a team reward, so a scenario with opposed "
                             "rewards (simple_tag) cannot train it, and of the cooperative ones it is set up and "
                             "tested on these only (not lbforaging)")
        if self.scenario_kwargs.get("continuous_actions", False) is not False:
            raise ValueError("this MAT decodes discrete actions (one-hots of a^{i-1}): scenario_kwargs must not set "
                             f"continuous_actions=True; got {self.scenario_kwargs!r}")
        check_choice("variant", self.variant, VARIANTS)
        check_config_fields(self, _SIZES, _RANGES, _FLAGS)
        if self.d % self.heads or self.d % self.entity_heads:
            raise ValueError(f"d = {self.d} must be a multiple of heads = {self.heads} and of entity_heads = "
                             f"{self.entity_heads}")
        check_on_policy_budget(self)

    @property
    def critic(self) -> str:
        """The run summaries' critic column: the transformer encoder with its value head."""
        return "mat-encoder"

    @property
    def actor(self) -> str:
        """The run summaries' actor column: the decoder, or MAT-Dec's decentralized head."""
        return "mat-decoder" if self.variant == "mat" else "mat-dec"


_SIZES = ("num_envs", "rollout_steps", "total_steps", "d", "heads", "d_ff", "entity_heads", "blocks",
          "update_epochs", "num_minibatches")
"""The fields of :class:`MATConfig` that must be positive integers."""

_RANGES = (("lr", 0.0, 1.0, False), ("gamma", 0.0, 1.0, True), ("gae_lambda", 0.0, 1.0, False),
           ("clip_coef", 0.0, math.inf, True), ("value_coef", 0.0, math.inf, False),
           ("ent_coef", 0.0, math.inf, False), ("max_grad_norm", 0.0, math.inf, True))
"""(field, low, high, low end open) of the real-valued fields."""

_FLAGS = ("shuffle_order", "anneal_lr", "eval_deterministic")
"""The fields that must be bools (a string such as 'no' would act as True)."""


class MATAgent(nn.Module):
    """The transformer and its value normalisation (one mean and variance for all agents, so nothing depends
    on m). :attr:`actor` and :attr:`critic` name the parts acting and training use, as the command line's
    summaries name those of the other algorithms; :attr:`order` is the decision order :meth:`act` uses when
    given none (``None``: agent order), which :func:`order_scores` sets."""

    def __init__(self, net: MultiAgentTransformer, value_norm: ValueNorm) -> None:
        super().__init__()
        self.net, self.value_norm = net, value_norm
        self.continuous = False
        self.order: Tensor | None = None

    @property
    def actor(self) -> nn.Module:
        """What acting runs: the tokens, the encoder and the decoder (MAT), or the tokens and the head (MAT-Dec)."""
        net = self.net
        if net.decoder is None:
            return nn.ModuleList([net.tokens, net.policy_head])
        return nn.ModuleList([net.tokens, net.encoder, net.action_embed, net.decoder, net.policy_head])

    @property
    def critic(self) -> nn.Module:
        """What only training needs: the value head (and MAT-Dec's encoder, which only its critic reads)."""
        return self.net.value_head if self.net.decoder is not None else nn.ModuleList(
            [self.net.encoder, self.net.value_head])

    def v_hat(self, o: Tensor) -> Tensor:
        """Values V(o_hat^i) in return units: (batch, m)."""
        return self.value_norm.denormalize(self.net.values(o))

    def act(self, o: Tensor, generator: torch.Generator | None = None, deterministic: bool = False,
            order: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Actions (batch, m) decoded agent by agent (argmax, or sampled with ``generator``) and their
        log-probabilities (batch, m). ``order`` (batch, m) defaults to :attr:`order` for every row."""
        deterministic = check_bool("deterministic", deterministic)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise ValueError(f"generator must be a torch.Generator (or None); got {generator!r}")
        if order is None and self.order is not None:
            order = self.order.to(o.device).expand(o.shape[0], -1)

        def choose(logits: Tensor) -> Tensor:
            return logits.argmax(-1) if deterministic else sample_actions(logits, generator)

        a, logits = self.net.decode(o, choose, order)
        return a, log_prob(logits, a)[0]

    def evaluate_actions(self, o: Tensor, a: Tensor, order: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """Teacher-forced log pi(a^i | o, a^{<i}) and entropies of pi^i, and the normalised values, all (batch, m)."""
        logits, values = self.net.logits(o, a, order)
        return *log_prob(logits, a), values

    def env_actions(self, a: Tensor) -> np.ndarray:
        """Actions as the environment takes them: integers, on the CPU. ``ValueError`` unless ``a`` holds integer
        actions in [0, n_actions): a float or an out-of-range action would otherwise reach the environment."""
        check_indices("a", a, self.net.n_actions, None, "action")
        return a.cpu().numpy()


def make_agent(config: MATConfig, spec: EnvSpec | None = None) -> MATAgent:
    """A freshly initialised agent for ``config`` (the spec is read from the scenario if not given)."""
    spec = spec or env_spec(config.scenario, **config.scenario_kwargs)
    net = MultiAgentTransformer(config.scenario, config.scenario_kwargs, spec.m, spec.obs_dim, spec.n_actions,
                                spec.agent_types, d=config.d, heads=config.heads, d_ff=config.d_ff,
                                entity_heads=config.entity_heads, blocks=config.blocks,
                                decoder=config.variant == "mat")
    return MATAgent(net, ValueNorm(1))


def random_orders(count: int, m: int, generator: torch.Generator | None) -> Tensor:
    """``count`` random decision orders of m agents, (count, m), each row a permutation drawn from ``generator``.
    ``ValueError`` for a count that is not a non-negative integer, an m that is not a positive one, or an array
    larger than the machine allows (:func:`attnmarl.costs.check_numbers`, checked before anything is allocated)."""
    check_numbers("random_orders", ("count", count), ("m", check_int("m", m)), minimum=0)  # no orders: (0, m)
    if generator is not None and not isinstance(generator, torch.Generator):  # None: torch's default generator
        raise ValueError(f"generator must be a torch.Generator (torch.Generator().manual_seed(seed)) or None; "
                         f"got {generator!r}")
    return torch.rand(count, m, generator=generator).argsort(dim=1)


def order_scores(path: str | Path, orders: int = 5, episodes: int = 200, seed: int = 0,
                 **env_kwargs: Any) -> dict[str, Any]:
    """The mpe2 score of the checkpoint at ``path`` (for ``env_kwargs``, say ``N=6``) under ``orders`` random
    decision orders drawn with ``seed`` (or, where m! <= ``orders``, every order once, in lexicographic order), the
    same ``episodes`` episodes (seeds 0, 1, ...) for each. Returns ``orders`` (each a list of agent indices, the
    first deciding first) and ``scores``, the mean over episodes and agents of each order's return, beside
    ``agent_order``, the score in agent order. MAT-Dec's scores do not depend on the order."""
    from ..checkpoints import agent_policy, load_agent_at
    from ..envs import episode_returns

    check_int("orders", orders, maximum=MAX_EPISODES)
    check_int("orders * episodes", orders * check_episodes("episodes", episodes), maximum=MAX_EPISODES)
    check_seed(seed)
    agent, config = load_agent_at(path, **env_kwargs)
    if not isinstance(agent, MATAgent):
        raise ValueError(f"{path} holds a {type(agent).__name__}, not a MAT agent: only MAT decides in an order")

    def score(order: Tensor | None) -> float:
        agent.order = order
        policy = agent_policy(agent, config, seed=seed)
        return float(episode_returns(policy, config.scenario, episodes, seed=0, **config.scenario_kwargs).mean())

    m = agent.net.m
    if math.factorial(m) <= orders:  # no more orders than there are: each once
        drawn = torch.tensor(list(itertools.permutations(range(m))))
    else:
        drawn = random_orders(orders, m, torch.Generator().manual_seed(seed))
    scores = [score(order) for order in drawn]
    return {"agent_order": score(None), "orders": drawn.tolist(), "scores": scores}


def estimate(config: MATConfig, evaluation_episodes: int = 0) -> RunEstimate:
    """What a whole run of ``config`` will cost (:mod:`attnmarl.algos.estimate`), with ``evaluation_episodes``
    episodes on mpe2: its CPU time and peak memory, part by part, from a fresh agent's calls on four worlds'
    observations — decoding the team's actions agent by agent, the values of a rollout, one minibatch's
    teacher-forced update — and its optimizer's step. :func:`train` checks it first."""
    run, world = start(config, "MAT", rollout_buffers)
    return on_policy(run, config, world, probe(_probe, config, {"blocks": True}), evaluation_episodes)


def _probe(config: MATConfig) -> Probe:
    """The calls of a run of ``config`` measured on a fresh agent (:func:`attnmarl.algos.estimate.measure`) with
    the observations of four worlds, in random decision orders where the run shuffles them."""
    spec, o = env_spec(config.scenario, **config.scenario_kwargs), probe_observations(config)
    with torch.random.fork_rng(devices=[]):
        agent = make_agent(config, spec)
    generator = torch.Generator().manual_seed(0)
    order = random_orders(len(o), spec.m, generator) if config.shuffle_order else None

    def rows(b: int) -> Tensor | None:
        return None if order is None else order[:b]

    a = agent.act(o, generator, order=order)[0]

    def update(b: int) -> None:
        agent.zero_grad(set_to_none=True)
        log_p, entropy, values = agent.evaluate_actions(o[:b], a[:b], rows(b))
        (log_p.mean() + entropy.mean() + values.mean()).backward()

    with torch.no_grad():
        act = measure(lambda b: agent.act(o[:b], generator, order=rows(b)))
        values = measure(lambda b: agent.v_hat(o[:b]))
    return Probe.of({"act": act, "values": values, "update": measure(update)}, agent, spec)


def train(config: MATConfig, callback: Callable[[dict[str, float], MATAgent], None] | None = None,
          compile_nets: bool = False, device: str | torch.device = "cpu") -> MATAgent:
    """Train MAT (or MAT-Dec) on the batched port of ``config.scenario``; returns the trained agent.

    ``callback(stats, agent)`` after every update, with the statistics of :func:`attnmarl.algos.mappo.train`.
    Reproducible from ``config.seed``; ``RuntimeError`` at once if the value targets or the loss stop being
    finite. ``compile_nets`` is accepted for the command line's sake and refused (the decoder's loop of m
    passes is not compiled); ``device`` is where the agent runs and learns, and the run's :func:`estimate` is
    checked first, as in MAPPO.
    """
    if compile_nets:
        raise ValueError("MAT trains without torch.compile (its decoder runs m passes per step); drop --compile")
    device = check_device(device)
    estimate(config).check()
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    env = make_batched(config.scenario, config.num_envs, seed=config.seed, **config.scenario_kwargs)
    spec = env_spec(config.scenario, **config.scenario_kwargs)
    agent = make_agent(config, spec).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=config.lr, eps=1e-5)
    T, E, m = config.rollout_steps, config.num_envs, spec.m
    rollout = Rollout.start(env, T, spec, device)
    start = time.perf_counter()

    for update in range(config.num_updates):
        if config.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - update / config.num_updates) * config.lr
        order = random_orders(E, m, generator).to(device) if config.shuffle_order else None

        # Algorithm 13.1, step 1 (rollout, decoding agent by agent)
        with torch.no_grad():
            collect_rollout(env, agent, rollout, generator, order=order)

            # Algorithm 13.1, step 2 (values, bootstrapped at truncation, and per-agent GAE)
            values, next_values = bootstrap_values(agent.v_hat, rollout.o, rollout.o_next, rollout.terminated,
                                                   rollout.finals)
            advantages = gae(rollout.r, values, next_values, rollout.ended, config.gamma, config.gae_lambda)
            returns = advantages + values
            check_run_finite(returns, "value targets", update, config)
            agent.value_norm.update(returns.reshape(-1, 1))

        # Algorithm 13.1, step 3 (PPO epochs: one teacher-forced pass per minibatch, one loss over both halves)
        b_o, b_a, b_logp = rollout.o.flatten(0, 1), rollout.a.flatten(0, 1), rollout.logp.flatten(0, 1)
        b_adv = advantages.flatten(0, 1)
        b_target = agent.value_norm.normalize(returns.flatten(0, 1))
        b_value = agent.value_norm.normalize(values.flatten(0, 1))
        b_order = None if order is None else order.repeat(T, 1)  # row t * E + e holds env e's order
        minibatch = config.batch_size // config.num_minibatches
        eps = config.clip_coef
        for _ in range(config.update_epochs):
            for idx in torch.randperm(config.batch_size, generator=generator).to(device).split(minibatch):
                new_logp, entropy, v = agent.evaluate_actions(b_o[idx], b_a[idx],
                                                              None if b_order is None else b_order[idx])
                log_ratio = new_logp - b_logp[idx]
                ratio = log_ratio.exp()
                adv = normalize_advantages(b_adv[idx], per_agent=False)
                pg_loss = -torch.min(ratio * adv, ratio.clamp(1 - eps, 1 + eps) * adv).mean()
                v_clipped = b_value[idx] + (v - b_value[idx]).clamp(-eps, eps)
                v_loss = torch.max((v - b_target[idx]).pow(2), (v_clipped - b_target[idx]).pow(2)).mean()
                entropy = entropy.mean()
                loss = pg_loss + config.value_coef * v_loss - config.ent_coef * entropy
                check_run_finite(loss, "loss", update, config)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), config.max_grad_norm)
                optimizer.step()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - log_ratio).mean()
                    clip_frac = ((ratio - 1).abs() > eps).float().mean()

        if callback is not None:
            callback(train_stats(update, config, rollout.finished, pg_loss, v_loss, entropy, approx_kl, clip_frac,
                                 returns, values, time.perf_counter() - start, m), agent)
    return agent
