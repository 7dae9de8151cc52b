#!/usr/bin/env python3
"""A parameter that torch.export stores as a constant, the way timm's LeViT
and EfficientFormerV2 lose their attention biases.

Writes model.onnx beside this script: a small two-head module whose forward,
in eval mode, reads a bias table through an index and caches the result
(timm's attention_bias_cache). One eval forward runs before the export, so
torch.export sees the cached tensor, a copy of the parameter `table`
computed from it, and stores it as the initializer lifted_tensor_0 marked
CONSTANT_TENSOR: `table` is not in the file and is never trained. Exported
with torch.onnx.export(dynamo=True, optimize=False), the export the docs
recommend. Made with torch 2.15.0, onnxscript 0.7.2, onnx 1.23.2 (the venv
of backend/testdata/torch2/make_torch2_fixtures.py); from the repo root:

    /tmp/venv-torch2/bin/python importer/testdata/cached_torch2/make.py
"""

import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


class Cached(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(12, 6)
        self.table = nn.Parameter(torch.randn(6, 3) * 0.1)
        self.register_buffer("idx", torch.tensor([0, 2, 1, 1, 0, 2]))
        self.cache = {}
        self.a = nn.Linear(6, 3)
        self.b = nn.Linear(6, 1)

    def biases(self):
        if self.training:
            return self.table[torch.arange(6), self.idx]
        if "b" not in self.cache:
            self.cache["b"] = self.table[torch.arange(6), self.idx]
        return self.cache["b"]

    def forward(self, x):
        h = torch.relu(self.lin(x.flatten(1)[:, :12]) + self.biases())
        return F.log_softmax(self.a(h), -1), self.b(h)


def main():
    torch.manual_seed(14)
    m = Cached().eval()
    x = torch.randn(2, 3, 4, 4)
    m(x)  # fills the cache
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), out, input_names=["x"], output_names=["a", "b"],
                          dynamic_axes={"x": {0: "N"}, "a": {0: "N"}, "b": {0: "N"}},
                          dynamo=True, optimize=False, verbose=False)
    print(out, os.path.getsize(out), "bytes; torch", torch.__version__)


if __name__ == "__main__":
    main()
