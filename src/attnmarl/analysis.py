"""How outputs depend on inputs: the sensitivity matrix used to compare layers (and critics), and how much a
Multi-Agent Transformer's agents draw on the actions decided before theirs (chapter 13)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from .checks import check_episodes, check_indices, check_seed
from .envs import make_batched, token_layout
from .nets.mat import MultiAgentTransformer

__all__ = ["sensitivity_matrix", "value_sensitivity", "action_influence", "nearest_landmarks", "landmark_influence"]


def sensitivity_matrix(f: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """S[i, j] = ||dc^i / dx^j||_F, how strongly output i moves with input j.

    ``f`` maps x of shape (m, d_in) to outputs c of shape (m, d_out) (or (m,) for one number per
    input, such as m values v^i). A zero in S means c^i cannot see x^j at all.
    """
    if x.dim() != 2:
        raise ValueError(f"x must have shape (m, d_in); got {tuple(x.shape)}")
    jacobian = torch.autograd.functional.jacobian(f, x)  # (m, [d_out,] m, d_in)
    if jacobian.dim() == 3:
        jacobian = jacobian.unsqueeze(1)
    if jacobian.dim() != 4 or jacobian.shape[0] != x.shape[0]:
        raise ValueError(f"f must map (m, d_in) to (m, d_out) or (m,); got a Jacobian of shape {tuple(jacobian.shape)}")
    return jacobian.pow(2).sum(dim=(1, 3)).sqrt()


def value_sensitivity(critic: Callable[[Tensor], Tensor], o: Tensor) -> Tensor:
    """S[b, i, j] = ||d v_hat^i / d o^j|| in sample b: how strongly agent i's value moves with
    agent j's observation, for a batch of observations ``o`` (batch, m, d_o).

    ``critic`` maps (batch, m, d_o) to values (batch, m) and treats the samples independently (each
    v_hat[b] depends on o[b] only, true of every critic in :mod:`attnmarl.nets`), so one backward pass
    per agent i gives the gradients of the whole batch.
    """
    if o.dim() != 3:
        raise ValueError(f"o must have shape (batch, m, d_o); got {tuple(o.shape)}")
    o = o.detach().requires_grad_(True)
    v_hat = critic(o)
    if v_hat.shape != o.shape[:2]:
        raise ValueError(f"critic must map (batch, m, d_o) to (batch, m); got {tuple(v_hat.shape)}")
    rows = [torch.autograd.grad(v_hat[:, i].sum(), o, retain_graph=True)[0].norm(dim=-1)
            for i in range(o.shape[1])]
    return torch.stack(rows, dim=1)  # (batch, m: output i, m: input j)


def action_influence(net: MultiAgentTransformer, o: Tensor, a: Tensor) -> Tensor:
    """I[b, i, k]: how far agent i's policy moves when agent k's action changes, in world b. For every other
    action a' of agent k, the total variation distance between pi^i(. | o, a) and pi^i(. | o, a with a^k = a'),

        TV(p, q) = 1/2 sum_a |p(a) - q(a)|   (0: the same policy, 1: no action in common),

    averaged over the n_actions - 1 choices of a'. Observations ``o`` (batch, m, obs_dim) and actions ``a``
    (batch, m) are in agent order, which is also the decision order; the policies are the teacher-forced ones of
    :meth:`~attnmarl.nets.mat.MultiAgentTransformer.logits`, all variants in one batch. The decoder is causal, so
    I[b, i, k] = 0 wherever k >= i (agent i never reads its own action or a later one), and MAT-Dec, whose agents
    read no action at all, gives 0 everywhere. Unlike the decoder's alpha, which weighs positions that the masked
    self-attention has already mixed, I measures what agent k's action does to agent i's choice.
    """
    if not isinstance(net, MultiAgentTransformer):
        raise ValueError(f"action_influence reads a MultiAgentTransformer; got {type(net).__name__}")
    if o.dim() != 3:
        raise ValueError(f"o must have shape (batch, m, obs_dim); got {tuple(o.shape)}")
    batch, m = o.shape[:2]
    check_indices("a", a, net.n_actions, (batch, m), "action")
    n = net.n_actions
    shift = torch.arange(1, n, device=a.device)  # a^k + 1, ..., a^k + n - 1 (mod n): every other action
    changed = a[None, None].repeat(m, n - 1, 1, 1)  # (k, shift, batch, m)
    for k in range(m):
        changed[k, :, :, k] = (a[None, :, k] + shift[:, None]) % n
    with torch.no_grad():
        p = net.logits(o, a)[0].softmax(-1)  # (batch, m, n)
        q = net.logits(o.repeat(m * (n - 1), 1, 1), changed.flatten(0, 2))[0].softmax(-1)
    tv = 0.5 * (q.view(m, n - 1, batch, m, n) - p).abs().sum(-1)  # (k, shift, batch, i)
    return tv.mean(1).permute(1, 2, 0)  # (batch, i, k)


def nearest_landmarks(o: Tensor, m: int) -> Tensor:
    """Each agent's nearest landmark on simple_spread with m agents: (batch, m) landmark indices, from the
    observations ``o`` (batch, m, obs_dim), whose landmark columns hold p_l - p^i in mpe2's landmark order."""
    layout = token_layout("simple_spread", 0, N=m)
    columns = [c for c, kind in zip(layout.columns, layout.kinds) if kind == "landmark"]
    if o.dim() != 3 or o.shape[1:] != (m, layout.obs_dim):
        raise ValueError(f"o must have shape (batch, {m}, {layout.obs_dim}) for simple_spread with N = {m}; "
                         f"got {tuple(o.shape)}")
    return torch.stack([o[..., list(c)].norm(dim=-1) for c in columns], dim=-1).argmin(-1)


