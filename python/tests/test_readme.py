"""The README's "From Python" snippet, run as a reader would: copied out of
README.md and executed against the installed package, in an empty folder."""

import re

import pytest

from conftest import repo_file


def readme_snippet():
    path = repo_file("README.md")
    text = open(path, encoding="utf-8").read()
    section = text.split("### From Python", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the section should hold one Python snippet, found %d" % len(blocks)
    return blocks[0]


def test_readme_python_snippet(torch, binary, tmp_path, monkeypatch):
    code = readme_snippet()
    monkeypatch.chdir(tmp_path)
    ns = {}
    exec(compile(code, "README.md (From Python)", "exec"), ns)
    result, model = ns["result"], ns["model"]
    assert set(result.losses_before) == {"seg", "depth"}
    assert result.F_after < result.F_before
    # The module holds the tuned weights: its own losses are the tool's report.
    x, seg, depth = ns["x"], ns["seg"], ns["depth"]
    F = torch.nn.functional
    with torch.no_grad():
        seg_logp, d = model.eval()(x)
        seg_loss = F.nll_loss(seg_logp, seg, ignore_index=-1).item()
        mask = depth != 0
        depth_loss = (d - depth).abs()[mask].mean().item()
    assert seg_loss == pytest.approx(result.losses_after["seg"], rel=1e-5, abs=1e-6)
    assert depth_loss == pytest.approx(result.losses_after["depth"], rel=1e-5, abs=1e-6)
