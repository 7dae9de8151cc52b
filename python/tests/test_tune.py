"""tune through the API: the criterion moves, the tuned weights come back into the module."""

import os

import numpy as np
import pytest

import paretonav
from conftest import TASKS, need, torch_losses

CRITERION = "seg*depth"


def test_tune_loads_back(torch, binary, trained, model):
    _, sd0, train, val = trained
    before = torch_losses(torch, model, val)
    model.depth.bias.requires_grad_(False)  # PyTorch's own way to freeze: honoured too
    r = paretonav.tune(model, data=train, val=val, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS,
                       criterion=CRITERION, steps=40, batch=8, lr=3e-3, freeze=["enc.0.*"], progress=False)
    assert r.status == "StepLimit" and r.steps == 40 and r.measured_on == "validation"
    assert repr(r).startswith("TuneResult(stopped after 40 steps, on the validation data:"), repr(r)
    # The tool measured before on the module as PyTorch computes it...
    for k in before:
        assert r.losses_before[k] == pytest.approx(before[k], rel=1e-5, abs=1e-6), k
    # ...moved the criterion...
    assert r.F_after < r.F_before
    assert r.F_before == pytest.approx(before["seg"] * before["depth"], rel=1e-5)
    # ...and the module now holds the tuned weights: PyTorch's own losses are the report's.
    after = torch_losses(torch, model, val)
    for k in after:
        assert r.losses_after[k] == pytest.approx(after[k], rel=1e-5, abs=1e-6), k
    assert after["seg"] * after["depth"] < before["seg"] * before["depth"]
    sd = model.state_dict()
    changed = [k for k in sd if not torch.equal(sd[k], sd0[k])]
    # Frozen parameters and BatchNorm running statistics are bit-identical.
    for k in sd:
        if k.startswith("enc.0.") or k == "depth.bias" or "running_" in k or "num_batches" in k:
            assert torch.equal(sd[k], sd0[k]), k
    assert "seg.weight" in changed and "enc.3.weight" in changed
    assert sorted(r.loaded) == sorted(k for k in sd if "num_batches" not in k)
    assert r.g == r.g_after and r.g_before is not None
    assert "miou" in r.metrics["seg"] and "miou" in r.metrics_before["seg"]  # l1 has no metrics
    log = r.log if isinstance(r.log, list) else r.log.to_dict("records")
    assert len(log) == 40 and r.config["steps"] == 40
    # The temporary work folder is gone: the module holds the result.
    assert r.paths == {"model": None, "out": None, "log": None, "workdir": None}
    assert repr(r).endswith(")") and "out=" not in repr(r)


def test_kept_workdir(torch, binary, trained, model, tmp_path):
    _, _, train, _ = trained
    for kw in ({"keep_workdir": True}, {"workdir": str(tmp_path / "w")}):
        r = paretonav.tune(model, data=train, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS,
                           criterion=CRITERION, steps=2, batch=8, progress=False, **kw)
        assert os.path.isfile(r.paths["out"]) and os.path.isfile(r.paths["log"]) and os.path.isfile(r.paths["model"])
        assert not os.path.exists(os.path.join(r.paths["workdir"], "data"))  # written data removed
        assert repr(r).endswith("out=%s)" % r.paths["out"])


def test_tune_onnx_path_and_task_objects(torch, binary, trained, model, tmp_path):
    _, _, train, val = trained
    path = paretonav.export(model, [train["x"][:2]], str(tmp_path / "m.onnx"), ["x"], ["seg_logp", "depth"])
    tasks = [paretonav.Task("seg", "nll", output="seg_logp", target="seg", ignore_index=-1),
             paretonav.Task("depth", "l1", output="depth", target="depth_t")]
    out = str(tmp_path / "tuned.onnx")
    # numpy arrays, float64 inputs and int32 labels: converted to what the model reads.
    data = {"x": train["x"].numpy().astype(np.float64), "seg": train["seg"].numpy().astype(np.int32),
            "depth_t": train["depth_t"].numpy()}
    r = paretonav.tune(path, data=data, tasks=tasks, criterion=CRITERION, steps=5, batch=8, out=out, progress=False)
    assert r.paths["out"] == out and os.path.isfile(out) and r.loaded == []
    info = paretonav.inspect(out)
    assert [i["name"] for i in info["inputs"]] == ["x"]
    assert {o["name"] for o in info["outputs"]} == {"seg_logp", "depth"}
    loaded = paretonav.load_weights(model, out)
    ev = paretonav.evaluate(model, val, inputs=["x"], outputs=["seg_logp", "depth"], tasks=tasks)
    mine = torch_losses(torch, model, val)
    assert sorted(loaded) == sorted(k for k in model.state_dict() if "num_batches" not in k) and ev.examples == 32
    for k in mine:
        assert ev.losses[k] == pytest.approx(mine[k], rel=1e-5, abs=1e-6), k


