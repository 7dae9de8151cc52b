"""The NYUv2 stand-in (bench/nyuv2/standin.py) writes what lorenmt/mtan's
preprocessing writes, and what its docstring promises: channels-last float32
arrays per sample, unit normals, a depth wherever a pixel has a label, the
same bytes from the same seed."""

import hashlib
import importlib.util
import os

import numpy as np
import pytest

from conftest import repo_file


@pytest.fixture(scope="module")
def standin():
    spec = importlib.util.spec_from_file_location("standin", repo_file("bench", "nyuv2", "standin.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _digest(root):
    h = hashlib.sha256()
    for split in ("train", "val"):
        for sub in ("image", "label", "depth", "normal"):
            folder = os.path.join(root, split, sub)
            for name in sorted(os.listdir(folder)):
                h.update(name.encode())
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def test_standin_layout_and_invariants(standin, tmp_path):
    h, w = 32, 48
    standin.generate(str(tmp_path), n_train=6, n_val=3, size=(h, w), seed=3)
    for split, count in (("train", 6), ("val", 3)):
        for sub in ("image", "label", "depth", "normal"):
            assert sorted(os.listdir(tmp_path / split / sub)) == sorted("%d.npy" % i for i in range(count))
        for i in range(count):
            image, label, depth, normal = (np.load(tmp_path / split / sub / ("%d.npy" % i))
                                           for sub in ("image", "label", "depth", "normal"))
            assert (image.shape, label.shape, depth.shape, normal.shape) == ((h, w, 3), (h, w), (h, w, 1), (h, w, 3))
            for a in (image, label, depth, normal):
                assert a.dtype == np.float32
                assert np.isfinite(a).all()
            assert image.min() >= 0 and image.max() <= 1
            assert set(np.unique(label)) <= set(range(-1, 13))
            labelled = label >= 0
            ignored = ~labelled
            assert ignored.any() and labelled.mean() > 0.8
            assert (depth[..., 0][labelled] > 0).all()
            assert (depth[..., 0][ignored] == 0).all()
            norms = np.linalg.norm(normal, axis=2)
            np.testing.assert_allclose(norms[labelled], 1, atol=1e-5)
            assert (normal[ignored] == 0).all()
            # Every visible surface faces the camera: its normal against the pixel's ray
            # (pinhole, focal length 0.9·W, x right, y up, looking down -z).
            jj, ii = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
            ray = np.stack([(jj - w / 2) / (0.9 * w), -(ii - h / 2) / (0.9 * w), -np.ones_like(jj)], -1)
            assert (np.sum(normal * ray, axis=2)[labelled] < 1e-6).all()


def test_standin_deterministic(standin, tmp_path):
    for name in ("a", "b"):
        standin.generate(str(tmp_path / name), n_train=2, n_val=1, size=(32, 32), seed=7)
    standin.generate(str(tmp_path / "c"), n_train=2, n_val=1, size=(32, 32), seed=8)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert _digest(tmp_path / "a") != _digest(tmp_path / "c")


def test_standin_refuses_existing_split(standin, tmp_path):
    os.makedirs(tmp_path / "train")
    with pytest.raises(FileExistsError, match="train"):
        standin.generate(str(tmp_path), n_train=1, n_val=1, size=(32, 32))
