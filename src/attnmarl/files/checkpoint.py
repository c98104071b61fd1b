"""The checkpoint file of a trained MAPPO or MADDPG agent: plain data, sealed, read back only when whole.

One ``.pt`` file holds plain data only, so it loads with ``torch.load(weights_only=True)``::

    {"format": "attnmarl.mappo/1", "config": {...the config as a dict...},
     "state_dict": {...}, "metadata": {...}, "checksum": "sha256:..."}

The format names the algorithm (``attnmarl.mappo/1``, ``attnmarl.maddpg/1`` or ``attnmarl.maac/1``) and the checksum
(:func:`attnmarl.files.sealed.seal`) covers everything else, so a file damaged after it was saved is refused.
This module knows the file, not the algorithms: :mod:`attnmarl.algos.mappo` reads a trained actor from
it to fine-tune, :mod:`attnmarl.checkpoints` rebuilds whole agents and policies, so the imports run one
way — checkpoints → algos → checkpoint_file → guards — with no circle.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import torch

from .atomic import write_atomically
from .sealed import check_finite_weights, check_plain, check_seal, check_shapes, check_stored, load_trusted, seal

__all__ = ["FORMAT", "MADDPG_FORMAT", "MAAC_FORMAT", "QMIX_FORMAT", "MAT_FORMAT", "ASSETS", "sealed_checkpoint",
           "read_checkpoint", "config_from", "resolve_asset", "seal_checkpoint"]

Config = TypeVar("Config")

FORMAT = "attnmarl.mappo/1"
MADDPG_FORMAT = "attnmarl.maddpg/1"
MAAC_FORMAT = "attnmarl.maac/1"
QMIX_FORMAT = "attnmarl.qmix/1"
"""Value decomposition: VDN, QMIX and Qatten (:mod:`attnmarl.algos.qmix`)."""
MAT_FORMAT = "attnmarl.mat/1"
"""The Multi-Agent Transformer and MAT-Dec (:mod:`attnmarl.algos.mat`)."""
_FORMATS = (FORMAT, MADDPG_FORMAT, MAAC_FORMAT, QMIX_FORMAT, MAT_FORMAT)

ASSETS = Path(str(resources.files("attnmarl") / "assets"))
"""The shipped trained agents, one folder per chapter (``value``, ``policy``), each with an ``index.json``."""


def sealed_checkpoint(format: str, config: dict[str, Any], state: dict[str, torch.Tensor],
                      metadata: dict[str, Any]) -> dict[str, Any]:
    """The data of a checkpoint, with its checksum. Raises ``ValueError`` for NaN or infinite weights (a
    diverged agent is not saved) and for a config or metadata that is not plain data (:func:`check_plain`: the
    file would be written, then refused by every load)."""
    check_finite_weights("the agent", state)
    check_plain("config", config)
    check_plain("metadata", metadata)
    return seal({"format": format, "config": config, "state_dict": state, "metadata": metadata})


def read_checkpoint(path: str | Path,
                    shapes: Callable[[dict[str, Any]], Mapping[str, tuple[int, ...]]] | None = None) -> dict[str, Any]:
    """The data of the checkpoint at ``path``, after checking that it is one, in an order that keeps a hostile
    file cheap: a file this book trusts, whose archive declares no more than it stores and compresses nothing
    (:func:`attnmarl.files.sealed.load_trusted`), of a known format, with every part, tensors that store every
    entry they declare (:func:`attnmarl.files.sealed.check_stored`), whole (its checksum, so an edited config is
    refused here, before anything is built from it), weights of the names and shapes its own config gives
    (``shapes`` maps the data to them, when the caller can tell) and finite; else ``ValueError`` saying which of
    these fails."""
    data = load_trusted(path, "attnmarl checkpoint")
    if not isinstance(data, dict) or data.get("format") not in _FORMATS:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path} is not an attnmarl checkpoint (format one of {list(_FORMATS)}); found {found!r}")
    missing = [key for key in ("config", "state_dict", "metadata") if not isinstance(data.get(key), dict)]
    if missing:
        raise ValueError(f"{path} is an incomplete attnmarl checkpoint: it has no dict under {missing} "
                         "(a checkpoint holds 'config', 'state_dict' and 'metadata')")
    check_seal(path, data, "attnmarl checkpoint")
    if shapes is not None:
        check_shapes(path, data["state_dict"], shapes(data))
    check_finite_weights(path, data["state_dict"])
    return data


def config_from(kind: type[Config], path: str | Path, stored: dict[str, Any]) -> Config:
    """The ``kind`` config (``MAPPOConfig``, ``MADDPGConfig``) stored in the checkpoint at ``path``;
    ``ValueError`` for fields this version does not know or values its checks refuse."""
    known = {f.name for f in fields(kind)}
    unknown = sorted(set(stored) - known)
    if unknown:
        raise ValueError(f"{path} has config fields this version does not know: {unknown}")
    try:
        return kind(**stored)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path} holds a config this version refuses: {error}") from None


def resolve_asset(path: str | Path) -> Path:
    """``path``, or, when it is relative and does not exist, the shipped asset of that name
    (``policy/pi-spread6-entity-seed0.pt``)."""
    path = Path(path)
    if not path.is_absolute() and not path.exists() and (ASSETS / path).exists():
        return ASSETS / path
    return path


def seal_checkpoint(path: str | Path) -> None:
    """Add a checksum to a checkpoint saved without one (by a version before checkpoints carried one),
    in place and atomically; the weights, config and metadata are unchanged. Only for files you trust:
    whatever they hold now is what the checksum vouches for."""
    data = load_trusted(path, "checkpoint")
    if not isinstance(data, dict) or not isinstance(data.get("state_dict"), dict):
        raise ValueError(f"{path} is not a checkpoint of this package (no 'state_dict')")
    if "checksum" in data:  # sealed already: refuse to bless damage done since
        check_seal(path, data, "checkpoint")
        return
    check_stored(path, data, "checkpoint")
    data = seal(data)
    write_atomically({path: lambda handle: torch.save(data, handle)})
