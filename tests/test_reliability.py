"""Reliability, second pass (issue 24): no silent answer, no lost result, no crash of the package's own code.

One section per class of the issue; each tries several inputs of its class, not only the issue's
example. The mechanisms live in :mod:`attnmarl.checks` (typed checks), :mod:`attnmarl.files` (sealed
checkpoints, checked destinations, kept results), :mod:`attnmarl.interrupt` (one-line command-line endings)
and the configs' own checks; these tests hold them.
"""
import dataclasses
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

import attnmarl
import attnmarl.hard_attention
import attnmarl.relational
import attnmarl.vision
from attnmarl import checks
from attnmarl import seq2seq as s2s
from attnmarl.algos import mappo
from attnmarl.algos.maac import MAACConfig
from attnmarl.algos.maddpg import MADDPGConfig, ReplayBuffer
from attnmarl.algos.mappo import MAPPOConfig, make_agent
from attnmarl.attention import MultiHeadSelfAttention, SelfAttention, masked_softmax, self_attention
from attnmarl.checkpoints import (
    load_actor_from,
    load_agent,
    load_checkpoint,
    load_policy,
    save_checkpoint,
    seal_checkpoint,
    shipped_checkpoint,
)
from attnmarl.checks import check_seed
from attnmarl.envs import evaluate, make_batched, make_reference, random_policy
from attnmarl.files import atomic
from attnmarl.files.atomic import save_result
from attnmarl.files.sealed import seal
from attnmarl.interrupt import run_command
from attnmarl.nets import (
    Actor,
    AttentionCritic,
    AttentionPolicy,
    AttentionQ,
    ConcatCritic,
    ConcatPolicy,
    ConcatQ,
    EntityActor,
)
from attnmarl.notebook.viz import Arena, Frame, Heatmap, Points, frame_spec
from attnmarl.notebook.widgets import Dropdown, Explorer, Slider
from attnmarl.train import budget, check_init_actor, named_config, run, write_index
from attnmarl.train import main as train_main
from attnmarl.transfer import main as transfer_main
from attnmarl.versus import main as versus_main

TINY = MAPPOConfig("simple_spread", {"N": 3}, num_envs=8, rollout_steps=25, total_steps=200, d_x=8, heads=2, d_q=4,
                   d_out=4, critic_hidden=8, actor_hidden=8, entity_d=8, entity_ff=8)
SPREAD3 = shipped_checkpoint("policy", "pi-spread3-entity")  # discrete, entity actor, m = 3
MU3 = shipped_checkpoint("policy", "mu-spread3-attention")  # continuous, centralized attention actor
Q3 = shipped_checkpoint("qnet", "q-spread3-attention")  # MADDPG, continuous


@pytest.fixture(autouse=True)
def private_temporary_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Results kept when the disk fails go to the temporary folder (:func:`attnmarl.files.atomic.save_files`): a
    folder of pytest's own for each test here, so that the suite leaves nothing behind in /tmp."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("tempdir")))

def usage_error(main, argv, capsys) -> str:
    """The message of the usage error (exit status 2) ``main(argv)`` ends in."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


@pytest.fixture
def no_evaluation(monkeypatch):
    """Fail the test if a command line evaluates anything (its refusals must come before the work)."""
    def refuse(*args, **kwargs):
        raise AssertionError("evaluated before refusing")
    for module in ("attnmarl.transfer", "attnmarl.versus"):
        for name in ("evaluate", "episode_returns"):
            if hasattr(sys.modules[module], name):
                monkeypatch.setattr(f"{module}.{name}", refuse)


# ---- 1. a run that never learned is not saved as trained; a budget is trained exactly -----------------------------

@pytest.mark.parametrize("name,steps", [("q-spread3-attention", 640), ("q-spread3-concat", 1280),
                                        ("q-tag-attention", 9984), ("q-spread6-attention", 64)])
def test_a_maddpg_budget_that_ends_before_learning_starts_is_refused(name, steps):
    with pytest.raises(ValueError, match="ends before learning_starts = 10,000: the run would make no update"):
        named_config(name, steps=steps)


def test_a_maddpg_budget_with_one_update_is_accepted_and_the_first_is_named():
    assert named_config("q-spread3-attention", steps=10_048).num_updates == 157
    with pytest.raises(ValueError, match="give total_steps >= 4,000"):
        MADDPGConfig(num_envs=40, total_steps=3_960, learning_starts=4_000)
    MADDPGConfig(num_envs=40, total_steps=4_000, learning_starts=4_000)  # the last iteration updates


@pytest.mark.parametrize("name,steps,suggested", [
    ("spread3-concat", 6_399, "give 3,200 or 6,400"), ("spread3-concat", 3_201, "give 3,200 or 6,400"),
    ("pi-spread6-entity", 100_000, "give 99,200 or 102,400"), ("q-spread3-attention", 10_050, "give 10,048 or 10,112"),
])
def test_a_budget_that_is_not_a_whole_number_of_updates_is_refused_with_the_nearest_ones(name, steps, suggested):
    with pytest.raises(ValueError, match=f"is not a whole number of {name}'s updates.*{suggested}"):
        named_config(name, steps=steps)


def test_the_command_line_refuses_a_rounded_budget_and_says_the_budget_it_trains(capsys, tmp_path):
    message = usage_error(train_main, ["--config", "spread3-concat", "--steps", "6399", "--out", str(tmp_path)], capsys)
    assert "it would train 3,200" in message and not list(tmp_path.iterdir())
    assert budget(named_config("spread3-concat")) == "1,562 updates of 3,200 = 4,998,400 env steps"
    assert budget(named_config("q-spread3-attention")) == "3,125 iterations of 64 = 200,000 env steps"


# ---- 2. a set of files is written as one unit (seq2seq --train --out) ---------------------------------------------

S2S = ["--train", "--steps", "2", "--n-test", "4"]


def test_seq2seq_writes_its_two_checkpoints_and_log_as_one_unit(tmp_path, monkeypatch, capsys):
    out = tmp_path / "s2s"
    s2s.main([*S2S, "--out", str(out)])
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(before) == {"attention.pt", "no_attention.pt", "training_log.json"}
    log = json.loads(before["training_log.json"])
    s2s.check_outputs(out, log)  # the log names the checkpoints beside it
    for name, attention in s2s.ARCHITECTURES.items():
        s2s.load_checkpoint(out / f"{name}.pt", attention=attention)

    real_train, calls = s2s.train, []
    def interrupted_second_model(*args, **kwargs):  # Ctrl-C while the second model trains
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_train(*args, **kwargs)
    monkeypatch.setattr(s2s, "train", interrupted_second_model)
    with pytest.raises(KeyboardInterrupt):
        s2s.main([*S2S, "--seed", "1", "--out", str(out), "--replace"])
    monkeypatch.setattr(s2s, "train", real_train)

    real_write = atomic.write_atomically
    def full_disk(files):  # the disk fills while the second file is written
        real_write(dict(list(files.items())[:1]))
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(atomic, "write_atomically", full_disk)
    with pytest.raises(OSError, match=r"\(No space left on device\); the results are kept in (\S+)") as error:
        s2s.main([*S2S, "--seed", "2", "--out", str(out), "--replace"])
    kept = Path(str(error.value).rsplit("kept in ", 1)[1])
    s2s.check_outputs(kept, json.loads((kept / "training_log.json").read_text()))  # the new run, whole, elsewhere
    assert json.loads((kept / "training_log.json").read_text())["seed"] == 2
    monkeypatch.setattr(atomic, "write_atomically", real_write)
    with pytest.raises(ValueError, match="describes another no_attention.pt"):  # the one file let through is seen
        s2s.check_outputs(out, json.loads((out / "training_log.json").read_text()))
    (out / "no_attention.pt").write_bytes(before["no_attention.pt"])
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the first run, whole; no temporary files


def test_a_seq2seq_log_beside_another_runs_checkpoint_is_refused(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    s2s.main([*S2S, "--out", str(a)])
    s2s.main([*S2S, "--seed", "3", "--out", str(b)])
    (a / "attention.pt").write_bytes((b / "attention.pt").read_bytes())
    with pytest.raises(ValueError, match="describes another attention.pt"):
        s2s.check_outputs(a, json.loads((a / "training_log.json").read_text()))


# ---- 3. a string is never a bool or a number ----------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,message", [
    ({"continuous_actions": "false"}, "continuous_actions must be True or False; got 'false'"),
    ({"continuous_actions": "False"}, "continuous_actions must be True or False"),
    ({"continuous_actions": 1}, "continuous_actions must be True or False; got 1"),
    ({"terminate_on_success": "no"}, "terminate_on_success must be True or False; got 'no'"),
    ({"local_ratio": "0.5"}, "local_ratio must be a real number; got '0.5'"),
    ({"local_ratio": None}, "local_ratio must be a real number; got None"),
    ({"max_cycles": "25"}, "max_cycles must be an int, got '25'"),
    ({"N": 3.0}, "N must be an int, got 3.0"),
    ({"N": True}, "N must be an int, got True"),
])
def test_scenario_arguments_of_the_wrong_type_are_refused_everywhere(kwargs, message):
    for make in (lambda: make_reference("simple_spread", **kwargs), lambda: make_batched("simple_spread", 2, **kwargs),
                 lambda: MAPPOConfig("simple_spread", kwargs)):
        with pytest.raises(ValueError, match=message):
            make()


@pytest.mark.parametrize("call,message", [
    (lambda: MAPPOConfig(anneal_lr="no"), "anneal_lr must be True or False; got 'no'"),
    (lambda: MAPPOConfig(eval_deterministic="false"), "eval_deterministic must be True or False"),
    (lambda: MAPPOConfig(adv_norm_per_agent=1), "adv_norm_per_agent must be True or False; got 1"),
    (lambda: MADDPGConfig(eval_deterministic="yes"), "eval_deterministic must be True or False"),
    (lambda: MAPPOConfig(gamma="0.9"), "gamma must be a real number; got '0.9'"),
    (lambda: MAPPOConfig(num_envs="8"), "num_envs must be a positive integer; got '8'"),
    (lambda: load_policy(SPREAD3, deterministic="no"), "deterministic must be True or False; got 'no'"),
    (lambda: load_policy(SPREAD3, deterministic=0), "deterministic must be True or False; got 0"),
    (lambda: SelfAttention(4, 4, 4, scale="no"), "scale must be True or False; got 'no'"),
    (lambda: MultiHeadSelfAttention(4, 4, 4, 2, scale="False"), "scale must be True or False"),
    (lambda: self_attention(torch.zeros(3, 4), *torch.zeros(3, 4, 4), scale="no"), "scale must be True or False"),
    (lambda: self_attention(torch.zeros(3, 4), *torch.zeros(3, 4, 4), need_weights="no"), "need_weights must be"),
    (lambda: s2s.Seq2SeqConfig(attention="no"), "attention must be True or False; got 'no'"),
    (lambda: s2s.load_pretrained(attention="yes"), "attention must be True or False; got 'yes'"),
])
def test_flags_and_numbers_given_as_strings_or_other_types_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ---- 4. a checkpoint plays only in the action space it was trained in ---------------------------------------------

@pytest.mark.parametrize("path,kwargs", [
    (SPREAD3, {"continuous_actions": True}), (SPREAD3, {"continuous_actions": True, "N": 4}),
    (MU3, {"continuous_actions": False}),
])
def test_a_policy_is_refused_in_the_other_action_space(path, kwargs):
    with pytest.raises(ValueError, match="action space: checkpoint .*actions, here .*actions"):
        load_policy(path, **kwargs)


def test_a_maddpg_policy_is_refused_with_discrete_actions_and_a_fine_tuning_start_across_action_spaces():
    with pytest.raises(ValueError, match="cannot run with {'continuous_actions': False}: MADDPG needs continuous"):
        load_policy(Q3, continuous_actions=False)
    continuous = MAPPOConfig("simple_spread", {"N": 3, "continuous_actions": True}, actor="entity", total_steps=3200)
    with pytest.raises(ValueError, match="action space: checkpoint discrete actions, here continuous"):
        load_actor_from(make_agent(continuous), continuous, SPREAD3)
    with pytest.raises(ValueError, match="holds a attnmarl.maddpg/1 agent, not a MAPPO one"):
        load_actor_from(make_agent(continuous), continuous, Q3)


# ---- 5. attention never returns NaN or a wrong c for finite input -------------------------------------------------

@pytest.mark.parametrize("value", [1e30, 3e38, -1e25, 1e20])
@pytest.mark.parametrize("need_weights", [True, False])
def test_attention_refuses_finite_input_that_would_overflow_float32(value, need_weights):
    torch.manual_seed(0)
    x = torch.randn(2, 5, 4)
    x[1, 2, 3] = value  # one entry is enough
    for layer in (MultiHeadSelfAttention(4, 3, 5, heads=2), MultiHeadSelfAttention(4, 8, 2, heads=1, scale=True),
                  SelfAttention(4, 4, 4)):
        with pytest.raises(ValueError, match="x is finite but too large for attention in torch.float32"):
            layer(x, need_weights=need_weights)


@pytest.mark.parametrize("value", [1e30, 3e38])
def test_an_overflow_inside_the_entity_actor_is_named_as_one_not_blamed_on_the_mask(value):
    o = torch.randn(2, 3, 18)
    o[0, 1, 4] = value
    with pytest.raises(ValueError, match="token features are finite but too large for the entity actor") as error:
        EntityActor("simple_spread", {"N": 3}, 3, 18, 5, (0, 0, 0))(o)
    assert "mask" not in str(error.value)
    with pytest.raises(ValueError, match="a row of -inf scores leaves no key") as error:
        masked_softmax(torch.tensor([[0.0, 1.0], [-math.inf, -math.inf]]))
    assert "overflow" not in str(error.value)


def test_the_same_inputs_in_float64_and_ordinary_ones_in_float32_still_give_the_exact_answer():
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention(4, 3, 5, heads=2)
    x = torch.full((2, 3, 4), 1e30, dtype=torch.float64)
    c, _ = layer.double()(x, need_weights=False)
    c_weights, _ = layer(x)
    assert torch.isfinite(c).all() and torch.allclose(c, c_weights)
    layer.float()
    for scale in (1.0, 1e3, 1e6):
        x = torch.randn(2, 3, 4) * scale
        assert torch.allclose(layer(x, need_weights=False)[0], layer(x)[0], rtol=1e-4, atol=1e-4 * scale)


def test_empty_batches_give_empty_outputs_in_attention_layers_critics_actors_and_q_networks():
    types = (0, 0, 0)
    for need_weights in (True, False):
        c, alpha = MultiHeadSelfAttention(4, 3, 5, heads=2)(torch.zeros(0, 3, 4), need_weights=need_weights)
        assert c.shape == (0, 3, 10) and (alpha is None or alpha.shape == (0, 2, 3, 3))
    o = torch.zeros(0, 3, 18)
    for net in (AttentionCritic(3, 18), ConcatCritic(3, 18)):
        assert net(o).shape == (0, 3)
    for net in (Actor(3, 18, 5, types), AttentionPolicy(3, 18, 5, types), ConcatPolicy(3, 18, 5, types),
                EntityActor("simple_spread", {"N": 3}, 3, 18, 5, types)):
        assert net(o).shape == (0, 3, 5)
    for net in (AttentionQ(3, 18, 5, types), ConcatQ(3, 18, 5, types)):
        assert net(o, torch.zeros(0, 3, 5)).shape == (0, 3)


# ---- 6. no result is lost at the last step ------------------------------------------------------------------------

@pytest.mark.parametrize("out,message", [
    ("", "--out is empty"), ("{folder}", "--out = '.*' is a folder"),
    ("{file}/result.json", "the folder of --out = '.*' is a file, not a folder"),
])
def test_transfer_and_versus_check_their_destination_before_any_evaluation(tmp_path, capsys, no_evaluation, out,
                                                                           message):
    (tmp_path / "file").write_text("a file")
    out = out.format(folder=tmp_path, file=tmp_path / "file")
    assert re.search(message, usage_error(transfer_main, ["--m", "3", "--episodes", "1", "--out", out], capsys))
    run = str(shipped_checkpoint("qnet", "q-tag-attention")).removesuffix("-seed0.pt")
    assert re.search(message, usage_error(versus_main, ["--run", run, "--episodes", "1", "--out", out], capsys))


def test_a_trained_run_that_cannot_be_written_is_kept_whole_and_the_error_says_where(tmp_path, monkeypatch):
    def full_disk(files):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(atomic, "write_atomically", full_disk)
    with pytest.raises(OSError, match=r"could not write out = .*\(No space left on device\); the results are kept in "
                                      r"(\S+)") as error:
        run("spread3-concat", steps=3200, out=tmp_path, evals=0, final_episodes=1, progress=False)
    kept = Path(str(error.value).rsplit("kept in ", 1)[1])
    summary = json.loads((kept / "spread3-concat-seed0.json").read_text())
    assert load_checkpoint(kept / "spread3-concat-seed0.pt")[2]["run_id"] == summary["run_id"]
    assert list(tmp_path.iterdir()) == []


def test_a_result_that_cannot_be_written_is_kept_and_the_error_says_where(tmp_path, monkeypatch, capsys):
    def full_disk(files):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(atomic, "write_atomically", full_disk)
    with pytest.raises(OSError, match=r"could not write --out = '.*zero.json' \(No space left on device\); the "
                                      r"results are kept in (\S+)") as error:
        transfer_main(["--m", "3", "--episodes", "2", "--out", str(tmp_path / "zero.json")])
    kept = Path(str(error.value).rsplit("kept in ", 1)[1]) / "zero.json"
    result = json.loads(kept.read_text())
    kept.unlink()
    kwargs = {"N": 3}
    assert result["baselines"]["3"]["random"][0] == pytest.approx(
        evaluate(random_policy("simple_spread", **kwargs), "simple_spread", 2, **kwargs)[0], abs=1e-4)
    capsys.readouterr()
    monkeypatch.setattr(atomic.tempfile, "mkdtemp", lambda **kwargs: (_ for _ in ()).throw(OSError("no tmp")))
    with pytest.raises(OSError, match="printed to standard error"):
        save_result(tmp_path / "x.json", {"score": 1.5})
    assert json.loads(capsys.readouterr().err) == {"score": 1.5}


# ---- 7. a run never silently replaces another; Ctrl-C ends in one line --------------------------------------------

def test_a_new_run_does_not_replace_an_earlier_run_of_the_same_config_and_seed(tmp_path, capsys):
    for suffix in (".json", ".pt", ".csv"):  # any one of the three files is an earlier run
        out = tmp_path / suffix.strip(".")
        out.mkdir()
        (out / f"spread3-concat-seed0{suffix}").write_text("{}")
        with pytest.raises(ValueError, match="already holds a run of spread3-concat with seed 0"):
            run("spread3-concat", steps=3200, out=out, progress=False)
        message = usage_error(train_main, ["--config", "spread3-concat", "--steps", "3200", "--out", str(out)], capsys)
        assert "pass --replace to replace it" in message
    run("spread3-concat", seed=1, steps=3200, out=tmp_path / "json", evals=0, final_episodes=1, progress=False)


def test_a_replaced_run_says_that_the_index_describes_the_old_one(tmp_path):
    arguments = dict(steps=3200, out=tmp_path, evals=0, final_episodes=1, progress=False)
    first = run("spread3-concat", **arguments)
    write_index(tmp_path)
    with pytest.warns(UserWarning, match="index.json still describes the earlier one"):
        second = run("spread3-concat", replace_run=True, **arguments)
    assert first["run_id"] != second["run_id"]
    assert json.loads((tmp_path / "spread3-concat-seed0.json").read_text())["run_id"] == second["run_id"]


def start_training(out: Path) -> subprocess.Popen:
    """``python -m attnmarl.train`` of 100 updates into ``out``, with SIGINT's default handler as from a terminal
    (a pytest-xdist worker ignores SIGINT, and a child inherits that)."""
    env = dict(os.environ, PYTHONPATH=str(Path(attnmarl.__file__).parents[1]), OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-m", "attnmarl.train", "--config", "spread3-concat", "--steps",
                             "320000", "--out", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_ctrl_c_ends_a_training_run_in_one_line_and_writes_nothing(tmp_path):
    process = start_training(tmp_path)
    assert "100 updates of 3,200 = 320,000 env steps" in process.stdout.readline()  # training starts now
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == ("python -m attnmarl.train: interrupted; no file of this run was written, "
                                            "and a run cannot resume: start it again to train it")
    assert list(tmp_path.iterdir()) == []


HANDBACK_PROBE = """
import signal, sys
_signal = signal.signal
def _probe(number, handler):
    if number == signal.SIGINT and handler is signal.default_int_handler:
        sys.stderr.write(f"handed back; torch._dynamo imported: {'torch._dynamo' in sys.modules}\\n")
    return _signal(number, handler)
