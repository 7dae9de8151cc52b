#!/usr/bin/python3
"""Generate forward/gradient fixtures for backend/internal/kernels from independent oracles.

Run with the system interpreter (PyTorch 1.13, onnx 1.12):

    /usr/bin/python3 backend/internal/kernels/testdata/make_fixtures.py

Writes fixtures.npz (float64 arrays) and cases.json (the case table) beside
this script. For every case: the inputs, the expected output, a fixed random
weight R and, where PyTorch provides them, the autograd gradients of
sum(out * R) with respect to the differentiable inputs.

Oracles: PyTorch for Conv, MaxPool (indices converted from PyTorch's
per-plane numbering to ONNX's flat N*C*H*W numbering), MaxUnpool,
AveragePool, global pools, BatchNormalization, Pad and the Resize modes
PyTorch has; the ONNX 1.12 reference implementation (interpolate_nd) for the
Resize modes PyTorch lacks (gradients there are checked by finite
differences in Go only).
"""
import json
import os

import numpy as np
import torch
import torch.nn.functional as F
from onnx.backend.test.case.node.resize import interpolate_nd, linear_coeffs, nearest_coeffs

torch.manual_seed(0)
rng = np.random.RandomState(0)
arrays = {}
cases = []


def rand(*shape):
    return rng.uniform(-1, 1, size=shape)


def add(name, op, attrs, inputs, out, diff=None, extra=None):
    """Record a case. inputs: list of numpy arrays (None for absent);
    diff: indices of inputs to differentiate with PyTorch, computed by
    calling out(*tensors)."""
    ts = [None if a is None else torch.tensor(a, dtype=torch.float64, requires_grad=(diff is not None and i in diff))
          for i, a in enumerate(inputs)]
    y = out(*ts)
    case = {"name": name, "op": op, "attrs": attrs, "inputs": [], "grads": []}
    for i, a in enumerate(inputs):
        key = "" if a is None else f"{name}/in{i}"
        if a is not None:
            arrays[key] = np.asarray(a, dtype=np.float64)
        case["inputs"].append(key)
    if isinstance(y, tuple):
        y, extra_out = y
        arrays[f"{name}/out1"] = extra_out
        case["output1"] = f"{name}/out1"
    arrays[f"{name}/out"] = y.detach().numpy().astype(np.float64)
    case["output"] = f"{name}/out"
    if diff is not None:
        r = rand(*y.shape)
        arrays[f"{name}/r"] = r
        case["r"] = f"{name}/r"
        (y * torch.tensor(r)).sum().backward()
        for i in range(len(inputs)):
            if i in diff:
                arrays[f"{name}/grad{i}"] = ts[i].grad.numpy()
                case["grads"].append(f"{name}/grad{i}")
            else:
                case["grads"].append("")
    if extra:
        case.update(extra)
    cases.append(case)


# ---- Conv: PyTorch pads symmetrically, so apply ONNX's [t, l, b, r] first.
def conv(strides, pads, dil, group):
    def f(x, w, b=None):
        x = F.pad(x, (pads[1], pads[3], pads[0], pads[2]))
        return F.conv2d(x, w, b, stride=strides, dilation=dil, groups=group)
    return f


for name, xs, ws, bias, st, pads, dil, grp in [
    ("conv_plain", (2, 3, 6, 6), (4, 3, 3, 3), True, [1, 1], [0, 0, 0, 0], [1, 1], 1),
    ("conv_stride_asym", (2, 2, 7, 6), (3, 2, 3, 2), True, [2, 1], [1, 0, 2, 1], [1, 1], 1),
    ("conv_dilation", (1, 2, 8, 7), (2, 2, 2, 3), False, [1, 2], [1, 1, 1, 1], [2, 2], 1),
    ("conv_groups", (2, 4, 6, 5), (6, 2, 3, 3), True, [2, 2], [1, 1, 1, 1], [1, 1], 2),
    ("conv_depthwise", (2, 3, 5, 5), (6, 1, 3, 3), True, [1, 1], [1, 1, 1, 1], [1, 1], 3),
    ("conv_pointwise", (2, 5, 4, 3), (4, 5, 1, 1), True, [1, 1], [0, 0, 0, 0], [1, 1], 1),
    ("conv_lenet", (4, 1, 28, 28), (10, 1, 9, 9), True, [1, 1], [0, 0, 0, 0], [1, 1], 1),
]:
    ins = [rand(*xs), rand(*ws), rand(ws[0]) if bias else None]
    add(name, "Conv", {"strides": st, "pads": pads, "dilations": dil, "group": grp}, ins,
        conv(st, pads, dil, grp), diff=[0, 1, 2] if bias else [0, 1])


