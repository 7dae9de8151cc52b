"""bench/step_models.py and bench/models_table.py: the zoo's architectures
are models of their own beside docs/bench-step.md's, selected by
--models, written to their own --out with a paragraph naming them, and the
PyTorch twin's step recomputes an eval-mode cache of a parameter (timm's
LeViT) every step instead of backpropagating into the previous step's
freed graph."""

import argparse
import importlib.util
import os
import re
import sys

import pytest

from conftest import need, repo_file


@pytest.fixture(scope="module")
def bench():
    if os.environ.get("PARETONAV_TORCH2") == "1":
        pytest.skip("bench/step_models.py imports torchvision, which .ci/run's torch 2.x venv does not hold; "
                    "its run with Debian's torch tests it")
    need("torch")
    need("torchvision")
    need("onnx")
    path = repo_file("bench", "models_table.py")
    spec = importlib.util.spec_from_file_location("models_table", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, sys.modules["step_models"]


DOC_MODELS = ["lenet2", "mtan_small", "vit2", "convnext2", "mbv3_small", "tfblock", "convnext_t", "effnet_b0",
              "shufflenet", "regnet_x", "deeplab_mbv3"]


def test_default_run_keeps_bench_step_md_models(bench):
    mt, sm = bench
    assert sm.DEFAULT == DOC_MODELS
    assert not set(sm.DEFAULT) & set(sm.ZOO)
    assert mt.select("") == DOC_MODELS


@pytest.mark.parametrize("models,want", [
    ("zoo", None),
    ("unet,lenet2", ["unet", "lenet2"]),
    ("mha,zoo", "mha+zoo"),
])
def test_select(bench, models, want):
    mt, sm = bench
    if want is None:
        want = sm.ZOO
    elif want == "mha+zoo":
        want = ["mha"] + sm.ZOO
    assert mt.select(models) == want


def test_select_names_an_unknown_model(bench):
    mt, _ = bench
    with pytest.raises(SystemExit, match="unknown model 'vit_huge'"):
        mt.select("unet,vit_huge")


def test_zoo_models_are_check_py_models(bench):
    _, sm = bench
    assert sm.ZOO == ["unet", "unet16", "vit_reg", "eva02", "levit", "mha", "maxvit", "convnextv2", "fastvit",
                      "mobilenetv4", "regnety", "poolformer"]
    for name in sm.ZOO:
        _, shape, _, specs, outs, fixture = sm.MODELS[name]
        what, _, _, zshape, heads = sm.zoo.MODELS["unet" if name == "unet16" else name]
        assert (specs, outs, fixture) == (heads["tasks"], heads["outputs"], None), name
        assert shape == ((2, 3, 64, 64) if name == "unet16" else zshape), name


def _args(mt, **kw):
    a = dict(pairs=2, models="", out=os.path.join(mt.HERE, "..", "docs", "bench-step.md"), threads=2, steps=3,
             min_seconds=10.0, json="")
    a.update(kw)
    return argparse.Namespace(**a)


def test_command_of_each_table(bench):
    mt, _ = bench
    with open(repo_file("docs", "bench-step.md"), encoding="utf-8") as f:
        doc = f.read()
    default = mt.command(_args(mt))
    # the command that wrote the doc: the default one, with the options the
    # run gave that are not defaults (--pairs 3, say)
    assert re.search(r"^    " + re.escape(default) + r"( --[a-z-]+ [^ \n]+)*\n", doc, re.M), doc[:600]
    zoo = mt.command(_args(mt, pairs=3, models="zoo", out=os.path.join(mt.HERE, "..", "docs", "bench-step-zoo.md")))
    assert zoo == default + " --pairs 3 --models zoo --out docs/bench-step-zoo.md"


def _row(name):
    return {"model": name, "params": 1e6, "file_mb": 1.0, "paretonav_s": 0.5, "torch_s": 1.0, "time_ratio": 0.5,
            "ratios": [0.5], "paretonav_rss": 1e8, "torch_rss": 2e8, "rss_ratio": 0.5, "load_build_s": 0.1,
            "load_builds": [0.1], "load_disk_bytes": [None], "steps": 3, "allocs": None, "speedup": None,
            "outside_kernels": None, "pool_waiting": None, "kinds": None, "flops": None}


def test_zoo_table_names_its_models_before_the_table(bench, tmp_path):
    mt, _ = bench
    out = str(tmp_path / "zoo.md")
    mt.write(_args(mt, models="unet,mha", out=out), [_row("unet"), _row("mha")], {}, "2026-01-01 00:00 UTC",
             "0.00 0.00 0.00", "0.00 0.00 0.00", "PyTorch 2.15.0 (BLAS mkl)")
    text = open(out, encoding="utf-8").read()
    head, table = text.split("| model |", 1)
    assert head.startswith("# One PNG step per model: paretonav against PyTorch, the PyTorch 2.x zoo\n\n"
                           "The architectures of `bench/torch2_zoo/check.py`")
    words = " ".join(head.split())  # the paragraph is wrapped
    assert "`unet` (UNet (ours)), `mha` (nn.MultiheadAttention (ours))." in words
    assert "--models unet,mha --out " + out in head
    assert "| `unet`: UNet (ours)" in table and "| `mha`: nn.MultiheadAttention (ours)" in table


def test_default_table_has_no_zoo_paragraph(bench, tmp_path):
    mt, _ = bench
    out = str(tmp_path / "step.md")
    mt.write(_args(mt, out=out), [_row("lenet2")], {}, "2026-01-01 00:00 UTC", "0.00 0.00 0.00",
             "0.00 0.00 0.00", "PyTorch 2.15.0 (BLAS mkl)")
    text = open(out, encoding="utf-8").read()
    assert text.startswith("# One PNG step per model: paretonav against PyTorch\n\nWritten by `bench/models_table.py`")


def _cached(torch):
    class Cached(torch.nn.Module):
        """Caches a tensor gathered from a parameter in eval mode, as timm's LeViT its attention biases."""

        def __init__(self):
            super().__init__()
            self.biases = torch.nn.Parameter(torch.linspace(-1, 1, 6).reshape(2, 3))
            self.register_buffer("idx", torch.tensor([[0, 2], [1, 1]]), persistent=False)
            self.lin = torch.nn.Linear(4, 2)
            self.attention_bias_cache = {}

        def forward(self, x):
            if self.training:
                b = self.biases[:, self.idx]
            else:
                if "cpu" not in self.attention_bias_cache:
                    self.attention_bias_cache["cpu"] = self.biases[:, self.idx]
                b = self.attention_bias_cache["cpu"]
            y = self.lin(x) + torch.tanh(b).sum()
            return y, y.sum(1, keepdim=True)

    return Cached().eval()


def test_twin_step_recomputes_an_eval_cache_each_step(bench):
    _, sm = bench
    torch = need("torch")
    model = _cached(torch)
    params = list(model.parameters())
    x = torch.randn(3, 4)
    specs = ["a:mse:y:ty", "b:mse:s:ts"]
    targets = {"ty": torch.zeros(3, 2), "ts": torch.ones(3, 1)}
    caches = sm.bias_caches(model)
    assert caches == [model]
    first = sm.step(model, params, x, specs, ["y", "s"], targets, caches)
    second = sm.step(model, params, x, specs, ["y", "s"], targets, caches)
    torch.testing.assert_close(second, first)
    assert float(first.abs().sum()) > 0
    # without emptying it, the cached tensor's graph is the first step's, freed by its last backward pass
    stale = _cached(torch)
    sm.step(stale, list(stale.parameters()), x, specs, ["y", "s"], targets)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        sm.step(stale, list(stale.parameters()), x, specs, ["y", "s"], targets)
