"""The episode explorer of "Multi-agent RL on MPE": its frames show real mpe2 episodes.

Each check replays the explorer's episode in a fresh mpe2 environment (same seed, same scripted
policy) and compares, step by step, what the frames draw with what mpe2 holds: entity positions,
radii and colours in the arena; every number of agent i's observation in the token heatmap.
"""
from __future__ import annotations

import base64
import gzip
import json
import re

import numpy as np
import pytest

from attnmarl.envs import entity_tokens, make_reference, token_layout
from attnmarl.notebook.explorers.mpe import (
    SCENARIOS,
    agent_choices,
    arena_panel,
    choice_label,
    episode_explorer,
    episode_frame,
    feature_legend,
    long_label,
    record_episode,
    scenario_text,
    scripted_policy,
    short_label,
    token_table,
)
from attnmarl.notebook.viz import Arena, Heatmap, Text, animation_html

STEPS = 25  # max_cycles of all three scenarios


SYMBOLS = {"vel_": "v", "pos_": "p", "c_": "cm", "holding_": "h", "deposit_": "D", "type_": "T"}


def display_name(feature: str) -> str:
    """The heatmap's column label of a feature: a short symbol that fits a cell (``vel_x`` → ``vx``)."""
    for stem, symbol in SYMBOLS.items():
        if feature.startswith(stem):
            return symbol + feature[len(stem):]
    assert feature in ("dx", "dy"), feature
    return feature


def replay(scenario: str):
    """The explorer's episode replayed in a fresh mpe2 env: yields (t, env, obs dict, rewards)."""
    env = make_reference(scenario, **SCENARIOS[scenario])
    policy = scripted_policy(scenario, **SCENARIOS[scenario])
    obs, _ = env.reset(seed=0)
    rewards = dict.fromkeys(env.possible_agents, 0.0)
    t = 0
    while True:
        yield t, env, obs, rewards
        if not env.agents:
            return
        obs, rewards, *_ = env.step(policy(obs))
        t += 1


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_arena_shows_the_mpe2_world_at_step_t(scenario: str) -> None:
    steps_seen = 0
    for t, env, _, _ in replay(scenario):
        world = env.unwrapped.world
        shown = [e for e in world.entities if getattr(e, "alive", True)]
        arena = episode_frame(scenario, t, 0).panels[0]
        assert isinstance(arena, Arena)
        np.testing.assert_allclose(arena.xy, [e.state.p_pos for e in shown], rtol=0, atol=1e-12)
        np.testing.assert_allclose(arena.radius, [e.size for e in shown])
        expected_colors = ["#" + "".join(f"{int(200 * c):02x}" for c in e.color) for e in shown]
        assert arena.colors == expected_colors  # mpe2 draws entity.color * 200
        assert arena.focus == 0  # agent 0, ringed
        assert np.all(np.abs(arena.xy) + np.asarray(arena.radius)[:, None] <= arena.lim)  # all in view
        steps_seen += 1
    assert steps_seen == STEPS + 1


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_token_heatmap_holds_every_number_of_the_mpe2_observation(scenario: str) -> None:
    for t, env, obs, _ in replay(scenario):
        for i, agent in enumerate(env.possible_agents):
            heatmap = episode_frame(scenario, t, i).panels[1]
            assert isinstance(heatmap, Heatmap)
            layout = token_layout(scenario, agent, **SCENARIOS[scenario])
            rebuilt = np.full(layout.obs_dim, np.nan)
            covered = np.zeros(heatmap.values.shape, dtype=bool)
            for row, (columns, features) in enumerate(zip(layout.columns, layout.features)):
                for column, feature in zip(columns, features):
                    col = heatmap.cols.index(display_name(feature))
                    rebuilt[column] = heatmap.values[row, col]
                    covered[row, col] = True
            np.testing.assert_array_equal(rebuilt, obs[agent].astype(float))
            assert np.all(heatmap.values[~covered] == 0.0)  # features a token lacks are drawn as 0
            assert heatmap.rows[0] == f"{long_label(agent)} (self)"
            assert heatmap.vmin == -heatmap.vmax and np.abs(heatmap.values).max() <= heatmap.vmax


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_recorded_episode_equals_the_mpe2_episode(scenario: str) -> None:
    episode = record_episode(scenario, seed=0, **SCENARIOS[scenario])
    assert episode.steps == STEPS and episode.agents == tuple(make_reference(scenario).possible_agents)
    for t, _, obs, rewards in replay(scenario):
        for i, agent in enumerate(episode.agents):
            np.testing.assert_array_equal(episode.obs[t, i, : len(obs[agent])], obs[agent])
            assert episode.rewards[t, i] == rewards[agent]
        caption = episode_frame(scenario, t, 0).caption
        assert (f"r¹ = {rewards[episode.agents[0]]:+.2f}" in caption) == (t > 0)


