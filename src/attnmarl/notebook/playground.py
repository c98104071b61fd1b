"""The playground: trained agents running in the page (DESIGN §4, "in-page models").

Where a grid of precomputed frames cannot show what matters — dragging a landmark, changing m,
watching a trained team play — the page runs the real thing. :func:`playground_html` writes one
self-contained piece of HTML: the world's constants and the shipped actors' weights (float32,
exported here at build time from their checkpoints, whose checksums are checked on loading), and
``static/playground.js``, which steps the task, cuts each agent's observation into entity tokens
and runs the actors in the browser. No kernel, no network: the same HTML works in the built book,
in Jupyter and in Colab (:func:`playground` displays it).

Five tasks (:data:`TASKS`); one widget offers one or more, with a menu to switch:

- **simple_spread**: chapter 8's entity-attention actor, its flat MLP actor and the greedy assignment
  play the same episodes side by side;
- **collect_treasure**: chapter 10's entity-attention actor, whose collectors and two deposits each have
  their own network (:func:`export_treasure_actor`);
- **messages**: simple_spread under chapter 11's limited sight, where its communicating actors play side by
  side, with targeted, averaged and no messages (:func:`export_comm_actor`); the page shows whom an agent hears;
- **decoys**: simple_spread with decoys (chapter 12, :mod:`attnmarl.envs.decoys`), where its entity actor plays among
  d·m landmarks that pay nothing, each agent seeing the landmarks in its own shuffled order
  (:func:`export_decoy_actor`); the page shows how little of an agent's attention lands on the decoys;
- **sequence**: simple_spread with chapter 13's Multi-Agent Transformer, which decodes the team's actions agent by
  agent on every agent's observation (:func:`export_mat_actor`), beside the entity actor trained at the same m with
  MAPPO and the greedy assignment.

The JavaScript is a twin of the package, trusted only through parity tests in Chromium
(``tests/test_playground.py``, ``tests/test_playground_treasure.py``, ``tests/test_playground_messages.py``,
``tests/test_playground_decoys.py``): the world steps against :class:`attnmarl.envs.spread.BatchedSpread`,
:class:`attnmarl.envs.treasure.BatchedCollectTreasure` and :class:`attnmarl.envs.decoys_port.BatchedDecoySpread`,
the actors' logits and alpha against torch, and whole episodes' actions against Python rollouts (MAT's:
``tests/test_playground_mat.py``).
"""
from __future__ import annotations

import base64
import gzip
import html
import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..algos.mat import MATAgent
from ..checkpoints import load_agent, shipped_checkpoint
from ..checks import check_int
from ..envs import make_batched
from ..envs.decoys import DECOY_COLOR
from ..envs.decoys import NAME as DECOYS
from ..envs.scenarios import port_kwargs
from ..envs.treasure import GONE, RESPAWN_BOUND, BatchedCollectTreasure
from ..nets.messages import CommActor
from ..transfer import team_kwargs
from .widgets import _asset, page_script

__all__ = ["ENTITY_ACTOR", "FLAT_ACTOR", "TREASURE_ACTOR", "COMM_ACTORS", "DECOY_ACTOR", "DECOY_CHOICES", "TASKS",
           "POLICIES", "M_RANGE", "MAX_PAGE_SEED", "world_constants", "export_entity_actor", "entity_actor_weights",
           "export_flat_actor", "export_treasure_actor", "export_comm_actor", "comm_actor_weights",
           "export_decoy_actor", "MAT_ACTOR", "SEQUENCE_ENTITY", "export_mat_actor", "mat_actor_weights",
           "task_spec", "playground_spec", "playground_html", "playground"]

