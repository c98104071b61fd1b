"""Every network of the package runs wherever its input lives (DESIGN §6, issue #32).

The test machines have no GPU, so torch's ``meta`` device stands in for one. Each network class, built as
:data:`CASES` says, is moved there with ``.to("meta")`` and run on ``meta`` inputs under :class:`NoCpuBesideMeta`,
which fails any operation that meets a CPU tensor beside a meta one: what a tensor left behind by the move (a
plain attribute instead of a buffer) would meet, as on a GPU. (A bare meta run would not show it: torch lets a
meta tensor gather with a CPU index, where CUDA refuses.) A float64 round trip — ``.double()`` on float64
inputs, then ``.float()`` — shows that the move carries every tensor the network reads and changes no output.

:func:`network_classes` finds the classes by importing every module of the package, so that a new class
cannot be left out: each must have a case, or be named in :data:`NOT_NETWORKS` with the reason.

The second part holds ``--device`` to its promises: a run with ``--device cpu`` is the run without the flag,
bit for bit; ``--device cuda`` where torch sees no GPU is refused in one line; the loaders put an agent on the
device they are given; ``python -m attnmarl.reproduce`` passes the device to every re-run and asks Ray for a
GPU per task.
"""
from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

import attnmarl
from attnmarl import hard_attention, load_policy, relational, reproduce, seq2seq, vision
from attnmarl.algos import maac, maddpg, mappo, mat, qmix
from attnmarl.attention import AttentionFC, MultiHeadSelfAttention, SelfAttention, SelfAttentionStack
from attnmarl.checkpoints import load_agent, load_agent_at, load_checkpoint, shipped_checkpoint, shipped_runs
from attnmarl.envs import make_batched
from attnmarl.nets import (
    Actor,
    AgentHeads,
    AgentLinear,
    AttentionBlock,
    AttentionCritic,
    AttentionNet,
    AttentionPolicy,
    AttentionQ,
    ConcatCritic,
    ConcatNet,
    ConcatPolicy,
    ConcatQ,
    EntityActor,
    EntityAttention,
)
from attnmarl.nets.common import BufferList
from attnmarl.nets.foraging import ForagingView
from attnmarl.nets.maac import MAACAttentionCritic, MAACConcatCritic, _MAACCritic, chosen
from attnmarl.nets.mat import AgentTokens, DecoderBlock, EncoderBlock, MATAttention, MultiAgentTransformer
from attnmarl.nets.messages import CommActor, EntityEncoder, TargetedMessages
from attnmarl.nets.mixers import QMIX, VDN, Qatten
from attnmarl.nets.policies import DecoyActor, DecoyEntityActor, DecoyView, _TypeGroups
from attnmarl.nets.sighted import SightedActor, SightedEntityActor
from attnmarl.train import _parser as train_parser
from attnmarl.train import main as train_main

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: conftest.py

NOT_NETWORKS = {
    BufferList: "holds the index tensors other networks read, and computes nothing (EntityActor's cases run it)",
    _MAACCritic: "the abstract base of MAACAttentionCritic and MAACConcatCritic (no others())",
}
"""The nn.Module classes of the package that no case runs, and why."""


