"""Data as PyTorch users hold it: a Dataset of tuples (named by names=), a
Dataset of dicts, a DataLoader of either; written to disk batch by batch."""

import tracemalloc

import numpy as np
import pytest

import paretonav
from conftest import TASKS
from paretonav.data import write_data

OUTS = ["seg_logp", "depth"]


def test_tuples_dicts_and_dataloaders_measure_alike(torch, binary, trained, model):
    _, _, _, val = trained
    utd = torch.utils.data

    class Dicts(utd.Dataset):
        def __len__(self):
            return len(val["x"])

        def __getitem__(self, i):
            return {k: v[i] for k, v in val.items()}

    tuples = utd.TensorDataset(val["x"], val["seg"], val["depth_t"])
    names = ["x", "seg", "depth_t"]
    ref = paretonav.evaluate(model, val, inputs=["x"], outputs=OUTS, tasks=TASKS)
    for data, kw in [(tuples, {"names": names}), (Dicts(), {}),
                     (utd.DataLoader(tuples, batch_size=5), {"names": names}),  # 32 = 6*5 + 2: a short last batch
                     (utd.DataLoader(Dicts(), batch_size=7, shuffle=True), {})]:
        ev = paretonav.evaluate(model, data, inputs=["x"], outputs=OUTS, tasks=TASKS, **kw)
        assert ev.examples == 32, type(data)
        for k in ref.losses:
            assert ev.losses[k] == pytest.approx(ref.losses[k], rel=1e-6), (type(data), k)


def test_tune_from_a_dataloader(torch, binary, trained, model):
    _, _, train, val = trained
    utd = torch.utils.data
    loader = utd.DataLoader(utd.TensorDataset(train["x"], train["seg"], train["depth_t"]), batch_size=16)
    r = paretonav.tune(model, data=loader, val=utd.TensorDataset(val["x"], val["seg"], val["depth_t"]),
                       names=["x", "seg", "depth_t"], inputs=["x"], outputs=OUTS, tasks=TASKS, criterion="seg*depth",
                       steps=3, batch=8, progress=False)
    assert r.steps == 3 and r.measured_on == "validation"


def test_streamed_file_is_the_concatenation(torch, tmp_path):
    utd = torch.utils.data
    g = torch.Generator().manual_seed(0)
    x = torch.randn(23, 3, 4, generator=g, dtype=torch.float64)
    lab = torch.randint(0, 5, (23,), generator=g).float()  # labels as floats: converted to int64
    loader = utd.DataLoader(utd.TensorDataset(x, lab), batch_size=4)
    batches = list(loader)
    paths = write_data(str(tmp_path), loader, {"x": np.float32, "lab": np.int64}, names=["x", "lab"])
    for name, i, dt in (("x", 0, np.float32), ("lab", 1, np.int64)):
        got = np.load(paths[name])
        want = np.concatenate([b[i].numpy() for b in batches]).astype(dt)
        assert got.dtype == dt and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.load(paths[name], mmap_mode="r"), want)  # the header holds the count
    # A Dataset yielding tuples, example by example.
    paths = write_data(str(tmp_path / "t"), utd.TensorDataset(x, lab), {"x": None}, names=["x", "lab"])
    np.testing.assert_array_equal(np.load(paths["x"]), x.numpy())


def test_never_the_whole_set_in_memory(tmp_path):
    """64 MB of batches made as they are read: the writer holds about one at a time."""

    class Batches:
        def __iter__(self):
            for i in range(64):
                yield {"x": np.full((256, 1024), i, np.float32)}  # 1 MB each

    # Not a torch DataLoader: an iterable of examples, each a 256x1024 array.
    tracemalloc.start()
    try:
        paths = write_data(str(tmp_path), Batches(), {"x": None})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    a = np.load(paths["x"], mmap_mode="r")
    assert a.shape == (64, 256, 1024) and a[63, 0, 0] == 63
    assert peak < 8 << 20, peak


def test_errors_name_what_is_wrong(torch, tmp_path):
    utd = torch.utils.data
    ds = utd.TensorDataset(torch.zeros(4, 2), torch.zeros(4))
    with pytest.raises(TypeError, match=r"data: item 0 is a tuple of 2; pass names=\[\.\.\.\]"):
        write_data(str(tmp_path), ds, {"x": None})
    with pytest.raises(ValueError, match=r"batch 0 is a list of 2, but 3 names were given \('x', 'y', 'z'\)"):
        write_data(str(tmp_path), utd.DataLoader(ds, batch_size=2), {"x": None}, names=["x", "y", "z"])
    with pytest.raises(KeyError, match=r"the DataLoader's batches have no array 'w' \(have: x, y\)"):
        write_data(str(tmp_path), utd.DataLoader(ds, batch_size=2), {"w": None}, names=["x", "y"])
    with pytest.raises(TypeError, match="an iterator can be read only once"):
        write_data(str(tmp_path), iter([{"x": np.zeros(2)}]), {"x": None})
    with pytest.raises(ValueError, match="the Dataset is empty"):
        write_data(str(tmp_path), utd.DataLoader(utd.TensorDataset(torch.zeros(0, 2)), batch_size=2), {"x": None},
                   names=["x"])