ENTITY_ACTOR = ("policy", "pi-spread6-entity", 0)
"""The entity-attention actor the page runs (chapter 8's, trained at m = 6): folder, run name, seed."""
FLAT_ACTOR = ("policy", "pi-spread6-flat", 0)
"""The flat MLP actor the page offers at the m it was trained for (chapter 8's, m = 6)."""
TREASURE_ACTOR = ("scale", "scale-treasure4-entity", 0)
"""The collect_treasure entity actor the page runs (chapter 10's, trained at m = 4: 2 collectors, 2 deposits).
Of the three shipped ones (trained at m = 4, 8 and 12) it scores best on the port at every m from 3 to 16,
zero-shot everywhere but m = 4 (at m = 12 about 42 against the m = 12 actor's 20, over 100 episodes)."""
COMM_ACTORS = {messages: ("comm", f"comm-narrow-spread6-{messages}", 0) for messages in ("attention", "mean", "none")}
"""The communicating actors the messages task runs (chapter 11's, trained at m = 6 under sight rho = 0.5), by how
they weigh the messages: targeted, averaged, none."""
DECOY_ACTOR = ("decoys", "decoys3-spread6-entity", 0)
"""The entity-attention actor the decoys task runs (chapter 12's, trained at m = 6 with d = 3 decoys per agent)."""
MAT_ACTOR = ("mat", "mat-spread3", 0)
"""The Multi-Agent Transformer the sequence task runs (chapter 13's, trained at m = 3). Seed 0, as every task's
actor; of MAT's three seeds it is the one that carries least far zero-shot (74% of the range at m = 12, the others
95 and 99%)."""
SEQUENCE_ENTITY = ("scale", "scale-spread3-entity", 0)
"""The entity actor the sequence task plays beside MAT: chapter 10's, trained at m = 3 with MAPPO on MAT's budget,
the one chapter 13 compares MAT with."""
DECOY_CHOICES = (1, 3)
"""The decoys per agent d the decoys task offers; it starts at the last, the d its actor was trained at."""
TASKS = ("simple_spread", "collect_treasure", "messages", "decoys", "sequence")
"""The tasks the playground plays ("messages": simple_spread under limited sight, with chapter 11's actors;
"decoys": simple_spread with decoys, with chapter 12's; "sequence": simple_spread with chapter 13's MAT)."""
M_RANGE = (3, 16)
"""The team sizes of the page's m slider, for either task (collect_treasure: m − 2 collectors, 2 deposits)."""
MAX_PAGE_SEED = 2**52
"""The largest seed the page takes: it reads the spec with ``JSON.parse``, whose numbers hold integers exactly
only up to 2^53, and its reset button counts up from the seed (a larger one would start another episode than
Python's ``BatchedSpread(1, seed)``, or repeat one)."""
POLICIES = {"simple_spread": ("entity", "flat", "greedy"), "collect_treasure": ("entity",),
            "messages": tuple(COMM_ACTORS), "decoys": ("entity",), "sequence": ("mat", "entity", "greedy")}
"""The teams each task plays side by side (playground.js's tasks list the same)."""

_ENTITY_TENSORS = (("embed", "embed.weight"), ("ln_attn_w", "ln_attn.weight"), ("ln_attn_b", "ln_attn.bias"),
                   ("W_q", "W_q.weight"), ("W_kv", "W_kv.weight"), ("W_o", "W_o.weight"), ("W_o_b", "W_o.bias"),
                   ("ln_ff_w", "ln_ff.weight"), ("ln_ff_b", "ln_ff.bias"), ("ff0", "ff.0.weight"),
                   ("ff0_b", "ff.0.bias"), ("ff2", "ff.2.weight"), ("ff2_b", "ff.2.bias"),
                   ("ln_out_w", "ln_out.weight"), ("ln_out_b", "ln_out.bias"), ("W_y", "W_y.weight"),
                   ("W_y_b", "W_y.bias"))
"""The JavaScript name of each tensor of :class:`attnmarl.nets.policies.EntityAttention`."""

_SPREAD_KINDS = (4, 2, 4)
"""Widths of simple_spread's token kinds (self [v, p], landmark [dx, dy], agent [dx, dy, c]), the
layout playground.js's spreadTokens cuts."""
_DECOY_KINDS = (4, 3, 4)
"""Widths of the token kinds of simple_spread with decoys: simple_spread's, with a landmark slot [dx, dy, is_target]
(playground.js's spreadTokens with slots of 3)."""


def _treasure_kinds(num_deposits: int) -> tuple[tuple[int, ...], ...]:
    """Widths of collect_treasure's token kinds for the collectors' network and each deposit's, the layout
    playground.js's treasureTokens cuts (K = ``num_deposits`` types): self [p, v, holding one-hot] (a deposit's
    without holding), other agent [dx, dy, v, deposit one-hot, holding one-hot], treasure [dx, dy, type one-hot]."""
    k = num_deposits
    return ((4 + k, 4 + 2 * k, 2 + k),) + ((4, 4 + 2 * k, 2 + k),) * k