def leaves(tree: Any) -> Iterator[Any]:
    """Everything inside nested tuples, lists and dicts (an operation's arguments, a network's outputs)."""
    if isinstance(tree, (tuple, list)):
        for item in tree:
            yield from leaves(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from leaves(item)
    else:
        yield tree


def tensors(tree: Any) -> list[Tensor]:
    return [leaf for leaf in leaves(tree) if isinstance(leaf, Tensor)]


class NoCpuBesideMeta(TorchFunctionMode):
    """Fails any torch operation given a CPU tensor (other than a 0-dimensional one, a number that torch
    accepts beside any device's tensors) together with a meta tensor; moving a tensor from one to the other
    (``Tensor.to``, ``Tensor.copy_``) is allowed."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        given = tensors((args, kwargs))
        if func not in (Tensor.to, Tensor.copy_) and any(t.is_meta for t in given):  # a move is no mix
            left = [tuple(t.shape) for t in given if t.device.type == "cpu" and t.dim() > 0]
            assert not left, f"{getattr(func, '__name__', func)} got CPU tensor(s) of shape {left} beside meta ones"
        return func(*args, **kwargs)


def observations(scenario: str, batch: int = 3, **kwargs: Any) -> Tensor:
    return torch.from_numpy(make_batched(scenario, batch, seed=0, **kwargs).reset())


def randn(*shape: int) -> Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


def generator() -> torch.Generator:
    """A fresh seeded CPU generator: every run of a case draws the same numbers."""
    return torch.Generator().manual_seed(0)


@dataclass
class Case:
    """How to build one network (``build``), its float32 CPU inputs (``inputs``) and what to run on them
    (``run(net, *inputs)``, by default ``net(*inputs)``): any nest of tensors comes out."""

    kind: type[nn.Module]
    build: Callable[[], nn.Module]
    inputs: Callable[[], tuple[Any, ...]]
    run: Callable[..., Any] = lambda net, *inputs: net(*inputs)


def _spread(N: int = 3, **kwargs: Any) -> tuple[Tensor]:
    return (observations("simple_spread", N=N, **kwargs),)


SPREAD_DIM = 6 * 3  # simple_spread's obs_dim at N = 3
DECOYS = {"scenario": "simple_spread_decoys", "scenario_kwargs": {"N": 3, "decoys": 1}}
DECOY_DIM = 4 + 3 * 6 + 4 * 2  # its obs_dim: self, 6 landmark slots, 2 other agents


def _decoys() -> tuple[Tensor]:
    return (observations(DECOYS["scenario"], **DECOYS["scenario_kwargs"]),)
TAG = {"scenario": "simple_tag", "scenario_kwargs": {}}
TREASURE = {"scenario": "collect_treasure", "scenario_kwargs": {"num_collectors": 2, "num_deposits": 2,
                                                                "num_treasures": 2}}
S2S = seq2seq.Seq2SeqConfig(attention=True)


def _translation_batch() -> tuple[Tensor, Tensor, Tensor]:
    src, mask, y_in, _ = seq2seq.make_batch([("21/11/2026", "2026-11-21"),
                                             ("from nov 21, 2026 to 3 Jan 2027", "2026-11-21/2027-01-03")])
    return src, mask, y_in


def _annotations() -> tuple[Tensor, Tensor, Tensor, Tensor]:
    src, mask, y_in = _translation_batch()
    return y_in, randn(*src.shape, 2 * S2S.n_hidden), randn(src.shape[0], 2 * S2S.n_hidden), mask


def _entity_tokens() -> tuple[Tensor, Tensor]:
    mask = torch.ones(3, 2, 4, dtype=torch.bool)
    mask[1, 0, 3] = False  # a padded token
    return randn(3, 2, 4, 9), mask


def _feature_major(tokens: Tensor) -> list[Tensor]:
    """The self token's and the other 3 tokens' features of :func:`_entity_tokens`, as
    :meth:`EntityAttention.folded` takes them: (w_k, n_k, m_type, batch)."""
    t = tokens.permute(3, 2, 1, 0)
    return [t[:4, :1], t[4:7, 1:]]


def _entity_run(actor: EntityActor, o: Tensor) -> tuple[Any, ...]:
    return actor(o), actor.outputs_and_alpha(o), actor.tokens(o), actor.kind_tokens(o)


def _mappo_agent(**config: Any) -> mappo.MAPPOAgent:
    return mappo.make_agent(mappo.MAPPOConfig(**config))


def _mappo_run(agent: mappo.MAPPOAgent, o: Tensor) -> tuple[Any, ...]:
    a, log_p = agent.act(o, generator())
    return a, log_p, agent.act(o, deterministic=True), agent.evaluate_actions(o, a), agent.v_hat(o)


def _mat_run(net: MultiAgentTransformer, o: Tensor) -> tuple[Any, ...]:
    """The values, the agent-by-agent decoding (greedy) and the teacher-forced logits of the decoded actions."""
    a, logits = net.decode(o, lambda y: y.argmax(dim=-1))
    return net.values(o), a, logits, net.logits(o, a)


def _maddpg_run(agent: maddpg.MADDPGAgent, o: Tensor) -> tuple[Any, ...]:
    a, u = agent.act(o, generator(), deterministic=False, noise_std=0.3)
    return a, u, agent.mu(o), agent.q_hat(o, a), maddpg.own_action_values(agent.q_hat, o, a, agent.mu(o))


def _maac_run(agent: maac.MAACAgent, o: Tensor) -> tuple[Any, ...]:
    a, log_p = agent.act(o, generator())
    q_all = agent.q_all(o, a)
    return a, log_p, q_all, chosen(q_all, maac.one_hot(a, agent.n_actions).to(q_all))


def _maac_critic_run(critic: nn.Module, o: Tensor, a: Tensor) -> tuple[Any, ...]:
    q_all, alpha, logits = critic.outputs(o, a)
    return q_all, alpha, logits, chosen(q_all, a)


def _qmix_run(agent: qmix.QMIXAgent, o: Tensor) -> tuple[Any, ...]:
    a, Q = agent.act(o, generator(), deterministic=False, epsilon=0.5)
    return a, Q, agent.act(o), agent.Q_tot(o, a)


def _agent_values() -> tuple[Tensor, Tensor]:
    """Q^i of 3 agents and their simple_spread observations, one batch of 3: a mixer's inputs."""
    return randn(3, 3), *_spread()


def _one_hot_actions(m: int, n_actions: int = 5) -> Tensor:
    a = torch.randint(n_actions, (3, m), generator=torch.Generator().manual_seed(m))
    return nn.functional.one_hot(a, n_actions).float()


def _value_norm() -> mappo.ValueNorm:
    norm = mappo.ValueNorm(3)
    norm.update(randn(10, 3) * 4 + 2)
    return norm


def _fetch_tokens() -> tuple[Tensor]:
    return (relational.tokens(relational.reset(4, generator())),)


def _key_value_inputs() -> tuple[Tensor, Tensor, Tensor]:
    keys, _, query, _ = hard_attention.sample_batch(3, generator())
    return keys, query, randn(3, hard_attention.D)


def _padding_mask() -> Tensor:
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[1, 3:] = False
    return mask


CASES: dict[str, Case] = {
    # attention.py
    "SelfAttention": Case(SelfAttention, lambda: SelfAttention(6, 4, 5), lambda: (randn(2, 5, 6), _padding_mask()),
                          lambda net, x, mask: (net(x, mask), net(x, need_weights=False))),
    "MultiHeadSelfAttention": Case(
        MultiHeadSelfAttention, lambda: MultiHeadSelfAttention(6, 4, 5, heads=3, scale=True, d_proj=7),
        lambda: (randn(2, 5, 6), _padding_mask()), lambda net, x, mask: (net(x, mask), net(x, need_weights=False))),
    "AttentionFC": Case(AttentionFC, lambda: AttentionFC(6, 4, 5, heads=2, d_hidden=8),
                        lambda: (randn(2, 5, 6), _padding_mask())),
    "SelfAttentionStack": Case(SelfAttentionStack, lambda: SelfAttentionStack(6, 4, 5, 2, 8, depth=2),
                               lambda: (randn(2, 5, 6),)),
    # seq2seq.py
    "Encoder": Case(seq2seq.Encoder, lambda: seq2seq.Encoder(S2S), lambda: _translation_batch()[:2]),
    "AdditiveAttention": Case(
        seq2seq.AdditiveAttention, lambda: seq2seq.AdditiveAttention(S2S.d_s, 2 * S2S.n_hidden, S2S.d_att),
        lambda: (randn(2, S2S.d_s), *_annotations()[1::2]),
        lambda net, s, H, mask: net(s, H, net.project(H), mask)),
    "ContextGRUCell": Case(seq2seq.ContextGRUCell, lambda: seq2seq.ContextGRUCell(4, 6, 5),
                           lambda: (randn(2, 4), randn(2, 6), randn(2, 5))),
    "Decoder": Case(seq2seq.Decoder, lambda: seq2seq.Decoder(S2S), _annotations),
    "Decoder, no attention": Case(seq2seq.Decoder, lambda: seq2seq.Decoder(seq2seq.Seq2SeqConfig(attention=False)),
                                  _annotations),
    "Seq2Seq": Case(seq2seq.Seq2Seq, lambda: seq2seq.Seq2Seq(S2S), _translation_batch),
    # hard_attention.py, relational.py, vision.py (chapters 2 and 5)
    "KeyValueReader": Case(hard_attention.KeyValueReader, lambda: hard_attention.KeyValueReader(),
                           _key_value_inputs, lambda net, keys, query, c: (net.scores(keys, query), net.readout(c))),
    "RelationalAgent": Case(relational.RelationalAgent, lambda: relational.RelationalAgent(True), _fetch_tokens),
    "RelationalAgent, uniform alpha": Case(relational.RelationalAgent, lambda: relational.RelationalAgent(False),
                                           _fetch_tokens),
    "SpatialAttentionCNN": Case(vision.SpatialAttentionCNN, lambda: vision.SpatialAttentionCNN(True, channels=4),
                                lambda: (vision.make_images(2, seed=0).images,)),
    "SpatialAttentionCNN, pooling": Case(vision.SpatialAttentionCNN,
                                         lambda: vision.SpatialAttentionCNN(False, channels=4),
                                         lambda: (vision.make_images(2, seed=0).images,)),
    # nets/
    "AgentLinear": Case(AgentLinear, lambda: AgentLinear(3, 4, 5), lambda: (randn(2, 3, 4), randn(2, 4)),
                        lambda net, h, shared: (net(h), net(shared))),
    "AgentHeads": Case(AgentHeads, lambda: AgentHeads(3, 4, 8, 2), lambda: (randn(2, 3, 4),)),
    "ConcatNet": Case(ConcatNet, lambda: ConcatNet(3, 6, 2, [0, 0, 1]), lambda: (randn(2, 3, 6),)),
    "AttentionBlock": Case(AttentionBlock, lambda: AttentionBlock(6, 4, 5, 2),
                           lambda: (randn(2, 5, 6), _padding_mask()),
                           lambda net, h, mask: (net(h, mask, need_weights=True), net(h))),
    "AttentionNet": Case(AttentionNet, lambda: AttentionNet(3, 6, 2, [0, 0, 1], depth=2), lambda: (randn(2, 3, 6),),
                         lambda net, o: (net.outputs(o, need_weights=True), net.outputs(o))),
    "ConcatCritic": Case(ConcatCritic, lambda: ConcatCritic(3, SPREAD_DIM), _spread),
    "AttentionCritic": Case(AttentionCritic, lambda: AttentionCritic(3, SPREAD_DIM), _spread,
                            lambda net, o: (net(o, torch.ones(o.shape[:2], dtype=torch.bool, device=o.device)),
                                            net.values_and_alpha(o))),
    "ConcatQ": Case(ConcatQ, lambda: ConcatQ(3, SPREAD_DIM, 5), lambda: (*_spread(), _one_hot_actions(3))),
    "AttentionQ": Case(AttentionQ, lambda: AttentionQ(3, SPREAD_DIM, 5), lambda: (*_spread(), _one_hot_actions(3)),
                       lambda net, o, a: (net(o, a), net.values_and_alpha(o, a))),
    "MAACAttentionCritic": Case(MAACAttentionCritic, lambda: MAACAttentionCritic(4, 6, 5, [0, 0, 0, 1], d=8, heads=2),
                                lambda: (randn(3, 4, 6), _one_hot_actions(4)), _maac_critic_run),
    "MAACConcatCritic": Case(MAACConcatCritic, lambda: MAACConcatCritic(4, 6, 5, [0, 0, 0, 1], d=8),
                             lambda: (randn(3, 4, 6), _one_hot_actions(4)), _maac_critic_run),
    "_TypeGroups": Case(_TypeGroups, lambda: _TypeGroups((1, 0, 1, 0, 0)), lambda: (randn(2, 3, 4), randn(2, 2, 4)),
                        lambda groups, *per_type: groups.join(per_type)),
    "Actor": Case(Actor, lambda: Actor(3, SPREAD_DIM, 5, [0, 1, 0]), _spread),
    "ConcatPolicy": Case(ConcatPolicy, lambda: ConcatPolicy(3, SPREAD_DIM, 5), _spread),
    "AttentionPolicy": Case(AttentionPolicy, lambda: AttentionPolicy(3, SPREAD_DIM, 5, [0, 1, 0]), _spread,
                            lambda net, o: (net(o), net.outputs_and_alpha(o))),
    "EntityAttention": Case(EntityAttention, lambda: EntityAttention(9, 5, d=8, heads=2, d_ff=16, kind_widths=[4, 3]),
                            _entity_tokens, lambda net, t, mask: (net(t, mask), net.folded(_feature_major(t)))),
    "EntityAttention, mean": Case(EntityAttention,
                                  lambda: EntityAttention(9, 5, d=8, kind_widths=[4, 3], mixing="mean"),
                                  _entity_tokens),
    "EntityActor": Case(EntityActor, lambda: EntityActor("simple_spread", {"N": 3}, 3, SPREAD_DIM, 5), _spread,
                        _entity_run),
    "EntityActor, absolute": Case(EntityActor, lambda: EntityActor("simple_spread", {"N": 3}, 3, SPREAD_DIM, 5,
                                                                   frame="absolute"), _spread, _entity_run),
    "EntityActor, simple_tag": Case(EntityActor, lambda: _mappo_agent(**TAG, actor="entity").actor,
                                    lambda: (observations("simple_tag"),), _entity_run),
    "EntityActor, collect_treasure, other-agent alpha": Case(
        EntityActor, lambda: _intervened(_mappo_agent(**TREASURE, actor="entity").actor),
        lambda: (observations("collect_treasure", **TREASURE["scenario_kwargs"]),), _entity_run),
    # chapter 12's controls on simple_spread with decoys (nets/policies.py)
    "DecoyView": Case(DecoyView, lambda: DecoyView("oracle", *DECOYS.values(), DECOY_DIM), _decoys,
                      lambda net, o: (net.seen(o), net.key_mask(o), net.without_decoys(o))),
    "DecoyActor, oracle": Case(DecoyActor, lambda: DecoyActor(*DECOYS.values(), 3, DECOY_DIM, 5, "oracle"), _decoys),
    "DecoyEntityActor, oracle": Case(DecoyEntityActor, lambda: DecoyEntityActor(*DECOYS.values(), 3, DECOY_DIM, 5,
                                                                                "oracle"),
                                     _decoys, lambda net, o: (*_entity_run(net, o), net.masks(o))),
    "MAPPOAgent, no bit": Case(mappo.MAPPOAgent, lambda: _mappo_agent(**DECOYS, actor="entity", decoy_view="no-bit"),
                               _decoys, _mappo_run),
    # Level-Based Foraging's view of an entity actor (nets/foraging.py, chapter 12)
    "ForagingView": Case(ForagingView, lambda: ForagingView(3), lambda: (observations("lbforaging"),),
                         lambda net, o: (net(o), net.seen(o), net.key_mask(o))),
    "MAPPOAgent, lbforaging": Case(mappo.MAPPOAgent, lambda: _mappo_agent(scenario="lbforaging", scenario_kwargs={},
                                                                       actor="entity"),
                                   lambda: (observations("lbforaging"),), _mappo_run),
    "VDN": Case(VDN, lambda: VDN(3, SPREAD_DIM), _agent_values),
    "QMIX": Case(QMIX, lambda: QMIX(3, SPREAD_DIM, embed=8, hyper_hidden=16), _agent_values),
    "Qatten": Case(Qatten, lambda: Qatten("simple_spread", {"N": 3}, 3, SPREAD_DIM, heads=2, d=8, d_u=8,
                                          hidden=16), _agent_values, lambda net, Q, o: net.outputs(Q, o)),
    # nets/sighted.py, nets/messages.py (chapter 11)
    "SightedActor": Case(SightedActor, lambda: SightedActor("simple_spread", 3, SPREAD_DIM, 5, 0.8), _spread),
    "SightedEntityActor": Case(SightedEntityActor, lambda: SightedEntityActor("simple_spread", {"N": 3}, 3,
                                                                              SPREAD_DIM, 5, 0.8),
                               _spread, lambda net, o: (*_entity_run(net, o), net.masks(o))),
    "EntityEncoder": Case(EntityEncoder, lambda: EntityEncoder(9, d=8, heads=2, d_ff=16, kind_widths=[4, 3]),
                          _entity_tokens, lambda net, t, mask: (net(t, mask), net.folded(_feature_major(t)))),
    "TargetedMessages": Case(TargetedMessages, lambda: TargetedMessages(8, 4), lambda: (randn(3, 4, 8),)),
    "TargetedMessages, mean": Case(TargetedMessages, lambda: TargetedMessages(8, 4, messages="mean"),
                                   lambda: (randn(3, 4, 8),)),
    "CommActor": Case(CommActor, lambda: CommActor("simple_spread", {"N": 3}, 3, SPREAD_DIM, 5, 0.8, rounds=2),
                      _spread, lambda net, o: (*_entity_run(net, o), net.encodings(o))),
    "MAPPOAgent, comm": Case(mappo.MAPPOAgent, lambda: _mappo_agent(actor="comm", messages="attention",
                                                                    sight_radius=0.8), _spread, _mappo_run),
    # nets/mat.py, algos/mat.py (chapter 13)
    "MATAttention": Case(MATAttention, lambda: MATAttention(8, 2), lambda: (randn(3, 4, 8), randn(3, 4, 8)),
                         lambda net, x_q, x_kv: (net(x_q, x_kv), net(x_q, x_kv, causal=True))),
    "EncoderBlock": Case(EncoderBlock, lambda: EncoderBlock(8, 2, 16), lambda: (randn(3, 4, 8),)),
    "DecoderBlock": Case(DecoderBlock, lambda: DecoderBlock(8, 2, 16), lambda: (randn(3, 4, 8), randn(3, 4, 8))),
    "AgentTokens": Case(AgentTokens, lambda: AgentTokens("simple_spread", {"N": 3}, 3, SPREAD_DIM, None, 8, 2, 16),
                        _spread),
    "MultiAgentTransformer": Case(MultiAgentTransformer, lambda: MultiAgentTransformer(
        "simple_spread", {"N": 3}, 3, SPREAD_DIM, 5, d=8, d_ff=16), _spread, _mat_run),
    "MultiAgentTransformer, MAT-Dec": Case(MultiAgentTransformer, lambda: MultiAgentTransformer(
        "simple_spread", {"N": 3}, 3, SPREAD_DIM, 5, d=8, d_ff=16, decoder=False), _spread, _mat_run),
    "MATAgent": Case(mat.MATAgent, lambda: mat.make_agent(mat.MATConfig()), _spread, _mappo_run),
    # algos/
    "ValueNorm": Case(mappo.ValueNorm, _value_norm, lambda: (randn(4, 3),),
                      lambda norm, x: (norm.normalize(x), norm.denormalize(x))),
    "MAPPOAgent": Case(mappo.MAPPOAgent, lambda: _mappo_agent(**TAG, actor="entity"),
                       lambda: (observations("simple_tag"),), _mappo_run),
    "MAPPOAgent, continuous": Case(
        mappo.MAPPOAgent, lambda: _mappo_agent(scenario_kwargs={"N": 3, "continuous_actions": True},
                                               actor="attention", critic="concat"),
        lambda: _spread(continuous_actions=True), _mappo_run),
    "MADDPGAgent": Case(maddpg.MADDPGAgent, lambda: maddpg.make_agent(maddpg.MADDPGConfig()),
                        lambda: _spread(continuous_actions=True), _maddpg_run),
    "MADDPGAgent, concat": Case(maddpg.MADDPGAgent,
                                lambda: maddpg.make_agent(maddpg.MADDPGConfig(actor="flat", critic="concat")),
                                lambda: _spread(continuous_actions=True), _maddpg_run),
    "MAACAgent": Case(maac.MAACAgent, lambda: maac.make_agent(maac.MAACConfig()),
                      lambda: (observations("collect_treasure", **TREASURE["scenario_kwargs"]),), _maac_run),
    "QMIXAgent": Case(qmix.QMIXAgent, lambda: qmix.make_agent(qmix.QMIXConfig()), _spread, _qmix_run),
}
"""How to build and feed every network class of the package, in one or more configurations."""


def _intervened(actor: EntityActor) -> EntityActor:
    actor.intervention = "other-agent"
    return actor


def network_classes() -> set[type[nn.Module]]:
    """Every nn.Module subclass defined in a module of the package."""
    found = set()
    for info in pkgutil.walk_packages(attnmarl.__path__, "attnmarl."):
        module = importlib.import_module(info.name)
        found |= {cls for _, cls in inspect.getmembers(module, inspect.isclass)
                  if issubclass(cls, nn.Module) and cls.__module__ == module.__name__}
    return found


def built(case: Case) -> nn.Module:
    torch.manual_seed(0)
    net = case.build()
    assert type(net) is case.kind
    return net.eval()


def plain_tensor_attributes(net: nn.Module) -> list[str]:
    """The attributes of the network's modules that hold a tensor that is neither a parameter nor a buffer of
    that module: ``.to(device)`` would leave it where it is."""
    found = []
    for name, module in net.named_modules():
        registered = {id(t) for t in [*module._parameters.values(), *module._buffers.values()]}
        found += [f"{name or type(net).__name__}.{attribute}" for attribute, value in vars(module).items()
                  if any(id(t) not in registered for t in tensors(value))]
    return found


def test_every_network_class_has_a_case():
    covered = {case.kind for case in CASES.values()}
    missing = network_classes() - covered - set(NOT_NETWORKS)
    assert not missing, f"network classes without a case in CASES (or a reason in NOT_NETWORKS): {missing}"
    assert not covered & set(NOT_NETWORKS)


@pytest.mark.parametrize("name", list(CASES))
def test_a_network_on_the_meta_device_runs_on_meta_inputs(name):
    case = CASES[name]
    net, inputs = built(case), case.inputs()
    with torch.no_grad():
        expected = tensors(case.run(net, *inputs))
    assert not plain_tensor_attributes(net)
    net.to("meta")
    assert all(t.is_meta for t in [*net.parameters(), *net.buffers()])
    with torch.no_grad(), NoCpuBesideMeta():
        outputs = tensors(case.run(net, *(x.to("meta") for x in inputs)))
    assert [(t.shape, t.dtype, t.device.type) for t in outputs] == [(t.shape, t.dtype, "meta") for t in expected]


@pytest.mark.parametrize("name", list(CASES))
def test_a_float64_round_trip_changes_no_output(name):
    case = CASES[name]
    net, inputs = built(case), case.inputs()
    with torch.no_grad():
        before = tensors(case.run(net, *inputs))
        net.double()
        in_float64 = tensors(case.run(net, *(x.double() if x.is_floating_point() else x for x in inputs)))
        net.float()
        after = tensors(case.run(net, *inputs))
    assert len(in_float64) == len(before)
    for x, y in zip(before, in_float64):
        if x.is_floating_point():
            assert y.dtype == torch.float64
            torch.testing.assert_close(y.float(), x, rtol=1e-4, atol=1e-5)
        else:
            assert torch.equal(y, x)
    assert all(torch.equal(x, y) for x, y in zip(before, after))


def test_the_checker_fails_a_tensor_left_on_the_cpu():
    """A network that keeps its index as a plain attribute: torch's meta device alone runs it, the checker
    does not, and neither does the attribute check."""

    class LeftBehind(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 4)
            self.index = torch.tensor([2, 0])

        def forward(self, x: Tensor) -> Tensor:
            return self.linear(x).index_select(-1, self.index)

    net = LeftBehind()
    assert plain_tensor_attributes(net) == ["LeftBehind.index"]
    net.to("meta")
    x = torch.ones(3, 4, device="meta")
    assert net(x).is_meta  # runs on meta, where CUDA would refuse the CPU index
    with pytest.raises(AssertionError, match=r"CPU tensor\(s\) of shape \[\(2,\)\]"), NoCpuBesideMeta():
        net(x)


# ---------------------------------------------------------------------------------------------
# --device for the command lines: python -m attnmarl.train, the loaders, python -m attnmarl.reproduce
# ---------------------------------------------------------------------------------------------
TINY = ["--evals", "1", "--eval-episodes", "1", "--final-episodes", "2"]
SMOKE = {"pi-spread3-entity": 3200, "q-spread3-attention": 10_048, "maac-treasure4-attention": 1_100,
         "qmix-spread3-qatten": 5_008}
"""A config of each algorithm (MAPPO, MADDPG, MAAC, value decomposition) and the smallest budget that updates its
networks."""


@pytest.fixture
def no_gpu(monkeypatch):
    """torch sees no GPU, wherever the test runs."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.parametrize("name", list(SMOKE))
def test_a_run_with_device_cpu_or_auto_is_the_run_without_the_flag(name, tmp_path, no_gpu):
    """The device is not part of a run: --device cpu (and auto, where torch sees no GPU) trains exactly the
    checkpoint that the command without the flag trains."""
    states = {}
    for flag in ([], ["--device", "cpu"], ["--device", "auto"]):
        out = tmp_path / (flag[-1] if flag else "none")
        train_main(["--config", name, "--steps", str(SMOKE[name]), "--out", str(out), *TINY, *flag])
        states[out.name] = load_checkpoint(out / f"{name}-seed0.pt")[1]
        assert json.loads((out / f"{name}-seed0.json").read_text())["device"] == "cpu"
    reference = states.pop("none")
    for state in states.values():
        assert state.keys() == reference.keys()
        assert all(torch.equal(state[key], reference[key]) for key in reference)


def test_device_cuda_without_a_gpu_is_refused_in_one_line(tmp_path, capsys, no_gpu):
    out = tmp_path / "runs"
    with pytest.raises(SystemExit) as exit_:
        train_main(["--config", "pi-spread3-flat", "--steps", "3200", "--out", str(out), "--device", "cuda"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "python -m attnmarl.train: error: --device cuda: torch sees no GPU on this machine "
        "(torch.cuda.is_available() is False); use cpu, or auto to take a GPU only where there is one")
    assert not list(out.glob("*"))  # refused before anything was written
    with pytest.raises(ValueError, match="device cuda: torch sees no GPU"):
        load_policy(shipped_checkpoint("policy", "pi-spread3-entity"), device="cuda")
    with pytest.raises(ValueError, match="device must be one of"):
        load_agent(shipped_checkpoint("policy", "pi-spread3-entity"), device="meta")


def test_the_loaders_put_the_agent_where_they_are_told():
    path = shipped_checkpoint("policy", "pi-spread6-entity")
    for agent in (load_agent(path, device="cpu")[0], load_agent_at(path, device=torch.device("cpu"), N=9)[0]):
        assert {t.device.type for t in [*agent.parameters(), *agent.buffers()]} == {"cpu"}


def test_reproduce_passes_the_device_to_every_run_and_asks_ray_for_a_gpu(tmp_path, monkeypatch):
    command = "python -m attnmarl.train --config spread3-attention --seed 1 --steps 3200 --device cuda"
    arguments = reproduce.rerun_arguments(command, str(tmp_path), "cpu")
    assert arguments[-6:] == ["--threads", "1", "--out", str(tmp_path), "--device", "cpu"]
    assert train_parser().parse_args(arguments).device == "cpu"  # the last --device wins
    assert reproduce.rerun_arguments(command, "out", "cuda")[-2:] == ["--device", "cuda"]
    assert reproduce.task_options("cuda", 2) == {"num_cpus": 1, "num_gpus": 1, "max_retries": 2,
                                                 "retry_exceptions": True}
    assert reproduce.task_options("cpu", 2)["num_gpus"] == 0
    with pytest.raises(ValueError, match="device must be one of"):
        reproduce.task_options("auto", 2)
    with pytest.raises(ValueError, match="the Ray cluster has no GPU"):
        reproduce._check_gpus(SimpleNamespace(cluster_resources=lambda: {"CPU": 16.0}))
    reproduce._check_gpus(SimpleNamespace(cluster_resources=lambda: {"CPU": 16.0, "GPU": 1.0}))

    folder = tmp_path / "runs" / "tiny"
    folder.mkdir(parents=True)
    (folder / "index.json").write_text(json.dumps(shipped_runs("value")[:1]))
    asked = {}

    def fake_reproduce(runs, out, address, cpus, retries, device):
        asked["device"] = device
        return {"counts": {**dict.fromkeys(reproduce.VERDICTS, 0), "identical": len(runs)}}

    monkeypatch.setattr(reproduce, "reproduce", fake_reproduce)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert reproduce.main(["--index", str(folder), "--out", str(tmp_path / "out"), "--device", "cuda"]) == 0
    assert asked == {"device": "cuda"}


def test_reproduce_refuses_cuda_for_a_local_ray_without_a_gpu(tmp_path, capsys, no_gpu):
    folder = tmp_path / "runs" / "tiny"
    folder.mkdir(parents=True)
    (folder / "index.json").write_text(json.dumps(shipped_runs("value")[:1]))
    with pytest.raises(SystemExit) as exit_:
        reproduce.main(["--index", str(folder), "--out", str(tmp_path / "out"), "--device", "cuda"])
    assert exit_.value.code == 2
    assert "--device cuda: torch sees no GPU on this machine" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# On a real GPU (skipped where torch sees none): what the meta device stands in for
# ---------------------------------------------------------------------------------------------
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (torch.cuda.is_available())")


def disagreement(expected: list[Tensor], outputs: list[Tensor]) -> str | None:
    """How a GPU's outputs differ from the CPU's beyond float32 rounding, or None."""
    if len(outputs) != len(expected) or not all(t.is_cuda for t in outputs):
        return f"{len(outputs)} outputs on {[t.device.type for t in outputs]}, expected {len(expected)} on cuda"
    for k, (x, y) in enumerate(zip(expected, outputs)):
        if not (torch.allclose(y.cpu(), x, rtol=1e-4, atol=1e-5) if x.is_floating_point() else torch.equal(y.cpu(), x)):
            return f"output {k} differs (largest |difference| {(y.cpu().double() - x.double()).abs().max():.2e})"
    return None


@needs_gpu
def test_every_network_on_a_gpu_gives_the_cpus_outputs(monkeypatch):
    """To float32 rounding: TF32 is off for cuDNN's convolutions and RNNs, as it is for torch's matmuls."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    differ = {}
    for name, case in CASES.items():
        net, inputs = built(case), case.inputs()
        with torch.no_grad():
            expected = tensors(case.run(net, *inputs))
            outputs = tensors(case.run(net.to("cuda"), *(x.to("cuda") for x in inputs)))
        if (why := disagreement(expected, outputs)) is not None:
            differ[name] = why
    assert not differ, differ


@needs_gpu
def test_a_run_on_a_gpu_saves_a_checkpoint_a_cpu_loads(tmp_path):
    name = "pi-spread3-entity"
    train_main(["--config", name, "--steps", str(SMOKE[name]), "--out", str(tmp_path), *TINY, "--device", "cuda"])
    assert json.loads((tmp_path / f"{name}-seed0.json").read_text())["device"].startswith("cuda (")
    saved = torch.load(tmp_path / f"{name}-seed0.pt", weights_only=True)  # where the tensors were saved from
    assert {t.device.type for t in saved["state_dict"].values()} == {"cpu"}
    agent, _ = load_agent(tmp_path / f"{name}-seed0.pt")
    assert {t.device.type for t in agent.parameters()} == {"cpu"}