def landmark_influence(net: MultiAgentTransformer, m: int, episodes: int = 64, seed: int = 0) -> dict[str, Any]:
    """Does a MAT agent draw most on the earlier agents that are after its landmark? On ``episodes`` episodes of
    the batched simple_spread port (N = m, reset with ``seed``), played by ``net`` greedily in agent order, every
    step's :func:`action_influence` I[i, k] of each pair k < i is filed under **same** when agents i and k have the
    same nearest landmark (:func:`nearest_landmarks`, the landmark each is heading for, as a proxy) and under
    **other** otherwise. Returns the mean influence and the number of pairs of each, and ``by_pair`` (m, m), the
    mean of I over every step."""
    episodes = check_episodes("episodes", episodes)
    env = make_batched("simple_spread", episodes, seed=check_seed(seed), N=m)
    weight = next(net.parameters())
    earlier = torch.ones(m, m, dtype=torch.bool).tril(-1)  # pairs (i, k) with k < i
    sums, counts, total = {"same": 0.0, "other": 0.0}, {"same": 0, "other": 0}, torch.zeros(m, m)
    o = env.reset()
    for _ in range(env.max_cycles):
        o_t = torch.as_tensor(o, dtype=weight.dtype, device=weight.device)
        with torch.no_grad():
            a = net.decode(o_t, lambda logits: logits.argmax(-1))[0]
        influence = action_influence(net, o_t, a).cpu()
        nearest = nearest_landmarks(o_t, m).cpu()
        same = (nearest[:, :, None] == nearest[:, None, :]) & earlier
        for name, pairs in (("same", same), ("other", ~same & earlier)):
            sums[name] += float(influence[pairs].sum())
            counts[name] += int(pairs.sum())
        total += influence.sum(0)
        o = env.step(a.cpu().numpy())[0]
    return {**{name: sums[name] / max(counts[name], 1) for name in sums},
            "pairs": counts, "by_pair": (total / (episodes * env.max_cycles)).numpy()}
