"""The export: max_unpool2d (SegNet-style) tunes through the API; tied and renamed initializers."""

import os

import numpy as np
import onnx
import pytest

import paretonav
from conftest import torchscript


def make_segnet(torch):
    nn, F = torch.nn, torch.nn.functional

    class SegNetLike(nn.Module):
        """Encoder conv-BN-ReLU, max_pool2d(return_indices=True), decoder, max_unpool2d, two heads."""

        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
            self.mid = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
            self.dec = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
            self.seg = nn.Conv2d(8, 4, 1)
            self.depth = nn.Conv2d(8, 1, 1)

        def forward(self, x):
            h = self.enc(x)
            p, idx = F.max_pool2d(h, 2, 2, return_indices=True)
            u = F.max_unpool2d(self.mid(p), idx, 2, 2)
            d = self.dec(u)
            return F.log_softmax(self.seg(d), 1), self.depth(d)

    return SegNetLike


def test_segnet_unpool_tunes(torch, binary):
    F = torch.nn.functional
    torch.manual_seed(3)
    m = make_segnet(torch)().eval()
    g = torch.Generator().manual_seed(4)
    x = torch.randn(24, 3, 12, 16, generator=g)
    data = {"x": x, "seg": (x[:, 0] > 0).long() + (x[:, 1] > 0).long(), "depth_t": x[:, :1].abs()}

    def losses():
        with torch.no_grad():
            logp, d = m(x)
        return {"seg": F.nll_loss(logp, data["seg"]).item(), "depth": F.l1_loss(d, data["depth_t"]).item()}

    before = losses()
    r = paretonav.tune(m, data=data, inputs=["x"], outputs=["seg_logp", "depth"],
                       tasks=["seg:nll:seg_logp:seg", "depth:l1:depth:depth_t"], criterion="seg+depth",
                       steps=10, batch=8, lr=3e-3, progress=False, keep_workdir=True)
    ops = {n.op_type for n in onnx.load(r.paths["model"]).graph.node}
    # torch 2.15's TorchScript exporter fails on the symbolic (a torch._check on a tensor); the package
    # then exports with dynamo=True, optimize=False, which writes max_unpool2d as ScatterND.
    unpool = "ScatterND" if tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 15) else "MaxUnpool"
    assert unpool in ops and "BatchNormalization" in ops, ops
    after = losses()
    for k in before:  # the exported unpooling computes what PyTorch's does
        assert r.losses_before[k] == pytest.approx(before[k], rel=1e-5, abs=1e-6), k
        assert r.losses_after[k] == pytest.approx(after[k], rel=1e-5, abs=1e-6), k
    assert after["seg"] + after["depth"] < before["seg"] + before["depth"]


def tied_model(torch):
    nn = torch.nn

    class Tied(nn.Module):
        """Zero biases and a fresh BatchNorm: PyTorch's own export merges their initializers."""

        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.a = nn.Conv2d(4, 2, 1)
            self.b = nn.Conv2d(4, 2, 1)
            with torch.no_grad():
                self.a.bias.zero_()
                self.b.bias.zero_()

        def forward(self, x):
            h = torch.relu(self.bn(self.c1(x)))
            return self.a(h), self.b(h)

    return Tied


TIED_TASKS = ["a:mse:a:ta", "b:mse:b:tb"]


def tied_data(torch):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(16, 3, 6, 6, generator=g)
    return {"x": x, "ta": torch.randn(16, 2, 6, 6, generator=g), "tb": torch.randn(16, 2, 6, 6, generator=g)}


def test_tied_initializers(torch, binary, tmp_path):
    torch.manual_seed(6)
    m = tied_model(torch)().eval()
    data = tied_data(torch)
    # The package's export keeps them apart: each bias trains on its own.
    r = paretonav.tune(m, data=data, inputs=["x"], outputs=["a", "b"], tasks=TIED_TASKS, criterion="a+b",
                       steps=10, batch=8, lr=1e-2, progress=False)
    assert not torch.equal(m.a.bias, m.b.bias)
    # PyTorch's default export merges them (Identity nodes); --untie gives each its own copy, and
    # load_weights follows the Identity nodes back to the module's names.
    m2 = tied_model(torch)().eval()
    path = str(tmp_path / "merged.onnx")
    torch.onnx.export(m2, data["x"][:2], path, input_names=["x"], output_names=["a", "b"],
                      dynamic_axes={"x": {0: "N"}, "a": {0: "N"}, "b": {0: "N"}}, opset_version=13,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False, **torchscript(torch))
    assert "b.bias" not in {t.name for t in onnx.load(path).graph.initializer}  # merged, else nothing is tested
    assert paretonav.inspect(path)["shared_initializers"]
    with pytest.warns(paretonav.ParetonavWarning):
        paretonav.tune(path, data=data, tasks=TIED_TASKS, criterion="a+b", steps=3, out=str(tmp_path / "t.onnx"),
                       progress=False)
    r = paretonav.tune(path, data=data, tasks=TIED_TASKS, criterion="a+b", steps=10, batch=8, lr=1e-2, untie=True,
                       out=str(tmp_path / "u.onnx"), progress=False)
    loaded = paretonav.load_weights(m2, r.paths["out"])
    assert "b.bias" in loaded and "bn.running_var" in loaded
    assert not torch.equal(m2.a.bias, m2.b.bias)
    # The Tied module's own losses are the tool's.
    with torch.no_grad():
        a, b = m2(data["x"])
    assert r.losses_after["a"] == pytest.approx(torch.nn.functional.mse_loss(a, data["ta"]).item(), rel=1e-5)
    assert r.losses_after["b"] == pytest.approx(torch.nn.functional.mse_loss(b, data["tb"]).item(), rel=1e-5)


