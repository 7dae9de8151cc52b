#!/usr/bin/python3
"""Writes oracle.json: random inputs for package metrics and the metrics
numpy computes from them over the whole evaluation (pooled).

Run from this directory: /usr/bin/python3 make_oracle.py
Written independently of the Go code, in the way MTAN's evaluation code
computes them (confusion matrix by bincount; masks from the targets).
"""
import json
import numpy as np

rng = np.random.default_rng(20261123)


def seg_case(name, N, C, inner_shape, ignore, absent):
    scores = rng.normal(size=(N, C) + inner_shape)
    labels = rng.integers(0, C, size=(N,) + inner_shape).astype(np.int64)
    for c in absent:  # never a target, never predicted
        scores[:, c] -= 100.0
        labels[labels == c] = (c + 1) % C
    mask = rng.random(size=labels.shape) < 0.15
    labels[mask] = ignore
    pred = scores.argmax(axis=1)
    valid = labels != ignore
    t, p = labels[valid], pred[valid]
    conf = np.bincount(t * C + p, minlength=C * C).reshape(C, C)
    tp = np.diag(conf).astype(float)
    union = conf.sum(0) + conf.sum(1) - np.diag(conf)
    present = union > 0
    miou = float(np.mean(tp[present] / union[present]))
    acc = float((t == p).mean())
    return {"name": name, "kind": "confusion", "N": N, "C": C, "inner": int(np.prod(inner_shape)),
            "ignore": ignore, "scores": scores.ravel().tolist(), "labels": labels.ravel().astype(float).tolist(),
            "want": {"miou": miou, "accuracy": acc, "classes_present": int(present.sum())}}


def depth_case(name, shape):
    target = rng.uniform(0.5, 10.0, size=shape)
    target[rng.random(size=shape) < 0.2] = 0.0
    pred = target + rng.normal(scale=0.7, size=shape)
    m = target != 0
    err = np.abs(pred - target)[m]
    return {"name": name, "kind": "depth", "pred": pred.ravel().tolist(), "target": target.ravel().tolist(),
            "want": {"abs_err": float(err.mean()), "rel_err": float((err / target[m]).mean())}}


def normal_case(name, N, C, inner_shape):
    target = rng.normal(size=(N, C) + inner_shape)
    target /= np.linalg.norm(target, axis=1, keepdims=True)
    zero = rng.random(size=(N,) + inner_shape) < 0.2
    target = np.where(zero[:, None], 0.0, target)
    # predictions near the targets, not normalised; a few zero vectors
    pred = target * rng.uniform(0.5, 2.0) + rng.normal(scale=0.4, size=target.shape)
    pz = rng.random(size=(N,) + inner_shape) < 0.05
    pred = np.where(pz[:, None], 0.0, pred)
    valid = np.linalg.norm(target, axis=1) > 0
    pn = np.linalg.norm(pred, axis=1)
    cos = np.where(pn > 0, (pred * target).sum(1) / np.where(pn > 0, pn, 1.0), 0.0)
    ang = np.degrees(np.arccos(np.clip(cos[valid], -1, 1)))
    return {"name": name, "kind": "normals", "N": N, "C": C, "inner": int(np.prod(inner_shape)),
            "pred": pred.ravel().tolist(), "target": target.ravel().tolist(),
            "want": {"angle_mean": float(ang.mean()), "angle_median": float(np.median(ang)),
                     "within_11.25": float((ang < 11.25).mean()), "within_22.5": float((ang < 22.5).mean()),
                     "within_30": float((ang < 30).mean()), "count": int(valid.sum())}}


cases = [
    seg_case("segmentation", 4, 5, (6, 7), -1, absent=[3]),
    seg_case("segmentation-255", 3, 13, (4, 5), 255, absent=[0, 7]),
    seg_case("classification", 60, 10, (), -100, absent=[]),
    depth_case("depth", (3, 1, 5, 6)),
    normal_case("normals", 3, 3, (5, 6)),
    normal_case("normals-odd", 1, 3, (3, 3)),
]
with open("oracle.json", "w") as f:
    json.dump({"numpy": np.__version__, "cases": cases}, f)