def _one(values: np.ndarray, what: str) -> float:
    """The value every entry of ``values`` shares; ``ValueError`` naming ``what`` if they differ."""
    if len(set(values.tolist())) != 1:
        raise ValueError(f"playground.js assumes one {what}; got {values}")
    return float(values[0])


def _spread_constants(scenario: str = "simple_spread", **kwargs: Any) -> dict[str, float]:
    """mpe2's simple_spread constants as the port reads them (:class:`attnmarl.envs.physics.WorldParams`), for
    simple_spread or, with ``kwargs``, simple_spread with decoys (whose port steps the agents and targets alone)."""
    env = make_batched(scenario, 1, N=3, **kwargs)
    p = env.params
    if np.isfinite(p.max_speed).any() or p.landmarks_collide or not p.agents_collide:
        raise ValueError("playground.js steps colliding agents without a speed limit and landmarks that do not collide")
    if port_kwargs(scenario, N=M_RANGE[1], **kwargs)["max_cycles"] != env.max_cycles:
        raise ValueError(f"{scenario}'s episode length depends on m")
    one = {name: _one(getattr(p, name), f"{name} for every entity")
           for name in ("agent_size", "landmark_size", "sensitivity", "mass")}
    return {"dt": p.dt, "damping": p.damping, "contact_force": p.contact_force, "contact_margin": p.contact_margin,
            **one, "local_ratio": float(env.local_ratio), "max_cycles": int(env.max_cycles)}


def _treasure_constants(m: int) -> dict[str, float]:
    """mpe2's collect_treasure constants for a team of m (m − 2 collectors, 2 deposits, m − 2 treasures), by role."""
    env = BatchedCollectTreasure(1, **team_kwargs("collect_treasure", m))
    p, c = env.params, env.num_collectors
    if p.agents_collide or p.landmarks_collide or not np.isfinite(p.max_speed).all():
        raise ValueError("playground.js steps collect_treasure's agents without collisions and with a speed limit")
    if env.n_landmarks != c:
        raise ValueError("playground.js assumes as many treasures as collectors")
    return {"dt": p.dt, "damping": p.damping, "collector_size": _one(p.agent_size[:c], "collector size"),
            "deposit_size": _one(p.agent_size[c:], "deposit size"),
            "treasure_size": _one(p.landmark_size, "treasure size"),
            "collector_mass": _one(p.mass[:c], "collector mass"), "deposit_mass": _one(p.mass[c:], "deposit mass"),
            "sensitivity": _one(p.sensitivity, "sensitivity"), "max_speed": _one(p.max_speed, "max speed"),
            "num_deposits": env.num_types, "respawn_bound": RESPAWN_BOUND, "gone": GONE,
            "max_cycles": int(env.max_cycles)}


def _decoy_constants() -> dict[str, Any]:
    """simple_spread's constants (the decoys neither move nor collide), the decoys per agent the page offers
    (``d_choices``, :data:`DECOY_CHOICES`) and starts at (``decoys``), and the decoys' colour as mpe2 draws it
    (:data:`attnmarl.envs.decoys.DECOY_COLOR` x 200); ``ValueError`` if the decoy port's world differs."""
    spread = _spread_constants()
    for d in DECOY_CHOICES:
        if _spread_constants(DECOYS, decoys=d) != spread:
            raise ValueError(f"the decoy port's constants at d = {d} are not simple_spread's")
    color = "#" + "".join(f"{round(200 * c):02x}" for c in DECOY_COLOR)
    return {**spread, "decoys": DECOY_CHOICES[-1], "d_choices": list(DECOY_CHOICES), "decoy_color": color}


def world_constants(scenario: str = "simple_spread") -> dict[str, Any]:
    """The constants playground.js steps ``scenario``'s world with (one of :data:`TASKS`; "messages" is
    simple_spread's world, "decoys" simple_spread's with decoys); ``ValueError`` if they depend on m over
    :data:`M_RANGE` or break an assumption of the JavaScript."""
    if scenario in ("simple_spread", "messages"):
        return _spread_constants()
    if scenario == "decoys":
        return _decoy_constants()
    if scenario != "collect_treasure":
        raise ValueError(f"the playground plays {list(TASKS)}, not {scenario!r}")
    low, high = (_treasure_constants(m) for m in M_RANGE)
    if low != high:
        raise ValueError(f"collect_treasure's constants depend on m: {low} at m = {M_RANGE[0]}, {high} at {M_RANGE[1]}")
    return low