def test_renamed_initializer(torch, binary, tmp_path):
    """An initializer renamed beyond recognition: after tuning its values match nothing in the module,
    so loading refuses it by name; given the file it was tuned from, it is found by value."""
    torch.manual_seed(7)
    m = tied_model(torch)().eval()
    data = tied_data(torch)
    path = paretonav.export(m, [data["x"][:2]], str(tmp_path / "m.onnx"), ["x"], ["a", "b"])
    mo = onnx.load(path)
    for t in mo.graph.initializer:
        if t.name == "c1.weight":
            t.name = "onnx::Conv_99"
    for n in mo.graph.node:
        n.input[:] = ["onnx::Conv_99" if i == "c1.weight" else i for i in n.input]
    onnx.save(mo, path)
    r = paretonav.tune(path, data=data, tasks=TIED_TASKS, criterion="a+b", steps=5, batch=8, lr=1e-2,
                       out=str(tmp_path / "t.onnx"), progress=False)
    before = m.c1.weight.detach().clone()
    with pytest.raises(paretonav.MappingError, match=r"c1\.weight") as e:
        paretonav.load_weights(m, r.paths["out"])
    assert e.value.names == ["c1.weight"] and torch.equal(m.c1.weight, before)  # nothing loaded
    loaded = paretonav.load_weights(m, r.paths["out"], source=path)
    assert "c1.weight" in loaded and not torch.equal(m.c1.weight, before)


def test_shared_parameters(torch, binary):
    """Weight sharing in the module itself: two state_dict keys, one tensor, one initializer."""
    torch.manual_seed(8)
    m = tied_model(torch)()
    m.b.weight = m.a.weight  # tied weights
    m.extra = m.a  # the same module under a second name
    m.eval()
    data = tied_data(torch)
    with pytest.warns(paretonav.ParetonavWarning, match="read by several nodes will be trained as one"):
        r = paretonav.tune(m, data=data, inputs=["x"], outputs=["a", "b"], tasks=TIED_TASKS, criterion="a+b",
                           steps=5, progress=False)
    sd = m.state_dict()
    assert "extra.weight" in sd and "extra.weight" not in r.loaded and r.unmapped == []
    assert m.extra.weight is m.a.weight and m.b.weight is m.a.weight


def module_losses(torch, m, data):
    F = torch.nn.functional
    with torch.no_grad():
        a, b = m.eval()(data["x"])
    return {"a": F.mse_loss(a, data["ta"]).item(), "b": F.mse_loss(b, data["tb"]).item()}


def test_untie_on_tied_module_weights(torch, binary, tmp_path):
    """untie=True on weights the module ties (b.weight = a.weight) would tune two copies of one tensor:
    refused before tuning, naming both keys and the fix; loading a file tuned so is refused too. Given
    separate Parameters, the module after load-back computes the tuned file's losses."""
    torch.manual_seed(9)
    m = tied_model(torch)()
    m.b.weight = m.a.weight
    m.eval()
    data = tied_data(torch)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    kw = dict(tasks=TIED_TASKS, criterion="a+b", steps=10, batch=8, lr=1e-2, untie=True, progress=False)
    with pytest.raises(paretonav.MappingError, match=r"untie=True would tune the 2 nodes reading initializer "
                                                     r"a\.weight apart, but in Tied a\.weight, b\.weight are one "
                                                     r"tensor.*\(nothing was tuned\).*module\.b\.weight = "
                                                     r"nn\.Parameter\(module\.b\.weight\.detach\(\)\.clone\(\)\)") as e:
        paretonav.tune(m, data=data, inputs=["x"], outputs=["a", "b"], workdir=str(tmp_path / "w"), **kw)
    assert e.value.names == ["a.weight", "b.weight"]
    assert not os.path.exists(tmp_path / "w" / "data")  # refused before the data were written
    # The same model tuned by file, then loaded into the tied module: refused, nothing loaded.
    path = paretonav.export(m, [data["x"][:2]], str(tmp_path / "m.onnx"), ["x"], ["a", "b"])
    r = paretonav.tune(path, data=data, out=str(tmp_path / "t.onnx"), **kw)
    with pytest.raises(paretonav.MappingError, match=r"holds copies of a\.weight tuned apart \(a\.weight\./b/Conv"):
        paretonav.load_weights(m, r.paths["out"])
    assert all(torch.equal(v, before[k]) for k, v in m.state_dict().items())
    # The fix the message gives: each name its own Parameter. Both tuned copies come back.
    m.b.weight = torch.nn.Parameter(m.b.weight.detach().clone())
    r = paretonav.tune(m, data=data, inputs=["x"], outputs=["a", "b"], **kw)
    assert not torch.equal(m.a.weight, m.b.weight)
    mine = module_losses(torch, m, data)
    for k in mine:
        assert r.losses_after[k] == pytest.approx(mine[k], rel=1e-5), k
