"""front's models and marks; the binary's errors as exceptions; Ctrl-C as a clean stop."""

import _thread
import os
import signal
import threading
import time

import numpy as np
import pytest

import paretonav
from conftest import TASKS, torch_losses


def test_front(torch, binary, trained, model):
    _, sd0, train, val = trained
    r = paretonav.front(model, data=train, val=val, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS,
                        models=4, steps=15, batch=8, lr=3e-3, progress=False)
    assert len(r.models) == 4 and r.status == "StepLimit"
    L = [m.losses for m in r.models]
    for i, m in enumerate(r.models):
        dominated = any(all(L[j][k] <= L[i][k] for k in L[i]) and any(L[j][k] < L[i][k] for k in L[i])
                        for j in range(4) if j != i)
        assert m.non_dominated == (not dominated)
        assert os.path.isfile(m.path)
        # Each model's run explained, as report.json holds it.
        assert m.explanation == r.raw["models"][i]["explanation"] and m.explanation["short"]
        assert m.explanation["control"]["steps"] == 15
    assert r.non_dominated and r.raw["loss_quality"]["non_dominated"] == len(r.non_dominated)
    # The module is untouched; a model's state_dict gives PyTorch the report's losses.
    assert all(torch.equal(v, sd0[k]) for k, v in model.state_dict().items())
    m0 = r.models[0]
    model.load_state_dict(m0.state_dict())
    mine = torch_losses(torch, model, val)
    for k in mine:
        assert m0.losses[k] == pytest.approx(mine[k], rel=1e-5, abs=1e-6), k


def test_misspelled_output_raises_the_tools_message(torch, binary, trained, model):
    _, sd0, train, _ = trained
    with pytest.raises(paretonav.CLIError) as e:
        paretonav.tune(model, data=train, inputs=["x"], outputs=["seg_logp", "depth"],
                       tasks=["seg:nll:seg_lgp:seg", "depth:l1:depth:depth_t"], criterion="seg*depth",
                       steps=5, progress=False)
    assert "seg_lgp" in e.value.message and e.value.message in e.value.stderr
    assert e.value.returncode == 1 and e.value.command[1] == "tune"
    assert all(torch.equal(v, sd0[k]) for k, v in model.state_dict().items())
    with pytest.raises(paretonav.CLIError, match="unknown task \"sge\""):  # a preset inside: left to the binary
        paretonav.tune(model, data=train, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS,
                       criterion="wd:1,1 + sge", steps=5, progress=False)
    # A misspelled flag is refused in Python, before the export: the keywords are the binary's flags.
    with pytest.raises(TypeError, match="unknown keyword 'stepz'.*did you mean 'steps'"):
        paretonav.tune(model, data=train, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS,
                       criterion="seg*depth", stepz=5, progress=False)


def test_tasks_validated_in_python():
    with pytest.raises(ValueError, match='unknown loss "nl"'):
        paretonav.Task("seg", "nll".replace("ll", "l"), output="o", target="t")
    with pytest.raises(ValueError, match='takes no option "ignore_index"'):
        paretonav.Task.parse("d:l1:depth:depth_t:ignore_index=1")
    with pytest.raises(ValueError, match="needs a target array"):
        paretonav.Task("d", "mse", output="depth")
    with pytest.raises(ValueError, match='name "a-b" must be non-empty'):
        paretonav.Task("a-b", "mse", output="o", target="t")
    t = paretonav.Task.parse("seg:nll:seg_logp:seg:ignore_index=-1")
    assert str(t) == "seg:nll:seg_logp:seg:ignore_index=-1" and t.options == {"ignore_index": -1}
    assert str(paretonav.Task("l", "output", output="loss")) == "l:output:loss:"
    with pytest.raises(ValueError, match="used twice"):
        paretonav.tune("never-read.onnx", data={}, tasks=[t, t])


def test_unused_parameter_refused_by_name(torch, binary, trained):
    TwoHead, sd0, train, _ = trained

    class WithSpare(TwoHead):
        def __init__(self):
            super().__init__()
            self.spare = torch.nn.Linear(2, 2)  # forward() never reads it

    m = WithSpare()
    with pytest.raises(paretonav.MappingError, match=r"spare\.weight, spare\.bias") as e:
        paretonav.tune(m, data=train, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS,
                       criterion="seg*depth", steps=3, progress=False)
    assert e.value.names == ["spare.weight", "spare.bias"]
    r = paretonav.tune(m, data=train, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS,
                       criterion="seg*depth", steps=3, progress=False, strict=False)
    assert r.unmapped == ["spare.weight", "spare.bias"]