# ---- MaxPool with ONNX (flat N*C*H*W) indices, and MaxUnpool.
def maxpool(k, s, p, d, ceil):
    def f(x):
        y, i = F.max_pool2d(x, k, s, (p[0], p[1]), d, ceil_mode=ceil, return_indices=True)
        n, c, h, w = x.shape
        base = (torch.arange(n * c).reshape(n, c, 1, 1) * h * w)
        return y, (i + base).numpy().astype(np.float64)
    return f


for name, xs, k, s, p, d, ceil in [
    ("maxpool_k2s2", (2, 2, 6, 6), [2, 2], [2, 2], [0, 0], [1, 1], False),
    ("maxpool_k3s2_pad", (1, 3, 7, 6), [3, 3], [2, 2], [1, 1], [1, 1], False),
    ("maxpool_ceil", (2, 2, 7, 5), [3, 2], [2, 2], [1, 0], [1, 1], True),
    ("maxpool_dilation", (1, 2, 8, 8), [2, 3], [1, 2], [0, 1], [2, 2], False),
]:
    add(name, "MaxPool", {"kernel_shape": k, "strides": s, "pads": [p[0], p[1], p[0], p[1]], "dilations": d,
                          "ceil_mode": int(ceil)}, [rand(*xs)], maxpool(k, s, p, d, ceil), diff=[0])

for name, xs, k, s, p, osz in [
    ("maxunpool_k2s2", (2, 2, 6, 6), [2, 2], [2, 2], [0, 0], None),
    ("maxunpool_outshape", (1, 2, 7, 5), [2, 2], [2, 2], [0, 0], [7, 5]),
]:
    x = torch.tensor(rand(*xs))
    y, i = F.max_pool2d(x, k, s, p, return_indices=True)
    n, c, h, w = x.shape
    flat = (i + torch.arange(n * c).reshape(n, c, 1, 1) * h * w).numpy().astype(np.float64)
    vals = rand(*y.shape)

    def f(v, idx, i=i, k=k, s=s, p=p, osz=osz):
        return F.max_unpool2d(v, i, k, s, p, output_size=osz)
    attrs = {"kernel_shape": k, "strides": s, "pads": [p[0], p[1], p[0], p[1]]}
    if osz is not None:
        attrs["output_shape"] = [n, c] + osz
    add(name, "MaxUnpool", attrs, [vals, flat], f, diff=[0])

# ---- AveragePool.
for name, xs, k, s, p, ceil, inc in [
    ("avgpool_k2s2", (2, 2, 6, 6), [2, 2], [2, 2], [0, 0], False, False),
    ("avgpool_pad_exclude", (1, 3, 7, 6), [3, 3], [2, 2], [1, 1], False, False),
    ("avgpool_pad_include", (1, 3, 7, 6), [3, 3], [2, 2], [1, 1], False, True),
    ("avgpool_ceil_include", (2, 2, 6, 7), [3, 2], [2, 2], [1, 1], True, True),
    ("avgpool_ceil_exclude", (2, 2, 6, 7), [3, 3], [2, 2], [1, 0], True, False),
]:
    add(name, "AveragePool", {"kernel_shape": k, "strides": s, "pads": [p[0], p[1], p[0], p[1]],
                              "ceil_mode": int(ceil), "count_include_pad": int(inc)}, [rand(*xs)],
        lambda x, k=k, s=s, p=p, ceil=ceil, inc=inc: F.avg_pool2d(x, k, s, p, ceil, inc), diff=[0])

add("globalavg", "GlobalAveragePool", {}, [rand(2, 3, 4, 5)], lambda x: F.adaptive_avg_pool2d(x, 1), diff=[0])
add("globalmax", "GlobalMaxPool", {}, [rand(2, 3, 4, 5)], lambda x: F.adaptive_max_pool2d(x, 1), diff=[0])

# ---- BatchNormalization.
for name, xs, train in [("bn_eval", (3, 4, 3, 2), False), ("bn_train", (3, 4, 3, 2), True),
                        ("bn_eval_nc", (5, 3), False), ("bn_train_nc", (5, 3), True)]:
    c = xs[1]
    ins = [rand(*xs), rand(c), rand(c), rand(c), 0.5 + rng.uniform(0, 1, size=c)]
    add(name, "BatchNormalization", {"epsilon": 1e-3, "training_mode": int(train)}, ins,
        lambda x, s, b, m, v, train=train: F.batch_norm(x, m.detach().clone(), v.detach().clone(), s, b, train, 0.1, 1e-3),
        diff=[0, 1, 2])

