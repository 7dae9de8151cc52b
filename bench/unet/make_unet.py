#!/usr/bin/env python3
"""A twin of bench/torch2_zoo/check.py's UNet for BenchmarkStep's UNet cases
(backend/bench_test.go): ConvTranspose2d, bilinear upsampling, GroupNorm and
InstanceNorm blocks, skip concatenations, at width 16 on batch 2 of
3x64x64 (the batch axis dynamic), with its two heads (per-pixel nll over 4
classes, depth mse).

    .tools/bench-torch2/bin/python bench/unet/make_unet.py [--dir backend/testdata/unet]

writes, with the PyTorch 2.x of the venv (the versions are printed):
  unet16_ts.onnx      torch.onnx.export(dynamo=False), opset 20, as check.py
                      exports (GroupNorm as Reshape, InstanceNormalization,
                      Reshape, Mul, Add)
  unet16_dynopt.onnx  torch.onnx.export(dynamo=True), opset 20 (the dynamo
                      exporter with its optimizer)
  unet16.npz          input x [4,3,64,64], targets seg [4,64,64] (4 classes)
                      and depth [4,1,64,64]
"""
import argparse
import os
import sys

import numpy as np
import onnx
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch2_zoo"))
from check import unet  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=os.path.join("backend", "testdata", "unet"))
    d = ap.parse_args().dir
    os.makedirs(d, exist_ok=True)
    print("torch", torch.__version__, "onnx", onnx.__version__, file=sys.stderr)
    torch.manual_seed(13)
    model = unet(16)
    gen = torch.Generator().manual_seed(13)
    with torch.no_grad():  # no zero biases or unit norms: nondegenerate gradients
        for p in model.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=gen))
    model.eval()
    rng = np.random.default_rng(5)
    # four examples (the backend's tests step batches of up to four; the
    # benchmark the first two)
    x = rng.standard_normal((4, 3, 64, 64), dtype=np.float32)
    np.savez(os.path.join(d, "unet16.npz"), x=x, seg=rng.integers(0, 4, (4, 64, 64)).astype(np.int64),
             depth=rng.standard_normal((4, 1, 64, 64), dtype=np.float32))
    xt = torch.from_numpy(x[:2])
    outs = ["seg_logp", "depth"]
    batch = {n: {0: "N"} for n in ["x"] + outs}  # any batch size
    kw = dict(input_names=["x"], output_names=outs, dynamic_axes=batch, opset_version=20)
    with torch.no_grad():
        torch.onnx.export(model, (xt,), os.path.join(d, "unet16_ts.onnx"), dynamo=False,
                          do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE, **kw)
        torch.onnx.export(model, (xt,), os.path.join(d, "unet16_dynopt.onnx"), dynamo=True, optimize=True,
                          verbose=False, **kw)
    # The dynamo exporter writes the weights to a side file: one file.
    dyn = os.path.join(d, "unet16_dynopt.onnx")
    onnx.save_model(onnx.load(dyn), dyn + ".tmp", save_as_external_data=False)
    os.replace(dyn + ".tmp", dyn)
    if os.path.exists(dyn + ".data"):
        os.remove(dyn + ".data")
    for f in ("unet16_ts.onnx", "unet16_dynopt.onnx"):
        p = os.path.join(d, f)
        print(f"wrote {p} ({os.path.getsize(p) / 1e6:.2f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
