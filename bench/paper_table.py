#!/usr/bin/python3
"""The tables of `paretonav bench multimnist` runs beside the PNG paper's
(Ye & Liu 2022, Table 1 and the appendix's ablation table), in the
paper's units (10^-2).

    /usr/bin/python3 bench/paper_table.py RESULTS.json [RESULTS.json ...]

Each results.json contributes its main table (one per dataset) and, when
the run had --ablation, its ablation table. A cell reads "here | paper":
mean ± std over the seeds of this run, then the paper's. Below each
table, the paired t-tests of PNG against every baseline (or, for the
ablation, of the default α = 0.5, γ = 0.1 against every variant): the
two-sided p, and which side the mean difference favours. Standard
library only.
"""
import argparse
import json

METRICS = ["hv_loss", "igd_loss", "hv_acc", "igd_acc"]
TITLES = {"hv_loss": "HV loss ↑", "igd_loss": "IGD+ loss ↓", "hv_acc": "HV acc ↑", "igd_acc": "IGD+ acc ↓"}
HIGHER = {"hv_loss": True, "igd_loss": False, "hv_acc": True, "igd_acc": False}
METHODS = ["linear", "mgd", "epo", "png"]

# Table 1 of the paper, 10^-2 units, (mean, std) per metric in METRICS
# order. Its "Fashion-MNIST" rows are Multi-(Fashion+MNIST), the
# benchmark's fashionmnist.
PAPER = {
    "multimnist": {
        "linear": [(7.48, 0.11), (0.142, 0.034), (9.27, 0.024), (0.036, 0.0084)],
        "mgd": [(7.69, 0.10), (0.051, 0.011), (9.27, 0.023), (0.008, 0.0010)],
        "epo": [(7.87, 0.16), (0.069, 0.028), (9.17, 0.032), (0.065, 0.0181)],
        "png": [(7.86, 0.11), (0.042, 0.012), (9.39, 0.036), (0.006, 0.0022)],
    },
    "multifashion": {
        "linear": [(0.38, 0.059), (0.127, 0.013), (4.76, 0.019), (0.064, 0.012)],
        "mgd": [(0.42, 0.064), (0.046, 0.016), (4.77, 0.019), (0.023, 0.003)],
        "epo": [(0.36, 0.058), (0.308, 0.109), (4.78, 0.030), (0.211, 0.020)],
        "png": [(0.47, 0.066), (0.016, 0.002), (4.81, 0.021), (0.023, 0.003)],
    },
    "fashionmnist": {
        "linear": [(5.01, 0.057), (0.167, 0.054), (8.46, 0.046), (0.110, 0.035)],
        "mgd": [(5.09, 0.069), (0.060, 0.029), (8.40, 0.045), (0.049, 0.011)],
        "epo": [(4.60, 0.166), (0.233, 0.054), (8.12, 0.041), (0.385, 0.077)],
        "png": [(5.27, 0.054), (0.048, 0.027), (8.53, 0.047), (0.046, 0.022)],
    },
}

# The appendix's ablation table (Multi-MNIST), rows by the benchmark's
# variant names; "png" is α = 0.5, γ = 0.1 (the paper prints it twice,
# 7.86 ± 0.12 / 0.043 ± 0.012 / 9.39 ± 0.038 / 0.0056 ± 0.002 both times).
PAPER_ABLATION = {
    "png_a0.25_g0.1": [(7.89, 0.11), (0.041, 0.012), (9.39, 0.038), (0.0056, 0.002)],
    "png": [(7.86, 0.12), (0.043, 0.012), (9.39, 0.038), (0.0056, 0.002)],
    "png_a0.75_g0.1": [(7.84, 0.11), (0.045, 0.013), (9.38, 0.037), (0.0057, 0.002)],
    "png_a0.5_g0.01": [(7.86, 0.12), (0.042, 0.012), (9.39, 0.038), (0.0056, 0.002)],
    "png_a0.5_g0.25": [(7.85, 0.11), (0.042, 0.012), (9.39, 0.036), (0.0056, 0.002)],
}
ABLATION_ROWS = [("png_a0.25_g0.1", "γ = 0.1, α = 0.25"), ("png", "α = 0.5, γ = 0.1 (the main table's png)"),
                 ("png_a0.75_g0.1", "γ = 0.1, α = 0.75"), ("png_a0.5_g0.01", "α = 0.5, γ = 0.01"),
                 ("png_a0.5_g0.25", "α = 0.5, γ = 0.25")]


def fmt(x):
    return f"{x:.3g}"


def cell(c, paper):
    here = f"{fmt(100 * c['mean'])} ± {fmt(100 * c['std'])}" if c and c.get("mean") is not None else "–"
    return f" {here} \\| {paper[0]:g} ± {paper[1]:g} |"


def test_row(name, cells, metrics, ref):
    out = f"| {name} |"
    for m in metrics:
        c = cells.get(m) or {}
        t = c.get("png_vs")
        if not t or t.get("p") is None:
            out += " – |"
            continue
        diff = t["t"]  # t on ref − this row: positive means ref's value is larger
        if not diff:  # 0 (every pair equal, e.g. both hypervolumes 0) or null
            out += f" p = {t['p']:.2g} (equal) |"
            continue
        better = (diff > 0) == HIGHER[m]
        out += f" p = {t['p']:.2g} ({ref if better else name} better) |"
    return out


def header(first):
    return (f"| {first} |" + "".join(f" {TITLES[m]} here \\| paper |" for m in METRICS) + "\n|---|" + "---|" * len(METRICS))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+")
    args = ap.parse_args()
    for path in args.results:
        with open(path) as f:
            res = json.load(f)
        b = res["budget"]
        print(f"<!-- {path}: budget {b['Name']}, {b['Seeds']} seeds, {res['elapsed_s'] / 60:.1f} min -->\n")
        for ds, table in res["table"].items():
            print(f"**{ds}** (10⁻²; here \\| paper)\n")
            print(header("method"))
            for m in METHODS:
                if m in table:
                    print(f"| {m} |" + "".join(cell(table[m].get(k), PAPER[ds][m][i]) for i, k in enumerate(METRICS)))
            print("\nPaired t-tests here, PNG against each baseline (two-sided p; which mean is better):\n")
            print("| baseline |" + "".join(f" {TITLES[m]} |" for m in METRICS) + "\n|---|" + "---|" * len(METRICS))
            for m in METHODS[:-1]:
                if m in table:
                    print(test_row(m, table[m], METRICS, "png"))
            print()
        for ds, table in (res.get("ablation_table") or {}).items():
            print(f"**Ablation, {ds}** (10⁻²; here \\| paper)\n")
            print(header("setting"))
            for name, label in ABLATION_ROWS:
                if name in table:
                    print(f"| {label} |" + "".join(cell(table[name].get(k), PAPER_ABLATION[name][i]) for i, k in enumerate(METRICS)))
            print("\nPaired t-tests here, α = 0.5, γ = 0.1 against each variant (two-sided p; which mean is better):\n")
            print("| variant |" + "".join(f" {TITLES[m]} |" for m in METRICS) + "\n|---|" + "---|" * len(METRICS))
            for name, label in ABLATION_ROWS:
                if name != "png" and name in table:
                    print(test_row(label, table[name], METRICS, "α = 0.5, γ = 0.1"))
            print()


if __name__ == "__main__":
    main()
