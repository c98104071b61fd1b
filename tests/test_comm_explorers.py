"""Chapter 11's explorers: who listens to whom (attnmarl.notebook.explorers.comm) and which agents the Qatten
mixer credits (attnmarl.notebook.explorers.mix), on untrained agents (the shapes and the bookkeeping; the chapter
shows trained ones)."""
from __future__ import annotations

import base64
import gzip
import json
import re

import numpy as np
import pytest
import torch

from attnmarl.algos import mappo, qmix
from attnmarl.envs.sight import visibility
from attnmarl.notebook.explorers.comm import (
    DISTANCE_BINS,
    SIGHT_DISC,
    listening_episode,
    listening_explorer,
    listening_frame,
    listening_profile,
)
from attnmarl.notebook.explorers.mix import credit_episode, credit_explorer, credit_frame
from attnmarl.train import CONFIGS


def comm_agent(name: str):
    torch.manual_seed(0)
    config = CONFIGS[name]
    return mappo.make_agent(config), config


def static_frames(markup: str) -> list[dict]:
    payload = re.search(r'type="application/octet-stream" id="[^"]+">([^<]+)<', markup).group(1)
    return json.loads(gzip.decompress(base64.b64decode(payload)))["frames"]


def test_listening_records_each_rounds_alpha_and_what_each_agent_sees():
    agent, config = comm_agent("comm-spread3-attention-2rounds")
    listening = listening_episode(agent, config, seed=0)
    steps = listening.episode.steps + 1
    assert listening.alpha.shape == (steps, 2, 3, 3) and listening.seen.shape == (steps, 3, 5)
    np.testing.assert_allclose(listening.alpha.sum(-1), 1.0, atol=1e-6)
    with torch.no_grad():  # the same alpha as the actor computes on the recorded observations
        _, alpha = agent.actor.outputs_and_alpha(torch.from_numpy(listening.episode.obs[7:8]).float())
    np.testing.assert_allclose(listening.alpha[7], alpha[0].numpy(), atol=1e-6)
    assert (listening.seen == visibility(listening.episode.obs, config.sight_radius)).all()


def test_averaged_messages_are_uniform_and_an_actor_without_messages_is_refused():
    agent, config = comm_agent("comm-spread3-mean")
    np.testing.assert_allclose(listening_episode(agent, config).alpha, 1 / 3)
    agent, config = comm_agent("comm-spread3-none")
    with pytest.raises(ValueError, match="without messages"):
        listening_episode(agent, config)
    agent, config = comm_agent("sight-spread3-entity")
    with pytest.raises(ValueError, match="communicating actor"):
        listening_episode(agent, config)


def test_the_listening_profile_averages_alpha_over_the_pairs_by_what_the_sender_sees_and_how_far_it_is():
    """By hand from two recorded episodes (round 2 of a two-round actor): every pair (t, i, j != i) falls in one
    group of each kind, each group's mean is its pairs' mean alpha, and the averaged control gives 1/m."""
    agent, config = comm_agent("comm-spread3-attention-2rounds")
    profile = listening_profile(agent, config, episodes=2, seed=5, round_=1)
    alpha, seen, distance, own = [], [], [], []
    for seed in (5, 6):
        listening = listening_episode(agent, config, seed)
        p = listening.episode.positions[:, :3]
        for t in range(listening.alpha.shape[0]):
            for i in range(3):
                own.append(listening.alpha[t, 1, i, i])
                for j in set(range(3)) - {i}:
                    alpha.append(listening.alpha[t, 1, i, j])
                    seen.append(listening.seen[t, j, :3].sum())
                    distance.append(np.linalg.norm(p[t, j] - p[t, i]))
    alpha, seen, distance = map(np.array, (alpha, seen, distance))
    assert profile["count_seen"].sum() == profile["count_distance"].sum() == len(alpha)
    for k in range(4):
        assert profile["count_seen"][k] == (seen == k).sum()
        if (seen == k).any():
            assert profile["by_seen"][k] == pytest.approx(alpha[seen == k].mean())
    for b, (low, high) in enumerate(zip(DISTANCE_BINS[:-1], DISTANCE_BINS[1:])):
        group = (distance >= low) & (distance < high)
        assert profile["count_distance"][b] == group.sum()
        if group.any():
            assert profile["by_distance"][b] == pytest.approx(alpha[group].mean())
    assert profile["self"] == pytest.approx(np.mean(own))
    agent, config = comm_agent("comm-spread3-mean")
    uniform = listening_profile(agent, config, episodes=1)
    np.testing.assert_allclose(uniform["by_distance"][uniform["count_distance"] > 0], 1 / 3, rtol=1e-6)
    with pytest.raises(ValueError, match="round_"):
        listening_profile(agent, config, episodes=1, round_=1)
    with pytest.raises(ValueError, match="episodes"):
        listening_profile(agent, config, episodes=0)


