"""The playground: trained simple_spread agents running in the page (DESIGN §4, "in-page models").

Where a grid of precomputed frames cannot show what matters — dragging a landmark, changing m,
watching a trained team play — the page runs the real thing. :func:`playground_html` writes one
self-contained piece of HTML: the world's constants and the shipped actors' weights (float32,
exported here at build time from their checkpoints, whose checksums are checked on loading), and
``static/playground.js``, which steps simple_spread, cuts each agent's observation into entity
tokens and runs the actors in the browser. No kernel, no network: the same HTML works in the built
book, in Jupyter and in Colab (:func:`playground` displays it).

The JavaScript is a twin of the package, trusted only through parity tests in Chromium
(``tests/test_playground.py``): the world step against :class:`attnmarl.envs.spread.BatchedSpread`,
the actors' logits and alpha against torch, and whole episodes' actions against Python rollouts.
"""
from __future__ import annotations

import base64
import html
import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .checkpoints import load_agent, shipped_checkpoint
from .envs.scenarios import port_kwargs
from .envs.spread import BatchedSpread
from .guards import check_int
from .widgets import _asset

__all__ = ["ENTITY_ACTOR", "FLAT_ACTOR", "M_RANGE", "MAX_PAGE_SEED", "world_constants", "export_entity_actor",
           "entity_actor_weights",
           "export_flat_actor", "playground_spec", "playground_html", "playground"]

ENTITY_ACTOR = ("policy", "pi-spread6-entity", 0)
"""The entity-attention actor the page runs (chapter 8's, trained at m = 6): folder, run name, seed."""
FLAT_ACTOR = ("policy", "pi-spread6-flat", 0)
"""The flat MLP actor the page offers at the m it was trained for (chapter 8's, m = 6)."""
M_RANGE = (3, 16)
"""The team sizes of the page's m slider."""
MAX_PAGE_SEED = 2**52
"""The largest seed the page takes: it reads the spec with ``JSON.parse``, whose numbers hold integers exactly
only up to 2^53, and its reset button counts up from the seed (a larger one would start another episode than
Python's ``BatchedSpread(1, seed)``, or repeat one)."""

_ENTITY_TENSORS = (("embed", "embed.weight"), ("ln_attn_w", "ln_attn.weight"), ("ln_attn_b", "ln_attn.bias"),
                   ("W_q", "W_q.weight"), ("W_kv", "W_kv.weight"), ("W_o", "W_o.weight"), ("W_o_b", "W_o.bias"),
                   ("ln_ff_w", "ln_ff.weight"), ("ln_ff_b", "ln_ff.bias"), ("ff0", "ff.0.weight"),
                   ("ff0_b", "ff.0.bias"), ("ff2", "ff.2.weight"), ("ff2_b", "ff.2.bias"),
                   ("ln_out_w", "ln_out.weight"), ("ln_out_b", "ln_out.bias"), ("W_y", "W_y.weight"),
                   ("W_y_b", "W_y.bias"))
"""The JavaScript name of each tensor of :class:`attnmarl.nets.policies.EntityAttention`."""

_SPREAD_KINDS = (4, 2, 4)
"""Widths of simple_spread's token kinds (self [v, p], landmark [dx, dy], agent [dx, dy, c]), the
layout playground.js hard-codes (its feature blocks 0-3, 4-5, 6-9 and kind flags 10-12)."""


def world_constants() -> dict[str, float]:
    """mpe2's simple_spread constants as the port reads them (:class:`attnmarl.envs.physics.WorldParams`)."""
    env = BatchedSpread(1, N=3)
    p = env.params
    for name in ("agent_size", "sensitivity", "mass", "landmark_size"):
        if len(set(getattr(p, name))) != 1:
            raise ValueError(f"playground.js assumes one {name} for every entity; got {getattr(p, name)}")
    if np.isfinite(p.max_speed).any() or p.landmarks_collide or not p.agents_collide:
        raise ValueError("playground.js steps colliding agents without a speed limit and landmarks that do not collide")
    return {"dt": p.dt, "damping": p.damping, "contact_force": p.contact_force, "contact_margin": p.contact_margin,
            "agent_size": float(p.agent_size[0]), "landmark_size": float(p.landmark_size[0]),
            "sensitivity": float(p.sensitivity[0]), "mass": float(p.mass[0]),
            "local_ratio": float(env.local_ratio), "max_cycles": int(env.max_cycles)}


def _pack(named: list[tuple[str, torch.Tensor]], sizes: dict[str, Any]) -> dict[str, Any]:
    """Tensors as one little-endian float32 buffer in base64, with each tensor's name and length."""
    flat = np.concatenate([t.detach().to(torch.float32).reshape(-1).numpy() for _, t in named])
    data = base64.b64encode(flat.astype("<f4").tobytes()).decode()
    return {"sizes": sizes, "tensors": [[name, int(t.numel())] for name, t in named], "data": data}


def _actor(path: Path, kind: str):
    agent, config = load_agent(path)
    if config.scenario != "simple_spread" or config.scenario_kwargs.get("continuous_actions"):
        raise ValueError(f"{path} is not a discrete-action simple_spread policy")
    if config.actor != kind:
        raise ValueError(f"{path} holds a {config.actor!r} actor, not the {kind!r} one asked for")
    if getattr(config, "entity_mixing", "attention") != "attention":
        raise ValueError(f"{path} holds an entity actor that mixes its tokens by {config.entity_mixing!r}; "
                         "playground.js runs attention, so the page would play another policy than this one")
    port = BatchedSpread(4, seed=0, **config.scenario_kwargs)  # the weights must act in Python before the page
    try:
        with torch.no_grad():
            agent.actor(torch.from_numpy(port.reset()))
    except ValueError as error:
        raise ValueError(f"{path}: its actor cannot act on simple_spread's observations ({error}), so the page "
                         "would play what Python refuses") from None
    return agent.actor, config


