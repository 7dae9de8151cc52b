#!/usr/bin/python3
"""Times one m-task per-task-gradient step in PyTorch (CPU), for comparison
with paretonav's Go backend.

A step is what PNG needs per iteration: one forward pass, then one backward
pass per task (torch.autograd.grad with retain_graph=True, all but the last),
each gradient flattened into a row of J, then the m x m Gram matrix J J^T.

Models (from backend/testdata/torch/make_fixtures.py, same topology):
  lenet2  two-head LeNet, MultiMNIST input [256,1,36,36], m = 2 (nll, nll)
  mtan    small SegNet/MTAN-style net, input [8,3,32,32], m = 3
          (seg nll, depth L1, normal cosine)

Run with the system Python (torch 1.13):

    /usr/bin/python3 bench/torch_step.py [--threads 2] [--repeat 20] [--batch 256]

Prints one JSON object: per model, the median, min and mean seconds per step
over --repeat timed steps after --warmup untimed ones. torch.set_num_threads
defaults to 2 to match the machine paretonav is measured on.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in testdata
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "backend", "testdata", "torch"))
import make_fixtures as fx  # noqa: E402  (models and losses)


def step(model, params, x, tasks):
    """One forward, m backward passes, J and its Gram matrix."""
    outs = model(x)
    rows = []
    for i, (kind, out, target) in enumerate(tasks):
        loss = fx.LOSSES[kind](outs[out], target)
        g = torch.autograd.grad(loss, params, retain_graph=i < len(tasks) - 1,
                                allow_unused=True)
        rows.append(torch.cat([(torch.zeros_like(p) if gi is None else gi).reshape(-1)
                               for p, gi in zip(params, g)]))
    J = torch.stack(rows)
    return J @ J.T


def time_model(model, x, tasks, warmup, repeat):
    model.eval()
    params = [p for p in model.parameters()]
    for _ in range(warmup):
        step(model, params, x, tasks)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step(model, params, x, tasks)
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times),
            "mean_s": statistics.fmean(times), "repeat": repeat,
            "batch": int(x.shape[0]), "tasks": len(tasks),
            "params": int(sum(p.numel() for p in params))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--flush-denormal", action=argparse.BooleanOptionalAction, default=True,
                    help="flush subnormal floats to zero (torch.set_flush_denormal), as paretonav's "
                         "GEMM kernels do; without it, Intel CPUs take a microcode assist on each "
                         "subnormal that the backward passes meet (default: on)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=256, help="LeNet batch")
    ap.add_argument("--mtan-batch", type=int, default=8)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    flush = torch.set_flush_denormal(args.flush_denormal) and args.flush_denormal
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    lenet = fx.LeNet2("flatten")
    x = torch.from_numpy(rng.random((args.batch, 1, 36, 36), dtype=np.float32))
    left = torch.from_numpy(rng.integers(0, 10, args.batch))
    right = torch.from_numpy(rng.integers(0, 10, args.batch))
    res = {"torch": torch.__version__, "threads": torch.get_num_threads(), "flush_denormal": flush}
    res["lenet2"] = time_model(lenet, x, [("nll", 0, left), ("nll", 1, right)],
                               args.warmup, args.repeat)

    mtan = fx.MTANSmall()
    n = args.mtan_batch
    x = torch.from_numpy(rng.standard_normal((n, 3, 32, 32), dtype=np.float32))
    seg = torch.from_numpy(rng.integers(0, 13, (n, 32, 32)))
    depth = torch.from_numpy(rng.random((n, 1, 32, 32), dtype=np.float32) + 0.5)
    normal = F.normalize(torch.randn(n, 3, 32, 32), dim=1)
    res["mtan"] = time_model(mtan, x, [("nll", 0, seg), ("depth_l1", 1, depth),
                                       ("normal_cos", 2, normal)],
                             args.warmup, args.repeat)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
