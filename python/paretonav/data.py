"""Writes the user's arrays to .npy files the binary reads (``--data NAME=FILE.npy``).

Arrays are copied in chunks into memory-mapped files; a Dataset is written one
example at a time and a DataLoader one batch at a time, appended to each
array's file, so nothing is gathered in memory first.
"""

from __future__ import annotations

import os
import re
import struct
from typing import Any, Dict, Generator, List, Mapping, Optional, Sequence, Tuple, cast

import numpy as np

from ._types import Array, Data

__all__ = ["write_data", "first_examples"]

_CHUNK_BYTES = 64 << 20


def _file(folder: str, i: int, name: str) -> str:
    """FOLDER/NNN_NAME.npy, NAME reduced to characters safe in any file name."""
    return os.path.join(folder, "%03d_%s.npy" % (i, re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:100]))


def _is_loader(data: Any) -> bool:
    """A torch DataLoader that batches: its items hold batch_size examples each."""
    for c in type(data).__mro__:
        if c.__name__ == "DataLoader" and c.__module__.startswith("torch.utils.data"):
            return getattr(data, "batch_sampler", None) is not None
    return False


def _is_iterable(data: Any) -> bool:
    """Iterated for its items rather than indexed: a DataLoader, an
    IterableDataset, any re-iterable object without a length."""
    if isinstance(data, Mapping) or not hasattr(data, "__iter__"):
        return False
    return _is_loader(data) or not (hasattr(data, "__getitem__") and hasattr(data, "__len__")) or \
        any(c.__name__ in ("DataLoader", "IterableDataset") for c in type(data).__mro__)


def _is_dataset(data: Any) -> bool:
    return not isinstance(data, Mapping) and (hasattr(data, "__getitem__") or _is_iterable(data))


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


def _numpy_shape(v: Array) -> Tuple[int, ...]:
    s = getattr(v, "shape", None)
    return tuple(s) if s is not None else np.shape(v)


def _item(it: Any, i: int, what: str, names: Optional[Sequence[str]], unit: str = "item") -> Mapping[str, Any]:
    """A Dataset's item (or a DataLoader's batch) as a dict: a dict as it
    is, a tuple or list by ``names``."""
    if isinstance(it, Mapping):
        return it
    if isinstance(it, (tuple, list)):
        if not names:
            raise TypeError("%s: %s %d is a %s of %d; pass names=[...] naming its elements in order "
                            "(e.g. names=['x', 'seg'])" % (what, unit, i, type(it).__name__, len(it)))
        if len(names) != len(it):
            raise ValueError("%s: %s %d is a %s of %d, but %d names were given (%s)" % (
                what, unit, i, type(it).__name__, len(it), len(names), ", ".join(map(repr, names))))
        return dict(zip(names, it))
    raise TypeError("%s: a Dataset or DataLoader must yield dicts (array name -> tensor or array) or tuples "
                    "(with names=), %s %d is a %s" % (what, unit, i, type(it).__name__))


def _items(data: Any, what: str,
           names: Optional[Sequence[str]]) -> Generator[Tuple[Mapping[str, Any], bool], None, None]:
    """(item as a dict, whether it is a batch) for each item of a Dataset
    or batch of a DataLoader, read one at a time."""
    if _is_iterable(data):
        if iter(data) is data:
            raise TypeError("%s: an iterator can be read only once; pass a Dataset, a DataLoader or a re-iterable "
                            "object" % what)
        batched = _is_loader(data)
        for i, it in enumerate(data):
            yield _item(it, i, what, names, "batch" if batched else "item"), batched
        return
    try:
        n = len(data)
    except TypeError:
        raise TypeError("%s: a Dataset must have a length (len(dataset)) or be iterable" % what) from None
    for i in range(n):
        yield _item(data[i], i, what, names), False


_NYUV2 = ("image", "label", "depth", "normal")