def _pack(named: list[tuple[str, torch.Tensor]], sizes: dict[str, Any], compressed: bool = False) -> dict[str, Any]:
    """Tensors as one little-endian float32 buffer in base64, with each tensor's name and length.

    ``compressed``: the buffer's byte planes (every float's first byte, then every second byte, ...) gzipped
    before base64 — 14% smaller for trained weights, whose exponent bytes repeat; playground.js's
    ``inflateWeights`` undoes it. Uncompressed packs decode synchronously (``decodeWeights``; live.js's)."""
    flat = np.concatenate([t.detach().to(torch.float32).reshape(-1).numpy() for _, t in named]).astype("<f4")
    raw = flat.view(np.uint8).reshape(-1, 4).T.tobytes() if compressed else flat.tobytes()
    data = base64.b64encode(gzip.compress(raw, mtime=0) if compressed else raw).decode()
    return {"sizes": sizes, "tensors": [[name, int(t.numel())] for name, t in named], "data": data,
            "compressed": compressed}


def _actor(path: Path, kind: str, scenario: str = "simple_spread"):
    """The actor of a discrete-action MAPPO checkpoint of ``scenario`` with a ``kind`` actor ("entity" mixing by
    attention, or "flat"), once it has acted on the port's observations; ``ValueError`` for any other."""
    agent, config = load_agent(path)
    if config.scenario != scenario or config.scenario_kwargs.get("continuous_actions"):
        raise ValueError(f"{path} is not a discrete-action {scenario} policy")
    if config.actor != kind:
        raise ValueError(f"{path} holds a {config.actor!r} actor, not the {kind!r} one asked for")
    if getattr(config, "entity_mixing", "attention") != "attention":
        raise ValueError(f"{path} holds an entity actor that mixes its tokens by {config.entity_mixing!r}; "
                         "playground.js runs attention, so the page would play another policy than this one")
    port = make_batched(scenario, 4, seed=0, **config.scenario_kwargs)  # the weights must act in Python first
    try:
        with torch.no_grad():
            agent.actor(torch.from_numpy(port.reset()))
    except ValueError as error:
        raise ValueError(f"{path}: its actor cannot act on {scenario}'s observations ({error}), so the page "
                         "would play what Python refuses") from None
    return agent.actor, config


def _check_entity_actor(actor: torch.nn.Module, source: str) -> None:
    """``ValueError`` (naming ``source``) unless ``actor`` is an egocentric entity actor that mixes by attention."""
    if getattr(actor, "frame", None) != "egocentric":
        raise ValueError(f"{source}: the page runs one egocentric entity actor (a network per agent type)")
    if getattr(actor, "mixing", "attention") != "attention":
        raise ValueError(f"{source}: the page runs attention, not {actor.mixing!r}")


def _entity_layer(net: torch.nn.Module, kinds: Sequence[int], source: str,
                  prefix: str = "") -> tuple[list[tuple[str, torch.Tensor]], dict[str, Any]]:
    """One :class:`~attnmarl.nets.policies.EntityAttention`'s tensors (by their JavaScript names, W_y included if
    it has one) and sizes, as playground.js's ``entityHidden`` reads them; ``prefix`` names its parameters in a
    larger module. ``ValueError`` (naming ``source``) for token kinds other than ``kinds``."""
    kinds = tuple(kinds)
    if net.kind_widths != kinds or net.embed.weight.shape[1] != sum(kinds) + len(kinds):
        raise ValueError(f"{source}: token kinds {net.kind_widths}, not the {kinds} playground.js cuts")
    if not (net.ln_attn.eps == net.ln_ff.eps == net.ln_out.eps):
        raise ValueError(f"{source}: the layer norms have different eps")
    params = dict(net.named_parameters())
    sizes = {"d": net.d, "heads": net.heads, "d_tokens": net.embed.weight.shape[1], "d_ff": net.ff[0].out_features,
             "eps": net.ln_attn.eps, "kind_widths": list(kinds)}
    return [(js, params[prefix + name]) for js, name in _ENTITY_TENSORS if prefix + name in params], sizes


