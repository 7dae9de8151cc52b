#!/usr/bin/python3
"""The models of docs/bench-step.md: their PyTorch definitions (the twins
paretonav is timed against), their ONNX exports and a batch of data for each.

    PY bench/step_models.py export --dir DIR [--only NAME,...]
    PY bench/step_models.py time NAME --dir DIR [--steps K] [--threads 2]

PY: the venv of bench/torchenv.py (`.tools/bench-torch2/bin/python`);
the models of docs/bench-step.md also export and run under Debian's
/usr/bin/python3 (torch 1.13), the zoo's (ZOO, below) need torch 2.x and
timm.

`export` writes DIR/NAME.onnx (torch.onnx.export's TorchScript exporter,
dynamo=False where torch has the argument, opset 17, TrainingMode.EVAL
with constant folding) and DIR/NAME.npz
(input `x` and the targets of the tasks, fixed seed) for every model below
that is not already there (without --only: the models of
docs/bench-step.md, not ZOO's); the fixture models (LeNet, the small MTAN,
the ViT and ConvNeXt fixtures) are copied from backend/testdata/torch.
The ZOO models are exported as bench/torch2_zoo/check.py exports them
(its `ts` exporter: opset 20, TrainingMode.PRESERVE, no constant folding,
after model.train(); model.eval(); where that call fails, with check.py's
switch for the model, timm.layers.set_fused_attn(False) for MaxViT), the
export paretonav trains every parameter of.

`time` builds the same nn.Module (same class, same seed, hence the same
weights as the export), loads DIR/NAME.npz, runs one untimed step and
--steps timed ones, and prints one JSON object: median/min seconds per step
and the process's peak RSS (ru_maxrss). A step is what `paretonav bench
step` times: one forward pass, then one torch.autograd.grad per task over
every parameter (retain_graph for all but the last), each flattened into a
row of J, and J J^T. The twin runs the module as a PyTorch user does:
timm's fused attention (F.scaled_dot_product_attention) on, whatever the
export needed; LeViT's eval-mode cache of its attention biases emptied
before each step (a cached bias would hold the previous step's freed
graph, and a training step does not cache it).

Models (all two or three tasks; batch and input in MODELS):
  lenet2       two-head LeNet fixture (make_fixtures.LeNet2), 256 x 1x36x36
  mtan_small   the small SegNet/MTAN fixture (make_fixtures.MTANSmall), 8 x 3x32x32
  vit2         the ViT fixture (make_transformer_fixtures.ViT2), 4 x 3x32x32
  convnext2    the ConvNeXt fixture (make_transformer_fixtures.ConvNeXt2), 4 x 3x32x32
  mbv3_small   torchvision mobilenet_v3_small features (depthwise 3x3/5x5,
               strides 1 and 2, squeeze-excitation, Hardswish), two heads, 4 x 3x64x64
  tfblock      4 torchvision ViT encoder blocks (hidden 192, 3 heads, MLP 768)
               over 64 tokens of a 4x4/4 patch stem, two heads, 4 x 3x32x32
  convnext_t   torchvision convnext_tiny features (27.8M parameters), two heads,
               4 x 3x64x64 (a 111 MB file)
  effnet_b0    torchvision efficientnet_b0 features (depthwise 3x3/5x5, squeeze-
               excitation with SiLU and Sigmoid, SiLU), two heads, 4 x 3x64x64
  shufflenet   torchvision shufflenet_v2_x0_5 (channel shuffle, depthwise 3x3,
               Split/Concat) up to conv5, two heads, 4 x 3x64x64
  regnet_x     torchvision regnet_x_400mf stem + trunk (grouped 3x3 convolutions
               of 16 channels per group, strides 1 and 2), two heads, 4 x 3x64x64
  deeplab_mbv3 torchvision deeplabv3_mobilenet_v3_large (dilated depthwise, ASPP,
               bilinear upsampling), 14 output planes: 13-class segmentation
               (log-softmax, NLL) and depth (L1), 4 x 3x64x64

ZOO, the architectures of bench/torch2_zoo/check.py (docs/pytorch2-exports.md),
built by check.py's own builders (its variants, its random initialisation
perturbed as a trained checkpoint would be, its batch of 2 and input
sizes), each with check.py's two heads: a classification head (log_softmax,
task `cls`, nll) and a regression head (3 values, task `reg`, mse) on the
pooled features; the UNets have a per-pixel nll head over 4 classes (`seg`)
and a depth head (`depth`, mse) instead:
  unet         check.py's UNet (ConvTranspose2d, bilinear upsampling,
               GroupNorm, InstanceNorm, skip concatenations), width 8, 2 x 3x32x32
  unet16       the same UNet at width 16 as bench/unet/make_unet.py makes it
               (its seed and perturbation), 2 x 3x64x64
  vit_reg      timm vit_wee_patch16_reg1_gap_256 (register tokens), 2 x 3x64x64
  eva02        timm eva02_tiny_patch14_224 (rotary embeddings), 2 x 3x56x56
  levit        timm levit_128s, 2 x 3x128x128
  mha          a transformer layer on nn.MultiheadAttention (dim 32, 4 heads),
               2 x 8 tokens x 6 features
  maxvit       timm maxvit_pico_rw_256, 2 x 3x64x64
  convnextv2   timm convnextv2_atto (GRN), 2 x 3x64x64
  fastvit      timm fastvit_t8, 2 x 3x64x64
  mobilenetv4  timm mobilenetv4_conv_small_035, 2 x 3x64x64
  regnety      timm regnety_002, 2 x 3x64x64
  poolformer   timm poolformer_s12, 2 x 3x64x64
"""
import argparse
import inspect
import json
import os
import resource
import shutil
import statistics
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "backend", "testdata", "torch")
sys.path.insert(0, FIX)
sys.path.insert(0, os.path.join(HERE, "torch2_zoo"))
with warnings.catch_warnings():  # check.py silences every warning of its process: not of ours
    import check as zoo  # noqa: E402
