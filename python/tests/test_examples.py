"""The examples under python/examples run as a user runs them, against the
installed package (three_heads.py: a normal head through F.normalize, whose
Div the per-task gradients pass through)."""

import subprocess
import sys

from conftest import repo_file


def test_three_heads_example(torch, binary, tmp_path):
    script = repo_file("python", "examples", "three_heads.py")
    out = subprocess.run([sys.executable, script], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "TuneResult(stopped after 300 steps, on the validation data:" in out.stdout, out.stdout
