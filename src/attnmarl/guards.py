"""The package's defences against bad input and interruption, shared by every module (DESIGN §6).

Bad input gets a ``ValueError`` that names the argument and the bad value, at the boundary a reader
touches, instead of a NaN, a silent wrap-around or an error from deep inside torch or numpy:

- :func:`check_int`, :func:`check_bool`, :func:`check_sizes`, :func:`check_seed`, :func:`check_index`,
  :func:`check_real` for sizes, flags, seeds, indices and hyperparameters (a string is never a bool or a
  number, a size is never beyond :data:`INT_MAX` nor a seed beyond :data:`SEED_MAX`, numpy's integers are
  integers and no bool is one: :func:`is_int`), and :func:`cli_int` for the command lines' integer options;
- :func:`check_cost` for work that would take minutes or exhaust memory: the caller estimates its seconds and
  bytes (a world of thousands of entities, thousands of unshared layers), and what is estimated beyond
  :data:`COST_SECONDS` or :func:`memory_budget` is refused before it starts, with the estimate and the way to
  run it anyway (``ATTNMARL_ALLOW_COSTLY=1`` in the environment, :data:`ALLOW_COSTLY`);
  :func:`check_numbers` does so for a product of sizes, each allowed on its own, that would allocate one
  array larger than the memory budget;
- :func:`check_finite` for tensors (one reduction, cheap enough for the training loop),
  :func:`check_like` for a tensor whose dtype or device differs from the weights it meets, and
  :func:`overflow_error` for finite values that overflow inside a network, blaming the input or the
  weights, whichever is the larger; a tensor on the ``meta`` device has no values to check
  (:func:`has_values`), so only its shape, dtype and device are;
- :func:`check_device` for the device a command line or a loader is asked to use, :func:`module_device` for the
  one device a network's weights share, and :func:`check_values` for tensors on the ``meta`` device, which have no
  values to save, load or act with;
- :func:`load_trusted` reads a checkpoint with ``torch.load(weights_only=True)`` and says plainly when a
  file is not one this book trusts; :func:`check_finite_weights` refuses NaN or infinite weights, and
  :func:`check_plain` a config or metadata that such a load would refuse once the file is written;
  :func:`seal` stamps a checkpoint's data with a SHA-256 checksum of everything in it (tensors, config,
  metadata) and :func:`check_seal` refuses a file whose contents no longer match it (a flipped byte
  inside a tensor loads without complaint from torch).

Files survive interruption: :func:`check_writable_folder` and :func:`check_writable_file` fail before
work whose results could not be saved, :func:`save_files` and :func:`save_result` keep results whose
files could not be written, :func:`run_command` ends a command line stopped by Ctrl-C or a refusal in one line, and
:func:`write_atomically` writes each file to a temporary file in the same folder and renames it over the
old one only once it is complete, so a killed process leaves either the old file or the new one, never
half of one (a folder as a target, a missing folder or a file named twice is refused before anything is
written); :func:`write_json_atomically` does so for one JSON file.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import importlib
import json
import math
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

if TYPE_CHECKING:  # torch is imported only where a check needs it: attnmarl.envs stays free of it
    import torch
    from torch import Tensor

__all__ = ["INT_MAX", "SEED_MAX", "is_int", "check_int", "ALLOW_COSTLY", "COST_SECONDS", "costly_allowed",
           "memory_budget", "duration", "check_cost", "check_numbers", "check_bool", "check_sizes", "cli_int",
           "check_seed", "derived_seed", "cli_seed", "check_index", "check_indices", "check_real",
           "check_choice", "check_replay_buffer", "check_config_fields", "has_values",
           "check_finite", "DEVICES", "check_device", "check_values", "module_device",
           "WeightsOverflowError", "overflow_error", "check_no_overflow", "check_distributions",
           "check_like",
           "MissingFileError", "FolderGivenError", "load_trusted", "check_finite_weights", "check_plain", "seal",
           "check_seal", "check_stored", "check_shapes",
           "check_writable_folder", "check_writable_file", "save_files", "save_result", "run_command",
           "write_atomically",
           "write_json_atomically", "MAX_THREADS", "MAX_EPISODES", "cli_threads", "cli_episodes", "check_episodes",
           "check_new_files", "check_run_file", "restore_sigint", "HeldInterrupt", "WRITTEN"]


def is_int(value: Any) -> bool:
    """True for an integer, Python's or numpy's (``np.int64(3)``, as numpy arithmetic returns it); False for
    anything else, bools included (``True`` is an ``int`` to Python, but never a size or a count here)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


INT_MAX = 2**31 - 1
"""The largest integer a size or a count may be: tensor sizes and numpy's indices are 32-bit in places, and
anything larger would fail inside them, or allocate for ever. (Seeds go further: :data:`SEED_MAX`.)"""


def check_int(name: str, value: Any, minimum: int = 1, maximum: int = INT_MAX) -> int:
    """``value`` as an int if it is an integer (not a bool) from ``minimum`` to ``maximum``; else ``ValueError``."""
    if not is_int(value) or value < minimum:
        raise ValueError(f"{name} must be {_int_kind(minimum)}; got {value!r}")
    if value > maximum:
        raise ValueError(f"{name} must be at most {maximum:,}; got {value!r}")
    return int(value)


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