signal.signal = _probe
"""


@pytest.mark.parametrize("command", [["attnmarl.train", "--config", "nope"], ["attnmarl.seq2seq", "--seed", "-1"]])
def test_the_training_commands_hand_ctrl_c_back_only_after_the_imports_they_make_late(tmp_path, command):
    """torch's first optimizer imports torch._dynamo (4-5 s). A Ctrl-C inside that import, in the exec() that
    dataclasses run, is remembered by CPython 3.11 as unhandled, and the process ended by SIGINT (status -2, not
    130) after printing its one line. So the commands that train import it while attnmarl's start-up handler
    still holds Ctrl-C: when Python's own handler comes back (a probe reports it), torch._dynamo is imported."""
    (tmp_path / "sitecustomize.py").write_text(HANDBACK_PROBE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(Path(attnmarl.__file__).parents[1])]))
    done = subprocess.run([sys.executable, "-m", *command], env=env, capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert "handed back; torch._dynamo imported: True" in done.stderr.splitlines(), done.stderr[-2000:]


@pytest.mark.parametrize("error,status,line", [
    (KeyboardInterrupt(), 130, "prog: interrupted; nothing written"),
    (ValueError("steps must be positive"), 1, "prog: error: steps must be positive"),
    (OSError("could not write x; kept in y"), 1, "prog: error: could not write x; kept in y"),
])
def test_run_command_ends_a_command_in_one_line(capsys, error, status, line):
    def main():
        raise error
    with pytest.raises(SystemExit) as exit_:
        run_command("prog", main, "nothing written")
    assert exit_.value.code == status and capsys.readouterr().err.strip() == line


# ---- 8. a damaged checkpoint is refused ---------------------------------------------------------------------------

def flip_byte(path: Path, member: str, offset: int) -> None:
    """Flip every bit of one byte of ``member`` (a record of the torch zip archive) in place."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    data = bytearray(path.read_bytes())
    header = info.header_offset
    name_length, extra_length = int.from_bytes(data[header + 26:header + 28], "little"), int.from_bytes(
        data[header + 28:header + 30], "little")
    start = header + 30 + name_length + extra_length
    data[start + offset % info.file_size] ^= 0xFF
    path.write_bytes(bytes(data))


def tensor_records(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        return [name for name in archive.namelist() if "/data/" in name and not name.endswith(".pkl")]


@pytest.mark.parametrize("which", [0, 1, -1])
@pytest.mark.parametrize("offset", [0, 5])
def test_one_flipped_byte_in_a_stored_tensor_is_refused(tmp_path, which, offset):
    path = tmp_path / "tiny.pt"
    save_checkpoint(path, make_agent(TINY), TINY)
    flip_byte(path, tensor_records(path)[which], offset)
    for load in (load_checkpoint, load_policy, lambda p: load_actor_from(make_agent(TINY), TINY, p)):
        with pytest.raises(ValueError, match="is a damaged attnmarl checkpoint: its contents no longer match"):
            load(path)


def test_a_flipped_byte_anywhere_in_the_settings_is_refused_or_changes_nothing(tmp_path):
    """Every byte of the pickled config, metadata and checksum, flipped in turn: the file is refused, or it
    loads exactly what was saved (a flipped pickle memo index or protocol number changes no value)."""
    path = tmp_path / "tiny.pt"
    save_checkpoint(path, make_agent(TINY), TINY, score=-12.5)
    saved = load_checkpoint(path)
    with zipfile.ZipFile(path) as archive:
        pickle_name = next(n for n in archive.namelist() if n.endswith("data.pkl"))
        size = archive.getinfo(pickle_name).file_size
    clean, refused = path.read_bytes(), 0
    for offset in range(0, size, 3):
        path.write_bytes(clean)
        flip_byte(path, pickle_name, offset)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch warns about the odd protocol number
                config, state, metadata = load_checkpoint(path)
        except ValueError:
            refused += 1
            continue
        assert config == saved[0] and metadata == saved[2] and state.keys() == saved[1].keys()
        assert all(torch.equal(state[k], saved[1][k]) for k in state), offset
    assert refused > size // 3 * 0.8  # most flips change a value, and every one of those is refused


def test_seq2seq_checkpoints_are_sealed_too_and_old_unsealed_files_need_a_trusted_seal(tmp_path):
    path = tmp_path / "s2s.pt"
    s2s.save_checkpoint(s2s.new_model(attention=True), path)
    clean = path.read_bytes()
    flip_byte(path, tensor_records(path)[2], 3)
    with pytest.raises(ValueError, match="is a damaged seq2seq checkpoint"):
        s2s.load_checkpoint(path)
    with pytest.raises(ValueError, match="damaged"):  # sealing never blesses damage
        seal_checkpoint(path)
    path.write_bytes(clean)
    data = torch.load(path, weights_only=True)
    del data["checksum"]
    torch.save(data, path)  # as an older version saved it
    with pytest.raises(ValueError, match=r"without a checksum .*seal_checkpoint\(path\) adds one"):
        s2s.load_checkpoint(path)
    seal_checkpoint(path)
    s2s.load_checkpoint(path, attention=True)


def test_every_shipped_checkpoint_is_sealed():
    for path in sorted(attnmarl.checkpoints.ASSETS.glob("*/*.pt")):
        data = torch.load(path, weights_only=True)
        assert data["checksum"] == seal({k: v for k, v in data.items() if k != "checksum"})["checksum"], path


# ---- 9. a policy says what it was built for -----------------------------------------------------------------------

@pytest.mark.parametrize("scenario,kwargs,played", [
    ("simple_spread", {"N": 5}, "simple_spread with 5 agents"),
    ("simple_spread", {"N": 2}, "simple_spread with 2 agents"),
    ("simple_tag", {}, "simple_tag with 4 agents"),
    ("simple_spread", {"continuous_actions": True}, "continuous actions"),
])
def test_a_policy_in_another_game_is_refused_naming_what_it_was_built_for(scenario, kwargs, played):
    policy = load_policy(SPREAD3)
    built = (r"the policy was built for simple_spread with 3 agents \(agent_0, agent_1, agent_2\), observations of 18 "
             "numbers, discrete actions")
    with pytest.raises(ValueError, match=f"{built}; it cannot play .*{played}"):
        evaluate(policy, scenario, episodes=1, **kwargs)
    observations, _ = make_reference(scenario, **kwargs).reset(seed=0)
    if observations.keys() != {"agent_0", "agent_1", "agent_2"}:
        with pytest.raises(ValueError, match=f"{built}; it was given the observations of"):
            policy(observations)


@pytest.mark.parametrize("run,m,message", [
    ("policy/mu-spread3-attention", "3", "continuous actions.*transfer scores discrete policies"),
    ("policy/pi-spread3-flat", "4", r"at m = 3; its weights' shapes depend on m, so it cannot run at m = \[4\]"),
    ("policy/pi-tag-flat", "3", "was built for simple_tag .*; it cannot play simple_spread"),
])
def test_transfer_refuses_runs_it_cannot_score_before_any_evaluation(capsys, no_evaluation, tmp_path, run, m, message):
    err = usage_error(transfer_main, ["--run", run, "--m", m, "--out", str(tmp_path / "x.json")], capsys)
    assert re.search(message, err)


def test_versus_refuses_a_run_of_another_scenario_naming_what_each_was_built_for(capsys, no_evaluation, tmp_path):
    run = str(SPREAD3).removesuffix("-seed0.pt")
    err = usage_error(versus_main, ["--run", run, "--out", str(tmp_path / "x.json")], capsys)
    assert "must be a simple_tag run" in err and "were built for" in err and "simple_spread {'N': 3}" in err


# ---- 10. a config error is named as one, not reported as divergence -----------------------------------------------

@pytest.mark.parametrize("num_envs,rollout_steps,num_minibatches", [(1, 2, 2), (2, 1, 2), (4, 2, 8), (1, 1, 1)])
def test_a_minibatch_of_one_env_step_with_per_agent_normalisation_is_refused_in_the_config(num_envs, rollout_steps,
                                                                                           num_minibatches):
    with pytest.raises(ValueError, match="cannot normalise each agent's advantages"):
        MAPPOConfig(num_envs=num_envs, rollout_steps=rollout_steps, num_minibatches=num_minibatches,
                    total_steps=num_envs * rollout_steps, adv_norm_per_agent=True)
    MAPPOConfig(num_envs=num_envs, rollout_steps=rollout_steps, num_minibatches=num_minibatches,
                total_steps=num_envs * rollout_steps)  # over all m agents together a minibatch of one step works


def test_one_advantage_per_minibatch_is_refused_before_training():
    config = MAPPOConfig("simple_spread", {"N": 1}, num_envs=1, rollout_steps=2, num_minibatches=2, total_steps=2)
    with pytest.raises(ValueError, match="holds one advantage, which cannot be normalised"):
        mappo.train(config)


# ---- the rest of the issue: explorers, sizes, seeds, summaries, fine-tuning assets --------------------------------

def changed(panel, **fields):
    """``panel`` with ``fields`` set after it was made (a Heatmap refuses a non-finite vmax when made, so this is
    how one reaches the renderer's own check)."""
    for name, value in fields.items():
        setattr(panel, name, value)
    return panel


@pytest.mark.parametrize("panel,field", [
    (Heatmap(np.array([[0.5, np.nan]]), ["q"], ["a", "b"], title="alpha"), "values"),
    (changed(Heatmap(np.ones((1, 1)), ["q"], ["a"], title="alpha"), vmax=math.inf), "vmax"),
    (Points(np.array([[0.0, np.inf]]), ["x"], title="tokens"), "xy"),
    (Arena(np.array([[np.nan, 0.0]]), [0.1], ["red"], ["a"], title="world"), "xy"),
])
def test_a_non_finite_number_in_a_panel_is_named_not_drawn_as_a_blank_page(panel, field):
    with pytest.raises(ValueError, match=f"panel '{panel.title}' has NaN or infinite {field}"):
        frame_spec(Frame([panel]))

    def frame(k):
        return Frame([panel if k == 2 else Heatmap(np.ones((1, 1)), ["q"], ["a"])])
    with pytest.raises(ValueError, match=f"probe at {{'k': 2}}: the .* panel '{panel.title}'"):
        Explorer(frame, [Slider("k", [1, 2, 3], 1)], title="probe").static_html()


@pytest.mark.parametrize("scenario,kwargs", [
    ("simple_spread", {"N": 5000}), ("simple_spread", {"N": 1500}),
    ("simple_tag", {"num_good": 2000, "num_adversaries": 2000}),
    ("collect_treasure", {"num_collectors": 3000, "num_treasures": 3000}),
])
def test_worlds_too_large_to_build_in_reasonable_time_are_refused_at_once(scenario, kwargs):
    start = time.perf_counter()
    for make in (lambda: make_reference(scenario, **kwargs), lambda: make_batched(scenario, 1, **kwargs)):
        with pytest.raises(ValueError, match=r"entities\) on mpe2 would take about .* the time grows as the square of "
                                             "their number.*ATTNMARL_ALLOW_COSTLY=1"):
            make()
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("call,message", [
    (lambda: check_seed(2**64), "seed must be at most 18,446,744,073,709,551,615"),
    (lambda: MAPPOConfig(seed=2**64 + 1), "seed must be at most"),
    (lambda: make_batched("simple_spread", 2, seed=2**64), "seed must be at most"),
    (lambda: evaluate(random_policy("simple_spread"), "simple_spread", 1, seed=2**65), "seed must be at most"),
    (lambda: MAPPOConfig(num_envs=2**40), "num_envs must be at most"),
    (lambda: make_batched("simple_spread", 2**33), "num_envs must be at most 2,147,483,647"),
    (lambda: make_reference("simple_spread", max_cycles=2**40), "max_cycles must be >= 1 and <= 2,147,483,647"),
])
def test_integers_beyond_the_range_torch_and_numpy_take_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_command_lines_refuse_huge_integers_with_a_usage_error(capsys, tmp_path):
    err = usage_error(train_main, ["--config", "spread3-concat", "--seed", "99999999999999999999"], capsys)
    assert "argument --seed: must be at most 18,446,744,073,709,551,615" in err
    err = usage_error(transfer_main, ["--episodes", str(2**40), "--out", str(tmp_path / "x.json")], capsys)
    assert "argument --episodes: must be at most" in err


@pytest.mark.parametrize("content,reason", [
    (b"{not json", "it is not readable JSON"), (b"\xff\xfe", "it is not readable JSON"),
    (b"[1, 2]", "it holds a list, not a run summary"),
    (b'{"name": "x"}', "it is not a run summary of attnmarl.train: fields .* are missing"),
    (b"", "it is not readable JSON"),
])
def test_corrupt_or_foreign_summaries_are_left_out_of_the_index_not_fatal(tmp_path, content, reason):
    (tmp_path / "spread3-concat-seed0.json").write_bytes(content)
    with pytest.warns(UserWarning, match=f"spread3-concat-seed0.json left out of the index: {reason}"):
        assert write_index(tmp_path) == []
    assert json.loads((tmp_path / "index.json").read_text()) == []


def test_a_summary_under_another_runs_name_is_left_out(tmp_path):
    summary = json.loads((attnmarl.checkpoints.ASSETS / "value" / "spread3-concat-seed0.json").read_text())
    (tmp_path / "spread3-concat-seed7.json").write_text(json.dumps(summary))
    with pytest.warns(UserWarning, match="describes run spread3-concat-seed0, not spread3-concat-seed7"):
        assert write_index(tmp_path) == []


def test_a_missing_fine_tuning_checkpoint_is_found_before_training(capsys, tmp_path):
    config = named_config("finetune-spread12-entity", seed=7)  # chapter 8 ships seeds 0-2
    with pytest.raises(ValueError, match="init_actor: policy/pi-spread6-entity-seed7.pt is neither a file nor"):
        check_init_actor(config)
    err = usage_error(train_main, ["--config", "finetune-spread12-entity", "--seed", "7", "--out", str(tmp_path)],
                      capsys)
    assert "is neither a file nor a shipped asset" in err and not list(tmp_path.iterdir())
    check_init_actor(named_config("finetune-spread12-entity", seed=0))


def test_the_seq2seq_architecture_messages_never_contradict_themselves(tmp_path):
    path = tmp_path / "s2s.pt"
    s2s.save_checkpoint(s2s.new_model(attention=False), path)
    with pytest.raises(ValueError, match="holds a seq2seq model without attention, but a model with attention"):
        s2s.load_checkpoint(path, attention=True)
    for truthy in ("yes", 1, "True"):
        with pytest.raises(ValueError, match="attention must be True or False"):
            s2s.load_checkpoint(path, attention=truthy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s2s.load_checkpoint(path, attention=False)


@pytest.mark.parametrize("call,message", [
    (lambda: write_index("/nonexistent-folder-of-runs"), "is not a folder of runs"),
    (lambda: write_index(__file__), "is not a folder of runs"),
    (lambda: run("spread3-concat", steps=3200, out=None), "out must name a folder; got None"),
    (lambda: run("spread3-concat", steps=3200, out=""), "out must name a folder; got ''"),
    (lambda: MAPPOConfig(init_actor=5), "init_actor must be a checkpoint's path"),
    (lambda: MAPPOConfig(actor="entity", entity_frame="polar"), "entity_frame must be one of"),
    (lambda: named_config("spread3-concat", steps="6400"), "total_steps must be a positive integer; got '6400'"),
    (lambda: load_policy(SPREAD3, N=3.5), "cannot run with {'N': 3.5}: simple_spread: N must be an int"),
    (lambda: load_policy(SPREAD3, N=5000), "cannot run with {'N': 5000}: .* on mpe2 would take about 17 min"),
])
def test_other_arguments_a_careful_user_might_get_wrong_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_index_of_a_missing_folder_is_a_usage_error(capsys):
    assert "--index: /nonexistent-runs is not a folder of runs" in usage_error(
        train_main, ["--index", "/nonexistent-runs"], capsys)


@pytest.mark.parametrize("build,message", [
    (lambda: ConcatCritic(2000, 18), "m = 2,000 x d_out = 64 x d_in = 64,000 = 8,192,000,000 numbers"),
    (lambda: AttentionCritic(10**6, 18), r"m = 1,000,000 (x d_out|unshared layers)"),
    (lambda: ConcatCritic(1000, 400), "m = 1,000 (x d_out = 64 x d_in = 32,000|unshared layers of 64 x 32,000)"),
    (lambda: ConcatPolicy(2000, 300, 5, [0] * 2000), "m = 2,000 x d_out = 64 x d_in = 64,000"),
])
def test_networks_too_large_to_build_in_reasonable_time_are_refused_at_once(build, message):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=message):
        build()
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("argv,message", [
    (["--m", "5000"], "simple_spread with {'N': 5000} (10,000 entities) on mpe2 would take about 17 min"),
    (["--m", "2-1500"], "{'N': 1225} (2,450 entities) on mpe2 would take about 60 s"),
    (["--scenario", "collect_treasure", "--m", "3000"], "(5,998 entities) on mpe2 would take about"),
])
def test_transfer_refuses_teams_too_large_to_build_before_any_evaluation(capsys, no_evaluation, tmp_path, argv,
                                                                         message):
    assert message in usage_error(transfer_main, [*argv, "--out", str(tmp_path / "x.json")], capsys)


def test_small_helpers_name_their_bad_arguments_too():
    from attnmarl.attention import causal_mask
    from attnmarl.checkpoints import shipped_curve
    for call, message in ((lambda: causal_mask(10**6), "m must be at most 32,768"),
                          (lambda: shipped_checkpoint("policy", "pi-spread3-entity", "0"), "seed must be"),
                          (lambda: shipped_curve("policy", "pi-spread3-entity", -1), "seed must be")):
        with pytest.raises(ValueError, match=message):
            call()


@pytest.mark.parametrize("lim", [1e12, math.inf, 0.0, -1.0, "3"])
def test_a_drawing_square_that_would_take_for_ever_or_make_no_sense_is_refused(lim):
    start = time.perf_counter()
    for panel in (lambda: Points(np.zeros((1, 2)), ["a"], lim=lim),
                  lambda: Arena(np.zeros((1, 2)), [0.1], ["red"], ["a"], lim=lim)):
        with pytest.raises(ValueError, match="lim must be a"):
            panel()
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("policy,kwargs,message", [
    (lambda obs: dict.fromkeys(obs, 7), {}, r"action for agent_0, 7, is not in its action space Discrete\(5\)"),
    (lambda obs: dict.fromkeys(obs, -1), {}, "action for agent_0, -1, is not in its action space"),
    (lambda obs: dict.fromkeys(obs, 1.5), {}, "action for agent_0, 1.5, is not in its action space"),
    (lambda obs: dict.fromkeys(obs, True), {}, "action for agent_0, True, is not in its action space"),
    (lambda obs: {"agent_0": 0}, {}, r"must return one action for each agent of simple_spread .*got \['agent_0'\]"),
    (lambda obs: {**dict.fromkeys(obs, 0), "ghost": 0}, {}, "must return one action for each agent"),
    (lambda obs: None, {}, "must return one action for each agent .*got NoneType"),
    (lambda obs: {a: np.zeros(3) for a in obs}, {"continuous_actions": True}, r"is not in its action space Box"),
    (lambda obs: {a: np.full(5, np.nan) for a in obs}, {"continuous_actions": True}, "is not in its action space"),
    (5, {}, "policy must be a function from the observation dict to the action dict; got int"),
])
def test_a_policy_whose_actions_mpe2_cannot_take_is_named_before_mpe2_fails_inside(policy, kwargs, message):
    with pytest.raises(ValueError, match=message):
        evaluate(policy, "simple_spread", 1, **kwargs)
    if callable(policy):
        with pytest.raises(ValueError, match=message):
            attnmarl.envs.render_episode("simple_spread", policy=policy, **kwargs)


@pytest.mark.parametrize("baseline", [lambda: attnmarl.envs.chase_policy(), lambda: random_policy("simple_tag"),
                                      lambda: random_policy("simple_spread", N=4)])
def test_the_scripted_and_random_baselines_say_what_they_were_built_for(baseline):
    with pytest.raises(ValueError, match="the policy was built for simple_tag|built for simple_spread with 4 agents"):
        evaluate(baseline(), "simple_spread", 1)


# ---- second pass: what a new probe found ----------------------------------------------------------------------------

@pytest.mark.parametrize("existing", [["attention.pt"], ["no_attention.pt"], ["training_log.json"],
                                      ["attention.pt", "no_attention.pt", "training_log.json"]])
def test_seq2seq_refuses_to_replace_earlier_models_or_log_unless_told(tmp_path, capsys, existing):
    out = tmp_path / "s2s"
    out.mkdir()
    for name in existing:
        (out / name).write_bytes(b"earlier")
    assert "--replace" in usage_error(s2s.main, [*S2S, "--out", str(out)], capsys)
    assert all((out / name).read_bytes() == b"earlier" for name in existing)  # untouched


@pytest.mark.parametrize("out", ["", " ", "\t"])
def test_seq2seq_refuses_an_empty_out_instead_of_writing_into_the_current_folder(capsys, out):
    assert "--out must name a folder" in usage_error(s2s.main, [*S2S, "--out", out], capsys)


def test_transfer_and_versus_refuse_to_replace_an_existing_result_unless_told(tmp_path, capsys, no_evaluation):
    out = tmp_path / "result.json"
    out.write_text("earlier")
    run = str(shipped_checkpoint("qnet", "q-tag-attention")).removesuffix("-seed0.pt")
    for main, argv in ((transfer_main, ["--m", "3"]), (versus_main, ["--run", run])):
        error = usage_error(main, [*argv, "--episodes", "1", "--out", str(out)], capsys)
        assert "exists already" in error and "--replace" in error
    assert out.read_text() == "earlier"
    assert atomic.check_writable_file(out, replace=True) == out  # on purpose, it is allowed


@pytest.mark.parametrize("option", ["--eval-episodes", "--final-episodes"])
@pytest.mark.parametrize("value", [checks.MAX_EPISODES + 1, 2**31 - 1])
def test_evaluations_too_large_to_run_are_refused_before_training(capsys, tmp_path, option, value):
    error = usage_error(train_main, ["--config", "pi-spread3-flat", "--steps", "3200", option, str(value),
                                     "--out", str(tmp_path)], capsys)
    assert f"must be at most {checks.MAX_EPISODES:,}" in error
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="final_episodes must be at most"):
        run("pi-spread3-flat", steps=3200, out=tmp_path, final_episodes=value)


@pytest.mark.parametrize("value", [checks.MAX_EPISODES + 1, 10**8])
def test_huge_test_sets_and_game_counts_are_refused_at_once(capsys, tmp_path, value):
    assert "must be at most" in usage_error(s2s.main, ["--train", "--steps", "2", "--n-test", str(value)], capsys)
    assert "must be at most" in usage_error(transfer_main, ["--m", "3", "--episodes", str(value), "--out",
                                                            str(tmp_path / "t.json")], capsys)
    run_ = str(shipped_checkpoint("qnet", "q-tag-attention")).removesuffix("-seed0.pt")
    assert "must be at most" in usage_error(versus_main, ["--run", run_, "--episodes", str(value), "--out",
                                                          str(tmp_path / "v.json")], capsys)


@pytest.mark.parametrize("threads", [checks.MAX_THREADS + 1, 10_000, 2**31 - 1])
def test_more_threads_than_cores_are_refused(capsys, tmp_path, threads):
    for main, argv in ((train_main, ["--config", "pi-spread3-flat", "--steps", "3200", "--out", str(tmp_path)]),
                       (s2s.main, ["--train", "--steps", "2"])):
        error = usage_error(main, [*argv, "--threads", str(threads)], capsys)
        assert f"must be at most {checks.MAX_THREADS:,} (this machine has {checks.MAX_THREADS} cores)" in error


@pytest.mark.parametrize("num_updates,evals,made", [(1, 5, 1), (1, 20, 1), (3, 20, 3), (10, 3, 4), (10, 5, 5),
                                                    (10, 0, 1)])
def test_the_number_of_evaluations_a_run_makes_is_said_when_it_is_not_the_number_asked(num_updates, evals, made):
    from attnmarl.train import evaluation_count
    assert evaluation_count(num_updates, evals) == made
    every = max(1, num_updates // max(1, evals))
    assert made == len([u for u in range(1, num_updates + 1) if u % every == 0 or u == num_updates])


@pytest.mark.parametrize("bad", [{"m": 99}, {"m": "4"}, {"m": -1}])
def test_a_refused_explorer_update_leaves_the_explorer_as_it_was(bad):
    from attnmarl.notebook.explorers.self_attention import alpha_frame
    explorer = Explorer(alpha_frame, [Slider("m", [3, 4, 5], 4), Slider("seed", [0, 1], 0)])
    explorer.update()
    before = dict(explorer.settings), explorer.frame
    with pytest.raises(ValueError):
        explorer.update(**bad)
    assert (dict(explorer.settings), explorer.frame) == before
    assert explorer.update(seed=1)["caption"]  # a later valid update still works


@pytest.mark.parametrize("values", [5, 1.0, "abc", None])
def test_a_control_given_its_default_where_its_values_go_is_named(values):
    with pytest.raises(ValueError, match="values must be a list"):
        Slider("a", values, [1, 2, 3])


def test_a_control_the_frame_function_has_no_parameter_for_is_named():
    from attnmarl.notebook.explorers.self_attention import alpha_frame
    for names in (["nope"], ["m", "nope"], ["M"]):
        with pytest.raises(ValueError, match="name no parameter of alpha_frame"):
            Explorer(alpha_frame, [Slider(name, [3, 4]) for name in names])
    Explorer(lambda **settings: None, [Slider("anything", [1])])  # **kwargs takes any name


@pytest.mark.parametrize("call,message", [
    ("alpha_frame(m='4')", "between 1 and 16 inputs"), ("alpha_frame(m=4.0)", "between 1 and 16 inputs"),
    ("alpha_frame(seed=-1)", "seed must be a non-negative integer"), ("heads_frame(seed='0')", "seed must be"),
    ("heads_frame(heads=1000000)", "heads must be at most 16"), ("heads_frame(heads=0)", "heads must be a positive"),
])
def test_the_self_attention_explorers_name_bad_settings(call, message):
    from attnmarl.notebook.explorers import self_attention
    with pytest.raises(ValueError, match=message):
        eval(call, vars(self_attention))


@pytest.mark.parametrize("content,message", [
    ("{not json", "is not a readable index"), ('{"name": "x"}', "must hold a list of run entries"),
    ('[1, 2]', "must hold a list of run entries"),
    ('[{"name": "spread3-attention", "seed": 0}]', "entry 0 of .*index.json \\(spread3-attention\\) has no valid "
                                                    "'command'"),
])
def test_reproduce_names_the_index_and_entry_that_cannot_be_read(tmp_path, capsys, content, message):
    from attnmarl import reproduce
    (tmp_path / "index.json").write_text(content)
    with pytest.raises(ValueError, match=message):
        reproduce.select_runs(index=tmp_path)
    assert re.search(message, usage_error(reproduce.main, ["--index", str(tmp_path), "--out",
                                                           str(tmp_path / "out")], capsys))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("address,message", [("127.0.0.1:1", "nothing answered within"),
                                             ("ray://127.0.0.1:1", "nothing answered within"),
                                             ("127.0.0.1", "must be auto, HOST:PORT"),
                                             ("localhost:99999", "must be auto, HOST:PORT")])
def test_reproduce_refuses_an_unreachable_cluster_at_once_and_leaves_no_empty_out(tmp_path, capsys, address,
                                                                                  message):
    from attnmarl import reproduce
    start = time.monotonic()
    error = usage_error(reproduce.main, ["--chapter", "value", "--configs", "spread3-attention", "--seeds", "0",
                                         "--address", address, "--out", str(tmp_path / "out")], capsys)
    assert message in error and time.monotonic() - start < 10
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", [1e30, 1e38, 3e38])
@pytest.mark.parametrize("build", [
    lambda: ConcatCritic(3, 18), lambda: ConcatPolicy(3, 18, 5), lambda: Actor(3, 18, 5),
    lambda: Actor(3, 18, 5, agent_types=[0, 0, 1]), lambda: AttentionCritic(3, 18), lambda: AttentionPolicy(3, 18, 5),
])
def test_finite_observations_that_overflow_a_network_are_named_never_returned_as_nan(build, value):
    torch.manual_seed(0)
    net = build()
    try:
        y = net(torch.full((4, 3, 18), value))
    except ValueError as error:
        assert "too large" in str(error) and "NaN value" not in str(error)
    else:
        assert torch.isfinite(y).all()


@pytest.mark.parametrize("value", [1e38, 3e38])
@pytest.mark.parametrize("kind", ["ConcatQ", "AttentionQ"])
def test_finite_inputs_that_overflow_a_q_network_are_named_not_reported_as_nan(kind, value):
    from attnmarl.nets import qnets
    torch.manual_seed(0)
    net = getattr(qnets, kind)(3, 18, 5)
    try:
        q = net(torch.full((4, 3, 18), value), torch.zeros(4, 3, 5))
    except ValueError as error:
        assert "too large" in str(error) and "holds" not in str(error)
    else:
        assert torch.isfinite(q).all()


@pytest.mark.parametrize("dim", [5, -3, 2, 1.0, "1", True])
def test_masked_softmax_names_a_dim_the_scores_do_not_have(dim):
    with pytest.raises(ValueError, match="dim must be an axis of the 2-dimensional scores"):
        masked_softmax(torch.randn(2, 3), dim=dim)
    assert torch.allclose(masked_softmax(torch.zeros(2, 3), dim=-2), torch.full((2, 3), 0.5))


@pytest.mark.parametrize("eps", [0, 0.0, -1, -1e-8, float("nan"), "1e-8"])
def test_cosine_score_refuses_an_eps_that_would_divide_by_zero(eps):
    from attnmarl.attention import cosine_score
    with pytest.raises(ValueError, match="eps must be"):
        cosine_score(torch.zeros(2, 3), torch.zeros(2, 3), eps=eps)


@pytest.mark.parametrize("shape", [(2, 3, 0, 6), (2, 3, 4, 7), (2, 3, 4, 5), (6,)])
def test_entity_attention_names_tokens_of_the_wrong_shape(shape):
    from attnmarl.nets.policies import EntityAttention
    with pytest.raises(ValueError, match=r"tokens must have shape \(batch, m_type, n, d_tokens\) with n >= 1"):
        EntityAttention(6, 5)(torch.randn(*shape))
    with pytest.raises(ValueError, match="tokens must be a torch.Tensor"):
        EntityAttention(6, 5)([[0.0] * 6])


def test_a_missing_checkpoint_or_a_folder_is_named_in_the_packages_words(tmp_path):
    for path, message in ((tmp_path / "none.pt", "does not exist: there is no attnmarl checkpoint there"),
                          (tmp_path, "is a folder; give the path of the attnmarl checkpoint"),
                          (str(tmp_path / "sub" / "x.pt"), "does not exist")):
        with pytest.raises(ValueError, match=message) as error:
            load_policy(path)
        assert str(path) in str(error.value)
    with pytest.raises(FileNotFoundError):  # code that looks for a missing file still finds it
        load_policy(tmp_path / "none.pt")


def test_nan_from_diverged_weights_is_not_blamed_on_the_observations():
    for net in (ConcatCritic(3, 18), Actor(3, 18, 5), AttentionCritic(3, 18)):
        with torch.no_grad():
            next(net.parameters()).view(-1)[0] = float("nan")
        try:
            y = net(torch.randn(4, 3, 18))
        except ValueError as error:
            assert "too large" not in str(error)
        else:
            assert not torch.isfinite(y).all()  # handed on to the checks that name non-finite outputs


@pytest.mark.parametrize("alpha,message", [
    (np.full((5, 3, 3), np.nan), "45 NaN"), (np.full((2, 3, 3), np.inf), "infinite"),
    (np.full((2, 3, 3), 0.5), "must be distributions"),
    (np.array([[[1.5, -0.5], [0.5, 0.5]]]), "must be distributions"),
])
def test_explorer_statistics_refuse_weights_that_are_not_distributions(alpha, message):
    from attnmarl.notebook.explorers.scoring import entropy
    from attnmarl.notebook.explorers.value import alpha_statistics
    for statistic in (alpha_statistics, entropy):
        with pytest.raises(ValueError, match=message):
            statistic(alpha)
    uniform = np.full((2, 3, 3), 1 / 3)
    assert alpha_statistics(uniform)["entropy"] == pytest.approx(1.0)
    assert entropy(uniform) == pytest.approx(np.log(3))


@pytest.mark.parametrize("alpha", [np.zeros((0, 3, 3)), np.zeros((3, 3, 0)), np.zeros(3)])
def test_alpha_statistics_name_empty_or_flat_weights_in_the_packages_words(alpha):
    from attnmarl.notebook.explorers.value import alpha_statistics
    with pytest.raises(ValueError, match=r"alpha must have shape \(\.\.\., m, m\)"):
        alpha_statistics(alpha)


@pytest.mark.parametrize("x,y,edges,message", [
    ([np.nan, 2.0], [1.0, 2.0], [0.0, 1.0, 2.0], "x holds 1 NaN"), ([1.0, 2.0], [np.inf, 2.0], [0.0, 1, 2], "y holds"),
    ([1.0, 2.0], [1.0, 2.0], [2.0, 1.0, 0.0], "increasing"), ([1.0, 2.0], [1.0, 2.0], [1.0], "at least 2"),
])
def test_binned_means_refuse_non_finite_values_and_bins_that_are_not_increasing(x, y, edges, message):
    from attnmarl.notebook.explorers.value import binned_mean
    with pytest.raises(ValueError, match=message):
        binned_mean(np.array(x), np.array(y), np.array(edges))


@pytest.mark.parametrize("change,floor,message", [
    (np.array([np.nan, 1.0]), 0.01, "1 NaN"), (np.array([np.inf]), 0.01, "infinite"),
    (np.array([]), 0.01, "holds no values"), (np.array([1.0]), -1, "floor must be"), (np.array([1.0]), 0, "floor"),
    (np.array([1.0]), float("nan"), "floor"),
])
def test_change_scale_names_non_finite_or_empty_changes_and_a_bad_floor(change, floor, message):
    from attnmarl.notebook.explorers.qnet import change_scale
    with pytest.raises(ValueError, match=message):
        change_scale(change, floor)


@pytest.mark.parametrize("n,pool,message", [(10, 5, "a pool of at least n"), (3, 0, "pool must be"),
                                            (1, 5, "n must be an integer >= 2"), ("3", 10, "n must be")])
def test_a_seq2seq_showcase_larger_than_its_pool_is_named(n, pool, message):
    from attnmarl.notebook.explorers.seq2seq import showcase_examples
    with pytest.raises(ValueError, match=message):
        showcase_examples(n=n, pool=pool)


@pytest.mark.parametrize("kwargs", [{"N": "x"}, {"N": 2.5}, {"num_good": "1"}, {"N": True}])
def test_scenario_text_names_a_count_that_is_not_a_number(kwargs):
    from attnmarl.notebook.explorers.mpe import scenario_text
    with pytest.raises(ValueError, match=f"{next(iter(kwargs))} must be a positive integer"):
        scenario_text("simple_spread", kwargs)


@pytest.mark.parametrize("agent_types", ["001", b"001", [0, 0, 1.0], [0, True, 0], ["0", "0", "1"]])
def test_agent_types_that_are_not_ints_are_refused(agent_types):
    for build in (ConcatCritic, AttentionCritic, lambda m, d, agent_types: Actor(m, d, 5, agent_types)):
        with pytest.raises(ValueError, match="agent_types must be a sequence of m ints"):
            build(3, 18, agent_types=agent_types)
    assert AttentionCritic(3, 18, agent_types=(t for t in [0, 0, 1])).agent_types == (0, 0, 1)


@pytest.mark.parametrize("seed", [-1, 2**64, "0", 1.0])
def test_seq2seq_training_refuses_a_seed_outside_the_valid_range(seed):
    with pytest.raises(ValueError, match="seed must be"):
        s2s.train(s2s.new_model(True, 0), s2s.split_dates(0)[0], steps=1, seed=seed)


def test_a_missing_run_names_run_and_seeds_and_lists_what_exists(tmp_path, capsys, no_evaluation):
    error = usage_error(transfer_main, ["--run", "policy/pi-spread6-entity", "--seeds", "99", "--m", "3",
                                        "--out", str(tmp_path / "t.json")], capsys)
    assert "--run policy/pi-spread6-entity with --seeds 99" in error and "pi-spread6-entity-seed0" in error
    run_ = str(shipped_checkpoint("qnet", "q-tag-attention")).removesuffix("-seed0.pt")
    for argv in (["--run", run_, "--seeds", "7"], ["--run", run_ + "-nope", "--seeds", "0"]):
        error = usage_error(versus_main, [*argv, "--out", str(tmp_path / "v.json")], capsys)
        assert f"--run {argv[1]} with --seeds {argv[3]}: there is no" in error and "q-tag-attention-seed0" in error


def test_transfer_names_the_actor_with_the_right_article(capsys, no_evaluation, tmp_path):
    error = usage_error(transfer_main, ["--run", "policy/pi-spread3-attention", "--m", "3,6", "--out",
                                        str(tmp_path / "t.json")], capsys)
    assert "a attention" not in error and "an attention actor" in error


@pytest.mark.parametrize("tokens,m_max,message", [
    (torch.randn(2, 3, 6), 2, r"tokens must be a tensor of shape \(batch, m, 2m, d_tokens\)"),
    (torch.randn(2, 3, 6), 100_000_000, "tokens must be a tensor of shape"), ([[0.0]], 3, "got list"),
    (torch.randn(1, 3, 6, 4), 10**9, "the padded tokens would hold"), (torch.randn(1, 3, 6, 4), "6", "m_max must"),
    (torch.randn(1, 3, 5, 4), 6, "number 2m = 6, not 5"),
])
def test_padding_spread_tokens_names_the_shape_and_team_size_it_needs(tokens, m_max, message):
    from attnmarl.notebook.explorers.scale import pad_spread_tokens
    with pytest.raises(ValueError, match=message):
        pad_spread_tokens(tokens, m_max)


@pytest.mark.parametrize("delay", [0.3, 0.8, 1.5])
def test_ctrl_c_while_a_command_line_still_imports_ends_in_one_line(tmp_path, delay):
    process = start_training(tmp_path)
    time.sleep(delay)  # while torch and the rest load, or (on a fast machine) once training has begun
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in err
    assert err.strip().splitlines()[-1] in ("attnmarl: interrupted while starting; nothing was written",
                                            "python -m attnmarl.train: interrupted; no file of this run was "
                                            "written, and a run cannot resume: start it again to train it")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", ["-seed0.pt", "-seed0"])
def test_a_run_given_with_its_seed_suffix_is_told_to_drop_it(tmp_path, capsys, no_evaluation, suffix):
    run_ = str(shipped_checkpoint("qnet", "q-tag-attention")).removesuffix("-seed0.pt") + suffix
    error = usage_error(versus_main, ["--run", run_, "--out", str(tmp_path / "v.json")], capsys)
    assert "give --run without its '-seedS.pt'" in error


@pytest.mark.parametrize("text", ["3,3", "3,6,3", "6,6,6"])
def test_transfer_refuses_a_team_size_listed_twice(tmp_path, capsys, no_evaluation, text):
    error = usage_error(transfer_main, ["--m", text, "--out", str(tmp_path / "t.json")], capsys)
    assert "more than once" in error


def test_the_command_line_says_when_a_run_makes_more_evaluations_than_asked(tmp_path, capsys):
    train_main(["--config", "pi-spread3-flat", "--steps", "9600", "--evals", "2", "--eval-episodes", "1",
                "--final-episodes", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert "note: --evals 2 asked for 2 evaluations; a run of 3 updates makes 3" in out
    rows = (tmp_path / "pi-spread3-flat-seed0.csv").read_text().strip().splitlines()
    assert len(rows) == 1 + 3  # the header and the three evaluations it said


@pytest.mark.parametrize("scale", [1e20, 1e30, 3e37])
def test_cosine_scores_of_huge_finite_vectors_are_their_cosines_not_zero(scale):
    """The cosine does not depend on the vectors' lengths: huge finite queries and keys in float32 give the
    cosines of the same vectors at ordinary size (a plain sum of squares would overflow and give 0)."""
    from attnmarl.attention import cosine_score

    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    expected = cosine_score(q, k)
    torch.testing.assert_close(cosine_score(q * scale, k), expected)
    torch.testing.assert_close(cosine_score(q * scale, k * scale), expected)
    assert cosine_score(torch.zeros(1, 4), k[0]).abs().max() == 0  # a zero vector still scores 0


@pytest.mark.parametrize("value", [1e30, 3e38])
def test_maac_critics_name_an_overflow_of_finite_input_instead_of_returning_nan(value):
    from attnmarl.nets.maac import MAACAttentionCritic, MAACConcatCritic

    a = torch.nn.functional.one_hot(torch.zeros(4, 3, dtype=torch.long), 5).float()
    o = torch.full((4, 3, 18), value)
    critics = [MAACAttentionCritic(3, 18, 5, d=16, heads=2)] + [MAACConcatCritic(3, 18, 5, d=16)] * (value > 1e31)
    for critic in critics:
        with pytest.raises(ValueError, match="finite but too large"):
            critic(o, a)
    with pytest.raises(ValueError, match="finite but too large"):
        critics[0].values_and_alpha(o, a)


@pytest.mark.parametrize("a", [torch.full((4, 3, 5), 2.0), torch.full((4, 3, 5), 0.2), torch.zeros(4, 3, 5),
                               torch.randn(4, 3, 4)])
def test_the_value_of_the_chosen_actions_needs_one_hot_actions(a):
    from attnmarl.nets.maac import chosen

    with pytest.raises(ValueError, match="one-hot"):
        chosen(torch.randn(4, 3, 5), a)


def test_messages_do_not_contradict_themselves_or_blame_the_wrong_thing(capsys):
    """No "a finite number in [-inf, inf]" for an infinite value, a file name asked for when a checkpoint path is
    not one, and --index '' named as an empty folder name, not as an unknown config."""
    for value in (math.inf, -math.inf, math.nan):
        with pytest.raises(ValueError, match=r"x must be a finite number; got") as error:
            checks.check_real("x", value)
        assert "inf, inf" not in str(error.value)
    for path in (12, None, "", "  "):
        with pytest.raises(ValueError, match="must be a file name"):
            load_policy(path)
    with pytest.raises(SystemExit):
        train_main(["--index", ""])
    assert "--index must name a folder" in capsys.readouterr().err


@pytest.mark.parametrize("default", ["yes", "no", 1, 0, None])
def test_a_toggle_takes_true_or_false_and_an_explorer_a_frame_function(default):
    from attnmarl.notebook.widgets import Explorer, Slider, Toggle

    with pytest.raises(ValueError, match="default must be True or False"):
        Toggle("scale", default)
    with pytest.raises(ValueError, match="needs a frame function"):
        Explorer(default, [Slider("m", [2, 3])])


# ---- third pass: what the last probe left open ----------------------------------------------------------------------

@pytest.mark.parametrize("value", [1.5, -0.1, 2.0])
def test_out_of_range_continuous_actions_are_refused_on_mpe2_as_in_the_ports(value):
    """mpe2 clips them with a warning, the ports refuse them: a policy would score differently on each."""
    with pytest.raises(ValueError, match=r"lies outside its action space Box\(0.0, 1.0, \(5,\), float32\)"):
        evaluate(lambda obs: {a: np.full(5, value) for a in obs}, "simple_spread", 1, continuous_actions=True)
    env = make_batched("simple_spread", 2, continuous_actions=True)
    with pytest.raises(ValueError, match=r"continuous actions must lie in \[0, 1\]"):
        env.step(np.full((2, 3, 5), value))
    assert math.isfinite(evaluate(load_policy(MU3), "simple_spread", 1, N=3, continuous_actions=True)[0])


@pytest.mark.parametrize("path,kwargs", [(SPREAD3, {"N": 3}), (MU3, {"N": 3, "continuous_actions": True}),
                                         (Q3, {"N": 3, "continuous_actions": True}),
                                         (shipped_checkpoint("policy", "pi-spread3-flat"), {"N": 3})])
def test_huge_finite_weights_are_named_with_their_checkpoint_not_blamed_on_the_observations(tmp_path, path, kwargs):
    agent, config = load_agent(path)
    with torch.no_grad():
        for weight in agent.parameters():
            weight.mul_(1e30)
    huge = tmp_path / "huge.pt"
    save_checkpoint(huge, agent, config)
    with pytest.raises(ValueError, match=rf"the checkpoint {re.escape(str(huge))} cannot act: the weights of .* are "
                                         r"finite but too large for torch.float32: the largest \|weight\| is") as error:
        evaluate(load_policy(huge), "simple_spread", 1, **kwargs)
    assert "observations are finite but too large" not in str(error.value)


@pytest.mark.parametrize("build,message", [
    (lambda: SelfAttention(100000, 100000, 5), r"W_q and W_k would hold heads = 1 x d_q = 100,000 x d_in = 100,000"),
    (lambda: MultiHeadSelfAttention(8, 8, 10_000, heads=100, d_proj=10_000), "W_o would hold d_proj = 10,000"),
    (lambda: SelfAttention(3, 3, 3)(torch.zeros(1, 200_000, 3)),
     "alpha would hold batch = 1 x heads = 1 x m = 200,000"),
    (lambda: EntityActor("simple_spread", {"N": 3}, 3, 18, 5, (0, 0, 0), d=100_000), "entity actor would hold"),
    (lambda: mappo.make_agent(dataclasses.replace(TINY, actor_hidden=200_000)), "linear layer's weights would hold"),
    (lambda: ReplayBuffer(10**9, 3, 18, 5), "replay buffer's observations o would hold capacity = 1,000,000,000"),
])
def test_products_of_sizes_that_would_take_gigabytes_are_refused_up_front(build, message):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=message + r".*this package allocates at most [\d,]+ in one array"):
        build()
    assert time.perf_counter() - start < 2.0


def test_a_rollout_too_large_to_hold_is_refused_before_training():
    """The whole run's estimate refuses it (:mod:`attnmarl.algos.estimate`), naming the rollout's buffers."""
    with pytest.raises(ValueError, match=r"the biggest part is the rollout's buffers \(10,000,000 steps of 8 worlds\)"
                                         ".*ATTNMARL_ALLOW_COSTLY=1"):
        mappo.train(dataclasses.replace(TINY, rollout_steps=10_000_000, total_steps=80_000_000))


def test_attention_without_weights_still_runs_at_that_size():
    c, alpha = SelfAttention(3, 3, 3)(torch.zeros(1, 20_000, 3), need_weights=False)
    assert alpha is None and c.shape == (1, 20_000, 3)


def test_reproducing_an_empty_index_says_it_lists_no_runs(tmp_path, capsys):
    from attnmarl.reproduce import main as reproduce_main

    (tmp_path / "index.json").write_text("[]")
    message = usage_error(reproduce_main, ["--index", str(tmp_path), "--out", str(tmp_path / "out")], capsys)
    error = message.strip().splitlines()[-1]  # after the usage lines, which list every option
    assert "index.json lists no runs: there is nothing to re-run" in error
    assert "--configs" not in error and "--seeds" not in error
    assert not (tmp_path / "out").exists()


def test_reproduce_refuses_more_cpus_than_the_machine_has(tmp_path, capsys):
    from attnmarl.reproduce import main as reproduce_main
    from attnmarl.reproduce import reproduce

    too_many = str(checks.MAX_THREADS + 1)
    message = usage_error(reproduce_main, ["--cpus", too_many, "--out", str(tmp_path / "out")], capsys)
    assert f"argument --cpus: must be at most {checks.MAX_THREADS:,} (this machine has" in message
    with pytest.raises(ValueError, match=f"cpus must be at most {checks.MAX_THREADS}"):
        reproduce([], tmp_path / "out", cpus=checks.MAX_THREADS + 1)


@pytest.mark.parametrize("kind", [np.int64, np.int32, np.uint8])
def test_numpy_integers_are_integers_wherever_integers_are_checked(kind):
    env = make_batched("simple_spread", kind(2), seed=kind(1), N=kind(3))
    assert env.obs_dim == 18 and np.array_equal(env.reset(), make_batched("simple_spread", 2, seed=1, N=3).reset())
    config = MAPPOConfig(scenario_kwargs={"N": kind(3)}, num_envs=kind(8), total_steps=kind(200))
    assert type(config.scenario_kwargs["N"]) is int
    json.dumps(dataclasses.asdict(config))  # a summary or an index can record it
    assert checks.check_int("n", kind(3)) == 3 and type(checks.check_int("n", kind(3))) is int
    assert SelfAttention(kind(4), kind(2), kind(3)).W_q.shape == (2, 4)
    assert masked_softmax(torch.zeros(2, 3), dim=np.int64(-1)).shape == (2, 3)
    assert random_policy("simple_spread", N=kind(2)).built_for.startswith("simple_spread with 2 agents")


@pytest.mark.parametrize("flag", [np.bool_(True), True])
def test_bools_are_never_integers_numpy_ones_included(flag):
    with pytest.raises(ValueError, match="N must be an int"):
        make_batched("simple_spread", 2, N=flag)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        checks.check_int("n", flag)


def test_the_alignment_explorer_refuses_an_input_longer_than_any_date_and_says_so_in_the_widget():
    from attnmarl.notebook.explorers.seq2seq import date_box, pretrained_models

    longest = max(len(text) for text, _ in s2s.make_examples(s2s.split_dates()[0], 5000))
    assert longest <= s2s.MAX_INPUT
    models = pretrained_models()
    with pytest.raises(ValueError, match="the text has 10,000 characters; the models read at most 120"):
        s2s.translate(models["attention"], "1" * 10_000)
    box = date_box(models, text="21/11/2026")
    box.text.value = "2026 " * 2000
    (panel,) = box.explorer.frame["panels"]
    assert panel["title"] == "cannot translate this input" and "the models read at most 120" in panel["text"]


@pytest.mark.parametrize("config,change,message", [
    (TINY, {"clip_coef": 0.0}, r"clip_coef must be a finite number in \(0, inf\]; got 0.0"),
    (TINY, {"lr_actor": 2.0}, r"lr_actor must be a finite number in \[0, 1\]; got 2.0"),
    (TINY, {"log_std_init": -200.0}, r"log_std_init must be a finite number in \[-20, 20\]"),
    (TINY, {"log_std_init": 100.0}, r"log_std_init must be a finite number in \[-20, 20\]"),
    (MADDPGConfig(total_steps=10_240), {"lr_critic": 10.0}, r"lr_critic must be a finite number in \[0, 1\]"),
    (MAACConfig(total_steps=1_100), {"lr_actor": 5.0}, r"lr_actor must be a finite number in \[0, 1\]"),
])
def test_configs_that_would_train_nothing_or_diverge_at_once_are_refused(config, change, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(config, **change)


def test_more_evaluations_than_updates_are_refused_before_training(tmp_path, capsys):
    message = usage_error(train_main, ["--config", "pi-spread3-flat", "--steps", "3200", "--evals", "5",
                                       "--out", str(tmp_path)], capsys)
    assert ("--evals 5 asks for more evaluations during training than the run has updates (1 updates of 3,200 = "
            "3,200 env steps)") in message
    assert not any(tmp_path.iterdir())
    with pytest.raises(ValueError, match="evals 5 asks for more evaluations"):
        run("pi-spread3-flat", steps=3200, out=tmp_path, evals=5)


# ---- third pass: what the fresh probe found -------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", [((2, 2), (2, 3), (2, 2)), ((2, 2), (2, 2), (2, 3)), ((2,), (2,), (2,)),
                                    ((2, 4, 2), (3, 4, 2), (2, 4, 2))])
def test_self_attention_names_weights_whose_shapes_do_not_fit_together(shapes):
    W_q, W_k, W_v = (torch.zeros(shape) for shape in shapes)
    with pytest.raises(ValueError, match=r"W_q, W_k and W_v must have shapes \(d_q, d_in\), \(d_q, d_in\), "
                                         r"\(d_out, d_in\).*got \["):
        self_attention(torch.zeros(3, 2), W_q, W_k, W_v)


def test_the_seq2seq_explorers_name_a_model_or_examples_they_cannot_use():
    from attnmarl.notebook.explorers.seq2seq import alignment_explorer, alignment_frame, pretrained_models

    with pytest.raises(ValueError, match="model must be a Seq2Seq .*got NoneType"):
        alignment_frame("21/11/2026", None)
    models = pretrained_models()
    for examples in ([], ["21/11/2026"], [("21/11/2026", 2026)]):
        with pytest.raises(ValueError, match="examples must be a non-empty list of \\(text, target\\) pairs"):
            alignment_explorer(models, examples)
    explorer = alignment_explorer(models)
    with pytest.raises(ValueError, match=r"control 'model' takes one of \['attention', 'no attention'\]; got 'x'"):
        explorer.update(model="x")
    assert explorer.settings["model"] == "attention"  # a refused change leaves the explorer as it was


@pytest.mark.parametrize("value", ["no", 1, None])
def test_a_toggle_is_set_to_true_or_false_only(value):
    from attnmarl.notebook.explorers.self_attention import alpha_explorer

    with pytest.raises(ValueError, match="control 'scale' takes True or False"):
        alpha_explorer().update(scale=value)


def test_the_scoring_explorer_names_a_query_or_temperature_beyond_float32():
    from attnmarl.notebook.explorers.scoring import scoring_frame

    with pytest.raises(ValueError, match="the query must lie within the drawing, |qx| and |qy| at most 909"):
        scoring_frame(qx=1e300)  # far beyond float32, and beyond any square the figure could draw
    with pytest.raises(ValueError, match="the temperature tau = 1e-45 is too small"):
        scoring_frame(tau=1e-45)
    sharp = scoring_frame(tau=1e-30)  # a small tau that still fits: alpha is the argmax, one-hot
    assert sharp.panels[1].values.max() == 1.0


def test_the_playground_spec_holds_plain_ints_for_numpy_arguments():
    from attnmarl.notebook.playground import playground_html, playground_spec

    spec = playground_spec(m=np.int64(5), seed=np.int32(2))
    assert type(spec["m"]) is int and type(spec["seed"]) is int
    assert '"m":5' in playground_html(m=np.int64(5))


def test_indexing_a_folder_without_run_summaries_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "notes.json").write_text("{}")
    message = usage_error(train_main, ["--index", str(tmp_path)], capsys)
    assert "holds no run summaries (NAME-seedS.json, written by a run); there is nothing to index" in message
    assert not (tmp_path / "index.json").exists() and not (tmp_path / "README.md").exists()


@pytest.mark.parametrize("config", [lambda: MADDPGConfig(minibatch_size=10**9, total_steps=10_240),
                                    lambda: MAACConfig(minibatch_size=300_000, total_steps=1_100)])
def test_a_minibatch_larger_than_the_replay_buffer_is_refused(config):
    with pytest.raises(ValueError, match="minibatch_size = .* is larger than the replay buffer, buffer_size = 200,000"):
        config()


def test_a_replay_minibatch_too_large_to_hold_is_refused_before_it_is_drawn():
    buffer = ReplayBuffer(10, 3, 18, 5)
    buffer.add(torch.zeros(1, 3, 18), torch.zeros(1, 3, 5), torch.zeros(1, 3), torch.zeros(1, 3, 18),
               torch.zeros(1, dtype=torch.bool))
    with pytest.raises(ValueError, match="a minibatch of observations o would hold n = 1,000,000,000 x m = 3"):
        buffer.sample(10**9)


def test_transfer_names_an_empty_range_of_team_sizes(tmp_path, capsys, no_evaluation):
    message = usage_error(transfer_main, ["--run", "policy/pi-spread6-entity", "--m", "16-2", "--out",
                                          str(tmp_path / "t.json")], capsys)
    assert "--m '16-2' is an empty range: LOW = 16 is greater than HIGH = 2" in message


def test_an_output_folder_that_is_a_file_is_named_as_one(tmp_path, capsys):
    target = tmp_path / "a-file"
    target.write_text("keep")
    message = usage_error(train_main, ["--config", "pi-spread3-flat", "--steps", "3200", "--out", str(target)], capsys)
    assert f"--out = '{target}' is a file, not a folder" in message
    assert target.read_text() == "keep"


# ---- fourth pass: an independent probe of ~260 inputs ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool])
def test_masked_softmax_names_scores_that_are_not_floating_point(dtype):
    with pytest.raises(ValueError, match=f"scores must be a floating-point tensor .* got dtype {dtype}"):
        masked_softmax(torch.ones(2, 3, dtype=dtype))


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("need_weights", [True, False])
def test_non_finite_attention_weights_are_named_as_weights_not_blamed_on_x(bad, need_weights):
    layer = MultiHeadSelfAttention(4, 3, 2, heads=2)
    with torch.no_grad():
        layer.W_k[1, 2, 0] = bad
    with pytest.raises(ValueError, match=r"the layer's weights W_k holds") as error:
        layer(torch.randn(1, 3, 4), need_weights=need_weights)
    assert "x is finite but too large" not in str(error.value)


@pytest.mark.parametrize("kwargs, m, message", [
    (None, 3, "scenario_kwargs must be a dict of the scenario's arguments"),
    ([("N", 3)], 3, "scenario_kwargs must be a dict"),
    ({"N": 3}, 4, r"m = 4, but simple_spread with \{'N': 3\} has 3 agents"),
    ({"N": 3}, 2, r"m = 2, but simple_spread with \{'N': 3\} has more agents"),
    ({"N": 6}, 5, r"m = 5, but simple_spread with \{'N': 6\} has more agents"),
])
def test_the_entity_actor_names_scenario_arguments_and_team_sizes_that_disagree(kwargs, m, message):
    obs_dim = 18 if kwargs in (None, [("N", 3)]) or kwargs["N"] == 3 else 36
    with pytest.raises(ValueError, match=message):
        EntityActor("simple_spread", kwargs, m, obs_dim, 5)
    assert EntityActor("simple_spread", {"N": 3}, 3, 18, 5)(torch.zeros(1, 3, 18)).shape == (1, 3, 5)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float16, torch.float64, torch.bfloat16])
