"""Exports a torch.nn.Module to ONNX the way paretonav trains it."""

from __future__ import annotations

import inspect as _inspect
import os
import warnings
from typing import Any, Dict, Sequence

__all__ = ["export"]


def _const(g, value):
    import torch

    return g.op("Constant", value_t=torch.tensor(value, dtype=torch.int64))


def _max_unpool2d_symbolic(g, x, indices, output_size):
    """ONNX MaxUnpool for aten::max_unpool2d.

    PyTorch's indices count within each (n, c) plane of the unpooled output;
    ONNX's count over the whole tensor: add (n*C + c)*OH*OW. The output shape
    is passed as MaxUnpool's output_shape input (it decides the size; the
    kernel_shape attribute ONNX requires is then not used for it, and it also
    avoids a crash of onnx 1.12's MaxUnpool shape inference)."""
    from torch.onnx import symbolic_helper as sh

    size = sh._maybe_get_const(output_size, "is")
    if sh._is_value(size):  # a list built at run time: gather its elements
        parts = [g.op("Reshape", v, _const(g, [1])) for v in sh._unpack_list(output_size)]
        ohw = g.op("Concat", *parts, axis_i=0)
        kernel = [2, 2]
    else:
        size = [int(v) for v in size][-2:]
        ohw = _const(g, size)
        kernel = [2, 2]
        xs = sh._get_tensor_sizes(x) or []
        if len(xs) == 4 and xs[2] and xs[3]:
            kernel = [max(1, size[0] // xs[2]), max(1, size[1] // xs[3])]
    shape = g.op("Shape", x)
    nc = g.op("Slice", shape, _const(g, [0]), _const(g, [2]))
    planes = g.op("ReduceProd", nc, keepdims_i=0)
    plane_size = g.op("ReduceProd", ohw, keepdims_i=0)
    offsets = g.op("Mul", g.op("Range", _const(g, 0), planes, _const(g, 1)), plane_size)
    offsets = g.op("Reshape", offsets, g.op("Concat", nc, _const(g, [1, 1]), axis_i=0))
    out_shape = g.op("Concat", nc, ohw, axis_i=0)
    return g.op("MaxUnpool", x, g.op("Add", indices, offsets), out_shape, kernel_shape_i=kernel, strides_i=kernel)


_registered = False


def _register_symbolics() -> None:
    """Registers the symbolics PyTorch's TorchScript exporter lacks (once)."""
    global _registered
    if _registered:
        return
    from torch.onnx import register_custom_op_symbolic

    register_custom_op_symbolic("aten::max_unpool2d", _max_unpool2d_symbolic, 11)
    _registered = True


def export(module: Any, example_inputs: Sequence[Any], path: str, inputs: Sequence[str], outputs: Sequence[str],
           opset: int = 13) -> str:
    """Writes ``module`` to ``path`` as paretonav needs it and returns ``path``.

    The module is exported in eval mode with ``TrainingMode.PRESERVE``
    (BatchNormalization kept as one op reading its running statistics, not
    folded into the Conv before it), without constant folding and with the
    first axis of every input and output dynamic (``N``). Initializers keep
    their state_dict names: PyTorch's merging of equal-valued initializers
    (zero biases, a fresh BatchNorm's ones) is turned off for this export, so
    parameters that were independent stay independent. ``aten::max_unpool2d``
    is written as ONNX MaxUnpool. The module's training flag is restored.
    """
    import torch

    _register_symbolics()
    inputs, outputs = list(inputs), list(outputs)
    dyn: Dict[str, Dict[int, str]] = {n: {0: "N"} for n in inputs + outputs}
    was_training = module.training
    module.eval()
    dedup = getattr(torch._C, "_jit_pass_onnx_deduplicate_initializers", None)
    if dedup is not None:
        torch._C._jit_pass_onnx_deduplicate_initializers = lambda graph, params, *a, **k: params
    tmp = path + ".part"
    extra = {}
    if "dynamo" in _inspect.signature(torch.onnx.export).parameters:
        extra["dynamo"] = False  # the TorchScript exporter: PRESERVE, the symbolic and the names above need it
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # torch 1.13's exporter has no shape inference for prim::Constant
            # (F.normalize's, the MaxUnpool symbolic's) and says so per node;
            # the file is complete, and paretonav infers every shape itself.
            warnings.filterwarnings("ignore", message="The shape inference of prim::Constant type is missing")
            torch.onnx.export(module, tuple(example_inputs), tmp, input_names=inputs, output_names=outputs,
                              dynamic_axes=dyn, opset_version=opset, training=torch.onnx.TrainingMode.PRESERVE,
                              do_constant_folding=False, keep_initializers_as_inputs=False, **extra)
        os.replace(tmp, path)
    finally:
        if dedup is not None:
            torch._C._jit_pass_onnx_deduplicate_initializers = dedup
        module.train(was_training)
        if os.path.exists(tmp):
            os.remove(tmp)
    return path