def memory_budget() -> int:
    """The most bytes one estimated allocation may take: a quarter of this machine's physical memory (the rest
    leaves room for the copies a computation makes of its largest array, and for everything else running)."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): assume a small machine
        physical = 8 * 2**30
    return max(physical, 2**30) // 4


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


def _int_kind(minimum: int) -> str:
    return {1: "a positive integer", 0: "a non-negative integer"}.get(minimum, f"an integer >= {minimum}")


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool (numpy's too); else ``ValueError``. A string such as ``'false'`` or ``'no'``
    is refused, not read as True the way ``if value:`` would read it."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def check_sizes(**sizes: Any) -> None:
    """Every size given by name must be a positive integer (``None`` means "not used" and passes)."""
    for name, value in sizes.items():
        if value is not None:
            check_int(name, value)


def cli_int(minimum: int = 1, maximum: int = INT_MAX, why: str = "") -> Callable[[str], int]:
    """An ``argparse`` type for an integer option from ``minimum`` to ``maximum``: a bad value ends in
    argparse's usage error naming the option (``argument --threads: must be a positive integer; got 0``),
    not a traceback; ``why`` (for example `` (this machine has 2 cores)``) follows the upper limit."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer; got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {_int_kind(minimum)}; got {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}{why}; got {value}")
        return value

    return parse


MAX_THREADS = max(1, os.cpu_count() or 1)
"""The most torch threads a command line takes: this machine's cores (more threads than cores only
contend for them, and thousands of threads stall the process for minutes)."""

MAX_EPISODES = 100_000
"""The most episodes (or examples) one evaluation plays: an array per episode is allocated up front, and
100,000 short MPE episodes already take hours of CPU; more would exhaust memory or never end."""


def cli_threads() -> Callable[[str], int]:
    """The ``argparse`` type of ``--threads``: an integer from 1 to :data:`MAX_THREADS` (this machine's cores)."""
    return cli_int(1, MAX_THREADS, f" (this machine has {MAX_THREADS} cores)")


def cli_episodes() -> Callable[[str], int]:
    """The ``argparse`` type of an evaluation's number of episodes: 1 to :data:`MAX_EPISODES`."""
    return cli_int(1, MAX_EPISODES, " (an evaluation of more would run for days or exhaust memory)")


def check_episodes(name: str, value: Any) -> int:
    """:func:`check_int` for an evaluation's number of episodes, from 1 to :data:`MAX_EPISODES`."""
    return check_int(name, value, 1, MAX_EPISODES)


SEED_MAX = 2**64 - 1
"""The largest seed: numpy's generators (``default_rng``), torch's (``manual_seed``) and mpe2's (``reset(seed=)``,
through numpy) all take every integer from 0 to 2**64 - 1; torch refuses larger ones."""


def check_seed(value: Any, name: str = "seed") -> int:
    """A random seed: an integer from 0 to :data:`SEED_MAX`, 64 bits, as numpy, torch and mpe2 take it (numpy's
    generators refuse negative seeds, with a less clear message, and torch fails beyond 64 bits)."""
    return check_int(name, value, minimum=0, maximum=SEED_MAX)


def derived_seed(seed: int, offset: int) -> int:
    """The seed ``seed + offset`` of one of several streams (episode k, agent i), wrapped into 0 … :data:`SEED_MAX`
    so that a seed near the top still gives seeds that torch takes; the same number as ``seed + offset``
    whenever that fits in 64 bits."""
    return (seed + offset) % (SEED_MAX + 1)


def cli_seed() -> Callable[[str], int]:
    """The ``argparse`` type of a ``--seed`` option: an integer from 0 to :data:`SEED_MAX`."""
    return cli_int(0, SEED_MAX)


def check_index(name: str, value: Any, n: int, what: str = "index") -> int:
    """``value`` as an int if it indexes one of ``n`` things, 0 … n - 1. A negative index would silently
    count from the end (-1 = the last), so it is refused like any other out-of-range value."""
    if not is_int(value) or not 0 <= value < n:
        raise ValueError(f"{name} must be an {what} in [0, {n}); got {value!r}")
    return int(value)


def check_indices(name: str, index: Tensor, n: int, shape: tuple[int, ...] | None = None, what: str = "index") -> None:
    """Raise ``ValueError`` unless ``index`` is a tensor of integers (of ``shape``, if given), each in 0 … n - 1:
    torch's ``gather`` would fail with an error about its own internals, or, for a negative index in plain
    indexing, silently count from the end. An index without values (on the ``meta`` device) is checked for its
    dtype and shape only."""
    import torch

    integer = isinstance(index, torch.Tensor) and not (index.is_floating_point() or index.is_complex())
    if not integer or index.dtype == torch.bool:
        got = f"dtype {index.dtype}" if isinstance(index, torch.Tensor) else type(index).__name__
        raise ValueError(f"{name} must be a tensor of integer {what}es (for example torch.long); got {got}")
    if shape is not None and tuple(index.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}; got {tuple(index.shape)}")
    if index.numel() and has_values(index) and not bool(((index >= 0) & (index < n)).all()):
        bad = index[(index < 0) | (index >= n)]
        raise ValueError(f"{name} must hold {what}es in [0, {n}); {bad.numel()} do not, for example {int(bad[0])}")


