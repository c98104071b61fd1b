"""Chapter 12's designs and controls on simple_spread with decoys, made trainable.

The entity actor, mean pooling and the flat actor run on the decoy task unchanged (its tokens are in the book's
token machinery), and at d = 0 exactly as on simple_spread. The two controls live inside the actor
(:class:`attnmarl.nets.policies.DecoyView`), so each property is checked on the actor's outputs, in both of the
entity actor's forms, and beside the plain actor with the same weights, which must fail it:

- the oracle hides exactly the decoy slots (alpha = 0 there, > 0 elsewhere), so moving a decoy changes nothing;
- without the bit, swapping a decoy's and a target's bits changes nothing;
- a short MAPPO run trains each design, and its checkpoint plays mpe2's reference through ``load_policy`` with the
  control still applied; bad values of ``decoy_view`` are refused, and so is a checkpoint of another view.
"""
from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np
import pytest
import torch

from attnmarl.algos import mappo
from attnmarl.algos.mappo import load_actor_from, make_agent
from attnmarl.checkpoints import load_agent, load_agent_at, load_policy
from attnmarl.envs import evaluate, make_batched, make_reference, obs_to_array
from attnmarl.envs.decoys import NAME, observation_layout
from attnmarl.nets import Actor, EntityActor
from attnmarl.nets.policies import DecoyActor, DecoyEntityActor, DecoyView
from attnmarl.train import CONFIGS, DECOY_DESIGNS, _actor_variant, run

pytestmark = pytest.mark.usefixtures("one_thread")

M, D = 3, 3
KWARGS = {"N": M, "decoys": D}
LAYOUT = observation_layout(M, D)
OBS_DIM = LAYOUT.obs_dim
DECOY_MIXING = {"entity": "attention", "mean": "mean"}
"""The entity designs' mixing (the flat one has none)."""


def reference_obs(seed: int = 4) -> tuple[torch.Tensor, np.ndarray]:
    """Every agent's observation of one reset of the reference (1, m, obs_dim), and which slots hold decoys
    (m, m + k), from the world's landmark order."""
    env = make_reference(NAME, **KWARGS)
    obs, _ = env.reset(seed=seed)
    is_decoy = env.unwrapped.world.landmark_order >= M
    return torch.from_numpy(obs_to_array(env, obs)).unsqueeze(0), is_decoy


def entity_pair(view: str, mixing: str = "attention") -> tuple[DecoyEntityActor, EntityActor]:
    """An entity actor under ``view`` and the plain one with the same weights."""
    torch.manual_seed(0)
    controlled = DecoyEntityActor(NAME, KWARGS, M, OBS_DIM, 5, view, mixing=mixing)
    plain = EntityActor(NAME, KWARGS, M, OBS_DIM, 5, mixing=mixing)
    plain.load_state_dict(controlled.state_dict())
    return controlled, plain


def flat_pair(view: str) -> tuple[DecoyActor, Actor]:
    torch.manual_seed(0)
    controlled = DecoyActor(NAME, KWARGS, M, OBS_DIM, 5, view)
    plain = Actor(M, OBS_DIM, 5)
    plain.load_state_dict(controlled.state_dict())
    return controlled, plain


def outputs(actor: torch.nn.Module, o: torch.Tensor) -> list[torch.Tensor]:
    """The actor's outputs in every form it has: folded and with alpha (entity), or its one forward (flat)."""
    with torch.no_grad():
        return [actor(o), actor.outputs_and_alpha(o)[0]] if isinstance(actor, EntityActor) else [actor(o)]


# --------------------------------------------------------------------------------------------
# d = 0 is simple_spread
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mixing", ["attention", "mean"])
def test_no_decoys_entity_actor_is_simple_spreads(mixing: str) -> None:
    o = torch.from_numpy(make_batched(NAME, 6, N=3, decoys=0).reset())
    decoys = EntityActor(NAME, {"N": 3, "decoys": 0}, 3, 18, 5, mixing=mixing)
    spread = EntityActor("simple_spread", {"N": 3}, 3, 18, 5, mixing=mixing)
    spread.load_state_dict(decoys.state_dict())
    assert decoys.token_names == spread.token_names
    with torch.no_grad():
        (y, alpha), (y_spread, alpha_spread) = decoys.outputs_and_alpha(o), spread.outputs_and_alpha(o)
        assert torch.equal(decoys(o), spread(o)) and torch.equal(y, y_spread) and torch.equal(alpha, alpha_spread)


