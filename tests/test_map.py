"""Chapter 5's library: the marked-digit task and its two CNNs, the fetch task and its relational agent,
and their explorers. The two trainings run once per session (module fixtures), on one thread."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnmarl import relational, vision
from attnmarl.notebook.explorers.map import (
    fetch_episode,
    fetch_explorer,
    fetch_frame,
    glimpse_box,
    overlay,
    vision_explorer,
    vision_frame,
)
from attnmarl.notebook.viz import Arena, Heatmap, Picture

VISION_STEPS = 200            # about 80% held-out accuracy with attention (see the margin test)
RELATIONAL_UPDATES = 70


@pytest.fixture(scope="module")
def vision_models():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield (vision.train(True, steps=VISION_STEPS, progress=False)["model"],
               vision.train(False, steps=VISION_STEPS, progress=False)["model"])
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def fetch_agent():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield relational.train(True, updates=RELATIONAL_UPDATES, progress=False)["agent"]
    finally:
        torch.set_num_threads(threads)


# ---- the marked-digit task ------------------------------------------------------------------------

def test_images_hold_one_framed_target_and_distinct_distractors():
    batch = vision.make_images(50, seed=3)
    assert batch.images.shape == (50, 1, vision.SIZE, vision.SIZE)
    assert batch.images.min() >= 0 and batch.images.max() <= 1
    assert all(len(set(row.tolist())) == vision.N_DIGITS for row in batch.classes)  # all different
    assert torch.equal(batch.labels, batch.classes[:, 0])
    mask = batch.target_mask()
    assert (mask.sum((1, 2)) == 9 * 7).all()
    for b in range(5):  # the frame: full border of the target's box, at FRAME_INK
        r, c = batch.boxes[b, 0].tolist()
        border = batch.images[b, 0, r:r + 9, c:c + 7].clone()
        border[1:-1, 1:-1] = vision.FRAME_INK
        assert (border >= vision.FRAME_INK - 1e-6).all()
    boxes = batch.boxes.numpy()  # boxes of one image never overlap
    for b in range(50):
        for i in range(vision.N_DIGITS):
            for j in range(i + 1, vision.N_DIGITS):
                (r1, c1), (r2, c2) = boxes[b, i], boxes[b, j]
                assert abs(r1 - r2) >= 9 or abs(c1 - c2) >= 7
    again = vision.make_images(50, seed=3)
    assert torch.equal(again.images, batch.images) and not torch.equal(vision.make_images(50, seed=4).images,
                                                                         batch.images)


@pytest.mark.parametrize("attention", [True, False])
def test_alpha_is_a_distribution_over_positions_and_c_its_weighted_mean(attention):
    torch.manual_seed(0)
    model = vision.SpatialAttentionCNN(attention)
    images = vision.make_images(4, seed=0).images
    logits, alpha = model(images)
    assert logits.shape == (4, vision.N_CLASSES) and alpha.shape == (4, vision.SIZE, vision.SIZE)
    torch.testing.assert_close(alpha.sum((1, 2)), torch.ones(4))
    assert (alpha >= 0).all()
    f = model.features(images)
    torch.testing.assert_close(logits, model.classify((f * alpha.unsqueeze(1)).sum((2, 3))))
    if not attention:
        torch.testing.assert_close(alpha, torch.full_like(alpha, 1 / vision.SIZE ** 2))


def test_trained_attention_beats_average_pooling_on_held_out_images(vision_models):
    """The stated margin: after the same 200 steps, soft spatial attention is at least 0.4 more accurate than
    average pooling on 500 held-out images (measured: about 0.8 against 0.15; chance is 0.1), puts most of its
    weight inside the target's frame, and its argmax glimpse lands inside the frame."""
    attentive, averaging = vision_models
    held_out = vision.make_images(500, seed=7)
    with torch.no_grad():
        logits, alpha = attentive(held_out.images)
        average, _ = averaging(held_out.images)
        glimpse, where = vision.glimpse_logits(attentive, held_out.images)
    with_attention = vision.accuracy(logits, held_out.labels)
    without = vision.accuracy(average, held_out.labels)
    assert with_attention >= without + 0.4, (with_attention, without)
    inside = held_out.target_mask()
    assert (alpha * inside).sum((1, 2)).mean() > 0.8
    assert inside[torch.arange(500), where[:, 0], where[:, 1]].float().mean() > 0.9
    assert vision.accuracy(glimpse, held_out.labels) > without + 0.3


