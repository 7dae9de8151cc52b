#!/usr/bin/python3
"""A procedural stand-in for NYUv2 in the layout lorenmt/mtan's preprocessing
leaves it: DIR/train and DIR/val, each with image/, label/, depth/ and normal/
holding 0.npy, 1.npy, ... one file per sample, channels last:

    image   float32 [H, W, 3] in [0, 1]
    label   float32 [H, W]    class id in 0..12, -1 = ignore
    depth   float32 [H, W, 1] metres along the optical axis, 0 = none
    normal  float32 [H, W, 3] unit surface normal in camera coordinates, 0 = none

Each sample is a ray-cast room seen from a pinhole camera: floor, ceiling and
three walls (with paintings, windows and a TV on them as flat patches), and a
handful of boxes (beds, tables, sofas, furniture, books), spheres and vertical
cylinders (objects, chairs), all labelled with NYUv2's 13 classes. The depth
and normals are the true ones of the nearest surface; the RGB is Lambertian
shading of a point light plus an ambient term over a per-class colour with a
per-surface texture, plus sensor noise. A few blobs per image are "unlabelled"
as NYUv2's are: label -1, depth 0 and normal 0 there, so every pixel with a
label has a depth and a normal.

The camera frame is x right, y up, z toward the viewer (OpenGL's): a surface
facing the camera has a normal with z > 0. Everything is a function of the
seed: the same --seed writes the same bytes.

    /usr/bin/python3 bench/nyuv2/standin.py --out DIR [--train 512 --val 128 --size 64x96 --seed 0]
"""
import argparse
import os
import sys

import numpy as np

# NYUv2's 13 classes (Couprie et al.'s mapping, as lorenmt/mtan uses them).
CLASSES = ("bed", "books", "ceiling", "chair", "floor", "furniture", "objects", "painting", "sofa", "table", "tv",
           "wall", "window")
C = {name: i for i, name in enumerate(CLASSES)}

# A base colour per class (RGB in [0, 1]); each surface jitters it.
COLOURS = np.array([
    [0.55, 0.35, 0.60],  # bed
    [0.80, 0.20, 0.20],  # books
    [0.92, 0.92, 0.88],  # ceiling
    [0.45, 0.30, 0.15],  # chair
    [0.60, 0.45, 0.30],  # floor
    [0.35, 0.25, 0.20],  # furniture
    [0.20, 0.60, 0.30],  # objects
    [0.85, 0.65, 0.20],  # painting
    [0.25, 0.35, 0.65],  # sofa
    [0.70, 0.55, 0.35],  # table
    [0.08, 0.08, 0.10],  # tv
    [0.80, 0.78, 0.70],  # wall
    [0.70, 0.85, 0.98],  # window
], dtype=np.float64)

_FAR = np.inf


class _Hits:
    """The nearest hit so far per ray: distance t, world normal, class, a
    surface id (for the texture) and the hit's local texture coordinates."""

    def __init__(self, n):
        self.t = np.full(n, _FAR)
        self.n = np.zeros((n, 3))
        self.cls = np.full(n, -1, dtype=np.int64)
        self.sid = np.full(n, -1, dtype=np.int64)
        self.uv = np.zeros((n, 2))

    def take(self, t, normal, cls, sid, uv):
        """Keeps the hits at distance t (inf: none) that are nearer than the current ones."""
        near = t < self.t
        self.t[near] = t[near]
        self.n[near] = normal[near] if normal.ndim == 2 else normal
        self.cls[near] = cls[near] if np.ndim(cls) else cls
        self.sid[near] = sid
        self.uv[near] = uv[near]


def _plane(o, d, axis, value, sign):
    """Ray hits with the plane x[axis] = value whose normal is sign·e_axis,
    from its front side only; returns t (inf: none) and the hit points."""
    den = d[:, axis]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (value - o[axis]) / den
    ok = (t > 1e-6) & (den * sign < 0)
    t = np.where(ok, t, _FAR)
    p = o + d * np.where(np.isfinite(t), t, 0)[:, None]
    return t, p


