#!/usr/bin/python3
"""PyTorch twin of a whole `paretonav tune` run on the full MTAN
(bench/torch_mtan.py's model, layer for layer models.MTAN), for the
whole-process peak RSS that docs/performance.md's "Memory" compares.

    /usr/bin/python3 bench/torch_tune.py --data d.npz [--width 64]
        [--steps 2] [--batch 2] [--lr 1e-3] [--threads 2]
        [--save state_dict|onnx] [--out torch_tuned.pt]

It does what `paretonav tune MODEL --data d.npz --steps S --batch B` does
with the tasks of bench/README.md (seg nll, depth L1, normal cosine), in
the same order and on the same data (the arrays x, seg, depth_t,
normal_t of --data; the report set is the training set, as tune's
without --val):

  1. the report pass before training: the losses and J (one
     autograd.grad per task) on every batch of the report set, the
     min-norm value g from J Jᵀ, and the task metrics from a forward pass
     under no_grad (tune's report computes g, so it needs J);
  2. S PNG steps: forward, one autograd.grad per task written into the
     rows of one preallocated J (no stacked copy), K = J Jᵀ, PNG's
     direction v = Jᵀ(c + λ) for the criterion F = Σ losses (c = ∂F/∂ℓ,
     λ from PNG's dual on K with φ = α·g while g > e), and Adam's update
     of the flat parameters (flat first and second moments, one flat
     scratch for the update, written into the parameters in place);
  3. the evaluation at the final parameters (losses and J, as
     finetune's finish does), then the report pass again;
  4. saving the weights: torch.save of the state_dict (default), or
     torch.onnx.export with --save onnx.

torch.save is the default because it is how PyTorch users keep a tuned
model and it costs PyTorch the least memory (the tensors are written as
they are; torch.onnx.export traces a forward pass and builds the whole
protobuf in memory): against it paretonav's ratio is the conservative one.

Prints one JSON object: seconds per phase, the losses before and after,
and the peak RSS of the process (ru_maxrss). BatchNorm runs with its
running statistics (eval mode), as paretonav's default --bn frozen.
"""
import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "backend", "testdata", "torch"))
import make_fixtures as fx  # noqa: E402  (the three NYUv2 losses)
from torch_mtan import MTAN  # noqa: E402

TASKS = [("nll", 0, "seg"), ("depth_l1", 1, "depth_t"), ("normal_cos", 2, "normal_t")]


def load(path):
    """The arrays of --data as tensors (float32 inputs, int64 labels)."""
    z = np.load(path)
    out = {}
    for k in ("x", "seg", "depth_t", "normal_t"):
        if k not in z:
            sys.exit(f"torch_tune: --data {path}: no array {k!r} (want x, seg, depth_t, normal_t)")
        a = z[k]
        out[k] = torch.from_numpy(a.astype(np.int64) if k == "seg" else a.astype(np.float32))
    return out


def batches(data, size):
    n = data["x"].shape[0]
    for i in range(0, n, size):
        yield {k: v[i:i + size] for k, v in data.items()}, min(size, n - i) / n


def jacobian(model, params, b, J):
    """Losses on batch b, and their gradients written into the rows of J."""
    outs = model(b["x"])
    losses = []
    for i, (kind, out, tgt) in enumerate(TASKS):
        loss = fx.LOSSES[kind](outs[out], b[tgt])
        g = torch.autograd.grad(loss, params, retain_graph=i < len(TASKS) - 1, allow_unused=True)
        torch.cat([(torch.zeros_like(p) if gi is None else gi).reshape(-1) for p, gi in zip(params, g)], out=J[i])
        del g
        losses.append(loss.item())
    del outs
    return losses


def min_norm(K, iters=200):
    """ω on the simplex minimising ωᵀKω (Frank–Wolfe), and that value g."""
    m = K.shape[0]
    w = np.full(m, 1.0 / m)
    for t in range(iters):
        i = int(np.argmin(K @ w))
        e = np.zeros(m)
        e[i] = 1
        d = e - w
        dKd = d @ K @ d
        if dKd <= 0:
            break
        s = min(max(-(w @ K @ d) / dKd, 0.0), 1.0)
        if s == 0:
            break
        w = w + s * d
    return w, float(w @ K @ w)


def png_coeffs(K, c, alpha, e):
    """PNG's direction v = Jᵀ(c + λ): λ ≥ 0 minimises ½‖Jᵀ(c+λ)‖² − φ·Σλ
    (projected gradient on the m×m dual), φ = α·g, while g > e."""
    _, g = min_norm(K)
    if g <= e:
        return c, g
    phi = alpha * g
    lam = np.zeros_like(c)
    step = 1.0 / max(np.linalg.eigvalsh(K).max(), 1e-30)
    for _ in range(500):
        grad = K @ (c + lam) - phi
        lam = np.maximum(lam - step * grad, 0)
    return c + lam, g


