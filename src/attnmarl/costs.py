"""Cost estimates, checked before work starts (DESIGN §6).

:func:`check_cost` refuses work that would take minutes or exhaust memory: the caller estimates its seconds
and bytes (a world of thousands of entities, thousands of unshared layers), and what is estimated beyond
:data:`COST_SECONDS` or :func:`memory_budget` is refused before it starts, with the estimate and the way to
run it anyway (``ATTNMARL_ALLOW_COSTLY=1`` in the environment, :data:`ALLOW_COSTLY`);
:func:`check_numbers` does so for a product of sizes, each allowed on its own, that would allocate one
array larger than the memory budget; :func:`check_replay_buffer` for the replay buffer, and
:func:`check_on_policy_budget` and :func:`check_off_policy_budget` for the budget of a run, in the units of
:class:`RolloutBudget`, which every algorithm's config is.
"""
from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported only where a check needs it: attnmarl.envs stays free of it
    pass

from .checks import check_int

__all__ = ["ALLOW_COSTLY", "COST_SECONDS", "costly_allowed", "physical_memory", "memory_budget", "duration",
           "check_cost", "check_numbers", "RolloutBudget", "check_on_policy_budget", "check_off_policy_budget",
           "check_replay_buffer"]


ALLOW_COSTLY = "ATTNMARL_ALLOW_COSTLY"
"""The environment variable that turns every cost estimate off: with ``ATTNMARL_ALLOW_COSTLY=1`` set (in the
shell, or ``os.environ`` before the call), :func:`check_cost` and :func:`check_numbers` refuse nothing, and work
estimated at hours or at more memory than the machine has is started anyway."""


COST_SECONDS = 60.0
"""The most seconds one call is estimated to take before :func:`check_cost` refuses it: building a world and
stepping it once, building a network. A call estimated beyond it would seem to hang; estimates are made
with coefficients measured on a busy 2-core CPU (one thread), so they err on the slow side."""


def costly_allowed() -> bool:
    """True when :data:`ALLOW_COSTLY` says yes (``1``, ``true``, ``yes``, ``on``, in any case): no estimate refuses
    work. Unset, empty, or a no (``0``, ``false``, ``no``, ``off``), estimates refuse as usual; any other value is a
    ``ValueError`` naming it, since guessing either way would either hang or refuse what was asked for."""
    value = os.environ.get(ALLOW_COSTLY, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{ALLOW_COSTLY}={os.environ[ALLOW_COSTLY]!r} is neither a yes (1, true, yes, on) nor a no "
                     "(0, false, no, off)")


