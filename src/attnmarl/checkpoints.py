"""Checkpoints of trained MAPPO, MADDPG, MAAC, value-decomposition and MAT agents, and the policies they become.

A checkpoint is one ``.pt`` file holding plain data only, so it loads with
``torch.load(weights_only=True)`` (:mod:`attnmarl.files.checkpoint`)::

    {"format": "attnmarl.mappo/1", "config": {...MAPPOConfig as a dict...},
     "state_dict": {...actor, critic and value normalisation...}, "metadata": {...},
     "checksum": "sha256:..."}

or, for MADDPG (chapter 9), ``"format": "attnmarl.maddpg/1"`` with a :class:`MADDPGConfig` and the
actor and Q critic, for MAAC ``"format": "attnmarl.maac/1"`` with a :class:`MAACConfig`, and for the
Multi-Agent Transformer (chapter 13) ``"format": "attnmarl.mat/1"`` with a :class:`MATConfig`. The format
says which algorithm's config and agent the rest describes; the checksum covers the rest, so a file
damaged after it was saved is refused instead of played.

:func:`load_policy` turns one into the dict policy that :func:`attnmarl.envs.evaluate` and
:func:`attnmarl.envs.render_episode` take: each agent acts on its own observation with the
decentralized actor pi(a^i | o^i; theta), greedily (argmax) or by sampling, as the checkpoint's
config says (``eval_deterministic``) unless told otherwise (MADDPG's actor is deterministic: mu(o^i), or
mu(o^i) plus exploration noise). A centralized actor is given every agent's observation at once: MAT decodes
the team's actions agent by agent from all of them. The centralized critic is only needed
for training; :func:`load_agent` returns the whole agent, critic included, for inspecting v_hat and alpha.

Checkpoints hold CPU tensors, wherever the agent trained, and are read onto the CPU; the loaders' ``device``
("cpu", "cuda" or "auto") is where the agent they return runs.
"""
from __future__ import annotations

import csv
import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .algos import maac, maddpg, mappo, mat, qmix
from .algos.maac import MAACAgent, MAACConfig
from .algos.maddpg import MADDPGAgent, MADDPGConfig
from .algos.mappo import ACTOR_ARCHITECTURE, MAPPOAgent, MAPPOConfig, copy_actor, load_actor_from
from .algos.mat import MATAgent, MATConfig
from .algos.qmix import QMIXAgent, QMIXConfig
from .checks import WeightsOverflowError, check_bool, check_seed
from .devices import check_device, check_values, module_device
from .envs import Policy, make_reference, policy_from_arrays
from .files.atomic import write_atomically
from .files.checkpoint import (
    ASSETS,
    FORMAT,
    MAAC_FORMAT,
    MADDPG_FORMAT,
    MAT_FORMAT,
    QMIX_FORMAT,
    config_from,
    read_checkpoint,
    seal_checkpoint,
    sealed_checkpoint,
)
from .files.sealed import check_run_file

__all__ = ["FORMAT", "FORMATS", "ARCHITECTURE", "MADDPG_ARCHITECTURE", "MAAC_ARCHITECTURE", "QMIX_ARCHITECTURE",
           "MAT_ARCHITECTURE", "ACTOR_ARCHITECTURE", "ASSETS", "checkpoint_data", "check_agent_fits", "save_checkpoint",
           "load_checkpoint", "seal_checkpoint", "load_agent", "load_agent_at", "load_actor_from", "agent_policy",
           "load_policy", "load_run", "shipped_runs", "config_runs", "shipped_curve", "shipped_checkpoint",
           "shipped_table"]

Config = MAPPOConfig | MADDPGConfig | MAACConfig | QMIXConfig | MATConfig
Agent = MAPPOAgent | MADDPGAgent | MAACAgent | QMIXAgent | MATAgent

