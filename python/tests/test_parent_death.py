"""A Python killed outright (kill -9) does not leave the binary running: it
stops and never writes the output it was asked for."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import paretonav
from conftest import TASKS


def children(pid):
    """The pids whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d))
    return out


def alive(pid):
    """Running: not gone, and not a zombie waiting for a parent that is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_binary_dies_with_a_killed_python(torch, binary, trained, model, tmp_path):
    _, _, train, _ = trained
    path = paretonav.export(model, [train["x"][:2]], str(tmp_path / "m.onnx"), ["x"], ["seg_logp", "depth"])
    np.savez(tmp_path / "train.npz", **{k: v.numpy() for k, v in train.items()})
    out, log = tmp_path / "out.onnx", tmp_path / "tune.jsonl"
    script = textwrap.dedent("""
        import numpy as np, paretonav
        d = dict(np.load(%r))
        paretonav.tune(%r, data=d, tasks=%r, criterion="seg*depth", steps=1000000, batch=8,
                       out=%r, log=%r, workdir=%r, progress=False)
    """ % (str(tmp_path / "train.npz"), path, TASKS, str(out), str(log), str(tmp_path / "w")))
    py = subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ))
    kids = []
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and py.poll() is None:
            if log.exists() and log.read_bytes().count(b'"step"') >= 2:
                break
            time.sleep(0.05)
        assert py.poll() is None, "the Python process ended on its own (status %s)" % py.returncode
        kids = children(py.pid)
        assert len(kids) == 1, kids
        os.kill(py.pid, signal.SIGKILL)
        py.wait()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and alive(kids[0]):
            time.sleep(0.05)
        assert not alive(kids[0]), "the binary (pid %d) still runs after its Python was killed" % kids[0]
        time.sleep(1)
        assert not out.exists()
        assert os.path.isfile(str(out) + ".ckpt")  # it stopped as on SIGTERM: a checkpoint, no output
    finally:
        if py.poll() is None:
            py.kill()
            py.wait()
        for k in kids:
            if alive(k):
                os.kill(k, signal.SIGKILL)