def physical_memory() -> int:
    """This machine's physical memory in bytes, at least 1 GiB (8 GiB where the system does not say: Windows)."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): assume a small machine
        physical = 8 * 2**30
    return max(physical, 2**30)


def memory_budget() -> int:
    """The most bytes one estimated allocation may take: a quarter of this machine's physical memory (the rest
    leaves room for the copies a computation makes of its largest array, and for everything else running)."""
    return physical_memory() // 4


def duration(seconds: float) -> str:
    """``42 s``, ``3 min``, ``2.5 h``, ``4 days``: how long an estimate is, in words."""
    if seconds < 120:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:,.0f} days"


def _size(nbytes: float) -> str:
    return f"{nbytes / 1e9:,.1f} GB" if nbytes >= 1e8 else f"{nbytes / 1e6:,.1f} MB"


def check_cost(what: str, seconds: float = 0.0, nbytes: float = 0.0, basis: str = "", remedy: str = "") -> None:
    """Refuse ``what`` if it is estimated to take more than :data:`COST_SECONDS` or more memory than
    :func:`memory_budget`; else do nothing. The ``ValueError`` says the estimate (``seconds``, ``nbytes``), what
    it rests on (``basis``: the sizes and the measured coefficient), the limit it exceeds, what to do instead
    (``remedy``), and how to run it anyway: set ``ATTNMARL_ALLOW_COSTLY=1`` (:data:`ALLOW_COSTLY`). Only what
    would really take minutes or exhaust memory is refused, so that every size the package can serve in
    reasonable time is served."""
    if costly_allowed():
        return
    budget = memory_budget()
    if seconds <= COST_SECONDS and nbytes <= budget:
        return
    estimate = " and ".join(part for part in (f"about {duration(seconds)}" if seconds else "",
                                                f"about {_size(nbytes)} of memory" if nbytes else "") if part)
    raise ValueError(f"{what} would take {estimate}" + (f" (estimated from {basis})" if basis else "")
                     + f"; this package refuses work estimated at more than {COST_SECONDS:.0f} s or {_size(budget)} "
                     "(a quarter of this machine's memory)" + (f": {remedy}" if remedy else "")
                     + f"; to run it anyway, set {ALLOW_COSTLY}=1 in the environment")


def check_numbers(what: str, *sizes: tuple[str, Any], limit: int | None = None, hint: str = "",
                  minimum: int = 1, itemsize: int = 4) -> int:
    """The product of ``sizes`` — ``(name, value)`` pairs, each value an integer >= ``minimum`` (0 for the shape of
    a tensor, which may be empty) — the number of entries of the array ``what``; ``ValueError`` naming the sizes,
    their product and its memory if that memory (``itemsize`` bytes a number, float32's 4 by default) exceeds
    :func:`memory_budget`, or if the product exceeds ``limit`` when one is given (``hint`` says what to do
    instead). Called before the array is allocated: each size may be allowed on its own and their product still
    take more memory than the machine has (``check_numbers("W_q", ("d_q", d_q), ("d_in", d_in))``). Set
    ``ATTNMARL_ALLOW_COSTLY=1`` to allocate it anyway (:data:`ALLOW_COSTLY`)."""
    count = math.prod(check_int(name, value, minimum) for name, value in sizes)
    most = memory_budget() // itemsize if limit is None else limit
    if count > most and not costly_allowed():
        shape = " x ".join(f"{name} = {int(value):,}" for name, value in sizes)
        why = "a quarter of this machine's memory" if limit is None else "its limit"
        raise ValueError(f"{what} would hold {shape} = {count:,} numbers ({count * itemsize / 1e9:,.1f} GB); "
                         f"this package allocates at most {most:,} in one array ({why}){hint}; to allocate it "
                         f"anyway, set {ALLOW_COSTLY}=1 in the environment")
    return count


class RolloutBudget:
    """The budget of a run in rollouts: each update (an off-policy algorithm's iteration) first steps ``num_envs``
    batched environments ``rollout_steps`` times, until ``total_steps`` env steps are spent. Every algorithm's config
    is one; the config, a dataclass, declares the three fields."""

    num_envs: int
    rollout_steps: int
    total_steps: int

    @property
    def batch_size(self) -> int:
        """Environment steps per update, one rollout of every environment: the command line's unit of progress (an
        off-policy algorithm's replay minibatch is its ``minibatch_size``)."""
        return self.num_envs * self.rollout_steps

    @property
    def num_updates(self) -> int:
        """Whole updates (iterations) in the budget: ``total_steps`` rounded down to a multiple of ``batch_size``."""
        return self.total_steps // self.batch_size


def check_on_policy_budget(config: Any) -> None:
    """The budget of an on-policy run (MAPPO, MAT), after its fields are checked: at least one update of
    ``batch_size`` env steps, which splits into ``num_minibatches`` equal minibatches; else ``ValueError``."""
    if config.total_steps < config.batch_size:
        raise ValueError(f"total_steps = {config.total_steps} is less than one update, num_envs * rollout_steps "
                         f"= {config.batch_size} env steps; a run needs at least one update")
    if config.batch_size % config.num_minibatches:
        raise ValueError(f"num_envs * rollout_steps = {config.batch_size} is not divisible by "
                         f"num_minibatches = {config.num_minibatches}")


def check_off_policy_budget(config: Any) -> None:
    """The budget of an off-policy run (MADDPG, MAAC), after its fields are checked: at least one iteration
    of ``batch_size`` env steps, an update after ``learning_starts`` within the whole iterations of
    ``total_steps`` (else the run would save an untrained actor), a replay buffer that holds an iteration,
    and a minibatch no larger than the buffer (drawn from it with replacement, a larger one only repeats
    transitions, and at a billion rows would exhaust memory); else ``ValueError`` naming the smallest budget
    that trains."""
    total_steps, batch_size, buffer_size = config.total_steps, config.batch_size, config.buffer_size
    learning_starts = check_int("learning_starts", config.learning_starts, minimum=0)
    if total_steps < batch_size:
        raise ValueError(f"total_steps = {total_steps} is less than one iteration, num_envs * rollout_steps "
                         f"= {batch_size} env steps")
    if total_steps // batch_size * batch_size < learning_starts:
        first = -(-learning_starts // batch_size) * batch_size
        raise ValueError(f"total_steps = {total_steps:,} ends before learning_starts = {learning_starts:,}: the run "
                         f"would make no update and save an untrained actor; give total_steps >= {first:,} (the first "
                         f"whole iteration of {batch_size:,} env steps at or after learning_starts) or lower "
                         "learning_starts")
    if buffer_size < batch_size:
        raise ValueError(f"buffer_size = {buffer_size} cannot hold one iteration's {batch_size} transitions")
    if config.minibatch_size > buffer_size:
        raise ValueError(f"minibatch_size = {config.minibatch_size:,} is larger than the replay buffer, buffer_size = "
                         f"{buffer_size:,}: a minibatch is drawn from the buffer's transitions")


def check_replay_buffer(capacity: int, m: int, obs_dim: int, action_dim: int) -> None:
    """The sizes of a replay buffer of ``capacity`` joint transitions: positive integers, and its arrays — o and o'
    (capacity, m, obs_dim), the actions (capacity, m, action_dim), rewards and ends — within the memory budget
    (:func:`check_cost`, :func:`memory_budget`)."""
    check_int("action_dim", action_dim)
    numbers = check_numbers("the replay buffer's observations o", ("capacity", capacity), ("m", m),
                            ("obs_dim", obs_dim), hint=" (a smaller buffer_size)")
    nbytes = 4 * (2 * numbers + capacity * m * (action_dim + 2) + capacity)
    check_cost(f"a replay buffer of {capacity:,} transitions of {m} agents", nbytes=nbytes,
               basis=f"o and o' of {numbers:,} float32 numbers each, actions, rewards and ends",
               remedy="give a smaller buffer_size")
