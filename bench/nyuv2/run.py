#!/usr/bin/env python3
"""The paper's NYUv2 experiment (PNG, appendix "Three-task learning on the
NYUv2 dataset") end to end on the procedural stand-in, in one command:

    .tools/bench-torch2/bin/python bench/nyuv2/run.py --out DIR

1. bench/nyuv2/standin.py writes DIR/data/{train,val} in lorenmt/mtan's
   NYUv2 layout (per-sample .npy, channels last);
2. bench/nyuv2/pretrain.py trains a reduced SegNet-MTAN (bench/torch_mtan.py
   at --width) on DIR/data/train with equal task weights and exports it to
   DIR/pretrained.onnx;
3. `paretonav tune` from that export toward the paper's criterion
   (seg*normal)/(0.001+depth), reading the per-sample folders directly
   (--data nyuv2:DIR/data/train; --source npz converts them to NPZ first),
   with the log (DIR/tune.jsonl), the figure (DIR/tune.png: F falling, g and
   e) and the JSON summary (DIR/tune.json); then the baseline: the same steps
   with equal weights (--method linear, DIR/linear.*), what continued
   training alone does from the same start (--no-baseline leaves it out);
4. the table of the paper (mIoU, pixel accuracy, depth abs/rel error, normal
   angle mean/median/within 11.25/22.5/30 degrees, before, after PNG and
   after the baseline, on the val split) to DIR/table.md and everything measured to DIR/results.json.

The interpreter running this script needs numpy and torch (2.x, as PyPI
ships it; the export is the Python package's own, python/paretonav/_export.py).
The paretonav binary is built from this checkout into DIR unless --paretonav
names one. Prints the wall time of every stage and of the whole run.
"""
import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

TASKS = ["seg:nll:seg_logp:label:ignore_index=-1", "depth:depth_l1:depth:depth", "normal:normal_cos:normal:normal"]
CRITERION = "(seg*normal)/(0.001+depth)"

# The paper's NYUv2 table (Ye & Liu 2022, appendix), in eval's units.
PAPER = {
    "Standard (paper, NYUv2)": [27.09, 56.36, 0.6143, 0.2618, 31.46, 27.37, 19.51, 41.71, 54.61],
    "PNG (paper, NYUv2)": [28.23, 56.66, 0.6161, 0.2632, 31.06, 26.50, 21.06, 43.41, 55.93],
}
COLUMNS = ["mIoU", "pix acc", "abs err", "rel err", "angle mean", "median", "within 11.25°", "22.5°", "30°"]


def row(metrics):
    """A table row from tune's metrics: percentages as the paper prints them."""
    s, d, n = metrics["seg"], metrics["depth"], metrics["normal"]
    return [100 * s["miou"], 100 * s["pixel_acc"], d["abs_err"], d["rel_err"], n["angle_mean"], n["angle_median"],
            100 * n["within_11.25"], 100 * n["within_22.5"], 100 * n["within_30"]]


def fmt(v, col):
    return "%.4f" % v if col in (2, 3) else "%.2f" % v


def table(before, after, linear_after, res, linear):
    """The markdown table: the paper's rows, then ours before and after
    (and after the equal-weights baseline), then the losses, F and g."""
    head = "| | " + " | ".join(COLUMNS) + " |\n|---|" + "---|" * len(COLUMNS) + "\n"
    lines = []
    for name, vals in PAPER.items():
        lines.append("| %s | %s |" % (name, " | ".join(fmt(v, i) for i, v in enumerate(vals))))
    ours = [("Equal weights (stand-in, before)", before), ("PNG (stand-in, after)", after)]
    if linear_after is not None:
        ours.append(("Equal weights continued (stand-in, baseline)", linear_after))
    for name, vals in ours:
        lines.append("| %s | %s |" % (name, " | ".join(fmt(v, i) for i, v in enumerate(vals))))
    t = head + "\n".join(lines) + "\n\n| stand-in, val | seg | depth | normal | F | g |\n|---|---|---|---|---|---|\n"
    rows = [("before", res["before"]), ("after PNG", res["after"])]
    if linear is not None:
        rows.append(("after the baseline", linear["after"]))
    for when, l in rows:
        t += "| %s | %.4f | %.4f | %.4f | %.4f | %.4f |\n" % (when, l["losses"]["seg"], l["losses"]["depth"],
                                                              l["losses"]["normal"], l["F"], l["g"])
    return t


