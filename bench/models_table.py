#!/usr/bin/python3
"""One PNG step of each model of bench/step_models.py in paretonav and in
its PyTorch twin, in interleaved pairs, written as the table of
docs/bench-step.md.

    go build -o paretonav . && /usr/bin/python3 bench/models_table.py --paretonav ./paretonav

Options: --dir DIR (models and data, written once by step_models.py
export; default /tmp/paretonav-bench-step-TORCHVERSION), --models a,b
(default: the models of docs/bench-step.md; `zoo` stands for every model
of step_models.ZOO, the architectures of bench/torch2_zoo/check.py),
--pairs P (default 2), --steps K (timed steps per run, default 3),
--min-seconds S (at least S seconds of timed steps per run, default 10, so
that a small model's CPU profile has enough samples), --max-steps N
(default 10000), --threads T (GOMAXPROCS and torch threads, default 2), --out FILE (default
docs/bench-step.md; "-" prints the Markdown), --json FILE (every run's
numbers). A table of models of step_models.ZOO says so in a paragraph
before its table, and the command it gives to regenerate it names its
--models and --out. The zoo's table:

    go build -o paretonav . && /usr/bin/python3 bench/models_table.py --paretonav ./paretonav \
        --pairs 3 --models zoo --out docs/bench-step-zoo.md

Each pair runs `paretonav bench step --json --cpuprofile` on the model's
ONNX export and then `step_models.py time` on the same nn.Module (same
seed, same weights) with the same batch, tasks and number of steps.
Reported per model: the medians over pairs of both step times and their
ratio (paretonav / PyTorch), both peak RSS and their ratio, paretonav's
load + build time (and seconds per 100 MB of model file), and the share of
paretonav's step CPU time spent outside arithmetic kernels: samples of the
CPU profile whose innermost function is the Go runtime (allocation,
clearing, copying, garbage collection, preemption, scheduling), the
worker pool waiting, or backend code that converts or moves data rather
than computing (float64 copies, Transpose/Concat/Slice, buffer clears);
a second table splits that share by kind (allocation, clearing, copying,
scheduling, other: overhead_kind); a third gives the step's FLOPs counted
from its graph (direct and as executed, Winograd's where it runs), the
GFLOP/s they give and their share of the float32 GEMM rate each bench
step run measures (flops_row). `go tool pprof` must be on PATH for
those columns. The load averages at the
start and the end are written beside the table: timings from a busy
machine flatter PyTorch's threads less than ours (see bench/README.md).
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import step_models as sm  # noqa: E402
import torchenv  # noqa: E402

DESCRIPTIONS = {
    "lenet2": "two-head LeNet (MultiMNIST), 256 × 1×36×36",
    "mtan_small": "small SegNet/MTAN fixture, 8 × 3×32×32, 3 tasks",
    "vit2": "ViT fixture (2 layers, hidden 64), 4 × 3×32×32",
    "convnext2": "ConvNeXt fixture (16/32 ch), 4 × 3×32×32",
    "mbv3_small": "MobileNetV3-Small features + 2 heads, 4 × 3×64×64",
    "tfblock": "4 ViT encoder blocks (hidden 192), 4 × 3×32×32",
    "convnext_t": "ConvNeXt-T features + 2 heads, 4 × 3×64×64",
    "effnet_b0": "EfficientNet-B0 features + 2 heads, 4 × 3×64×64",
    "shufflenet": "ShuffleNetV2 ×0.5 + 2 heads, 4 × 3×64×64",
    "regnet_x": "RegNetX-400MF (grouped 3×3, 16 channels/group) + 2 heads, 4 × 3×64×64",
    "deeplab_mbv3": "DeepLabV3-MobileNetV3-Large, segmentation + depth, 4 × 3×64×64",
    "unet16": "UNet at width 16 (`bench/unet/make_unet.py`), segmentation + depth, 2 × 3×64×64",
}
for _n in sm.ZOO:  # the zoo's models as docs/pytorch2-exports.md names them
    if _n in sm.zoo.MODELS:
        _what, _variant, _, _shape, _ = sm.zoo.MODELS[_n]
        DESCRIPTIONS[_n] = "%s, `%s`, %d × %s" % (_what, _variant, _shape[0], "×".join(map(str, _shape[1:])))

# The backend's moves between layouts, their own loops as well as the
# copy calls they make: the depthwise convolution's phase planes and wide
# rows (dwSplit, dwSplit2Rows, dwMerge, dwMerge2Rows, dwWide and their
# float64 loops deinterleaveRows and interleaveRows), the batched
# convolution's planes (movePlanes, gatherGrad and gatherGradSamples), the
# trimmed convolution's weight copies, and vmath's kernels for them.
OPS_MOVES = (r"trimWeights|trimInto|spreadWeights|dwSplit\w*|dwMerge\w*|dwWide|deinterleaveRows|interleaveRows|"
             r"gatherGrad\w*|movePlanes")
VMATH_MOVES = r"PlusZero32|plusZeroAVX2|Deinterleave32Rows|Interleave32Rows|deinterleaveRowsAVX2|interleaveRowsAVX2"
# The executor's conversions and copies (float64 copies, Transpose's walks,
# the channel shuffle), and its allocation (values, float64 scratch, the
# buffer pool).
BACKEND_COPIES = (r"valueFloatsInto|readInputsInto|\(\*move32\)|\(\*transposeArgs\)|transposeRows|transposeLast2|"
                  r"shuffle(Slice)?(Fwd|Bwd)")
BACKEND_ALLOCS = r"MakeValue|makeValue32|\(\*F64Scratch\)|\(\*bufPool\)|outBuf32For"

# Innermost functions that are not arithmetic: the Go runtime, the worker
# pool, the executor's buffer pool (allocation: backend.(*bufPool)), and
# backend code that converts, copies or clears (kernels.trimWeights,
# trimInto and spreadWeights move a trimmed convolution's taps between the
# whole kernel and the smaller one; Transpose's walks, the channel shuffle's
# plane copies and vmath.PlusZero32, the gradient copies of the data
# movements, are copies too, as are transposeLast2's 8×8 blocks through
# gemm.TransposeRows and, under it, the AVX2 transpose8 that gemm's
# packing also runs: counted only under TransposeRows, see UNDER), and the
# backend's moves between layouts (OPS_MOVES, VMATH_MOVES), their own
# loops as well as their runtime.memmove and memclr calls.
# runtime.asyncPreempt is left out: on a busy machine the profile
# attributes to it samples of the code it interrupted (with
# GODEBUG=asyncpreemptoff=1 its share, a fifth of a transformer block's
# step at load 17, moves to the kernels and the total stays the same).
OVERHEAD = re.compile(r"^(runtime\.(?!asyncPreempt)|internal/runtime|sync\.|.*internal/par\.|"
                      r".*backend(/internal/(graph|onnxops))?\.(readF32|" + BACKEND_COPIES + "|" + BACKEND_ALLOCS + r")|"
                      r".*backend/internal/gemm\.TransposeRows|"
                      r".*backend/internal/kernels\.(ClearPar|" + OPS_MOVES + r")\b|"
                      r".*backend/internal/vmath\.(" + VMATH_MOVES + r")\b|.*hugepages\.)")


def run(cmd, env=None, what=""):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"models_table: {what} failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr.strip()[-3000:]}")
    return p.stdout


# The pool's frames: a sample whose innermost of them is the worker's idle
# loop or a caller's wait is a core polling (or going to sleep) for work;
# one under a job's run, runOne or call is a chunk of a loop (a waiting
# caller runs chunks of other loops through runOne), whatever waits inside.
# Innermost functions that are overhead only under a given caller (the next
# frame): gemm's AVX2 transpose8 moves data for a Transpose under
# TransposeRows and packs a matrix product's operands under packing.
UNDER = [(re.compile(r".*backend/internal/gemm\.transpose8$"), re.compile(r".*backend/internal/gemm\.TransposeRows"))]

POOL_FRAME = re.compile(r".*internal/par\.(worker|\(\*job\)\.(wait|run|runOne|call))( \(inline\))?$")
POOL_RUNNING = re.compile(r".*\.(run|runOne|call)( \(inline\))?$")
UNITS = {"ms": 1e-3, "s": 1, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60, "h": 3600, None: 1}


# What each outside-kernels sample is, by its stack (first match wins):
# "scheduling" is the pool waiting (see POOL_FRAME) and the runtime's and
# sync's thread sleeps, wake-ups and locks; "allocation" the allocator,
# the collector, the executor's buffer pool and huge-page advice;
# "clearing" zeroing buffers; "copying" moving or converting data; "other"
# the rest (map look-ups, hashing, the type switches of readF32 and other
# bookkeeping of the executor). docs/performance.md reads the sum of
# allocation, clearing and copying against its 10% bound and gives
# scheduling beside it.
KINDS = ("allocation", "clearing", "copying", "scheduling", "other")
ALLOC_FRAME = re.compile(r"^runtime\.(mallocgc|newobject|makeslice|growslice|makemap|makechan|gcBgMarkWorker|"
                         r"gcAssistAlloc|gcDrain|gcStart|gcMarkDone|gcMarkTermination|bgsweep|bgscavenge|sweepone|"
                         r"markroot|scanobject|scanObject|mProf|(\(\*mheap\)|\(\*mcache\)|\(\*mcentral\))\.)|"
                         r".*backend(/internal/graph)?\.(" + BACKEND_ALLOCS + r")|.*hugepages\.")
SCHED_FRAME = re.compile(r"^(runtime\.(futex|schedule|findRunnable|park_m|mcall|stopm|startm|wakep|notesleep|"
                         r"notewakeup|ready|goready|lock2|unlock2|osyield|procyield|usleep|runqgrab|gopark|"
                         r"chansend|chanrecv|closechan|selectgo|semacquire|semrelease|sysmon)|sync\.|.*internal/par\.)")
CLEAR_LEAF = re.compile(r"^(runtime\.memclr|.*backend/internal/kernels\.ClearPar)")
COPY_LEAF = re.compile(r"^(runtime\.(memmove|typedmemmove|typedslicecopy|wbMove|bulkBarrierPreWrite)|"
                       r".*backend/internal/(graph|onnxops)\.(" + BACKEND_COPIES + r")|.*backend/internal/gemm\.(TransposeRows|transpose8)|"
                       r".*backend/internal/kernels\.(" + OPS_MOVES + r")\b|"
                       r".*backend/internal/vmath\.(" + VMATH_MOVES + r")\b)")


def overhead_kind(frames):
    """The kind (KINDS) of an outside-kernels sample that is not the pool waiting, by its stack
    (innermost frame first): its innermost frame and the outside-kernels frames that called it,
    up to the first kernel or op (a worker's frames under a kernel are not the kernel's kind)."""
    prefix = [frames[0]]
    for f in frames[1:]:
        if not OVERHEAD.match(f):
            break
        prefix.append(f)
    if any(ALLOC_FRAME.match(f) for f in prefix):
        return "allocation"
    if CLEAR_LEAF.match(frames[0]):
        return "clearing"
    if COPY_LEAF.match(frames[0]):
        return "copying"
    if any(SCHED_FRAME.match(f) for f in prefix):
        return "scheduling"
    return "other"


def overhead_share(binary, prof):
    """The share of the profile's samples outside arithmetic kernels, the part of it that is the pool
    waiting for work, the number of samples (the profile's CPU time in units of pprof's 10 ms
    sampling period), and the share of each kind (KINDS, overhead_kind).

    Every stack of the profile is read (pprof -traces), so nothing is dropped
    (pprof -top leaves out nodes under half a percent of the samples, mostly
    small runtime functions). A sample is overhead when its innermost
    function matches OVERHEAD, or when it is the pool waiting: its innermost
    pool frame is a worker's idle loop or a caller's wait (the clock reads
    and futex calls of that polling included).
    """
    try:
        out = subprocess.run(["go", "tool", "pprof", "-traces", binary, prof],
                             capture_output=True, text=True, timeout=300).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None, None, None, None
    m = re.search(r"Total samples = ([\d.]+)(ms|s|us|µs|ns|min|h)?", out)
    want = float(m.group(1)) * UNITS[m.group(2)] if m else None
    total, over, waiting = 0.0, 0.0, 0.0
    kinds = dict.fromkeys(KINDS, 0.0)
    for block in out.split("-----------+")[1:]:
        lines = [ln for ln in block.splitlines()[1:] if ln.strip()]
        if not lines:
            continue
        m = re.match(r"\s*([\d.]+)(ms|s|us|µs|ns|min|h)?\s+(.*)$", lines[0])
        if not m:
            continue
        v = float(m.group(1)) * UNITS[m.group(2)]
        frames = [m.group(3).strip()] + [ln.strip() for ln in lines[1:]]
        total += v
        pool = next((f for f in frames if POOL_FRAME.match(f)), "")
        if pool and not POOL_RUNNING.match(pool):
            waiting += v
            over += v
            kinds["scheduling"] += v
        elif OVERHEAD.match(frames[0]) or any(
                leaf.match(frames[0]) and len(frames) > 1 and caller.match(frames[1]) for leaf, caller in UNDER):
            over += v
            kinds[overhead_kind(frames)] += v
    if want is None or abs(total - want) > 0.01 * want + 0.011:
        sys.exit(f"models_table: pprof of {prof} lists {total:.2f} s of samples, its header says {want} s")
    if not total:
        return None, None, 0, None
    return over / total, waiting / total, round(total / 0.01), {k: v / total for k, v in kinds.items()}


def fewest_samples(rows):
    """The clause naming the smallest profile behind the outside-kernels column."""
    have = [r for r in rows if r.get("profile_samples")]
    if not have:
        return ""
    r = min(have, key=lambda r: r["profile_samples"])
    return (" (each model's profiles hold at least %d samples of 10 ms, %s's, one sample %.2f%% of"
            " its share)" % (r["profile_samples"], r["model"], 100 / r["profile_samples"]))


def load_build_cell(times, file_mb, disk=None):
    """Every run's load + build time, and per 100 MB of file for files of 10 MB or more; with
    the megabytes a run read from disk (not from the page cache) beside its time, where over 1 MB.

    Every run is given rather than the median: one run of a pair can take
    several times the other's on this host (a 111 MB file read 0.27 s and
    2.27 s in one table), and a median of two hides which it was.
    """
    disk = disk or [None] * len(times)
    cell = ", ".join(f"{t:.2f} s" + (f" ({d / 1e6:.0f} MB from disk)" if d and d > 1e6 else "")
                     for t, d in zip(times, disk))
    if file_mb >= 10:
        cell += f" ({file_mb:.0f} MB: " + ", ".join(f"{t / file_mb * 100:.2f}" for t in times) + " s per 100 MB)"
    return cell


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paretonav", default="./paretonav")
    ap.add_argument("--dir", default="",
                    help="models and data, written once (default /tmp/paretonav-bench-step-TORCHVERSION)")
    ap.add_argument("--python", default="",
                    help="the interpreter of the PyTorch twins (default: the venv of bench/torchenv.py, PyPI's "
                         "torch with MKL and oneDNN, made on first use)")
    ap.add_argument("--models", default="",
                    help="comma-separated models of bench/step_models.py (default: those of docs/bench-step.md); "
                         "zoo: every model of its ZOO, the architectures of bench/torch2_zoo/check.py")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=10.0,
                    help="time at least this many seconds of steps per run (more steps for small models): "
                         "at 10 ms a sample, the CPU profile of a 3 ms step then holds 1,500–2,000 samples "
                         "on two cores, and the sampling error of a 12%% outside-kernels share is under a "
                         "point (0.7–0.8), against about a point at 5 s")
    ap.add_argument("--max-steps", type=int, default=10000,
                    help="at most this many timed steps per run (the bound of --min-seconds)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "docs", "bench-step.md"),
                    help="the Markdown file written (default docs/bench-step.md; the zoo's: "
                         "docs/bench-step-zoo.md; -: print it)")
    ap.add_argument("--json", default="")
    ap.add_argument("--scaling", action=argparse.BooleanOptionalAction, default=True,
                    help="also time paretonav on one thread (GOMAXPROCS=1): the speed-up column")
    ap.add_argument("--recount", default="",
                    help="measure nothing: rewrite --out from the --json FILE of an earlier run, counting its "
                         "CPU profiles (still in --dir) again with this script's classification; --paretonav "
                         "must be the build that run measured")
    ap.add_argument("--started", default="", help="with --recount: the run's start, where its JSON lacks it")
    a = ap.parse_args()
    binary = os.path.abspath(a.paretonav)
    if not os.access(binary, os.X_OK):
        sys.exit(f"models_table: --paretonav {a.paretonav}: not an executable (build it: go build -o paretonav .)")
    if a.recount:
        recount(a, binary)
        return
    py = torchenv.python(a.python)
    build = torchenv.describe(py)
    a.dir = a.dir or "/tmp/paretonav-bench-step-" + re.sub(r"[^0-9A-Za-z.]", "_", build["torch"])
    names = select(a.models)
    run([py, os.path.join(HERE, "step_models.py"), "export", "--dir", a.dir, "--only", ",".join(names)],
        what="export")
    env = dict(os.environ, GOMAXPROCS=str(a.threads))
    # The export (and the build before it) leave their own load in the
    # 1-minute average; give it up to two minutes to decay so that the load
    # written beside the table is other processes', not ours.
    for _ in range(24):
        if float(loadavg().split()[0]) <= 0.5 * a.threads:
            break
        time.sleep(5)
    load_start, started = loadavg(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows, raw = [], {}
    for name in names:
        _, shape, _, specs, _, _ = sm.MODELS[name]
        onnx, npz = os.path.join(a.dir, name + ".onnx"), os.path.join(a.dir, name + ".npz")
        ours, theirs = [], []
        steps = a.steps
        if a.min_seconds > 0:  # enough timed steps for a CPU profile of min_seconds
            cmd = [binary, "bench", "step", onnx, "--data", npz, "--batch", str(shape[0]), "--steps", "1", "--json"]
            for s in specs:
                cmd += ["--task", s]
            est = json.loads(run(cmd, env, f"paretonav bench step {name} (calibration)"))["median_s"]
            steps = max(a.steps, min(a.max_steps, int(a.min_seconds / max(est, 1e-4)) + 1))
        for p in range(a.pairs):
            prof = os.path.join(a.dir, f"{name}.{p}.prof")
            cmd = [binary, "bench", "step", onnx, "--data", npz, "--batch", str(shape[0]), "--steps", str(steps),
                   "--json", "--cpuprofile", prof]
            for s in specs:
                cmd += ["--task", s]
            o = json.loads(run(cmd, env, f"paretonav bench step {name}"))
            o["outside_kernels"], o["pool_waiting"], o["profile_samples"], o["outside_kinds"] = overhead_share(binary, prof)
            ours.append(o)
            theirs.append(json.loads(run([py, os.path.join(HERE, "step_models.py"), "time", name,
                                          "--dir", a.dir, "--steps", str(steps), "--threads", str(a.threads)],
                                         what=f"PyTorch twin {name}")))
            print(f"{name} pair {p + 1}: paretonav {o['median_s']:.4f} s, PyTorch {theirs[-1]['median_s']:.4f} s",
                  file=sys.stderr)
        one = None
        if a.scaling and a.threads > 1:  # parallel efficiency: the same run on one thread
            cmd = [binary, "bench", "step", onnx, "--data", npz, "--batch", str(shape[0]), "--steps", str(steps), "--json"]
            for s in specs:
                cmd += ["--task", s]
            one = json.loads(run(cmd, dict(os.environ, GOMAXPROCS="1"), f"paretonav bench step {name} (1 thread)"))
        med = lambda xs: statistics.median(xs)  # noqa: E731
        t_o, t_t = med([o["median_s"] for o in ours]), med([t["median_s"] for t in theirs])
        r_o, r_t = med([o["peak_rss_bytes"] for o in ours]), med([t["peak_rss_bytes"] for t in theirs])
        lbs = [o["load_build_s"] for o in ours]
        lb = med(lbs)
        mb = os.path.getsize(onnx) / 1e6
        row = {"model": name, "params": ours[0]["params"], "file_mb": mb, "paretonav_s": t_o, "torch_s": t_t,
               "time_ratio": t_o / t_t, "ratios": [o["median_s"] / t["median_s"] for o, t in zip(ours, theirs)],
               "paretonav_rss": r_o, "torch_rss": r_t, "rss_ratio": r_o / r_t, "load_build_s": lb,
               "load_builds": lbs,
               "load_disk_bytes": [o.get("load_phases", {}).get("disk_read_bytes") for o in ours],
               "steps": steps,
               "allocs": med([o["allocs_per_step"] for o in ours]) if all("allocs_per_step" in o for o in ours) else None,
               "speedup": one["median_s"] / t_o if one else None}
        if all("direction_share" in o for o in ours):  # bench step times tune's steps, the direction as tune computes it
            row["tune_s"] = med([o["tune_median_s"] for o in ours])
            row["direction_share"] = med([o["direction_share"] for o in ours])
            row["max_over_median"] = max(o["max_over_median"] for o in ours)
        count_row(row, ours)
        flops_row(row, ours)
        rows.append(row)
        raw[name] = {"paretonav": ours, "torch": theirs}
    load_end = loadavg()
    write(a, rows, raw, started, load_start, load_end, torchenv.label(build))


def count_row(row, ours):
    """Sets row's outside-kernels fields from its runs' counts (overhead_share's, in ours)."""
    med = statistics.median
    shares = [o["outside_kernels"] for o in ours if o["outside_kernels"] is not None]
    waits = [o["pool_waiting"] for o in ours if o["pool_waiting"] is not None]
    row["outside_kernels"] = med(shares) if shares else None
    row["outside_each"] = shares
    row["pool_waiting"] = med(waits) if waits else None
    row["profile_samples"] = min((o["profile_samples"] for o in ours if o["profile_samples"]), default=None)
    row["kinds"] = ({k: med([o["outside_kinds"][k] for o in ours]) for k in KINDS}
                    if all(o.get("outside_kinds") for o in ours) else None)


def flops_row(row, ours):
    """Sets row's FLOPs fields from its runs (bench step's flops, GFLOP/s
    and the GEMM peak measured in each run): the counts are the graph's,
    the same in every run; the rates and the share are medians over the
    pairs. Runs of a paretonav that does not count FLOPs leave them None."""
    if not all("flops" in o and "peak_gemm_gflops" in o for o in ours):
        row["flops"] = None
        return
    med = statistics.median
    row["flops"] = ours[0]["flops"]
    for k in ("gflops_direct", "gflops_executed", "peak_gemm_gflops", "peak_share"):
        row[k] = med([o[k] for o in ours])


def recount(a, binary):
    """--recount: the table of an earlier run (its --json), its profiles counted again."""
    with open(a.recount) as f:
        d = json.load(f)
    started = d.get("started") or a.started
    if not started:
        sys.exit(f"models_table: --recount {a.recount}: the run's start is not in it; give --started")
    for row in d["rows"]:
        ours = d["runs"][row["model"]]["paretonav"]
        for p, o in enumerate(ours):
            prof = os.path.join(a.dir, f"{row['model']}.{p}.prof")
            if not os.path.exists(prof):
                sys.exit(f"models_table: --recount: {prof}: no such profile (the run's --dir?)")
            o["outside_kernels"], o["pool_waiting"], o["profile_samples"], o["outside_kinds"] = overhead_share(binary, prof)
        count_row(row, ours)
    torch_version = d.get("torch_version") or torchenv.label(torchenv.describe(torchenv.python(a.python)))
    write(a, d["rows"], d["runs"], started, d["load_start"], d["load_end"], torch_version)


def select(models):
    """The models a --models value names, in its order: step_models.DEFAULT for none, every model of
    step_models.ZOO for `zoo`; exits naming an unknown one."""
    names = [m for n in models.split(",") if n for m in (sm.ZOO if n == "zoo" else [n])] or list(sm.DEFAULT)
    for n in names:
        if n not in sm.MODELS:
            sys.exit(f"models_table: --models: unknown model {n!r} (known: {', '.join(sm.MODELS)}; zoo: all of "
                     f"{', '.join(sm.ZOO)})")
    return names


def command(a):
    """The command that writes a.out: the default table's, or with the --models and --out given."""
    cmd = "go build -o paretonav . && /usr/bin/python3 bench/models_table.py --paretonav ./paretonav"
    if a.pairs != 2:
        cmd += " --pairs %d" % a.pairs
    if a.models:
        cmd += " --models " + a.models
    default_out = os.path.abspath(os.path.join(HERE, "..", "docs", "bench-step.md"))
    if a.out != "-" and os.path.abspath(a.out) != default_out:
        repo = os.path.dirname(HERE)
        out = os.path.abspath(a.out)
        cmd += " --out " + (os.path.relpath(out, repo) if out.startswith(repo + os.sep) else out)
    return cmd


def zoo_intro(names):
    """The paragraph before a table of step_models.ZOO's models: which they are and how they are exported."""
    what = lambda n: "UNet (ours) at width 16" if n == "unet16" else sm.zoo.MODELS[n][0]  # noqa: E731
    text = (
        "The architectures of `bench/torch2_zoo/check.py` (the table of [pytorch2-exports.md](pytorch2-exports.md)):"
        " %s. Each is check.py's model (its builder, variant and random initialisation perturbed as a"
        " trained checkpoint's would be) with its two heads (classification `cls`, nll, and regression"
        " `reg`, mse; the UNets' per-pixel `seg`, nll over 4 classes, and `depth`, mse), on check.py's"
        " batch of 2 and input size (`unet16`: the same UNet at width 16 on 3×64×64, as"
        " `bench/unet/make_unet.py` makes it; the rows give each variant and input). Each is exported"
        " as check.py exports it, the file paretonav trains every parameter of: the TorchScript exporter"
        " at opset 20, `TrainingMode.PRESERVE`, no constant folding, after `model.train(); model.eval()`"
        " (with check.py's switch for the model where that call fails). PyTorch's twin runs the module as"
        " its users do (timm's fused attention on)."
        % ", ".join("`%s` (%s)" % (n, what(n)) for n in names))
    return textwrap.wrap(text, 100, break_on_hyphens=False) + [""]


def write(a, rows, raw, started, load_start, load_end, torch_version):
    """Writes the tables to a.out (and every run's numbers to a.json)."""
    zoo = [r["model"] for r in rows if r["model"] in sm.ZOO]
    lines = [
        "# One PNG step per model: paretonav against PyTorch" + (", the PyTorch 2.x zoo" if zoo else ""),
        "",
    ] + (zoo_intro(zoo) if zoo else []) + [
        "Written by `bench/models_table.py` (regenerate from the repository root; it makes the",
        "PyTorch venv of `bench/torchenv.py` on first use, versions pinned there, and exports the",
        "models into `--dir` once, about a minute):",
        "",
        "    " + command(a),
        "",
        "A step is one forward pass, one backward pass per task (every row of J) and the PNG",
        "direction as `tune` computes it, within Adam's step bound (`paretonav bench step`);",
        "PyTorch's twin (`bench/step_models.py time`, the same nn.Module and weights as the export)",
        "runs the forward pass, one `torch.autograd.grad` per task and J·Jᵀ. Both on %d threads, at least %d timed steps per run (more for small"
        % (a.threads, a.steps),
        "models: at least %.0f s of steps, the `steps` column) after one untimed one," % a.min_seconds,
        "%d interleaved pairs per model; the table gives medians over the pairs." % a.pairs,
        "",
        f"Measured {started} on {cpu_name()} ({os.cpu_count()} cores) against {torch_version};"
        f" load average (1, 5, 15 min) {load_start} at the start, {load_end} at the end."
        + (" **The machine was busy: the ratios flatter paretonav** (PyTorch's threads suffer more"
           " under load); rerun on an idle machine." if float(load_start.split()[0]) > 0.5 * a.threads
           else " (The load at the end counts the benchmark's own threads.)"),
        "",
        "| model | params | paretonav step | PyTorch step | time ratio (pairs) | paretonav RSS | PyTorch RSS |"
        " RSS ratio | load + build | outside kernels | objects per step | 1 → %d threads | steps |" % a.threads,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ok = "" if r["outside_kernels"] is None else (
            f"{100 * r['outside_kernels']:.0f}% (" + ", ".join(f"{100 * x:.0f}" for x in r.get("outside_each", []))
            + f"; waiting {100 * r['pool_waiting']:.0f}%)")
        pairs = ", ".join(f"{x:.2f}" for x in r["ratios"])
        sp = "" if r["speedup"] is None else f"{r['speedup']:.2f}×"
        lb = load_build_cell(r["load_builds"], r["file_mb"], r.get("load_disk_bytes"))
        al = "" if r.get("allocs") is None else f"{r['allocs']:.0f}"
        lines.append(
            f"| `{r['model']}`: {DESCRIPTIONS.get(r['model'], '')} | {r['params'] / 1e6:.2f} M |"
            f" {r['paretonav_s']:.4f} s | {r['torch_s']:.4f} s | **{r['time_ratio']:.2f}** ({pairs}) |"
            f" {r['paretonav_rss'] / 1e6:.0f} MB | {r['torch_rss'] / 1e6:.0f} MB | {r['rss_ratio']:.2f} |"
            f" {lb} | {ok} | {al} | {sp} | {r['steps']} |")
    lines += [
        "",
        "What the outside-kernels share is made of (percent of the step's CPU profile, median over the",
        "pairs; `bench/models_table.py`, `overhead_kind`): allocation (the allocator, the garbage",
        "collector, the executor's buffer pool), clearing (zeroing buffers), copying (moving and",
        "converting data: Transpose, Concat, Slice, the channel shuffle, im2col's and the depthwise",
        "convolution's moves), scheduling (the worker pool waiting for work, thread sleeps and",
        "wake-ups, locks) and the rest (the executor's map look-ups and hashing).",
        "",
        "| model | allocation | clearing | copying | allocation + clearing + copying | scheduling (of it, pool waiting) | other |",
        "|---|---|---|---|---|---|---|",
    ]
    if all(r.get("direction_share") is not None for r in rows):
        i = lines.index("What the outside-kernels share is made of (percent of the step's CPU profile, median over the") - 1
        lines[i:i] = [
            "",
            "The direction as `tune` computes it (`bench step` runs tune's own steps: Adam at tune's",
            "default rate, F the sum of the losses): PNG's direction from J and its update of Adam's step",
            "held within Adam's per-weight step bound (`png.PNG.Constrain`), its share of the whole tune",
            "step (the paretonav step above plus Adam's update of the weights; median over the pairs), and",
            "the slowest timed tune step over the median (the largest of the pairs').",
            "",
            "| model | tune step | direction share | slowest / median |",
            "|---|---|---|---|",
        ] + [f"| `{r['model']}` | {r['tune_s']:.4f} s | {100 * r['direction_share']:.1f}% | {r['max_over_median']:.2f} |"
             for r in rows]
    for r in rows:
        k = r.get("kinds")
        if not k:
            continue
        acc = k["allocation"] + k["clearing"] + k["copying"]
        lines.append(f"| `{r['model']}` | {100 * k['allocation']:.1f} | {100 * k['clearing']:.1f} |"
                     f" {100 * k['copying']:.1f} | **{100 * acc:.1f}** | {100 * k['scheduling']:.1f}"
                     f" ({100 * r['pool_waiting']:.1f}) | {100 * k['other']:.1f} |")
    lines += [
        "",
        "How close to the limit: the floating-point operations of a step counted from its graph",
        "(`paretonav bench step`'s `flops`: the products of the convolutions, Gemm and MatMul nodes",
        "of the forward pass and of every task's backward pass, two per multiply-add; element-wise",
        "work not counted), as direct convolutions (every kernel tap: the usual count) and as",
        "executed (3×3 convolutions that run as Winograd F(2×2, 3×3) do 2.25× fewer multiplications;",
        "taps that read only padding dropped), the rates they give over paretonav's median step, the",
        "float32 GEMM rate measured in the same runs on the same threads (`%d×%d` products, the"
        % (1536, 1536),
        "machine's practical peak), and the executed rate's share of it (medians over the pairs).",
        "",
        "| model | GFLOP a step (direct) | of it in Winograd convolutions | GFLOP executed | GFLOP/s direct |"
        " GFLOP/s executed | peak measured (GEMM) | share of peak |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f = r.get("flops")
        if not f:
            continue
        wino = f["winograd"] / f["direct"] if f["direct"] else 0
        lines.append(f"| `{r['model']}` | {f['direct'] / 1e9:.3g} | {100 * wino:.0f}% | {f['executed'] / 1e9:.3g} |"
                     f" {r['gflops_direct']:.1f} | {r['gflops_executed']:.1f} | {r['peak_gemm_gflops']:.1f} |"
                     f" **{100 * r['peak_share']:.0f}%** |")
    lines += [
        "",
        "Time ratio: paretonav's median step over PyTorch's (below 1: paretonav is faster). RSS: each",
        "process's peak resident memory (ru_maxrss), the whole process. Load + build: reading the ONNX",
        "file and building the step's graph, each run's (per 100 MB of file for files of 10 MB or more;",
        "a run that read the model or the program from disk rather than the page cache says how much).",
        "Outside kernels: the share of paretonav's step CPU profile (median, each run's, and the part",
        "that is the worker pool waiting) whose innermost function is the Go runtime (allocation,",
        "clearing, copying, garbage collection, scheduling; not asyncPreempt, whose samples belong",
        "to the code it interrupts), the executor's buffer pool (allocation), or backend code that",
        "converts or moves data rather than computing",
        "(float64 copies; Transpose, Concat, Slice and the channel shuffle; the depthwise convolution's",
        "moves into and out of its phase planes; the batched convolution's moves of its planes between",
        "the [N, C, …] layout and its products'; the trimmed convolution's weight copies; buffer clears),",
        "or that is the worker pool waiting",
        "for work: an idle worker polling for the next loop, or a caller polling for its loop's last",
        "chunk, with the clock reads and thread sleeps and wake-ups of that polling%s."
        % fewest_samples(rows),
        "Objects per step: the heap objects a timed step allocates (median over the pairs), the",
        "garbage the collector must later free. 1 → %d threads: paretonav's step on one"
        % a.threads,
        "thread (GOMAXPROCS=1, one run) over its median on %d (parallel efficiency: %d× is ideal)."
        % (a.threads, a.threads),
        "",
    ] + ([
        "This PyTorch runs `torch.mm` (the backward passes' matrix products, J·Jᵀ) through the",
        "reference BLAS: models made of matrix products (`tfblock`, the Linears of `convnext_t`)",
        "flatter paretonav in their ratios. It is no anchor; the tables users should read are",
        "measured against PyPI's torch (the default).",
        "",
    ] if "reference BLAS" in torch_version else [])
    text = "\n".join(lines)
    if a.out == "-":
        print(text)
    else:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, a.out)
        print(f"wrote {a.out}", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "runs": raw, "load_start": load_start, "load_end": load_end,
                       "started": started, "torch_version": torch_version}, f, indent=1)


if __name__ == "__main__":
    main()