def _entity_net_weights(net: torch.nn.Module, kinds: Sequence[int], sizes: dict[str, Any], source: str,
                        compressed: bool = False) -> dict[str, Any]:
    """One agent type's :class:`~attnmarl.nets.policies.EntityAttention` packed as playground.js's ``entityForward``
    reads it, with its token kinds' widths and ``sizes``; ``ValueError`` (naming ``source``) for other kinds."""
    named, layer = _entity_layer(net, kinds, source)
    return _pack(named, {**layer, "d_y": net.W_y.out_features, **sizes}, compressed)


def export_entity_actor(path: str | Path, compressed: bool = False) -> dict[str, Any]:
    """The weights of a MAPPO checkpoint's egocentric simple_spread entity actor, as playground.js decodes them."""
    actor, config = _actor(Path(path), "entity")
    return entity_actor_weights(actor, int(config.scenario_kwargs["N"]), str(path), compressed)


def entity_actor_weights(actor: torch.nn.Module, trained_m: int, source: str = "the actor",
                         compressed: bool = False, kinds: Sequence[int] = _SPREAD_KINDS,
                         **sizes: Any) -> dict[str, Any]:
    """An egocentric simple_spread entity actor (trained at ``trained_m``) packed as playground.js's
    ``decodeWeights`` reads it, ``sizes`` added to its sizes; ``ValueError`` (naming ``source``) for any other actor,
    or token kinds other than ``kinds`` (simple_spread's; with decoys, :func:`export_decoy_actor` passes theirs)."""
    _check_entity_actor(actor, source)
    if len(actor.nets) != 1:
        raise ValueError(f"{source}: the page runs one egocentric entity actor for all agents")
    return _entity_net_weights(actor.nets[0], kinds, {"trained_m": int(trained_m), **sizes}, source, compressed)


def export_decoy_actor(path: str | Path, compressed: bool = False) -> dict[str, Any]:
    """The weights of a chapter 12 MAPPO checkpoint's egocentric entity actor of simple_spread with decoys, as
    playground.js decodes them: simple_spread's entity actor whose landmark tokens are slots [dx, dy, is_target];
    its sizes add ``trained_d``, the decoys per agent it was trained with. ``ValueError`` for any other actor: one
    under a decoy control (``decoy_view`` "oracle" or "no-bit" reads the observation otherwise, inside its forward
    pass), or one trained without decoys (simple_spread's: :func:`export_entity_actor`)."""
    path = Path(path)
    actor, config = _actor(path, "entity", DECOYS)
    if config.decoy_view != "bit":
        raise ValueError(f"{path}: an actor under the {config.decoy_view!r} control reads its observation otherwise "
                         "(attnmarl.nets.policies.DecoyView); the page runs the plain one (decoy_view 'bit')")
    kwargs = port_kwargs(DECOYS, **config.scenario_kwargs)
    if kwargs["decoys"] < 1:
        raise ValueError(f"{path}: trained without decoys, on simple_spread's tokens (export_entity_actor)")
    return entity_actor_weights(actor, kwargs["N"], str(path), compressed, kinds=_DECOY_KINDS,
                                trained_d=int(kwargs["decoys"]))


def export_treasure_actor(path: str | Path, compressed: bool = False) -> list[dict[str, Any]]:
    """The weights of a MAPPO checkpoint's egocentric collect_treasure entity actor: one pack per agent type, the
    collectors' network first, then each deposit's (deposit d accepts treasure of type d), as playground.js
    decodes them; ``ValueError`` for any other actor, or one whose types are not collectors then deposits."""
    path = Path(path)
    actor, config = _actor(path, "entity", "collect_treasure")
    _check_entity_actor(actor, str(path))
    kwargs = config.scenario_kwargs
    collectors, deposits = int(kwargs["num_collectors"]), int(kwargs["num_deposits"])
    if (deposits, int(kwargs["num_treasures"])) != (team_kwargs("collect_treasure", M_RANGE[0])["num_deposits"],
                                                     collectors):
        raise ValueError(f"{path}: trained with {kwargs}; the page's teams have 2 deposits and as many treasures as "
                         "collectors")
    if actor.agent_types != (0,) * collectors + tuple(range(1, deposits + 1)):
        raise ValueError(f"{path}: agent types {actor.agent_types}, not the collectors' then one per deposit")
    trained_m = collectors + deposits
    roles = ["collectors"] + [f"deposit {d + 1}" for d in range(deposits)]
    return [_entity_net_weights(net, kinds, {"trained_m": trained_m, "role": role}, f"{path} ({role})", compressed)
            for net, kinds, role in zip(actor.nets, _treasure_kinds(deposits), roles)]


