"""Soft spatial attention in vision: find the marked digit in a cluttered image.

The task is generated in code (nothing is downloaded). An image is S x S pixels (S = 24) and holds
N_DIGITS digits drawn in a 3 x 5 pixel font at random places, faint noise and a few stray pixels.
One of the digits, the **target**, is marked by a frame around it; the label is the target's
class, 0-9. The other digits are distractors of other classes.

Both models share a small convolutional trunk that turns the image into a feature map
f_p in R^C at every position p = (row, col) of the S x S grid (N = S^2 positions), and both read
one summary vector c in R^C from the map, then classify it, y = W_y c + b_y:

- :class:`SpatialAttentionCNN` with ``attention=True`` scores every position and pools with soft
  attention over the feature map (as "Show, attend and tell" (Xu et al. 2015) does over a CNN's grid
  of features):

      s_p = w_s^T f_p + b_s,     alpha = softmax(s) over the N positions,     c = sum_p alpha_p f_p;

- with ``attention=False`` (the no-attention baseline) the same network averages the map,
  alpha_p = 1/N for every p (global average pooling): it sums what every position saw. Its features
  could in principle tell "a framed 7" apart from "a 7" locally (the trunk's receptive field, 7 x 7
  pixels, covers a digit and the sides of its frame), but the average mixes in every distractor, and
  with the same training budget it stays far behind.

:func:`glimpse_logits` reads the trained attention model the hard way: one position, the argmax of
alpha (the glimpse of chapter 2's hard attention), instead of the weighted mean.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from attnmarl import QUICK
from attnmarl.attention import masked_softmax
from attnmarl.checks import check_bool, check_finite, check_int, check_seed, derived_seed
from attnmarl.costs import check_numbers

__all__ = ["SIZE", "N_DIGITS", "N_CLASSES", "RECEPTIVE_FIELD", "FONT", "MarkedDigits", "make_images",
           "SpatialAttentionCNN", "glimpse_logits", "accuracy", "train", "TRAIN_STEPS"]

SIZE = 24                  # S: images are S x S
N_DIGITS = 4               # digits per image: one target and N_DIGITS - 1 distractors
N_CLASSES = 10
CHANNELS = 16              # C: features per position
RECEPTIVE_FIELD = 7        # f_p sees the 7 x 7 pixels centred on p: a 3 x 3 conv, then a 3 x 3 one with dilation 2
BATCH_SIZE = 32
LEARNING_RATE = 3e-3
SCORE_LEARNING_RATE = 3e-2  # w_s, b_s: alpha starts uniform, so the score's gradients start small
TRAIN_STEPS = 50 if QUICK else 320
SEED = 0

FONT = {
    0: ("###", "#.#", "#.#", "#.#", "###"),
    1: (".#.", "##.", ".#.", ".#.", "###"),
    2: ("###", "..#", "###", "#..", "###"),
    3: ("###", "..#", ".##", "..#", "###"),
    4: ("#.#", "#.#", "###", "..#", "..#"),
    5: ("###", "#..", "###", "..#", "###"),
    6: ("###", "#..", "###", "#.#", "###"),
    7: ("###", "..#", ".#.", ".#.", ".#."),
    8: ("###", "#.#", "###", "#.#", "###"),
    9: ("###", "#.#", "###", "..#", "###"),
}
"""The 3 x 5 pixel font of the ten digit-like shapes ('#' = ink)."""

_GLYPHS = np.array([[[c == "#" for c in row] for row in FONT[d]] for d in range(N_CLASSES)], dtype=np.float32)
_BOX_H, _BOX_W = 9, 7       # a framed digit: the 5 x 3 glyph, a one-pixel gap, a one-pixel frame
FRAME_INK = 0.7            # the frame is drawn greyer than the digits


class MarkedDigits:
    """A batch of images (B, 1, S, S), their labels (B,) and where the target sits.

    ``boxes`` (B, N_DIGITS, 2) is the top-left corner (row, col) of every digit's 9 x 7 box, the
    target first; ``classes`` (B, N_DIGITS) their classes, ``labels = classes[:, 0]``.
    """

    def __init__(self, images: Tensor, classes: Tensor, boxes: Tensor) -> None:
        self.images, self.classes, self.boxes = images, classes, boxes
        self.labels = classes[:, 0]

    def __len__(self) -> int:
        return len(self.images)

    def target_mask(self) -> Tensor:
        """(B, S, S) boolean: True on the pixels of the target's 9 x 7 box."""
        mask = torch.zeros(len(self), SIZE, SIZE, dtype=torch.bool)
        for b, (r, c) in enumerate(self.boxes[:, 0].tolist()):
            mask[b, r:r + _BOX_H, c:c + _BOX_W] = True
        return mask


