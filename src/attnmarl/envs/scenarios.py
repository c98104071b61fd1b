"""Scenario names and arguments: one place that knows which `mpe2` module a name means.

Every `mpe2` scenario can be made as a reference environment; some of them have batched ports
(:data:`PORTED`). Arguments are checked here, against the signature of the scenario's own
``raw_env``, so that a misspelt argument, an agent count below one or an argument the port does
not implement is a :class:`ValueError` that names it, before any environment is built.

Beside mpe2's scenarios sit the book's own: simple_spread with decoys (on mpe2's machinery) and Level-Based
Foraging (``"lbforaging"``, :mod:`attnmarl.envs.foraging`: a grid world outside mpe2, whose reference is
``lbforaging``'s game in the same parallel API; :data:`REFERENCE_MODULES`).
"""
from __future__ import annotations

import inspect
import os
import re
from types import ModuleType
from typing import Any

from ..checks import INT_MAX, check_bool, check_real, is_int
from ..costs import check_cost, duration

# mpe2 imports pygame; rendering to "rgb_array" needs no display, and a dummy video driver keeps
# pygame from looking for one on a headless machine.
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from mpe2.all_modules import mpe_environments  # noqa: E402

from . import decoys, foraging  # noqa: E402
from .lbf import check_lbf_arguments  # noqa: E402

MPE2_MODULES: dict[str, ModuleType] = {
    **{re.sub(r"_v\d+$", "", key.split("/")[-1]): module for key, module in mpe_environments.items()},
    decoys.NAME: decoys,
}
"""Scenario name without version (``"simple_spread"``) → the versioned mpe2 module (``simple_spread_v3``), and
the book's own scenario on mpe2's machinery, simple_spread with decoys (:mod:`attnmarl.envs.decoys`)."""

REFERENCE_MODULES: dict[str, ModuleType] = {**MPE2_MODULES, foraging.NAME: foraging}
"""Every scenario the package knows by name → the module whose ``parallel_env`` builds its reference: mpe2's
worlds (:data:`MPE2_MODULES`) and Level-Based Foraging (:mod:`attnmarl.envs.foraging`), which has no mpe2 world."""

PORT_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "simple_spread": ("N", "local_ratio", "max_cycles", "continuous_actions", "terminate_on_success"),
    "simple_tag": (
        "num_good",
        "num_adversaries",
        "num_obstacles",
        "max_cycles",
        "continuous_actions",
        "terminate_on_success",
    ),
    "collect_treasure": ("num_collectors", "num_deposits", "num_treasures", "max_cycles", "continuous_actions"),
    decoys.NAME: ("N", "decoys", "local_ratio", "max_cycles", "continuous_actions", "terminate_on_success"),
    foraging.NAME: tuple(inspect.signature(foraging.raw_env).parameters),
}
"""The mpe2 arguments each batched port implements (the others, e.g. curriculum or partial
observability, are refused by :func:`port_kwargs` rather than silently ignored)."""

PORTED: tuple[str, ...] = tuple(PORT_ARGUMENTS)

_COUNT_MINIMUM = {
    "N": 1,
    "num_good": 1,
    "num_adversaries": 1,
    "num_obstacles": 0,
    "num_collectors": 1,
    "num_deposits": 1,
    "num_treasures": 1,
    "max_cycles": 1,
}


_ENTITIES_PER_COUNT: dict[str, dict[str, int]] = {"simple_spread": {"N": 2}, "simple_adversary": {"N": 2}}
"""Entities per unit of a count argument where it is not one: simple_spread's N agents come with N landmarks,
simple_adversary's N good agents with N landmarks (and one adversary)."""

_FIXED_ENTITIES = {"simple": 2, "simple_adversary": 1, "simple_crypto": 5, "simple_formation": 1, "simple_line": 2,
                   "simple_push": 4, "simple_reference": 5, "simple_speaker_listener": 5}
"""Entities a world has beside those its count arguments make: simple_adversary's adversary, simple_line's two
landmarks, every entity of the scenarios without counts."""

REFERENCE_STEP_SECONDS = 1e-5
"""Seconds per pair of entities that mpe2 takes to build a world, reset it and step it once: it loops over every
pair of entities in Python (collisions, observations, rewards), so the cost grows as the square of their
number. Measured on a busy 2-core CPU: 0.3 s for 200 entities, 1.7 s for 600, 0.4 s at 600 to build and reset."""


