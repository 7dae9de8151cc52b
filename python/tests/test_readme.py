"""The README's "From Python" snippet, run as a reader would: copied out of
README.md and executed against the installed package, in an empty folder."""

import re

import pytest

import paretonav

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


def cli_snippet():
    """The export snippet of the README's "From the command line" section."""
    text = open(repo_file("README.md"), encoding="utf-8").read()
    section = text.split("### From the command line", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)[0]


def test_readme_export_snippet(torch, binary, tmp_path, monkeypatch):
    """Run unchanged under the installed PyTorch (1.13 in CI; 2.15's output is the fixture
    importer/testdata/readme_torch2/fixed): BatchNorm kept, every parameter and buffer an
    initializer under its state_dict key; it tunes without a warning and loads back."""
    import warnings

    import onnx

    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "snippet"}
    exec(compile(cli_snippet(), "README.md (From the command line)", "exec"), ns)
    model = ns["model"]
    m = onnx.load("model.onnx")
    assert "BatchNormalization" in {n.op_type for n in m.graph.node}
    mapping, unmapped = paretonav.map_state_dict("model.onnx", model)
    assert set(mapping.rule.values()) == {"exact"} and all(k.endswith("num_batches_tracked") for k in unmapped)
    import numpy as np

    data = dict(np.load("train.npz"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", paretonav.ParetonavWarning)
        r = paretonav.tune("model.onnx", data=data, tasks=["seg:nll:seg_logp:seg:ignore_index=-1",
                                                           "depth:depth_l1:depth:depth_t"],
                           criterion="seg*depth", steps=2, batch=16, out="model_tuned.onnx", progress=False)
    loaded = paretonav.load_weights(model, r.paths["out"])
    assert sorted(loaded) == sorted(k for k in model.state_dict() if not k.endswith("num_batches_tracked"))


def readme_two_head(torch):
    """The README snippet's model."""
    nn, F = torch.nn, torch.nn.functional

    class TwoHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.trunk = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                       nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
            self.seg_head = nn.Conv2d(16, 5, 1)
            self.depth_head = nn.Conv2d(16, 1, 1)

        def forward(self, x):
            h = self.trunk(x)
            return F.log_softmax(self.seg_head(h), dim=1), self.depth_head(h)

    return TwoHead()


def test_fused_export_warned_and_refused(torch, binary, tmp_path):
    """The snippet without dynamo=False under PyTorch 2.15 (the fixture
    importer/testdata/readme_torch2/fused, made by make.py there): BatchNorm fused into
    the Conv layers. tune warns, naming them; load_weights refuses the file, strict or
    not, saying how to export instead, and loads nothing."""
    import numpy as np

    path = repo_file("importer", "testdata", "readme_torch2", "fused", "model.onnx")
    g = np.random.default_rng(0)
    data = {"x": g.standard_normal((8, 3, 32, 32)).astype(np.float32),
            "seg": g.integers(0, 5, (8, 32, 32)), "depth_t": g.random((8, 1, 32, 32)).astype(np.float32)}
    with pytest.warns(paretonav.ParetonavWarning, match=r"(?s)4 initializer\(s\) were rewritten.*trunk\.0\.weight: "
                                                         r"written by the optimizer's FuseBatchNormIntoConv rule"):
        r = paretonav.tune(path, data=data, tasks=["seg:nll:seg_logp:seg", "depth:depth_l1:depth:depth_t"],
                           criterion="seg*depth", steps=2, batch=4, out=str(tmp_path / "t.onnx"), progress=False)
    module = readme_two_head(torch)
    before = {k: v.clone() for k, v in module.state_dict().items()}
    for strict in (True, False):
        with pytest.raises(paretonav.MappingError, match=r"rewrote 4 initializers \(trunk\.0\.bias, trunk\.0\.weight, "
                                                         r"trunk\.3\.bias, trunk\.3\.weight: BatchNorm fused.*"
                                                         r"nothing was loaded.*dynamo=False") as e:
            paretonav.load_weights(module, r.paths["out"], strict=strict)
        assert "strict=False" not in str(e.value)
    assert all(torch.equal(v, before[k]) for k, v in module.state_dict().items())
