"""``--compile``: torch.compile in place leaves the networks' parameters and checkpoints as they are,
and without a C++ compiler the option is refused up front with a message that says what to do."""
import pytest
import torch
from torch._inductor import config as inductor_config

from attnmarl import train
from attnmarl.algos.compile import check_compiler, compile_in_place
from attnmarl.nets import AttentionCritic, EntityActor


def test_compiling_in_place_keeps_every_parameter_name_so_checkpoints_do_not_change():
    actor, critic = EntityActor("simple_spread", {"N": 3}, 3, 18, 5), AttentionCritic(3, 18)
    before = {name: p.clone() for name, p in [*actor.state_dict().items(), *critic.state_dict().items()]}
    compile_in_place(actor, critic)  # compiles lazily, at the first call: nothing runs here
    after = {**actor.state_dict(), **critic.state_dict()}
    assert list(after) == list(before)
    assert all(torch.equal(after[name], value) for name, value in before.items())
    assert actor._compiled_call_impl is not None and critic._compiled_call_impl is not None


@pytest.mark.parametrize("compilers", [("no-such-c++-compiler",), ("/nonexistent/g++", "clang++-0")])
def test_without_a_cxx_compiler_compile_is_refused_before_training(tmp_path, capsys, compilers):
    with inductor_config.patch({"cpp.cxx": compilers}):
        with pytest.raises(ValueError, match="--compile needs a C\\+\\+ compiler.*without --compile"):
            check_compiler()
        with pytest.raises(SystemExit):
            train.main(["--config", "spread3-attention", "--steps", "3200", "--out", str(tmp_path), "--compile"])
    assert "needs a C++ compiler" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # refused before anything was written