def _counts(resolved: dict[str, Any]) -> dict[str, int]:
    """The arguments among ``resolved`` that count entities: ``N`` and ``num_*`` (not the ``*_neighbors`` sight)."""
    return {key: value for key, value in resolved.items()
            if (key == "N" or key.startswith("num_")) and not key.endswith("_neighbors") and is_int(value)}


def world_entities(name: str, resolved: dict[str, Any]) -> int:
    """How many entities (agents, landmarks, obstacles, food, forests) the mpe2 world ``name`` has with the
    checked arguments ``resolved``: ``len(world.entities)``, computed without building the world."""
    if name == decoys.NAME:
        return (2 + resolved["decoys"]) * resolved["N"]
    if name == foraging.NAME:  # players and foods: what one player's observation lists
        return resolved["players"] + resolved["foods"]
    per = _ENTITIES_PER_COUNT.get(name, {})
    return _FIXED_ENTITIES.get(name, 0) + sum(per.get(key, 1) * value for key, value in _counts(resolved).items())


PORT_AGENT_COUNTS: dict[str, tuple[str, ...]] = {"simple_spread": ("N",), "simple_tag": ("num_good", "num_adversaries"),
                                                 "collect_treasure": ("num_collectors", "num_deposits"),
                                                 decoys.NAME: ("N",), foraging.NAME: ("players",)}
"""The arguments of each ported scenario that count its agents (collect_treasure's deposits are agents too)."""


def world_agents(name: str, resolved: dict[str, Any]) -> int:
    """How many agents the ported scenario ``name`` has with the checked arguments ``resolved``, computed without
    building the world (a world of thousands of entities takes minutes to build)."""
    return sum(resolved[key] for key in PORT_AGENT_COUNTS[name])


def check_world_cost(name: str, resolved: dict[str, Any]) -> None:
    """Refuse an mpe2 world whose building and first step are estimated (:data:`REFERENCE_STEP_SECONDS` per pair
    of entities) to take more than :data:`attnmarl.costs.COST_SECONDS` (:func:`attnmarl.costs.check_cost`);
    the message gives the estimate for one step and for one episode of ``max_cycles`` steps."""
    entities = world_entities(name, resolved)
    seconds = REFERENCE_STEP_SECONDS * entities**2
    episode = seconds * resolved.get("max_cycles", 25)
    check_cost(f"{name} with {_counts(resolved)} ({entities:,} entities) on mpe2", seconds,
               basis=f"{REFERENCE_STEP_SECONDS:g} s per pair of entities, to build the world and step it once; an "
                     f"episode of {resolved.get('max_cycles', 25):,} steps would take about "
                     f"{duration(episode)}",
               remedy="mpe2 loops over every pair of entities at each step, so the time grows as the square of "
                      "their number: use fewer agents or objects")


def _check_argument(name: str, key: str, value: Any, annotation: str) -> Any:
    """One mpe2 argument against the type its ``raw_env`` declares (``'bool'``, ``'float'``, ``'int'``,
    ``'int | None'``, ``'str | None'``), returned as that Python type: a string is never a flag or a number
    (``'false'`` would act as True), and numpy's integers count as ints (``N=np.int64(3)`` is ``N=3``)."""
    if value is None and "None" in str(annotation):
        return value
    kind = str(annotation).split(" |")[0]
    if kind == "bool":
        return check_bool(f"{name}: {key}", value)
    if kind == "float":
        return check_real(f"{name}: {key}", value)
    if kind == "int":
        if not is_int(value):
            raise ValueError(f"{name}: {key} must be an int, got {value!r}")
        if name == "lbforaging":  # its own check (check_lbf_arguments, next) states each bound: sight >= 1, size >= 3
            return int(value)
        minimum = _COUNT_MINIMUM.get(key, 0)
        if not minimum <= value <= INT_MAX:
            raise ValueError(f"{name}: {key} must be >= {minimum}" + (f" and <= {INT_MAX:,}" if value > 0 else "")
                             + f", got {value}")
        return int(value)
    if kind == "str" and not isinstance(value, str):
        raise ValueError(f"{name}: {key} must be a string or None; got {value!r}")
    return value


