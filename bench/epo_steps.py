#!/usr/bin/python3
"""What EPO's steps are on minibatches, from `paretonav tune --log` files.

    /usr/bin/python3 bench/epo_steps.py RUN.jsonl [RUN.jsonl ...]

For each log (any --method; the EPO columns only for --method epo):

- modes: how many steps were balance, descent or descent-relaxed;
- vertex: steps whose β has one weight ≥ 0.999 (the direction is one
  task's gradient), and of those, how many took the task whose weighted
  batch loss r_j·ℓ_j was the largest; switches: how often that task
  changed from one step to the next;
- μ: the median non-uniformity, and the share of steps with μ ≤ 1e-4
  (the EPO authors' threshold; paretonav's default is 1e-9);
- train: the mean batch losses over the last 32 steps;
- val: the validation losses of the last --val evaluation.

Standard library only.
"""
import json
import statistics
import sys


def main():
    for path in sys.argv[1:]:
        with open(path) as f:
            lines = [json.loads(l) for l in f if l.strip()]
        cfg = next(l for l in lines if l.get("kind") == "config")
        steps = [l for l in lines if "step" in l and "losses" in l]
        tasks = cfg["tasks"]
        out = [path, f"method {cfg['method']}"]
        if cfg["method"] == "epo":
            r = cfg["preference"][0]
            modes = {}
            vertex = top = switches = 0
            prev = None
            for s in steps:
                e = s["epo"]
                modes[e["mode"]] = modes.get(e["mode"], 0) + 1
                beta = e["beta"]
                j = max(range(len(beta)), key=lambda i: beta[i])
                if beta[j] >= 0.999:
                    vertex += 1
                    rl = [r[i] * s["losses"][t] for i, t in enumerate(tasks)]
                    top += j == max(range(len(rl)), key=lambda i: rl[i])
                    if prev is not None and j != prev:
                        switches += 1
                    prev = j
            mus = [s["epo"]["mu"] for s in steps]
            out.append("modes " + ", ".join(f"{k} {v}" for k, v in sorted(modes.items())))
            out.append(f"vertex {vertex} of {len(steps)} ({top} on the largest r·ℓ; {switches} switches)")
            out.append(f"μ median {statistics.median(mus):.2g}, ≤ 1e-4 on {sum(m <= 1e-4 for m in mus)} steps")
        last = steps[-32:]
        out.append("train (last 32) " + ", ".join(f"{statistics.mean(s['losses'][t] for s in last):.3f}" for t in tasks))
        vals = [s for s in steps if s.get("val_losses")]
        if vals:
            out.append(f"val (step {vals[-1]['step']}) " + ", ".join(f"{vals[-1]['val_losses'][t]:.3f}" for t in tasks))
        print("; ".join(out))


if __name__ == "__main__":
    main()