# ---- Pad: ONNX pads [x1_begin, x2_begin, ..., x1_end, x2_end].
for name, xs, mode, pads, val in [
    ("pad_constant", (1, 2, 3, 4), "constant", [0, 0, 1, 2, 0, 0, 2, 1], 0.25),
    ("pad_reflect", (2, 2, 4, 5), "reflect", [0, 0, 2, 1, 0, 0, 3, 4], 0.0),
    ("pad_edge", (1, 2, 3, 3), "edge", [0, 0, 2, 0, 0, 0, 1, 3], 0.0),
]:
    tmode = {"edge": "replicate"}.get(mode, mode)
    add(name, "Pad", {"mode": mode, "pads": pads, "value": val}, [rand(*xs)],
        lambda x, pads=pads, tmode=tmode, val=val: F.pad(x, (pads[3], pads[7], pads[2], pads[6]), tmode, val)
        if tmode == "constant" else F.pad(x, (pads[3], pads[7], pads[2], pads[6]), tmode), diff=[0])

# ---- Resize / Upsample through PyTorch.
for name, xs, attrs, f in [
    ("resize_nearest_x2", (1, 2, 3, 4), {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                         "nearest_mode": "floor", "scales": [1, 1, 2, 2]},
     lambda x: F.interpolate(x, scale_factor=2, mode="nearest")),
    ("resize_nearest_sizes", (1, 2, 5, 4), {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                            "nearest_mode": "floor", "sizes": [1, 2, 3, 7]},
     lambda x: F.interpolate(x, size=(3, 7), mode="nearest")),
    ("resize_nearest_exact", (1, 2, 5, 4), {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                                            "nearest_mode": "round_prefer_ceil", "sizes": [1, 2, 3, 7]},
     lambda x: F.interpolate(x, size=(3, 7), mode="nearest-exact")),
    ("resize_bilinear", (2, 2, 3, 4), {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel",
                                       "scales": [1, 1, 2, 2]},
     lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)),
    ("resize_bilinear_down", (1, 2, 7, 6), {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel",
                                            "sizes": [1, 2, 3, 2]},
     lambda x: F.interpolate(x, size=(3, 2), mode="bilinear", align_corners=False)),
    ("resize_bilinear_align", (1, 2, 3, 4), {"mode": "linear", "coordinate_transformation_mode": "align_corners",
                                             "sizes": [1, 2, 5, 9]},
     lambda x: F.interpolate(x, size=(5, 9), mode="bilinear", align_corners=True)),
]:
    add(name, "Resize", attrs, [rand(*xs)], f, diff=[0])

# ---- Resize modes PyTorch lacks: the ONNX reference implementation.
for name, xs, attrs in [
    ("onnxref_nearest_halfpixel_rpf", (1, 1, 4, 5), {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                                                     "nearest_mode": "round_prefer_floor", "scales": [1, 1, 1.5, 0.6]}),
    ("onnxref_nearest_asym_ceil", (1, 1, 3, 4), {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                               "nearest_mode": "ceil", "sizes": [1, 1, 5, 6]}),
    ("onnxref_nearest_align_rpc", (1, 1, 3, 3), {"mode": "nearest", "coordinate_transformation_mode": "align_corners",
                                                 "nearest_mode": "round_prefer_ceil", "sizes": [1, 1, 5, 4]}),
    # PyTorch maps a length-1 output to 2.5 here; ONNX's pytorch_half_pixel says 0.
    ("onnxref_linear_pytorch_len1", (1, 1, 7, 6), {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel",
                                                   "sizes": [1, 1, 3, 1]}),
    ("onnxref_linear_asym", (1, 1, 3, 3), {"mode": "linear", "coordinate_transformation_mode": "asymmetric",
                                           "scales": [1, 1, 2, 1.5]}),
    ("onnxref_linear_halfpixel_down", (1, 1, 6, 5), {"mode": "linear", "coordinate_transformation_mode": "half_pixel",
                                                     "scales": [1, 1, 0.5, 0.6]}),
]:
    x = rand(*xs)
    if attrs["mode"] == "nearest":
        coeffs = lambda r, m=attrs["nearest_mode"]: nearest_coeffs(r, mode=m)
    else:
        coeffs = linear_coeffs
    kw = {"coordinate_transformation_mode": attrs["coordinate_transformation_mode"]}
    if "scales" in attrs:
        y = interpolate_nd(x, coeffs, scale_factors=np.array(attrs["scales"], dtype=np.float64), **kw)
    else:
        y = interpolate_nd(x, coeffs, output_size=attrs["sizes"], **kw)
    add(name, "Resize", attrs, [x], lambda t, y=y: torch.tensor(y))

here = os.path.dirname(os.path.abspath(__file__))
np.savez_compressed(os.path.join(here, "fixtures.npz"), **arrays)
with open(os.path.join(here, "cases.json"), "w") as fh:
    json.dump(cases, fh, indent=1)
print(len(cases), "cases,", sum(a.size for a in arrays.values()), "values")