FORMATS: dict[str, type[Config]] = {
    FORMAT: MAPPOConfig, MADDPG_FORMAT: MADDPGConfig, MAAC_FORMAT: MAACConfig, QMIX_FORMAT: QMIXConfig,
    MAT_FORMAT: MATConfig}
"""A checkpoint's format -> the config class it holds (and so the algorithm and the agent it rebuilds)."""

ARCHITECTURE = ("scenario", "scenario_kwargs", "critic", "actor", "d_x", "heads", "d_q", "d_out", "depth",
                "critic_hidden", "actor_hidden", "entity_d", "entity_heads", "entity_ff",
                "entity_frame", "entity_mixing", "decoy_view", "sight_radius", "messages", "message_rounds",
                "message_d_k")
"""The config fields that fix the networks' shapes: a checkpoint only loads into an agent that agrees on all of them."""

MADDPG_ARCHITECTURE = ("scenario", "scenario_kwargs", "critic", "actor", "d_x", "heads", "d_q", "d_out", "depth",
                       "critic_hidden", "actor_hidden", "entity_d", "entity_heads", "entity_ff")
"""The same for a MADDPG checkpoint."""

MAAC_ARCHITECTURE = ("scenario", "scenario_kwargs", "critic", "d", "heads", "actor_hidden")
"""The same for a MAAC checkpoint."""

QMIX_ARCHITECTURE = ("scenario", "scenario_kwargs", "mixer", "agent_net", "entity_d", "entity_heads",
                     "entity_ff", "actor_hidden", "qmix_embed", "hyper_hidden", "qatten_heads", "qatten_d",
                     "qatten_d_u")
"""The same for a value-decomposition (VDN, QMIX, Qatten) checkpoint."""

MAT_ARCHITECTURE = ("scenario", "scenario_kwargs", "variant", "d", "heads", "d_ff", "entity_heads", "blocks")
"""The same for a MAT or MAT-Dec checkpoint; only its token layout depends on ``scenario_kwargs``, not a weight."""

_ALGORITHMS = {MAPPOConfig: (mappo, ARCHITECTURE), MADDPGConfig: (maddpg, MADDPG_ARCHITECTURE),
               MAACConfig: (maac, MAAC_ARCHITECTURE), QMIXConfig: (qmix, QMIX_ARCHITECTURE),
               MATConfig: (mat, MAT_ARCHITECTURE)}
"""The module that builds an agent of each config type, and the fields that fix its shapes."""


def _format(config: Config) -> str:
    return next(name for name, kind in FORMATS.items() if isinstance(config, kind))


def _architecture(config: Config) -> tuple[str, ...]:
    return _ALGORITHMS[type(config)][1]


def make_agent(config: Config) -> Agent:
    """A freshly initialised agent of the algorithm ``config`` belongs to (MAPPO, MADDPG, MAAC, QMIX or MAT)."""
    return _ALGORITHMS[type(config)][0].make_agent(config)


def checkpoint_data(agent: Agent, config: Config, **metadata: Any) -> dict[str, Any]:
    """The plain data a checkpoint holds: ``agent``'s parameters, copied to the CPU (so that the file loads on a
    machine without a GPU), ``config``, any plain-data ``metadata`` (scores, time, command) and their checksum.
    Raises ``ValueError`` for NaN or infinite weights (a diverged agent is not saved), for metadata that is not
    plain data, and for an agent that ``config`` does not describe (:func:`check_agent_fits`): either file would
    be written, then refused by every load; and for an agent on the ``meta`` device, which has no weights to save."""
    check_agent_fits(agent, config)
    check_values("the agent", agent.state_dict(), "it has no weights to save; save an agent trained or loaded on cpu "
                 "or cuda")
    state = {name: tensor.detach().to("cpu", copy=True) for name, tensor in agent.state_dict().items()}
    return sealed_checkpoint(_format(config), asdict(config), state, metadata)


