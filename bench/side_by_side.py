#!/usr/bin/python3
"""Side by side: one PNG step of the full MTAN in paretonav and in PyTorch,
in interleaved pairs, with the time and peak-RSS ratios docs/performance.md states.

    /usr/bin/python3 bench/side_by_side.py [--paretonav BIN] [--size 64x96]
        [--batch 4] [--steps 3] [--pairs 3] [--threads 2] [--dir DIR] [--json]

Each pair runs `paretonav bench step --json` on models.MTAN exported at
--size (written once into --dir with `paretonav models mtan`, with a batch
of random inputs and targets as in bench/README.md), then
bench/torch_mtan.py on its PyTorch twin at the same size, batch and number
of steps, both on --threads threads (GOMAXPROCS for paretonav). Pairs
alternate so that a machine slowing down or speeding up over the run
shows in both columns. Prints one line per pair (median step seconds of
each side, their ratio, the peak RSS of each process and their ratio)
and the medians over the pairs; --json prints one JSON object instead.
Needs numpy and torch for /usr/bin/python3 (Debian's python3-torch).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = ["seg:nll:seg_logp:seg:ignore_index=-1", "depth:depth_l1:depth:depth_t",
         "normal:normal_cos:normal:normal_t"]


def parse_size(s):
    """HxW as two ints, both multiples of 32 (models.MTAN's levels)."""
    try:
        h, w = (int(v) for v in s.lower().split("x"))
    except ValueError:
        sys.exit(f"side_by_side: --size {s!r}: want HxW, such as 64x96")
    if h <= 0 or w <= 0 or h % 32 or w % 32:
        sys.exit(f"side_by_side: --size {s!r}: both sides must be positive multiples of 32")
    return h, w


def run_json(cmd, env, what):
    """Runs cmd and returns the JSON object it prints on stdout."""
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"side_by_side: {what} failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr.strip()}")
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError as e:
        sys.exit(f"side_by_side: {what} printed no JSON object ({e}):\n{p.stdout[:2000]}")


def prepare(bin_, d, h, w, batch):
    """Writes the model and a batch of data into d once; returns their paths."""
    os.makedirs(d, exist_ok=True)
    model = os.path.join(d, f"mtan_{h}x{w}.onnx")
    data = os.path.join(d, f"data_{h}x{w}_b{batch}.npz")
    if not os.path.exists(model):
        p = subprocess.run([bin_, "models", "mtan", "--size", f"{h}x{w}", "--out", model],
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"side_by_side: writing {model} failed: {p.stderr.strip()}")
    if not os.path.exists(data):
        import numpy as np
        r = np.random.default_rng(0)
        tmp = data + ".tmp.npz"
        np.savez(tmp, x=r.standard_normal((batch, 3, h, w)).astype("f4"),
                 seg=r.integers(-1, 13, (batch, h, w)),
                 depth_t=r.uniform(0, 5, (batch, 1, h, w)).astype("f4"),
                 normal_t=r.standard_normal((batch, 3, h, w)).astype("f4"))
        os.replace(tmp, data)
    return model, data


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paretonav", default=shutil.which("paretonav") or "paretonav",
                    help="the paretonav binary (default: paretonav on PATH)")
    ap.add_argument("--size", default="64x96", help="input HxW (default 64x96)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per run")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dir", default="side_by_side", help="where the model and data are written")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args()
    for name in ("batch", "steps", "pairs", "threads"):
        if getattr(a, name) < 1:
            sys.exit(f"side_by_side: --{name} {getattr(a, name)}: want at least 1")
    if not shutil.which(a.paretonav):
        sys.exit(f"side_by_side: --paretonav {a.paretonav!r}: not an executable (build one with `go build -o paretonav .`)")
    h, w = parse_size(a.size)
    model, data = prepare(a.paretonav, a.dir, h, w, a.batch)
    env = dict(os.environ, GOMAXPROCS=str(a.threads))
    go_cmd = [a.paretonav, "bench", "step", model, "--data", data, "--batch", str(a.batch),
              "--steps", str(a.steps), "--json"]
    for t in TASKS:
        go_cmd += ["--task", t]
    torch_cmd = [sys.executable, os.path.join(HERE, "torch_mtan.py"), "--size", f"{h}x{w}",
                 "--batch", str(a.batch), "--steps", str(a.steps), "--threads", str(a.threads)]
    pairs = []
    for i in range(a.pairs):
        g = run_json(go_cmd, env, "paretonav bench step")
        t = run_json(torch_cmd, env, "bench/torch_mtan.py")
        p = {"paretonav_s": g["median_s"], "torch_s": t["median_s"],
             "time_ratio": g["median_s"] / t["median_s"],
             "paretonav_rss": g["peak_rss_bytes"], "torch_rss": t["peak_rss_bytes"],
             "rss_ratio": g["peak_rss_bytes"] / t["peak_rss_bytes"]}
        pairs.append(p)
        if not a.json:
            print(f"pair {i + 1}: paretonav {p['paretonav_s']:.3f} s, PyTorch {p['torch_s']:.3f} s, "
                  f"ratio {p['time_ratio']:.2f}; peak RSS {p['paretonav_rss'] / 1e9:.2f} / "
                  f"{p['torch_rss'] / 1e9:.2f} GB = {p['rss_ratio']:.2f}", flush=True)
    med = {k: statistics.median(p[k] for p in pairs) for k in ("time_ratio", "rss_ratio")}
    if a.json:
        print(json.dumps({"size": [h, w], "batch": a.batch, "steps": a.steps, "threads": a.threads,
                          "pairs": pairs, "median": med}, indent=1))
        return
    r = [p["time_ratio"] for p in pairs]
    print(f"{a.pairs} pairs at {h}x{w}, batch {a.batch}: time ratio {min(r):.2f}–{max(r):.2f} "
          f"(median {med['time_ratio']:.2f}), peak RSS ratio median {med['rss_ratio']:.2f}")


if __name__ == "__main__":
    main()
