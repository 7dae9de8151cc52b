#!/usr/bin/python3
"""Checks ONNX files with the official tools (used by models_test.go).

usage: check_onnx.py FILE.onnx OUTPUT=d0,d1,... [OUTPUT=...]

Runs onnx.checker.check_model(full_check=True) (which includes strict shape
inference) and onnx.shape_inference.infer_shapes, then compares each named
graph output's inferred shape with the expected one ("N" for the batch
dimension). Prints "ok" on success; any problem raises.
"""
import sys

import onnx
from onnx import shape_inference

path, expected = sys.argv[1], sys.argv[2:]
model = onnx.load(path)
onnx.checker.check_model(model, full_check=True)
inferred = shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
shapes = {}
for vi in list(inferred.graph.output) + list(inferred.graph.value_info):
    dims = [d.dim_param if d.dim_param else str(d.dim_value) for d in vi.type.tensor_type.shape.dim]
    shapes[vi.name] = ",".join(dims)
for item in expected:
    name, want = item.split("=")
    got = shapes.get(name)
    assert got == want, f"{name}: inferred {got}, want {want}"
print("ok")