def test_the_frame_rings_the_senders_by_the_receivers_alpha_inside_its_sight_disc():
    agent, config = comm_agent("comm-spread6-attention")
    listening = listening_episode(agent, config, seed=1)
    t, receiver = 9, 4
    arena, matrix = listening_frame(listening, t, receiver).panels
    row = listening.alpha[t, 0, receiver]
    assert arena.colors[0] == SIGHT_DISC and arena.radius[0] == config.sight_radius and arena.labels[0] == ""
    np.testing.assert_allclose(arena.xy[0], listening.episode.positions[t, receiver])
    np.testing.assert_allclose(arena.emphasis[1:7], row / row.max())  # the six agents, then no rings on landmarks
    assert not any(arena.emphasis[7:]) and arena.focus == receiver + 1
    np.testing.assert_allclose(matrix.values, listening.alpha[t, 0])
    caption = listening_frame(listening, t, receiver).caption
    seen = listening.seen[t, receiver]
    assert f"sees {seen[:6].sum()} of 6 landmarks and {seen[6:].sum()} of 5 agents" in caption
    with pytest.raises(ValueError, match="round"):
        listening_frame(listening, t, receiver, round_=1)


def test_the_listening_explorer_offers_rounds_only_when_there_are_two_and_embeds_every_frame():
    one = listening_explorer(*comm_agent("comm-spread3-attention"))
    two = listening_explorer(*comm_agent("comm-spread3-attention-2rounds"))
    assert [c.name for c in one.controls] == ["t", "receiver"]
    assert [c.name for c in two.controls] == ["t", "receiver", "round_"]
    assert len(static_frames(two.static_html())) == 26 * 3 * 2


def qatten_agent(mixer: str = "qatten"):
    torch.manual_seed(0)
    config = CONFIGS[f"qmix-spread3-{mixer}"]
    return qmix.make_agent(config), config


def test_the_credit_frame_rings_each_agent_by_its_mean_lambda():
    agent, config = qatten_agent()
    credit = credit_episode(agent, config, seed=2)
    np.testing.assert_allclose(credit.lambda_.sum(-1), 1.0, atol=1e-6)
    arena, per_head, values = credit_frame(credit, 12).panels
    mean = credit.lambda_[12].mean(0)
    np.testing.assert_allclose(arena.emphasis[:3], mean / mean.max())
    assert not any(arena.emphasis[3:])
    np.testing.assert_allclose(per_head.values[-1], mean)
    np.testing.assert_allclose(values.values[0], credit.Q[12])
    assert f"Q_tot = {credit.Q_tot[12]:.2f}" in credit_frame(credit, 12).caption
    assert len(static_frames(credit_explorer(agent, config).static_html())) == 26


def test_vdn_and_qmix_have_no_lambda_to_show():
    agent, config = qatten_agent("vdn")
    credit = credit_episode(agent, config)
    assert credit.lambda_ is None
    with pytest.raises(ValueError, match="VDN and QMIX"):
        credit_frame(credit)
    with pytest.raises(ValueError, match="'vdn'"):
        credit_explorer(agent, config)