def test_no_decoys_mappo_agent_is_simple_spreads() -> None:
    """The whole agent (every design's actor and the attention critic) built from the same seed: the same weights,
    the same outputs on the same observations."""
    o = torch.from_numpy(make_batched("simple_spread", 4, N=3).reset())
    for name in ("decoys0-spread3-entity", "decoys0-spread3-mean", "decoys0-spread3-flat"):
        config = CONFIGS[name]
        spread = replace(config, scenario="simple_spread", scenario_kwargs={"N": 3})
        torch.manual_seed(1)
        ours = make_agent(config)
        torch.manual_seed(1)
        theirs = make_agent(spread)
        with torch.no_grad():
            assert torch.equal(ours.actor(o), theirs.actor(o)) and torch.equal(ours.critic(o), theirs.critic(o)), name


# --------------------------------------------------------------------------------------------
# the oracle
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mixing", ["attention", "mean"])
def test_oracle_hides_exactly_the_decoys(mixing: str) -> None:
    o, is_decoy = reference_obs()
    oracle, plain = entity_pair("oracle", mixing)
    _, alpha = oracle.outputs_and_alpha(o)  # (1, m, l, n): self, m + k slots, m - 1 others
    slots = alpha[0, :, :, 1:1 + LAYOUT.n_landmarks]  # (m, l, m + k)
    hidden = torch.from_numpy(is_decoy)[:, None].expand_as(slots)
    assert is_decoy.sum() == M * M * D
    assert torch.all(slots[hidden] == 0) and torch.all(slots[~hidden] > 0)
    assert torch.all(alpha[0, :, :, 0] > 0) and torch.all(alpha[0, :, :, 1 + LAYOUT.n_landmarks:] > 0)
    masks = oracle.masks(o)[0][0]  # (m, n)
    assert torch.equal(masks[:, 1:1 + LAYOUT.n_landmarks], ~torch.from_numpy(is_decoy))
    assert torch.all(plain.outputs_and_alpha(o)[1] > 0)  # the plain actor weighs every token


def moved_decoys(o: torch.Tensor, is_decoy: np.ndarray, seed: int = 0) -> torch.Tensor:
    """``o`` with every decoy somewhere else in every agent's view (new dx, dy in [-2, 2]; bits kept)."""
    moved = o.clone()
    generator = torch.Generator().manual_seed(seed)
    for i in range(M):
        for slot in np.flatnonzero(is_decoy[i]):
            columns = LAYOUT.landmark_columns[slot, :2]
            moved[0, i, columns] = 4 * torch.rand(2, generator=generator) - 2
    return moved


@pytest.mark.parametrize("actor", ["entity", "mean", "flat"])
def test_oracle_output_ignores_where_the_decoys_are(actor: str) -> None:
    o, is_decoy = reference_obs()
    moved = moved_decoys(o, is_decoy)
    oracle, plain = flat_pair("oracle") if actor == "flat" else entity_pair("oracle", DECOY_MIXING[actor])
    for y, y_moved in zip(outputs(oracle, o), outputs(oracle, moved)):
        assert torch.equal(y, y_moved)
    for y, y_moved in zip(outputs(plain, o), outputs(plain, moved)):
        assert (y - y_moved).abs().max() > 1e-4


def test_flat_oracle_reads_decoy_slots_as_zeros() -> None:
    o, is_decoy = reference_obs()
    view = DecoyView("oracle", NAME, KWARGS, OBS_DIM)
    seen = view.without_decoys(o)[0].numpy()  # (m, obs_dim)
    entries = seen[:, LAYOUT.landmark_columns]  # (m, m + k, 3)
    assert np.all(entries[is_decoy] == 0)
    np.testing.assert_array_equal(entries[~is_decoy], o[0].numpy()[:, LAYOUT.landmark_columns][~is_decoy])
    np.testing.assert_array_equal(seen[:, LAYOUT.agent_start:], o[0, :, LAYOUT.agent_start:].numpy())