@pytest.mark.parametrize("row, col", [(10, 13), (0, 5), (23, 22)])
def test_the_glimpse_box_is_exactly_the_pixels_the_glimpsed_feature_vector_sees(row, col):
    """The box drawn for a glimpse is the receptive field of f_p: the pixels whose change can change f_p
    (found by autograd, with a trunk whose weights are all positive, so no gradient cancels)."""
    torch.manual_seed(0)
    model = vision.SpatialAttentionCNN()
    with torch.no_grad():
        for p in model.trunk.parameters():
            p.abs_().add_(0.01)
    images = torch.rand(1, 1, vision.SIZE, vision.SIZE, requires_grad=True)
    model.features(images)[0, :, row, col].sum().backward()
    seen = images.grad[0, 0] != 0
    top, left, height, width = glimpse_box(row, col)
    drawn = torch.zeros_like(seen)
    drawn[top:top + height, left:left + width] = True
    assert torch.equal(seen, drawn)
    assert glimpse_box(10, 13) == (7, 10, vision.RECEPTIVE_FIELD, vision.RECEPTIVE_FIELD)


def test_vision_bad_input_is_a_value_error():
    model = vision.SpatialAttentionCNN()
    with pytest.raises(ValueError, match="shape"):
        model(torch.zeros(2, 3, vision.SIZE, vision.SIZE))
    with pytest.raises(ValueError, match="NaN"):
        model(torch.full((1, 1, vision.SIZE, vision.SIZE), float("nan")))
    with pytest.raises(ValueError, match="n must be"):
        vision.make_images(0, seed=0)
    with pytest.raises(ValueError, match="seed"):
        vision.make_images(2, seed=-1)
    with pytest.raises(ValueError, match="n_digits"):
        vision.make_images(2, seed=0, n_digits=7)
    with pytest.raises(ValueError, match="steps"):
        vision.train(True, steps=0)
    with pytest.raises(ValueError, match="no alpha"):
        vision.glimpse_logits(vision.SpatialAttentionCNN(attention=False), torch.zeros(1, 1, vision.SIZE, vision.SIZE))
    with pytest.raises(ValueError, match="channels"):
        vision.SpatialAttentionCNN(channels=0)


def test_the_vision_explorer_shows_the_image_alpha_and_both_models(vision_models):
    attentive, averaging = vision_models
    gallery = vision.make_images(4, seed=8)
    frame = vision_frame(gallery, attentive, averaging, 1)
    image, attended, probs = frame.panels
    assert isinstance(image, Picture) and isinstance(attended, Picture) and isinstance(probs, Heatmap)
    np.testing.assert_allclose(image.rgb[..., 0], gallery.images[1, 0].numpy(), atol=1e-6)
    np.testing.assert_allclose(probs.values.sum(1), [1.0, 1.0], atol=1e-5)
    assert len(attended.boxes) == 1 and f"label {int(gallery.labels[1])}" in frame.caption
    explorer = vision_explorer(gallery, attentive, averaging)
    assert explorer.update(index=0) != explorer.update(index=3)
    with pytest.raises(ValueError, match="index"):
        vision_frame(gallery, attentive, averaging, 4)
    with pytest.raises(ValueError, match="same shape"):
        overlay(np.zeros((3, 3)), np.zeros((3, 4)))


def test_overlay_paints_the_most_attended_pixel_pure_red():
    alpha = np.zeros((4, 4))
    alpha[1, 2] = 0.5
    painted = overlay(np.full((4, 4), 0.4), alpha)
    np.testing.assert_allclose(painted[1, 2], [0.85, 0.1, 0.1])
    np.testing.assert_allclose(painted[0, 0], [0.3, 0.3, 0.3])


# ---- the fetch task -------------------------------------------------------------------------------

