"""What a whole training run will cost, estimated before it starts: one estimate of its time and one of its
peak memory, from every size its config sets, checked by :meth:`RunEstimate.check` before any environment,
buffer or network of the run exists.

Each algorithm file has an ``estimate(config)`` that lists its run's parts — the rollout or replay buffers,
the networks with their gradients and Adam's moments, the largest batch of activations an update holds, the
worlds' steps, the networks' calls — through :func:`on_policy` or :func:`off_policy`. The networks' calls are
measured, not modelled: :func:`measure` runs a call on real observations at two small batch sizes and counts
what it does (:class:`Work`: torch operations, multiply-adds, bytes written, bytes kept for the backward pass),
so that the call costs ``Work.seconds(batch)`` and holds ``Work.peak_bytes(batch)`` at any batch size. The
networks are built for the estimate (on the CPU, the random state put back after) but never trained. A count
of repeated blocks or rounds beyond 3 (``depth``, ``message_rounds``, ``blocks``) is measured at 2 and 3 and
extrapolated (:func:`probe`), so that a million rounds is refused at once, not run once.

The coefficients (:data:`OP_SECONDS`, :data:`FLOP_SECONDS`, :data:`BYTE_SECONDS` and the optimizer's) were
fitted on a busy 2-core CPU with one torch thread, where the book's runs were made: to the book's networks' calls
timed one at a time (from 16 to 3,328 samples), then raised by a fifth, since inside a run the same calls run
slower than repeated alone. :data:`STEP_SECONDS` and :data:`PROCESS_BYTES` were measured on whole runs. Measured
against the estimate: tiny runs of every algorithm took 0.78-1.06 times its CPU time (runs of thousands of worlds
up to 1.6 times: large batches run slower per byte), every shipped run recorded 0.59-2.5 times it (median 1.0;
many were made by older, slower code), and runs of 0.5-3 GB peaked at 0.96-1.23 times its memory;
``tests/test_run_estimates.py`` holds the recorded runs and the memory within stated ranges, and
``bench/bench_estimates.py`` measures tiny runs' CPU time against it in ``make bench``. A run estimated
beyond :data:`RUN_SECONDS` or :func:`run_memory_budget` is refused with its biggest part named, and the way to
run it anyway (``ATTNMARL_ALLOW_COSTLY=1``, :data:`attnmarl.costs.ALLOW_COSTLY`, whose no — ``0``, ``false``,
``no``, ``off`` — keeps the check).

The first estimate in a process imports torch's dispatch machinery (``torch._dynamo``, as a run's first optimizer
does anyway); after it, an estimate takes 0.05-0.5 s of CPU.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..costs import ALLOW_COSTLY, costly_allowed, duration, physical_memory
from ..envs.actions import N_MOVES

__all__ = ["OP_SECONDS", "FLOP_SECONDS", "BYTE_SECONDS", "OPTIMIZER_STEP_SECONDS", "OPTIMIZER_TENSOR_SECONDS",
           "STEP_SECONDS", "PROCESS_BYTES", "PARAMETER_BYTES", "MPE2_PAIR_SECONDS", "RUN_SECONDS", "MEASURED_BATCHES",
           "MEASURED_REPEATS", "RUN_SIZES", "run_memory_budget", "Work", "measure", "NoStep", "Probe", "probe",
           "RunEstimate", "World", "rollout_buffers", "replay_buffer", "start", "probe_observations", "on_policy",
           "off_policy"]

OP_SECONDS = 8e-6
"""Seconds of overhead per torch operation on a CPU (dispatch, autograd's bookkeeping): what the small networks
of the book spend most of their time on."""

FLOP_SECONDS = 4e-11
"""Seconds per multiply-add of a matrix product on one thread."""

BYTE_SECONDS = 2.5e-10
"""Seconds per byte an operation writes (elementwise work is bound by memory, not by arithmetic)."""

OPTIMIZER_STEP_SECONDS = 6e-4
"""Seconds of one optimizer's step (Adam, its gradients clipped) beside its work per parameter tensor ..."""

OPTIMIZER_TENSOR_SECONDS = 3.5e-5
"""... and per parameter tensor it updates (Adam on a CPU updates the tensors one by one: 1.1 ms for 14 tensors,
3.0 ms for 64, measured with the clipping of two groups)."""

STEP_SECONDS = 3e-4
"""Seconds of a training loop's own work per step of its worlds, beside the networks and the port: actions and
observations converted between numpy and torch, the buffers written, the returns summed, GAE's step."""

PROCESS_BYTES = 400e6
"""Bytes a Python process holds besides the run: torch, numpy, mpe2 and attnmarl imported (285 MB resident,
measured), and what torch sets up on a first training step."""

PARAMETER_BYTES = 16
"""Bytes a trained float32 parameter holds: itself, its gradient and Adam's two moments."""

MPE2_PAIR_SECONDS = 5e-6
"""Seconds per pair of entities of one mpe2 step (it loops over the pairs in Python; measured 0.26 / 0.77 / 2.6
ms a step with 6 / 12 / 24 entities), for the evaluations on the reference."""

RUN_SECONDS = 24 * 3600.0
"""The longest run :meth:`RunEstimate.check` lets start without the override: a day of CPU. The book's longest
shipped runs took under an hour."""


def run_memory_budget() -> int:
    """The most memory a whole run may be estimated to hold: half of this machine's physical memory (the other
    half for the system and for another run beside it)."""
    return physical_memory() // 2


def _size(nbytes: float) -> str:
    return f"{nbytes / 1e9:,.1f} GB" if nbytes >= 1e8 else f"{nbytes / 1e6:,.1f} MB"


@dataclass(frozen=True)
class Work:
    """What one call of a network (forward, and backward where it trains) does on a batch of ``b`` samples:
    ``ops`` torch operations whatever the batch, multiply-adds ``flops + b * flops_per_sample``, bytes written
    ``written + b * written_per_sample``, and per sample the bytes kept for the backward pass (``saved``) and
    those of the largest single result that grows with the batch (``largest``; a weight's gradient does not)."""

    ops: float
    flops: float
    flops_per_sample: float
    written: float
    written_per_sample: float
    saved: float
    largest: float

    def seconds(self, batch: float) -> float:
        """Estimated seconds of one call on ``batch`` samples (:data:`OP_SECONDS`, :data:`FLOP_SECONDS`,
        :data:`BYTE_SECONDS`)."""
        return (self.ops * OP_SECONDS + (self.flops + batch * self.flops_per_sample) * FLOP_SECONDS
                + (self.written + batch * self.written_per_sample) * BYTE_SECONDS)

    def peak_bytes(self, batch: float) -> float:
        """Estimated bytes one call on ``batch`` samples holds at its peak: what it keeps for the backward pass
        and two of its largest results (the one being computed, and its gradient or its input)."""
        return batch * (self.saved + 2 * self.largest)


class _Count(TorchDispatchMode):
    """Counts the torch operations run inside it, their multiply-adds and the bytes each writes."""

    def __init__(self) -> None:
        super().__init__()
        self.flops, self.written = 0.0, []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.flops += _flops(func, args)
        results = out if isinstance(out, (tuple, list)) else (out,)
        views = [alias is not None and not alias.is_write for alias in (r.alias_info for r in func._schema.returns)]
        self.written.append(sum(x.numel() * x.element_size() for x, view in zip(results, views)
                                if isinstance(x, torch.Tensor) and not view))  # a view (a slice) writes nothing
        return out


def _flops(func: Any, args: tuple) -> float:
    """Multiply-adds of a matrix product (mm, addmm, bmm, baddbmm, a fused attention); 0 for anything else."""
    name = func.__name__.split(".")[0]
    if name in ("mm", "addmm", "bmm", "baddbmm"):
        a, b = (args[0], args[1]) if name in ("mm", "bmm") else (args[1], args[2])
        return float(math.prod(a.shape) * b.shape[-1])
    if "scaled_dot_product" in name:  # q (..., L, E) against k (..., S, E): two products
        q, k = args[0], args[1]
        return 2.0 * math.prod(q.shape) * k.shape[-2]
    return 0.0


def _count(call: Callable[[int], Any], batch: int) -> tuple[_Count, float]:
    """Run ``call(batch)``, counting its operations and the bytes it keeps for the backward pass."""
    saved = [0.0]

    def pack(x: torch.Tensor) -> torch.Tensor:
        saved[0] += x.numel() * x.element_size()
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x), _Count() as counts:
        call(batch)
    return counts, saved[0]