def stage(name, cmd, log, env=None):
    """Runs cmd with its output appended to log; returns its wall time. A
    failing stage stops the run, naming the stage and the log."""
    t0 = time.perf_counter()
    with open(log, "a") as f:
        f.write("$ %s\n" % " ".join(shlex.quote(c) for c in cmd))
        f.flush()
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    dt = time.perf_counter() - t0
    if rc != 0:
        sys.exit("run: %s failed (exit %d) after %.1f s; its output is in %s" % (name, rc, dt, log))
    print("%-9s %7.1f s" % (name, dt), flush=True)
    return dt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="a new or empty folder for everything the run writes")
    ap.add_argument("--paretonav", help="the paretonav binary (default: go build this checkout into --out)")
    ap.add_argument("--source", choices=["nyuv2", "npz"], default="nyuv2",
                    help="how tune reads the data: nyuv2 (the per-sample folders, --data nyuv2:DIR) or npz "
                         "(the folders converted to NPZ, channels first) (default nyuv2)")
    ap.add_argument("--train", type=int, default=400, help="training samples (default 400)")
    ap.add_argument("--val", type=int, default=100, help="validation samples (default 100)")
    ap.add_argument("--size", default="64x96", help="HxW, multiples of 32 (default 64x96)")
    ap.add_argument("--seed", type=int, default=0, help="the stand-in's seed, the pretraining's and tune's")
    ap.add_argument("--width", type=int, default=8, help="MTAN width (the full model: 64) (default 8)")
    ap.add_argument("--epochs", type=int, default=12, help="pretraining epochs (default 12)")
    ap.add_argument("--steps", type=int, default=300, help="PNG steps (default 300)")
    ap.add_argument("--batch", type=int, default=8, help="tune's batch (default 8)")
    ap.add_argument("--lr", type=float, default=1e-4, help="tune's Adam learning rate (MTAN's: 1e-4)")
    ap.add_argument("--val-every", type=int, default=20, help="tune evaluates the val split every K steps")
    ap.add_argument("--baseline", action=argparse.BooleanOptionalAction, default=True,
                    help="also continue the pretrained model with equal weights (--method linear) for the same "
                         "steps, as the baseline: what more training alone does (default: on)")
    a = ap.parse_args(argv)

    t_all = time.perf_counter()
    out = os.path.abspath(a.out)
    if os.path.exists(out) and os.listdir(out):
        sys.exit("run: %s is not empty: give a new or empty --out" % out)
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, "run.log")
    times = {}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()

    binary = a.paretonav
    if binary is None:
        binary = os.path.join(out, "paretonav")
        times["build"] = stage("build", ["go", "build", "-o", binary, "."], log)
    binary = os.path.abspath(binary)

    data = os.path.join(out, "data")
    times["standin"] = stage("standin", [sys.executable, os.path.join(HERE, "standin.py"), "--out", data,
                                         "--train", str(a.train), "--val", str(a.val), "--size", a.size,
                                         "--seed", str(a.seed)], log)
    model = os.path.join(out, "pretrained.onnx")
    pre = [sys.executable, os.path.join(HERE, "pretrain.py"), "--data", data, "--out", model,
           "--width", str(a.width), "--epochs", str(a.epochs), "--seed", str(a.seed)]
    if a.source == "npz":
        pre += ["--npz", out]
    times["pretrain"] = stage("pretrain", pre, log)

    if a.source == "npz":
        train_src, val_src = os.path.join(out, "train.npz"), os.path.join(out, "val.npz")
    else:
        train_src, val_src = "nyuv2:" + os.path.join(data, "train"), "nyuv2:" + os.path.join(data, "val")
    runs = {}
    for name, method in (("tune", ["--method", "png"]), ("linear", ["--method", "linear", "--weights", "1,1,1"])):
        if name == "linear" and not a.baseline:
            continue
        summary = os.path.join(out, name + ".json")
        cmd = [binary, "tune", model, "--data", train_src, "--val", val_src]
        for t in TASKS:
            cmd += ["--task", t]
        cmd += ["--criterion", CRITERION] + method + [
            "--steps", str(a.steps), "--batch", str(a.batch), "--lr", str(a.lr), "--val-every", str(a.val_every),
            "--seed", str(a.seed + 1), "--log", os.path.join(out, name + ".jsonl"),
            "--plot", os.path.join(out, name + ".png"), "--out", os.path.join(out, name + ".onnx"), "--json"]
        t0 = time.perf_counter()
        with open(summary + ".part", "w") as f, open(log, "a") as lf:
            lf.write("$ %s > %s\n" % (" ".join(shlex.quote(c) for c in cmd), summary))
            lf.flush()
            rc = subprocess.call(cmd, stdout=f, stderr=lf, cwd=ROOT)
        times[name] = time.perf_counter() - t0
        if rc != 0:
            sys.exit("run: %s failed (exit %d) after %.1f s; its output is in %s" % (name, rc, times[name], log))
        os.replace(summary + ".part", summary)
        print("%-9s %7.1f s" % (name, times[name]), flush=True)
        with open(summary) as f:
            runs[name] = (cmd, json.load(f))

    cmd, res = runs["tune"]
    before, after = row(res["before"]["metrics"]), row(res["after"]["metrics"])
    linear = runs.get("linear", (None, None))[1]
    md = table(before, after, linear and row(linear["after"]["metrics"]), res, linear)
    steps = [json.loads(l) for l in open(os.path.join(out, "tune.jsonl")) if l.strip()]
    steps = [s for s in steps if "step" in s]
    times["total"] = time.perf_counter() - t_all
    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit + ("-dirty" if dirty else ""), "source": a.source, "command": " ".join(sys.argv),
        "settings": {k: v for k, v in vars(a).items() if k not in ("out", "paretonav")},
        "tune_command": " ".join(shlex.quote(c) for c in cmd), "columns": COLUMNS,
        "before": before, "after": after, "linear_after": linear and row(linear["after"]["metrics"]),
        "paper": PAPER,
        "losses": {w: {"losses": res[w]["losses"], "F": res[w]["F"], "g": res[w]["g"]} for w in ("before", "after")},
        "linear_losses": linear and {k: linear["after"][k] for k in ("losses", "F", "g")},
        "explanation": res.get("explanation", {}).get("lines"),
        "control_on_steps": sum(1 for s in steps if s.get("control")),
        "steps": len(steps), "wall_s": {k: round(v, 1) for k, v in times.items()},
    }
    with open(os.path.join(out, "results.json.part"), "w") as f:
        json.dump(results, f, indent=1)
    os.replace(os.path.join(out, "results.json.part"), os.path.join(out, "results.json"))
    with open(os.path.join(out, "table.md.part"), "w") as f:
        f.write(md)
    os.replace(os.path.join(out, "table.md.part"), os.path.join(out, "table.md"))
    print(md)
    for line in results["explanation"] or []:
        print(line)
    print("figure %s, table %s, results %s" % (os.path.join(out, "tune.png"), os.path.join(out, "table.md"),
                                               os.path.join(out, "results.json")))
    print("wall time %.1f s (%s)" % (times["total"], ", ".join("%s %.1f s" % (k, v) for k, v in times.items()
                                                               if k != "total")))


if __name__ == "__main__":
    main()