def test_tokens_and_steps_follow_the_task():
    state = relational.reset(64, torch.Generator().manual_seed(0))
    assert (state.distance() >= relational.MIN_START).all()
    x = relational.tokens(state)
    assert x.shape == (64, relational.K + 1, 3 + relational.K)
    torch.testing.assert_close(x[:, 1:, 1:3], state.objects - state.agent.unsqueeze(1))
    assert torch.equal(x[:, 0, 3:].argmax(-1), state.goal)
    toward = state.goal_position() - state.agent          # the move that best reduces the distance
    actions = torch.where(toward[:, 0].abs() > toward[:, 1].abs(), (toward[:, 0] < 0).long(),
                          2 + (toward[:, 1] < 0).long())
    moved, reward = relational.step(state, actions)
    assert (reward > 0).all() and (moved.distance() < state.distance()).all()
    state.agent = state.goal_position() - torch.tensor([relational.STEP, 0.0])   # one move (+x) away
    inside = state.agent[:, 0] >= -1.0                                           # (not pushed back by the wall)
    state.agent = state.agent.clamp(-1.0, 1.0)
    done, reward = relational.step(state, torch.zeros(64, dtype=torch.long))
    reached = done.done
    assert reached[inside].all() and inside.sum() > 40   # the move lands on the goal: distance STEP -> 0
    torch.testing.assert_close(reward[inside], torch.full((int(inside.sum()),), 1.0 + relational.STEP))
    after, reward = relational.step(done, torch.ones(64, dtype=torch.long))
    assert (reward[reached] == 0).all() and torch.equal(after.agent[reached], done.agent[reached])


def test_the_agents_alpha_is_a_distribution_and_the_baseline_is_uniform():
    torch.manual_seed(0)
    x = relational.tokens(relational.reset(8, torch.Generator().manual_seed(1)))
    for attention in (True, False):
        logits, alpha = relational.RelationalAgent(attention)(x)
        assert logits.shape == (8, len(relational.MOVES)) and alpha.shape == (8, relational.K + 1)
        torch.testing.assert_close(alpha.sum(-1), torch.ones(8))
    torch.testing.assert_close(alpha, torch.full_like(alpha, 1 / (relational.K + 1)))


def test_the_trained_agent_looks_at_the_goal_and_reaches_it_more_often(fetch_agent):
    trained = relational.evaluate(fetch_agent, episodes=500)
    untrained = relational.evaluate(relational.RelationalAgent(), episodes=500, greedy=False)
    assert trained["success"] > untrained["success"] + 0.2, (trained, untrained)
    assert trained["alpha_goal"] > 2 * trained["alpha_other"], trained
    goal_weights = [fetch_episode(fetch_agent, layout=0, goal=g).alpha[0, g + 1] for g in range(relational.K)]
    other = [fetch_episode(fetch_agent, layout=0, goal=g).alpha[0, 1 + (g + 1) % relational.K]
             for g in range(relational.K)]
    assert np.mean(goal_weights) > 2 * np.mean(other)   # same layout, other goal: the weight moves with it


def test_fetch_explorer_draws_the_arena_ringed_by_alpha(fetch_agent):
    episode = fetch_episode(fetch_agent, layout=2, goal=3)
    frame = fetch_frame(episode, t=0)
    arena, row = frame.panels
    assert isinstance(arena, Arena) and isinstance(row, Heatmap)
    np.testing.assert_allclose(arena.emphasis, episode.alpha[0], atol=1e-6)
    assert arena.focus == 0 and "★" in arena.labels[4]
    assert fetch_frame(episode, t=relational.HORIZON).panels[0].xy[0].tolist() == episode.agent[episode.end].tolist()
    explorer = fetch_explorer(fetch_agent, layouts=2)
    assert explorer.update(goal="green", t=3) != explorer.update(goal="blue", t=3)


def test_relational_bad_input_is_a_value_error(fetch_agent):
    with pytest.raises(ValueError, match="tokens must have shape"):
        relational.RelationalAgent()(torch.zeros(2, 3, 3 + relational.K))
    with pytest.raises(ValueError, match="NaN"):
        relational.RelationalAgent()(torch.full((1, relational.K + 1, 3 + relational.K), float("nan")))
    state = relational.reset(2, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="actions must lie"):
        relational.step(state, torch.tensor([0, 4]))
    with pytest.raises(ValueError, match="long tensor"):
        relational.step(state, torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="batch"):
        relational.reset(0, torch.Generator())
    with pytest.raises(ValueError, match="updates"):
        relational.train(updates=0)
    with pytest.raises(ValueError, match="goal"):
        fetch_episode(fetch_agent, layout=0, goal=relational.K)
    with pytest.raises(ValueError, match="layout"):
        fetch_episode(fetch_agent, layout=-1, goal=0)
    with pytest.raises(ValueError, match="t must be"):
        fetch_frame(fetch_episode(fetch_agent, layout=0, goal=0), t=relational.HORIZON + 1)