MEASURED_BATCHES = (2, 4)
"""The two batch sizes :func:`measure` runs a call at: what does not change between them is the call's fixed
part, the difference its part per sample (every network of the book treats the samples of a batch alike)."""


def measure(call: Callable[[int], Any]) -> Work:
    """The :class:`Work` of ``call(b)``, a network call (and its backward pass, if it trains) on a batch of b
    samples, counted on real calls at :data:`MEASURED_BATCHES`. The random state of torch is put back after, so
    that measuring changes no run."""
    small, large = MEASURED_BATCHES
    with torch.random.fork_rng(devices=[]):
        (a, saved_a), (b, saved_b) = _count(call, small), _count(call, large)
    per = large - small
    flops, written = (b.flops - a.flops) / per, (sum(b.written) - sum(a.written)) / per
    if len(a.written) == len(b.written):  # the same operations: the largest result that grows with the batch
        largest = max((y - x for x, y in zip(a.written, b.written)), default=0) / per
    else:
        largest = max(b.written, default=0) / large
    return Work(ops=max(len(a.written), len(b.written)), flops=max(a.flops - small * flops, 0.0),
                flops_per_sample=flops, written=max(sum(a.written) - small * written, 0.0),
                written_per_sample=written, saved=max(saved_b - saved_a, 0.0) / per, largest=max(largest, 0.0))


