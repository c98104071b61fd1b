"""Reliability, third pass (issue 33): limits that say what they protect, untrusted files that stay cheap,
messages that stay true, and the edges of the small helpers.

One section per class of the issue; each tries several inputs of its class. The mechanisms live in
:mod:`attnmarl.costs` (``check_cost``), :mod:`attnmarl.files.sealed` (``check_stored``, ``check_shapes``),
:mod:`attnmarl.interrupt` (``HeldInterrupt``, ``WRITTEN``), :mod:`attnmarl.checks` (``check_indices``) and the
modules that call them.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import attnmarl
from attnmarl import interrupt
from attnmarl import seq2seq as s2s
from attnmarl.algos.maac import counterfactual_advantage
from attnmarl.algos.mappo import MAPPOConfig, ValueNorm, log_prob, make_agent, normalize_advantages, train
from attnmarl.attention import masked_softmax
from attnmarl.checkpoints import (
    load_agent,
    load_agent_at,
    load_checkpoint,
    load_policy,
    save_checkpoint,
    shipped_checkpoint,
    shipped_runs,
)
from attnmarl.checks import SEED_MAX, check_seed, cli_seed, derived_seed
from attnmarl.costs import ALLOW_COSTLY, check_cost
from attnmarl.envs import evaluate, make_batched, make_reference, random_policy
from attnmarl.envs.reference import obs_to_array, play, step_arrays
from attnmarl.envs.scenarios import MPE2_MODULES, reference_kwargs, world_entities
from attnmarl.files import atomic, sealed
from attnmarl.hard_attention import KeyValueReader, gradient_variance
from attnmarl.interrupt import run_command
from attnmarl.nets import AttentionCritic, ConcatCritic
from attnmarl.nets.common import AgentHeads, AgentLinear, check_agent_layers
from attnmarl.notebook.viz import Heatmap

TINY = MAPPOConfig("simple_spread", {"N": 3}, num_envs=8, rollout_steps=25, total_steps=200, d_x=8, heads=2, d_q=4,
                   d_out=4, critic_hidden=8, actor_hidden=8, entity_d=8, entity_ff=8)
ENTITY6 = shipped_checkpoint("policy", "pi-spread6-entity")


@pytest.fixture(autouse=True)
def no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with the cost estimates on, whatever the environment that runs the suite says."""
    monkeypatch.delenv(ALLOW_COSTLY, raising=False)


# ---- 1. limits that refuse only what takes minutes or exhausts memory, with an override ---------------------------

@pytest.mark.parametrize("scenario,kwargs", [
    ("simple_spread", {"N": 120}),  # 240 entities: the last pass refused anything above 100
    ("simple_tag", {"num_good": 60, "num_adversaries": 60, "num_obstacles": 30}),
    ("collect_treasure", {"num_collectors": 80, "num_deposits": 2, "num_treasures": 80}),
    ("simple_world_comm", {"num_good": 30, "num_adversaries": 30, "num_food": 60, "num_forests": 20}),
])
def test_worlds_of_hundreds_of_entities_build_and_step_on_mpe2(scenario, kwargs):
    env = make_reference(scenario, **kwargs)
    obs, _ = env.reset(seed=3)
    assert len(env.unwrapped.world.entities) == world_entities(scenario, reference_kwargs(scenario, **kwargs)) > 100
    _, rewards, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})
    assert len(rewards) == len(obs) and all(np.isfinite(r) for r in rewards.values())


@pytest.mark.parametrize("num_envs,kwargs", [(2, {"N": 150}), (64, {"N": 40}), (2**21, {"N": 1})])
def test_batched_ports_the_last_pass_refused_build_and_agree_with_mpe2(num_envs, kwargs):
    port = make_batched("simple_spread", num_envs, seed=1, **kwargs)
    reference = make_reference("simple_spread", **kwargs)
    reference.reset(seed=5)
    port.load_state(num_envs - 1, reference)
    actions = np.zeros((num_envs, kwargs["N"]), dtype=np.int64)
    obs, rewards, *_ = port.step(actions)
    expected, expected_rewards, *_ = step_arrays(reference, actions[-1])
    np.testing.assert_allclose(obs[-1], expected, atol=1e-5)
    np.testing.assert_allclose(rewards[-1], expected_rewards, atol=1e-5)


@pytest.mark.parametrize("scenario", sorted(MPE2_MODULES))
def test_the_estimate_counts_every_entity_of_every_scenario(scenario):
    counts = {"N": 7} if "N" in reference_kwargs(scenario) else {}
    for kwargs in ({}, counts):
        world = make_reference(scenario, **kwargs).unwrapped.world
        assert world_entities(scenario, reference_kwargs(scenario, **kwargs)) == len(world.entities)


@pytest.mark.parametrize("build,entities,estimate", [
    (lambda: make_reference("simple_spread", N=2000), "4,000", "3 min"),  # 1e-5 s x 4,000^2 = 160 s
    (lambda: make_batched("simple_tag", 1, num_good=1500, num_adversaries=1500), "3,002", "90 s"),
    (lambda: make_reference("simple_world_comm", num_food=10**7), "10,000,009", "11,574 days"),
    (lambda: load_policy(ENTITY6, N=3000), "6,000", "6 min"),
])
def test_worlds_that_take_minutes_are_refused_with_the_estimate_and_the_override(build, entities, estimate):
    with pytest.raises(ValueError) as error:
        build()
    message = str(error.value)
    assert f"({entities} entities) on mpe2 would take about {estimate} (estimated from 1e-05 s per pair" in message
    assert "an episode of 25 steps would take about" in message and "grows as the square" in message
    assert message.endswith("; to run it anyway, set ATTNMARL_ALLOW_COSTLY=1 in the environment")


def test_the_override_lets_a_refused_world_through(monkeypatch):
    with pytest.raises(ValueError, match="would take about"):
        reference_kwargs("simple_spread", N=3000)
    monkeypatch.setenv(ALLOW_COSTLY, "1")
    assert reference_kwargs("simple_spread", N=3000)["N"] == 3000  # checked, not built: building takes minutes
    check_cost("anything", seconds=1e9, nbytes=1e18)
    monkeypatch.setenv(ALLOW_COSTLY, "0")  # "0" and "" mean off
    with pytest.raises(ValueError, match="anything would take about 11,574 days and about"):
        check_cost("anything", seconds=1e9, nbytes=1e18)


@pytest.mark.parametrize("value, allowed", [("1", True), ("TRUE", True), ("yes", True), (" on ", True),
                                            ("", False), ("0", False), ("false", False), ("No", False),
                                            ("off", False)])
def test_the_override_reads_yes_as_yes_and_no_as_no(monkeypatch, value, allowed):
    """ATTNMARL_ALLOW_COSTLY=false once turned every estimate *off*: a no must mean no."""
    monkeypatch.setenv(ALLOW_COSTLY, value)
    if allowed:
        check_cost("anything", seconds=1e9)
    else:
        with pytest.raises(ValueError, match="anything would take about"):
            check_cost("anything", seconds=1e9)


