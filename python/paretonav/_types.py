"""The types of the public functions' arguments.

torch and pandas are optional: their types are named for the type checker
only (``TYPE_CHECKING``), so importing paretonav imports neither.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterable, List, Mapping, Sequence, Union

import numpy as np

if TYPE_CHECKING:
    import pandas
    import torch
    import torch.utils.data

    from .tasks import Task

__all__ = ["PathArg", "Array", "Item", "Data", "Model", "TaskSpecs", "Strings", "Records", "JSON"]

#: A file or folder: a string or an ``os.PathLike`` (``pathlib.Path``).
PathArg = Union[str, "os.PathLike[str]"]

#: An array of examples (first axis) or of one example: numpy or a torch tensor.
Array = Union[np.ndarray, "torch.Tensor"]

#: One item of a Dataset or one batch of a DataLoader: arrays by name, or a
#: tuple of arrays named by ``names=`` in order.
Item = Union[Mapping[str, Array], Sequence[Array]]

#: What ``data=`` and ``val=`` take: arrays by name (first axis = examples),
#: a torch Dataset, DataLoader or IterableDataset of items, any
#: re-iterable object yielding items, or a string: a data source the binary
#: reads itself, passed through as ``--data`` (``"nyuv2:DIR"``,
#: ``"folder:DIR"``, ``"d.npz"``, ``"x=x.npy,y=y.npy"``).
Data = Union[str, Mapping[str, Array], "torch.utils.data.Dataset[Any]", Iterable[Item]]

#: A model: a torch module, or the path of an ONNX file.
Model = Union[str, "os.PathLike[str]", "torch.nn.Module"]

#: Tasks (or terms): one CLI spec ``NAME:LOSS:OUTPUT:TARGET`` or :class:`Task`,
#: or several.
TaskSpecs = Union[str, "Task", Iterable[Union[str, "Task"]]]

#: A flag that may be given several times: one value or a list of them.
Strings = Union[str, Sequence[str]]

#: A JSON object as the binary writes it.
JSON = Mapping[str, Any]

#: Step records: a pandas DataFrame when pandas is installed, else a list of
#: JSON objects.
Records = Union[List[JSON], "pandas.DataFrame"]