def _box(o, d, centre, half, yaw):
    """Ray hits with a box (half sizes `half`) rotated by yaw about the
    vertical axis: the slab test in the box's frame. Returns t, world
    normals and local coordinates of the hit."""
    c, s = np.cos(yaw), np.sin(yaw)
    rot = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])  # local -> world
    lo = (o - centre) @ rot
    ld = d @ rot
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / ld
        t1 = (-half - lo) * inv
        t2 = (half - lo) * inv
    tmin = np.minimum(t1, t2)
    tmax = np.maximum(t1, t2)
    tnear = np.nanmax(tmin, axis=1)
    tfar = np.nanmin(tmax, axis=1)
    ok = (tnear <= tfar) & (tnear > 1e-6)
    t = np.where(ok, tnear, _FAR)
    face = np.nanargmax(tmin, axis=1)
    local_n = np.zeros_like(ld)
    rows = np.arange(len(ld))
    local_n[rows, face] = -np.sign(ld[rows, face])
    normal = local_n @ rot.T
    lp = lo + ld * np.where(ok, tnear, 0)[:, None]
    return t, normal, lp


def _sphere(o, d, centre, r):
    """Ray hits with a sphere: t, world normals, hit points."""
    oc = o - centre
    b = d @ oc
    cc = oc @ oc - r * r
    disc = b * b - cc
    sq = np.sqrt(np.maximum(disc, 0))
    t = -b - sq
    ok = (disc > 0) & (t > 1e-6)
    t = np.where(ok, t, _FAR)
    p = o + d * np.where(ok, t, 0)[:, None]
    return t, (p - centre) / r, p


def _cylinder(o, d, base, r, height):
    """Ray hits with a closed vertical cylinder standing on `base` (its
    bottom centre): the side as a quadratic in x, z, the top as a disc."""
    ox, oz = o[0] - base[0], o[2] - base[2]
    a = d[:, 0] ** 2 + d[:, 2] ** 2
    b = ox * d[:, 0] + oz * d[:, 2]
    cc = ox * ox + oz * oz - r * r
    disc = b * b - a * cc
    with np.errstate(divide="ignore", invalid="ignore"):
        ts = (-b - np.sqrt(np.maximum(disc, 0))) / a
    y = o[1] + d[:, 1] * ts
    side = (disc > 0) & (ts > 1e-6) & (y >= base[1]) & (y <= base[1] + height)
    ts = np.where(side, ts, _FAR)
    p = o + d * np.where(side, ts, 0)[:, None]
    ns = np.stack([p[:, 0] - base[0], np.zeros(len(d)), p[:, 2] - base[2]], 1) / r
    tt, pt = _plane(o, d, 1, base[1] + height, 1)
    top = np.isfinite(tt) & ((pt[:, 0] - base[0]) ** 2 + (pt[:, 2] - base[2]) ** 2 <= r * r)
    tt = np.where(top, tt, _FAR)
    use_top = tt < ts
    t = np.where(use_top, tt, ts)
    normal = np.where(use_top[:, None], np.array([0.0, 1.0, 0.0]), ns)
    p = np.where(use_top[:, None], pt, p)
    return t, normal, p