def export_entity_actor(path: str | Path) -> dict[str, Any]:
    """The weights of a MAPPO checkpoint's egocentric entity actor, as playground.js decodes them."""
    actor, config = _actor(Path(path), "entity")
    return entity_actor_weights(actor, int(config.scenario_kwargs["N"]), str(path))


def entity_actor_weights(actor: torch.nn.Module, trained_m: int, source: str = "the actor") -> dict[str, Any]:
    """An egocentric simple_spread entity actor (trained at ``trained_m``) packed as playground.js's
    ``decodeWeights`` reads it; ``ValueError`` (naming ``source``) for any other actor."""
    if getattr(actor, "frame", None) != "egocentric" or len(actor.nets) != 1:
        raise ValueError(f"{source}: the page runs one egocentric entity actor for all agents")
    if getattr(actor, "mixing", "attention") != "attention":
        raise ValueError(f"{source}: the page runs attention, not {actor.mixing!r}")
    net = actor.nets[0]
    if net.kind_widths != _SPREAD_KINDS or net.embed.weight.shape[1] != sum(_SPREAD_KINDS) + len(_SPREAD_KINDS):
        raise ValueError(f"{source}: token kinds {net.kind_widths}, not simple_spread's {_SPREAD_KINDS}")
    if not (net.ln_attn.eps == net.ln_ff.eps == net.ln_out.eps):
        raise ValueError(f"{source}: the layer norms have different eps")
    params = dict(net.named_parameters())
    sizes = {"d": net.d, "heads": net.heads, "d_tokens": net.embed.weight.shape[1],
             "d_ff": net.ff[0].out_features, "d_y": net.W_y.out_features, "eps": net.ln_attn.eps,
             "trained_m": int(trained_m)}
    return _pack([(js, params[name]) for js, name in _ENTITY_TENSORS], sizes)


def export_flat_actor(path: str | Path) -> dict[str, Any]:
    """The weights of a MAPPO checkpoint's flat actor (one MLP shared by all agents)."""
    actor, config = _actor(Path(path), "flat")
    if len(actor.pis) != 1:
        raise ValueError(f"{path}: the playground runs one flat actor shared by all agents")
    hidden, out = actor.pis[0][0], actor.pis[0][1]
    layers = [hidden[0], hidden[2], out]
    sizes = {"obs_dim": actor.obs_dim, "d_hidden": hidden[0].out_features, "d_y": actor.d_y,
             "trained_m": int(config.scenario_kwargs["N"])}
    named = [(name, t) for key, layer in zip(("l0", "l1", "out"), layers)
             for name, t in ((key, layer.weight), (f"{key}_b", layer.bias))]
    return _pack(named, sizes)


def playground_spec(m: int = 6, seed: int = 0, policy: str = "entity") -> dict[str, Any]:
    """Everything the page needs: constants, weights, and the starting settings."""
    m = check_int("m", m, minimum=M_RANGE[0], maximum=M_RANGE[1])  # a plain int (np.int64 is no JSON)
    seed = check_int("seed", seed, minimum=0, maximum=MAX_PAGE_SEED)  # MAX_PAGE_SEED: JavaScript's exact integers
    if policy not in ("entity", "flat", "greedy"):
        raise ValueError(f"policy must be 'entity', 'flat' or 'greedy'; got {policy!r}")
    entity = export_entity_actor(shipped_checkpoint(*ENTITY_ACTOR[:2], seed=ENTITY_ACTOR[2]))
    flat = export_flat_actor(shipped_checkpoint(*FLAT_ACTOR[:2], seed=FLAT_ACTOR[2]))
    if policy == "flat" and m != flat["sizes"]["trained_m"]:
        raise ValueError(f"the flat actor runs only at the m it was trained for, m = {flat['sizes']['trained_m']}")
    world = world_constants()
    if port_kwargs("simple_spread", N=m)["max_cycles"] != world["max_cycles"]:
        raise ValueError("simple_spread's episode length depends on m")
    return {"world": world, "entity": entity, "flat": flat, "m": m, "seed": seed, "policy": policy,
            "m_range": list(M_RANGE), "names": {"entity": f"{ENTITY_ACTOR[1]} seed {ENTITY_ACTOR[2]}",
                                                "flat": f"{FLAT_ACTOR[1]} seed {FLAT_ACTOR[2]}"}}


def playground_html(m: int = 6, seed: int = 0, policy: str = "entity") -> str:
    """The playground as one self-contained piece of HTML (see the module docstring)."""
    spec = playground_spec(m, seed, policy)
    ident = f"attnmarl-pg-{uuid.uuid4().hex[:10]}"
    return (
        f"<style>{_asset('playground.css')}</style>\n"
        f'<div class="attnmarl-playground" id="{html.escape(ident)}">'
        "<noscript>The playground needs JavaScript.</noscript></div>\n"
        f'<script type="application/json" id="{ident}-data">{json.dumps(spec, separators=(",", ":"))}</script>\n'
        f"<script>{_asset('playground.js')}\nattnmarlPlayground.mount({json.dumps(ident)});</script>"
    )


def playground(m: int = 6, seed: int = 0, policy: str = "entity"):
    """The playground for a notebook: an IPython HTML object, the same markup as in the built book."""
    from IPython.display import HTML

    return HTML(playground_html(m, seed, policy))
