"""Writes the user's arrays to .npy files the binary reads (``--data NAME=FILE.npy``).

Arrays are copied in chunks into memory-mapped files and a Dataset is written
one example at a time, so nothing is gathered in memory first.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, Mapping, Optional

import numpy as np

__all__ = ["write_data", "first_examples"]

_CHUNK_BYTES = 64 << 20


def _file(folder: str, i: int, name: str) -> str:
    """FOLDER/NNN_NAME.npy, NAME reduced to characters safe in any file name."""
    return os.path.join(folder, "%03d_%s.npy" % (i, re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:100]))


def _is_dataset(data: Any) -> bool:
    return not isinstance(data, Mapping) and hasattr(data, "__getitem__")


def _numpy(v: Any) -> np.ndarray:
    if hasattr(v, "detach"):  # a torch tensor
        v = v.detach().cpu().numpy()
    return np.asarray(v)


def _convert(name: str, a: np.ndarray, want: Optional[np.dtype], what: str) -> np.ndarray:
    """a as dtype want, refusing conversions that would change values' meaning."""
    if want is None or a.dtype == want:
        return a
    if np.issubdtype(want, np.integer):
        if np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_:
            return a.astype(want)
        if np.issubdtype(a.dtype, np.floating) and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
            return a.astype(want)
        raise TypeError("%s %r: expected class labels (%s), got %s values that are not all integers"
                        % (what, name, np.dtype(want).name, a.dtype.name))
    if np.issubdtype(want, np.floating):
        if np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_:
            return a.astype(want)
    raise TypeError("%s %r: expected %s, got %s" % (what, name, np.dtype(want).name, a.dtype.name))


def _examples(data: Any) -> int:
    if _is_dataset(data):
        try:
            return len(data)
        except TypeError:
            raise TypeError("data: a Dataset must have a length (len(dataset)); an IterableDataset cannot be "
                            "written ahead of the run") from None
    ns = {k: _numpy_shape(v)[0] if _numpy_shape(v) else None for k, v in data.items()}
    return next(iter(ns.values()), 0) or 0


def _numpy_shape(v: Any):
    s = getattr(v, "shape", None)
    return tuple(s) if s is not None else np.shape(v)


def _item(data: Any, i: int, what: str) -> Mapping[str, Any]:
    it = data[i]
    if not isinstance(it, Mapping):
        raise TypeError("%s: a Dataset must yield dicts (array name -> tensor or array of one example), "
                        "item %d is a %s" % (what, i, type(it).__name__))
    return it


def first_examples(data: Any, names, k: int = 2) -> Dict[str, np.ndarray]:
    """The first k examples of the named arrays (for tracing an export)."""
    if _is_dataset(data):
        n = min(k, len(data))
        items = [_item(data, i, "data") for i in range(n)]
        return {nm: np.stack([_numpy(it[nm]) for it in items]) for nm in names}
    return {nm: _numpy(data[nm][:k]) for nm in names}


def write_data(folder: str, data: Any, dtypes: Mapping[str, Optional[np.dtype]], what: str = "data") -> Dict[str, str]:
    """Writes the arrays named in ``dtypes`` (name -> dtype, None: keep) from
    ``data`` (a mapping name -> array/tensor, first axis = examples, or a
    Dataset of dicts) to FOLDER/NNN_NAME.npy; returns name -> path.

    Raises KeyError naming a missing array, ValueError when the arrays
    disagree on the number of examples or a Dataset item's shape changes,
    TypeError on a conversion that would change values (labels that are not
    integers)."""
    os.makedirs(folder, exist_ok=True)
    names = list(dtypes)
    if _is_dataset(data):
        return _write_dataset(folder, data, dtypes, what)
    if not isinstance(data, Mapping):
        raise TypeError("%s: expected a dict of arrays or tensors, or a torch Dataset of dicts, got %s"
                        % (what, type(data).__name__))
    missing = [n for n in names if n not in data]
    if missing:
        raise KeyError("%s: no array %s (have: %s)" % (what, ", ".join(repr(m) for m in missing),
                                                        ", ".join(sorted(map(str, data))) or "none"))
    counts = {}
    for n in names:
        s = _numpy_shape(data[n])
        if len(s) == 0:
            raise ValueError("%s %r: a scalar; expected an array whose first axis holds the examples" % (what, n))
        counts[n] = s[0]
    if len(set(counts.values())) > 1:
        raise ValueError("%s: the arrays disagree on the number of examples (first axis): %s"
                         % (what, ", ".join("%s %d" % kv for kv in counts.items())))
    paths = {}
    for i, n in enumerate(names):
        v = data[n]
        path = _file(folder, i, n)
        shape = _numpy_shape(v)
        a0 = _numpy(v[:1]) if shape[0] else _numpy(v)
        dt = np.dtype(dtypes[n]) if dtypes[n] is not None else a0.dtype
        _convert(n, a0, dt, what)
        out = np.lib.format.open_memmap(path, mode="w+", dtype=dt, shape=tuple(shape))
        rows = max(1, _CHUNK_BYTES // max(1, dt.itemsize * int(np.prod(shape[1:], dtype=np.int64))))
        for i in range(0, shape[0], rows):
            out[i:i + rows] = _convert(n, _numpy(v[i:i + rows]), dt, what)
        out.flush()
        del out
        paths[n] = path
    return paths


def _write_dataset(folder: str, data: Any, dtypes: Mapping[str, Optional[np.dtype]], what: str) -> Dict[str, str]:
    n = _examples(data)
    if n == 0:
        raise ValueError("%s: the Dataset is empty" % what)
    first = _item(data, 0, what)
    missing = [k for k in dtypes if k not in first]
    if missing:
        raise KeyError("%s: the Dataset's items have no array %s (have: %s)"
                       % (what, ", ".join(repr(m) for m in missing), ", ".join(sorted(map(str, first)))))
    outs, shapes, paths = {}, {}, {}
    for j, (k, want) in enumerate(dtypes.items()):
        a = _numpy(first[k])
        dt = np.dtype(want) if want is not None else a.dtype
        _convert(k, a, dt, what)
        paths[k] = _file(folder, j, k)
        shapes[k] = a.shape
        outs[k] = np.lib.format.open_memmap(paths[k], mode="w+", dtype=dt, shape=(n,) + a.shape)
    for i in range(n):
        it = first if i == 0 else _item(data, i, what)
        for k, out in outs.items():
            a = _numpy(it[k])
            if a.shape != shapes[k]:
                raise ValueError("%s: item %d's %r has shape %s, item 0's %s" % (what, i, k, a.shape, shapes[k]))
            out[i] = _convert(k, a, out.dtype, what)
    for out in outs.values():
        out.flush()
    outs.clear()
    return paths
