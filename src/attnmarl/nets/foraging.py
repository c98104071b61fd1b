"""What the entity actor reads of a Level-Based Foraging observation: tokens relative to the player, and a mask.

LBF's observation o^i (:mod:`attnmarl.envs.lbf`) lists ``(y, x, level)`` triples — the foods player i sees, then
the players it sees, itself first — in the frame of its view's corner, and writes ``(−1, −1, 0)`` in the slots
left empty. Its token layout (:func:`attnmarl.envs.tokens.token_layout`) reads every triple as one token
``(x, y, level)``. :class:`ForagingView` turns the observation into the one the actor cuts its tokens from, the
torch form of :func:`attnmarl.envs.lbf.lbf_tokens`:

- a food or another player seen becomes ``(x − x_self, y − y_self, level)``: relative to the player, so a token
  does not change when the player and what it sees move together;
- the player's own triple stays ``(x_self, y_self, level)``: its place in its view, which says how near the north
  and west walls it stands;
- an empty slot becomes zeros, and its key (:meth:`ForagingView.key_mask`) is masked out, so that it gets
  attention weight alpha = 0 (chapter 2's masked softmax) and nothing written in it reaches the actor's output.
  The self token is always present, so a player that sees no food still attends (to itself and any player).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from ..checks import check_int

__all__ = ["ForagingView"]


class ForagingView(nn.Module):
    """LBF observations o (batch, m, 3·(foods + m)) → the egocentric observations the entity actor reads
    (:meth:`forward`, the same shape) and its key mask (:meth:`key_mask`). No weights: the same for every m."""

    def __init__(self, foods: int) -> None:
        super().__init__()
        self.foods = check_int("foods", foods)

    def triples(self, o: Tensor) -> Tensor:
        """o (..., 3·(foods + m)) as its triples (..., foods + m, 3); ``ValueError`` for another width."""
        width = o.shape[-1] if o.dim() else 0
        if width % 3 or width // 3 <= self.foods:
            raise ValueError(f"LBF observations must end in 3 * (foods + players) numbers with foods = {self.foods} "
                             f"and players >= 1; got shape {tuple(o.shape)}")
        return o.unflatten(-1, (width // 3, 3))

    def seen(self, o: Tensor) -> Tensor:
        """Which slots hold something, (..., foods + m) bool: LBF writes ``y = −1`` in an empty slot."""
        return self.triples(o)[..., 0] != -1

    def forward(self, o: Tensor) -> Tensor:
        """The egocentric observations (module docstring), (..., 3·(foods + m)): every seen slot's position minus
        the player's own (which it keeps), every empty slot zeros."""
        triples = self.triples(o)
        own = triples[..., self.foods, :2]  # (..., 2): the player's (y, x) in its view
        is_self = torch.zeros(triples.shape[-2], 1, dtype=torch.bool, device=o.device)
        is_self[self.foods] = True
        relative = torch.where(is_self, triples[..., :2], triples[..., :2] - own.unsqueeze(-2))
        view = torch.cat([relative, triples[..., 2:]], dim=-1)
        return torch.where(self.seen(o).unsqueeze(-1), view, torch.zeros_like(view)).flatten(-2)

    def key_mask(self, o: Tensor) -> Tensor:
        """The key mask (..., 1 + foods + m − 1), True = the token takes part, in the token layout's order: self
        (always), the food slots, the other players' slots."""
        seen = self.seen(o)
        own = torch.ones_like(seen[..., :1])
        return torch.cat([own, seen[..., :self.foods], seen[..., self.foods + 1:]], dim=-1)