class NoStep:
    """Stands in for an optimizer in a measured update: clears the gradients and takes no step, so that the
    networks measured do not change and no optimizer is built (:meth:`Probe.optimizer_seconds` estimates the
    steps instead)."""

    def __init__(self, parameters: Iterable[torch.nn.Parameter]) -> None:
        self.parameters = list(parameters)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters:
            p.grad = None

    def step(self) -> None:
        """Nothing: the step is estimated, not taken."""


@dataclass(frozen=True)
class Probe:
    """What a run's networks do: the :class:`Work` of each of its calls by name (``"act"``, ``"update"``, ...),
    the trained parameters (their count, and the number of tensors they are in), and the scenario's ``spec``
    (:class:`attnmarl.algos.mappo.EnvSpec`) they were built for."""

    calls: dict[str, Work]
    parameters: float
    tensors: float
    spec: Any

    @classmethod
    def of(cls, calls: dict[str, Work], networks: torch.nn.Module, spec: Any) -> Probe:
        """The probe of ``calls`` made by the trained ``networks``, built for ``spec``."""
        parameters = list(networks.parameters())
        return cls(calls, float(sum(p.numel() for p in parameters)), float(len(parameters)), spec)

    def optimizer_seconds(self, optimizers: int = 1) -> float:
        """Estimated seconds of one update's steps of ``optimizers`` optimizers over the parameters
        (:data:`OPTIMIZER_STEP_SECONDS`, :data:`OPTIMIZER_TENSOR_SECONDS`, and Adam's reads and writes of 12
        numbers per parameter at :data:`BYTE_SECONDS`)."""
        return (optimizers * OPTIMIZER_STEP_SECONDS + self.tensors * OPTIMIZER_TENSOR_SECONDS
                + 48 * self.parameters * BYTE_SECONDS)

    def plus(self, one: Probe, two: Probe, times: int, own_weights: bool) -> Probe:
        """This probe with ``times`` more of what ``two`` (one more block or round) does beyond ``one``: its calls'
        work, and its parameters where each repeat has ``own_weights``."""
        calls = {name: Work(*(getattr(work, f.name) + times * (getattr(two.calls[name], f.name)
                                                               - getattr(one.calls[name], f.name))
                              for f in fields(Work))) for name, work in self.calls.items()}
        weights = times if own_weights else 0
        return Probe(calls, self.parameters + weights * (two.parameters - one.parameters),
                     self.tensors + weights * (two.tensors - one.tensors), self.spec)


MEASURED_REPEATS = 3
"""The most blocks or rounds :func:`probe` measures; more are extrapolated from 2 and 3."""

RUN_SIZES = ("total_steps", "seed", "num_envs", "rollout_steps", "num_minibatches", "update_epochs", "buffer_size",
             "minibatch_size", "learning_starts", "updates_per_iteration", "init_actor")
"""The fields of a config that change how often its networks are called, or on how much, but not the networks
or what one call does: configs that differ only in them share a :func:`probe`."""

_PROBES: dict[str, Probe] = {}
"""The probes measured in this process, by the config's fields less :data:`RUN_SIZES` (a run checked by the
command line, then by its algorithm's ``train``, is measured once)."""