# --------------------------------------------------------------------------------------------
# no bit
# --------------------------------------------------------------------------------------------


def swapped_bits(o: torch.Tensor, is_decoy: np.ndarray) -> torch.Tensor:
    """``o`` with, for every agent, its first decoy slot and its first target slot trading ``is_target`` bits."""
    swapped = o.clone()
    for i in range(M):
        decoy, target = np.flatnonzero(is_decoy[i])[0], np.flatnonzero(~is_decoy[i])[0]
        bits = LAYOUT.landmark_columns[[decoy, target], 2]
        swapped[0, i, bits] = o[0, i, bits[::-1].copy()]
    return swapped


@pytest.mark.parametrize("actor", ["entity", "mean", "flat"])
def test_no_bit_output_ignores_which_landmarks_are_targets(actor: str) -> None:
    o, is_decoy = reference_obs()
    swapped = swapped_bits(o, is_decoy)
    assert not torch.equal(o, swapped)
    blind, plain = flat_pair("no-bit") if actor == "flat" else entity_pair("no-bit", DECOY_MIXING[actor])
    before = o.clone()
    for y, y_swapped in zip(outputs(blind, o), outputs(blind, swapped)):
        assert torch.equal(y, y_swapped)
    for y, y_swapped in zip(outputs(plain, o), outputs(plain, swapped)):
        assert (y - y_swapped).abs().max() > 1e-4
    assert torch.equal(o, before)  # the bits are zeroed in the actor's copy, never in the observation


# --------------------------------------------------------------------------------------------
# configs, training, checkpoints
# --------------------------------------------------------------------------------------------


def test_decoy_configs_differ_from_the_entity_run_only_in_their_design() -> None:
    names = [name for name in CONFIGS if name.startswith("decoys")]
    assert len(names) == 3 * (3 + 2 * 5)  # no controls at d = 0
    for name in names:
        d, m, design = int(name[6]), int(name.split("spread")[1].split("-")[0]), name.rsplit("-", 1)[1]
        config, entity = asdict(CONFIGS[name]), asdict(CONFIGS[f"decoys{d}-spread{m}-entity"])
        assert {k for k in config if config[k] != entity[k]} == set(DECOY_DESIGNS[design]), name
        assert config["scenario"] == NAME and config["scenario_kwargs"] == {"N": m, "decoys": d}
        assert config["total_steps"] * m == 12_000_000
        chapter_10 = asdict(CONFIGS["pi-spread6-entity" if m == 6 else f"scale-spread{m}-entity"])
        assert {k for k in entity if entity[k] != chapter_10[k]} == {"scenario", "scenario_kwargs"}
    assert _actor_variant(asdict(CONFIGS["decoys3-spread6-oracle"])) == " (oracle: decoys hidden)"


@pytest.mark.parametrize(("actor", "view"), [("entity", "oracle"), ("entity", "no-bit"), ("flat", "oracle"),
                                             ("flat", "no-bit")])
def test_each_control_trains(actor: str, view: str) -> None:
    """A few updates with finite losses that move every weight matrix of the actor (the mask and the zeroing let
    gradients through to every weight the plain actor trains)."""
    config = replace(CONFIGS["decoys1-spread3-entity"], actor=actor, decoy_view=view, num_envs=4, rollout_steps=5,
                     total_steps=40)
    torch.manual_seed(config.seed)
    before = {k: v.clone() for k, v in make_agent(config).actor.state_dict().items()}
    after = mappo.train(config).actor.state_dict()
    assert all(not torch.equal(before[k], after[k]) for k in before if k.endswith("weight"))