def check_agent_fits(agent: Agent, config: Config) -> None:
    """Raise ``ValueError`` unless ``agent`` has the weights, names and shapes, of the agent ``config`` builds:
    a checkpoint of ``agent`` under another config (another actor, team size or algorithm) could never be loaded.
    The agent it compares with is built with the random state saved and restored, so no draw is spent."""
    if not isinstance(config, tuple(_ALGORITHMS)):
        raise ValueError(f"config must be a MAPPOConfig, MADDPGConfig, MAACConfig, QMIXConfig or MATConfig; got "
                         f"{type(config).__name__}")
    with torch.random.fork_rng(devices=[]):
        expected = {name: tuple(tensor.shape) for name, tensor in make_agent(config).state_dict().items()}
    given = {name: tuple(tensor.shape) for name, tensor in agent.state_dict().items()}
    if given != expected:
        differ = sorted(name for name in expected.keys() | given.keys() if expected.get(name) != given.get(name))
        listed = "; ".join(f"{name}: agent {given.get(name, 'none')}, config {expected.get(name, 'none')}"
                           for name in differ[:4]) + (f"; and {len(differ) - 4} more" if len(differ) > 4 else "")
        actor = f", {config.actor} actor" if hasattr(config, "actor") else ""
        raise ValueError(f"the agent is not the one its config describes ({type(config).__name__} with "
                         f"{config.scenario} {config.scenario_kwargs}{actor}): "
                         f"{len(differ)} weight(s) differ in name or shape — {listed}; a checkpoint of it could not "
                         "be loaded, so it is not saved")


def save_checkpoint(path: str | Path, agent: Agent, config: Config, **metadata: Any) -> None:
    """Write :func:`checkpoint_data` to ``path`` atomically: an interrupted save leaves the old file whole."""
    data = checkpoint_data(agent, config, **metadata)
    write_atomically({path: lambda handle: torch.save(data, handle)})


def load_checkpoint(path: str | Path) -> tuple[Config, dict[str, torch.Tensor], dict[str, Any]]:
    """Read a checkpoint (``weights_only=True``): its config, state dict and metadata.

    ``ValueError`` says what is wrong with anything else: a file this book does not trust or cannot read
    (:func:`attnmarl.files.sealed.load_trusted`), another format, a missing part, contents that no longer match
    their checksum, a config this version refuses, NaN or infinite weights.
    """
    config, state, metadata, _ = _read(path, fork_rng=True)
    return config, state, metadata


def _read(path: str | Path, fork_rng: bool) -> tuple[Config, dict[str, torch.Tensor], dict[str, Any], Agent]:
    """The config, state dict and metadata of a checkpoint, and a fresh agent built from that config, with which
    the weights' names and shapes are compared. The agent is built only once the file is known whole
    (:func:`read_checkpoint` checks its archive and its checksum first), so an edited config is refused as damaged
    before anything is built from it. With ``fork_rng`` the agent is built without drawing from torch's global
    generator (a caller that only reads the file); without, it draws as building it to load the weights always
    has."""
    built: dict[str, Any] = {}

    def shapes(data: dict[str, Any]) -> dict[str, tuple[int, ...]]:
        built["config"] = config_from(FORMATS[data["format"]], path, data["config"])
        with torch.random.fork_rng(devices=[], enabled=fork_rng):
            built["agent"] = make_agent(built["config"])
        return {name: tuple(tensor.shape) for name, tensor in built["agent"].state_dict().items()}

    data = read_checkpoint(path, shapes)
    return built["config"], data["state_dict"], data["metadata"], built["agent"]


def load_run(path: str | Path, run: str, seed: int) -> Config:
    """The config of ``path``, the checkpoint that ``--run run --seeds seed`` names (``NAME-seedS.pt``, with
    NAME the last part of ``run``), if it exists (:func:`attnmarl.files.sealed.check_run_file`) and holds that run.
    A checkpoint renamed or copied from another seed or run would be scored under a name that is not its
    own; its config and metadata say which run it is, and ``ValueError`` names both."""
    config, _, metadata = load_checkpoint(check_run_file(path, run, seed))
    name, stored_seed = metadata.get("name"), metadata.get("seed", config.seed)
    if config.seed != seed or stored_seed != seed or name not in (None, Path(run).name):
        raise ValueError(f"{path} holds the run {name or Path(run).name}-seed{config.seed} (its own record), not "
                         f"{Path(run).name}-seed{seed} as its file name says: a renamed or copied checkpoint would "
                         "be scored under another run's name; give the run and seed it was trained as")
    return config