def probe(measure_config: Callable[[Any], Probe], config: Any, counts: dict[str, bool]) -> Probe:
    """``measure_config(config)``, an algorithm's measurement of its networks' calls, where each field of
    ``counts`` (a count of blocks or rounds; True where each repeat has its own weights) is at most
    :data:`MEASURED_REPEATS`. A larger count is measured at 2 and 3 and extrapolated, the extra repeats of each
    field added in turn (what one repeat does does not depend on the others): a million rounds are estimated from
    three, never run. (From 2 on, rounds that share their weights each add the same work, the accumulation of
    those weights' gradients included.) Kept for the configs that differ from ``config`` only in
    :data:`RUN_SIZES`."""
    fields_here = {name: value for name, value in asdict(config).items() if name not in RUN_SIZES}
    key = f"{type(config).__qualname__} {json.dumps(fields_here, sort_keys=True, default=repr)}"
    if key not in _PROBES:
        large = {name: own for name, own in counts.items() if getattr(config, name) > MEASURED_REPEATS}
        base_config = replace(config, **dict.fromkeys(large, MEASURED_REPEATS - 1))
        base = result = measure_config(base_config)
        for name, own in large.items():
            more = measure_config(replace(base_config, **{name: MEASURED_REPEATS}))
            result = result.plus(base, more, getattr(config, name) - MEASURED_REPEATS + 1, own)
        _PROBES[key] = result
    return _PROBES[key]


@dataclass
class RunEstimate:
    """The estimated cost of a whole run of ``what``: ``seconds`` and ``memory`` (bytes), each a dict of its
    parts by name, which :meth:`check` compares with :data:`RUN_SECONDS` and :func:`run_memory_budget`."""

    what: str
    seconds: dict[str, float] = field(default_factory=dict)
    memory: dict[str, float] = field(default_factory=dict)

    @property
    def total_seconds(self) -> float:
        """The whole run's estimated CPU seconds."""
        return sum(self.seconds.values())

    @property
    def total_bytes(self) -> float:
        """The run's estimated peak memory, in bytes."""
        return sum(self.memory.values())

    def __str__(self) -> str:
        return (f"{self.what}: about {duration(self.total_seconds)} of CPU and {_size(self.total_bytes)} at its peak "
                f"(the biggest parts: {_biggest(self.seconds, duration)}; {_biggest(self.memory, _size)})")

    def check(self) -> None:
        """Refuse the run (``ValueError``) if it is estimated to take more than :data:`RUN_SECONDS` or more memory
        than :func:`run_memory_budget`, naming the estimate, its biggest part and ``ATTNMARL_ALLOW_COSTLY=1``,
        which lets it start anyway; else do nothing."""
        if costly_allowed():
            return
        budget, over = run_memory_budget(), []
        if self.total_bytes > budget:
            over.append(f"about {_size(self.total_bytes)} of memory at its peak, over this package's limit of "
                        f"{_size(budget)} (half this machine's memory); the biggest part is "
                        f"{_biggest(self.memory, _size)}")
        if self.total_seconds > RUN_SECONDS:
            over.append(f"about {duration(self.total_seconds)} of CPU, over this package's limit of "
                        f"{duration(RUN_SECONDS)}; the biggest part is {_biggest(self.seconds, duration)}")
        if over:
            raise ValueError(f"{self.what} would need " + ", and ".join(over) + " (estimated before the run starts, "
                             "from its config's sizes); give smaller sizes, or, to run it anyway, set "
                             f"{ALLOW_COSTLY}=1 in the environment")


def _biggest(parts: dict[str, float], unit: Callable[[float], str]) -> str:
    name, value = max(parts.items(), key=lambda item: item[1])
    return f"{name}, {unit(value)}"


