#!/usr/bin/env python3
"""A new user's first real model, tuned end to end, with its step times.

    .tools/bench-torch2/bin/python bench/resnet_two_head.py --bin ./paretonav \\
        [--work DIR] [--steps 60] [--batch 32] [--lr 1e-4] [--threads 0] \\
        [--out bench/results/resnet-two-head.json]

A timm ResNet-18 backbone (``num_classes=0``: 11.18M parameters, its
512-wide pooled features) with a 10-class head and a regression head, on
32×32 RGB inputs, briefly pretrained in PyTorch on synthetic data
(class-conditional low-frequency patterns plus noise; the regression
target is the mean brightness of the top-left quadrant), exported with
``paretonav.export`` and tuned with the binary:

    paretonav tune model.onnx --data train.npz --val val.npz \\
        --task cls:ce:logits:y --task reg:mse:reg:r \\
        --criterion wd:<0.8·cls>,<reg> --steps 60 --batch 32 --lr 1e-4 \\
        --optimizer adam --log tune.jsonl --json

where cls and reg are the losses the pretrained model has on the training
data (PyTorch's, in eval mode). From the log it reports each step's time
(the differences of the log's cumulative "seconds"), their median, max and
max/median, the direction's time per step ("direction_ms": PNG's direction
and its update within Adam's step bound) and its share of the step, and the
run's explanation (the --json summary's), as one JSON object written to
--out and printed.

Needs torch and timm (PyPI's torch 2.x: the venv that bench/torchenv.py makes,
.tools/bench-torch2); the paretonav
Python package is read from python/ beside this folder.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import paretonav  # noqa: E402


class TwoHead(nn.Module):
    """ResNet-18 features, a 10-class head (logits) and a regression head."""

    def __init__(self):
        super().__init__()
        import timm
        self.backbone = timm.create_model("resnet18", pretrained=False, num_classes=0)
        self.cls = nn.Linear(self.backbone.num_features, 10)
        self.reg = nn.Linear(self.backbone.num_features, 1)

    def forward(self, x):
        h = self.backbone(x)
        return self.cls(h), self.reg(h)


def synthetic(n, seed, templates):
    """n examples: a class's template, scaled and shifted, plus noise."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    a = 0.5 + torch.rand(n, 1, 1, 1, generator=g)
    x = a * templates[y] + 0.5 * torch.randn(n, 3, 32, 32, generator=g)
    r = x[:, :, :16, :16].mean(dim=(1, 2, 3)).unsqueeze(1)
    return x.float(), y.long(), r.float()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="the paretonav binary")
    ap.add_argument("--work", default="/tmp/resnet-two-head")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--pretrain", type=int, default=60, help="PyTorch Adam steps of pretraining")
    ap.add_argument("--threads", type=int, default=0, help="torch threads for the pretraining (0: torch's default)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "resnet-two-head.json"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    g = torch.Generator().manual_seed(1)
    templates = F.interpolate(torch.randn(10, 3, 4, 4, generator=g), size=(32, 32), mode="bilinear", align_corners=False)
    x, y, r = synthetic(512, 2, templates)
    xv, yv, rv = synthetic(128, 3, templates)
    train, val = os.path.join(args.work, "train.npz"), os.path.join(args.work, "val.npz")
    np.savez(train, x=x.numpy(), y=y.numpy(), r=r.numpy())
    np.savez(val, x=xv.numpy(), y=yv.numpy(), r=rv.numpy())

    model = TwoHead()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    t0 = time.time()
    model.train()
    for k in range(args.pretrain):
        i = torch.randint(0, len(x), (args.batch,))
        logits, reg = model(x[i])
        loss = F.cross_entropy(logits, y[i]) + F.mse_loss(reg, r[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
    pretrain_s = time.time() - t0
    model.eval()
    with torch.no_grad():
        logits, reg = model(x)
        cls0, reg0 = F.cross_entropy(logits, y).item(), F.mse_loss(reg, r).item()
    onnx_path = paretonav.export(model, [x[:1]], os.path.join(args.work, "model.onnx"), inputs=["x"], outputs=["logits", "reg"])

    crit = "wd:%.6g,%.6g" % (0.8 * cls0, reg0)
    log = os.path.join(args.work, "tune.jsonl")
    cmd = [args.bin, "tune", onnx_path, "--data", train, "--val", val,
           "--task", "cls:ce:logits:y", "--task", "reg:mse:reg:r", "--criterion", crit,
           "--steps", str(args.steps), "--batch", str(args.batch), "--lr", repr(args.lr), "--optimizer", "adam",
           "--out", os.path.join(args.work, "model_tuned.onnx"), "--log", log, "--json", "--force"]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    tune_s = time.time() - t0
    if p.returncode != 0:
        sys.exit("paretonav tune failed (%d): %s" % (p.returncode, p.stderr))
    summary = json.loads(p.stdout)

    steps = [json.loads(l) for l in open(log) if l.strip()]
    steps = [s for s in steps if "step" in s and "kind" not in s]
    secs = [s["seconds"] for s in steps]
    step_s = [b - a for a, b in zip([0.0] + secs[:-1], secs)]
    dir_s = [s.get("direction_ms", float("nan")) / 1000 for s in steps]
    share = [d / t for d, t in zip(dir_s, step_s) if t > 0]
    med = statistics.median(step_s)
    out = {
        "model": "timm resnet18 (num_classes=0) + Linear(512,10) + Linear(512,1), 32x32 inputs",
        "parameters": params,
        "pretrain_steps": args.pretrain, "pretrain_seconds": round(pretrain_s, 1),
        "start_losses": {"cls": cls0, "reg": reg0},
        "command": " ".join(os.path.basename(c) if c == args.bin else c for c in cmd),
        "criterion": crit, "steps": len(steps), "batch": args.batch, "lr": args.lr,
        "tune_wall_seconds": round(tune_s, 1),
        "step_seconds": {"median": med, "max": max(step_s), "max_over_median": max(step_s) / med,
                         "slowest_step": 1 + step_s.index(max(step_s))},
        "direction_seconds": {"median": statistics.median(dir_s), "max": max(dir_s)},
        "direction_share": {"median": statistics.median(share), "max": max(share),
                            "total": sum(dir_s) / sum(step_s)},
        "per_step": [{"step": s["step"], "seconds": round(t, 4), "direction_ms": s.get("direction_ms"),
                      "control": s.get("control"), "improper": s.get("improper", False),
                      "clipped": (s.get("metric") or {}).get("clipped", 0),
                      "inexact": (s.get("metric") or {}).get("inexact", False)}
                     for s, t in zip(steps, step_s)],
        "explanation": summary.get("explanation"),
        "torch": torch.__version__, "threads": torch.get_num_threads(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    brief = {k: out[k] for k in ("parameters", "criterion", "tune_wall_seconds", "step_seconds", "direction_seconds", "direction_share")}
    print(json.dumps(brief, indent=1))


if __name__ == "__main__":
    main()
