"""Data the binary reads itself: a string is a data source spec passed
through as --data / --val (here an NYUv2 split in MTAN's layout)."""

import os

import numpy as np
import pytest

import paretonav

OUTS = ["seg_logp", "depth"]
NYU_TASKS = ["seg:nll:seg_logp:label:ignore_index=-1", "depth:l1:depth:depth"]


def write_nyuv2(folder, data):
    """data (x [N,3,H,W], seg [N,H,W], depth_t [N,1,H,W]) in MTAN's layout:
    one float64 .npy per example and array, channels last."""
    x, seg, depth = (data[k].numpy() for k in ("x", "seg", "depth_t"))
    for name in ("image", "label", "depth", "normal"):
        os.makedirs(os.path.join(folder, name))
    for i in range(len(x)):
        np.save(os.path.join(folder, "image", "%d.npy" % i), np.moveaxis(x[i], 0, -1).astype(np.float64))
        np.save(os.path.join(folder, "label", "%d.npy" % i), seg[i].astype(np.float64))
        np.save(os.path.join(folder, "depth", "%d.npy" % i), np.moveaxis(depth[i], 0, -1).astype(np.float64))
        np.save(os.path.join(folder, "normal", "%d.npy" % i), np.zeros(x[i].shape[1:] + (3,)))


def test_nyuv2_spec_measures_as_arrays(torch, binary, trained, model, tmp_path):
    _, _, train, val = trained
    folder = str(tmp_path / "val")
    write_nyuv2(folder, val)
    arrays = {"x": val["x"], "label": val["seg"], "depth": val["depth_t"]}
    ref = paretonav.evaluate(model, arrays, inputs=["x"], outputs=OUTS, tasks=NYU_TASKS)
    ev = paretonav.evaluate(model, "nyuv2:" + folder, inputs=["x"], outputs=OUTS, tasks=NYU_TASKS, map=["x=image"])
    assert ev.examples == 32
    for k in ref.losses:
        assert ev.losses[k] == pytest.approx(ref.losses[k], rel=1e-5), k
    r = paretonav.tune(model, data={"image": train["x"], "label": train["seg"], "depth": train["depth_t"]},
                       val="nyuv2:" + folder, inputs=["x"], outputs=OUTS, tasks=NYU_TASKS, criterion="seg*depth",
                       steps=2, batch=8, progress=False, map=["x=image"])
    assert r.steps == 2 and r.measured_on == "validation"
    assert r.losses_before["seg"] == pytest.approx(ref.losses["seg"], rel=1e-5)


def test_spec_without_the_input_is_named(torch, binary, model, tmp_path):
    folder = str(tmp_path / "split")
    os.makedirs(os.path.join(folder, "a"))
    np.save(os.path.join(folder, "a", "0.npy"), np.zeros((8, 8, 3)))
    with pytest.raises(KeyError, match="no array 'x' for the export"):
        paretonav.evaluate(model, "folder:" + folder, inputs=["x"], outputs=OUTS, tasks=NYU_TASKS)