def test_a_checkpoint_whose_weights_have_another_dtype_is_refused_not_converted(tmp_path, dtype):
    """torch's load_state_dict copies integer or half-precision tensors into float32 parameters without a
    word; a resealed file (checksum right, dtypes wrong) must still be refused, naming the entry."""
    data = torch.load(shipped_checkpoint("policy", "pi-spread3-entity"), weights_only=True)
    data.pop("checksum")
    key = next(iter(data["state_dict"]))
    data["state_dict"][key] = data["state_dict"][key].to(dtype)
    path = tmp_path / "retyped.pt"
    torch.save(seal(data), path)
    for load in (load_checkpoint, load_agent, load_policy):
        with pytest.raises(ValueError, match=f"state_dict entry '{re.escape(key)}' has dtype {dtype}"):
            load(path)


def test_a_seq2seq_checkpoint_with_integer_weights_is_refused(tmp_path):
    data = torch.load(Path(s2s.__file__).parent / "assets" / "seq2seq" / "attention.pt", weights_only=True)
    data.pop("checksum")
    key = next(iter(data["state_dict"]))
    data["state_dict"][key] = data["state_dict"][key].long()
    path = tmp_path / "attention.pt"
    torch.save(seal(data), path)
    with pytest.raises(ValueError, match="has dtype torch.int64; the networks' weights are torch.float32"):
        s2s.load_checkpoint(path)