def check_real(name: str, value: Any, low: float = -math.inf, high: float = math.inf, low_open: bool = False,
               high_open: bool = False) -> float:
    """``value`` as a float if it is a finite real number in the interval from ``low`` to ``high`` (each end
    included unless ``*_open``); else ``ValueError`` naming the interval."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number; got {value!r}")
    number = float(value)
    above = number > low if low_open else number >= low
    below = number < high if high_open else number <= high
    if not (math.isfinite(number) and above and below):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        where = "" if math.isinf(low) and math.isinf(high) else f" in {interval}"  # not "in [-inf, inf]"
        raise ValueError(f"{name} must be a finite number{where}; got {value!r}")
    return number


def check_choice(name: str, value: Any, options: Iterable[str]) -> None:
    """``value`` must be one of ``options`` (a config's design names); else ``ValueError`` listing them."""
    options = sorted(options)
    if value not in options:
        raise ValueError(f"{name} must be one of {options}; got {value!r}")


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


def check_config_fields(config: Any, sizes: Iterable[str], ranges: Iterable[tuple[str, float, float, bool]],
                        flags: Iterable[str] = ()) -> None:
    """The table-driven checks of a training config: the fields named in ``sizes`` are positive integers,
    ``config.seed`` is a seed, each (field, low, high, low end open) of ``ranges`` is a finite real there,
    and the fields named in ``flags`` are bools (``'no'`` is not False). Each field is then stored as the
    Python type it was checked as (``np.int64(8)`` as 8), so that the config can be written as JSON."""
    for name in flags:
        setattr(config, name, check_bool(name, getattr(config, name)))
    for name in sizes:
        setattr(config, name, check_int(name, getattr(config, name)))
    config.seed = check_seed(config.seed)
    for name, low, high, low_open in ranges:
        setattr(config, name, check_real(name, getattr(config, name), low, high, low_open=low_open))


def has_values(x: Tensor) -> bool:
    """False for a tensor on torch's ``meta`` device, which has a shape, a dtype and a device but no values
    (the tests run every network there, to show that it runs wherever its input lives): the checks of
    values pass it by, while the checks of shapes, dtypes and devices still apply."""
    return x.device.type != "meta"


def check_finite(name: str, x: Tensor) -> None:
    """Raise ``ValueError`` if ``x`` holds NaN or an infinity.

    One sum decides the common case: it is finite whenever every entry is (NaN and infinities survive
    any sum), so only a tensor whose sum is not finite — bad, or finite but huge — is checked entry by entry.
    """
    if not has_values(x) or math.isfinite(x.detach().sum().item()) or bool(x.isfinite().all()):
        return
    nan, inf = int(x.isnan().sum()), int(x.isinf().sum())
    first = tuple(int(i) for i in (~x.isfinite()).nonzero()[0])
    raise ValueError(f"{name} holds {nan} NaN and {inf} infinite value(s) (the first at index {first}); "
                     "every entry must be a finite number")


class WeightsOverflowError(ValueError):
    """Finite input overflowed a network because its own weights are too large (:func:`overflow_error`):
    a caller that knows where the weights came from (a checkpoint's path) adds it to the message."""


def overflow_error(where: str, x: Tensor, network: Any, what: str = "the observations") -> ValueError:
    """The error for finite input ``x`` (``what``) that overflowed ``x``'s dtype inside ``where``, blaming the
    larger of the two factors: ``x`` itself, or the finite weights of the module ``network`` — huge weights
    (a checkpoint that was tampered with or came from a run that blew up) make ordinary observations overflow,
    and the observations are then not the thing to scale down (:class:`WeightsOverflowError`)."""
    import torch

    limit = torch.finfo(x.dtype).max
    largest = float(x.detach().abs().amax()) if x.numel() else 0.0
    weights = [(float(p.detach().abs().amax()), name) for name, p in network.named_parameters() if p.numel()]
    heaviest, name = max(weights, default=(0.0, ""))
    if heaviest > largest:
        return WeightsOverflowError(
            f"the weights of {where} are finite but too large for {x.dtype}: the largest |weight| is {heaviest:.3g} "
            f"({name}), while {what}' largest |value| is {largest:.3g}, and the values computed from them exceed "
            f"{x.dtype}'s largest number, {limit:.3g} (an overflow to inf or NaN); weights this large come from no "
            "stable training run: the checkpoint (or the code that set them) is at fault, not the input")
    return ValueError(f"{what} are finite but too large for {where} in {x.dtype}: the largest |value| is "
                      f"{largest:.3g}, and the values computed from them exceed {x.dtype}'s largest number, "
                      f"{limit:.3g} (an overflow to inf or NaN); scale {what} down (normalise them) or compute in "
                      "float64")


def check_no_overflow(where: str, y: Tensor, x: Tensor, network: Any, what: str = "the observations") -> Tensor:
    """``y`` if it is finite; else the :func:`overflow_error` saying that finite input ``x`` (``what``, already
    checked finite) or the network's finite weights overflowed the dtype inside ``where`` — not NaN handed on
    as an answer, nor blamed on a mask. One reduction over ``y``; returns ``y`` so that it can wrap an
    expression. When the module ``network`` itself holds NaN or infinite weights (a diverged run), the overflow
    is not the cause: ``y`` is returned for the checks that name non-finite outputs."""
    import torch

    if not has_values(y) or bool(torch.isfinite(y).all()):
        return y
    if all(bool(torch.isfinite(p).all()) for p in network.parameters()):
        raise overflow_error(where, x, network, what)
    return y


def check_distributions(name: str, p: Any, atol: float = 1e-4) -> np.ndarray:
    """``p`` as a float array if every slice along its last axis is a probability distribution: finite,
    non-negative, summing to 1 (within ``atol``); else ``ValueError`` saying which row fails and how —
    statistics of attention weights (entropy, peaks) computed from anything else are silently wrong."""
    p = np.asarray(p.detach().cpu() if hasattr(p, "detach") else p, dtype=float)
    if p.ndim < 1 or p.size == 0:
        raise ValueError(f"{name} must hold at least one distribution over its last axis; got shape {p.shape}")
    if not np.isfinite(p).all():
        raise ValueError(f"{name} holds {int(np.isnan(p).sum())} NaN and {int(np.isinf(p).sum())} infinite "
                         "value(s); attention weights are finite numbers")
    rows = p.reshape(-1, p.shape[-1])  # one row per distribution, a 1-D p included (its sum is no array to index)
    sums = rows.sum(-1)
    bad = np.flatnonzero((rows < 0).any(-1) | (np.abs(sums - 1) > atol))
    if bad.size:
        first = bad[0]
        row = tuple(int(i) for i in np.unravel_index(first, p.shape[:-1]))
        which = f"{len(bad)} row(s) are not, the first {row}" if row else "it is not one"
        raise ValueError(f"{name} must be distributions over its last axis (weights >= 0 that sum to 1); {which} "
                         f"with sum {float(sums[first]):.4g} and smallest weight {float(rows[first].min()):.4g}")
    return p


def check_like(name: str, x: Tensor, reference: Tensor, what: str = "the layer's weights") -> None:
    """Raise ``ValueError`` unless ``x`` has the dtype and the device of ``reference`` (torch would refuse
    to multiply them, with a message about its internals)."""
    if x.dtype != reference.dtype:
        raise ValueError(f"{name} has dtype {x.dtype}, {what} {reference.dtype}: they must agree; convert one "
                         f"of them (for example {name}.to({reference.dtype}))")
    if x.device != reference.device:
        raise ValueError(f"{name} is on device {x.device}, {what} on {reference.device}: they must agree; "
                         "move one of them")


DEVICES = ("cpu", "cuda", "auto")
"""The devices a command line trains or plays on: ``auto`` is cuda where torch sees a GPU, else cpu."""


def check_device(device: Any, name: str = "device") -> torch.device:
    """The ``torch.device`` that ``device`` names: one of :data:`DEVICES`, ``"cuda:N"`` or a ``torch.device``
    of type cpu or cuda. ``ValueError`` naming ``name`` for anything else — an int (which torch reads as a GPU's
    number only where it sees one), bytes, ``"meta"``, ``"CPU"``, ``"cpu:1"`` (torch has one CPU device and
    ignores the index) — and for a GPU that torch does not see here (a machine without one, or an index beyond
    the GPUs it has), saying so in one line. ``"cpu:0"`` is ``cpu``."""
    import torch

    if not isinstance(device, (str, torch.device)):
        raise ValueError(f"{name} must be one of {list(DEVICES)}, 'cuda:N' or a torch.device of type cpu or cuda; "
                         f"got {device!r} of type {type(device).__name__}")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        resolved = None
    if resolved is None or resolved.type not in ("cpu", "cuda"):
        meant = device.strip().lower() if isinstance(device, str) else ""
        hint = (f" (did you mean {meant!r}?)" if meant in DEVICES else
                " (the meta device holds shapes without values: nothing can be trained or played there)"
                if resolved is not None and resolved.type == "meta" else "")
        raise ValueError(f"{name} must be one of {list(DEVICES)}, 'cuda:N' or a torch.device of type cpu or cuda; "
                         f"got {device!r}{hint}")
    if resolved.type == "cpu":
        if resolved.index not in (None, 0):
            raise ValueError(f"{name} {resolved}: torch has one CPU device, and would silently ignore the index "
                             f"{resolved.index}; use cpu")
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"{name} {resolved}: torch sees no GPU on this machine (torch.cuda.is_available() is False); "
                         "use cpu, or auto to take a GPU only where there is one")
    count = torch.cuda.device_count()
    if (resolved.index or 0) >= count:
        which = "cuda:0" if count == 1 else f"one of cuda:0 … cuda:{count - 1}"
        raise ValueError(f"{name} {resolved}: torch sees {count} GPU(s) here, numbered from 0; use {which} (or cuda, "
                         "the current one), or cpu")
    return resolved