def load_agent(path: str | Path, config: Config | None = None, device: str | torch.device = "cpu"
               ) -> tuple[Agent, Config]:
    """The trained agent of a checkpoint, on ``device``, and the config it was trained with.

    With ``config``, the checkpoint must have been made for the same architecture (every field in
    :data:`ARCHITECTURE` equal); otherwise this raises ``ValueError`` naming the fields that differ,
    instead of loading weights into a network they were not trained for.
    """
    device = check_device(device)
    saved, state, _, agent = _read(path, fork_rng=False)
    if config is not None:
        if type(config) is not type(saved):
            raise ValueError(f"{path} holds a {type(saved).__name__} agent, not the {type(config).__name__} one "
                             "requested")
        differ = [f"{name}: checkpoint {getattr(saved, name)!r}, requested {getattr(config, name)!r}"
                  for name in _architecture(saved) if getattr(saved, name) != getattr(config, name)]
        if differ:
            raise ValueError(f"{path} holds another architecture than requested — " + "; ".join(differ))
    return _whole_agent(agent, state, path).to(device), saved


def _whole_agent(agent: Agent, state: dict[str, torch.Tensor], path: str | Path) -> Agent:
    """``agent``, freshly built from the config of the checkpoint at ``path``, with every weight of ``state``, in
    eval mode."""
    try:
        agent.load_state_dict(state)
    except RuntimeError as error:
        raise ValueError(f"{path}: the weights do not fit the architecture of its own config: {error}") from None
    agent.eval()
    return agent


def agent_policy(agent: Agent, config: Config, deterministic: bool | None = None, seed: int = 0,
                 source: str | Path | None = None) -> Policy:
    """The mpe2 dict policy of a trained agent: every agent's a^i from its policy, decentralized or
    centralized (the actor is given all m observations and uses what its design allows).

    ``deterministic`` (default: ``config.eval_deterministic``) takes the most probable action, or the
    mean mu of a continuous policy; otherwise actions are sampled with a generator seeded by ``seed``
    (continuous samples clipped to [0, 1]). ``source``, the checkpoint the agent was loaded from, is named
    in the error if its weights are so large that they overflow (:class:`attnmarl.checks.WeightsOverflowError`).
    The agent acts where its weights are (each observation goes there, each action comes back); ``ValueError``
    (:func:`attnmarl.devices.module_device`) for an agent spread over several devices or on ``meta``, where it has no
    values to act with. A greedy policy with discrete actions also carries ``many``
    (:func:`attnmarl.envs.policy_from_arrays`), so that :func:`attnmarl.envs.episode_returns` plays its episodes side
    by side, one network call per step for all of them, to the returns one by one would give (but for the rounding
    of a batched matrix product at a near-tie: :func:`attnmarl.envs.evaluate._side_by_side`). An agent whose
    ``act`` draws from the generator while acting greedily is a ``RuntimeError``: its games would depend on the
    order they are played in.
    """
    greedy = config.eval_deterministic if deterministic is None else check_bool("deterministic", deterministic)
    check_seed(seed)
    device = module_device("the agent", agent)
    env = make_reference(config.scenario, **config.scenario_kwargs)
    generator = torch.Generator().manual_seed(seed)

    def act_many(o: np.ndarray) -> list[np.ndarray]:
        before = generator.get_state() if greedy else None
        with torch.no_grad():
            try:
                a, _ = agent.act(torch.from_numpy(o).to(device), generator, deterministic=greedy)
            except WeightsOverflowError as error:
                if source is None:
                    raise
                raise WeightsOverflowError(f"the checkpoint {source} cannot act: {error}") from None
        if greedy and not torch.equal(before, generator.get_state()):  # side by side would not be one by one
            raise RuntimeError(f"{type(agent).__name__}.act drew random numbers while acting greedily")
        return [agent.env_actions(row) for row in a]

    def act(o: np.ndarray) -> np.ndarray:
        return act_many(o[None])[0]

    # A greedy agent's moves in one game depend on nothing else, so its episodes may be played side by side.
    # Continuous actions are left one by one: a batched matmul may round the last bit otherwise (1e-5 of a return).
    side_by_side = greedy and not env.unwrapped.continuous_actions
    return policy_from_arrays(env, act, act_many if side_by_side else None)