@pytest.mark.parametrize("values", [(1e300, 1e-300, 0.0), (-1e308, 1e308, -1e308), (1e308, 0.0, -1e-310)])
def test_maacs_measure_refuses_a_ratio_that_overflows(values):
    from attnmarl.notebook.explorers.scale import maac_improvement

    with pytest.raises(ValueError, match="MAAC's measure overflows"):
        maac_improvement(*values)
    assert maac_improvement(0.0, -1.0, -2.0) == 1.0


@pytest.mark.parametrize("draw, message", [
    (lambda d: d.attention_view([[0.5, 0.5], [1.0]]), "α must be numbers in a rectangular array"),
    (lambda d: d.attention_output(["a", "b"]), "α must be numbers in a rectangular array"),
    (lambda d: d.attention_weights([1.0, "two"]), "the scores must be numbers in a rectangular array"),
    (lambda d: d.attention_weights(list(range(100))), r"the scores of shape \(100,\) is more than a figure can show"),
    (lambda d: d.sequence_mapping(10**6), "m = 1000000 inputs is more than a figure can show"),
    (lambda d: d.multi_head(3, 500, 2), "l = 500 heads is more than a figure can show"),
    (lambda d: d.maac_critic(10**5, 5, 2), "m = 100000 agents is more than a figure can show"),
])
def test_diagrams_name_input_they_cannot_draw_instead_of_numpy_or_drawing_for_seconds(draw, message):
    from attnmarl.notebook import diagrams

    with pytest.raises(ValueError, match=message):
        draw(diagrams)
    assert diagrams.sequence_mapping(diagrams.MAX_DRAWN) is not None