def _folder_example(spec: str, folder: str, name: str, i: int, nyuv2: bool) -> np.ndarray:
    """Example i of array name of a folder source, as the binary reads it."""
    path = os.path.join(folder, name, "%d.npy" % i)
    if not os.path.isfile(path):
        raise FileNotFoundError("data %r: %s: no such file" % (spec, path))
    a = np.load(path)
    if nyuv2 and name == "label":
        return a.reshape(a.shape[:2]).astype(np.int64)
    if nyuv2 and name == "depth" and a.ndim == 2:
        a = a[..., None]
    if a.ndim == 3:
        a = np.moveaxis(a, -1, 0)
    if nyuv2 or a.dtype == np.float64:
        a = a.astype(np.float32)
    return a


def _spec_examples(spec: str, inputs: Sequence[str], k: int, maps: Mapping[str, str]) -> Dict[str, np.ndarray]:
    """The first k examples of the arrays feeding inputs (through maps:
    input -> array) of a data source spec the binary reads (nyuv2:DIR,
    folder:DIR, FILE.npz, NAME=FILE.npy; comma-separated), by input."""
    names = [maps.get(nm, nm) for nm in inputs]
    out: Dict[str, np.ndarray] = {}
    for part in (p.strip() for p in spec.split(",")):
        for prefix in ("nyuv2:", "folder:"):
            if part.startswith(prefix):
                folder = part[len(prefix):].strip()
                have = _NYUV2 if prefix == "nyuv2:" else sorted(
                    e for e in os.listdir(folder) if os.path.isdir(os.path.join(folder, e)) and not e.startswith("."))
                for nm in names:
                    if nm in have:
                        out[nm] = np.stack([_folder_example(spec, folder, nm, i, prefix == "nyuv2:") for i in range(k)])
                break
        else:
            name, eq, path = part.partition("=")
            if eq:
                if name.strip() in names:
                    out[name.strip()] = np.load(path.strip(), mmap_mode="r")[:k]
            else:
                with np.load(part) as z:
                    out.update({nm: z[nm][:k] for nm in names if nm in z.files})
    missing = [nm for nm in names if nm not in out]
    if missing:
        raise KeyError("data %r: no array %s for the export (read: %s)"
                       % (spec, ", ".join(map(repr, missing)), ", ".join(sorted(out)) or "none of them"))
    return {inp: out[nm] for inp, nm in zip(inputs, names)}


def first_examples(data: Data, names: Sequence[str], k: int = 2,
                   data_names: Optional[Sequence[str]] = None,
                   maps: Optional[Mapping[str, str]] = None) -> Dict[str, np.ndarray]:
    """The first k examples of the named arrays (for tracing an export);
    for a data source spec (a string) or arrays by name without one of
    them, of the arrays maps (input -> array) names for them."""
    if isinstance(data, str):
        return _spec_examples(data, names, k, maps or {})
    if not _is_dataset(data):
        arrays = cast(Mapping[str, Array], data)
        m = maps or {}
        return {nm: _numpy(arrays[nm if nm in arrays else m.get(nm, nm)][:k]) for nm in names}
    got: List[Mapping[str, np.ndarray]] = []
    items = _items(data, "data", data_names)
    try:
        for it, batched in items:
            missing = [nm for nm in names if nm not in it]
            if missing:
                raise KeyError("data: the Dataset's items have no array %s (have: %s)"
                               % (", ".join(map(repr, missing)), ", ".join(sorted(map(str, it)))))
            got.append({nm: _numpy(it[nm])[:k] if batched else _numpy(it[nm])[None] for nm in names})
            if not names or sum(len(g[names[0]]) for g in got) >= k:
                break
    finally:
        items.close()
    if not got:
        raise ValueError("data: the Dataset is empty")
    return {nm: np.concatenate([g[nm] for g in got])[:k] for nm in names}