def load_policy(path: str | Path, deterministic: bool | None = None, seed: int = 0, device: str | torch.device = "cpu",
                **env_kwargs: Any) -> Policy:
    """A checkpoint as a policy for :func:`attnmarl.envs.evaluate` (observation dict -> action dict), whose
    actor runs on ``device``.

    ``env_kwargs`` (for example ``N=9``) run it in the scenario with other arguments than it was
    trained with: its actor is rebuilt for them and given the trained weights, which works for the
    entity actor at any m and raises ``ValueError`` for an actor whose shapes depend on m.

    Example::

        policy = load_policy(shipped_checkpoint("policy", "pi-spread6-entity"), N=9)
        evaluate(policy, "simple_spread", N=9)
    """
    agent, config = load_agent_at(path, device, **env_kwargs)
    return agent_policy(agent, config, deterministic, seed, source=path)


def load_agent_at(path: str | Path, device: str | torch.device = "cpu", **env_kwargs: Any) -> tuple[Agent, Config]:
    """The agent of a checkpoint, on ``device``, rebuilt for other scenario arguments (``N=12``) when they differ
    from those it was trained with: the trained actor (:func:`load_actor_from`; ``ValueError`` for an actor
    whose shapes depend on m) beside an *untrained* critic, since the critics' shapes depend on m.
    Without new arguments, :func:`load_agent`. Returns the agent and its config for these arguments."""
    device = check_device(device)
    saved, state, _, built = _read(path, fork_rng=bool(env_kwargs))  # with new arguments, another agent is built
    try:
        config = replace(saved, scenario_kwargs={**saved.scenario_kwargs, **env_kwargs})
    except ValueError as error:
        raise ValueError(f"{path} cannot run with {env_kwargs}: {error}") from None
    if config == saved:  # the arguments it was trained with: built as loading it always has
        return _whole_agent(built if not env_kwargs else make_agent(saved), state, path).to(device), saved
    agent = make_agent(config)
    if isinstance(saved, MATConfig):
        _copy_mat(agent, config, saved, state, path)
    elif isinstance(saved, QMIXConfig):
        qmix.copy_agent_net(agent, config, saved, state, path)
    else:
        copy_actor(agent, config, saved, state, path)
    agent.eval()
    return agent.to(device), config


def _copy_mat(agent: MATAgent, config: MATConfig, saved: MATConfig, state: dict[str, torch.Tensor],
              path: str | Path) -> None:
    """Every weight of a MAT checkpoint into ``agent``, built for other scenario arguments: no weight, not even
    the value normalisation's, depends on m, so the critic comes too. Only a team without some kind of entity
    token the checkpoint was trained on (no other agent at m = 1) does not fit (``ValueError``)."""
    try:
        agent.load_state_dict(state)
    except RuntimeError:
        raise ValueError(f"{path}: its MAT was trained with {saved.scenario_kwargs}, and with {config.scenario_kwargs} "
                         "its agents' entity tokens have another layout (a team of one has no other agent), so its "
                         "weights do not fit; give a team with every kind of entity it was trained on") from None


