"""Attention models through paretonav.tune under the installed torch (1.13 or 2.x), tuned files of
torch.onnx.export's optimizer loaded back by themselves, and parameters a file does not train named."""

import os
import re
import warnings

import numpy as np
import onnx
import pytest

import paretonav
from conftest import need


def torch_version(torch):
    return tuple(int(v) for v in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())


def need_torch2(torch):
    """Skips where torch is older than 2.5 (no dynamo exporter with state_dict names); fails there under
    PARETONAV_TORCH2=1, which .ci/run sets for its run of these tests in a venv with torch 2.x."""
    if torch_version(torch) >= (2, 5):
        need("onnxscript")
        return
    msg = "torch %s has no torch.onnx.export(dynamo=True) that names initializers by state_dict keys" % torch.__version__
    if os.environ.get("PARETONAV_TORCH2") == "1":
        pytest.fail("PARETONAV_TORCH2=1: " + msg)
    pytest.skip(msg + " (CI runs this test under torch 2.x)")


def make_vit(torch):
    """Patch embedding, one pre-norm attention block (F.scaled_dot_product_attention where torch has it,
    else the same computation written out, as torch 1.13 has no SDPA), two heads."""
    nn, F = torch.nn, torch.nn.functional

    class TinyViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(3, 16, 4, 4)
            self.pos = nn.Parameter(torch.randn(1, 4, 16) * 0.1)
            self.norm = nn.LayerNorm(16)
            self.qkv = nn.Linear(16, 48)
            self.proj = nn.Linear(16, 16)
            self.a = nn.Linear(16, 3)
            self.b = nn.Linear(16, 1)

        def forward(self, x):
            h = self.patch(x).flatten(2).transpose(1, 2) + self.pos
            B, N, C = h.shape
            q, k, v = self.qkv(self.norm(h)).reshape(B, N, 3, 2, C // 2).permute(2, 0, 3, 1, 4).unbind(0)
            if hasattr(F, "scaled_dot_product_attention"):
                o = F.scaled_dot_product_attention(q, k, v)
            else:
                o = torch.softmax(q @ k.transpose(-2, -1) / (C // 2) ** 0.5, -1) @ v
            h = h + self.proj(o.transpose(1, 2).reshape(B, N, C))
            h = h.mean(1)
            return F.log_softmax(self.a(h), -1), self.b(h)

    return TinyViT


def make_mha(torch):
    """nn.MultiheadAttention(batch_first=True), two heads: in eval mode PyTorch takes its fast path."""
    nn, F = torch.nn, torch.nn.functional

    class TwoHeadMHA(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Linear(3 * 4, 16)
            self.att = nn.MultiheadAttention(16, 2, batch_first=True)
            self.a = nn.Linear(16, 3)
            self.b = nn.Linear(16, 1)

        def forward(self, x):
            h = self.emb(x.reshape(x.shape[0], 3, 4, 4).permute(0, 2, 1, 3).reshape(x.shape[0], 4, 12))
            h = h + self.att(h, h, h, need_weights=False)[0]
            h = h.mean(1)
            return F.log_softmax(self.a(h), -1), self.b(h)

    return TwoHeadMHA


TASKS = ["a:nll:a:ta", "b:mse:b:tb"]


def attention_data(torch, n=32, seed=11):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, 4, 4, generator=g)
    return {"x": x, "ta": (x[:, 0].mean((1, 2)) > 0).long() + (x[:, 1].mean((1, 2)) > 0.2).long(),
            "tb": x[:, 2].mean((1, 2)).unsqueeze(1)}


def attention_losses(torch, m, data):
    F = torch.nn.functional
    with torch.no_grad():
        logp, b = m.eval()(data["x"])
    return {"a": F.nll_loss(logp, data["ta"]).item(), "b": F.mse_loss(b, data["tb"]).item()}


@pytest.mark.parametrize("make", [make_vit, make_mha], ids=["sdpa_vit", "multihead_attention"])
def test_attention_module_tunes_and_loads_back(torch, binary, make):
    """The export under the installed torch: what the tool measures is PyTorch's loss before and after, the
    tuned weights are in the module, and every parameter trained."""
    torch.manual_seed(12)
    m = make(torch)().eval()
    data = attention_data(torch)
    before = attention_losses(torch, m, data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", paretonav.ParetonavWarning)  # nothing left untrained
        r = paretonav.tune(m, data=data, inputs=["x"], outputs=["a", "b"], tasks=TASKS, criterion="a+b",
                           steps=15, batch=8, lr=3e-3, progress=False)
    after = attention_losses(torch, m, data)
    for k in before:
        assert r.losses_before[k] == pytest.approx(before[k], rel=1e-5, abs=1e-6), k
        assert r.losses_after[k] == pytest.approx(after[k], rel=1e-5, abs=1e-6), k
    assert after["a"] + after["b"] < before["a"] + before["b"]
    assert sorted(r.loaded) == sorted(m.state_dict()) and r.unmapped == []


def test_mha_fast_path_restored(torch, binary, tmp_path):
    """The export switches nn.MultiheadAttention's fast path off for itself only."""
    mha = getattr(torch.backends, "mha", None)
    if mha is None or not hasattr(mha, "get_fastpath_enabled"):
        pytest.skip("torch %s has no torch.backends.mha switch (the export keeps grad enabled instead)"
                    % torch.__version__)
    data = attention_data(torch, 4)
    for state in (True, False):
        mha.set_fastpath_enabled(state)
        try:
            paretonav.export(make_mha(torch)(), [data["x"][:2]], str(tmp_path / ("m%d.onnx" % state)), ["x"],
                             ["a", "b"])
            assert mha.get_fastpath_enabled() is state
        finally:
            mha.set_fastpath_enabled(True)


def make_linear_scaled(torch):
    """A Linear layer on tokens and a conv layer scale: torch.onnx.export's optimizer folds the token
    Linear's (square) weight into a transposed copy for MatMul and the layer scale into a reshaped one
    (the heads, on 2-D inputs, become Gemm and keep their weights)."""
    nn, F = torch.nn, torch.nn.functional

    class LinScaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.gamma = nn.Parameter(torch.rand(8) + 0.5)
            self.sq = nn.Linear(8, 8)
            self.a = nn.Linear(8, 3)
            self.b = nn.Linear(8, 1)

        def forward(self, x):
            h = (self.conv(x) * self.gamma.view(1, -1, 1, 1)).flatten(2).transpose(1, 2)  # tokens
            h = torch.relu(self.sq(h)).mean(1)
            return F.log_softmax(self.a(h), -1), self.b(h)

    return LinScaled


def dynamo_optimized(torch, m, x, path):
    """torch.onnx.export's default since PyTorch 2.9: dynamo=True with optimize=True."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m.eval(), (x,), path, input_names=["x"], output_names=["a", "b"],
                          dynamic_axes={"x": {0: "N"}, "a": {0: "N"}, "b": {0: "N"}}, dynamo=True, verbose=False)
    return path


def test_optimized_export_tuned_file_loads_back_alone(torch, binary, tmp_path):
    """A tuned file's transposed and reshaped copies no longer equal the module's values: they map back by
    the file's own metadata (folded_from, the reading node's aten.linear), without source=, and the
    module then computes the tuned losses."""
    need_torch2(torch)
    torch.manual_seed(13)
    m = make_linear_scaled(torch)()
    data = attention_data(torch)
    path = dynamo_optimized(torch, m, data["x"][:2], str(tmp_path / "opt.onnx"))
    mapping, unmapped = paretonav.map_state_dict(path, m)
    rules = {m_key: mapping.rule[n] for n, m_key in mapping.items()}
    assert rules["sq.weight"] == "transposed" and rules["gamma"] == "reshaped", rules
    r = paretonav.tune(path, data=data, tasks=TASKS, criterion="a+b", steps=10, batch=8, lr=1e-2,
                       out=str(tmp_path / "tuned.onnx"), progress=False)
    loaded = paretonav.load_weights(m, r.paths["out"])
    assert {"sq.weight", "gamma"} <= set(loaded)
    mine = attention_losses(torch, m, data)
    for k in mine:
        assert r.losses_after[k] == pytest.approx(mine[k], rel=1e-5, abs=1e-6), k
    assert r.losses_after != r.losses_before


def test_optimized_mha_tuned_file_loads_back_alone(torch, binary, tmp_path):
    """nn.MultiheadAttention through the default optimized export: the in-projection becomes a transposed
    copy and the fresh out_proj.bias (zeros) is folded away, which untrained() names; the tuned file alone
    loads back, strict, and the module computes the tuned losses."""
    need_torch2(torch)
    torch.manual_seed(12)
    m = make_mha(torch)().eval()
    data = attention_data(torch)
    path = dynamo_optimized(torch, m, data["x"][:2], str(tmp_path / "mha.onnx"))
    assert list(paretonav.untrained(m, path)) == ["att.out_proj.bias"]
    r = paretonav.tune(path, data=data, tasks=TASKS, criterion="a+b", steps=10, batch=8, lr=1e-2,
                       out=str(tmp_path / "tuned.onnx"), progress=False)
    with pytest.warns(paretonav.ParetonavWarning, match=r"att\.out_proj\.bias: no initializer.*folded it away"):
        loaded = paretonav.load_weights(m, r.paths["out"])
    assert "att.in_proj_weight" in loaded and "att.out_proj.bias" not in loaded
    assert not torch.any(m.att.out_proj.bias != 0)
    mine = attention_losses(torch, m, data)
    for k in mine:
        assert r.losses_after[k] == pytest.approx(mine[k], rel=1e-5, abs=1e-6), k
    assert r.losses_after != r.losses_before


def make_upsampled(torch):
    """Conv, GroupNorm, a bilinear upsampling by a scale factor, a second Conv, two heads: no BatchNorm, so
    torch.onnx.export's optimizer fuses nothing, but it lifts Resize's constant scales into an initializer
    without metadata (a UNet's decoder)."""
    nn, F = torch.nn, torch.nn.functional

    class Upsampled(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.gn = nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8)
            self.conv2 = nn.Conv2d(8, 8, 3, stride=2)
            self.a = nn.Linear(8, 3)
            self.b = nn.Linear(8, 1)

        def forward(self, x):
            h = torch.relu(self.gn(self.conv1(x)))
            h = F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
            h = torch.relu(self.conv2(h)).mean((2, 3))
            return F.log_softmax(self.a(h), -1), self.b(h)

    return Upsampled


def test_optimized_upsampling_tuned_file_loads_back_alone(torch, binary, tmp_path):
    """Resize's scales, lifted by the optimizer into an initializer without metadata, hold no parameter
    and are not taken for a fused BatchNorm: the tuned file alone loads back, strict, every parameter of
    the module, which then computes the tuned losses."""
    need_torch2(torch)
    torch.manual_seed(15)
    m = make_upsampled(torch)().eval()
    data = attention_data(torch)
    path = dynamo_optimized(torch, m, data["x"][:2], str(tmp_path / "up.onnx"))
    g = onnx.load(path).graph
    scales = {n.input[2] for n in g.node if n.op_type == "Resize" and len(n.input) > 2}
    assert scales & {t.name for t in g.initializer}, "no Resize scales initializer: this test checks nothing"
    assert paretonav.untrained(m, path) == {}
    r = paretonav.tune(path, data=data, tasks=TASKS, criterion="a+b", steps=10, batch=8, lr=1e-2,
                       out=str(tmp_path / "tuned.onnx"), progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", paretonav.ParetonavWarning)
        loaded = paretonav.load_weights(m, r.paths["out"])
    assert sorted(loaded) == sorted(k for k, _ in m.named_parameters())
    mine = attention_losses(torch, m, data)
    for k in mine:
        assert r.losses_after[k] == pytest.approx(mine[k], rel=1e-5, abs=1e-6), k
    assert r.losses_after != r.losses_before


def make_grn(torch, value=1.0):
    """ConvNeXtV2's GlobalResponseNorm (timm's, channels first): x + addcmul(beta, gamma, x · nx), gamma
    and beta viewed to [1, C, 1, 1]; with another ``value``, addcmul scales gamma's term by it. In a
    submodule, as in timm (the exporter's metadata names a folded parameter by its dotted key)."""
    nn, F = torch.nn, torch.nn.functional

    class GlobalResponseNorm(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.gamma = nn.Parameter(torch.randn(c) * 0.5)
            self.beta = nn.Parameter(torch.randn(c) * 0.1)

        def forward(self, h):
            gx = h.norm(p=2, dim=(2, 3), keepdim=True)
            nx = gx / (gx.mean(dim=1, keepdim=True) + 1e-6)
            kw = {} if value == 1.0 else {"value": value}
            return h + torch.addcmul(self.beta.view(1, -1, 1, 1), self.gamma.view(1, -1, 1, 1), h * nx, **kw)

    class GRN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.grn = GlobalResponseNorm(8)
            self.a = nn.Linear(8, 3)
            self.b = nn.Linear(8, 1)

        def forward(self, x):
            h = self.grn(self.conv(x)).mean((2, 3))
            return F.log_softmax(self.a(h), -1), self.b(h)

    return GRN


def test_optimized_grn_tuned_file_loads_back_alone(torch, binary, tmp_path):
    """The optimizer folds addcmul's 1·gamma.view(1, C, 1, 1) into a new initializer (tmp): in a tuned file it
    maps back by its addcmul node (no value argument), the file alone loads back, strict, and the module
    computes the tuned losses. With value=0.5 the folded tensor is 0.5·gamma, which maps onto nothing."""
    need_torch2(torch)
    torch.manual_seed(17)
    m = make_grn(torch)().eval()
    data = attention_data(torch)
    path = dynamo_optimized(torch, m, data["x"][:2], str(tmp_path / "grn.onnx"))
    r = paretonav.tune(path, data=data, tasks=TASKS, criterion="a+b", steps=10, batch=8, lr=1e-2,
                       out=str(tmp_path / "tuned.onnx"), progress=False)
    mapping, _ = paretonav.map_state_dict(r.paths["out"], m)
    assert {k: mapping.rule[n] for n, k in mapping.items()}["grn.gamma"] == "reshaped"
    loaded = paretonav.load_weights(m, r.paths["out"])
    assert sorted(loaded) == sorted(k for k, _ in m.named_parameters())
    mine = attention_losses(torch, m, data)
    for k in mine:
        assert r.losses_after[k] == pytest.approx(mine[k], rel=1e-5, abs=1e-6), k
    assert r.losses_after != r.losses_before

    half = make_grn(torch, 0.5)().eval()
    path = dynamo_optimized(torch, half, data["x"][:2], str(tmp_path / "half.onnx"))
    r = paretonav.tune(path, data=data, tasks=TASKS, criterion="a+b", steps=2, batch=8,
                       out=str(tmp_path / "half_tuned.onnx"), progress=False)
    _, unmapped = paretonav.map_state_dict(r.paths["out"], half)
    assert unmapped == ["grn.gamma"]


def make_tabled(torch):
    """A float buffer read as data, as torchvision's Swin v2 reads its relative_coords_table through a
    Linear (cpb_mlp), a persistent one and a non-persistent one (in no state_dict), and an integer buffer."""
    nn, F = torch.nn, torch.nn.functional

    class Tabled(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.randn(4, 8) * 0.5)
            self.register_buffer("shift", torch.randn(8) * 0.1, persistent=False)
            self.register_buffer("idx", torch.tensor([3, 1, 2, 0]))
            self.mlp = nn.Linear(8, 16)
            self.emb = nn.Linear(12, 16)
            self.a = nn.Linear(16, 3)
            self.b = nn.Linear(16, 1)

        def forward(self, x):
            h = self.emb(x.reshape(x.shape[0], 3, 4, 4).permute(0, 2, 1, 3).reshape(x.shape[0], 4, 12))
            h = torch.relu(h + self.mlp(self.table[self.idx] + self.shift)).mean(1)
            return F.log_softmax(self.a(h), -1), self.b(h)

    return Tabled


def test_module_buffers_are_not_trained(torch, binary):
    """paretonav.tune's export (the TorchScript exporter) does not say which initializers are buffers, and the
    binary trains every float initializer read as data: tune freezes the module's float buffers, persistent or
    not, so they keep their values, as PyTorch's optimizers keep them; the parameters train."""
    torch.manual_seed(16)
    m = make_tabled(torch)().eval()
    data = attention_data(torch)
    before = {k: v.clone() for k, v in list(m.named_buffers()) + list(m.named_parameters())}
    r = paretonav.tune(m, data=data, inputs=["x"], outputs=["a", "b"], tasks=TASKS, criterion="a+b", steps=5,
                       batch=8, lr=1e-2, progress=False)
    for k in ("table", "shift", "idx"):
        assert torch.equal(dict(m.named_buffers())[k], before[k]), k
    assert not torch.equal(m.mlp.weight, before["mlp.weight"])
    mine = attention_losses(torch, m, data)
    for k in mine:
        assert r.losses_after[k] == pytest.approx(mine[k], rel=1e-5, abs=1e-6), k


def make_cached(torch):
    """A bias table read through an index, cached in eval mode the way timm's LeViT and
    EfficientFormerV2 cache attention_biases[:, idx] (timm also checks torch.jit.is_tracing(); this one does
    not, so that both exporters see the cache)."""
    nn, F = torch.nn, torch.nn.functional

    class Cached(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(12, 6)
            self.table = nn.Parameter(torch.randn(6, 3) * 0.1)
            self.register_buffer("idx", torch.tensor([0, 2, 1, 1, 0, 2]))
            self.cache = {}
            self.a = nn.Linear(6, 3)
            self.b = nn.Linear(6, 1)

        def train(self, mode=True):
            super().train(mode)
            if mode:
                self.cache = {}
            return self

        def biases(self):
            if self.training:
                return self.table[torch.arange(6), self.idx]
            if "b" not in self.cache:
                self.cache["b"] = self.table[torch.arange(6), self.idx]
            return self.cache["b"]

        def forward(self, x):
            h = torch.relu(self.lin(x.flatten(1)[:, :12]) + self.biases())
            return F.log_softmax(self.a(h), -1), self.b(h)

    return Cached


def test_cached_parameter_named_before_tuning(torch, binary, tmp_path):
    """After an eval forward the cached tensor is what torch.export sees: the table is a constant of the
    file. tune names it before the first step (a warning; strict=True refuses, strict=False tunes the rest).
    torch 1.13's exporter refuses the cached tensor (it requires grad) outright: nothing is frozen silently."""
    torch.manual_seed(14)
    m = make_cached(torch)().eval()
    data = attention_data(torch)
    m(data["x"][:2])  # fills the cache, as any evaluation does
    if torch_version(torch) < (2, 5):
        with pytest.raises(RuntimeError, match="Cannot insert a Tensor that requires grad as a constant"):
            paretonav.tune(m, data=data, inputs=["x"], outputs=["a", "b"], tasks=TASKS, steps=1, progress=False)
        return
    before = m.table.detach().clone()
    kw = dict(data=data, inputs=["x"], outputs=["a", "b"], tasks=TASKS, criterion="a+b", steps=5, batch=8,
              progress=False)
    with pytest.warns(paretonav.ParetonavWarning, match=r"1 parameter of Cached will not be trained:\n  table: "
                                                        r"no initializer of the file holds it.*attention_bias_cache"):
        with pytest.raises(paretonav.MappingError, match=r"table") as e:
            paretonav.tune(m, workdir=str(tmp_path / "w"), **kw)
    assert "table" in e.value.names and not os.path.exists(tmp_path / "w" / "data")  # before anything ran
    with pytest.warns(paretonav.ParetonavWarning, match=r"table: no initializer"):
        r = paretonav.tune(m, strict=False, **kw)
    assert "table" in r.unmapped and torch.equal(m.table, before)
    assert not torch.equal(m.lin.weight, make_cached(torch)().lin.weight)


def test_zero_bias_dropped_by_optimizer_named(torch, binary, tmp_path):
    """torch.onnx.export's optimizer folds a zero bias away (a head's, on Gemm): untrained() names it, and
    load_weights warns and leaves it as it is (strict or not) while it still holds zeros, and refuses once it does not."""
    need_torch2(torch)
    torch.manual_seed(15)
    m = make_linear_scaled(torch)()
    with torch.no_grad():
        m.b.bias.zero_()
    data = attention_data(torch)
    path = dynamo_optimized(torch, m, data["x"][:2], str(tmp_path / "opt.onnx"))
    left = paretonav.untrained(m, path)
    # gamma, a parameter of the top-level module folded into a reshaped copy, is named too
    # (test_top_level_parameter_folded_by_optimizer_named)
    assert sorted(left) == ["b.bias", "gamma"] and "folded it away" in left["b.bias"], left
    r = paretonav.tune(path, data=data, tasks=TASKS, criterion="a+b", steps=3, out=str(tmp_path / "t.onnx"),
                       progress=False)
    for strict in (True, False):  # the file computes with the zeros the module holds: exact either way
        with pytest.warns(paretonav.ParetonavWarning, match=r"1 parameter of LinScaled is not in the file.*\n  "
                                                            r"b\.bias: no initializer.*folded it away"):
            paretonav.load_weights(m, r.paths["out"], strict=strict)
        assert not m.b.bias.any()
    with torch.no_grad():
        m.b.bias.fill_(0.5)  # no longer what the file computes with: refused, naming it
    with pytest.raises(paretonav.MappingError, match=r"b\.bias"):
        paretonav.load_weights(m, r.paths["out"])


def test_top_level_parameter_folded_by_optimizer_named(torch, binary, tmp_path):
    """A parameter of the top-level module (no dot in its name) that the optimizer folds into a reshaped copy
    reads, to the binary, as one of the exporter's constants and is not trained: untrained() names it, and the
    same parameter in a submodule is trained."""
    need_torch2(torch)
    nn, F = torch.nn, torch.nn.functional

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.gamma = nn.Parameter(torch.rand(8) + 0.5)

    class TopLevel(nn.Module):
        def __init__(self, nested):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            if nested:
                self.ls = Scale()
            else:
                self.gamma = nn.Parameter(torch.rand(8) + 0.5)
            self.a = nn.Linear(8, 3)
            self.b = nn.Linear(8, 1)

        def forward(self, x):
            g = self.ls.gamma if hasattr(self, "ls") else self.gamma
            h = (self.conv(x) * g.view(1, -1, 1, 1)).mean((2, 3))
            return F.log_softmax(self.a(h), -1), self.b(h)

    data = attention_data(torch)
    for nested, want in ((False, ["gamma"]), (True, [])):
        torch.manual_seed(17)
        m = TopLevel(nested)
        path = dynamo_optimized(torch, m, data["x"][:2], str(tmp_path / ("n%d.onnx" % nested)))
        left = paretonav.untrained(m, path)
        assert list(left) == want, left
        if want:
            assert "top-level module" in left["gamma"], left


def test_every_parameter_of_a_plain_module_trains(torch, tmp_path):
    """untrained() is empty for the package's own export of a module that caches nothing."""
    torch.manual_seed(16)
    m = make_linear_scaled(torch)()
    data = attention_data(torch, 4)
    path = paretonav.export(m, [data["x"][:2]], str(tmp_path / "m.onnx"), ["x"], ["a", "b"])
    assert paretonav.untrained(m, path) == {}
    m.sq.weight.requires_grad_(False)  # frozen by the user: not reported
    assert paretonav.untrained(m, path) == {}
    assert onnx.load(path).graph.initializer