def check_values(name: str, data: Any, remedy: str) -> None:
    """Raise ``ValueError`` naming the first tensor in ``data`` (a tensor, or nested dicts, lists and tuples of
    them) that has no values: one on torch's ``meta`` device (:func:`has_values`) has a shape, a dtype and a
    device but no entries, so it can be neither saved, hashed, loaded as weights nor read back as numbers (torch
    would fail with "Cannot copy out of meta tensor"). The message starts with ``name`` and ends with ``remedy``."""
    for where, tensor in _tensors(data, ""):
        if not has_values(tensor):
            raise ValueError(f"{name}: {where or 'its tensor'} (shape {tuple(tensor.shape)}) is on torch's meta "
                             f"device, which holds shapes but no values; {remedy}")


def module_device(name: str, module: Any) -> torch.device:
    """The one device on which every parameter and buffer of the ``torch.nn.Module`` ``module`` lives (cpu for one
    without any); ``ValueError`` naming ``name`` if they are spread over several devices (torch would fail where one
    meets another, deep inside a layer) or lie on the ``meta`` device (:func:`check_values`: no values to compute
    numbers from)."""
    import torch

    tensors = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    check_values(name, tensors, "load its weights onto cpu or cuda (for example attnmarl.checkpoints.load_agent("
                                "path, device='cpu')) first")
    devices: dict[torch.device, str] = {}
    for where, tensor in tensors.items():
        devices.setdefault(tensor.device, where)
    if len(devices) > 1:
        listed = ", ".join(f"{where} on {device}" for device, where in devices.items())
        raise ValueError(f"{name} is spread over {len(devices)} devices ({listed}): its layers could not meet; move "
                         "all of it to one with .to(device)")
    return next(iter(devices), torch.device("cpu"))


class MissingFileError(FileNotFoundError, ValueError):
    """A file that is not there, named in the package's words: a ``FileNotFoundError`` for code that looks
    for one, and a ``ValueError`` (bad input: a path to nothing) for everything that catches those."""


class FolderGivenError(IsADirectoryError, ValueError):
    """A folder given where a file is to be written: an ``IsADirectoryError`` for code that handles failed writes
    (:func:`save_files` keeps the results elsewhere), and a ``ValueError`` (bad input) for everything else."""