@pytest.mark.parametrize("row, col", [(-1, 0), (0, -1), (24, 3), (3, 1000), (2.0, 3)])
def test_a_glimpse_outside_the_image_is_refused_not_clipped(row, col):
    from attnmarl.notebook.explorers.map import glimpse_box

    with pytest.raises(ValueError, match=r"(row|col) must be an index of a pixel (row|column) in \[0, 24\)"):
        glimpse_box(row, col)
    assert glimpse_box(0, 0) == (0, 0, 4, 4)


@pytest.mark.parametrize("make, message", [
    (lambda: Slider("x", [0.0, float("nan")]), "its values must be finite numbers; got nan"),
    (lambda: Slider("x", [1.0, float("inf")]), "its values must be finite numbers; got inf"),
    (lambda: Slider("x", ["a", "b"]), "its values must be finite numbers; got 'a'"),
    (lambda: Slider("x", [True, False]), "its values must be finite numbers; got True"),
    (lambda: Slider("x", [1, 1, 2]), r"offers a value more than once: \[1, 1, 2\]"),
    (lambda: Dropdown("x", [1, 2]), r"its values must be strings \(the names of its options\); got 1"),
    (lambda: Dropdown("x", ["a", "a"]), "offers a value more than once"),
])
def test_controls_refuse_values_the_page_cannot_tell_apart(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("examples, buckets, message", [
    ([], s2s.LENGTH_BUCKETS, r"examples must be a non-empty list of \(text, target\) pairs"),
    ("3 May 1987", s2s.LENGTH_BUCKETS, "examples must be a non-empty list"),
    ([("3 May 1987", "1987-05-03")], (30, 10), "buckets must be increasing positive ints"),
    ([("3 May 1987", "1987-05-03")], (10, 10), "buckets must be increasing positive ints"),
    ([("3 May 1987", "1987-05-03")], (0, 10), "buckets must be increasing positive ints"),
    ([("3 May 1987", "1987-05-03")], (10.5,), "buckets must be increasing positive ints"),
])
def test_seq2seq_accuracy_names_empty_examples_and_buckets_out_of_order(examples, buckets, message):
    model = s2s.load_pretrained(True)
    with pytest.raises(ValueError, match=message):
        s2s.evaluate(model, examples, buckets=buckets)
    rows = s2s.evaluate(model, [("3 May 1987", "1987-05-03")], buckets=(5, 20))
    assert [row["length"] for row in rows][-1] == "all" and rows[0]["n"] == 1



@pytest.mark.parametrize("source, renamed, seeds", [
    (("qnet", "q-tag-attention", 0), "q-tag-attention-seed5.pt", ["--seeds", "5"]),
    (("qnet", "q-tag-attention", 0), "q-tag-concat-seed0.pt", []),
    (("qnet", "q-spread3-attention", 2), "q-tag-attention-seed2.pt", ["--seeds", "2"]),
])
def test_versus_refuses_a_checkpoint_renamed_from_another_run_or_seed(tmp_path, capsys, no_evaluation, source,
                                                                       renamed, seeds):
    """A copied file would be scored and written under the name it was given, not the run it holds."""
    shutil.copy(shipped_checkpoint(*source), tmp_path / renamed)
    run = str(tmp_path / renamed.rsplit("-seed", 1)[0])
    message = usage_error(versus_main, ["--run", run, *seeds, "--out", str(tmp_path / "v.json")], capsys)
    assert f"holds the run {source[1]}-seed{source[2]} (its own record), not {renamed[:-3]}" in message
    assert not (tmp_path / "v.json").exists()


@pytest.mark.parametrize("renamed, seeds", [("pi-spread3-entity-seed4.pt", ["--seeds", "4"]),
                                            ("pi-spread6-entity-seed0.pt", [])])
def test_transfer_refuses_a_checkpoint_renamed_from_another_run_or_seed(tmp_path, capsys, no_evaluation, renamed,
                                                                         seeds):
    shutil.copy(shipped_checkpoint("policy", "pi-spread3-entity"), tmp_path / renamed)
    run = str(tmp_path / renamed.rsplit("-seed", 1)[0])
    message = usage_error(transfer_main, ["--run", run, *seeds, "--m", "3", "--out", str(tmp_path / "t.json")],
                          capsys)
    assert f"holds the run pi-spread3-entity-seed0 (its own record), not {renamed[:-3]}" in message
    assert not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("episodes", [10**6, 10**9, 2**31 - 1])
def test_evaluations_of_more_episodes_than_the_command_lines_allow_are_refused_up_front(episodes):
    """evaluate(…, episodes=10**9) ran for ever and relational.evaluate allocated a batch of that many games."""
    from attnmarl import relational

    with pytest.raises(ValueError, match="episodes must be at most 100,000"):
        evaluate(random_policy("simple_spread", seed=0), "simple_spread", episodes=episodes)
    with pytest.raises(ValueError, match="episodes must be at most 100,000"):
        relational.evaluate(relational.RelationalAgent(), episodes=episodes)


@pytest.mark.parametrize("kwargs", [{"bound": -1.0}, {"bound": 0.0}, {"spread": -1.2}, {"spread": float("nan")},
                                    {"bound": "2.5"}])
def test_example_inputs_refuse_a_bound_or_spread_that_is_not_positive(kwargs):
    """A negative bound clamped every input to the same point, -1: alpha then looked uniform for no reason."""
    from attnmarl.notebook.explorers.self_attention import example_inputs

    with pytest.raises(ValueError, match=f"{next(iter(kwargs))} must be a"):
        example_inputs(4, 2, 0, **kwargs)
    assert example_inputs(4, 2, 0).unique(dim=0).shape[0] == 4


def test_a_set_of_files_that_cannot_be_written_anywhere_goes_whole_to_standard_error(tmp_path, monkeypatch, capsys):
    """The last resort printed only the first file, decoded with replacement characters: a run's checkpoint
    came out as garbled bytes and its curve and summary were lost. Now every file is printed, a binary one in
    base64, and a half-written rescue folder is removed."""
    import base64

    checkpoint = bytes(range(256)) * 8
    files = {tmp_path / "run-seed0.pt": checkpoint, tmp_path / "run-seed0.csv": b"env_steps\n3200\n",
             tmp_path / "run-seed0.json": b'{"score": 1.5}'}
    monkeypatch.setattr(atomic, "write_atomically", lambda files: (_ for _ in ()).throw(OSError(28, "full")))
    rescue = tmp_path / "rescue"
    monkeypatch.setattr(atomic.tempfile, "mkdtemp", lambda **kwargs: str(rescue.mkdir() or rescue))
    monkeypatch.setattr(Path, "write_bytes", lambda self, data: (_ for _ in ()).throw(OSError(28, "full")))
    with pytest.raises(OSError, match=r"every file was printed to standard error above, each after a line "
                                      r"'==> NAME <==' \(binary files as base64"):
        atomic.save_files(files)
    err = capsys.readouterr().err
    parts = re.split(r"^==> (\S+?)(?: \(base64\))? <==\n", err, flags=re.M)[1:]
    printed = dict(zip(parts[::2], parts[1::2]))
    assert set(printed) == {"run-seed0.pt", "run-seed0.csv", "run-seed0.json"}
    assert base64.decodebytes(printed["run-seed0.pt"].encode()) == checkpoint
    assert printed["run-seed0.csv"] == "env_steps\n3200\n" and json.loads(printed["run-seed0.json"]) == {"score": 1.5}
    assert not rescue.exists()


@pytest.mark.parametrize("score, label", [(1e308, "1e+308"), (-3e12, "−3e+12"), (123456.0, "1.23e+05"),
                                          (99999.0, "99999.00"), (-0.5, "−0.50")])
def test_a_huge_score_in_a_diagram_is_printed_short_enough_for_its_box(score, label):
    """attention_weights([1e308, 1e308, 0]) printed each score as 309 digits in a box 58 px wide."""
    from attnmarl.notebook import diagrams

    svg = str(diagrams.attention_weights([score, 0.0])._repr_svg_())
    assert f">{label}<" in svg
    assert max(len(text) for text in re.findall(r">([^<>]*)</text>", svg)) < 80


@pytest.mark.parametrize("fill", [float("nan"), float("inf"), "0"])
def test_padding_entity_tokens_refuses_a_fill_that_is_not_a_finite_number(fill):
    from attnmarl.notebook.explorers.scale import pad_spread_tokens

    with pytest.raises(ValueError, match="fill must be a"):
        pad_spread_tokens(torch.randn(1, 3, 6, 4), 6, fill=fill)
    padded, mask = pad_spread_tokens(torch.randn(1, 3, 6, 4), 6, fill=-1.0)
    assert padded[~mask].eq(-1.0).all() and mask.sum() == 18


# ---- fourth pass: a fresh probe of every family ---------------------------------------------------------------------

@pytest.mark.parametrize("target,error,message", [
    (lambda d: {d: b"x"}, atomic.FolderGivenError, "cannot write '{d}': it is a folder"),
    (lambda d: {d / "missing" / "x.json": b"x"}, atomic.MissingFileError, "its folder '{d}/missing' does not exist"),
    (lambda d: {d / "a" / "x.json": b"x"}, atomic.MissingFileError, "its folder '{d}/a' does not exist"),
    (lambda d: {d / "x.json": b"1", str(d / "x.json"): b"2"}, ValueError, "name '{d}/x.json' twice"),
    (lambda d: {d / "x.json": b"1", f"{d}/./x.json": b"2"}, ValueError, "twice"),
    (lambda d: {d / "x.json": b"1", d / "a" / ".." / "x.json": b"2"}, ValueError, "twice"),
])
def test_a_set_of_files_that_cannot_be_written_is_refused_naming_the_target_before_any_is_written(tmp_path, target,
                                                                                                  error, message):
    """A folder, a missing folder or a file named twice failed inside tempfile or os.replace, naming the
    temporary file (or, named twice, one file silently replaced the other)."""
    (tmp_path / "a").write_text("a file where a folder should be")
    files = target(tmp_path)
    with pytest.raises(error, match=re.escape(message.format(d=tmp_path))):
        atomic.write_atomically({path: (lambda handle, data=data: handle.write(data)) for path, data in files.items()})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]  # nothing written, no temporary file left


