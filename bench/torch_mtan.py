#!/usr/bin/python3
"""PyTorch twin of paretonav's models.MTAN (models/mtan.go): the SegNet-MTAN
of lorenmt/mtan for NYUv2, layer for layer as the Go builder writes it, and
the timing of one PNG step on it (one forward pass, one backward pass per
task with retain_graph, J flattened, the m x m Gram matrix J J^T), for a
side-by-side comparison with `paretonav bench step` on the exported model.

    /usr/bin/python3 bench/torch_mtan.py [--width 64] [--size 288x384]
        [--batch 2] [--steps 3] [--warmup 1] [--threads 2] [--no-flush-denormal]
        [--torchjd]

--torchjd times TorchJD's step instead (the multi-task library users would
otherwise run; 0.18, pinned in bench/torchenv.py): one forward pass,
`torchjd.autojac.backward` of the three losses (their Jacobian into every
parameter's .jac) and `torchjd.autojac.jac_to_grad` with UPGrad (the
aggregated gradient into .grad). Its "backward_share" is then the
Jacobian's and "aggregate_share" UPGrad's.

Prints one JSON object: build time, per-step seconds, the median, the
shares of the step spent in forward and backward passes, and the peak RSS
of the process (ru_maxrss). BatchNorm runs with its running statistics
(eval mode), as paretonav's default --bn frozen. Weights are xavier-normal
with zero biases like models.MTAN's; the values do not affect the timing.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "backend", "testdata", "torch"))
import make_fixtures as fx  # noqa: E402  (the three NYUv2 losses)


def conv_bn(cin, cout, k=3):
    """conv-BN-ReLU, as models.MTAN's convBN layers."""
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2), nn.BatchNorm2d(cout), nn.ReLU())


def att(c0, c1, c2):
    """Attention mask: conv1x1-BN-ReLU, conv1x1-BN-Sigmoid."""
    return nn.Sequential(nn.Conv2d(c0, c1, 1), nn.BatchNorm2d(c1), nn.ReLU(),
                         nn.Conv2d(c1, c2, 1), nn.BatchNorm2d(c2), nn.Sigmoid())


