"""The explorers of "A map of attention": soft spatial attention over images, and an agent's attention
over entities.

- :func:`overlay` paints alpha over a grey image; :func:`vision_frame` shows one held-out image of
  :mod:`attnmarl.vision` with the attention model's alpha, its glimpse (the argmax of alpha) and both
  models' class probabilities; :func:`vision_explorer` steps through the held-out images;
- :func:`fetch_episode` plays one greedy episode of a trained :class:`attnmarl.relational.RelationalAgent`;
  :func:`fetch_frame` draws a step of it (the arena with every object ringed by the weight alpha^0 the
  agent gives it, and alpha^0 as a row); :func:`fetch_explorer` chooses the layout, the goal colour
  and the step.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnmarl import relational, vision
from attnmarl.checks import check_index, check_seed
from attnmarl.notebook.viz import Arena, Frame, Heatmap, Picture
from attnmarl.notebook.widgets import Dropdown, Explorer, Slider

__all__ = ["overlay", "glimpse_box", "vision_frame", "vision_explorer", "OBJECT_COLOURS", "ENTITY_LABELS",
           "FetchEpisode", "fetch_episode", "fetch_frame", "fetch_explorer"]

ATTENTION_RGB = np.array([0.85, 0.1, 0.1])


def overlay(image: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """(S, S) image in [0, 1] and alpha (S, S) -> (S, S, 3) rgb: the image in grey, alpha in red
    (scaled by its largest value, so the most attended pixel is pure red)."""
    if image.shape != alpha.shape or image.ndim != 2:
        raise ValueError(f"image and alpha must be two matrices of the same shape; got {image.shape} and {alpha.shape}")
    grey = np.repeat(0.75 * image[..., None], 3, axis=-1)
    weight = (alpha / max(float(alpha.max()), 1e-12))[..., None]
    return np.clip((1 - weight) * grey + weight * ATTENTION_RGB, 0.0, 1.0)


def glimpse_box(row: int, col: int) -> tuple[int, int, int, int]:
    """The pixels a glimpse at (row, col) sees, as a box (top, left, height, width): the trunk's 7 x 7
    receptive field centred on the glimpsed position, cut at the image's edges."""
    row = check_index("row", row, vision.SIZE, "index of a pixel row")
    col = check_index("col", col, vision.SIZE, "index of a pixel column")
    half = vision.RECEPTIVE_FIELD // 2
    top, left = max(row - half, 0), max(col - half, 0)
    bottom, right = min(row + half, vision.SIZE - 1), min(col + half, vision.SIZE - 1)
    return top, left, bottom - top + 1, right - left + 1


def vision_frame(images: vision.MarkedDigits, attention: vision.SpatialAttentionCNN,
                 baseline: vision.SpatialAttentionCNN, index: int = 0) -> Frame:
    """One held-out image: the image, alpha over it with the glimpse boxed, and both models' p(class)."""
    index = check_index("index", index, len(images), "image index")
    x = images.images[index:index + 1]
    with torch.no_grad():
        logits, alpha = attention(x)
        glimpse, where = vision.glimpse_logits(attention, x)
        average, _ = baseline(x)
    probs = torch.stack([logits[0].softmax(-1), average[0].softmax(-1)]).numpy()
    image, alpha = x[0, 0].numpy(), alpha[0].numpy()
    mass = float(alpha[images.target_mask()[index].numpy()].sum())
    label = int(images.labels[index])
    return Frame(
        [
            Picture(np.repeat(image[..., None], 3, axis=-1), title=f"image {index}", scale=7),
            Picture(overlay(image, alpha), title="α and the glimpse", scale=7,
                    boxes=[glimpse_box(*where[0].tolist())]),
            Heatmap(probs, ["attention", "average"], [str(c) for c in range(vision.N_CLASSES)], title="p(class)",
                    xlabel="class", ylabel="model", annotate=False),
        ],
        caption=f"α inside the target's frame: {mass:.2f}; soft attention says {int(probs[0].argmax())}, "
                f"the glimpse {int(glimpse.argmax())}, average pooling {int(probs[1].argmax())} (label {label})",
    )


def vision_explorer(images: vision.MarkedDigits, attention: vision.SpatialAttentionCNN,
                    baseline: vision.SpatialAttentionCNN) -> Explorer:
    """Step through held-out images with the two trained models."""

    def frame(index: int = 0) -> Frame:
        return vision_frame(images, attention, baseline, index)

    return Explorer(frame, [Slider("index", list(range(len(images))), default=0, label="held-out image")],
                    title="Soft spatial attention on held-out images")