def export_flat_actor(path: str | Path, compressed: bool = False) -> dict[str, Any]:
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
    return _pack(named, sizes, compressed)


def export_comm_actor(path: str | Path, compressed: bool = False) -> dict[str, Any]:
    """The weights of a chapter 11 MAPPO checkpoint's communicating actor (:class:`~attnmarl.nets.messages.CommActor`
    on simple_spread under limited sight), as playground.js's ``commForward`` decodes them."""
    actor, config = _actor(Path(path), "comm")
    return comm_actor_weights(actor, int(config.scenario_kwargs["N"]), str(path), compressed)


def comm_actor_weights(actor: torch.nn.Module, trained_m: int, source: str = "the actor",
                       compressed: bool = False) -> dict[str, Any]:
    """A communicating actor (trained at ``trained_m``) packed as playground.js's ``commForward`` reads it: its
    entity encoder, the messages' W_q, W_k (targeted only) and W_v (unless it sends none), TarMAC's W_u between
    rounds (if it has two or more), the head
    W_a, W_y, and its sight radius, rounds and way of weighing the messages. ``ValueError`` (naming ``source``)
    for any other actor, or one the page cannot run: more than one agent type, or full sight."""
    if not isinstance(actor, CommActor):
        raise ValueError(f"{source}: not a communicating actor (CommActor), but {type(actor).__name__}")
    _check_entity_actor(actor, source)
    if len(actor.nets) != 1 or actor.rho is None:
        raise ValueError(f"{source}: the page runs one network for all agents, under a sight radius")
    named, sizes = _entity_layer(actor.nets[0], _SPREAD_KINDS, source)
    talk, (hidden, out) = actor.talk, (actor.head[0][0], actor.head[1])
    if actor.messages == "attention":  # only what commForward reads: no query or key for uniform alpha
        named += [("msg_W_q", talk.W_q.weight), ("msg_W_k", talk.W_k.weight)]
    if actor.messages != "none":
        named += [("msg_W_v", talk.W_v.weight)]
    if actor.W_u is not None:
        named += [("W_u", actor.W_u.weight), ("W_u_b", actor.W_u.bias)]
    named += [("W_a", hidden.weight), ("W_a_b", hidden.bias), ("W_y", out.weight), ("W_y_b", out.bias)]
    sizes.update(d_k=talk.d_k, d_hidden=hidden.out_features, d_y=out.out_features, rounds=actor.rounds,
                 messages=actor.messages, rho=float(actor.rho), trained_m=int(trained_m))
    return _pack(named, sizes, compressed)


def _attention_tensors(attn: torch.nn.Module, prefix: str) -> list[tuple[str, torch.Tensor]]:
    """One :class:`~attnmarl.nets.mat.MATAttention`'s tensors by their JavaScript names (``prefix`` + W_q, ...)."""
    return [(prefix + name + suffix, getattr(getattr(attn, name), part)) for name in ("W_q", "W_kv", "W_o")
            for suffix, part in (("", "weight"), ("_b", "bias"))]


def _block_tensors(block: torch.nn.Module, prefix: str, attentions: Sequence[str],
                   norms: Sequence[str]) -> list[tuple[str, torch.Tensor]]:
    """One encoder or decoder block's tensors by their JavaScript names: its attentions, its feed-forward MLP
    (ff0, ff2) and its layer norms, each name behind ``prefix``."""
    named = [t for name in attentions for t in _attention_tensors(getattr(block, name), f"{prefix}{name}_")]
    named += [(f"{prefix}ff{k}{suffix}", getattr(block.ff[k], part)) for k in (0, 2)
              for suffix, part in (("", "weight"), ("_b", "bias"))]
    return named + [(f"{prefix}{name}{suffix}", getattr(getattr(block, name), part)) for name in norms
                    for suffix, part in (("_w", "weight"), ("_b", "bias"))]


