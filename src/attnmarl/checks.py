"""Checks of the values a reader passes in (DESIGN §6), shared by every module.

Bad input gets a ``ValueError`` that names the argument and the bad value, at the boundary a reader
touches, instead of a NaN, a silent wrap-around or an error from deep inside torch or numpy:

- :func:`check_int`, :func:`check_bool`, :func:`check_sizes`, :func:`check_seed`, :func:`check_index`,
  :func:`check_real` for sizes, flags, seeds, indices and hyperparameters (a string is never a bool or a
  number, a size is never beyond :data:`INT_MAX` nor a seed beyond :data:`SEED_MAX`, numpy's integers are
  integers and no bool is one: :func:`is_int`), and :func:`cli_int` for the command lines' integer options;
  :func:`check_config_fields` applies them to a training config, field by field;
- :func:`check_finite` for tensors (one reduction, cheap enough for the training loop),
  :func:`check_like` for a tensor whose dtype or device differs from the weights it meets, and
  :func:`overflow_error` for finite values that overflow inside a network, blaming the input or the
  weights, whichever is the larger; a tensor on the ``meta`` device has no values to check
  (:func:`has_values`), so only its shape, dtype and device are.

What a run would cost is checked in :mod:`attnmarl.costs`, devices in :mod:`attnmarl.devices`, files in
:mod:`attnmarl.files`, and interruption in :mod:`attnmarl.interrupt`.
"""
from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # torch is imported only where a check needs it: attnmarl.envs stays free of it
    from torch import Tensor


__all__ = ["nested_tensors", "is_int", "INT_MAX", "check_int", "check_bool", "check_sizes", "cli_int", "MAX_THREADS",
           "MAX_EPISODES", "cli_threads", "cli_episodes", "check_episodes", "SEED_MAX", "check_seed",
           "derived_seed", "cli_seed", "check_index", "check_indices", "check_real", "check_choice",
           "check_config_fields", "has_values", "check_finite", "WeightsOverflowError", "overflow_error",
           "check_no_overflow", "check_distributions", "check_like", "check_array"]


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

    whats = what[:-2] + "ices" if what.endswith("index") else what + "s"  # "agent indices", "actions"
    integer = isinstance(index, torch.Tensor) and not (index.is_floating_point() or index.is_complex())
    if not integer or index.dtype == torch.bool:
        got = f"dtype {index.dtype}" if isinstance(index, torch.Tensor) else type(index).__name__
        raise ValueError(f"{name} must be a tensor of integer {whats} (for example torch.long); got {got}")
    if shape is not None and tuple(index.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}; got {tuple(index.shape)}")
    if index.numel() and has_values(index) and not bool(((index >= 0) & (index < n)).all()):
        bad = index[(index < 0) | (index >= n)]
        raise ValueError(f"{name} must hold {whats} in [0, {n}); {bad.numel()} do not, for example {int(bad[0])}")


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


def check_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a numpy array if it is a rectangular array of finite real numbers (integers or floats);
    else ``ValueError``: a ragged list, strings, bools or complex numbers, NaN or an infinity would otherwise
    pass into numpy arithmetic and come out as a numpy error, or as NaN, far from the mistake."""
    try:
        array = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value)
    except ValueError:
        raise ValueError(f"{name} must be a rectangular array of numbers; got rows of different lengths") from None
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise ValueError(f"{name} must hold real numbers (integers or floats); got an array of dtype {array.dtype}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds {int(np.isnan(array).sum())} NaN and {int(np.isinf(array).sum())} infinite "
                         "value(s); every entry must be a finite number")
    return array


def check_choice(name: str, value: Any, options: Iterable[str]) -> None:
    """``value`` must be one of ``options`` (a config's design names); else ``ValueError`` listing them."""
    options = sorted(options)
    if value not in options:
        raise ValueError(f"{name} must be one of {options}; got {value!r}")


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


def nested_tensors(value: Any, name: str) -> Iterable[tuple[str, Tensor]]:
    """Every tensor in ``value`` (nested dicts, lists and tuples), with where it is (``state_dict['W']``)."""
    import torch

    if isinstance(value, torch.Tensor):
        yield name, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from nested_tensors(item, f"{name}[{key!r}]" if name else str(key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from nested_tensors(item, f"{name}[{i}]")