OBJECT_COLOURS = {"purple": "#9467bd", "green": "#2ca02c", "blue": "#1f77b4", "orange": "#ff7f0e"}
"""How each of :data:`attnmarl.relational.COLOURS` is drawn."""

ENTITY_LABELS = ["self"] + [colour[0] for colour in relational.COLOURS]
"""The agent's tokens as the heatmaps name them: itself, then each object by its colour's initial (as in the
arena; whole names do not fit a heatmap's cells)."""


@dataclass
class FetchEpisode:
    """One greedy episode: agent positions (T + 1, 2), object positions (K, 2), the goal colour, alpha^0
    (T + 1, K + 1) at every step (the last one after the final move) and the step at which it ended."""

    agent: np.ndarray
    objects: np.ndarray
    goal: int
    alpha: np.ndarray
    end: int


def fetch_episode(agent: relational.RelationalAgent, layout: int, goal: int) -> FetchEpisode:
    """Play the greedy policy on layout ``layout`` (its objects and start drawn from that seed) with goal
    colour ``goal`` (0 … K - 1, whatever the layout drew). If that colour's object lies closer than MIN_START
    to the start, the agent starts in the corner farthest from it instead."""
    goal = check_index("goal", goal, relational.K, "colour index")
    state = relational.reset(1, torch.Generator().manual_seed(check_seed(layout, "layout")))
    state.goal[0] = goal
    if state.distance()[0] < relational.MIN_START:  # the chosen goal's object is too close: start in the far corner
        state.agent[0] = -0.9 * torch.where(state.goal_position()[0] >= 0, 1.0, -1.0)
    with torch.no_grad():
        out = relational.rollout(agent, state, greedy=True)
        _, last = agent(relational.tokens(relational.FetchState(out["agent"][-1], state.objects, state.goal,
                                                                 out["done"])))
    alpha = torch.cat([out["alpha"][:, 0], last]).numpy()
    return FetchEpisode(out["agent"][:, 0].numpy(), state.objects[0].numpy(), goal, alpha,
                        int(out["running"][:, 0].sum()))


def fetch_frame(episode: FetchEpisode, t: int = 0) -> Frame:
    """Step t of an episode: the arena (objects ringed by alpha^0, the goal object named) and alpha^0."""
    t = check_index("t", t, relational.HORIZON + 1, "step")
    t = min(t, episode.end)
    names = list(relational.COLOURS)
    labels = ["agent"] + [f"{n}{'★' if j == episode.goal else ''}" for j, n in enumerate(ENTITY_LABELS[1:])]
    arena = Arena(np.vstack([episode.agent[t], episode.objects]), [0.07] + [0.1] * relational.K,
                  ["#555555"] + [OBJECT_COLOURS[n] for n in names], labels,
                  emphasis=np.clip(episode.alpha[t], 0.0, 1.0), focus=0,
                  title=f"goal: {names[episode.goal]} (★), step {t}", lim=1.15)
    row = Heatmap(episode.alpha[t][None], ["agent"], ENTITY_LABELS, title="α⁰: the agent's row",
                  xlabel="entity (key): self, p, g, b, o", ylabel="query")
    status = "reached" if t == episode.end and episode.end < relational.HORIZON else "on its way"
    return Frame([arena, row], caption=f"weight on the goal object: {episode.alpha[t][episode.goal + 1]:.2f}; "
                                       f"{status} (episode length {episode.end} steps)")


def fetch_explorer(agent: relational.RelationalAgent, layouts: int = 6) -> Explorer:
    """Choose a layout, a goal colour and a step; the agent's attention follows the goal."""
    episodes = {(layout, colour): fetch_episode(agent, layout, goal)
                for layout in range(layouts) for goal, colour in enumerate(relational.COLOURS)}

    def frame(layout: int = 0, goal: str = relational.COLOURS[0], t: int = 0) -> Frame:
        return fetch_frame(episodes[(layout, goal)], t)

    return Explorer(frame, [
        Slider("layout", list(range(layouts)), default=0, label="layout"),
        Dropdown("goal", list(relational.COLOURS), label="goal colour"),
        Slider("t", list(range(relational.HORIZON + 1)), default=0, label="step t"),
    ], title="Where the relational agent looks: α⁰ over the objects")