def test_dataset_of_dicts(torch, binary, trained, model):
    _, _, train, val = trained

    class DS(torch.utils.data.Dataset):
        def __init__(self, d):
            self.d, self.reads = d, 0

        def __len__(self):
            return len(self.d["x"])

        def __getitem__(self, i):
            self.reads += 1
            return {k: v[i] for k, v in self.d.items()}

    ds = DS(val)
    ev = paretonav.evaluate(model, ds, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS)
    ref = paretonav.evaluate(model, val, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS)
    assert ev.losses == ref.losses and ev.examples == 32
    assert ds.reads == 32 + 2  # each example read once, plus two for the export's example batch


def test_dataset_item_shape_changes(tmp_path):
    from paretonav.data import write_data

    items = [{"x": np.zeros((3, 4), np.float32)}, {"x": np.zeros((3, 5), np.float32)}]

    class DS:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return items[i]

    with pytest.raises(ValueError, match=r"item 1's 'x' has shape \(3, 5\), item 0's \(3, 4\)"):
        write_data(str(tmp_path), DS(), {"x": np.float32})


def test_write_data_streams_chunks(tmp_path, monkeypatch):
    import paretonav.data as d

    monkeypatch.setattr(d, "_CHUNK_BYTES", 64)  # 4 rows of 4 float32 per chunk
    a = np.arange(40, dtype=np.float64).reshape(10, 4)
    lab = np.arange(10, dtype=np.float32)
    paths = d.write_data(str(tmp_path), {"a": a, "lab": lab, "unused": "ignored"}, {"a": np.float32, "lab": np.int64})
    np.testing.assert_array_equal(np.load(paths["a"]), a.astype(np.float32))
    assert np.load(paths["lab"]).dtype == np.int64
    p = d.write_data(str(tmp_path / "n"), {"input/x": a}, {"input/x": None})["input/x"]
    assert os.path.dirname(p) == str(tmp_path / "n")  # a name with a slash stays one file in the folder
    with pytest.raises(TypeError, match="'lab': expected class labels"):
        d.write_data(str(tmp_path / "b"), {"lab": lab + 0.5}, {"lab": np.int64})
    with pytest.raises(KeyError, match="no array 'y'"):
        d.write_data(str(tmp_path / "c"), {"a": a}, {"y": None})
    with pytest.raises(ValueError, match="disagree on the number of examples"):
        d.write_data(str(tmp_path / "d"), {"a": a, "lab": lab[:3]}, {"a": None, "lab": None})


def test_progress_lines_from_the_log(torch, binary, trained, model, capfd):
    """Off a terminal, the progress is a line per tenth of the run, read from the growing JSON-lines log."""
    _, _, train, _ = trained
    paretonav.tune(model, data=train, inputs=["x"], outputs=["seg_logp", "depth"], tasks=TASKS,
                   criterion=CRITERION, steps=20, batch=8)
    err = capfd.readouterr().err
    lines = [l for l in err.splitlines() if l.startswith("tune ")]
    assert lines[0].startswith("tune 1/20 [") and lines[-1].startswith("tune 20/20 [########################]")
    assert 10 <= len(lines) <= 12 and all(" F=" in l and " g=" in l for l in lines)


def test_log_tail_keeps_partial_lines(tmp_path):
    from paretonav._run import _Tail

    p = tmp_path / "log.jsonl"
    p.write_text('{"kind": "config", "steps": 3}\n{"step": 1, "F"')
    t = _Tail(str(p))
    assert t.lines() == [{"kind": "config", "steps": 3}]
    with open(p, "a") as f:
        f.write(': 0.5}\n{"step": 2}\n')
    assert t.lines() == [{"step": 1, "F": 0.5}, {"step": 2}]
    assert t.lines() == []


def _point_model(path, w0):
    """y = x + w, w = w0 (2 weights): with x = 0, targets a = (0, 0) and b = (2, 0) the losses
    p = mse(y, a) and q = mse(y, b) have the segment from a to b as their Pareto set."""
    onnx = need("onnx")
    from onnx import TensorProto, helper, numpy_helper

    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 2]) for n in ("x", "y")]
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "point", vi[:1], vi[1:],
                          [numpy_helper.from_array(np.array(w0, np.float32), "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, path)
    n = 16
    return {"x": np.zeros((n, 2), np.float32), "a": np.zeros((n, 2), np.float32),
            "b": np.tile(np.array([2, 0], np.float32), (n, 1))}


def test_tune_explains_a_rise_of_F(binary, tmp_path):
    """F rose while both losses fell: the result says they fell past their wd targets far from the front,
    in the binary's words and numbers."""
    path = str(tmp_path / "point.onnx")
    data = _point_model(path, [0.2, 3])
    r = paretonav.tune(path, data=data, tasks=["p:mse:y:a", "q:mse:y:b"], criterion="wd:4.5,6", steps=30, lr=0.01,
                       out=str(tmp_path / "tuned.onnx"), progress=False)
    assert r.F_after > r.F_before and all(r.losses_after[k] < r.losses_before[k] for k in "pq")
    ex = r.explanation
    assert ex["F"]["rose"] and [p["cause"] for p in ex["F"]["parts"]] == ["past_target", "past_target"]
    assert ex["control"]["on"] == ex["control"]["far"] == 30
    assert "below its target 4.5, which F counts as a cost" in r.summary
    assert "the control was on at 30 of 30 steps" in r.summary and "to try:" in r.summary
    assert "why: the run was far from the Pareto front" in repr(r)
