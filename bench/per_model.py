#!/usr/bin/python3
"""Per-model view of a `paretonav bench multimnist` run: where each
method's five models end, one model at a time.

    /usr/bin/python3 bench/per_model.py RESULTS.json [--dataset NAME]

For every method (and ablation variant) and every model k (first-task
weight w_k = 0.1, 0.3, 0.5, 0.7, 0.9 of the warm-up; EPO's preference
ray r_k = (w_k, 1 - w_k)), averaged over the seeds:

- in box: how many of the model's checkpoints have both test losses
  below the hypervolume reference 0.6 (only those add to HV loss);
- HV alone: the loss hypervolume of that model's checkpoints by
  themselves (below (0.6, 0.6), as the benchmark measures it);
- first / last: the test losses at the first and the last checkpoint;
- for EPO, r1*l1 / r2*l2 at the first and the last checkpoint: EPO
  drives it toward 1, so a ray whose losses lie outside the box takes
  the model out of it.

Prints one Markdown table per dataset. Standard library only.
"""
import argparse
import collections
import json
import statistics

WEIGHTS = [0.1, 0.3, 0.5, 0.7, 0.9]  # finetune/bench LinearWeights
REF = 0.6  # finetune/bench LossRef


def hv2(points, ref=REF):
    """Hypervolume of 2-D loss vectors below (ref, ref)."""
    pts = sorted(p for p in points if p[0] < ref and p[1] < ref)
    vol, best = 0.0, ref
    for x, y in pts:
        if y < best:
            vol += (ref - x) * (best - y)
            best = y
    return vol


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("--dataset")
    args = ap.parse_args()
    with open(args.results) as f:
        res = json.load(f)
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    methods, datasets = [], []
    for run in res["runs"]:
        ds = run["dataset"]
        if args.dataset and ds != args.dataset:
            continue
        if ds not in datasets:
            datasets.append(ds)
        by = collections.defaultdict(list)
        for p in run["points"]:
            by[(p["method"], p["model"])].append(p)
            if p["method"] not in methods:
                methods.append(p["method"])
        for (m, k), pts in by.items():
            pts.sort(key=lambda p: p["step"])
            losses = [p["losses"] for p in pts]
            r = rows[(ds, m, k)]
            r["inbox"].append(sum(1 for l in losses if max(l) < REF))
            r["n"].append(len(losses))
            r["hv"].append(hv2(losses))
            r["first"].append(losses[0])
            r["last"].append(losses[-1])
            if m == "epo":
                w = WEIGHTS[k]
                ratio = [w * l[0] / ((1 - w) * l[1]) for l in losses]
                r["ratio_first"].append(ratio[0])
                r["ratio_last"].append(ratio[-1])
    mean = statistics.mean
    for ds in datasets:
        print(f"## {ds}\n")
        print("| method | model (w) | in box | HV alone | first (l1, l2) | last (l1, l2) | EPO r1l1/r2l2 first → last |")
        print("|---|---|---|---|---|---|---|")
        for m in methods:
            for k in range(len(WEIGHTS)):
                r = rows.get((ds, m, k))
                if not r:
                    continue
                first = [mean(x[i] for x in r["first"]) for i in range(2)]
                last = [mean(x[i] for x in r["last"]) for i in range(2)]
                ratio = ""
                if r["ratio_first"]:
                    ratio = f"{mean(r['ratio_first']):.2f} → {mean(r['ratio_last']):.2f}"
                print(f"| {m} | {k} ({WEIGHTS[k]:g}) | {mean(r['inbox']):.1f} of {mean(r['n']):g} | {mean(r['hv']):.4f} | "
                      f"{first[0]:.3f}, {first[1]:.3f} | {last[0]:.3f}, {last[1]:.3f} | {ratio} |")
        print()


if __name__ == "__main__":
    main()