def export_mat_actor(path: str | Path, compressed: bool = False) -> dict[str, Any]:
    """The weights of a chapter 13 MAT checkpoint on discrete simple_spread, as playground.js's ``matForward``
    decodes them (:func:`mat_actor_weights`); ``ValueError`` for any other checkpoint."""
    agent, config = load_agent(path)
    if not isinstance(agent, MATAgent) or config.scenario != "simple_spread" or \
            config.scenario_kwargs.get("continuous_actions"):
        raise ValueError(f"{path} is not a discrete-action simple_spread MAT checkpoint")
    return mat_actor_weights(agent.net, int(config.scenario_kwargs["N"]), str(path), compressed)


def mat_actor_weights(net: torch.nn.Module, trained_m: int, source: str = "the network",
                      compressed: bool = False) -> dict[str, Any]:
    """A :class:`~attnmarl.nets.mat.MultiAgentTransformer` with its decoder (trained at ``trained_m``) packed as
    playground.js's ``matForward`` reads it: the token layer (the entity encoder, as ``entityHidden`` reads it, with
    its LN out), each encoder block (``enc{b}_``), the action embedding, each decoder block (``dec{b}_``) and the policy
    head; the value head is left out (acting never reads it). ``ValueError`` (naming ``source``) for MAT-Dec (it
    has no decoder to run), more than one agent type, token kinds other than simple_spread's, or layer norms of
    other eps."""
    if getattr(net, "decoder", None) is None or not hasattr(net, "encoder"):
        raise ValueError(f"{source}: the page runs MAT with its decoder, not MAT-Dec or another network")
    tokens = net.tokens
    _check_entity_actor(tokens, source)
    if len(tokens.nets) != 1:
        raise ValueError(f"{source}: the page runs one token network for all agents")
    named, sizes = _entity_layer(tokens.nets[0], _SPREAD_KINDS, source)
    for b, block in enumerate(net.encoder):
        named += _block_tensors(block, f"enc{b}_", ("attn",), ("ln_attn", "ln_ff"))
    named += [("act_embed", net.action_embed[0].weight), ("act_embed_b", net.action_embed[0].bias)]
    for b, block in enumerate(net.decoder):
        named += _block_tensors(block, f"dec{b}_", ("self_attn", "cross_attn"), ("ln_self", "ln_cross", "ln_ff"))
    hidden, out = net.policy_head[0][0], net.policy_head[1]
    named += [("W_a", hidden.weight), ("W_a_b", hidden.bias), ("W_y", out.weight), ("W_y_b", out.bias)]
    norms = [module.eps for module in net.modules() if isinstance(module, torch.nn.LayerNorm)]
    if any(eps != sizes["eps"] for eps in norms):
        raise ValueError(f"{source}: the layer norms have different eps")
    attention = net.encoder[0].attn
    sizes.update(mat_heads=attention.heads, blocks=len(net.encoder), n_actions=net.n_actions,
                 d_hidden=hidden.out_features, trained_m=int(trained_m))
    return _pack(named, sizes, compressed)


def _shipped(run: tuple[str, str, int]) -> Path:
    """The checkpoint of a shipped run given as (folder, name, seed)."""
    return shipped_checkpoint(*run[:2], seed=run[2])


def _name(run: tuple[str, str, int]) -> str:
    """A shipped run's name as the page shows it: "name seed s"."""
    return f"{run[1]} seed {run[2]}"


def task_spec(task: str) -> dict[str, Any]:
    """One task's part of the page's data: its world's constants, its actors' weights (compressed), the range
    of m and the runs' names."""
    if task == "simple_spread":
        return {"world": world_constants(task), "m_range": list(M_RANGE),
                "entity": export_entity_actor(_shipped(ENTITY_ACTOR), compressed=True),
                "flat": export_flat_actor(_shipped(FLAT_ACTOR), compressed=True),
                "names": {"entity": _name(ENTITY_ACTOR), "flat": _name(FLAT_ACTOR)}}
    if task == "collect_treasure":
        return {"world": world_constants(task), "m_range": list(M_RANGE),
                "entity": export_treasure_actor(_shipped(TREASURE_ACTOR), compressed=True),
                "names": {"entity": _name(TREASURE_ACTOR)}}
    if task == "messages":
        return {"world": world_constants(task), "m_range": list(M_RANGE),
                "comm": {p: export_comm_actor(_shipped(run), compressed=True) for p, run in COMM_ACTORS.items()},
                "names": {p: _name(run) for p, run in COMM_ACTORS.items()}}
    if task == "decoys":
        entity = export_decoy_actor(_shipped(DECOY_ACTOR), compressed=True)
        world = world_constants(task)
        if entity["sizes"]["trained_d"] != world["decoys"]:
            raise ValueError(f"the page starts at d = {world['decoys']}; {_name(DECOY_ACTOR)} was trained at "
                             f"d = {entity['sizes']['trained_d']}")
        return {"world": world, "m_range": list(M_RANGE), "entity": entity, "names": {"entity": _name(DECOY_ACTOR)}}
    if task == "sequence":
        return {"world": world_constants("simple_spread"), "m_range": list(M_RANGE),
                "mat": export_mat_actor(_shipped(MAT_ACTOR), compressed=True),
                "entity": export_entity_actor(_shipped(SEQUENCE_ENTITY), compressed=True),
                "names": {"mat": _name(MAT_ACTOR), "entity": _name(SEQUENCE_ENTITY)}}
    raise ValueError(f"the playground plays {list(TASKS)}, not {task!r}")


