"""How outputs depend on inputs: the sensitivity matrix used to compare layers (and critics)."""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

__all__ = ["sensitivity_matrix"]


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