def load_trusted(path: str | Path, what: str) -> Any:
    """``torch.load(path, weights_only=True)`` on the CPU, with errors that say what is wrong with the file.

    A missing file raises :class:`MissingFileError` (a ``FileNotFoundError`` and a ``ValueError``), a
    folder or a file this process may not read ``ValueError``, each naming the path. A file that
    ``weights_only`` refuses to unpickle — it holds Python objects other than tensors, numbers, strings
    and containers, the kind that can run code when loaded, or it is not a torch file at all — and a
    damaged or truncated file raise ``ValueError`` saying
    that this is not a loadable ``what``.
    """
    import torch

    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"the path of the {what} must be a file name; got {path!r}")
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except FileNotFoundError:
        raise MissingFileError(f"{path} does not exist: there is no {what} there") from None
    except IsADirectoryError:
        raise ValueError(f"{path} is a folder; give the path of the {what} (a file) in it") from None
    except PermissionError:
        raise ValueError(f"{path} cannot be read by this process (permission denied); no {what} was loaded") from None
    except pickle.UnpicklingError:
        raise ValueError(f"{path} is not a loadable {what}: it is not a checkpoint this book trusts. Only files "
                         "of plain tensors, numbers, strings and containers are read, and this one holds "
                         "something else (objects that could run code when loaded) or is not a torch file at all, "
                         "so it was not loaded") from None
    except Exception as error:  # a damaged zip archive, an empty or truncated file
        reason = str(error).split(". ")[0] or type(error).__name__
        raise ValueError(f"{path} is not a loadable {what}: the file is empty, truncated or damaged "
                         f"({reason})") from None