def _check_tasks(tasks: Sequence[str]) -> tuple[str, ...]:
    """``tasks`` as a tuple of distinct :data:`TASKS`; ``ValueError`` otherwise."""
    if isinstance(tasks, str) or not isinstance(tasks, Sequence) or not tasks:
        raise ValueError(f"tasks must be a non-empty list of {list(TASKS)}; got {tasks!r}")
    unknown = [t for t in tasks if t not in TASKS]
    if unknown or len(set(tasks)) != len(tasks):
        raise ValueError(f"tasks must be distinct ones of {list(TASKS)}; got {list(tasks)}")
    return tuple(tasks)


def playground_spec(m: int = 6, seed: int = 0, policy: str | None = None,
                    tasks: Sequence[str] = ("simple_spread",)) -> dict[str, Any]:
    """Everything the page needs: each task's constants and weights, and the starting settings. ``tasks`` are
    the tasks the widget offers (a menu switches between them); it starts on the first, with ``m`` agents,
    episode ``seed`` and ``policy`` shown (one of :data:`POLICIES` of that task; ``None``: its first)."""
    tasks = _check_tasks(tasks)
    policy = POLICIES[tasks[0]][0] if policy is None else policy
    m = check_int("m", m, minimum=M_RANGE[0], maximum=M_RANGE[1])  # a plain int (np.int64 is no JSON)
    seed = check_int("seed", seed, minimum=0, maximum=MAX_PAGE_SEED)  # MAX_PAGE_SEED: JavaScript's exact integers
    if policy not in POLICIES[tasks[0]]:
        raise ValueError(f"policy must be one of {list(POLICIES[tasks[0]])} on {tasks[0]}; got {policy!r}")
    spec = {task: task_spec(task) for task in tasks}
    if tasks[0] == "simple_spread" and policy == "flat" and m != spec[tasks[0]]["flat"]["sizes"]["trained_m"]:
        raise ValueError("the flat actor runs only at the m it was trained for, "
                         f"m = {spec[tasks[0]]['flat']['sizes']['trained_m']}")
    return {"tasks": list(tasks), "m": m, "seed": seed, "policy": policy, **spec}


def playground_html(m: int = 6, seed: int = 0, policy: str | None = None,
                    tasks: Sequence[str] = ("simple_spread",)) -> str:
    """The playground as one self-contained piece of HTML (see the module docstring and :func:`playground_spec`)."""
    spec = playground_spec(m, seed, policy, tasks)
    ident = f"attnmarl-pg-{uuid.uuid4().hex[:10]}"
    return (
        f"<style>{_asset('playground.css')}</style>\n"
        f'<div class="attnmarl-playground" id="{html.escape(ident)}">'
        "<noscript>The playground needs JavaScript.</noscript></div>\n"
        f'<script type="application/json" id="{ident}-data">{json.dumps(spec, separators=(",", ":"))}</script>\n'
        f"<script>{page_script('drag.js')}</script>\n<script>{page_script('playground.js')}</script>\n"
        f"<script>attnmarlPlayground.mount({json.dumps(ident)});</script>"
    )


def playground(m: int = 6, seed: int = 0, policy: str | None = None, tasks: Sequence[str] = ("simple_spread",)):
    """The playground for a notebook: an IPython HTML object, the same markup as in the built book."""
    from IPython.display import HTML

    return HTML(playground_html(m, seed, policy, tasks))
