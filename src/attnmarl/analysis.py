"""How outputs depend on inputs: the sensitivity matrix used to compare layers (and critics)."""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

__all__ = ["sensitivity_matrix", "value_sensitivity"]


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
