"""Building blocks shared by the critics and the policies: input checks, agent types, initialisation,
and the m unshared per-agent layers of figs. 17.7 and 17.8.

Shapes: observations ``o`` are ``(batch, m, obs_dim)`` — agents in mpe2's ``possible_agents``
order, zero-padded where agents' observations differ (the batched ports' layout).

Heterogeneous agents (simple_tag's adversaries and good agents) have an *agent type*. A network that
shares parameters across agents cannot tell the types apart from a zero-padded observation, so
with more than one type every o^i gets its type as a one-hot appended before the shared encoder
(and each type has its own decentralized actor). Swapping agents of the same type keeps every
permutation property of the attention networks.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from ..checks import check_finite, check_like, check_sizes, is_int
from ..costs import check_cost, check_numbers

__all__ = ["AgentLinear", "AgentHeads", "BufferList", "check_agent_layers", "check_obs", "check_types", "type_features",
           "n_type_features", "linear", "mlp"]


def check_obs(o: Tensor, m: int, obs_dim: int, weight: Tensor | None = None) -> None:
    """Raise ``ValueError`` unless ``o`` is a finite float tensor of shape (batch, m, obs_dim), of the dtype
    and on the device of ``weight`` (a parameter of the network it enters), if given."""
    if not isinstance(o, Tensor):
        raise ValueError(f"observations must be a torch.Tensor of shape (batch, m, obs_dim); got {type(o).__name__}")
    if not o.is_floating_point():
        raise ValueError(f"observations must be a floating-point tensor; got dtype {o.dtype}")
    if o.dim() != 3 or o.shape[1:] != (m, obs_dim):
        raise ValueError(
            f"observations must have shape (batch, m, obs_dim) = (batch, {m}, {obs_dim}); got {tuple(o.shape)}"
        )
    if weight is not None:
        check_like("observations", o, weight, "the network's weights")
    check_finite("observations", o)


def check_types(agent_types: Sequence[int] | None, m: int) -> tuple[int, ...]:
    """Agent types as a tuple of m ints numbering the types 0, 1, ... (all 0 by default)."""
    if not is_int(m) or m < 1:
        raise ValueError(f"m (the number of agents) must be a positive int; got {m!r}")
    if agent_types is not None and not isinstance(agent_types, (str, bytes)):
        agent_types = list(agent_types)
    if agent_types is not None and (isinstance(agent_types, (str, bytes)) or not all(
            is_int(t) for t in agent_types)):
        raise ValueError(f"agent_types must be a sequence of m ints (for example [0, 0, 1]); got {agent_types!r}")
    types = tuple(int(t) for t in agent_types) if agent_types is not None else (0,) * m
    if len(types) != m:
        raise ValueError(f"agent_types must give one type per agent (m = {m}); got {len(types)}")
    if sorted(set(types)) != list(range(len(set(types)))):
        raise ValueError(f"agent types must be numbered 0, 1, ... without gaps; got {types}")
    return types


def type_features(o: Tensor, agent_types: tuple[int, ...]) -> Tensor:
    """[o^i; one-hot(type of i)] for every agent when there is more than one type, else o itself."""
    n_types = max(agent_types) + 1
    if n_types == 1:
        return o
    one_hot = torch.eye(n_types, dtype=o.dtype, device=o.device)[list(agent_types)]  # (m, n_types)
    return torch.cat([o, one_hot.expand(o.shape[0], -1, -1)], dim=-1)


def linear(d_in: int, d_out: int, gain: float = math.sqrt(2)) -> nn.Linear:
    """A linear layer with orthogonal weights of the given gain and zero bias (as in CleanRL's PPO)."""
    check_numbers("a linear layer's weights", ("d_out", d_out), ("d_in", d_in))
    check_layers(1, d_in, d_out, f"a linear layer of {int(d_out):,} x {int(d_in):,} weights",
                 remedy="give narrower layers (actor_hidden, critic_hidden, d_x, entity_d, ...)")
    layer = nn.Linear(d_in, d_out)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def mlp(sizes: Sequence[int], activation: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """Linear layers of the given sizes, each followed by ``activation``: the shared encoder phi."""
    layers: list[nn.Module] = []
    for d_in, d_out in zip(sizes[:-1], sizes[1:]):
        layers += [linear(d_in, d_out), activation()]
    return nn.Sequential(*layers)


class BufferList(nn.Module):
    """Tensors a network reads in ``forward`` that are not weights (gather indices, say), as a list that moves
    with the network: each is a buffer, so ``.to("cuda")`` moves it with the weights (a plain attribute would
    stay behind on the CPU), and a non-persistent one, so it stays out of the ``state_dict`` (checkpoints do
    not change). Read it back by position, or iterate over it."""

    def __init__(self, tensors: Iterable[Tensor] = ()) -> None:
        super().__init__()
        for i, tensor in enumerate(tensors):
            self.register_buffer(str(i), tensor, persistent=False)

    def __len__(self) -> int:
        return len(self._buffers)

    def __iter__(self) -> Iterator[Tensor]:
        return iter(self._buffers.values())

    def __getitem__(self, i: int) -> Tensor:
        return self._buffers[str(range(len(self))[i])]


INIT_CALL_SECONDS = 2e-4
"""Seconds per orthogonal initialisation of one small weight matrix (a QR factorisation, and torch's overhead
for the call): :class:`AgentLinear` initialises its m matrices one by one, on one thread (:func:`one_thread`).
Measured on a busy 2-core CPU: 0.075 s for 512 matrices of 64 x 64, 0.29 s for 2,000."""


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread inside the block. Each of :class:`AgentLinear`'s m small QR factorisations is far
    too small to share out, and with two threads on a busy machine each call waited for the other thread: 2,000
    matrices of 64 x 8 took 16 s instead of 0.08 s, 200 of 64 x 6,400 100 s instead of 1.1 s. One thread also
    makes the initial weights the same whatever the machine's number of cores (two threads round some QR
    factorisations differently)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


INIT_FLOP_SECONDS = 2e-10
"""Seconds per multiply-add of the QR factorisation of a (rows x cols) matrix, rows x cols^2 of them (rows >= cols):
2.2 s for 1,000 matrices of 256 x 256 on the same CPU."""

TRAINED_WEIGHT_BYTES = 16
"""Bytes a float32 weight takes in training: itself, its gradient and Adam's two moments."""


def check_layers(count: int, d_in: int, d_out: int, what: str, remedy: str, each: str = "") -> None:
    """Refuse ``count`` (d_out x d_in) layers whose orthogonal initialisation is estimated to take minutes (its QR
    factorisation is cubic: one 8,000 x 8,000 layer, about 100 s), or whose weights, trained with Adam, would take
    more than the memory budget (:func:`attnmarl.costs.check_cost`); ``each`` says what the initialisations are."""
    count, d_in, d_out = int(count), int(d_in), int(d_out)  # numpy's integers would overflow in the products
    rows, cols = max(d_in, d_out), min(d_in, d_out)
    seconds = count * (INIT_CALL_SECONDS + INIT_FLOP_SECONDS * rows * cols**2)
    weights = count * d_in * d_out
    check_cost(what, seconds, TRAINED_WEIGHT_BYTES * weights,
               basis=f"{count:,} orthogonal initialisation{'s' if count != 1 else ''}{each}, {INIT_CALL_SECONDS:g} s "
                     f"each plus {INIT_FLOP_SECONDS:g} s per multiply-add of their QR factorisations; {weights:,} "
                     f"weights of {TRAINED_WEIGHT_BYTES} bytes each in training, with gradients and Adam's moments",
               remedy=remedy)


def check_agent_layers(m: int, d_in: int, d_out: int) -> None:
    """:func:`check_layers` for m unshared (d_out x d_in) layers, one per agent."""
    check_layers(m, d_in, d_out, f"m = {int(m):,} unshared layers of {int(d_out):,} x {int(d_in):,} weights",
                 remedy="fewer agents, or an attention network or the entity actor, whose weights do not grow with m",
                 each=", one per agent")


class AgentLinear(nn.Module):
    """m unshared linear layers side by side, y^i = W^i h^i + b^i for i = 1..m, in one batched product.

    ``W`` is (m, d_out, d_in) and ``b`` (m, d_out). The input is either (batch, m, d_in) — a separate
    h^i for each agent — or (batch, d_in), one input that all m layers read (the concatenation
    critic's [x^1; ...; x^m]). The output is (batch, m, d_out).
    """

    def __init__(self, m: int, d_in: int, d_out: int, gain: float = math.sqrt(2)) -> None:
        super().__init__()
        check_sizes(m=m, d_in=d_in, d_out=d_out)
        check_numbers("the weights of m unshared layers", ("m", m), ("d_out", d_out), ("d_in", d_in),
                      hint=" (fewer agents, or the attention networks, whose size does not grow with m)")
        check_agent_layers(m, d_in, d_out)
        self.m, self.d_in, self.d_out = m, d_in, d_out
        self.W = nn.Parameter(torch.empty(m, d_out, d_in))
        self.b = nn.Parameter(torch.zeros(m, d_out))
        with one_thread():
            for W_i in self.W.data:
                nn.init.orthogonal_(W_i, gain)

    def extra_repr(self) -> str:
        return f"m={self.m}, d_in={self.d_in}, d_out={self.d_out}"

    def forward(self, h: Tensor) -> Tensor:
        if not isinstance(h, Tensor):
            raise ValueError(f"h must be a torch.Tensor; got {type(h).__name__}")
        check_like("h", h, self.W)
        if not ((h.dim() == 3 and h.shape[1:] == (self.m, self.d_in)) or (h.dim() == 2 and h.shape[1] == self.d_in)):
            raise ValueError(f"the input of {self.m} unshared layers must be (batch, m, d_in) = (batch, {self.m}, "
                             f"{self.d_in}), one input per agent, or (batch, d_in) = (batch, {self.d_in}), one input "
                             f"all of them read; got {tuple(h.shape)}")
        if h.dim() == 2:  # one shared input: a single (batch, d_in) x (d_in, m d_out) product
            return (h @ self.W.flatten(0, 1).T).view(h.shape[0], self.m, self.d_out) + self.b
        return torch.einsum("bmi,moi->bmo", h, self.W) + self.b


class AgentHeads(nn.Module):
    """m unshared MLP heads d_in -> d_hidden -> d_out, the per-agent outputs g^i(h^i; w^i) of figs. 17.7
    and 17.8: a value (d_out = 1), the logits of pi^i or the mean of mu^i. Input (batch, m, d_in) or
    a shared (batch, d_in); output (batch, m, d_out). ``out_gain`` scales the last layer's
    initialisation (0.01 for policies, so that every action starts equally likely)."""

    def __init__(self, m: int, d_in: int, d_hidden: int, d_out: int = 1, out_gain: float = 1.0) -> None:
        super().__init__()
        check_sizes(m=m, d_in=d_in, d_hidden=d_hidden, d_out=d_out)
        self.hidden = AgentLinear(m, d_in, d_hidden)
        self.out = AgentLinear(m, d_hidden, d_out, gain=out_gain)

    def forward(self, h: Tensor) -> Tensor:
        return self.out(torch.relu(self.hidden(h)))


def n_type_features(agent_types: tuple[int, ...]) -> int:
    """Length of the type one-hot appended to each observation: the number of types, or 0 with one type."""
    n_types = max(agent_types) + 1
    return n_types if n_types > 1 else 0