@dataclass(frozen=True)
class World:
    """The sizes of a config's batched worlds: agents m, entities (agents, landmarks, treasures, ...), steps of an
    episode, and, once the scenario's spec is read, the observation's width."""

    agents: int
    entities: int
    cycles: int
    obs_dim: int = 0

    def step_seconds(self, num_envs: int) -> float:
        """Seconds of one step of ``num_envs`` worlds (:data:`attnmarl.envs.batched.PORT_PAIR_SECONDS` per world
        and (agent, entity) pair) and of the training loop around it (:data:`STEP_SECONDS`)."""
        from ..envs.batched import PORT_PAIR_SECONDS

        return STEP_SECONDS + PORT_PAIR_SECONDS * num_envs * self.agents * self.entities

    def bytes(self, num_envs: int) -> float:
        """Bytes ``num_envs`` worlds hold while they step: their pair arrays
        (:data:`attnmarl.envs.batched.PORT_PAIR_BYTES` per world and (agent, entity) pair) and three copies of the
        observations (the new ones, the final ones of the episodes that ended, their torch copy)."""
        from ..envs.batched import PORT_PAIR_BYTES

        return num_envs * self.agents * (PORT_PAIR_BYTES * self.entities + 3 * 4 * self.obs_dim)

    def evaluation_seconds(self, episodes: int, act: Work) -> float:
        """Seconds of ``episodes`` episodes on mpe2's reference (one world in pure Python, :data:`MPE2_PAIR_SECONDS`
        per pair of entities a step), the actor called on one observation each step (``act``)."""
        return episodes * self.cycles * (MPE2_PAIR_SECONDS * self.entities**2 + act.seconds(1) + STEP_SECONDS)