def render(rng, h, w):
    """One sample: image [H,W,3], label [H,W], depth [H,W,1], normal [H,W,3], all float32."""
    # The room: floor y=0, ceiling y=room_h, walls x=-wl, x=wr, z=-zd (the camera looks down -z).
    room_h = rng.uniform(2.4, 3.0)
    wl, wr = rng.uniform(1.5, 3.0), rng.uniform(1.5, 3.0)
    zd = rng.uniform(4.0, 7.0)
    cam = np.array([rng.uniform(-0.5, 0.5), rng.uniform(1.2, 1.7), rng.uniform(0.0, 0.8)])
    yaw = rng.uniform(-0.45, 0.45)
    pitch = rng.uniform(-0.35, -0.05)
    cy, sy, cp, sp = np.cos(yaw), np.sin(yaw), np.cos(pitch), np.sin(pitch)
    r_yaw = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    r_pitch = np.array([[1, 0, 0], [0, cp, -sp], [0, sp, cp]])
    cam_to_world = r_yaw @ r_pitch
    f = 0.9 * w  # focal length in pixels: about 57 degrees horizontal field of view
    jj, ii = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
    dirs_cam = np.stack([(jj - w / 2) / f, -(ii - h / 2) / f, -np.ones_like(jj)], -1).reshape(-1, 3)
    d = dirs_cam @ cam_to_world.T
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    n = len(d)
    hits = _Hits(n)
    sid = 0

    # Floor, ceiling, walls; uv = the two in-plane world coordinates.
    for axis, value, sign, cls in ((1, 0.0, 1, C["floor"]), (1, room_h, -1, C["ceiling"]), (0, -wl, 1, C["wall"]),
                                   (0, wr, -1, C["wall"]), (2, -zd, 1, C["wall"])):
        t, p = _plane(cam, d, axis, value, sign)
        normal = np.zeros(3)
        normal[axis] = sign
        uv = np.delete(p, axis, axis=1)
        hits.take(t, normal, cls, sid, uv)
        sid += 1

    # Flat patches on the walls: paintings, windows, a TV (labelled, not geometry).
    patches = []
    for _ in range(rng.integers(1, 4)):
        kind = rng.choice([C["painting"], C["window"], C["tv"]], p=[0.5, 0.3, 0.2])
        wall = rng.integers(0, 3)  # 0: x=-wl, 1: x=wr, 2: z=-zd
        pw, ph = rng.uniform(0.5, 1.4), rng.uniform(0.4, 1.0)
        yc = rng.uniform(1.0, room_h - 0.6)
        if wall == 2:
            uc = rng.uniform(-wl + pw, wr - pw)
        else:
            uc = rng.uniform(-zd + pw, -0.5)
        patches.append((kind, wall, uc, yc, pw / 2, ph / 2, sid))
        sid += 1

    # Objects on the floor.
    for _ in range(rng.integers(3, 8)):
        shape = rng.choice(["box", "sphere", "cylinder"], p=[0.55, 0.2, 0.25])
        x = rng.uniform(-wl + 0.5, wr - 0.5)
        z = rng.uniform(-zd + 0.6, -1.5)
        if shape == "box":
            cls = rng.choice([C["bed"], C["table"], C["sofa"], C["furniture"], C["books"]])
            size = {C["bed"]: ((0.8, 1.1), (0.2, 0.3), (0.9, 1.2)), C["table"]: ((0.4, 0.8), (0.35, 0.4), (0.3, 0.5)),
                    C["sofa"]: ((0.7, 1.1), (0.35, 0.45), (0.35, 0.5)),
                    C["furniture"]: ((0.3, 0.6), (0.4, 1.0), (0.2, 0.35)),
                    C["books"]: ((0.1, 0.2), (0.1, 0.15), (0.08, 0.12))}[cls]
            half = np.array([rng.uniform(*s) for s in size])
            base_y = 0.0
            if cls == C["books"]:
                base_y = rng.uniform(0.0, 0.8)  # on a shelf height: floating is fine for a stand-in
            t, normal, lp = _box(cam, d, np.array([x, base_y + half[1], z]), half, rng.uniform(-0.8, 0.8))
            uv = lp[:, [0, 1]] + lp[:, [2, 2]]
        elif shape == "sphere":
            cls = C["objects"]
            r = rng.uniform(0.15, 0.45)
            centre = np.array([x, rng.uniform(r, 1.2), z])
            t, normal, p = _sphere(cam, d, centre, r)
            uv = p[:, [0, 1]] - centre[[0, 1]]
        else:
            cls = rng.choice([C["chair"], C["objects"]])
            r = rng.uniform(0.15, 0.35)
            hgt = rng.uniform(0.4, 1.0)
            t, normal, p = _cylinder(cam, d, np.array([x, 0.0, z]), r, hgt)
            uv = np.stack([np.arctan2(p[:, 0] - x, p[:, 2] - z) * r, p[:, 1]], 1)
        hits.take(t, normal, cls, sid, uv)
        sid += 1

    # Relabel wall pixels inside a patch (the wall's id stays: patches are flat on it).
    pts = cam + d * np.where(np.isfinite(hits.t), hits.t, 0)[:, None]
    wall_sids = {0: 2, 1: 3, 2: 4}
    for kind, wall, uc, yc, hu, hv, psid in patches:
        on = hits.sid == wall_sids[wall]
        u = pts[:, 0] if wall == 2 else pts[:, 2]
        inside = on & (np.abs(u - uc) <= hu) & (np.abs(pts[:, 1] - yc) <= hv)
        hits.cls[inside] = kind
        hits.sid[inside] = psid
        hits.uv[inside] = np.stack([u - uc, pts[:, 1] - yc], 1)[inside]

    if not np.isfinite(hits.t).all():
        raise RuntimeError("standin: a ray left the room (camera outside it?)")

    # Shading: Lambertian from a point light near the ceiling, plus ambient.
    light = np.array([rng.uniform(-wl + 0.3, wr - 0.3), room_h - 0.2, rng.uniform(-zd + 1, -0.5)])
    to_l = light - pts
    dist = np.linalg.norm(to_l, axis=1, keepdims=True)
    lam = np.clip(np.sum(hits.n * to_l / dist, 1), 0, None) * (3.0 / (1.0 + 0.15 * dist[:, 0] ** 2))
    shade = 0.25 + 0.75 * np.clip(lam, 0, 1.2)

    # Albedo: class colour, jittered per surface, times a per-surface texture (stripes, checks or noise).
    nsurf = sid + 1
    jitter = rng.uniform(0.8, 1.2, (nsurf, 3))
    pattern = rng.integers(0, 3, nsurf)
    freq = rng.uniform(3.0, 10.0, nsurf)
    phase = rng.uniform(0, 2 * np.pi, nsurf)
    s = hits.sid
    u, v = hits.uv[:, 0] * freq[s] + phase[s], hits.uv[:, 1] * freq[s]
    tex = np.select([pattern[s] == 0, pattern[s] == 1],
                    [0.85 + 0.15 * np.sin(u), 0.85 + 0.15 * np.sign(np.sin(u) * np.sin(v))],
                    0.9 + 0.1 * np.sin(u + 1.7 * v) * np.cos(0.6 * u - v))
    albedo = COLOURS[hits.cls] * jitter[s] * tex[:, None]
    rgb = albedo * shade[:, None] + rng.normal(0, 0.02, (n, 3))
    rgb[hits.cls == C["window"]] += 0.15  # windows glow
    image = np.clip(rgb, 0, 1).reshape(h, w, 3)

    # Depth along the optical axis, normals in camera coordinates.
    depth = (hits.t * -dirs_cam[:, 2] / np.linalg.norm(dirs_cam, axis=1)).reshape(h, w, 1)
    normal = (hits.n @ cam_to_world).reshape(h, w, 3)
    normal /= np.linalg.norm(normal, axis=2, keepdims=True)
    label = hits.cls.reshape(h, w).astype(np.float64)

    # Unlabelled blobs: no class, no depth, no normal (NYUv2's holes).
    for _ in range(rng.integers(1, 4)):
        ci, cj = rng.uniform(0, h), rng.uniform(0, w)
        ri, rj = rng.uniform(1.5, h / 12), rng.uniform(1.5, w / 12)
        hole = ((ii - ci) / ri) ** 2 + ((jj - cj) / rj) ** 2 <= 1
        label[hole] = -1
        depth[hole] = 0
        normal[hole] = 0
    return (image.astype(np.float32), label.astype(np.float32), depth.astype(np.float32),
            normal.astype(np.float32))