import make_fixtures as mf  # noqa: E402
import make_transformer_fixtures as mtf  # noqa: E402

NLL2 = ["a:nll:logp_a:a", "b:nll:logp_b:b"]


class TwoHeads(nn.Module):
    """A feature extractor, global average pool, two Linear heads + log_softmax."""

    def __init__(self, features, width):
        super().__init__()
        self.features = features
        self.head_a, self.head_b = nn.Linear(width, 10), nn.Linear(width, 5)

    def forward(self, x):
        h = torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1)
        return F.log_softmax(self.head_a(h), 1), F.log_softmax(self.head_b(h), 1)


def mbv3_small():
    from torchvision.models import mobilenet_v3_small
    return TwoHeads(mobilenet_v3_small().features, 576)


def convnext_t():
    from torchvision.models import convnext_tiny
    return TwoHeads(convnext_tiny().features, 768)


def effnet_b0():
    from torchvision.models import efficientnet_b0
    return TwoHeads(efficientnet_b0().features, 1280)


def shufflenet():
    from torchvision.models import shufflenet_v2_x0_5
    m = shufflenet_v2_x0_5()
    return TwoHeads(nn.Sequential(m.conv1, m.maxpool, m.stage2, m.stage3, m.stage4, m.conv5), 1024)


def regnet_x():
    from torchvision.models import regnet_x_400mf
    m = regnet_x_400mf()
    return TwoHeads(nn.Sequential(m.stem, m.trunk_output), 400)


class DeepLabSegDepth(nn.Module):
    """DeepLabV3 with a MobileNetV3-Large backbone: 13 planes of segmentation log-probabilities and one of depth."""

    def __init__(self):
        super().__init__()
        from torchvision.models.segmentation import deeplabv3_mobilenet_v3_large
        self.net = deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=14,
                                                aux_loss=False)

    def forward(self, x):
        y = self.net(x)["out"]
        return F.log_softmax(y[:, :13], 1), y[:, 13:]


class Blocks(nn.Module):
    """A 4x4/4 patch stem, learned positions, torchvision encoder blocks, two heads on the mean token."""

    def __init__(self, layers=4, hidden=192, heads=3, mlp=768, tokens=64):
        super().__init__()
        from torchvision.models.vision_transformer import EncoderBlock
        self.stem = nn.Conv2d(3, hidden, 4, 4)
        self.pos = nn.Parameter(0.02 * torch.randn(1, tokens, hidden))
        self.blocks = nn.Sequential(*[EncoderBlock(heads, hidden, mlp, 0.0, 0.0) for _ in range(layers)])
        self.norm = nn.LayerNorm(hidden)
        self.head_a, self.head_b = nn.Linear(hidden, 10), nn.Linear(hidden, 5)

    def forward(self, x):
        h = self.stem(x).flatten(2).transpose(1, 2) + self.pos
        h = self.norm(self.blocks(h)).mean(1)
        return F.log_softmax(self.head_a(h), 1), F.log_softmax(self.head_b(h), 1)


def unet16():
    """check.py's UNet at width 16, its parameters perturbed as bench/unet/make_unet.py does."""
    torch.manual_seed(13)
    model = zoo.unet(16)
    gen = torch.Generator().manual_seed(13)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=gen))
    return zoo.fresh(model)


def unet16_targets(rng, n):
    return {"seg": rng.integers(0, 4, (n, 64, 64)).astype(np.int64),
            "depth": rng.standard_normal((n, 1, 64, 64), dtype=np.float32)}