class MTAN(nn.Module):
    """SegNet-MTAN, three tasks (segmentation log-probabilities, depth,
    normals divided by their L2 norm), as models/mtan.go builds it."""

    def __init__(self, width=64, classes=13):
        super().__init__()
        f = [width, 2 * width, 4 * width, 8 * width, 8 * width]
        self.encoder_block = nn.ModuleList([conv_bn(3, f[0])] + [conv_bn(f[i], f[i + 1]) for i in range(4)])
        self.decoder_block = nn.ModuleList([conv_bn(f[0], f[0])] + [conv_bn(f[i + 1], f[i]) for i in range(4)])
        self.conv_block_enc = nn.ModuleList(
            [conv_bn(f[0], f[0]), conv_bn(f[1], f[1])]
            + [nn.Sequential(conv_bn(f[i], f[i]), conv_bn(f[i], f[i])) for i in range(2, 5)])
        self.conv_block_dec = nn.ModuleList(
            [conv_bn(f[0], f[0]), conv_bn(f[0], f[0])]
            + [nn.Sequential(conv_bn(f[i - 1], f[i - 1]), conv_bn(f[i - 1], f[i - 1])) for i in range(2, 5)])
        self.encoder_att = nn.ModuleList([nn.ModuleList(
            [att(f[0], f[0], f[0])] + [att(2 * f[i + 1], f[i + 1], f[i + 1]) for i in range(4)]) for _ in range(3)])
        self.decoder_att = nn.ModuleList([nn.ModuleList(
            [att(2 * f[0], f[0], f[0])] + [att(f[i + 1] + f[i], f[i], f[i]) for i in range(4)]) for _ in range(3)])
        self.encoder_block_att = nn.ModuleList(
            [conv_bn(f[0], f[1])] + [conv_bn(f[i + 1], f[i + 2]) for i in range(3)] + [conv_bn(f[4], f[4])])
        self.decoder_block_att = nn.ModuleList(
            [conv_bn(f[0], f[0])] + [conv_bn(f[i + 1], f[i]) for i in range(3)] + [conv_bn(f[4], f[4])])
        self.pred = nn.ModuleList([nn.Sequential(nn.Conv2d(f[0], f[0], 3, padding=1), nn.Conv2d(f[0], c, 1))
                                   for c in (classes, 1, 3)])
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.xavier_normal_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        enc0, enc1, idx = [], [], []
        h = x
        for i in range(5):
            e0 = self.encoder_block[i](h)
            e1 = self.conv_block_enc[i](e0)
            h, ix = F.max_pool2d(e1, 2, 2, return_indices=True)
            enc0.append(e0)
            enc1.append(e1)
            idx.append(ix)
        ups, decs = [], []
        for i in range(5):
            u = F.max_unpool2d(h, idx[4 - i], 2, 2)
            v = self.conv_block_dec[4 - i](self.decoder_block[4 - i](u))
            ups.append(u)
            decs.append(v)
            h = v
        outs = []
        for t in range(3):
            a = None
            for j in range(5):
                inp = enc0[j] if j == 0 else torch.cat([enc0[j], a], 1)
                a = self.encoder_att[t][j](inp) * enc1[j]
                a = F.max_pool2d(self.encoder_block_att[j](a), 2, 2)
            for j in range(5):
                up = F.interpolate(a, scale_factor=2, mode="bilinear", align_corners=True)
                d = self.decoder_block_att[4 - j](up)
                a = self.decoder_att[t][4 - j](torch.cat([ups[j], d], 1)) * decs[j]
            outs.append(self.pred[t](a))
        seg = F.log_softmax(outs[0], 1)
        normal = outs[2] / outs[2].norm(p=2, dim=1, keepdim=True)
        return seg, outs[1], normal


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--size", default="288x384")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3, help="timed steps")
    ap.add_argument("--warmup", type=int, default=1,
                    help="untimed steps first, as paretonav bench step's one (default: 1)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--flush-denormal", action=argparse.BooleanOptionalAction, default=True,
                    help="flush subnormal floats to zero (torch.set_flush_denormal), as paretonav's "
                         "GEMM kernels do; without it, Intel CPUs take a microcode assist on each "
                         "subnormal that the backward passes meet (default: on)")
    ap.add_argument("--torchjd", action="store_true",
                    help="time TorchJD's step (autojac.backward, then jac_to_grad with UPGrad) instead")
    args = ap.parse_args()
    if args.torchjd:
        import importlib.metadata
        from torchjd.aggregation import UPGrad
        from torchjd.autojac import backward as jd_backward, jac_to_grad
        upgrad = UPGrad()
    torch.set_num_threads(args.threads)
    flush = torch.set_flush_denormal(args.flush_denormal) and args.flush_denormal
    torch.manual_seed(0)
    h, w = (int(v) for v in args.size.lower().split("x"))
    t0 = time.perf_counter()
    model = MTAN(args.width).eval()
    build = time.perf_counter() - t0
    params = [p for p in model.parameters()]
    rng = np.random.default_rng(0)
    n = args.batch
    x = torch.from_numpy(rng.standard_normal((n, 3, h, w), dtype=np.float32))
    seg = torch.from_numpy(rng.integers(-1, 13, (n, h, w)))
    depth = torch.from_numpy(rng.uniform(0, 5, (n, 1, h, w)).astype(np.float32))
    normal = F.normalize(torch.randn(n, 3, h, w), dim=1)
    tasks = [("nll", 0, seg), ("depth_l1", 1, depth), ("normal_cos", 2, normal)]
    times, fwd, bwd, agg = [], [], [], []
    for s in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        outs = model(x)
        t1 = time.perf_counter()
        if args.torchjd:
            for p in params:
                p.grad = None
            losses = [fx.LOSSES[kind](outs[out], target) for kind, out, target in tasks]
            jd_backward(losses, inputs=params)
            t2 = time.perf_counter()
            jac_to_grad(params, upgrad)
            del outs, losses
            t3 = time.perf_counter()
            if s >= args.warmup:
                times.append(t3 - t0)
                fwd.append(t1 - t0)
                bwd.append(t2 - t1)
                agg.append(t3 - t2)
            continue
        rows = []
        for i, (kind, out, target) in enumerate(tasks):
            loss = fx.LOSSES[kind](outs[out], target)
            g = torch.autograd.grad(loss, params, retain_graph=i < len(tasks) - 1, allow_unused=True)
            rows.append(torch.cat([(torch.zeros_like(p) if gi is None else gi).reshape(-1)
                                   for p, gi in zip(params, g)]))
        t2 = time.perf_counter()
        J = torch.stack(rows)
        (J @ J.T).sum().item()
        del outs, rows, J
        t3 = time.perf_counter()
        if s < args.warmup:
            continue
        times.append(t3 - t0)
        fwd.append(t1 - t0)
        bwd.append(t2 - t1)
    total = sum(times)
    extra = {"torchjd": importlib.metadata.version("torchjd"), "aggregate_share": sum(agg) / total} if args.torchjd else {}
    print(json.dumps({
        **extra, "torch": torch.__version__, "threads": torch.get_num_threads(), "flush_denormal": flush,
        "warmup": args.warmup, "width": args.width, "size": [h, w], "batch": n, "tasks": len(tasks),
        "params": int(sum(p.numel() for p in params)),
        "build_s": build, "step_s": times, "median_s": statistics.median(times),
        "forward_share": sum(fwd) / total, "backward_share": sum(bwd) / total,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }, indent=1))


if __name__ == "__main__":
    main()
