#!/usr/bin/python3
"""Generates the importer's test fixtures. Run with Debian's python3 (onnx 1.12,
torch 1.13):  cd importer/testdata && /usr/bin/python3 gen.py

view_dyn13.onnx  PyTorch export of x.view(x.size(0), -1) then Linear, opset 13,
                 dynamic batch: Shape->Gather->Unsqueeze->Concat->Reshape chain.
view_dyn11.onnx  the same at opset 11 (Unsqueeze takes axes as an attribute).
dtypes.onnx      one initializer per element type, raw_data and typed fields,
                 each passed through Identity to an output; values in dtypes.json.
mlp_ext.onnx     a small float MLP whose weights live in mlp_ext.onnx.data
                 (external data; its int64 Reshape shape inline), with doc strings and metadata_props.
"""
import json
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, external_data_helper, helper, numpy_helper

torch.manual_seed(0)
np.random.seed(0)


class View(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(24, 3)

    def forward(self, x):
        return self.fc(x.view(x.size(0), -1))


for opset in (11, 13):
    torch.onnx.export(View(), torch.randn(2, 2, 3, 4), f"view_dyn{opset}.onnx",
                      input_names=["x"], output_names=["y"], opset_version=opset,
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})

# Every element type, as raw_data and as typed fields.
types = {
    "float": (TensorProto.FLOAT, np.float32, [1.5, -2.25, 3e-8, 65504.0]),
    "double": (TensorProto.DOUBLE, np.float64, [1.5, -2.25, 1e-300, 1e300]),
    "float16": (TensorProto.FLOAT16, np.float16, [1.5, -2.25, 6e-8, 65504.0]),
    "int8": (TensorProto.INT8, np.int8, [-128, -1, 0, 127]),
    "uint8": (TensorProto.UINT8, np.uint8, [0, 1, 200, 255]),
    "int16": (TensorProto.INT16, np.int16, [-32768, -1, 2, 32767]),
    "uint16": (TensorProto.UINT16, np.uint16, [0, 1, 40000, 65535]),
    "int32": (TensorProto.INT32, np.int32, [-2147483648, -1, 3, 2147483647]),
    "uint32": (TensorProto.UINT32, np.uint32, [0, 1, 3000000000, 4294967295]),
    "int64": (TensorProto.INT64, np.int64, [-9223372036854775808, -1, 4, 9223372036854775807]),
    "uint64": (TensorProto.UINT64, np.uint64, [0, 1, 5, 9223372036854775807]),
    "bool": (TensorProto.BOOL, np.bool_, [True, False, False, True]),
}
inits, nodes, outputs, expect = [], [], [], {}
for name, (dt, npt, vals) in types.items():
    arr = np.array(vals, dtype=npt).reshape(2, 2)
    for form in ("raw", "typed"):
        n = f"{name}_{form}"
        if form == "raw":
            t = numpy_helper.from_array(arr, n)
        else:
            t = helper.make_tensor(n, dt, [2, 2], arr.flatten().tolist())
        inits.append(t)
        nodes.append(helper.make_node("Identity", [n], [n + "_out"], name="id_" + n))
        outputs.append(helper.make_tensor_value_info(n + "_out", dt, [2, 2]))
    expect[name] = [float(v) if arr.dtype.kind == "f" else int(v) for v in arr.flatten()]
# bfloat16 (numpy has none): bits of 1.5, -2.25, 0.5, 256.
bf = [0x3FC0, 0xC010, 0x3F00, 0x4380]
# make_tensor converts float values to float16/bfloat16 bits in int32_data.
inits.append(helper.make_tensor("bfloat16_typed", TensorProto.BFLOAT16, [2, 2],
                                [1.5, -2.25, 0.5, 256.0]))
inits.append(helper.make_tensor("bfloat16_raw", TensorProto.BFLOAT16, [2, 2],
                                np.array(bf, np.uint16).tobytes(), raw=True))
expect["bfloat16"] = [1.5, -2.25, 0.5, 256.0]
graph = helper.make_graph(nodes, "dtypes", [], outputs, inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="gen.py")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, "dtypes.onnx")
with open("dtypes.json", "w") as f:
    json.dump(expect, f, indent=1, sort_keys=True)

# A small MLP with external data, doc strings and metadata.
w1 = np.random.randn(4, 8).astype(np.float32)
b1 = np.random.randn(8).astype(np.float32)
w2 = np.random.randn(8, 2).astype(np.float32)
shape = np.array([-1, 4], np.int64)
nodes = [
    helper.make_node("Reshape", ["x", "shape"], ["xr"], name="flat"),
    helper.make_node("MatMul", ["xr", "w1"], ["h0"], name="mm1", doc_string="first layer"),
    helper.make_node("Add", ["h0", "b1"], ["h1"], name="add1"),
    helper.make_node("Relu", ["h1"], ["h"], name="relu"),
    helper.make_node("MatMul", ["h", "w2"], ["y"], name="mm2"),
]
graph = helper.make_graph(
    nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])],
    [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
     numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(shape, "shape")],
    doc_string="a two-layer perceptron")
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="gen.py", doc_string="fixture for external data")
model.ir_version = 8
helper.set_model_props(model, {"author": "importer tests", "task": "none"})
onnx.checker.check_model(model)
if os.path.exists("mlp_ext.onnx.data"):  # onnx appends to an existing file
    os.remove("mlp_ext.onnx.data")
# Float weights external; the int64 shape stays inline (ONNX Runtime cannot
# read a Reshape's shape from external data during shape inference).
external_data_helper.convert_model_to_external_data(
    model, all_tensors_to_one_file=True, location="mlp_ext.onnx.data", size_threshold=0)
for t in model.graph.initializer:
    if t.data_type == TensorProto.INT64:
        t.data_location = TensorProto.DEFAULT
        del t.external_data[:]
onnx.save_model(model, "mlp_ext.onnx")