def test_a_checkpoint_saved_to_a_folder_or_a_missing_folder_is_refused_in_the_packages_words(tmp_path):
    agent, config = load_agent(SPREAD3)
    with pytest.raises(ValueError, match="it is a folder; give the path of a file in it"):
        save_checkpoint(tmp_path, agent, config)
    with pytest.raises(ValueError, match="its folder .*missing' does not exist"):
        save_checkpoint(tmp_path / "missing" / "x.pt", agent, config)
    with pytest.raises(OSError, match=r"does not exist.*\); the results are kept in"):  # still kept, not lost
        atomic.save_files({tmp_path / "missing" / "x.json": b"{}"})


@pytest.mark.parametrize("other", [shipped_checkpoint("policy", "pi-spread3-flat"), MU3, Q3,
                                   shipped_checkpoint("policy", "pi-spread6-entity")])
def test_an_agent_saved_under_a_config_that_does_not_describe_it_is_refused_not_written(tmp_path, other):
    """The file was written, and every load then refused it: the agent's weights were in an unloadable file."""
    agent, _ = load_agent(SPREAD3)  # MAPPO, entity actor, m = 3
    _, config = load_agent(other)
    state = torch.random.get_rng_state()
    with pytest.raises(ValueError, match=r"the agent is not the one its config describes .* weight\(s\) differ"):
        save_checkpoint(tmp_path / "mixed.pt", agent, config)
    assert not (tmp_path / "mixed.pt").exists()
    assert torch.equal(torch.random.get_rng_state(), state)  # the check spends no random draws