def test_an_override_that_is_neither_yes_nor_no_is_refused_by_name(monkeypatch):
    monkeypatch.setenv(ALLOW_COSTLY, "maybe")
    with pytest.raises(ValueError, match="ATTNMARL_ALLOW_COSTLY='maybe' is neither a yes"):
        check_cost("anything", seconds=1e9)


@pytest.mark.parametrize("build", [
    lambda: AttentionCritic(2000, 18),  # the last pass refused more than 512 agents
    lambda: ConcatCritic(200, 6),  # 82 million weights: the last pass refused more than 50 million
    lambda: AgentHeads(20_000, 8, 8),
])
def test_unshared_layers_for_thousands_of_agents_build(build):
    network = build()
    assert sum(p.numel() for p in network.parameters()) > 0


def test_the_attention_critic_at_600_agents_is_permutation_equivariant():
    critic = AttentionCritic(600, 6, d_x=8, d_q=4, d_out=4, d_hidden=8).eval()
    o = torch.randn(2, 600, 6)
    swap = torch.arange(600)
    swap[[7, 400]] = swap[[400, 7]]
    with torch.no_grad():
        v, v_swapped = critic(o), critic(o[:, swap])
    # the heads are unshared, so agent i's value moves with its head: i's input swapped changes only v^7 and v^400
    unchanged = [i for i in range(600) if i not in (7, 400)]
    torch.testing.assert_close(v[:, unchanged], v_swapped[:, unchanged], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(v[:, 7], v_swapped[:, 7])


@pytest.mark.parametrize("m,d_in,d_out,message", [
    (10**6, 32, 64, "m = 1,000,000"),
    (100_000, 512, 512, "m = 100,000"),
    (3000, 4096, 4096, "m = 3,000"),
])
def test_layers_that_take_minutes_or_gigabytes_are_refused_with_the_estimate(m, d_in, d_out, message):
    with pytest.raises(ValueError, match=message + ".*ATTNMARL_ALLOW_COSTLY=1"):
        AgentLinear(m, d_in, d_out)
    with pytest.raises(ValueError, match=f"{message} unshared layers .* orthogonal initialisations, one per agent"):
        check_agent_layers(m, d_in, d_out)


def test_the_entity_actor_runs_zero_shot_at_m_200_on_mpe2_and_the_port():
    policy = load_policy(ENTITY6, N=200)
    env = make_reference("simple_spread", N=200)
    obs, _ = env.reset(seed=11)
    port = make_batched("simple_spread", 1, N=200)
    agent, config = load_agent_at(ENTITY6, N=200)
    assert config.scenario_kwargs["N"] == 200
    for _ in range(3):
        port.load_state(0, env)
        actions = policy(obs)
        assert set(actions) == set(env.agents) and all(0 <= int(a) < 5 for a in actions.values())
        with torch.no_grad():  # the same weights on the port's observations of the same state act alike
            a, _ = agent.act(torch.from_numpy(port.observe()), deterministic=True)
        assert [int(x) for x in a[0]] == [int(actions[name]) for name in env.possible_agents]
        obs, rewards, *_ = play(env, policy, obs)
    assert len(rewards) == 200


@pytest.mark.parametrize("seed", [2**31, 2**32 + 7, 2**63, SEED_MAX])
def test_seeds_take_64_bits_where_numpy_torch_and_mpe2_do(seed):
    assert check_seed(seed) == seed and cli_seed()(str(seed)) == seed
    first = evaluate(random_policy("simple_spread", seed=seed), "simple_spread", 3, seed=seed)
    again = evaluate(random_policy("simple_spread", seed=seed), "simple_spread", 3, seed=seed)
    other = evaluate(random_policy("simple_spread", seed=seed - 1), "simple_spread", 3, seed=seed - 1)
    assert first == again and first != other
    port = make_batched("simple_spread", 2, seed=seed)
    np.testing.assert_array_equal(port.reset(), make_batched("simple_spread", 2, seed=seed).reset())
    assert MAPPOConfig(seed=seed).seed == seed


def test_a_run_with_the_largest_seed_trains_and_is_reproducible():
    config = MAPPOConfig(**{**TINY.__dict__, "seed": SEED_MAX})
    weights = [torch.cat([p.detach().flatten() for p in train(config).parameters()]) for _ in range(2)]
    assert torch.equal(weights[0], weights[1])


@pytest.mark.parametrize("seed,offset,expected", [(5, 3, 8), (SEED_MAX, 1, 0), (SEED_MAX - 1, 4, 2), (0, 0, 0)])
def test_derived_seeds_are_the_sum_wherever_it_fits_and_wrap_into_64_bits(seed, offset, expected):
    assert derived_seed(seed, offset) == expected
    torch.Generator().manual_seed(derived_seed(seed, offset))


@pytest.mark.parametrize("text,value", [(str(2**64), 2**64), ("-1", -1), ("1e3", 1e3), (str(10**30), 10**30)])
def test_seeds_beyond_64_bits_are_refused(text, value):
    import argparse
    with pytest.raises(argparse.ArgumentTypeError, match="must be"):
        cli_seed()(text)
    with pytest.raises(ValueError, match="seed must be"):
        check_seed(value)


# ---- 2. an untrusted checkpoint stays cheap to refuse --------------------------------------------------------------

HOSTILE = """
import json, resource, sys, time, torch
from attnmarl.checkpoints import load_checkpoint, load_policy, load_agent, seal_checkpoint
from attnmarl import seq2seq
size = int([line for line in open("/proc/self/status") if line.startswith("VmSize")][0].split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + 2**29, size + 2**29))  # half a GB more than the imports took
loaders = {"load_checkpoint": load_checkpoint, "load_policy": load_policy, "load_agent": load_agent,
           "seal_checkpoint": seal_checkpoint, "seq2seq": seq2seq.load_checkpoint}
said = {}
for case in sys.argv[1:]:
    path, loader = case.split("|")
    start = time.perf_counter()
    try:
        loaders[loader](path)
        said[case] = "loaded"
    except ValueError as error:
        said[case] = f"ValueError in {time.perf_counter() - start:.2f} s: {error}"
    except BaseException as error:
        said[case] = f"{type(error).__name__}: {error}"
print(json.dumps(said))
"""

HOSTILE_CASES = [("minimal", "load_checkpoint"), ("tiny", "load_checkpoint"), ("tiny", "load_policy"),
                 ("tiny", "load_agent"), ("tiny", "seal_checkpoint"), ("s2s", "seq2seq"), ("shared", "load_checkpoint")]


def stride0(n: int = 10**9) -> torch.Tensor:
    """n float32 entries over one stored number."""
    return torch.zeros(1).expand(n)


def hostile_files(folder: Path) -> dict[str, Path]:
    """Small files whose tensors declare far more entries than they store."""
    files = {}
    minimal = {"format": "attnmarl.mappo/1", "config": {}, "state_dict": {"w": stride0()}, "metadata": {},
               "checksum": "sha256:" + "0" * 64}
    files["minimal"] = folder / "minimal.pt"
    torch.save(minimal, files["minimal"])
    save_checkpoint(folder / "tiny.pt", make_agent(TINY), TINY)
    data = torch.load(folder / "tiny.pt", weights_only=True)
    name = next(iter(data["state_dict"]))
    data["state_dict"][name] = stride0()
    files["tiny"] = folder / "tiny.pt"
    torch.save(data, files["tiny"])
    shared = torch.zeros(1000)  # every tensor a full view of one storage: each fits, together they do not
    data["state_dict"] = {key: shared.view(1000) for key in data["state_dict"]}
    files["shared"] = folder / "shared.pt"
    torch.save(data, files["shared"])
    s2s.save_checkpoint(s2s.new_model(attention=True), folder / "s2s.pt")
    data = torch.load(folder / "s2s.pt", weights_only=True)
    data["state_dict"][next(iter(data["state_dict"]))] = stride0(10**9).view(10**3, 10**6)
    files["s2s"] = folder / "s2s.pt"
    torch.save(data, files["s2s"])
    return files


@pytest.fixture(scope="module")
def hostile_loads(tmp_path_factory):
    """What every loader said about every hostile file, in one subprocess whose memory is limited to half a GB
    more than its imports took (4 GB would be needed to hash a billion float32 entries)."""
    files = hostile_files(tmp_path_factory.mktemp("hostile"))
    assert all(path.stat().st_size < 300_000 for path in files.values())  # kilobytes: seq2seq's is 220 KB
    cases = [f"{files[which]}|{loader}" for which, loader in HOSTILE_CASES]
    env = dict(os.environ, PYTHONPATH=str(Path(attnmarl.__file__).parents[1]))
    done = subprocess.run([sys.executable, "-c", HOSTILE, *cases], capture_output=True, text=True, timeout=300,
                          env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    return {(which, loader): said[case] for (which, loader), case in zip(HOSTILE_CASES, cases)}


@pytest.mark.parametrize("which,loader", HOSTILE_CASES)
def test_a_small_file_declaring_a_billion_entries_is_refused_at_once_under_a_memory_limit(hostile_loads, which,
                                                                                          loader):
    said = hostile_loads[which, loader]
    assert said.startswith("ValueError in ") and "is not a loadable" in said, said
    reason = "read the same stored numbers" if which == "shared" else "but the file stores 1 for it"
    assert reason in said and "refused before its checksum is computed" in said


@pytest.mark.parametrize("change", ["bigger", "renamed", "missing"])
def test_weights_that_do_not_fit_their_own_config_are_refused_as_damaged_or_named(tmp_path, change):
    """Changed after it was saved, a checkpoint fails its checksum, which is checked before any network is built
    from the file's config (issue 44: an edited config must cost nothing); sealed again after the change, so that
    the checksum holds, its weights are named against the architecture its own config gives."""
    path = tmp_path / "tiny.pt"
    save_checkpoint(path, make_agent(TINY), TINY)
    data = torch.load(path, weights_only=True)
    name = next(iter(data["state_dict"]))
    if change == "bigger":
        data["state_dict"][name] = torch.zeros(4096, 64)
    elif change == "renamed":
        data["state_dict"]["actor.extra"] = data["state_dict"].pop(name)
    else:
        del data["state_dict"][name]
    torch.save(data, path)  # the old checksum
    for load in (load_checkpoint, load_policy, load_agent):
        with pytest.raises(ValueError, match="damaged attnmarl checkpoint: its contents no longer match"):
            load(path)
    torch.save(sealed.seal(data), path)  # a checksum of the changed contents
    for load in (load_checkpoint, load_policy, load_agent):
        with pytest.raises(ValueError, match="the weights do not fit the architecture of its own config"):
            load(path)


@pytest.mark.parametrize("tensor", [
    torch.arange(12.0).view(3, 4).t(), torch.randn(5, 6, 7)[:, ::2, 1:], torch.tensor(3.5), torch.zeros(0, 4),
    torch.randn(300, 50), torch.tensor([True, False, True]), torch.randn(4, 1, 30).expand(4, 3, 30).contiguous(),
])
def test_hashing_in_bounded_pieces_gives_the_bytes_of_the_whole_tensor(monkeypatch, tensor):
    monkeypatch.setattr(sealed, "HASH_CHUNK_BYTES", 64)  # many pieces, rows split too
    pieces = hashlib.sha256()
    for piece in sealed._tensor_bytes(tensor):
        assert piece.nbytes <= 64
        pieces.update(piece)
    whole = tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    assert pieces.hexdigest() == hashlib.sha256(whole).hexdigest()


def test_every_shipped_checkpoint_still_loads_and_holds_only_whole_tensors():
    for path in sorted(attnmarl.checkpoints.ASSETS.glob("*/*.pt")):
        data = torch.load(path, weights_only=True)
        sealed.check_stored(path, data, "checkpoint")
        sealed.check_seal(path, data, "checkpoint")


# ---- 3. messages that stay true -------------------------------------------------------------------------------------

def write_set(folder: Path, label: bytes, n: int) -> dict[Path, object]:
    return {folder / f"f{k}.bin": (lambda handle, k=k: handle.write(label + bytes([k]))) for k in range(n)}


@pytest.mark.parametrize("n,after", [(2, 1), (3, 1), (3, 2), (4, 3), (4, 1)])
def test_ctrl_c_between_two_renames_is_held_until_the_set_is_whole(tmp_path, monkeypatch, n, after):
    atomic.write_atomically(write_set(tmp_path, b"old", n))
    real_replace, renames = os.replace, []

    def replace_then_interrupt(source, target):
        real_replace(source, target)
        renames.append(target)
        if len(renames) == after:  # a real SIGINT to this process, between two renames
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(atomic.os, "replace", replace_then_interrupt)
    written = len(interrupt.WRITTEN)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_atomically(write_set(tmp_path, b"new", n))
    assert len(renames) == n  # the interrupt came after the last rename, not between two
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"f{k}.bin" for k in range(n)]  # no temporary left
    assert all((tmp_path / f"f{k}.bin").read_bytes() == b"new" + bytes([k]) for k in range(n))
    assert interrupt.WRITTEN[written:] == [tmp_path / f"f{k}.bin" for k in range(n)]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_while_the_files_are_still_written_leaves_every_old_file(tmp_path):
    atomic.write_atomically(write_set(tmp_path, b"old", 3))

    def interrupted(handle):
        raise KeyboardInterrupt

    files = write_set(tmp_path, b"new", 3)
    files[tmp_path / "f2.bin"] = interrupted
    with pytest.raises(KeyboardInterrupt):
        atomic.write_atomically(files)
    assert all((tmp_path / f"f{k}.bin").read_bytes() == b"old" + bytes([k]) for k in range(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f0.bin", "f1.bin", "f2.bin"]


COMMAND = """
import os, signal, sys
from pathlib import Path
from attnmarl import interrupt
from attnmarl.files import atomic, sealed
folder, when = Path(sys.argv[1]), sys.argv[2]
real_replace, count = os.replace, [0]
def replace(source, target):
    real_replace(source, target)
    count[0] += 1
    if when == "between" and count[0] == 1:
        os.kill(os.getpid(), signal.SIGINT)
atomic.os.replace = replace
def main():
    if when == "before":
        os.kill(os.getpid(), signal.SIGINT)
    atomic.write_atomically({folder / name: (lambda handle, name=name: handle.write(name.encode()))
                             for name in ("a.pt", "b.csv", "c.json")})
    if when == "after":
        os.kill(os.getpid(), signal.SIGINT)
    print("done")
if sys.argv[3] == "run_command":
    interrupt.run_command("prog", main, "nothing was written")
else:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    main()
"""


@pytest.mark.parametrize("when,written", [("before", False), ("between", True), ("after", True)])
def test_an_interrupted_command_says_truly_what_it_wrote(tmp_path, when, written):
    env = dict(os.environ, PYTHONPATH=str(Path(attnmarl.__file__).parents[1]))
    done = subprocess.run([sys.executable, "-c", COMMAND, str(tmp_path), when, "run_command"], capture_output=True,
                          text=True, timeout=120, env=env)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 130 and "Traceback" not in done.stderr and "done" not in done.stdout
    files = sorted(p.name for p in tmp_path.iterdir())
    if written:
        assert files == ["a.pt", "b.csv", "c.json"]
        assert last == (f"prog: interrupted; it had written {tmp_path / 'a.pt'}, {tmp_path / 'b.csv'}, "
                        f"{tmp_path / 'c.json'} (each file complete); nothing else was written")
    else:
        assert files == [] and last == "prog: interrupted; nothing was written"


def test_a_sigint_with_the_default_disposition_still_ends_the_process_after_the_renames(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(Path(attnmarl.__file__).parents[1]))
    done = subprocess.run([sys.executable, "-c", COMMAND, str(tmp_path), "between", "plain"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == -signal.SIGINT and "done" not in done.stdout
    assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["a.pt", "b.csv", "c.json"]


def test_run_command_keeps_its_own_message_when_nothing_was_written(capsys, tmp_path):
    def main():
        raise KeyboardInterrupt
    atomic.write_atomically(write_set(tmp_path, b"earlier", 1))  # written before the command, not by it
    with pytest.raises(SystemExit):
        run_command("prog", main, "nothing was written")
    assert capsys.readouterr().err.strip() == "prog: interrupted; nothing was written"


@pytest.mark.parametrize("run", [("policy", "pi-spread6-entity"), ("policy", "pi-spread3-entity"),
                                 ("scale", "scale-spread12-entity"), ("qnet", "q-spread3-attention")])
def test_an_entity_actor_at_m_1_is_refused_for_its_missing_kind_of_token_not_for_shapes(run):
    with pytest.raises(ValueError) as error:
        load_agent_at(shipped_checkpoint(*run), N=1)
    message = str(error.value)
    assert "no agent has a token of the kind 'agent' (a team of one has no other agent)" in message
    assert "for simple_spread, N >= 2" in message and "shapes that depend on" not in message
    load_agent_at(shipped_checkpoint(*run), N=2)  # the remedy works


def test_a_flat_actor_at_another_m_keeps_the_true_reason():
    with pytest.raises(ValueError, match="its flat actor was trained with .* shapes that depend on them"):
        load_agent_at(shipped_checkpoint("policy", "pi-spread3-flat"), N=4)


def test_the_policy_probe_names_why_it_cannot_read_ranked_tokens_and_asks_for_nothing_it_does_not_take():
    from attnmarl.notebook.explorers.policy import policy_episode_explorer, policy_probe_explorer
    agent, config = load_agent(shipped_checkpoint("scale", "scale-treasure4-entity"))
    with pytest.raises(ValueError) as error:
        policy_probe_explorer(agent, config)
    assert "ranked by distance" in str(error.value) and "pass the recorded episode" not in str(error.value)
    assert "policy_episode_explorer(agent, config)" in str(error.value)
    policy_episode_explorer(agent, config)  # the remedy works


# ---- 4. edges of the small helpers ----------------------------------------------------------------------------------

@pytest.mark.parametrize("x", [torch.zeros(0, 3), torch.zeros(4, 2), torch.zeros(3), torch.tensor([[1.0, np.nan, 0]])])
def test_value_normalisation_refuses_targets_that_would_make_it_nan(x):
    norm = ValueNorm(3)
    with pytest.raises(ValueError, match="value targets"):
        norm.update(x)
    assert torch.equal(norm.mean, torch.zeros(3)) and torch.equal(norm.var, torch.ones(3))
    norm.update(torch.tensor([[1.0, 2.0, 3.0]]))  # one row is a batch: its variance (unbiased=False) is 0
    assert torch.isfinite(norm.var).all()


@pytest.mark.parametrize("shape,per_agent", [((1, 3), True), ((1, 1), False), ((0, 3), False), ((0, 3), True)])
def test_advantages_too_few_to_normalise_are_refused(shape, per_agent):
    with pytest.raises(ValueError, match="needs at least two of them"):
        normalize_advantages(torch.ones(shape), per_agent)
    out = normalize_advantages(torch.arange(6.0).view(2, 3), per_agent)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("scores,dim", [(torch.zeros(2, 0), -1), (torch.zeros(3, 0, 4), 1), (torch.zeros(0, 5), 0)])
def test_a_softmax_over_zero_keys_is_refused_and_an_empty_batch_is_not(scores, dim):
    with pytest.raises(ValueError, match="no keys along dim"):
        masked_softmax(scores, dim=dim)
    assert masked_softmax(torch.zeros(0, 3)).shape == (0, 3)


@pytest.mark.parametrize("mask", [[[True, False]], np.array([[True, False]]), torch.tensor([[1, 0]]), "all"])
def test_a_mask_is_checked_before_it_is_used(mask):
    with pytest.raises(ValueError, match="mask must be a bool tensor"):
        masked_softmax(torch.zeros(1, 2), mask)


@pytest.mark.parametrize("h", [torch.zeros(2, 3, 5), torch.zeros(2, 4, 4), torch.zeros(4), torch.zeros(2, 7),
                               torch.zeros(1, 2, 3, 4)])
def test_per_agent_layers_name_an_input_of_the_wrong_shape(h):
    for layer in (AgentLinear(3, 4, 5), AgentHeads(3, 4, 8)):
        with pytest.raises(ValueError, match=r"must be \(batch, m, d_in\) = \(batch, 3, 4\)"):
            layer(h)
    assert AgentLinear(3, 4, 5)(torch.zeros(2, 4)).shape == (2, 3, 5)


@pytest.mark.parametrize("actions,message", [
    (torch.tensor([[0, 5, 1]]), "in \\[0, 5\\); 1 do not, for example 5"),
    (torch.tensor([[0, -1, 1]]), "for example -1"),
    (torch.tensor([[0.0, 1.0, 2.0]]), "integer action"),
    (torch.tensor([[0, 1]]), "must have shape \\(1, 3\\)"),
    (torch.tensor([[True, False, True]]), "integer action"),
])
def test_action_indices_are_checked_before_they_reach_gather(actions, message):
    logits = torch.zeros(1, 3, 5)
    with pytest.raises(ValueError, match=message):
        log_prob(logits, actions)
    with pytest.raises(ValueError, match=message):
        counterfactual_advantage(logits, torch.full((1, 3, 5), 0.2), actions)


def test_reference_helpers_name_a_call_outside_an_episode():
    env = make_reference("simple_spread", max_cycles=1)
    policy = random_policy("simple_spread", max_cycles=1)
    for call in (lambda: play(env, policy, {}), lambda: step_arrays(env, np.zeros(3, dtype=int))):
        with pytest.raises(ValueError, match="no episode yet; call env.reset"):
            call()
    with pytest.raises(ValueError, match="obs must hold the observation of every agent"):
        obs_to_array(env, {})
    obs, _ = env.reset(seed=0)
    play(env, policy, obs)  # the one step of this episode
    for call in (lambda: play(env, policy, obs), lambda: step_arrays(env, np.zeros(3, dtype=int))):
        with pytest.raises(ValueError, match="the episode has ended .* call env.reset"):
            call()


@pytest.mark.parametrize("kwargs,message", [
    ({"vmin": 1.0, "vmax": 0.0}, "vmin must be below vmax"), ({"vmin": 0.5, "vmax": 0.5}, "vmin must be below vmax"),
    ({"vmin": True}, "vmin must be a real number"), ({"vmax": float("nan")}, "vmax must be a finite number"),
    ({"vmax": "1"}, "vmax must be a real number"), ({"annotate": "no"}, "annotate must be True or False"),
])
def test_colour_limits_and_flags_that_mean_nothing_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Heatmap(np.ones((2, 2)), ["a", "b"], ["c", "d"], **kwargs)


@pytest.mark.parametrize("call,message", [
    (lambda: __import__("attnmarl.notebook.explorers.scoring", fromlist=["x"]).score_alpha(
        "dot", torch.ones(1, 2), True),
     "temperature tau must be a positive number; got True"),
    (lambda: __import__("attnmarl.notebook.explorers.scoring", fromlist=["x"]).scoring_frame(qx=True),
     "query coordinates must be finite numbers"),
    (lambda: make_reference("simple_spread", render_mode="rgb"), "render_mode must be None or one of"),
    (lambda: make_reference("simple_tag", render_mode="ansi"), "render_mode must be None or one of"),
    (lambda: gradient_variance(KeyValueReader(), torch.Generator(), n_batches=1), "n_batches must be an integer >= 2"),
])
def test_values_that_mean_nothing_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ---- 5. what the fresh probe found ----------------------------------------------------------------------------------

from attnmarl import reproduce  # noqa: E402
from attnmarl.train import main as train_main  # noqa: E402


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory):
    """Two tiny trained runs (a second of CPU each) and their index.json, as python -m attnmarl.train writes them."""
    folder = tmp_path_factory.mktemp("runs") / "tiny"
    for seed in ("0", "1"):
        train_main(["--config", "spread3-concat", "--seed", seed, "--steps", "3200", "--evals", "1",
                    "--eval-episodes", "1", "--final-episodes", "2", "--out", str(folder)])
    train_main(["--index", str(folder)])
    return folder


class FakeRay:
    """Ray as reproduce uses it, in-process: each task returns the files its run already has in ``folder``;
    ``wait_error`` is raised by the first wait; ``silent`` waits return nothing (a cluster gone quiet) and the
    head's address is ``gcs``."""

    def __init__(self, folder, wait_error=None, silent=False, gcs=None):
        import ray.exceptions
        self.folder, self.wait_error, self.silent, self.gcs = folder, wait_error, silent, gcs
        self.exceptions = ray.exceptions

    def is_initialized(self):
        return False

    def init(self, **kwargs):
        pass

    def shutdown(self):
        pass

    def get_runtime_context(self):
        return type("Context", (), {"gcs_address": self.gcs})()

    def remote(self, **options):
        return lambda fn: type("Task", (), {"remote": lambda _, command, device="cpu": command})()

    def wait(self, refs, num_returns=1, timeout=None):
        if self.wait_error is not None:
            raise self.wait_error
        return ([], refs) if self.silent else (refs[:1], refs[1:])

    def get(self, command):
        stem = self.folder / f"spread3-concat-seed{command.split('--seed ')[1].split()[0]}"
        files = {suffix: stem.with_suffix(suffix).read_bytes() for suffix in (".pt", ".csv", ".json")}
        return {"summary": json.loads(files[".json"]), "files": files}


def reproduce_with(monkeypatch, fake, *argv):
    monkeypatch.setattr(reproduce, "_ray", lambda: fake)
    return reproduce.main(list(argv))


@pytest.mark.parametrize("error", [RuntimeError("Ray has not been started yet"),
                                   ConnectionError("Ray client has already been disconnected"), "system"])
def test_a_cluster_that_drops_mid_run_ends_in_one_line_and_keeps_what_finished(tiny_index, tmp_path, monkeypatch,
                                                                               capsys, error):
    import ray.exceptions
    error = ray.exceptions.RaySystemError("GCS unreachable") if error == "system" else error
    status = reproduce_with(monkeypatch, FakeRay(tiny_index, wait_error=error), "--index", str(tiny_index),
                            "--out", str(tmp_path), "--address", "auto")
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert status == 1 and "Traceback" not in line
    assert re.search(r"error: the Ray cluster at 'auto' stopped answering \(.*\) while 2 run\(s\) were pending", line)
    assert "the same command resumes the others" in line and (tmp_path / "report.json").exists()


def test_a_head_that_stops_answering_is_noticed_within_seconds(tiny_index, tmp_path, monkeypatch, capsys):
    import socket
    with socket.socket() as closed:  # a port that nothing listens on: the head has gone
        closed.bind(("127.0.0.1", 0))
        gcs = f"127.0.0.1:{closed.getsockname()[1]}"
    status = reproduce_with(monkeypatch, FakeRay(tiny_index, silent=True, gcs=gcs), "--index", str(tiny_index),
                            "--out", str(tmp_path))
    assert status == 1
    assert f"its head at {gcs} no longer answers" in capsys.readouterr().err


@pytest.mark.parametrize("full", ["spread3-concat-seed1", "spread3-concat", "report"])
def test_a_full_disk_keeps_every_result_elsewhere_and_says_where(tiny_index, tmp_path, monkeypatch, capsys, full):
    import errno
    real = atomic.write_atomically

    def write(files):
        if any(full in str(path) for path in files):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(files)

    monkeypatch.setattr(atomic, "write_atomically", write)
    out = tmp_path / "out"
    status = reproduce_with(monkeypatch, FakeRay(tiny_index), "--index", str(tiny_index), "--out", str(out))
    said = capsys.readouterr()
    places = {Path(p.rstrip(";,)")) for p in re.findall(r"kept in (/\S+)", said.out + said.err)}
    assert status == 1 and "Traceback" not in said.err and places
    kept = {p.name for place in places for p in place.iterdir()}
    lost = {f"spread3-concat-seed{s}{suffix}" for s in "01" for suffix in (".pt", ".csv", ".json")
            if full in f"spread3-concat-seed{s}"} | ({"report.json", "report.md"} if full == "report" else set())
    assert lost <= kept  # nothing the disk refused is lost
    if full != "report":
        rows = json.loads((out / "report.json").read_text())["runs"]
        assert all("kept in" in row["error"] for row in rows if row["verdict"] == "failed")


def test_a_second_reproduction_into_the_same_folder_is_refused_while_the_first_runs(tiny_index, tmp_path,
                                                                                   monkeypatch, capsys):
    with reproduce._only_writer(tmp_path):  # the first one, still running
        with pytest.raises(SystemExit):
            reproduce_with(monkeypatch, FakeRay(tiny_index), "--index", str(tiny_index), "--out", str(tmp_path))
        assert f"another reproduction (pid {os.getpid()}" in capsys.readouterr().err
        assert not (tmp_path / "report.json").exists()
    assert reproduce_with(monkeypatch, FakeRay(tiny_index), "--index", str(tiny_index), "--out", str(tmp_path)) == 0


@pytest.mark.parametrize("summary,reason", [
    (lambda s: {**s, "seed": 1}, "it describes run spread3-concat-seed1, not spread3-concat-seed0"),
    (lambda s: {k: v for k, v in s.items() if k != "final_episodes"}, "final_episodes"),
    (lambda s: {**s, "final_sem": -1.0}, "not a run summary with a final score"),
])
def test_a_kept_summary_of_another_run_or_without_a_score_is_named(tiny_index, tmp_path, monkeypatch, capsys, summary,
                                                                   reason):
    (tmp_path / "tiny").mkdir()
    shipped = json.loads((tiny_index / "spread3-concat-seed0.json").read_text())
    (tmp_path / "tiny" / "spread3-concat-seed0.json").write_text(json.dumps(summary(shipped)))
    with pytest.raises(SystemExit):
        reproduce_with(monkeypatch, FakeRay(tiny_index), "--index", str(tiny_index), "--out", str(tmp_path))
    assert "is damaged: " in capsys.readouterr().err


@pytest.mark.parametrize("name", ["../../x", "a/b", ".."])
def test_an_index_entry_named_with_a_path_is_refused(tiny_index, tmp_path, name):
    entries = json.loads((tiny_index / "index.json").read_text())
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "index.json").write_text(json.dumps([{**entries[0], "name": name}]))
    with pytest.raises(ValueError, match="not a config's name: its files would be read and written outside --out"):
        reproduce.select_runs(index=folder)


def test_a_file_where_a_chapters_runs_go_is_refused_before_any_run(tiny_index, tmp_path, monkeypatch, capsys):
    (tmp_path / "tiny").write_text("not a folder")
    with pytest.raises(SystemExit):
        reproduce_with(monkeypatch, FakeRay(tiny_index), "--index", str(tiny_index), "--out", str(tmp_path))
    assert "is a file, where the reproduced runs of tiny go" in capsys.readouterr().err


@pytest.fixture(scope="module")
def mean_actor(tmp_path_factory):
    config = MAPPOConfig("simple_spread", {"N": 3}, actor="entity", entity_mixing="mean", num_envs=2,
                         rollout_steps=25, total_steps=50, num_minibatches=1, entity_d=8, entity_ff=8)
    path = tmp_path_factory.mktemp("mean") / "mean.pt"
    save_checkpoint(path, make_agent(config), config)
    return path


def scaled_copy(tmp_path, source, factor):
    agent, config = load_agent(source)
    with torch.no_grad():
        next(p for name, p in agent.named_parameters() if name.startswith("actor.")).mul_(factor)
    path = tmp_path / f"x{factor:g}.pt"
    save_checkpoint(path, agent, config)
    return path


def test_the_playground_exports_only_actors_it_runs_as_python_does(tmp_path, mean_actor):
    from attnmarl.notebook import playground
    with pytest.raises(ValueError, match="mixes its tokens by 'mean'; playground.js runs attention"):
        playground.export_entity_actor(mean_actor)
    with pytest.raises(ValueError, match="its actor cannot act on simple_spread's observations .* the page would play "
                                         "what Python refuses"):
        playground.export_entity_actor(scaled_copy(tmp_path, ENTITY6, 1e30))
    playground.export_entity_actor(scaled_copy(tmp_path, ENTITY6, 1e3))  # odd but runnable: exported


@pytest.mark.parametrize("seed", [2**52 + 1, 2**53 + 1, 2**63, SEED_MAX])
def test_the_playground_takes_only_seeds_its_javascript_holds_exactly(seed):
    from attnmarl.notebook import playground
    with pytest.raises(ValueError, match="seed must be at most 4,503,599,627,370,496"):
        playground.playground_spec(seed=seed)
    assert playground.playground_spec(seed=2**52)["seed"] == 2**52


@pytest.fixture(scope="module")
def probes():
    from attnmarl.notebook.explorers.policy import make_policy_probe
    from attnmarl.notebook.explorers.value import make_probe
    return (make_probe(*load_agent(shipped_checkpoint("value", "spread3-attention"))),
            make_policy_probe(*load_agent(ENTITY6)))


@pytest.mark.parametrize("x,message", [(True, "x must be a real number; got True"), ("0.5", "x must be a real number"),
                                       (None, "x must be a real number; got None"),
                                       (float("nan"), r"x must be a finite number in \[-100, 100\]"),
                                       (1e30, r"x must be a finite number in \[-100, 100\]; got 1e\+30"),
                                       (-101.0, r"in \[-100, 100\]")])
def test_a_probe_drag_that_is_not_a_position_in_reach_is_named(probes, x, message):
    from attnmarl.notebook.explorers.policy import policy_probe_frame
    from attnmarl.notebook.explorers.value import probe_frame
    value_probe, policy_probe = probes
    for frame in (lambda: probe_frame(value_probe, 0, x, 0.0), lambda: policy_probe_frame(policy_probe, 6, x, 0.0)):
        with pytest.raises(ValueError, match=message):
            frame()


@pytest.mark.parametrize("x", [5.0, -50.0, 100.0])
def test_an_entity_dragged_far_stays_in_the_drawing(probes, x):
    from attnmarl.notebook.explorers.policy import policy_probe_frame
    from attnmarl.notebook.explorers.value import probe_frame
    value_probe, policy_probe = probes
    for frame, moved in ((probe_frame(value_probe, 1, x, 0.5), 1), (policy_probe_frame(policy_probe, 7, 0.5, x), 7)):
        arena = frame.panels[0]
        assert np.abs(arena.xy).max() <= arena.lim and tuple(arena.xy[moved]).count(x) == 1


@pytest.mark.parametrize("qx", [10.0, -500.0, 900.0])
def test_the_score_explorer_draws_a_far_query_inside_its_square_or_refuses_it(qx):
    from attnmarl.notebook.explorers.scoring import scoring_frame
    points = scoring_frame("cosine", qx, 0.0).panels[0]
    assert np.abs(points.xy).max() <= points.lim
    with pytest.raises(ValueError, match="the query must lie within the drawing"):
        scoring_frame("cosine", qx * 1e6, 0.0)


@pytest.mark.parametrize("grid,a,message", [
    (np.array([0.0, 1e30]), None, r"grid must be forces in \[-1, 1\]"), (np.array([np.nan]), None, "grid must be"),
    (np.array([]), None, "grid must be"), (None, -0.5, "a must hold"),
    (None, 1e30, r"a must hold mpe2's continuous actions, every entry in \[0, 1\]"),
])
def test_the_q_probe_names_forces_and_actions_outside_mpe2s_ranges(grid, a, message):
    from attnmarl.notebook.explorers.qnet import FORCE_GRID, force_response
    agent, _ = load_agent(shipped_checkpoint("qnet", "q-spread3-attention"))
    o = make_batched("simple_spread", 1, N=3, continuous_actions=True).reset()[0]
    actions = np.full((3, 5), 0.2 if a is None else a, dtype=np.float32)
    with pytest.raises(ValueError, match=message):
        force_response(agent, o, actions, 0, 1, FORCE_GRID if grid is None else grid)


@pytest.mark.parametrize("shape", [(4, 10**6), (201, 200), (10**5, 1)])
def test_a_heatmap_too_large_to_draw_is_refused_when_made(shape):
    with pytest.raises(ValueError, match="more than a figure can show"):
        Heatmap(np.zeros(shape), [str(i) for i in range(shape[0])], [str(j) for j in range(shape[1])])
    assert Heatmap(np.zeros((200, 200)), [str(i) for i in range(200)], [str(j) for j in range(200)]).values.size


@pytest.mark.parametrize("address", ["http://127.0.0.1:8265", "127.0.0.1:6379:1", "ray://a:b:1", "host/x:1"])
def test_an_address_that_is_no_host_and_port_is_a_format_error_not_a_name_lookup(address):
    with pytest.raises(ValueError, match="--address must be auto, HOST:PORT or ray://HOST:PORT"):
        reproduce._check_reachable(address, timeout=1.0)


@pytest.mark.parametrize("tail", [" '", ' "unclosed', " --out 'a b"])
def test_a_recorded_command_with_an_unclosed_quote_is_named(tiny_index, tmp_path, tail):
    entries = json.loads((tiny_index / "index.json").read_text())
    folder = tmp_path / "quoted"
    folder.mkdir()
    (folder / "index.json").write_text(json.dumps([{**entries[0], "command": entries[0]["command"] + tail}]))
    with pytest.raises(ValueError, match="a recorded command cannot be read as a command line .*No closing quotation"):
        reproduce.select_runs(index=folder)


@pytest.mark.parametrize("address", ["nonexistent.invalid:6379", "ray://no-such-host.invalid:10001"])
def test_an_address_whose_host_does_not_resolve_says_so_rather_than_a_timeout(address):
    with pytest.raises(ValueError, match="is no name or address this machine can resolve") as error:
        reproduce._check_reachable(address, timeout=1.0)
    assert "nothing answered within" not in str(error.value)


# ---- 6. devices: what --device, the loaders' device= and checkpoints from other devices are given -----------------

from types import SimpleNamespace  # noqa: E402

from attnmarl.algos.mappo import load_actor_from  # noqa: E402
from attnmarl.checkpoints import agent_policy  # noqa: E402
from attnmarl.devices import check_device, module_device  # noqa: E402
from attnmarl.train import run as train_run  # noqa: E402

SPREAD3 = shipped_checkpoint("policy", "pi-spread3-entity")
CPU = torch.device("cpu")


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch sees no GPU, wherever the test runs."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def one_line(error: pytest.ExceptionInfo) -> str:
    """The message of a refusal, which must fit on one line."""
    message = str(error.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("device,cause", [
    (0, "got 0 of type int"), (-1, "got -1 of type int"), (True, "got True of type bool"),
    (None, "got None of type NoneType"), (b"cpu", "got b'cpu' of type bytes"), (["cpu"], "of type list"),
    (np.array(["cpu", "cuda"]), "of type ndarray"), (1.0, "of type float"),
    ("CPU", "got 'CPU' (did you mean 'cpu'?)"), (" cpu", "(did you mean 'cpu'?)"), ("Auto", "(did you mean 'auto'?)"),
    ("", "got ''"), ("mps", "got 'mps'"), ("tpu", "got 'tpu'"), ("cuda:-1", "got 'cuda:-1'"),
    ("meta", "the meta device holds shapes without values"), (torch.device("meta"), "nothing can be trained"),
    ("cpu:1", "device cpu:1: torch has one CPU device, and would silently ignore the index 1; use cpu"),
    (torch.device("cpu", 3), "device cpu:3: torch has one CPU device"),
    ("cuda", "device cuda: torch sees no GPU on this machine"), ("cuda:7", "device cuda:7: torch sees no GPU"),
    (torch.device("cuda", 0), "device cuda:0: torch sees no GPU"),
])
def test_a_device_that_is_not_one_is_refused_in_one_line_naming_it(no_gpu, device, cause):
    with pytest.raises(ValueError) as error:
        check_device(device)
    message = one_line(error)
    assert message.startswith("device ") and cause in message


@pytest.mark.parametrize("device", [0, 1, True, "cuda:2", torch.device("cuda", 5), "cpu:1"])
def test_with_gpus_an_int_or_a_gpu_beyond_them_is_still_refused(monkeypatch, device):
    """Where torch sees GPUs it reads ``torch.device(0)`` as cuda:0: the same argument would mean a GPU there and be
    refused here. Every machine refuses it, and a GPU beyond those it has is named with the ones to use."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert check_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(ValueError) as error:
        check_device(device, "--device")
    message = one_line(error)
    assert message.startswith("--device ")
    assert "of type" in message or "use one of cuda:0 … cuda:1" in message or "one CPU device" in message


@pytest.mark.parametrize("device", ["cpu", "cpu:0", CPU, torch.device("cpu", 0), np.str_("cpu"), "auto"])
def test_every_name_of_the_cpu_is_the_cpu_and_plays_the_same_episodes(no_gpu, device):
    assert check_device(device) == CPU and check_device(device).index is None
    played = evaluate(load_policy(SPREAD3, device=device), "simple_spread", 2, N=3)
    assert played == evaluate(load_policy(SPREAD3), "simple_spread", 2, N=3)
    agent, _ = load_agent_at(SPREAD3, device, N=4)
    assert {t.device for t in [*agent.parameters(), *agent.buffers()]} == {CPU}


@pytest.mark.parametrize("loader", [
    lambda path, device: load_policy(path, device=device), lambda path, device: load_agent(path, device=device),
    lambda path, device: load_agent_at(path, device), lambda path, device: load_agent_at(path, device, N=4),
    lambda path, device: train(TINY, device=device),
])
@pytest.mark.parametrize("device", ["cuda", "meta", 0, "CPU", "cpu:1", None])
def test_the_loaders_and_training_refuse_a_bad_device_before_reading_anything(no_gpu, tmp_path, loader, device):
    """The device is checked first: the missing file is not what the refusal names."""
    with pytest.raises(ValueError) as error:
        loader(tmp_path / "missing.pt", device)
    assert one_line(error).startswith("device ") and "missing.pt" not in str(error.value)


@pytest.mark.parametrize("device", ["cuda", "cuda:0", 0, "meta", "cpu:1"])
def test_a_run_on_a_device_it_cannot_use_writes_nothing(no_gpu, tmp_path, device):
    out = tmp_path / "runs"
    with pytest.raises(ValueError, match="^device "):
        train_run("pi-spread3-flat", steps=3200, out=out, device=device, progress=False)
    assert not out.exists()


def test_device_cuda_on_the_command_line_creates_not_even_the_out_folder(no_gpu, tmp_path, capsys):
    out = tmp_path / "new" / "runs"
    with pytest.raises(SystemExit) as exit_:
        train_main(["--config", "pi-spread3-flat", "--steps", "3200", "--out", str(out), "--device", "cuda"])
    assert exit_.value.code == 2
    assert "--device cuda: torch sees no GPU" in capsys.readouterr().err.splitlines()[-1]
    assert not (tmp_path / "new").exists()


def saved_from(tmp_path: Path, tag: str) -> Path:
    """The shipped checkpoint saved again as torch.save saves tensors of the device ``tag`` (cuda:0, mps, ...)."""
    data = torch.load(SPREAD3, weights_only=True)
    path = tmp_path / f"from-{tag.replace(':', '-')}.pt"
    serialization, location_tag = torch.serialization, torch.serialization.location_tag
    serialization.location_tag = lambda storage: tag
    try:
        torch.save(data, path)
    finally:
        serialization.location_tag = location_tag
    return path


@pytest.mark.parametrize("tag", ["cuda:0", "cuda:3", "mps", "xla:0"])
def test_a_checkpoint_saved_from_another_device_loads_on_the_cpu_and_plays_the_same(tmp_path, tag):
    path = saved_from(tmp_path, tag)
    assert f"{tag}".encode() in path.read_bytes()  # the file names the device its tensors were saved from
    agent, _ = load_agent(path)
    assert {t.device for t in agent.parameters()} == {CPU}
    assert evaluate(load_policy(path), "simple_spread", 2, N=3) == evaluate(load_policy(SPREAD3), "simple_spread", 2,
                                                                             N=3)


def with_meta(tmp_path: Path, where: str) -> Path:
    """The shipped checkpoint with tensors on the meta device (as torch.save writes them: a shape, no values):
    every weight, one weight, or one in its metadata; the checksum is the original's."""
    data = torch.load(SPREAD3, weights_only=True)
    state = data["state_dict"]
    if where == "every weight":
        data["state_dict"] = {key: torch.empty_like(value, device="meta") for key, value in state.items()}
    elif where == "one weight":
        key = next(iter(state))
        data["state_dict"] = {**state, key: torch.empty_like(state[key], device="meta")}
    else:
        data["metadata"] = {**data["metadata"], "probe": torch.empty(3, device="meta")}
    path = tmp_path / "meta.pt"
    torch.save(data, path)
    return path


@pytest.mark.parametrize("where,entry", [("every weight", "state_dict['actor."), ("one weight", "state_dict['actor."),
                                         ("metadata", "metadata['probe']")])
@pytest.mark.parametrize("loader", [load_checkpoint, load_agent, load_policy, lambda path: load_agent_at(path, N=4),
                                    lambda path: load_actor_from(make_agent(TINY), TINY, path)])
def test_a_checkpoint_of_meta_tensors_is_refused_naming_the_entry(tmp_path, where, entry, loader):
    """Not a crash inside torch ("Cannot copy out of meta tensor"), nor a message about overlapping storage."""
    with pytest.raises(ValueError) as error:
        loader(with_meta(tmp_path, where))
    message = one_line(error)
    assert "is on torch's meta device, which holds shapes but no values" in message and entry in message
    assert "overlap" not in message and "same stored numbers" not in message


@pytest.mark.parametrize("move", ["agent", "actor", "critic"])
def test_an_agent_on_the_meta_device_is_neither_saved_nor_played(tmp_path, move):
    agent, config = load_agent(SPREAD3)
    (agent if move == "agent" else getattr(agent, move)).to("meta")
    path = tmp_path / "meta-agent.pt"
    with pytest.raises(ValueError, match=r"^the agent: .* is on torch's meta device.*no weights to save"):
        save_checkpoint(path, agent, config)
    with pytest.raises(ValueError, match=r"^the agent: .* is on torch's meta device.*load_agent\(path, device='cpu'\)"):
        evaluate(agent_policy(agent, config), "simple_spread", 1, N=3)
    assert not list(tmp_path.iterdir())  # no file, not even a temporary one


def test_metadata_holding_a_meta_tensor_is_refused_before_the_file_is_written(tmp_path):
    agent, config = load_agent(SPREAD3)
    with pytest.raises(ValueError, match=r"^metadata\['probe'\]: its tensor .* meta device"):
        save_checkpoint(tmp_path / "x.pt", agent, config, probe=torch.empty(2, device="meta"))
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16])
def test_an_agent_in_another_dtype_is_named_when_played_or_saved(tmp_path, dtype):
    agent, config = load_agent(SPREAD3)
    agent.to(dtype)
    with pytest.raises(ValueError, match=f"the network's weights {dtype}: they must agree"):
        evaluate(agent_policy(agent, config), "simple_spread", 1, N=3)
    with pytest.raises(ValueError, match=f"has dtype {dtype}; the networks' weights are torch.float32"):
        save_checkpoint(tmp_path / "x.pt", agent, config)
    assert not list(tmp_path.iterdir())


def test_a_network_spread_over_two_devices_is_named_with_both():
    """As a module with weights on cpu and cuda would be (the test machines have one device with values)."""
    on = {"a.weight": SimpleNamespace(device=CPU), "b.weight": SimpleNamespace(device=torch.device("cuda", 0))}
    module = SimpleNamespace(named_parameters=lambda: iter(on.items()), named_buffers=lambda: iter(()))
    with pytest.raises(ValueError, match=r"^the agent is spread over 2 devices \(a.weight on cpu, b.weight on "
                                         r"cuda:0\).*\.to\(device\)"):
        module_device("the agent", module)
    assert module_device("the agent", torch.nn.Linear(2, 2)) == CPU


def test_a_reproduction_with_nothing_to_run_starts_no_ray(tmp_path):
    """Every run unrunnable (or already reproduced): the report is written without Ray, and no Ray is left
    running in the process (asking Ray for its head's address would have started one)."""
    import ray

    entry = {**shipped_runs("value")[0], "command": "python -m attnmarl.train --config nope --seed 0"}
    (tmp_path / "index.json").write_text(json.dumps([entry]))
    assert reproduce.main(["--index", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert not ray.is_initialized()
    assert json.loads((tmp_path / "out" / "report.json").read_text())["runs"][0]["verdict"] == "failed"