def write_data(folder: str, data: Data, dtypes: Mapping[str, Optional[np.dtype]], what: str = "data",
               names: Optional[Sequence[str]] = None) -> Dict[str, str]:
    """Writes the arrays named in ``dtypes`` (name -> dtype, None: keep) from
    ``data`` (a mapping name -> array/tensor, first axis = examples; a
    Dataset or iterable of dicts, or of tuples named by ``names``; a
    DataLoader of batches of either) to FOLDER/NNN_NAME.npy; returns name -> path.

    Raises KeyError naming a missing array, ValueError when the arrays
    disagree on the number of examples or a Dataset item's shape changes,
    TypeError on a conversion that would change values (labels that are not
    integers)."""
    os.makedirs(folder, exist_ok=True)
    if _is_dataset(data):
        return _write_dataset(folder, data, dtypes, what, names)
    names = list(dtypes)
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


class _Appender:
    """A .npy file written as examples come: a header sized for any count,
    the rows appended, the count set in the header at the end."""

    def __init__(self, path: str, dtype: np.dtype, shape: Tuple[int, ...]) -> None:
        self.path, self.dtype, self.shape, self.n = path, dtype, tuple(shape), 0
        self.f = open(path, "wb", buffering=1 << 20)
        self.header_len = len(self._header(10 ** 18))
        self.f.write(self._header(0))

    def _header(self, n: int) -> bytes:
        d = "{'descr': %r, 'fortran_order': False, 'shape': %r, }" % (
            np.lib.format.dtype_to_descr(self.dtype), (n,) + self.shape)
        size = getattr(self, "header_len", 0) or -(-(10 + len(d) + 1) // 64) * 64
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", size - 10) + (d.ljust(size - 11) + "\n").encode("latin1")

    def append(self, rows: np.ndarray) -> None:
        self.f.write(np.ascontiguousarray(rows, dtype=self.dtype).tobytes())
        self.n += len(rows)

    def close(self) -> None:
        self.f.seek(0)
        self.f.write(self._header(self.n))
        self.f.close()


def _write_dataset(folder: str, data: Data, dtypes: Mapping[str, Optional[np.dtype]], what: str,
                   names: Optional[Sequence[str]]) -> Dict[str, str]:
    outs: Dict[str, _Appender] = {}
    paths = {}
    first_unit = ""
    try:
        for i, (it, batched) in enumerate(_items(data, what, names)):
            unit = "batch" if batched else "item"
            if not outs:
                missing = [k for k in dtypes if k not in it]
                if missing:
                    raise KeyError("%s: the %s have no array %s (have: %s)" % (
                        what, "DataLoader's batches" if batched else "Dataset's items",
                        ", ".join(repr(m) for m in missing), ", ".join(sorted(map(str, it)))))
            for j, (k, want) in enumerate(dtypes.items()):
                a = _numpy(it[k])
                if batched and a.ndim == 0:
                    raise ValueError("%s: batch %d's %r is a scalar; expected one value per example" % (what, i, k))
                shape = a.shape[1:] if batched else a.shape
                if k not in outs:
                    dt = np.dtype(want) if want is not None else a.dtype
                    paths[k] = _file(folder, j, k)
                    outs[k] = _Appender(paths[k], dt, shape)
                    first_unit = "%s 0's" % unit + (" examples" if batched else "")
                elif shape != outs[k].shape:
                    raise ValueError("%s: %s %d's %r has shape %s%s, %s %s" % (
                        what, unit, i, k, a.shape, " (examples %s)" % (shape,) if batched else "", first_unit,
                        outs[k].shape))
                outs[k].append(_convert(k, a if batched else a[None], outs[k].dtype, what))
        if not outs:
            raise ValueError("%s: the Dataset is empty" % what)
        if batched and len({o.n for o in outs.values()}) > 1:
            raise ValueError("%s: the DataLoader's batches disagree on the number of examples: %s" % (
                what, ", ".join("%s %d" % (k, o.n) for k, o in outs.items())))
    finally:
        for o in outs.values():
            o.close()
    return paths
