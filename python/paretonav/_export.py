"""Exports a torch.nn.Module to ONNX the way paretonav trains it."""

from __future__ import annotations

import contextlib
import inspect as _inspect
import io
import os
import re
import warnings
from typing import TYPE_CHECKING, Any, Dict, Iterator, Optional, Sequence, Tuple

from ._types import PathArg

if TYPE_CHECKING:
    import torch

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


def _version(torch: Any) -> Tuple[int, int]:
    """torch's (major, minor) version."""
    m = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _can_dynamo(torch: Any, opset: Optional[int]) -> bool:
    """Whether torch.onnx.export(dynamo=True, optimize=False) is there to fall
    back on: torch 2.5+ (its initializers carry their state_dict names from
    2.5 on), at ``opset`` None or 18+ (it works at 18+ and converts the file
    down, which fails for many ops, below that)."""
    params = _inspect.signature(torch.onnx.export).parameters
    return "dynamo" in params and "optimize" in params and _version(torch) >= (2, 5) and (opset is None or opset >= 18)


@contextlib.contextmanager
def _no_mha_fast_path(torch: Any) -> Iterator[None]:
    """nn.MultiheadAttention's fast path (aten::_native_multi_head_attention,
    which no ONNX exporter knows) switched off, then restored. torch 2.x has
    a switch for it; torch 1.13 takes it only when grad is disabled or nothing
    requires grad, so the export runs with grad enabled."""
    mha = getattr(getattr(torch, "backends", None), "mha", None)
    get, set_ = getattr(mha, "get_fastpath_enabled", None), getattr(mha, "set_fastpath_enabled", None)
    if get is None or set_ is None:
        yield
        return
    was = get()
    set_(False)
    try:
        yield
    finally:
        set_(was)


def export(module: "torch.nn.Module", example_inputs: Sequence[Any], path: PathArg, inputs: Sequence[str],
           outputs: Sequence[str], opset: Optional[int] = None) -> str:
    """Writes ``module`` to ``path`` as paretonav needs it and returns ``path``.

    First with the TorchScript exporter (see :func:`_export_torchscript`)
    at ``opset``, by default 13 on torch 1.x and 17 on torch 2.x (opset 14+
    is what ``F.scaled_dot_product_attention`` needs). Where that fails on
    torch 2.5+ (an op it cannot write; the TorchScript exporter is
    deprecated there), with the dynamo exporter,
    ``torch.onnx.export(dynamo=True, optimize=False)`` at ``opset`` (18+) or
    its default: initializers under their state_dict names, BatchNormalization
    kept, nothing folded. The TorchScript exporter comes first because it
    keeps weights the module ties as one initializer under their first
    name. Either way nn.MultiheadAttention's fast path is switched off for
    the export (no exporter knows its fused op), the first axis of every
    input and output is dynamic (``N``), and the module's training flag is
    restored.
    """
    import torch

    path = os.fspath(path)
    ts_opset = opset if opset is not None else (17 if _version(torch) >= (2, 0) else 13)
    try:
        return _export_torchscript(torch, module, example_inputs, path, inputs, outputs, ts_opset)
    except Exception as e:  # the exporters' failures have many types
        if not _can_dynamo(torch, opset):
            raise
        first = e
    try:
        return _export_dynamo(torch, module, example_inputs, path, inputs, outputs, opset)
    except Exception as e:
        raise RuntimeError("export of %s failed with both of torch.onnx.export's exporters: dynamo=False "
                           "(TorchScript, opset %d): %s: %s; dynamo=True, optimize=False: %s: %s" % (
                               type(module).__name__, ts_opset, type(first).__name__, _first_line(first),
                               type(e).__name__, _first_line(e))) from e


def _first_line(e: BaseException) -> str:
    lines = [l for l in str(e).splitlines() if l.strip()]
    return lines[0] if lines else ""


def _export_dynamo(torch: Any, module: "torch.nn.Module", example_inputs: Sequence[Any], path: str,
                   inputs: Sequence[str], outputs: Sequence[str], opset: Optional[int]) -> str:
    """torch.onnx.export(dynamo=True, optimize=False) on the eval-mode module."""
    inputs, outputs = list(inputs), list(outputs)
    dyn = {n: {0: "N"} for n in inputs + outputs}
    was_training = module.training
    module.eval()
    tmp = path + ".part"
    extra = {} if opset is None else {"opset_version": opset}
    try:
        with torch.no_grad(), _no_mha_fast_path(torch), warnings.catch_warnings(), \
                contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(module, tuple(example_inputs), tmp, input_names=inputs, output_names=outputs,
                              dynamic_axes=dyn, dynamo=True, optimize=False, external_data=False,
                              verbose=False, report=False, **extra)
        os.replace(tmp, path)
    finally:
        module.train(was_training)
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _export_torchscript(torch: Any, module: "torch.nn.Module", example_inputs: Sequence[Any], path: str,
                        inputs: Sequence[str], outputs: Sequence[str], opset: int) -> str:
    """The TorchScript exporter: the module in eval mode with
    ``TrainingMode.PRESERVE`` (BatchNormalization kept as one op reading its
    running statistics, not folded into the Conv before it), without
    constant folding. Initializers keep their state_dict names: PyTorch's
    merging of equal-valued initializers (zero biases, a fresh BatchNorm's
    ones) is turned off for this export, so parameters that were
    independent stay independent. ``aten::max_unpool2d`` is written as ONNX
    MaxUnpool."""
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
    # torch 1.13's nn.MultiheadAttention takes its fast path whenever grad is
    # disabled, and has no switch for it: grad stays enabled for a module
    # holding one (the tracer records no gradients anyway). Elsewhere grad
    # is off, so that tensors a module caches (computed with grad) can
    # become constants of the trace.
    mha = getattr(getattr(torch, "backends", None), "mha", None)
    keep_grad = not hasattr(mha, "set_fastpath_enabled") and any(
        isinstance(m, torch.nn.MultiheadAttention) for m in module.modules())
    try:
        with torch.set_grad_enabled(keep_grad), _no_mha_fast_path(torch), warnings.catch_warnings():
            # torch 1.13's exporter has no shape inference for prim::Constant
            # (F.normalize's, the MaxUnpool symbolic's) and says so per node;
            # the file is complete, and paretonav infers every shape itself.
            warnings.filterwarnings("ignore", message="The shape inference of prim::Constant type is missing")
            warnings.filterwarnings("ignore", category=DeprecationWarning)
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