_SLOTS = [(12 * r, 8 * c) for r in range(2) for c in range(3)]
"""The image is cut into 2 x 3 slots of 12 x 8 pixels; each digit's box sits in its own slot."""


def _place_boxes(rng: np.random.Generator, n: int, n_digits: int) -> np.ndarray:
    """(n, n_digits, 2) top-left corners of 9 x 7 boxes: each image's digits in different slots, shifted
    in their slot by 0-3 rows and 0-1 columns (boxes never overlap; glyphs stay 2 pixels from any frame)."""
    slots = np.array(_SLOTS)[np.argsort(rng.random((n, len(_SLOTS))), axis=1)[:, :n_digits]]
    return slots + np.stack([rng.integers(0, 4, (n, n_digits)), rng.integers(0, 2, (n, n_digits))], axis=-1)


def make_images(n: int, seed: int, n_digits: int = N_DIGITS) -> MarkedDigits:
    """``n`` images of the task, reproducible from ``seed`` (every class equally likely as the target;
    the distractors are other classes, all different)."""
    check_numbers("the images", ("n", n), ("height", SIZE), ("width", SIZE))  # n = 10^9 failed in numpy
    check_seed(seed)
    check_int("n_digits", n_digits)
    if n_digits > len(_SLOTS):
        raise ValueError(f"n_digits must be at most {len(_SLOTS)} (one digit per slot of the image); got {n_digits}")
    rng = np.random.default_rng(seed)
    images = rng.uniform(0.0, 0.15, size=(n, SIZE, SIZE)).astype(np.float32)
    stray = rng.random((n, SIZE, SIZE)) < 0.03
    images[stray] = rng.uniform(0.5, 1.0, size=int(stray.sum()))
    classes = np.stack([rng.permutation(N_CLASSES)[:n_digits] for _ in range(n)])
    boxes = _place_boxes(rng, n, n_digits)
    for b in range(n):
        for k, (r, c) in enumerate(boxes[b]):
            patch = images[b, r:r + _BOX_H, c:c + _BOX_W]
            patch[:] = np.where(k == 0, _frame(), 0.0) + rng.uniform(0.0, 0.15, size=patch.shape)
            patch[2:7, 2:5] = np.maximum(patch[2:7, 2:5], _GLYPHS[classes[b, k]])
    return MarkedDigits(torch.from_numpy(np.clip(images, 0.0, 1.0)).unsqueeze(1), torch.from_numpy(classes),
                        torch.from_numpy(boxes))


def _frame() -> np.ndarray:
    frame = np.full((_BOX_H, _BOX_W), FRAME_INK, dtype=np.float32)
    frame[1:-1, 1:-1] = 0.0
    return frame