def nll_targets(rng, n):
    return {"a": rng.integers(0, 10, n).astype(np.int64), "b": rng.integers(0, 5, n).astype(np.int64)}


def mtan_targets(rng, n):
    return {"seg": rng.integers(-1, 13, (n, 32, 32)).astype(np.int64),
            "depth_t": rng.uniform(0, 5, (n, 1, 32, 32)).astype(np.float32),
            "normal_t": rng.standard_normal((n, 3, 32, 32)).astype(np.float32)}


def seg_depth_targets(rng, n):
    return {"seg": rng.integers(-1, 13, (n, 64, 64)).astype(np.int64),
            "depth_t": rng.uniform(0, 5, (n, 1, 64, 64)).astype(np.float32)}


# name: (module factory, input shape [N,C,H,W], targets, task specs, output names, fixture file or None)
MODELS = {
    "lenet2": (mf.LeNet2, (256, 1, 36, 36), nll_targets,
               ["left:nll:logp_left:left", "right:nll:logp_right:right"], ["logp_left", "logp_right"],
               "lenet2_op13"),
    "mtan_small": (mf.MTANSmall, (8, 3, 32, 32), mtan_targets,
                   ["seg:nll:seg_logp:seg:ignore_index=-1", "depth:depth_l1:depth:depth_t",
                    "normal:normal_cos:normal:normal_t"], ["seg_logp", "depth", "normal"], "mtan_op13"),
    "vit2": (mtf.ViT2, (4, 3, 32, 32), nll_targets, NLL2, ["logp_a", "logp_b"], "vit2_op17_default"),
    "convnext2": (mtf.ConvNeXt2, (4, 3, 32, 32), nll_targets, NLL2, ["logp_a", "logp_b"],
                  "convnext2_op17_default"),
    "mbv3_small": (mbv3_small, (4, 3, 64, 64), nll_targets, NLL2, ["logp_a", "logp_b"], None),
    "tfblock": (Blocks, (4, 3, 32, 32), nll_targets, NLL2, ["logp_a", "logp_b"], None),
    "convnext_t": (convnext_t, (4, 3, 64, 64), nll_targets, NLL2, ["logp_a", "logp_b"], None),
    "effnet_b0": (effnet_b0, (4, 3, 64, 64), nll_targets, NLL2, ["logp_a", "logp_b"], None),
    "shufflenet": (shufflenet, (4, 3, 64, 64), nll_targets, NLL2, ["logp_a", "logp_b"], None),
    "regnet_x": (regnet_x, (4, 3, 64, 64), nll_targets, NLL2, ["logp_a", "logp_b"], None),
    "deeplab_mbv3": (DeepLabSegDepth, (4, 3, 64, 64), seg_depth_targets,
                     ["seg:nll:seg_logp:seg:ignore_index=-1", "depth:depth_l1:depth:depth_t"],
                     ["seg_logp", "depth"], None),
}

# The zoo's models (bench/torch2_zoo/check.py's names, builders, input
# shapes, targets and heads), and unet16 (bench/unet/make_unet.py's width).
ZOO = ["unet", "unet16", "vit_reg", "eva02", "levit", "mha", "maxvit", "convnextv2", "fastvit", "mobilenetv4",
       "regnety", "poolformer"]
for _name in ZOO:
    _heads = zoo.MODELS["unet" if _name == "unet16" else _name][4]
    if _name == "unet16":
        MODELS[_name] = (unet16, (2, 3, 64, 64), unet16_targets, _heads["tasks"], _heads["outputs"], None)
    else:
        MODELS[_name] = (lambda k=_name: zoo.build(k), zoo.MODELS[_name][3],
                         lambda rng, n, k=_name: zoo.batch(k)[1], _heads["tasks"], _heads["outputs"], None)
# The models of docs/bench-step.md: what `export` without --only and
# models_table.py without --models take.
DEFAULT = [n for n in MODELS if n not in ZOO]
LOSSES = dict(mf.LOSSES, mse=lambda pred, target: F.mse_loss(pred, target))


def targets_of(name):
    """The task targets of NAME under the names its task specs read."""
    _, shape, tg, specs, _, _ = MODELS[name]
    t = tg(np.random.default_rng(7), shape[0])
    if name == "lenet2":
        t = {"left": t["a"], "right": t["b"]}
    return t


def build(name):
    torch.manual_seed(11)
    model = MODELS[name][0]()
    model.eval()
    return model