def rollout_buffers(config: Any, world: World) -> dict[str, float]:
    """The memory of an on-policy run's rollout (MAPPO, MAT): for ``rollout_steps`` steps of ``num_envs`` worlds, the
    observations, actions (a long, or 5 floats when continuous), log-probabilities, rewards, values, next values,
    advantages, returns and targets of every agent, the ends of the episodes, and the final observations of the
    episodes that end in it."""
    T, E, m, D = config.rollout_steps, config.num_envs, world.agents, world.obs_dim
    action_bytes = 4 * N_MOVES if config.scenario_kwargs.get("continuous_actions", False) else 8
    finals = -(-T // world.cycles) * E * m * D * 4
    return {f"the rollout's buffers ({T:,} steps of {E:,} worlds)": T * E * m * (4 * D + action_bytes + 4 * 7)
            + 2 * T * E + finals}


def replay_buffer(config: Any, world: World) -> dict[str, float]:
    """The memory of an off-policy run's replay buffer (MADDPG, MAAC, QMIX): ``buffer_size`` transitions of every
    agent's observation and next observation, action (5 numbers), reward, and the episode's end."""
    capacity = config.buffer_size
    return {f"the replay buffer ({capacity:,} transitions)": capacity * (4 * world.agents * (2 * world.obs_dim
                                                                                             + N_MOVES + 1) + 1)}


def start(config: Any, algorithm: str, buffers: Callable[[Any, World], dict[str, float]]) -> tuple[RunEstimate, World]:
    """The estimate of a run of ``config`` (an ``algorithm``'s config) as far as the config alone tells it,
    without building anything, checked at once: the time its worlds take to step over the run, the memory of
    the process, of the worlds and of its ``buffers`` (:func:`rollout_buffers` or :func:`replay_buffer`), with the
    observation's width at its least, one number per entity. A team of a thousand agents is refused here, before
    its world takes seconds to build. Returns the estimate, to be completed, and the worlds' sizes."""
    from ..envs.scenarios import reference_kwargs, scenario_name, world_agents, world_entities

    name = scenario_name(config.scenario)
    resolved = reference_kwargs(name, **config.scenario_kwargs)
    entities = world_entities(name, resolved)
    episode_steps = resolved["max_steps"] if "max_steps" in resolved else resolved["max_cycles"]  # LBF: max_steps
    world = World(world_agents(name, resolved), entities, episode_steps, obs_dim=entities)
    run = RunEstimate(f"a {algorithm} run on {name} with {config.scenario_kwargs} ({_count_of(world.agents, 'agent')}; "
                      f"{_count_of(config.num_updates, 'iteration')} of {_count_of(config.rollout_steps, 'step')} of "
                      f"{_count_of(config.num_envs, 'world')})")
    run.seconds["stepping the batched worlds"] = config.num_updates * config.rollout_steps * world.step_seconds(
        config.num_envs)
    run.memory["the process (Python, torch, mpe2)"] = PROCESS_BYTES
    run.memory["the worlds"] = world.bytes(config.num_envs)
    run.memory.update(buffers(config, world))
    run.check()
    return run, world


def _count_of(count: int, thing: str) -> str:
    return f"{count:,} {thing}" + ("s" if count != 1 else "")


def probe_observations(config: Any) -> torch.Tensor:
    """Observations (4, m, obs_dim) of four fresh worlds of ``config``'s scenario, which :func:`measure`'s calls
    run the networks on (real observations, so that a mask or a sight radius sees what it sees in training)."""
    from ..envs import make_batched

    return torch.from_numpy(make_batched(config.scenario, max(MEASURED_BATCHES), seed=0,
                                         **config.scenario_kwargs).reset())


def _common(run: RunEstimate, world: World, measured: Probe, num_envs: int, targets: bool,
            evaluation_episodes: int) -> None:
    """The parts every run has, now that the observation's width is known: the networks (and their targets), the
    worlds and the evaluations."""
    run.seconds["the evaluations on mpe2"] = world.evaluation_seconds(evaluation_episodes, measured.calls["act"])
    run.memory["the networks, their gradients and Adam's moments" + (" and the target networks" if targets else "")
               ] = measured.parameters * (PARAMETER_BYTES + (4 if targets else 0))
    run.memory["the worlds"] = world.bytes(num_envs)


def on_policy(run: RunEstimate, config: Any, world: World, measured: Probe, evaluation_episodes: int) -> RunEstimate:
    """Complete ``run``, an on-policy run of ``config`` (MAPPO, MAT) whose networks are ``measured``: each
    update rolls out ``rollout_steps`` steps of ``num_envs`` worlds with the call ``"act"``, evaluates the whole
    rollout with ``"values"``, and trains ``update_epochs`` x ``num_minibatches`` minibatches with ``"update"`` and
    one optimizer's step. Then ``evaluation_episodes`` episodes on mpe2."""
    world = replace(world, obs_dim=measured.spec.obs_dim)
    T, E = config.rollout_steps, config.num_envs
    updates, minibatch = config.num_updates, config.batch_size // config.num_minibatches
    act, values, update = (measured.calls[name] for name in ("act", "values", "update"))
    run.seconds["acting"] = updates * T * act.seconds(E)
    run.seconds["the critic over each rollout"] = updates * values.seconds((T + 1) * E)
    run.seconds["the epochs of updates"] = updates * config.update_epochs * config.num_minibatches * (
        update.seconds(minibatch) + measured.optimizer_seconds())
    _common(run, world, measured, E, False, evaluation_episodes)
    run.memory.update(rollout_buffers(config, world))
    activations = {f"the critic's pass over a rollout of {(T + 1) * E:,} observations": values.peak_bytes((T + 1) * E),
                   f"an update's minibatch of {minibatch:,} observations": update.peak_bytes(minibatch),
                   f"acting in {E:,} worlds": act.peak_bytes(E)}
    largest = max(activations, key=activations.__getitem__)
    run.memory[f"the activations of {largest}"] = activations[largest]
    return run


def off_policy(run: RunEstimate, config: Any, world: World, measured: Probe, optimizers: int,
               evaluation_episodes: int) -> RunEstimate:
    """Complete ``run``, an off-policy run of ``config`` (MADDPG, MAAC, QMIX) whose networks are ``measured``:
    each iteration steps ``num_envs`` worlds ``rollout_steps`` times with the call ``"act"`` and, from
    ``learning_starts`` on, makes ``updates_per_iteration`` updates (``"update"``, and the steps of
    ``optimizers`` optimizers) on minibatches of ``minibatch_size`` from the replay buffer; a target copy of the
    networks follows them. Then ``evaluation_episodes`` episodes on mpe2."""
    world = replace(world, obs_dim=measured.spec.obs_dim)
    E, B = config.num_envs, config.minibatch_size
    iterations, update = config.num_updates, measured.calls["update"]
    waiting = max(0, -(-max(config.learning_starts, 1) // config.batch_size) - 1)  # iterations before the first update
    run.seconds["acting"] = iterations * config.rollout_steps * measured.calls["act"].seconds(E)
    run.seconds["the updates"] = max(iterations - waiting, 0) * config.updates_per_iteration * (
        update.seconds(B) + measured.optimizer_seconds(optimizers))
    _common(run, world, measured, E, True, evaluation_episodes)
    run.memory.update(replay_buffer(config, world))
    run.memory[f"the activations of an update's minibatch of {B:,} transitions"] = update.peak_bytes(B)
    return run
