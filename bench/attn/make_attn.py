#!/usr/bin/env python3
"""Small twins of bench/step_models.py's `tfblock` for BenchmarkStep's
transformer cases (backend/bench_test.go): one torchvision ViT encoder block
(nn.MultiheadAttention inside, hidden 128, 2 heads of 64, MLP 512) over 64
tokens of a 4x4/4 patch stem, two heads on the mean token, batch 4 of
3x32x32 (the batch axis dynamic).

    .tools/bench-torch2/bin/python bench/attn/make_attn.py [--dir backend/testdata/attn]

writes, with the PyTorch 2.x of the venv (the versions are printed):
  tfblock1_ts.onnx      torch.onnx.export(dynamo=False), opset 17 (the
                        TorchScript exporter, as step_models.py exports)
  tfblock1_ts14.onnx    the same at opset 14, before LayerNormalization:
                        each LayerNorm as nine ops (ReduceMean, Sub, Pow,
                        ReduceMean, Add, Sqrt, Div, Mul, Add)
  tfblock1_dynopt.onnx  torch.onnx.export(dynamo=True), opset 20 (the
                        dynamo exporter with its optimizer: Gelu and
                        LayerNormalization ops, attention as MatMul/Softmax)
  tfblock1.npz          input x [4,3,32,32] and targets a (10 classes), b (5)
"""
import argparse
import os
import sys

import numpy as np
import onnx
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from step_models import Blocks  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=os.path.join("backend", "testdata", "attn"))
    d = ap.parse_args().dir
    os.makedirs(d, exist_ok=True)
    print("torch", torch.__version__, file=sys.stderr)
    torch.manual_seed(11)
    model = Blocks(layers=1, hidden=128, heads=2, mlp=512).eval()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3, 32, 32), dtype=np.float32)
    np.savez(os.path.join(d, "tfblock1.npz"), x=x, a=rng.integers(0, 10, 4).astype(np.int64),
             b=rng.integers(0, 5, 4).astype(np.int64))
    xt = torch.from_numpy(x)
    # nn.MultiheadAttention's fused inference path (eval, no_grad) is one
    # aten op the TorchScript exporter does not know: the composite ops.
    torch.backends.mha.set_fastpath_enabled(False)
    outs = ["logp_a", "logp_b"]
    batch = {n: {0: "N"} for n in ["x"] + outs}  # any batch size
    with torch.no_grad():
        torch.onnx.export(model, (xt,), os.path.join(d, "tfblock1_ts.onnx"), dynamo=False, opset_version=17,
                          input_names=["x"], output_names=outs, dynamic_axes=batch)
        torch.onnx.export(model, (xt,), os.path.join(d, "tfblock1_ts14.onnx"), dynamo=False, opset_version=14,
                          input_names=["x"], output_names=outs, dynamic_axes=batch)
        torch.onnx.export(model, (xt,), os.path.join(d, "tfblock1_dynopt.onnx"), dynamo=True, optimize=True,
                          opset_version=20, input_names=["x"], output_names=outs, dynamic_axes=batch, verbose=False)
    # The dynamo exporter writes the weights to a side file: one file.
    dyn = os.path.join(d, "tfblock1_dynopt.onnx")
    onnx.save_model(onnx.load(dyn), dyn + ".tmp", save_as_external_data=False)
    os.replace(dyn + ".tmp", dyn)
    os.remove(dyn + ".data")
    for f in ("tfblock1_ts.onnx", "tfblock1_ts14.onnx", "tfblock1_dynopt.onnx"):
        p = os.path.join(d, f)
        print(f"wrote {p} ({os.path.getsize(p) / 1e6:.2f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