@pytest.mark.parametrize("metadata,entry", [
    ({"score": np.float64(-7.5)}, r"metadata\['score'\] is np.float64\(-7.5\) of type float64 \(convert it with"),
    ({"seeds": [0, np.int64(1)]}, r"metadata\['seeds'\]\[1\] is np.int64\(1\) of type int64"),
    ({"note": object()}, r"metadata\['note'\] is <object object"),
    ({"when": __import__("datetime").date(2026, 1, 1)}, r"metadata\['when'\] is .* of type date"),
    ({"table": {(0, 1): 2.0}}, r"metadata\['table'\] has the key \(0, 1\) of type tuple"),
])
def test_metadata_that_would_make_a_checkpoint_unloadable_is_refused_before_it_is_written(tmp_path, metadata, entry):
    """A numpy number in the metadata was saved, then refused by torch.load(weights_only=True): the run was lost."""
    agent, config = load_agent(SPREAD3)
    with pytest.raises(ValueError, match=entry + ".*a checkpoint holds plain data only"):
        save_checkpoint(tmp_path / "x.pt", agent, config, **metadata)
    assert not (tmp_path / "x.pt").exists()
    save_checkpoint(tmp_path / "x.pt", agent, config, score=-7.5, seeds=[0, 1], note=None, table={"a": (1, 2.0)})
    assert load_checkpoint(tmp_path / "x.pt")[2]["table"] == {"a": (1, 2.0)}


@pytest.mark.parametrize("slot,message", [(1.5, "slot must be an environment index in \\[0, 2\\); got 1.5"),
                                          (True, "got True"), (-1, "got -1"), (2, "got 2"), ("0", "got '0'")])
def test_load_state_names_a_slot_that_is_not_one_of_the_worlds(slot, message):
    """A float slot failed in numpy's indexing; True loaded the state into world 1 without a word."""
    env = make_batched("simple_spread", 2, N=3)
    reference = make_reference("simple_spread", N=3)
    reference.reset(seed=0)
    before = env.agent_pos.copy()
    with pytest.raises(ValueError, match=message):
        env.load_state(slot, reference)
    assert np.array_equal(env.agent_pos, before)
    env.load_state(np.int64(1), reference)
    assert np.allclose(env.agent_pos[1], [a.state.p_pos for a in reference.unwrapped.world.agents])


@pytest.mark.parametrize("reference", ["simple_spread", None, make_batched("simple_spread", 1, N=3)])
def test_load_state_names_a_reference_that_is_not_an_mpe2_environment(reference):
    with pytest.raises(ValueError, match=r"reference_env must be an mpe2 environment \(make_reference\('simple_"):
        make_batched("simple_spread", 2, N=3).load_state(0, reference)


@pytest.mark.parametrize("flag", ["no", "False", 0, 1, None])
def test_the_greedy_baseline_takes_true_or_false_for_continuous_actions(flag):
    """continuous_actions='no' built a continuous policy, as any non-empty string is truthy."""
    from attnmarl.envs import greedy_assignment_policy

    with pytest.raises(ValueError, match=f"continuous_actions must be True or False; got {flag!r}"):
        greedy_assignment_policy(continuous_actions=flag)


@pytest.mark.parametrize("scenario,kwargs", [("simple_tag", {}), ("collect_treasure", {}),
                                             ("simple_spread", {"continuous_actions": True})])
def test_the_greedy_baselines_name_observations_that_are_not_simple_spreads(scenario, kwargs):
    """On simple_tag's observations of 14 and 16 numbers the policy failed in np.stack ('all input arrays
    must have the same shape')."""
    from attnmarl.envs import greedy_assignment_policy, steered_assignment_policy

    for policy in (greedy_assignment_policy(), steered_assignment_policy()):
        message = "needs simple_spread observations" if scenario != "simple_spread" else "is not in its action space"
        with pytest.raises(ValueError, match=message):
            evaluate(policy, scenario, 1, **kwargs)


INDEX_ENTRY = {"name": "spread3-concat", "seed": 0, "command": "python -m attnmarl.train --config spread3-concat "
               "--seed 0 --out runs", "final_return": -7.0, "final_sem": 0.1, "final_episodes": 200,
               "cpu_seconds": 60.0}