def report(model, params, data, batch, J):
    """Tune's report pass: losses, J (for g) and the task metrics."""
    n = len(TASKS)
    losses = np.zeros(n)
    conf = np.zeros((13, 13), dtype=np.int64)
    derr, nerr, npx = 0.0, 0.0, 0
    for b, w in batches(data, batch):
        losses += w * np.array(jacobian(model, params, b, J))
        with torch.no_grad():
            seg, depth, normal = model(b["x"])
            lab = b["seg"]
            ok = lab >= 0
            conf += np.bincount((lab[ok] * 13 + seg.argmax(1)[ok]).numpy(), minlength=169).reshape(13, 13)
            derr += (depth - b["depth_t"]).abs().sum().item()
            cos = (normal * F.normalize(b["normal_t"], dim=1)).sum(1).clamp(-1, 1)
            nerr += torch.rad2deg(torch.acos(cos)).sum().item()
            npx += cos.numel()
            del seg, depth, normal, cos
    K = (J @ J.T).double().numpy()
    _, g = min_norm(K)
    return {"losses": losses.tolist(), "g": g, "pixel_acc": float(np.trace(conf) / max(conf.sum(), 1)),
            "depth_abs": derr / max(npx, 1), "normal_deg": nerr / max(npx, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="the npz `paretonav tune --data` reads (x, seg, depth_t, normal_t)")
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-3, help="Adam's learning rate (tune's default)")
    ap.add_argument("--alpha", type=float, default=0.5, help="PNG's α")
    ap.add_argument("--e", type=float, default=1e-3, help="PNG's threshold e (control on while g > e)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save", choices=("state_dict", "onnx"), default="state_dict")
    ap.add_argument("--out", default="torch_tuned.pt")
    ap.add_argument("--flush-denormal", action=argparse.BooleanOptionalAction, default=True)
    a = ap.parse_args()
    if a.steps < 1 or a.batch < 1:
        sys.exit("torch_tune: --steps and --batch want at least 1")
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(a.flush_denormal)
    torch.manual_seed(0)
    t = {}
    t0 = time.perf_counter()
    data = load(a.data)
    model = MTAN(a.width).eval()
    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    m = len(TASKS)
    J = torch.empty(m, n)
    t["build_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    before = report(model, params, data, a.batch, J)
    t["report_before_s"] = time.perf_counter() - t0

    # Adam over the flat parameter vector: moments and one scratch.
    M, V, U = torch.zeros(n), torch.zeros(n), torch.empty(n)
    b1, b2, eps = 0.9, 0.999, 1e-8
    N = data["x"].shape[0]
    rng = np.random.default_rng(1)
    order = []
    step_s = []
    for s in range(a.steps):
        t0 = time.perf_counter()
        if not order:
            order = list(rng.permutation(N))
        idx = [order.pop(0) for _ in range(min(a.batch, len(order)))]
        b = {k: v[idx] for k, v in data.items()}
        losses = jacobian(model, params, b, J)
        K = (J @ J.T).double().numpy()
        coef, g = png_coeffs(K, np.ones(m), a.alpha, a.e)
        v = torch.from_numpy(coef.astype(np.float32)) @ J  # the direction, n values
        M.mul_(b1).add_(v, alpha=1 - b1)
        V.mul_(b2).addcmul_(v, v, value=1 - b2)
        c1, c2 = 1 - b1 ** (s + 1), 1 - b2 ** (s + 1)
        torch.div(V, c2, out=U).sqrt_().add_(eps)
        torch.div(M, U, out=U).mul_(a.lr / c1)
        del v
        with torch.no_grad():
            off = 0
            for p in params:
                k = p.numel()
                p.sub_(U[off:off + k].view_as(p))
                off += k
        step_s.append(time.perf_counter() - t0)
    t["step_s"] = step_s

    t0 = time.perf_counter()
    final = jacobian(model, params, b, J)  # finetune's finish: the final parameters on the last batch
    t["final_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    after = report(model, params, data, a.batch, J)
    t["report_after_s"] = time.perf_counter() - t0
    del J, M, V, U

    t0 = time.perf_counter()
    tmp = a.out + ".tmp"
    if a.save == "onnx":
        h, w = data["x"].shape[2:]
        torch.onnx.export(model, torch.zeros(1, 3, h, w), tmp, opset_version=13,
                          input_names=["x"], output_names=["seg_logp", "depth", "normal"],
                          dynamic_axes={"x": {0: "N"}})
    else:
        torch.save(model.state_dict(), tmp)
    os.replace(tmp, a.out)
    t["save_s"] = time.perf_counter() - t0
    print(json.dumps({
        "torch": torch.__version__, "threads": torch.get_num_threads(), "width": a.width,
        "size": list(data["x"].shape[2:]), "batch": a.batch, "examples": N, "steps": a.steps,
        "params": int(n), "save": a.save, "seconds": t,
        "before": before, "final_losses": final, "after": after,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }, indent=1))


if __name__ == "__main__":
    main()