def _asset_folder(folder: str) -> Path:
    path = ASSETS / folder
    if not (path / "index.json").exists():
        shipped = sorted(p.parent.name for p in ASSETS.glob("*/index.json"))
        raise ValueError(f"no shipped runs in {folder!r}; folders with runs: {shipped}")
    return path


def shipped_runs(folder: str, name: str | None = None) -> list[dict[str, Any]]:
    """Every run shipped in ``assets/<folder>`` (its ``index.json``): name, seed, scenario, arguments,
    command, CPU seconds, final mpe2 return ± sem over 200 episodes, curve and checkpoint file names; with
    ``name``, only the runs (every seed) of that config."""
    runs = json.loads((_asset_folder(folder) / "index.json").read_text())
    return runs if name is None else [r for r in runs if r["name"] == name]


def config_runs(folder: str, name: str) -> list[dict[str, Any]]:
    """The shipped runs of config ``name`` in ``assets/<folder>``, every seed, in seed order; ``ValueError`` naming
    the commands that train and index them where none has shipped (no ``index.json`` yet, or none of this config).
    A damaged ``index.json`` is not a missing one: its ``json.JSONDecodeError`` propagates."""
    try:
        runs = sorted(shipped_runs(folder, name), key=lambda r: r["seed"])
    except json.JSONDecodeError:
        raise
    except ValueError:  # no index.json in the folder yet
        runs = []
    if not runs:
        raise ValueError(f"no shipped runs of {name} in assets/{folder}; train them with "
                         f"python -m attnmarl.train --config {name} --seeds 0-2 --out src/attnmarl/assets/{folder} "
                         f"and index them with python -m attnmarl.train --index src/attnmarl/assets/{folder}")
    return runs


def shipped_curve(folder: str, name: str, seed: int) -> dict[str, np.ndarray]:
    """The learning curve of one shipped run as columns: env_steps, wall_seconds, cpu_seconds,
    train_return, eval_return (mean over agents), eval_sem, eval_episodes and eval_return_<i>
    (agent i's mean return, in runs made since the CLI records them)."""
    check_seed(seed)
    path = _asset_folder(folder) / f"{name}-seed{seed}.csv"
    if not path.exists():
        names = sorted({r["name"] for r in shipped_runs(folder)})
        raise ValueError(f"no shipped curve {path.name} in {folder!r}; shipped runs: {names}")
    with open(path) as handle:
        rows = list(csv.DictReader(handle))
    return {key: np.array([float(r[key]) if r[key] != "" else np.nan for r in rows]) for key in rows[0]}


def shipped_checkpoint(folder: str, name: str, seed: int = 0) -> Path:
    """Path of a shipped checkpoint, for :func:`load_policy` or :func:`load_agent`."""
    check_seed(seed)
    path = _asset_folder(folder) / f"{name}-seed{seed}.pt"
    if not path.exists():
        shipped = [r["checkpoint"] for r in shipped_runs(folder) if r["checkpoint"]]
        raise ValueError(f"no shipped checkpoint {path.name} in {folder!r}; shipped: {shipped}")
    return path


def shipped_table(folder: str, filename: str) -> dict[str, Any]:
    """A JSON table shipped beside a folder's runs (for example ``scale/zero-shot.json``, written by
    ``python -m attnmarl.transfer``, or ``qnet/tag-versus.json``, by ``python -m attnmarl.versus``)."""
    if not isinstance(filename, str) or Path(filename).name != filename or filename in ("", ".", ".."):
        raise ValueError(f"filename must be the name of a table in {folder!r}, without a folder; got {filename!r} "
                         "(another folder's file would be returned as this folder's table)")
    path = _asset_folder(folder) / filename
    if not path.exists():
        tables = sorted(p.name for p in path.parent.glob("*.json")  # not the index, not a run's summary
                        if p.name != "index.json" and not p.with_suffix(".csv").exists())
        raise ValueError(f"no shipped table {filename!r} in {folder!r}; shipped tables: {tables}")
    return json.loads(path.read_text())