@pytest.mark.parametrize("change,message", [
    ({"command": "python -m attnmarl.train --config nope --seed 0"}, "cannot re-run it: unknown config 'nope'"),
    ({"command": "python -m attnmarl.train --config spread3-concat --seed 1"}, "trains spread3-concat-seed1, another"),
    ({"command": "python -m attnmarl.train --config spread3-attention --seed 0"}, "trains spread3-attention-seed0"),
    ({"command": "python -m attnmarl.train --config spread3-concat --steps 5"}, "cannot re-run it: total_steps = 5 is"),
    ({"command": "python -m attnmarl.train --config spread3-concat --seed -1"}, "cannot re-run it: argument --seed"),
    ({"command": "python -m attnmarl.train --config spread3-concat --bogus 1"}, "unrecognized arguments: --bogus"),
    ({"command": "python -m attnmarl.train --list --config x"}, "cannot re-run it: argument --config: not allowed"),
    ({"command": "python -m attnmarl.train --config spread3-concat --steps 3200 --evals 9"}, "--evals 9 asks for"),
])
def test_reproduce_reports_a_recorded_command_that_cannot_re_run_its_run_as_failed_without_running_it(
        tmp_path, capsys, monkeypatch, change, message):
    """Such a run failed only in its Ray task, after Ray started (another seed: after hours of training, as 'its
    recorded command made ...'); now it is failed at once, and the others still run."""
    from attnmarl import reproduce

    monkeypatch.setattr(reproduce, "_connect", lambda *args: pytest.fail("started Ray for a run that cannot run"))
    (tmp_path / "index.json").write_text(json.dumps([{**INDEX_ENTRY, **change}]))
    assert reproduce.main(["--index", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    (row,) = json.loads((tmp_path / "out" / "report.json").read_text())["runs"]
    assert row["verdict"] == "failed" and row["reproduced"] is None and message in row["error"]
    assert f"{tmp_path.name}/spread3-concat-seed0: not run: its recorded command" in capsys.readouterr().out
    assert "| failed |" in (tmp_path / "out" / "report.md").read_text()
    assert reproduce.unrunnable(INDEX_ENTRY) is None


@pytest.mark.parametrize("entries,message", [
    ([INDEX_ENTRY, INDEX_ENTRY], "entries 0 and 1 of .*index.json are both run spread3-concat-seed0"),
    ([{**INDEX_ENTRY, "final_return": math.nan}], "has no valid 'final_return' \\(got nan\\)"),
    ([{**INDEX_ENTRY, "final_sem": -0.1}], "has no valid 'final_sem' \\(got -0.1\\)"),
    ([{**INDEX_ENTRY, "final_sem": math.inf}], "has no valid 'final_sem'"),
    ([{**INDEX_ENTRY, "final_episodes": 0}], "has no valid 'final_episodes'"),
    ([{**INDEX_ENTRY, "cpu_seconds": -5}], "has no valid 'cpu_seconds'"),
    ([{**INDEX_ENTRY, "seed": -1}], "has no valid 'seed'"),
])
def test_reproduce_refuses_an_index_with_a_run_twice_or_a_score_no_run_can_have(tmp_path, capsys, entries, message):
    """A run listed twice trained twice into the same files; a NaN score was reported as 'differs', a NaN error
    as 'reproduces' (now 'within noise')."""
    from attnmarl import reproduce

    (tmp_path / "index.json").write_text(json.dumps(entries))
    with pytest.raises(ValueError, match=message):
        reproduce.select_runs(index=tmp_path)
    assert re.search(message, usage_error(reproduce.main, ["--index", str(tmp_path), "--out", str(tmp_path / "o")],
                                          capsys))


@pytest.mark.parametrize("shipped,reproduced", [((1.0, math.nan), (1.0, 0.1)), ((1.0, 0.1), (math.nan, 0.1)),
                                                ((1.0, -0.1), (1.0, 0.1)), ((math.inf, 0.1), (1.0, 0.1))])
def test_there_is_no_verdict_on_a_score_that_is_not_a_number(shipped, reproduced):
    from attnmarl.reproduce import verdict

    as_result = lambda pair: {"final_return": pair[0], "final_sem": pair[1]}  # noqa: E731
    with pytest.raises(ValueError, match="is not a finite score with a standard error >= 0; there is no verdict"):
        verdict(as_result(shipped), as_result(reproduced))
    assert verdict(as_result((1.0, 0.1)), as_result((1.0, 0.0))) == (0.0, "within noise")


@pytest.mark.parametrize("content", ["{oops", "[]", '{"final_return": "high"}', ""])
def test_a_damaged_summary_kept_by_an_earlier_reproduction_is_named(tmp_path, content):
    """A restart stopped at json's bare 'Expecting property name ...', without the file's name."""
    from attnmarl import reproduce

    (tmp_path / "index.json").write_text(json.dumps([INDEX_ENTRY]))
    (runs,) = reproduce.select_runs(index=tmp_path)
    kept = tmp_path / "out" / tmp_path.name / "spread3-concat-seed0.json"
    kept.parent.mkdir(parents=True)
    kept.write_text(content)
    with pytest.raises(ValueError, match=f"{re.escape(str(kept))}, the summary of a run reproduced by an earlier "
                                         "start, is damaged: .*; remove .*spread3-concat-seed0.\\* to reproduce"):
        reproduce._kept(tmp_path / "out", runs)


def test_an_index_of_runs_is_not_replaced_by_an_empty_one_when_every_summary_is_damaged(tmp_path, capsys):
    """train --index on a folder whose summaries were all damaged replaced its index.json, the last whole copy of
    the runs' scores and configs, by []."""
    shutil.copy(attnmarl.checkpoints.ASSETS / "value" / "spread3-concat-seed0.json", tmp_path)
    shutil.copy(attnmarl.checkpoints.ASSETS / "value" / "spread3-concat-seed0.csv", tmp_path)
    index = write_index(tmp_path)  # a summary and its curve, without a checkpoint
    before = (tmp_path / "index.json").read_text()
    assert len(index) == 1
    for damage in ("{", "[]", '{"name": 3}'):
        (tmp_path / "spread3-concat-seed0.json").write_text(damage)
        kept = r"index.json lists 1 run\(s\): it is left as it was, not replaced by an index of none"
        with pytest.warns(UserWarning, match="left out of the index"), pytest.raises(ValueError, match=kept):
            write_index(tmp_path)
        message = usage_error(train_main, ["--index", str(tmp_path)], capsys)
        assert "it is left as it was" in message
        assert (tmp_path / "index.json").read_text() == before


@pytest.mark.parametrize("examples,message", [
    ([(1, 2)], r"pairs of strings; examples\[0\] is \(1, 2\)"),
    ([("12/03/2020", "2020-03-12"), ("12/03/2020",)], r"pairs of strings; examples\[1\] is \('12/03/2020',\)"),
    ([("12/03/2020", None)], r"examples must be a non-empty list of \(text, target\) pairs of strings; examples\[0\]"),
    ([("", "2020-03-12")], r"examples\[0\] = \('', '2020-03-12'\): cannot encode an empty string"),
    ([("12/03/2020", "")], r"examples\[0\] = .*: cannot encode an empty string"),
    ([("12/03/2020", "2020-03-12"), ("1" * 500, "2020")], r"examples\[1\] = .*: the text has 500 characters; the "
                                                          r"models read at most 120"),
    ([("12/03/2020", "2020-03-1Z")], r"examples\[0\] = .*: characters \['Z'\]"),
    ("12/03/2020", "examples must be a non-empty list"),
])
def test_seq2seq_examples_that_cannot_be_translated_or_scored_are_named_by_their_index(examples, message):
    """Integer pairs failed in the encoder with a TypeError; an empty target said only 'cannot encode an empty
    string', and a 500-character text was scored although translate refuses it."""
    from attnmarl.notebook.explorers.seq2seq import alignment_explorer, pretrained_models

    models = pretrained_models()
    for call in (lambda: s2s.evaluate(models["attention"], examples), lambda: alignment_explorer(models, examples),
                 lambda: s2s.check_examples(examples)):
        with pytest.raises(ValueError, match=message):
            call()


def test_the_alignment_explorer_refuses_its_examples_before_any_frame_is_drawn():
    """A 10,000-character example made an explorer whose frame then failed when the slider reached it."""
    from attnmarl.notebook.explorers.seq2seq import alignment_explorer, alignment_frame, pretrained_models

    models = pretrained_models()
    with pytest.raises(ValueError, match=r"examples\[1\] = .*the text has 10,000 characters"):
        alignment_explorer(models, [("12/03/2020", "2020-03-12"), ("1" * 10_000, "x")])
    for target in (123, b"2020-03-12", ["2020"]):
        with pytest.raises(ValueError, match="target must be the expected translation, a string"):
            alignment_frame("12/03/2020", models["attention"], target)


@pytest.mark.parametrize("kwargs,message", [
    ({"batch_size": 0}, "batch_size must be a positive integer; got 0"),
    ({"batch_size": 2.5}, "batch_size must be a positive integer"),
    ({"lr": math.nan}, r"lr must be a finite number in \(0, 1\]; got nan"),
    ({"lr": 0.0}, r"lr must be a finite number in \(0, 1\]"), ({"lr": "1e-3"}, "lr must be a real number"),
    ({"progress": "no"}, "progress must be True or False"),
])
def test_seq2seq_training_names_its_bad_arguments_before_a_step(kwargs, message):
    """batch_size = 0 said 'cannot encode an empty batch', lr = NaN torch's 'Invalid learning rate: nan'."""
    with pytest.raises(ValueError, match=message):
        s2s.train(s2s.new_model(True), s2s.split_dates()[0], steps=1, **kwargs)
    with pytest.raises(ValueError, match="model must be a Seq2Seq"):
        s2s.train("model", s2s.split_dates()[0], steps=1)


@pytest.mark.parametrize("n", [-1, -100, 2.0, "5"])
def test_a_number_of_seq2seq_examples_that_is_not_a_count_is_refused_not_read_as_none(n):
    with pytest.raises(ValueError, match=f"n must be a non-negative integer; got {n!r}"):
        s2s.make_examples(s2s.split_dates()[0], n)
    assert s2s.make_examples(s2s.split_dates()[0], 0) == []


@pytest.mark.parametrize("alpha", [np.array([0.5, 0.6]), np.array([-0.5, 1.5]), torch.tensor([0.2, 0.2]),
                                   [0.0, 0.0, 0.0], np.array([[0.5, 0.5], [0.2, 0.9]])])
def test_weights_that_are_not_a_distribution_are_refused_one_row_or_many(alpha):
    """check_distributions let every 1-D input through (its row sum is a scalar, which argwhere read as no row):
    the scoring explorer's entropy of [0.5, 0.6] was 0.65."""
    from attnmarl.notebook.explorers.scoring import entropy

    not_one = r"must be distributions over its last axis .*(it is not one|the first \(1,\))"
    with pytest.raises(ValueError, match=not_one):
        entropy(alpha)
    assert entropy(np.array([0.5, 0.5])) == pytest.approx(math.log(2))


@pytest.mark.parametrize("module", [torch.nn.Linear(3, 3), None, MultiHeadSelfAttention(4, 2, 2, heads=2)])
def test_from_torch_multihead_names_a_module_that_is_not_torchs_multihead_attention(module):
    from attnmarl.attention import from_torch_multihead

    with pytest.raises(ValueError, match="mha must be a torch.nn.MultiheadAttention; got"):
        from_torch_multihead(module)


@pytest.mark.parametrize("panels,got", [(["text"], r"\['str'\]"), ("abc", "str"), ([Points(np.zeros((1, 2)), ["a"]),
                                         {"type": "heatmap"}], r"\['dict'\]"), (None, "NoneType")])
def test_a_frame_of_things_that_are_not_panels_is_refused_when_made(panels, got):
    """Frame(['text']) was made, and failed when drawn in dataclasses.asdict."""
    with pytest.raises(ValueError, match=rf"a frame's panels must be a list of panels \(Heatmap, .*\); got {got}"):
        Frame(panels)


@pytest.mark.parametrize("values", [[[1, 2], [3]], [["a", "b"]], [[{}, 1]], [[1, [2, 3]]]])
def test_a_heatmap_of_ragged_or_non_numeric_values_is_named_in_the_packages_words(values):
    """Was numpy's 'setting an array element with a sequence ... inhomogeneous shape'."""
    with pytest.raises(ValueError, match="heatmap values must be a matrix of numbers, rows of equal length"):
        Heatmap(values, ["a"], ["x", "y"])


@pytest.mark.parametrize("filename", ["../policy/index.json", "/etc/hostname", "", ".", "..", "sub/x.json", 3])
def test_a_shipped_table_is_a_file_of_its_own_folder(filename):
    """shipped_table('scale', '../policy/index.json') returned policy's index as a table of scale."""
    from attnmarl.checkpoints import shipped_table

    with pytest.raises(ValueError, match="filename must be the name of a table in 'scale', without a folder"):
        shipped_table("scale", filename)
    assert "baselines" in shipped_table("scale", "zero-shot.json")


@pytest.mark.parametrize("batch", [2, 4])
def test_a_query_key_mask_without_the_batch_dimension_is_named_with_how_to_give_it(batch):
    x = torch.randn(batch, 3, 3)
    with pytest.raises(ValueError, match=r"a query-key mask such as causal_mask\(m\) is given per batch element: "
                                         r"mask.expand\(batch, m, m\)"):
        SelfAttention(3, 3, 3)(x, mask=attnmarl.attention.causal_mask(3))
    c, alpha = SelfAttention(3, 3, 3)(x, mask=attnmarl.attention.causal_mask(3).expand(batch, 3, 3))
    assert torch.all(alpha[:, 0, 1:] == 0)


@pytest.mark.parametrize("make", [
    lambda: attnmarl.vision.SpatialAttentionCNN(attention="no"), lambda: attnmarl.relational.RelationalAgent("False"),
    lambda: attnmarl.relational.evaluate(attnmarl.relational.RelationalAgent(), 2, greedy="no"),
    lambda: attnmarl.relational.rollout(attnmarl.relational.RelationalAgent(),
                                        attnmarl.relational.reset(2, torch.Generator()), greedy=1),
    lambda: attnmarl.hard_attention.train("soft", steps=1, progress="no"),
])
def test_chapter_5s_models_take_true_or_false_for_their_flags(make):
    """attention='no' built the attention model and greedy='no' played greedily: a string is truthy."""

    with pytest.raises(ValueError, match="must be True or False; got"):
        make()


@pytest.mark.parametrize("call,message", [
    (lambda: attnmarl.vision.make_images(10**9, 0), r"the images would hold n = 1,000,000,000 x height = 24"),
    (lambda: attnmarl.hard_attention.sample_batch(10**9, torch.Generator()), "the batch's key draws would hold"),
    (lambda: attnmarl.hard_attention.train("soft", steps=1, batch_size=10**9), "the batch's key draws would hold"),
    (lambda: attnmarl.hard_attention.KeyValueReader(d=0), "d must be a positive integer; got 0"),
    (lambda: attnmarl.hard_attention.train("soft", steps="5"), "steps must be a positive integer; got '5'"),
    (lambda: attnmarl.hard_attention.train("soft", steps=1, lr=math.nan), r"lr must be a finite number in \(0, 1\]"),
    (lambda: attnmarl.hard_attention.train("soft", steps=1, n_pairs=2.0), "n_pairs must be between 1 and N_KEYS"),
    (lambda: attnmarl.hard_attention.train("soft", steps=1, seed=-1), "seed must be a non-negative integer"),
    (lambda: attnmarl.hard_attention.reinforce_surrogate(torch.ones(3), torch.zeros(3), math.nan),
     "baseline must be a finite number; got nan"),
    (lambda: attnmarl.vision.accuracy(torch.zeros(3, 10), torch.zeros(4, dtype=torch.long)),
     r"logits must be \(B, classes\) and labels \(B,\) for B >= 1 images; got \(3, 10\) and \(4,\)"),
    (lambda: attnmarl.vision.accuracy(torch.zeros(0, 10), torch.zeros(0, dtype=torch.long)), "for B >= 1 images"),
])
def test_chapter_5s_sizes_and_numbers_are_named_before_numpy_or_torch_fail(call, message):
    """make_images(10**9) and a batch of 10**9 dictionaries failed in the allocators; d = 0 built a model of empty
    embeddings; a NaN baseline made every gradient NaN; accuracy of 3 logits for 4 labels was torch's size error."""

    start = time.perf_counter()
    with pytest.raises(ValueError, match=message):
        call()
    assert time.perf_counter() - start < 2.0
    assert attnmarl.hard_attention.sample_batch(0, torch.Generator())[0].shape == (0, attnmarl.hard_attention.N_PAIRS)


@pytest.mark.parametrize("episodes,message", [(0, "episodes must be a positive integer; got 0"),
                                              (10**6, "episodes must be at most 100,000"),
                                              (2.0, "episodes must be a positive integer; got 2.0")])
def test_the_explorers_statistics_take_a_number_of_episodes_they_can_play(episodes, message):
    """relevance(episodes=10**6) played on for hours; episodes = 0 gave NaN statistics (entity_attention_statistics)
    or numpy's 'need at least one array to concatenate' (attention_concentration)."""
    from attnmarl.notebook.explorers.policy import entity_attention_statistics
    from attnmarl.notebook.explorers.scale import attention_concentration
    from attnmarl.notebook.explorers.value import relevance

    agent, config = load_agent(SPREAD3)
    value_agent, value_config = load_agent(shipped_checkpoint("value", "spread3-attention"))
    for call in (lambda: entity_attention_statistics(agent, config, episodes),
                 lambda: attention_concentration(agent, config, episodes),
                 lambda: relevance(value_agent, value_config, episodes)):
        start = time.perf_counter()
        with pytest.raises(ValueError, match=message):
            call()
        assert time.perf_counter() - start < 2.0