def check_finite_weights(path: str | Path, state: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` if a checkpoint's state dict holds a non-tensor, a tensor that is not float32 (the
    dtype of every network here: torch's ``load_state_dict`` would silently convert integer or half-precision
    weights) or a NaN or infinite weight (a diverged run must not load and play as if it were trained)."""
    import torch

    for key, tensor in state.items():
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"{path}: state_dict entry {key!r} is a {type(tensor).__name__}, not a tensor")
        if tensor.dtype != torch.float32:
            raise ValueError(f"{path}: state_dict entry {key!r} has dtype {tensor.dtype}; the networks' weights are "
                             "torch.float32, and loading would convert them silently")
        try:
            check_finite(key, tensor)
        except ValueError as error:
            raise ValueError(f"{path} holds non-finite weights: {error}") from None


_PLAIN = (str, int, float, bool, type(None))
"""The scalars a checkpoint's config and metadata may hold, exactly (numpy's ``np.float64`` is a ``float`` to
Python, but ``torch.load(weights_only=True)`` refuses to unpickle it)."""


def check_plain(name: str, value: Any) -> None:
    """Raise ``ValueError`` naming the entry unless ``value`` is plain data that ``torch.load(weights_only=True)``
    reads back: str, int, float, bool and None (of exactly those types), tensors, and lists, tuples and dicts of
    them. Checked before a checkpoint is written: a numpy number or any other object in its metadata would be
    saved without complaint and then refused by every load, the run's weights with it."""
    import torch

    if isinstance(value, torch.Tensor):
        check_values(name, value, "a checkpoint of it would hold no numbers, and every load would refuse it; give "
                                  "a tensor with values (on cpu or cuda)")
        return
    if type(value) in _PLAIN:
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_plain(f"{name}[{i}]", item)
    elif type(value) is dict:
        for key, item in value.items():
            if type(key) not in _PLAIN:
                raise ValueError(f"{name} has the key {key!r} of type {type(key).__name__}; a checkpoint holds plain "
                                 "data only, with strings or numbers as keys")
            check_plain(f"{name}[{key!r}]", item)
    else:
        hint = " (convert it with float() or int())" if isinstance(value, (np.generic, np.ndarray)) else ""
        raise ValueError(f"{name} is {value!r:.60} of type {type(value).__name__}{hint}; a checkpoint holds plain data "
                         "only (str, int, float, bool, None, tensors, lists and dicts of them), else torch.load("
                         "weights_only=True) would refuse the file once written")


HASH_CHUNK_BYTES = 2**24
"""The most bytes of a tensor that :func:`seal` and :func:`check_seal` copy at once to hash it (16 MB): a tensor
whose entries are not laid out in order is hashed piece by piece, never copied whole."""


def _tensor_bytes(tensor: Tensor) -> Iterable[Any]:
    """The bytes of ``tensor``'s entries in C order, as numpy views of at most :data:`HASH_CHUNK_BYTES` each: a
    contiguous tensor is read in place; any other is copied a piece of rows at a time."""
    import torch

    if tensor.is_contiguous() or tensor.dim() == 0 or tensor.numel() * tensor.element_size() <= HASH_CHUNK_BYTES:
        flat = tensor.contiguous().reshape(-1).view(torch.uint8).numpy()
        for start in range(0, flat.size, HASH_CHUNK_BYTES):
            yield flat[start:start + HASH_CHUNK_BYTES]
        return
    rows = max(1, HASH_CHUNK_BYTES // max(1, tensor[0].numel() * tensor.element_size()))
    for piece in tensor.split(rows):
        yield from _tensor_bytes(piece[0] if piece.shape[0] == 1 else piece)


def _feed(hasher: Any, value: Any) -> None:
    """Feed ``value`` to ``hasher`` in a canonical form: dicts by sorted key, tensors by dtype, shape and
    bytes (:func:`_tensor_bytes`, in bounded pieces), anything else by type and ``repr`` (exact for the str, int,
    float, bool and None a checkpoint holds)."""
    import torch

    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        hasher.update(f"T{tensor.dtype}{tuple(value.shape)}:".encode())
        for chunk in _tensor_bytes(tensor):
            hasher.update(chunk)
    elif isinstance(value, Mapping):
        hasher.update(b"{")
        for key in sorted(value, key=repr):
            _feed(hasher, key)
            _feed(hasher, value[key])
        hasher.update(b"}")
    elif isinstance(value, (list, tuple)):
        hasher.update(b"[")
        for item in value:
            _feed(hasher, item)
        hasher.update(b"]")
    else:
        hasher.update(f"{type(value).__name__}:{value!r};".encode())


def _checksum(data: Mapping[str, Any]) -> str:
    hasher = hashlib.sha256()
    _feed(hasher, {key: value for key, value in data.items() if key != "checksum"})
    return "sha256:" + hasher.hexdigest()


def seal(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` (a checkpoint's plain data) with a ``"checksum"``: the SHA-256 of all the rest, tensors
    included, which :func:`check_seal` recomputes when the file is read back. ``ValueError`` for a tensor on the
    ``meta`` device (:func:`check_values`): it has no bytes to hash."""
    check_values("the data to seal", data, "it has no bytes to hash; seal tensors with values (on cpu or cuda)")
    return {**data, "checksum": _checksum(data)}


def _tensors(value: Any, name: str) -> Iterable[tuple[str, Tensor]]:
    """Every tensor in ``value`` (nested dicts, lists and tuples), with where it is (``state_dict['W']``)."""
    import torch

    if isinstance(value, torch.Tensor):
        yield name, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _tensors(item, f"{name}[{key!r}]" if name else str(key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _tensors(item, f"{name}[{i}]")


def check_stored(path: str | Path, data: Any, what: str) -> None:
    """Raise ``ValueError`` if a tensor read from ``path`` declares more entries than its file stores: a view
    whose entries overlap (stride 0: one stored number read as a billion) is what no saved weight is, and
    hashing, checking or loading it would allocate gigabytes for a file of a few kilobytes. Checked before
    anything reads the entries (:func:`check_seal` calls it first), so such a file is refused at once. A tensor on
    the ``meta`` device (saved from a network there) stores no entries at all, and is refused first
    (:func:`check_values`)."""
    check_values(f"{path} is not a loadable {what}", data, "the file was saved from a network on the meta "
                 "device, so it holds no weights; load a file saved from weights on cpu or cuda")
    total, storages = 0, {}
    for name, tensor in _tensors(data, ""):
        declared = tensor.numel() * tensor.element_size()
        storage = tensor.untyped_storage()
        stored = storage.nbytes() - tensor.storage_offset() * tensor.element_size()
        total += declared
        storages[storage.data_ptr(), storage.nbytes()] = storage.nbytes()
        if declared > stored:
            raise ValueError(f"{path} is not a loadable {what}: {name or 'its tensor'} declares {tensor.numel():,} "
                             f"numbers (shape {tuple(tensor.shape)}, strides {tensor.stride()}) but the file stores "
                             f"{max(stored, 0) // tensor.element_size():,} for it, so its entries overlap (a stride-0 "
                             "view); a saved weight stores every entry, so the file was made or changed by hand and "
                             "is refused before its checksum is computed")
    if total > sum(storages.values()):  # each tensor fits its storage, but many tensors read the same numbers
        raise ValueError(f"{path} is not a loadable {what}: its tensors declare {total:,} bytes of entries over "
                         f"{sum(storages.values()):,} bytes stored, so several of them read the same stored numbers; "
                         "a saved checkpoint stores each weight on its own, so the file was made or changed by hand "
                         "and is refused before its checksum is computed")


def check_shapes(path: str | Path, state: Mapping[str, Any], expected: Mapping[str, tuple[int, ...]]) -> None:
    """Raise ``ValueError`` unless the state dict ``state`` read from ``path`` holds exactly the weights ``expected``
    (names and shapes: those of the agent its own config builds), naming the first few that differ."""
    given = {name: tuple(tensor.shape) if hasattr(tensor, "shape") else type(tensor).__name__
             for name, tensor in state.items()}
    if given != dict(expected):
        differ = sorted(name for name in given.keys() | expected.keys() if given.get(name) != expected.get(name))
        listed = "; ".join(f"{name}: file {given.get(name, 'none')}, config {expected.get(name, 'none')}"
                           for name in differ[:4]) + (f"; and {len(differ) - 4} more" if len(differ) > 4 else "")
        raise ValueError(f"{path}: the weights do not fit the architecture of its own config — {len(differ)} "
                         f"differ in name or shape: {listed}")


def check_seal(path: str | Path, data: Mapping[str, Any], what: str) -> None:
    """Raise ``ValueError`` unless ``data``, as read from ``path``, carries the checksum of its contents:
    a file changed after it was saved (a flipped byte in a weight, say) is refused, not played. A tensor that
    declares more entries than the file stores is refused first (:func:`check_stored`), and the tensors are
    hashed in bounded pieces (:data:`HASH_CHUNK_BYTES`), so refusing a hostile file stays cheap."""
    check_stored(path, data, what)
    stored = data.get("checksum")
    if not isinstance(stored, str):
        raise ValueError(f"{path} is a {what} without a checksum (saved before attnmarl's checkpoints carried "
                         "one), so damage to its weights could not be detected and it is not loaded; if you "
                         "trust the file, attnmarl.checkpoints.seal_checkpoint(path) adds one")
    if _checksum(data) != stored:
        raise ValueError(f"{path} is a damaged {what}: its contents no longer match the checksum stored when it "
                         "was saved (a changed byte in a weight or setting), so it is not loaded; restore the "
                         "file or train it again")


def check_run_file(path: str | Path, run: str, seed: int) -> Path:
    """``path``, the checkpoint of ``--run run --seeds seed``, if it exists; else ``ValueError`` naming both
    options and listing the runs and seeds that the folder does hold (the first 30)."""
    path = Path(path)
    if path.is_file():
        return path
    held = sorted(p.name.removesuffix(".pt") for p in path.parent.glob("*-seed*.pt")) if path.parent.is_dir() else []
    listed = (", ".join(held[:30]) + (f" and {len(held) - 30} more" if len(held) > 30 else "")) if held else "none"
    hint = "; give --run without its '-seedS.pt' (--seeds adds it)" if re.search(r"-seed\d+(\.pt)?$", run) else ""
    raise ValueError(f"--run {run} with --seeds {seed}: there is no {path}; the runs (NAME-seedS) in "
                     f"{path.parent} are: {listed}{hint}")


def check_writable_folder(folder: str | Path, name: str = "out") -> Path:
    """Create ``folder`` if needed and make sure a file can be written in it — before hours of training
    whose results could not be saved. Raises ``ValueError`` naming ``name`` and the reason."""
    if not isinstance(folder, (str, os.PathLike)) or not str(folder).strip():
        raise ValueError(f"{name} must name a folder; got {folder!r}")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{name} = {str(folder)!r} is a file, not a folder; give a folder to write in")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise ValueError(f"{name} = {str(folder)!r} is not a folder this process can write to: "
                         f"{error.strerror or error}") from None
    return folder


def check_new_files(paths: Iterable[str | Path], replace: bool, name: str = "--out",
                    option: str = "--replace") -> list[Path]:
    """The files among ``paths`` that exist already. Unless ``replace``, an existing one is refused with a
    ``ValueError`` naming it, so that a new result never silently replaces an older one (``option`` is
    how the caller replaces on purpose)."""
    existing = [Path(path) for path in paths if Path(path).exists()]
    if existing and not check_bool("replace", replace):
        listed = ", ".join(repr(str(path)) for path in existing)
        raise ValueError(f"{name} would replace {listed}, which exists already; choose another {name}, or "
                         f"pass {option} to replace it on purpose")
    return existing


def check_writable_file(path: str | Path, name: str = "--out", replace: bool = True) -> Path:
    """``path`` as a ``Path`` if a file can be written there: not empty, not a folder, in a folder this
    process can write to (created if needed), and — unless ``replace`` — not an existing file
    (:func:`check_new_files`). Check it before the work whose result the file will hold."""
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"{name} is empty; give the path of the file to write")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{name} = {str(path)!r} is a folder; give the path of a file to write, for example "
                         f"{str(path / 'result.json')!r}")
    check_writable_folder(path.parent, f"the folder of {name}")
    check_new_files([path], replace, name)
    return path


def save_files(files: Mapping[str | Path, bytes], name: str = "--out") -> None:
    """Write a set of files as one unit (:func:`write_atomically`, in the order given) and never lose
    them: if the write fails (a full disk, a folder removed meanwhile), the same files go to a new folder
    in the temporary folder instead — or, failing that too, to standard error (binary ones in base64) — and
    ``OSError`` says where, so that the work that computed them need not be done again."""
    try:
        write_atomically({path: (lambda handle, data=data: handle.write(data)) for path, data in files.items()})
        return
    except OSError as error:
        reason = error.strerror or str(error)
    targets = ", ".join(repr(str(path)) for path in files)
    kept = None
    try:
        kept = Path(tempfile.mkdtemp(prefix="attnmarl-kept-"))
        for path, data in files.items():
            (kept / Path(path).name).write_bytes(data)
        where = f"the results are kept in {kept}"
    except OSError:
        if kept is not None:  # a half-kept folder would look like the results
            shutil.rmtree(kept, ignore_errors=True)
        sys.stderr.write(_printable(files))
        where = ("the result was printed to standard error above" if len(files) == 1 and _text(files) else
                 "every file was printed to standard error above, each after a line '==> NAME <==' (binary files "
                 "as base64: decode them with `base64 -d`)")
    raise OSError(f"could not write {name} = {targets} ({reason}); {where}")


def _text(files: Mapping[str | Path, bytes]) -> bool:
    """True if every file is UTF-8 text."""
    try:
        for data in files.values():
            data.decode()
    except UnicodeDecodeError:
        return False
    return True


def _printable(files: Mapping[str | Path, bytes]) -> str:
    """The files as text for standard error, the last place left to keep them: one text file as it is; else
    each after a line naming it, a binary one (a checkpoint) in base64, so that none is lost or garbled."""
    if len(files) == 1 and _text(files):
        return next(iter(files.values())).decode()
    parts = []
    for path, data in files.items():
        if _text({path: data}):
            header, body = f"==> {Path(path).name} <==", data.decode()
        else:
            header, body = f"==> {Path(path).name} (base64) <==", base64.encodebytes(data).decode()
        parts.append(f"{header}\n{body}" + ("" if body.endswith("\n") else "\n"))
    return "".join(parts)


def save_result(path: str | Path, data: Any, name: str = "--out") -> None:
    """:func:`save_files` for the JSON result (indented by one space) of a long computation."""
    save_files({path: (json.dumps(data, indent=1) + "\n").encode()}, name)


def restore_sigint() -> None:
    """Hand Ctrl-C back to Python (``KeyboardInterrupt``) if ``attnmarl``'s start-up handler, which ends a
    command line interrupted during its imports in one line, still holds it."""
    import signal

    from . import _interrupted_while_starting

    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def run_command(prog: str, main: Callable[[], Any], interrupted: str, imports: tuple[str, ...] = ()) -> None:
    """Run a command line's ``main`` so that it ends in one line, not a traceback, when it is stopped:
    Ctrl-C (SIGINT) prints ``PROG: interrupted; <interrupted>`` — what was and was not written — and exits
    with status 130 (if ``main`` had already written files with :func:`write_atomically`, the line names them
    instead, each complete, since ``interrupted`` says what holds when nothing was written); a refusal or a
    failed write (``ValueError``, ``OSError``, which name the problem)
    prints ``PROG: error: <message>`` and exits with status 1. (Ctrl-C during the imports before it is
    caught by ``attnmarl``'s start-up handler, which this hands back to Python.)

    ``imports`` are modules that ``main`` would import late, imported first, while the start-up handler
    still holds Ctrl-C: torch's first optimizer imports ``torch._dynamo`` (4–5 s), and a KeyboardInterrupt
    raised inside it, in the ``exec`` that ``dataclasses`` runs, is remembered by CPython 3.11 as unhandled,
    so the process would end by SIGINT (status -2) even after the line above."""
    for module in imports:
        importlib.import_module(module)
    restore_sigint()
    already = len(WRITTEN)
    try:
        main()
    except KeyboardInterrupt:
        written = WRITTEN[already:]
        if written:
            listed = ", ".join(str(path) for path in written)
            interrupted = f"it had written {listed} (each file complete); nothing else was written"
        sys.stderr.write(f"\n{prog}: interrupted; {interrupted}\n")
        sys.exit(130)
    except (ValueError, OSError) as error:
        sys.stderr.write(f"{prog}: error: {error}\n")
        sys.exit(1)


def write_atomically(files: Mapping[str | Path, Callable[[BinaryIO], None]]) -> None:
    """Write several files so that an interruption never leaves half of one.

    Each ``write(handle)`` fills a temporary file in its target's folder (named ``.NAME.*.tmp``, so no
    ``*.pt`` or ``*.json`` pattern matches it), which is flushed to disk; only when every file is
    complete are they renamed over their targets (``os.replace``, atomic on one file system), in the
    order given. Ctrl-C (SIGINT) is held across the renames (:class:`HeldInterrupt`) and raised once they are
    done, so an interrupted write leaves either every old file or every new one, never a mixed set, and the
    files written are recorded in :data:`WRITTEN` (what :func:`run_command` reports). A process killed before
    the renames leaves the old files (and perhaps a ``.tmp`` file, which nothing reads); only a kill that
    cannot be caught (SIGKILL, a power cut) between two renames leaves the first files new and the rest
    old — put last the file that says the others are complete. A target named twice, a folder, or one in a
    folder that does not exist is refused before anything is written (:func:`_check_targets`).
    """
    _check_targets(list(files))
    staged: list[tuple[str, Path]] = []
    mode = 0o666 & ~_umask()  # what open() would have given the file (mkstemp's is 0o600)
    try:
        for target, write in files.items():
            target = Path(target)
            descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            staged.append((temporary, target))
            with open(descriptor, "wb") as handle:
                write(handle)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
        with HeldInterrupt():
            for temporary, target in staged:
                os.replace(temporary, target)
                WRITTEN.append(target)
    finally:
        for temporary, _ in staged:
            if os.path.exists(temporary):
                os.remove(temporary)


WRITTEN: list[Path] = []
"""Every file this process has written with :func:`write_atomically`, in order: :func:`run_command` names those
written before an interrupt, so that its last line never says that nothing was written when something was."""


class HeldInterrupt:
    """A block during which Ctrl-C (SIGINT) is held: an interrupt that arrives is remembered, and delivered to
    the handler it was meant for (``KeyboardInterrupt``, usually) as soon as the block ends — so that a few
    steps that belong together (renaming a set of files into place) are never cut in two. Outside the main
    thread, where no Python signal handler can be set and no ``KeyboardInterrupt`` is raised, it holds
    nothing."""

    def __init__(self) -> None:
        self.pending, self.installed = False, False
        self.previous: Any = None

    def _hold(self, signum: int, frame: Any) -> None:
        self.pending = True

    def __enter__(self) -> HeldInterrupt:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._hold)
            self.installed = True
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if not self.installed:
            return
        previous = signal.SIG_DFL if self.previous is None else self.previous  # None: set outside Python
        signal.signal(signal.SIGINT, previous)
        if not self.pending:
            return
        if callable(previous):  # Python's default_int_handler raises KeyboardInterrupt
            previous(signal.SIGINT, None)
        elif previous == signal.SIG_DFL:  # the interrupt ends the process, as it would have
            os.kill(os.getpid(), signal.SIGINT)


def _check_targets(targets: list[str | Path]) -> None:
    """Refuse, before anything is written, a set of files that cannot be written as one: a target named twice
    (as ``"a/x"`` and ``Path("a/x")``, say: one would silently replace the other) is a ``ValueError``; a target
    that is a folder (:class:`FolderGivenError`), or whose folder does not exist (:class:`MissingFileError`), an
    ``OSError`` and a ``ValueError`` naming it (not the temporary file's name): :func:`save_files` answers the
    ``OSError`` by keeping the files elsewhere."""
    seen: dict[str, str | Path] = {}
    for target in targets:
        key = os.path.realpath(target)
        if key in seen:
            raise ValueError(f"the files to write name {str(target)!r} twice (also as {str(seen[key])!r}); each file "
                             "of a set is written once")
        seen[key] = target
        path = Path(target)
        if path.is_dir():
            raise FolderGivenError(f"cannot write {str(path)!r}: it is a folder; give the path of a file in it")
        if not path.parent.is_dir():
            raise MissingFileError(f"cannot write {str(path)!r}: its folder {str(path.parent)!r} does not exist "
                                    "(or is not a folder)")


def write_json_atomically(path: str | Path, data: Any) -> None:
    """``data`` as JSON (indented by one space, with a final newline), written by :func:`write_atomically`."""
    text = (json.dumps(data, indent=1) + "\n").encode()
    write_atomically({path: lambda handle: handle.write(text)})


def _umask() -> int:
    """The process's file-creation mask (reading it means setting it, so it is set back at once)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return umask