def test_scripted_episodes_show_what_the_chapter_says_happens() -> None:
    """simple_spread: greedy covers the landmarks; simple_tag: the adversaries catch the good agent;
    collect_treasure: treasures are picked up (they vanish from the arena), shared rewards of +5."""
    spread = record_episode("simple_spread", **SCENARIOS["simple_spread"])
    final = spread.positions[-1]
    agents, landmarks = final[:3], final[3:]
    assert np.linalg.norm(agents[:, None] - landmarks[None], axis=-1).min(axis=0).max() < 0.1
    tag = record_episode("simple_tag")
    assert tag.rewards[:, :3].max() >= 10 and tag.rewards[:, 3].min() <= -10
    treasure = record_episode("collect_treasure")
    assert (~treasure.visible).any() and treasure.rewards.max() > 4.5  # +5 minus shaping
    hidden_step = int(np.flatnonzero((~treasure.visible).any(axis=1))[0])
    assert len(arena_panel(treasure, hidden_step).labels) < len(treasure.entities)


def test_token_table_puts_each_feature_in_its_named_column() -> None:
    obs = np.arange(1, 19, dtype=np.float32)
    values, rows, cols = token_table(entity_tokens("simple_spread", obs, "agent_1", N=3))
    assert rows == ["agent 2 (self)", "landmark 1", "landmark 2", "landmark 3", "agent 1", "agent 3"]
    assert cols == ["vx", "vy", "px", "py", "dx", "dy", "cm0", "cm1"]
    assert feature_legend(cols) == "v = velocity, p = position, d = offset to the entity, cm = message (comm channel)"
    np.testing.assert_array_equal(values[0, :4], [1, 2, 3, 4])
    np.testing.assert_array_equal(values[1], [0, 0, 0, 0, 5, 6, 0, 0])
    np.testing.assert_array_equal(values[5], [0, 0, 0, 0, 13, 14, 17, 18])  # p_2 - p_1, then c_2
    _, _, treasure_cols = token_table(entity_tokens("collect_treasure", np.zeros(86), "collector_0"))
    assert treasure_cols == ["px", "py", "vx", "vy", "h0", "h1", "dx", "dy", "D0", "D1", "T0", "T1"]
    assert "h = holding type" in feature_legend(treasure_cols)


def test_an_agent_index_beyond_the_scenario_says_so() -> None:
    frame = episode_frame("simple_spread", 3, 5)
    assert isinstance(frame.panels[0], Arena) and isinstance(frame.panels[1], Text)
    assert "m = 3 agents" in frame.panels[1].text and "3: a3 (agent_2)" in frame.panels[1].text
    assert frame.panels[1].title == "there is no agent 6"
    assert isinstance(episode_frame("collect_treasure", 3, 7).panels[1], Heatmap)


@pytest.mark.parametrize("call, message", [
    (lambda: episode_frame("simple_adversary", 0, 0), "unknown scenario"),
    (lambda: episode_frame("simple_spread", STEPS + 1, 0), "t must be"),
    (lambda: episode_frame("simple_spread", -1, 0), "t must be"),
    (lambda: episode_frame("simple_spread", 2.5, 0), "t must be"),
    (lambda: episode_frame("simple_spread", 0, -1), "agent index"),
    (lambda: scripted_policy("simple_push"), "no scripted policy"),
    (lambda: token_table(entity_tokens("simple_spread", np.zeros((2, 18)), 0, N=3)), "one observation"),
])
def test_bad_input_is_a_value_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_explorer_live_face_follows_its_controls() -> None:
    explorer = episode_explorer()
    explorer.live()
    assert [c.name for c in explorer.controls] == ["agent", "t"]
    assert explorer.controls[1].values == list(range(STEPS + 1))
    first = explorer.frame
    explorer.widgets["t"].value = 20
    assert explorer.frame["panels"][0]["xy"] != first["panels"][0]["xy"]
    # agents are numbered from 1 in the explorer: the 7th of collect_treasure is deposit_0
    explorer.widgets["agent"].value = "collect_treasure, i = 7: d1 (deposit_0)"
    heatmap = explorer.frame["panels"][1]
    assert heatmap["rows"][0] == "deposit 1 (self)" and len(heatmap["rows"]) == 14


