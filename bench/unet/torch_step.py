#!/usr/bin/env python3
"""PyTorch's step on the UNet twin of make_unet.py, to set beside
BenchmarkStep/unet16_*: the same model (width 16, the same seed and
perturbation), the first two examples of backend/testdata/unet/unet16.npz,
forward, then one autograd.grad per task (nll, mse), as `bench step` times
PyTorch. Prints the milliseconds per step, wall and process CPU time.

    .tools/bench-torch2/bin/python bench/unet/torch_step.py [--threads 2] [--steps 20] [--rounds 1]
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch2_zoo"))
from check import unet  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--npz", default=os.path.join("backend", "testdata", "unet", "unet16.npz"))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(13)  # as make_unet.py
    model = unet(16)
    gen = torch.Generator().manual_seed(13)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=gen))
    model.eval()
    d = np.load(a.npz)
    x, seg, depth = (torch.from_numpy(d[k][:2]) for k in ("x", "seg", "depth"))
    ps = list(model.parameters())

    def step():
        logp, dep = model(x)
        l1, l2 = F.nll_loss(logp, seg), F.mse_loss(dep, depth)
        # the head the other task does not use has no gradient: allow_unused
        torch.autograd.grad(l1, ps, retain_graph=True, allow_unused=True)
        torch.autograd.grad(l2, ps, allow_unused=True)

    for _ in range(5):
        step()
    for _ in range(a.rounds):
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(a.steps):
            step()
        print(f"torch {torch.__version__}, {a.threads} threads: wall {(time.perf_counter() - t0) / a.steps * 1e3:.1f} ms"
              f" cpu {(time.process_time() - c0) / a.steps * 1e3:.1f} ms per step")


if __name__ == "__main__":
    main()