def generate(out, n_train=512, n_val=128, size=(64, 96), seed=0):
    """Writes out/train and out/val (refusing to write into existing
    folders). The splits draw from independent streams of the seed."""
    h, w = size
    for split in ("train", "val"):
        if os.path.exists(os.path.join(out, split)):
            raise FileExistsError("standin: %s exists: give an empty or new --out" % os.path.join(out, split))
    for k, (split, count) in enumerate((("train", n_train), ("val", n_val))):
        for sub in ("image", "label", "depth", "normal"):
            os.makedirs(os.path.join(out, split, sub))
        for i in range(count):
            rng = np.random.default_rng([seed, k, i])
            for sub, arr in zip(("image", "label", "depth", "normal"), render(rng, h, w)):
                np.save(os.path.join(out, split, sub, "%d.npy" % i), arr)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder to write train/ and val/ into")
    ap.add_argument("--train", type=int, default=512, help="training samples (default 512)")
    ap.add_argument("--val", type=int, default=128, help="validation samples (default 128)")
    ap.add_argument("--size", default="64x96", help="HxW (default 64x96)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    h, w = (int(v) for v in a.size.lower().split("x"))
    generate(a.out, a.train, a.val, (h, w), a.seed)


if __name__ == "__main__":
    sys.exit(main())