def test_explorer_offers_only_agents_that_exist_in_their_scenario() -> None:
    """One menu entry per agent of each scenario (3 + 4 + 8): no choice leads to "there is no agent"."""
    choices = agent_choices()
    sizes = {s: len(record_episode(s, seed=0, **kwargs).agents) for s, kwargs in SCENARIOS.items()}
    assert sorted(choices.values()) == sorted((s, k) for s, m in sizes.items() for k in range(m))
    explorer = episode_explorer()
    for name in explorer.controls[0].values:
        frame = explorer.frame_fn(agent=name, t=3)
        assert isinstance(frame.panels[1], Heatmap), name
    with pytest.raises(ValueError, match="unknown agent"):
        explorer.frame_fn(agent="simple_spread, i = 4: a4 (agent_3)", t=3)


def test_explorer_static_face_embeds_every_combination_and_stays_small() -> None:
    markup = episode_explorer().static_html()
    assert len(markup) < 1_000_000
    payload = re.search(r'type="application/octet-stream" id="[^"]+">([^<]+)<', markup).group(1)
    spec = json.loads(gzip.decompress(base64.b64decode(payload)))
    counts = [len(c["values"]) for c in spec["controls"]]
    assert counts == [3 + 4 + 8, STEPS + 1] and len(spec["frames"]) == 15 * (STEPS + 1)
    # frame order: itertools.product of (agent, t), the last control fastest
    agent = list(agent_choices()).index("simple_tag, i = 4: a1 (agent_0)")
    index = agent * (STEPS + 1) + 9
    expected = episode_frame("simple_tag", 9, 3)
    assert spec["frames"][index]["caption"] == expected.caption
    np.testing.assert_allclose(spec["frames"][index]["panels"][0]["xy"], expected.panels[0].xy, atol=1e-3)


def test_animation_player_needs_no_network() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation

    fig, ax = plt.subplots()
    image = ax.imshow(np.zeros((4, 4)))
    animation = FuncAnimation(fig, lambda t: [image.set_data(np.full((4, 4), t)) or image], frames=3)
    markup = animation_html(animation)
    plt.close(fig)
    assert "http" not in markup and "fa-" not in markup
    assert markup.count("data:image/png;base64") == 3 and "<button" in markup


def test_animation_frames_are_stored_with_few_colours() -> None:
    """The player embeds every frame: each is re-encoded with at most ANIMATION_COLOURS colours, and the page
    carries a fraction of matplotlib's bytes."""
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation
    from PIL import Image

    from attnmarl.notebook.viz import ANIMATION_COLOURS

    fig, ax = plt.subplots()
    discs = [ax.add_patch(plt.Circle((0.2 * k, 0.5), 0.08, color=f"C{k}")) for k in range(4)]
    animation = FuncAnimation(fig, lambda t: [d.set_center((0.2 * k + 0.02 * t, 0.5)) for k, d in enumerate(discs)],
                              frames=4)
    plain, markup = animation.to_jshtml(), animation_html(animation)
    plt.close(fig)
    frames = re.findall(r'frames\[\d+\] = "data:image/png;base64,([^"]+)"', markup)
    assert len(frames) == 4 and len(markup) < 0.6 * len(plain)
    for frame in frames:
        colours = Image.open(io.BytesIO(base64.b64decode(frame))).convert("RGB").getcolors(1024)
        assert colours is not None and len(colours) <= ANIMATION_COLOURS


def test_readers_see_entities_numbered_from_1_like_the_formulas() -> None:
    names = ("agent_0", "landmark 1", "adversary_2", "deposit_0", "treasure_9")
    assert [short_label(n) for n in names] == ["a1", "L2", "A3", "d1", "t10"]
    assert [long_label(n) for n in names] == ["agent 1", "landmark 2", "adversary 3", "deposit 1", "treasure 10"]
    assert long_label("nearest_treasure_0") == "nearest treasure 1" and long_label("self") == "self"
    assert choice_label("agent_0") == "a1 (agent_0)"
    spread = record_episode("simple_spread", seed=0, **SCENARIOS["simple_spread"])
    assert arena_panel(spread, 0).labels == ["a1", "a2", "a3", "L1", "L2", "L3"]


def test_scenario_text_reads_the_arguments_as_words() -> None:
    assert scenario_text("simple_spread", {"N": 6}) == "simple_spread, m = 6"
    assert scenario_text("collect_treasure", {"num_collectors": 10, "num_deposits": 2, "num_treasures": 1}) == (
        "collect_treasure, 10 collectors, 2 deposits, 1 treasure")
    assert scenario_text("simple_tag", {}) == "simple_tag"
    assert scenario_text("simple_tag", {"continuous_actions": True}) == "simple_tag, continuous_actions = True"
