#!/usr/bin/env python3
"""Pretrains a reduced SegNet-MTAN (bench/torch_mtan.py's twin of
models.MTAN, at a smaller width) on data in lorenmt/mtan's NYUv2 layout with
equal task weights, as the paper's NYUv2 experiment starts, and exports it to
ONNX for paretonav:

    python bench/nyuv2/pretrain.py --data DIR --out model.onnx [--width 8 --epochs 12 ...]

DIR holds train/ (and val/, for the losses printed per epoch), each with
image/, label/, depth/, normal/ of per-sample .npy files, channels last. The
losses are MTAN's and paretonav's: segmentation negative log-likelihood with
label -1 ignored (`nll`, ignore_index=-1), depth L1 over pixels with a depth
(`depth_l1`), normal 1 - cosine over pixels with a normal (`normal_cos`),
summed with weight 1 each. BatchNorm trains in train mode and is exported
with its running statistics by the Python package's own export
(python/paretonav/_export.py, as paretonav.tune exports a module: every
parameter an initializer under its state_dict name, BatchNormalization kept),
which paretonav's default --bn frozen reads.

The ONNX model has input `image` [N,3,H,W] and outputs `seg_logp`
[N,13,H,W] (log-probabilities), `depth` [N,1,H,W] and `normal` [N,3,H,W]
(unit vectors). Prints one JSON line per epoch (train losses, val losses)
and one at the end.

--npz DIR2 also writes DIR2/train.npz and DIR2/val.npz: the same samples
channels first, as paretonav's NPZ source reads them (arrays image, label
(int64), depth, normal).
"""
import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from paretonav._export import export  # noqa: E402  (the package's export, as paretonav.tune makes it)
from torch_mtan import MTAN, fx  # noqa: E402  (the twin and the three losses)


def load_split(folder):
    """A split's arrays, channels first: image [N,3,H,W] float32, label
    [N,H,W] int64, depth [N,1,H,W], normal [N,3,H,W] float32."""
    names = os.listdir(os.path.join(folder, "image"))
    n = len(names)
    if n == 0 or sorted(names) != sorted("%d.npy" % i for i in range(n)):
        raise SystemExit("pretrain: %s: want 0.npy ... %d.npy" % (os.path.join(folder, "image"), n - 1))
    out = {}
    for sub in ("image", "label", "depth", "normal"):
        arrs = [np.load(os.path.join(folder, sub, "%d.npy" % i)) for i in range(n)]
        a = np.stack(arrs)
        out[sub] = a.astype(np.int64) if sub == "label" else np.ascontiguousarray(a.transpose(0, 3, 1, 2))
    return out


def losses(model, batch):
    seg, depth, normal = model(torch.from_numpy(batch["image"]))
    return (fx.loss_nll(seg, torch.from_numpy(batch["label"])),
            fx.loss_depth_l1(depth, torch.from_numpy(batch["depth"])),
            fx.loss_normal_cos(normal, torch.from_numpy(batch["normal"])))


def evaluate(model, data, batch):
    model.eval()
    n = len(data["image"])
    tot = np.zeros(3)
    with torch.no_grad():
        for s in range(0, n, batch):
            b = {k: v[s:s + batch] for k, v in data.items()}
            tot += np.array([float(v) for v in losses(model, b)]) * len(b["image"])
    return dict(zip(("seg", "depth", "normal"), (tot / n).tolist()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="folder with train/ and val/ in lorenmt/mtan's layout")
    ap.add_argument("--out", required=True, help="the ONNX file to write (must not exist)")
    ap.add_argument("--npz", help="also write the splits as DIR/train.npz, DIR/val.npz (channels first)")
    ap.add_argument("--width", type=int, default=8, help="channels of the first level (the full MTAN: 64)")
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3, help="Adam's learning rate, cosine-decayed to 0")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: on a busy 2-core machine two threads spin against each other)")
    a = ap.parse_args(argv)
    if os.path.exists(a.out):
        raise SystemExit("pretrain: %s exists: give a new --out" % a.out)
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)
    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    train = load_split(os.path.join(a.data, "train"))
    val = load_split(os.path.join(a.data, "val"))
    if a.npz:
        for name, d in (("train", train), ("val", val)):
            path = os.path.join(a.npz, name + ".npz")
            if os.path.exists(path):
                raise SystemExit("pretrain: %s exists" % path)
            np.savez(path + ".tmp.npz", **d)
            os.replace(path + ".tmp.npz", path)

    model = MTAN(a.width, classes=13)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    n = len(train["image"])
    steps = a.epochs * (n // a.batch)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    rng = np.random.default_rng(a.seed)
    for epoch in range(a.epochs):
        model.train()
        order = rng.permutation(n)
        tot, cnt = np.zeros(3), 0
        for s in range(0, n - a.batch + 1, a.batch):
            idx = order[s:s + a.batch]
            ls = losses(model, {k: v[idx] for k, v in train.items()})
            opt.zero_grad()
            sum(ls).backward()
            opt.step()
            sched.step()
            tot += np.array([float(v.detach()) for v in ls])
            cnt += 1
        print(json.dumps({"epoch": epoch + 1, "train": dict(zip(("seg", "depth", "normal"), (tot / cnt).tolist())),
                          "val": evaluate(model, val, 16), "s": round(time.perf_counter() - t0, 1)}), flush=True)

    model.eval()
    x = torch.from_numpy(val["image"][:2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export(model, (x,), a.out, inputs=["image"], outputs=["seg_logp", "depth", "normal"])
    print(json.dumps({"out": a.out, "width": a.width, "params": sum(p.numel() for p in model.parameters()),
                      "train_samples": n, "epochs": a.epochs, "torch": torch.__version__,
                      "s": round(time.perf_counter() - t0, 1)}), flush=True)


if __name__ == "__main__":
    main()