def scenario_name(scenario: str) -> str:
    """Canonical name of a scenario: ``"simple_spread"``, ``"simple_spread_v3"`` and
    ``"mpe/simple_spread_v3"`` all mean ``"simple_spread"``."""
    if not isinstance(scenario, str):
        raise ValueError(f"scenario must be a string, got {type(scenario).__name__}")
    name = re.sub(r"_v\d+$", "", scenario.split("/")[-1])
    if name not in REFERENCE_MODULES:
        raise ValueError(f"unknown scenario {scenario!r}; mpe2 has {sorted(MPE2_MODULES)}, and the book adds "
                         f"{foraging.NAME!r}")
    return name


def reference_module(scenario: str) -> ModuleType:
    """The module of a scenario's reference (it has ``parallel_env`` and ``raw_env``; mpe2's have ``env`` too)."""
    return REFERENCE_MODULES[scenario_name(scenario)]


def reference_kwargs(scenario: str, **kwargs: Any) -> dict[str, Any]:
    """All arguments of the scenario's ``raw_env``, defaults filled in, after checking them.

    Raises ``ValueError`` for an argument the scenario does not take, an argument of another type than
    mpe2 declares (a string for a flag or a number), an agent/landmark count below its minimum (e.g.
    ``N < 1``), a world so large that building it and stepping it once would take minutes
    (:func:`check_world_cost`; ``ATTNMARL_ALLOW_COSTLY=1`` builds it anyway), or ``local_ratio`` outside [0, 1];
    for Level-Based Foraging, what :func:`attnmarl.envs.lbf.check_lbf_arguments` refuses.
    """
    name = scenario_name(scenario)
    signature = inspect.signature(REFERENCE_MODULES[name].raw_env)
    unknown = sorted(set(kwargs) - set(signature.parameters))
    if unknown:
        raise ValueError(f"{name} takes no argument(s) {unknown}; it takes {list(signature.parameters)}")
    bound = signature.bind(**kwargs)
    bound.apply_defaults()
    resolved = dict(bound.arguments)
    for key, value in resolved.items():
        resolved[key] = _check_argument(name, key, value, signature.parameters[key].annotation)
    if name == foraging.NAME:  # LBF's own limits (a grid of 3 x 3 or more, room for every player); no mpe2 world
        return check_lbf_arguments(**resolved)
    if name == "collect_treasure" and resolved["num_deposits"] > 6:
        raise ValueError(
            f"collect_treasure: num_deposits must be <= 6 (mpe2 has 6 colours), got {resolved['num_deposits']}"
        )
    modes = getattr(MPE2_MODULES[name].raw_env, "metadata", {}).get("render_modes", ["human", "rgb_array"])
    if resolved.get("render_mode") is not None and resolved["render_mode"] not in modes:
        raise ValueError(f"{name}: render_mode must be None or one of {modes}; got {resolved['render_mode']!r}")
    if "local_ratio" in resolved and not 0.0 <= resolved["local_ratio"] <= 1.0:
        raise ValueError(f"{name}: local_ratio must be in [0, 1], got {resolved['local_ratio']}")
    check_world_cost(name, resolved)
    return resolved


def port_kwargs(scenario: str, **kwargs: Any) -> dict[str, Any]:
    """Checked arguments for a batched port: only those in :data:`PORT_ARGUMENTS`, defaults from mpe2."""
    name = scenario_name(scenario)
    if name not in PORT_ARGUMENTS:
        raise ValueError(f"no batched port of {name!r}; ported scenarios are {list(PORTED)}")
    unsupported = sorted(set(kwargs) - set(PORT_ARGUMENTS[name]))
    if unsupported:
        raise ValueError(
            f"the batched {name} port does not implement argument(s) {unsupported}; "
            f"it implements {list(PORT_ARGUMENTS[name])} (use make_reference for the others)"
        )
    resolved = reference_kwargs(name, **kwargs)
    return {key: resolved[key] for key in PORT_ARGUMENTS[name]}


def given_port_kwargs(scenario: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments ``kwargs`` given for a batched port, checked by :func:`port_kwargs` and as the Python types
    mpe2 declares (``{"N": np.int64(3)}`` becomes ``{"N": 3}``, which a config can store and JSON write);
    only those given, without the defaults."""
    resolved = port_kwargs(scenario, **kwargs)
    return {key: resolved[key] for key in kwargs}
