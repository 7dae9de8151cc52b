"""Temporary work folders (/tmp/paretonav-*) do not outlive the call: removed
after success, failure and Ctrl-C, unless asked to be kept or holding the
only result."""

import _thread
import glob
import os
import signal
import tempfile
import threading
import time

import numpy as np
import pytest

import paretonav
from conftest import TASKS


@pytest.fixture
def tmpdir_root(tmp_path, monkeypatch):
    """Makes tempfile.mkdtemp create its folders under a folder of the test's own."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def left(root):
    return sorted(os.path.basename(p) for p in glob.glob(str(root / "paretonav-*")))


def test_removed_after_success_and_kept_when_it_holds_the_result(torch, binary, trained, model, tmpdir_root, tmp_path):
    _, _, train, val = trained
    kw = dict(inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS, progress=False)
    paretonav.tune(model, data=train, criterion="seg*depth", steps=2, batch=8, **kw)
    paretonav.front(model, data=train, models=2, steps=2, batch=8, out_dir=str(tmp_path / "f"), **kw)
    paretonav.evaluate(model, val, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS)
    assert left(tmpdir_root) == []
    assert os.path.isfile(tmp_path / "f" / "report.json")
    # An ONNX file tuned without out=: the tuned file is the only result, its folder stays.
    path = paretonav.export(model, [train["x"][:2]], str(tmp_path / "m.onnx"), ["x"], ["seg_logp", "depth"])
    r = paretonav.tune(path, data=train, tasks=TASKS, criterion="seg*depth", steps=2, batch=8, progress=False)
    assert os.path.isfile(r.paths["out"]) and left(tmpdir_root) == [os.path.basename(r.paths["workdir"])]


def test_removed_after_failures(torch, binary, trained, model, tmpdir_root):
    _, _, train, _ = trained
    kw = dict(inputs=["x"], outputs=["seg_logp", "depth"], progress=False)
    with pytest.raises(paretonav.CLIError):  # the binary refuses
        paretonav.tune(model, data=train, tasks=["seg:nll:seg_lgp:seg"], criterion="seg", steps=2, **kw)
    with pytest.raises(KeyError):  # refused in Python, after the export
        paretonav.tune(model, data={"x": train["x"]}, tasks=TASKS, criterion="seg*depth", steps=2, **kw)
    with pytest.raises(ValueError):  # the export's outputs
        paretonav.evaluate(model, train, inputs=["x"], outputs=["seg_logp"], tasks=TASKS[:1])
    assert left(tmpdir_root) == []
    with pytest.raises(KeyError):
        paretonav.tune(model, data={"x": train["x"]}, tasks=TASKS, criterion="seg*depth", keep_workdir=True, **kw)
    assert len(left(tmpdir_root)) == 1  # kept when asked


def interrupt_at_step(log_glob, steps=2):
    """Ctrl-C, as a terminal sends it, once a log matching log_glob has `steps` steps."""

    def run():
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            for p in glob.glob(log_glob):
                with open(p, "rb") as f:
                    if f.read().count(b'"step"') >= steps:
                        _thread.interrupt_main()
                        return
            time.sleep(0.02)
        _thread.interrupt_main()

    threading.Thread(target=run, daemon=True).start()


def test_removed_after_ctrl_c(torch, binary, trained, model, tmpdir_root, tmp_path):
    _, sd0, train, _ = trained
    out = str(tmp_path / "t.onnx")
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interrupt_at_step(str(tmpdir_root / "paretonav-*" / "tune.jsonl"))
        with pytest.raises(KeyboardInterrupt, match=r"interrupted after step.*the temporary work folder .* was "
                                                    r"removed with the checkpoint and the data it names \(pass "
                                                    r"keep_workdir=True"):
            paretonav.tune(model, data=train, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS,
                           criterion="seg*depth", steps=1000000, batch=8, out=out, progress=False)
    finally:
        signal.signal(signal.SIGINT, handler)
    assert left(tmpdir_root) == []
    # The checkpoint named data that are gone: it went too, and out was never written.
    assert os.listdir(tmp_path / "tmp") == [] and not os.path.exists(out + ".ckpt") and not os.path.exists(out)
    assert all(torch.equal(v, sd0[k]) for k, v in model.state_dict().items())


def test_write_failure_removes_folder(tmpdir_root):
    """A Dataset that fails while its items are written: nothing left behind."""

    class Bad:
        def __len__(self):
            return 3

        def __getitem__(self, i):
            if i == 2:
                raise IOError("disk gone")
            return {"x": np.zeros(2, np.float32)}

    with pytest.raises(IOError, match="disk gone"):
        paretonav.evaluate(paretonav_model_file(tmpdir_root), Bad(), tasks=["o:output:x:"])
    assert left(tmpdir_root) == []


def paretonav_model_file(root):
    """A one-node ONNX model (y = x) outside the temporary folders."""
    import onnx
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])])
    path = str(root.parent / "id.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path