def export(d, only):
    os.makedirs(d, exist_ok=True)
    for n in only:
        if n not in MODELS:
            sys.exit(f"step_models: --only: unknown model {n!r} (known: {', '.join(MODELS)})")
    for name, (_, shape, _, specs, outs, fixture) in MODELS.items():
        if name not in (only or DEFAULT):
            continue
        onnx_path, npz = os.path.join(d, name + ".onnx"), os.path.join(d, name + ".npz")
        x = np.random.default_rng(5).standard_normal(shape, dtype=np.float32)
        if not os.path.exists(npz):
            np.savez(npz, x=x, **targets_of(name))
        if os.path.exists(onnx_path):
            continue
        if fixture:
            shutil.copyfile(os.path.join(FIX, fixture + ".onnx"), onnx_path)
            continue
        model = build(name)
        if name in ZOO:
            export_zoo(name, model, x, onnx_path + ".tmp", outs)
            os.replace(onnx_path + ".tmp", onnx_path)
            print(f"wrote {onnx_path} ({os.path.getsize(onnx_path) / 1e6:.1f} MB)", file=sys.stderr)
            continue
        # The TorchScript exporter under every torch (torch 2.9+ defaults to
        # dynamo=True, whose optimizer fuses BatchNorm into the Conv before
        # it): the same graph whichever torch exports it.
        ts = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
        with torch.no_grad():
            torch.onnx.export(model, torch.from_numpy(x), onnx_path + ".tmp", opset_version=17,
                              input_names=["x"], output_names=outs,
                              dynamic_axes={n: {0: "N"} for n in ["x"] + outs}, **ts)
        os.replace(onnx_path + ".tmp", onnx_path)
        print(f"wrote {onnx_path} ({os.path.getsize(onnx_path) / 1e6:.1f} MB)", file=sys.stderr)


def export_zoo(name, model, x, path, outs):
    """check.py's `ts` export of a ZOO model to path: as written, and
    where that fails, again with check.py's switch for the model."""
    xt = torch.from_numpy(x)
    try:
        zoo.export(model, xt, path, outs, "ts")
    except Exception as e:
        if name not in zoo.SWITCHES:
            raise
        what, switch = zoo.SWITCHES[name]
        print(f"{name}: the export fails as written ({zoo.export_error_text(e)}); again with {what}",
              file=sys.stderr)
        with switch(model):
            zoo.export(model, xt, path, outs, "ts")


def loss_of(spec, outs, targets):
    parts = spec.split(":")
    task, kind, out, tgt = parts[:4]
    return LOSSES[kind](outs[out], targets[tgt])


def bias_caches(model):
    """The modules of model that cache a tensor computed from parameters in
    eval mode (timm's LeViT and EfficientFormerV2 attention biases)."""
    return [m for m in model.modules() if isinstance(getattr(m, "attention_bias_cache", None), dict)]


def step(model, params, x, specs, out_names, targets, caches=()):
    for m in caches:  # computed again from the parameters, in this step's graph
        m.attention_bias_cache = {}
    outs = dict(zip(out_names, model(x)))
    rows = []
    for i, spec in enumerate(specs):
        g = torch.autograd.grad(loss_of(spec, outs, targets), params, retain_graph=i < len(specs) - 1,
                                allow_unused=True)
        rows.append(torch.cat([(torch.zeros_like(p) if gi is None else gi).reshape(-1)
                               for p, gi in zip(params, g)]))
    J = torch.stack(rows)
    return J @ J.T


def time_model(name, d, steps, warmup, threads):
    torch.set_num_threads(threads)
    torch.set_flush_denormal(True)
    _, shape, _, specs, outs, _ = MODELS[name]
    data = np.load(os.path.join(d, name + ".npz"))
    x = torch.from_numpy(data["x"])
    targets = {k: torch.from_numpy(data[k]) for k in data.files if k != "x"}
    model = build(name)
    params = list(model.parameters())
    caches = bias_caches(model)
    for _ in range(warmup):
        step(model, params, x, specs, outs, targets, caches)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step(model, params, x, specs, outs, targets, caches)
        times.append(time.perf_counter() - t0)
    return {"model": name, "median_s": statistics.median(times), "min_s": min(times), "steps": steps,
            "threads": threads, "batch": shape[0], "params": sum(p.numel() for p in params),
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--dir", required=True)
    e.add_argument("--only", default="",
                   help="comma-separated model names (default: the models of docs/bench-step.md, not ZOO's)")
    t = sub.add_parser("time")
    t.add_argument("name", choices=sorted(MODELS))
    t.add_argument("--dir", required=True)
    t.add_argument("--steps", type=int, default=3)
    t.add_argument("--warmup", type=int, default=1)
    t.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if a.cmd == "export":
        export(a.dir, set(filter(None, a.only.split(","))))
    else:
        print(json.dumps(time_model(a.name, a.dir, a.steps, a.warmup, a.threads)))


if __name__ == "__main__":
    main()
