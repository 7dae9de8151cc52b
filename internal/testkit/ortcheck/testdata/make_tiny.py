"""Builds tiny.onnx, the ortcheck test model, with onnx's helper.

Run with /usr/bin/python3 (onnx 1.12):  /usr/bin/python3 make_tiny.py

Graph (opset 13):
  y   = Relu(x @ W + b)      x: float32 [N,2] (N dynamic), W: [2,3], b: [3]
  d2  = d * d + 0.5          d: float64 [3]
  k1  = k + 10               k: int64 [2]
  amax = ArgMax(x @ W + b, axis=1, keepdims=0)  int64 [N]
"""
import os

import onnx
from onnx import TensorProto, helper

here = os.path.dirname(os.path.abspath(__file__))

W = helper.make_tensor("W", TensorProto.FLOAT, [2, 3], [1, -1, 0.5, 2, 0, -1])
b = helper.make_tensor("b", TensorProto.FLOAT, [3], [0.25, 0.5, -0.75])
half = helper.make_tensor("half", TensorProto.DOUBLE, [], [0.5])
ten = helper.make_tensor("ten", TensorProto.INT64, [], [10])

nodes = [
    helper.make_node("MatMul", ["x", "W"], ["xw"]),
    helper.make_node("Add", ["xw", "b"], ["z"]),
    helper.make_node("Relu", ["z"], ["y"]),
    helper.make_node("ArgMax", ["z"], ["amax"], axis=1, keepdims=0),
    helper.make_node("Mul", ["d", "d"], ["dd"]),
    helper.make_node("Add", ["dd", "half"], ["d2"]),
    helper.make_node("Add", ["k", "ten"], ["k1"]),
]
graph = helper.make_graph(
    nodes,
    "tiny",
    [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2]),
        helper.make_tensor_value_info("d", TensorProto.DOUBLE, [3]),
        helper.make_tensor_value_info("k", TensorProto.INT64, [2]),
    ],
    [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3]),
        helper.make_tensor_value_info("amax", TensorProto.INT64, ["N"]),
        helper.make_tensor_value_info("d2", TensorProto.DOUBLE, [3]),
        helper.make_tensor_value_info("k1", TensorProto.INT64, [2]),
    ],
    initializer=[W, b, half, ten],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="paretonav-ortcheck")
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "tiny.onnx"))