def test_ctrl_c_stops_with_a_checkpoint(torch, binary, trained, model, tmp_path):
    _, sd0, train, _ = trained
    log, out = str(tmp_path / "t.jsonl"), str(tmp_path / "t.onnx")

    def interrupt_after_two_steps():
        # The deadline covers the export and the data written before the
        # binary starts, which take minutes on a loaded machine; at it the
        # thread interrupts anyway, so the run (a million steps) never
        # outlives the test, which then fails on what it finds.
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if os.path.exists(log):
                with open(log, "rb") as f:
                    if f.read().count(b'"step"') >= 2:
                        break
            time.sleep(0.02)
        _thread.interrupt_main()

    # A shell starts a background job with SIGINT ignored, and Python then
    # leaves it so: interrupt_main() would do nothing and the run would go
    # on. Ctrl-C as a terminal delivers it needs Python's own handler.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_after_two_steps, daemon=True).start()
        with pytest.raises(KeyboardInterrupt, match="interrupted after step"):
            paretonav.tune(model, data=train, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS,
                           criterion="seg*depth", steps=1000000, batch=8, out=out, log=log, progress=False,
                           workdir=str(tmp_path / "w"))
    finally:
        signal.signal(signal.SIGINT, handler)
    assert os.path.isfile(out + ".ckpt") and not os.path.exists(out)
    assert os.listdir(tmp_path / "w" / "data")  # the data the checkpoint names are kept for --resume
    assert all(torch.equal(v, sd0[k]) for k, v in model.state_dict().items())


def real_data(tmp_path, train):
    """--data arguments for valid arrays, so that the binary gets as far as the tasks."""
    args = []
    for k in ("x", "seg", "depth_t"):
        f = str(tmp_path / (k + ".npy"))
        np.save(f, train[k][:4].numpy())
        args += ["--data", "%s=%s" % (k, f)]
    return args


BAD_TASKS = ["seg:nl:seg_logp:seg", "d:l1:depth:depth_t:ignore_index=1", "a-b:mse:depth:depth_t",
             "d:mse:depth", "x:nll:seg_logp:seg:ignore_index=z", "x:nll", "x:nll:seg_logp:seg:foo"]


@pytest.mark.parametrize("spec", BAD_TASKS)
def test_task_errors_are_the_tools(binary, torch, trained, model, tmp_path, spec):
    """Python refuses a bad task before anything runs, with the binary's own words."""
    import subprocess

    with pytest.raises(ValueError) as e:
        paretonav.Task.parse(spec)
    path = paretonav.export(model, [trained[2]["x"][:2]], str(tmp_path / "m.onnx"), ["x"], ["seg_logp", "depth"])
    p = subprocess.run([binary, "tune", path] + real_data(tmp_path, trained[2]) + ["--task", spec, "--criterion", "x"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and p.stderr.strip().endswith(str(e.value)), (p.stderr, str(e.value))


def test_criterion_names_checked_in_python(binary, trained, model, tmp_path):
    import subprocess

    _, _, train, _ = trained
    with pytest.raises(ValueError) as e:
        paretonav.tune(model, data=train, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS,
                       criterion="log(seg)/(1e-3+dpth)", workdir=str(tmp_path / "w"), progress=False)
    assert str(e.value) == 'criterion: column 16: unknown task "dpth"; known tasks: seg, depth'
    assert not os.path.exists(str(tmp_path / "w"))  # refused before anything was written
    path = paretonav.export(model, [train["x"][:2]], str(tmp_path / "m.onnx"), ["x"], ["seg_logp", "depth"])
    p = subprocess.run([binary, "tune", path] + real_data(tmp_path, train) + ["--task", TASKS[0], "--task", TASKS[1],
                        "--criterion", "log(seg)/(1e-3+dpth)"], capture_output=True, text=True)
    assert p.returncode != 0 and p.stderr.strip().endswith(str(e.value)), p.stderr


@pytest.mark.parametrize("outputs, said", [
    (["seg_logp"], r"forward\(\) returns 2 tensors .*, but 1 name was given \('seg_logp'\)"),
    (["seg_logp", "depth", "extra"], r"forward\(\) returns 2 tensors .*, but 3 names were given"),
])
def test_outputs_count_checked_before_tuning(torch, trained, model, tmp_path, outputs, said):
    """Naming fewer (or more) outputs than forward() returns is said in these words, before the binary runs."""
    _, sd0, train, _ = trained
    with pytest.raises(ValueError, match="^outputs: " + said):
        paretonav.tune(model, data=train, inputs=["x"], outputs=outputs, tasks=["seg:nll:seg_logp:seg"],
                       criterion="seg", steps=5, workdir=str(tmp_path), progress=False)
    assert not os.path.exists(tmp_path / "data")  # nothing written for the binary
    assert all(torch.equal(v, sd0[k]) for k, v in model.state_dict().items())