class SpatialAttentionCNN(nn.Module):
    """Conv trunk -> feature map f (B, C, S, S) -> pooled c (B, C) -> class logits (B, 10).

    ``attention=True``: soft spatial attention, alpha = softmax_p(w_s^T f_p + b_s), c = sum_p alpha_p f_p.
    ``attention=False``: the baseline, alpha_p = 1/N (global average pooling). ``forward`` returns
    (logits, alpha) with alpha of shape (B, S, S), summing to 1 over each image.
    """

    def __init__(self, attention: bool = True, channels: int | None = None) -> None:
        super().__init__()
        channels = CHANNELS if channels is None else check_int("channels", channels, maximum=4096)
        self.attention = check_bool("attention", attention)  # 'no' would build the attention model
        self.trunk = nn.Sequential(nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(),
                                   nn.Conv2d(channels, channels, 3, padding=2, dilation=2), nn.ReLU())
        self.score = nn.Conv2d(channels, 1, 1) if attention else None   # w_s, b_s
        self.classify = nn.Linear(channels, N_CLASSES)                   # W_y, b_y

    def features(self, images: Tensor) -> Tensor:
        """The feature map f: (B, 1, S, S) -> (B, C, S, S)."""
        if images.ndim != 4 or images.shape[1:] != (1, SIZE, SIZE):
            raise ValueError(f"images must have shape (B, 1, {SIZE}, {SIZE}); got {tuple(images.shape)}")
        check_finite("images", images)
        return self.trunk(images)

    def attend(self, f: Tensor) -> Tensor:
        """alpha (B, S, S) over the positions of the feature map f (B, C, S, S)."""
        b, _, h, w = f.shape
        if self.score is None:
            return f.new_full((b, h, w), 1.0 / (h * w))
        return masked_softmax(self.score(f).reshape(b, h * w)).reshape(b, h, w)

    def forward(self, images: Tensor) -> tuple[Tensor, Tensor]:
        f = self.features(images)
        alpha = self.attend(f)
        c = torch.einsum("bchw,bhw->bc", f, alpha)
        return self.classify(c), alpha


def glimpse_logits(model: SpatialAttentionCNN, images: Tensor) -> tuple[Tensor, Tensor]:
    """Hard attention at test time: classify from the feature vector at the single position argmax_p alpha_p.

    The mask over positions is 1 there and 0 elsewhere; the pixels behind that one feature vector are the
    RECEPTIVE_FIELD x RECEPTIVE_FIELD patch centred on it.
    Returns the logits (B, 10) and the glimpsed positions (B, 2) as (row, col).
    """
    if model.score is None:
        raise ValueError("the no-attention baseline has no alpha to take a glimpse from")
    f = model.features(images)
    alpha = model.attend(f)
    flat = alpha.flatten(1).argmax(1)
    rows, cols = flat // SIZE, flat % SIZE
    picked = f[torch.arange(len(f)), :, rows, cols]
    return model.classify(picked), torch.stack([rows, cols], 1)


def accuracy(logits: Tensor, labels: Tensor) -> float:
    """Share of the images whose largest logit is the label."""
    if logits.ndim != 2 or labels.shape != logits.shape[:1] or not len(labels):
        raise ValueError(f"logits must be (B, classes) and labels (B,) for B >= 1 images; got {tuple(logits.shape)} "
                         f"and {tuple(labels.shape)}")
    return (logits.argmax(-1) == labels).float().mean().item()


def train(attention: bool, steps: int = TRAIN_STEPS, seed: int = SEED, progress: bool = True) -> dict:
    """Train a :class:`SpatialAttentionCNN` with cross-entropy on fresh batches (Adam).

    The same seed gives both variants the same trunk initialisation and the same batches. The score
    layer (w_s, b_s) learns SCORE_LEARNING_RATE / LEARNING_RATE = 10 times faster than the rest: alpha
    starts uniform, where the score's gradient is small, and the classifier has nothing to learn from
    until alpha finds the frame.
    Returns ``{"model", "loss", "accuracy"}`` (per-step training curves).
    """
    check_int("steps", steps)
    check_seed(seed)
    torch.manual_seed(seed)
    model = SpatialAttentionCNN(attention)
    score = list(model.score.parameters()) if model.score is not None else []
    rest = [p for p in model.parameters() if all(p is not q for q in score)]
    optimizer = torch.optim.Adam([{"params": rest}, {"params": score, "lr": SCORE_LEARNING_RATE}], lr=LEARNING_RATE)
    curves: dict = {"loss": [], "accuracy": []}
    name = "soft attention" if attention else "average pooling"
    for step in tqdm(range(steps), desc=f"training ({name})", disable=not progress):
        batch = make_images(BATCH_SIZE, seed=derived_seed(1_000_000 * (seed + 1), step))
        logits, _ = model(batch.images)
        loss = nn.functional.cross_entropy(logits, batch.labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        curves["loss"].append(loss.item())
        curves["accuracy"].append(accuracy(logits.detach(), batch.labels))
    curves["model"] = model
    return curves
