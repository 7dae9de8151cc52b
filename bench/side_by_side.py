#!/usr/bin/env python3
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
Needs numpy for the interpreter that runs it; the PyTorch twins run under
the venv of bench/torchenv.py (PyPI's torch, versions pinned there and
printed first), or under --python PY.

--torchjd adds TorchJD's step to every pair (bench/torch_mtan.py
--torchjd: autojac.backward of the three losses, then jac_to_grad with
UPGrad, TorchJD pinned in bench/torchenv.py), run after PyTorch's, with
its time and paretonav's ratio to it: the multi-task library beside plain
PyTorch.

    /usr/bin/python3 bench/side_by_side.py --tune [--size 288x384] [--batch 2]
        [--steps 2] [--lr 1e-5] [--pairs 1] ...

--tune compares whole runs instead of steps: `paretonav -v tune` on the
same model and data (--steps PNG steps with Adam, the report pass before
and after, the tuned model written to --dir) against bench/torch_tune.py
(the same steps, report passes and a torch.save of the weights), one
after the other, never at once. It prints paretonav's memory plan (the
line -v prints before the first step), the peak RSS of each process
(ru_maxrss of the child, from wait4), their ratio, paretonav's peak
against its plan, the wall time of each run, and the median of each run's
steps after the first (paretonav's from its --log step records, PyTorch's
from torch_tune.py's step_s) with their ratio. --lr is small because
the model's weights are random: at tune's default 1e-3 its loss rises
past the divergence bound and the run fails by design.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import torchenv  # noqa: E402
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


def run_measured(cmd, env, what):
    """Runs cmd with its output captured, returns (stdout, stderr, peak
    RSS bytes of the child from wait4, wall seconds)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        p = subprocess.Popen(cmd, env=env, stdout=fo, stderr=fe, text=True)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    if p.returncode != 0:
        sys.exit(f"side_by_side: {what} failed (exit {p.returncode}): {' '.join(cmd)}\n{err.strip()[-3000:]}")
    return out, err, ru.ru_maxrss * 1024, wall


def parse_gb(s):
    """'10.2 GB' or '645 MB' as bytes."""
    v, unit = s.split()
    return float(v) * (1e9 if unit == "GB" else 1e6)


def tune_pairs(a, h, w, model, data, env):
    """--tune: whole paretonav tune runs against bench/torch_tune.py."""
    out, log = os.path.join(a.dir, "tuned.onnx"), os.path.join(a.dir, "tune.jsonl")
    go_cmd = [a.paretonav, "-v", "tune", model, "--data", data, "--batch", str(a.batch),
              "--steps", str(a.steps), "--lr", str(a.lr), "--criterion", "seg+depth+normal",
              "--out", out, "--force", "--log", log]
    for t in TASKS:
        go_cmd += ["--task", t]
    torch_cmd = [a.py, os.path.join(HERE, "torch_tune.py"), "--data", data,
                 "--batch", str(a.batch), "--steps", str(a.steps), "--lr", str(a.lr),
                 "--threads", str(a.threads), "--out", os.path.join(a.dir, "torch_tuned.pt")]
    pairs = []
    for i in range(a.pairs):
        _, gerr, grss, gwall = run_measured(go_cmd, env, "paretonav tune")
        plan = next((l for l in gerr.splitlines() if l.startswith("expected peak memory")), "")
        m = re.match(r"expected peak memory ([0-9.]+ [GM]B)", plan)
        planned = parse_gb(m.group(1)) if m else float("nan")
        tout, _, trss, twall = run_measured(torch_cmd, env, "bench/torch_tune.py")
        tj = json.loads(tout)
        gsteps = step_times(log)
        tsteps = tj["seconds"]["step_s"]
        # the steps after the first on both sides (the first allocates)
        gstep = statistics.median(gsteps[1:] or gsteps)
        tstep = statistics.median(tsteps[1:] or tsteps)
        p = {"paretonav_rss": grss, "torch_rss": trss, "rss_ratio": grss / trss,
             "plan": plan, "planned_bytes": planned, "peak_over_plan": grss / planned,
             "paretonav_wall_s": gwall, "torch_wall_s": twall, "torch_seconds": tj["seconds"],
             "paretonav_step_s": gsteps, "paretonav_step": gstep, "torch_step": tstep, "step_ratio": gstep / tstep}
        pairs.append(p)
        if not a.json:
            print(f"pair {i + 1}: {plan}", flush=True)
            print(f"pair {i + 1}: peak RSS paretonav tune {grss / 1e9:.2f} GB ({p['peak_over_plan']:.3f} of its plan), "
                  f"PyTorch twin {trss / 1e9:.2f} GB, ratio {p['rss_ratio']:.3f}; wall {gwall:.0f} s / {twall:.0f} s; "
                  f"tune step {gstep:.2f} s / {tstep:.2f} s, ratio {p['step_ratio']:.3f}", flush=True)
    med = {k: statistics.median(p[k] for p in pairs) for k in ("rss_ratio", "peak_over_plan", "step_ratio")}
    if a.json:
        print(json.dumps({"mode": "tune", "torch": a.torch, "size": [h, w], "batch": a.batch, "steps": a.steps, "lr": a.lr,
                          "threads": a.threads, "pairs": pairs, "median": med}, indent=1))
        return
    print(f"{a.pairs} pairs at {h}x{w}, batch {a.batch}, {a.steps} steps: peak RSS ratio median "
          f"{med['rss_ratio']:.3f}, paretonav's peak {med['peak_over_plan']:.3f} of its plan, "
          f"tune step ratio median {med['step_ratio']:.3f}")


def step_times(log):
    """The seconds of each step of a tune log (its step records hold the
    seconds since the run began)."""
    at = [json.loads(l)["seconds"] for l in open(log) if '"step"' in l and '"seconds"' in l]
    return [b - a for a, b in zip([0.0] + at, at)]


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
    ap.add_argument("--python", default="",
                    help="the interpreter of the PyTorch twins (default: the venv of bench/torchenv.py, PyPI's "
                         "torch with MKL and oneDNN, made on first use)")
    ap.add_argument("--tune", action="store_true",
                    help="whole tune runs (paretonav tune against bench/torch_tune.py) instead of steps")
    ap.add_argument("--lr", type=float, default=1e-5, help="--tune: Adam's learning rate on both sides")
    ap.add_argument("--torchjd", action="store_true",
                    help="also time TorchJD's step (autojac.backward, jac_to_grad with UPGrad) in every pair")
    a = ap.parse_args()
    for name in ("batch", "steps", "pairs", "threads"):
        if getattr(a, name) < 1:
            sys.exit(f"side_by_side: --{name} {getattr(a, name)}: want at least 1")
    if not shutil.which(a.paretonav):
        sys.exit(f"side_by_side: --paretonav {a.paretonav!r}: not an executable (build one with `go build -o paretonav .`)")
    h, w = parse_size(a.size)
    a.py = torchenv.python(a.python)
    a.torch = torchenv.label(torchenv.describe(a.py))
    if not a.json:
        print("against " + a.torch, flush=True)
    model, data = prepare(a.paretonav, a.dir, h, w, a.batch)
    env = dict(os.environ, GOMAXPROCS=str(a.threads))
    if a.tune and a.torchjd:
        sys.exit("side_by_side: --torchjd times steps; it does not go with --tune")
    if a.tune:
        return tune_pairs(a, h, w, model, data, env)
    go_cmd = [a.paretonav, "bench", "step", model, "--data", data, "--batch", str(a.batch),
              "--steps", str(a.steps), "--json"]
    for t in TASKS:
        go_cmd += ["--task", t]
    torch_cmd = [a.py, os.path.join(HERE, "torch_mtan.py"), "--size", f"{h}x{w}",
                 "--batch", str(a.batch), "--steps", str(a.steps), "--threads", str(a.threads)]
    pairs = []
    for i in range(a.pairs):
        g = run_json(go_cmd, env, "paretonav bench step")
        t = run_json(torch_cmd, env, "bench/torch_mtan.py")
        p = {"paretonav_s": g["median_s"], "torch_s": t["median_s"],
             "time_ratio": g["median_s"] / t["median_s"],
             "paretonav_rss": g["peak_rss_bytes"], "torch_rss": t["peak_rss_bytes"],
             "rss_ratio": g["peak_rss_bytes"] / t["peak_rss_bytes"]}
        if a.torchjd:
            j = run_json(torch_cmd + ["--torchjd"], env, "bench/torch_mtan.py --torchjd")
            p.update({"torchjd_s": j["median_s"], "torchjd_ratio": g["median_s"] / j["median_s"],
                      "torchjd_rss": j["peak_rss_bytes"], "torchjd_version": j["torchjd"]})
        pairs.append(p)
        if not a.json:
            line = (f"pair {i + 1}: paretonav {p['paretonav_s']:.3f} s, PyTorch {p['torch_s']:.3f} s, "
                    f"ratio {p['time_ratio']:.2f}; peak RSS {p['paretonav_rss'] / 1e9:.2f} / "
                    f"{p['torch_rss'] / 1e9:.2f} GB = {p['rss_ratio']:.2f}")
            if a.torchjd:
                line += (f"; TorchJD {p['torchjd_version']} (UPGrad) {p['torchjd_s']:.3f} s, "
                         f"ratio {p['torchjd_ratio']:.2f}, peak RSS {p['torchjd_rss'] / 1e9:.2f} GB")
            print(line, flush=True)
    keys = ("time_ratio", "rss_ratio") + (("torchjd_ratio",) if a.torchjd else ())
    med = {k: statistics.median(p[k] for p in pairs) for k in keys}
    if a.json:
        print(json.dumps({"torch": a.torch, "size": [h, w], "batch": a.batch, "steps": a.steps, "threads": a.threads,
                          "pairs": pairs, "median": med}, indent=1))
        return
    r = [p["time_ratio"] for p in pairs]
    print(f"{a.pairs} pairs at {h}x{w}, batch {a.batch}: time ratio {min(r):.2f}–{max(r):.2f} "
          f"(median {med['time_ratio']:.2f}), peak RSS ratio median {med['rss_ratio']:.2f}"
          + (f"; against TorchJD: median {med['torchjd_ratio']:.2f}" if a.torchjd else ""))


if __name__ == "__main__":
    main()
