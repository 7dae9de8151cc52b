"""Loading tuned weights back is all or nothing: a target that cannot take
its value is refused before anything is copied, and a copy that fails midway
leaves the module as it was."""

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import paretonav


def make_scaled(torch, view):
    """Two Linear layers and a per-feature scale, a view of one element when view."""
    nn = torch.nn

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)
            self.scale = nn.Parameter(torch.ones(1).expand(4) if view else torch.ones(4))

        def forward(self, x):
            h = self.a(x)
            return self.b(h * self.scale), h

    torch.manual_seed(0)
    return Scaled()


def tuned_file(torch, tmp_path):
    """An export of the contiguous twin with every initializer changed, as a tuned file is."""
    path = str(tmp_path / "m.onnx")
    paretonav.export(make_scaled(torch, False), [torch.randn(2, 4)], path, ["x"], ["y", "h"])
    m = onnx.load(path)
    for t in m.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) + 0.5, t.name))
    out = str(tmp_path / "tuned.onnx")
    onnx.save(m, out)
    return out


def snapshot(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_view_parameter_refused_before_anything_is_copied(torch, tmp_path):
    out = tuned_file(torch, tmp_path)
    module = make_scaled(torch, True)
    before = snapshot(module)
    with pytest.raises(paretonav.MappingError, match=r"scale is a view whose elements share memory") as e:
        paretonav.load_weights(module, out)
    assert e.value.names == ["scale"] and "nothing was loaded" in str(e.value)
    after = module.state_dict()
    for k in before:
        assert torch.equal(after[k], before[k]), k


def test_view_parameter_refused_before_tuning(torch, tmp_path):
    """tune finds it when it exports the module, before the binary runs."""
    module = make_scaled(torch, True)
    data = {"x": np.zeros((4, 4), np.float32), "t": np.zeros((4, 4), np.float32)}
    with pytest.raises(paretonav.MappingError, match=r"\(nothing was tuned\): scale is a view"):
        paretonav.tune(module, data, inputs=["x"], outputs=["y", "h"], tasks=["a:mse:y:t"], steps=1,
                       workdir=str(tmp_path / "w"), progress=False)


def test_failed_copy_restores_the_module(torch, tmp_path, monkeypatch):
    out = tuned_file(torch, tmp_path)
    module = make_scaled(torch, False)
    before = snapshot(module)
    real, calls = torch.Tensor.copy_, []

    def failing_third(self, src, *a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("copy failed")
        return real(self, src, *a, **k)

    monkeypatch.setattr(torch.Tensor, "copy_", failing_third)
    with pytest.raises(RuntimeError, match="copy failed"):
        paretonav.load_weights(module, out)
    monkeypatch.undo()
    after = module.state_dict()
    for k in before:
        assert torch.equal(after[k], before[k]), k
    # and with nothing failing, every value is the file's
    assert sorted(paretonav.load_weights(module, out)) == sorted(before)
    for k in before:
        assert torch.equal(module.state_dict()[k], before[k] + 0.5), k


def test_overlap_stride_test(torch, monkeypatch):
    """Without torch's own overlap check, strides decide."""
    from paretonav import api

    monkeypatch.delattr(torch, "_debug_has_internal_overlap", raising=False)
    assert api._overlaps(torch.ones(1).expand(4))
    assert api._overlaps(torch.ones(6).as_strided((2, 3), (1, 1)))
    assert not api._overlaps(torch.ones(3, 4).t())
    assert not api._overlaps(torch.ones(3, 4)[:, ::2])