def test_an_oracle_checkpoint_plays_the_reference_with_its_mask(tmp_path) -> None:
    summary = run("decoys1-spread3-oracle", steps=3200, out=tmp_path, evals=1, eval_episodes=2, final_episodes=2,
                  progress=False)
    assert summary["config"]["decoy_view"] == "oracle"
    path = tmp_path / "decoys1-spread3-oracle-seed0.pt"
    agent, config = load_agent(path)
    assert isinstance(agent.actor, DecoyEntityActor) and agent.actor.decoys.view == "oracle"
    mean, _ = evaluate(load_policy(path), NAME, 2, N=3, decoys=1)
    assert np.isfinite(mean)
    wider, _ = load_agent_at(path, N=4, decoys=3)  # zero-shot to another m and d, the mask still on
    o = torch.from_numpy(make_batched(NAME, 2, N=4, decoys=3).reset())
    _, alpha = wider.actor.outputs_and_alpha(o)
    bits = o[..., observation_layout(4, 3).landmark_columns[:, 2]]  # (2, 4, 16)
    assert torch.all((alpha[..., 1:17] == 0) == (bits == 0)[:, :, None])
    with pytest.raises(ValueError, match="needs decoys"):
        load_policy(path, decoys=0)
    plain = replace(config, decoy_view="bit")
    with pytest.raises(ValueError, match="decoy_view: checkpoint 'oracle', here 'bit'"):
        load_actor_from(make_agent(plain), plain, path)
    with pytest.raises(ValueError, match="decoy_view"):
        load_agent(path, plain)


@pytest.mark.parametrize(("changes", "match"), [
    (dict(decoy_view="maybe"), "decoy_view must be one of"),
    (dict(decoy_view=1), "decoy_view must be one of"),
    (dict(scenario="simple_spread", scenario_kwargs={"N": 3}), "control of simple_spread with decoys"),
    (dict(scenario_kwargs={"N": 3, "decoys": 0}), "needs decoys"),
    (dict(scenario_kwargs={"N": 3}), "needs decoys"),
    (dict(actor="attention"), r"built for the actors \['flat', 'entity'\]"),
    (dict(actor="comm"), r"built for the actors"),
])
def test_bad_decoy_views_are_refused(changes: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        replace(CONFIGS["decoys1-spread3-oracle"], **changes)


def test_bad_views_of_the_networks_are_refused() -> None:
    with pytest.raises(ValueError, match="plain actor"):
        DecoyView("bit", NAME, KWARGS, OBS_DIM)
    with pytest.raises(ValueError, match="not obs_dim = 30"):
        DecoyView("oracle", NAME, KWARGS, 30)
    with pytest.raises(ValueError, match="control of simple_spread with decoys"):
        DecoyEntityActor("simple_spread", {"N": 3}, 3, 18, 5, "oracle")
    with pytest.raises(ValueError, match=r"shape \(batch, m, obs_dim\)"):
        DecoyEntityActor(NAME, KWARGS, M, OBS_DIM, 5, "no-bit")(torch.zeros(2, M, OBS_DIM - 1))
    with pytest.raises(ValueError, match=r"shape \(batch, m, obs_dim\)"):
        DecoyActor(NAME, KWARGS, M, OBS_DIM, 5, "oracle")(torch.zeros(2, M, OBS_DIM - 1))


@pytest.mark.parametrize("design", ["entity", "flat"])
def test_without_decoys_a_run_is_chapter_10s_run_bit_for_bit(tmp_path, design: str) -> None:
    """Why chapter 12 reads its d = 0 points from chapters 8 and 10 instead of training them again: two updates of
    ``decoys0-spread3-{design}`` and of chapter 10's ``scale-spread3-{design}`` give the same weights to the bit
    and the same curve (the same environment, seeds and network; only the scenario's name differs)."""
    from attnmarl.notebook.explorers.decoys import decoy_runs
    from attnmarl.notebook.explorers.scale import SCALE_CONFIGS

    names = (f"decoys0-spread3-{design}", SCALE_CONFIGS["simple_spread", 3, design])
    states, curves = [], []
    for name in names:
        run(name, seed=0, steps=6400, out=tmp_path, evals=1, eval_episodes=2, final_episodes=2, progress=False)
        states.append(torch.load(tmp_path / f"{name}-seed0.pt", weights_only=True)["state_dict"])
        curves.append([line.split(",")[:1] + line.split(",")[3:] for line in  # without the timings
                       (tmp_path / f"{name}-seed0.csv").read_text().splitlines()])
    assert states[0].keys() == states[1].keys()
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])
    assert curves[0] == curves[1]
    assert [r["name"] for r in decoy_runs(3, 0, design)] == [names[1]] * 3
