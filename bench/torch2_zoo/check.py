#!/usr/bin/env python3
"""Eighteen real architectures through paretonav, each exported by PyTorch
2.x's three ways: the table of docs/pytorch2-exports.md ("Eighteen real
architectures").

Run from the repository root, with the PyPI torch 2.x venv (torch 2.15.0,
torchvision 0.29.2, timm 1.0.31, onnxscript 0.7.2, onnx 1.23.2, onnxruntime
1.32.0, numpy 2.4.6; the versions are printed and recorded in every row):

    go build -o /tmp/zoo/paretonav .
    PARETONAV_BINARY=/tmp/zoo/paretonav PYTHONPATH=$PWD/python nohup \\
        VENV/bin/python bench/torch2_zoo/check.py run --out /tmp/zoo/out \\
        > /tmp/zoo/run.log 2>&1 &
    VENV/bin/python bench/torch2_zoo/check.py table /tmp/zoo/out/results.jsonl

`run` checks the models one by one, each model × exporter in its own
process with a time limit (--timeout, default 1800 s), and appends one JSON
object per row to OUT/results.jsonl as it goes (a row already there is
skipped, so an interrupted run continues; --models a,b and --exporters
ts,dynamo,dynopt select). `table` prints the Markdown table from it.

Models: random initialisation (pretrained=False), the smallest variant of
each architecture, then every parameter + N(0, 0.02²) and every
BatchNorm's running statistics randomised (mean N(0, 0.1²), variance
U(0.5, 1.5)), as a trained checkpoint would have them: a fresh model's zero
biases, unit norms and 1e-6 layer scales make blocks identities and
gradients degenerate. Eval mode, batch 2. Every model ends in two heads: a
classification head (Linear, log_softmax; task `cls`, nll) and a
regression head (Linear to 3 values; task `reg`, mse) on the pooled
features; the segmentation models have a per-pixel nll head instead of the
first (LR-ASPP: its classifier; DeepLabV3: its classifier and its aux
classifier, both nll).

Exporters, all at opset 20, the batch axis dynamic (the call of
docs/pytorch2-exports.md):

  ts      torch.onnx.export(dynamo=False, training=TrainingMode.PRESERVE,
          do_constant_folding=False)
  dynamo  torch.onnx.export(dynamo=True, optimize=False)
  dynopt  torch.onnx.export(dynamo=True) (the onnxscript optimizer on)

Before each export and each PyTorch forward the model goes through
model.train(); model.eval(), which empties the caches timm's LeViT and
EfficientFormerV2 fill in eval mode (docs/pytorch2-exports.md: a cache
filled before the export is stored as a constant and its parameter is not
trained).

Per row:

  export    the call's exception, if any (with the dynamo exporter's
            exception summary). Where the call fails as written and a switch
            makes it work (timm.layers.set_fused_attn(False) for MaxViT; the
            nn.MultiheadAttention fast path off), the row is checked with the
            switch and says so.
  inspect   `paretonav inspect --json`: whether it imports, unsupported ops,
            warnings.
  untrained paretonav.untrained(module, file): parameters the file does not
            train.
  eval      `paretonav eval --grad-out g.npz` on the batch; per task and per
            trainable initializer, ‖ours − ref‖₂ / ‖ref‖₂ with ref PyTorch's
            autograd gradient of the module's parameter in float64 (the
            float32 weights cast; float32 where float64 fails, recorded in
            `ref_dtype`), mapped onto the initializer by
            paretonav.map_state_dict (by name; transposed and reshaped
            copies) or, for BatchNorm fused into a Conv by the optimizer,
            through the fold (dL/dW' = dL/dW·σ/γ per output channel,
            dL/db' = dL/dβ; the Conv/BatchNorm pairs read from the same
            model's optimize=False export). The worst value and where, and
            PyTorch's own float32 error by the same measure. A parameter
            where PyTorch's float32 gradient is itself off by more than 1e-3
            (its gradient is 0 or vanishes: rounding noise) is counted apart
            (`ill_conditioned`), with ours against PyTorch's float32 error
            there. Initializers the binary trains that hold a buffer
            (`trained_buffers`) or map onto nothing (`no_reference`) are
            listed. Losses: relative error against the float64 reference.
  tune      `paretonav tune --steps 2 --batch 2 --criterion cls+reg` (PNG,
            Adam, lr 1e-3): its warnings.
  ort       the tuned file in onnxruntime (graph optimizations off):
            `paretonav eval` of the tuned file with one extra task per
            output, mse between paretonav's output and ORT's (rms_rel: the
            square root over ORT's root mean square), and the largest
            absolute difference between the tuned losses paretonav computes
            and those computed from ORT's outputs.
  load      paretonav.load_weights(fresh module, tuned file) with no source:
            the keys loaded, its warnings, and the module's outputs against
            ORT's on the tuned file (max |Δ| / max |ORT|), and how many
            parameters changed from the exported values.
"""
import argparse
import contextlib
import copy
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
import warnings

import numpy as np

warnings.filterwarnings("ignore")

EXPORTERS = ("ts", "dynamo", "dynopt")
OPSET = 20
SEED = 41


# ----------------------------------------------------------------- models
# Imports of torch and friends happen in the functions: `table` needs none.


def _nn():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    return torch, nn, F


def heads_class():
    torch, nn, F = _nn()

    class Heads(nn.Module):
        """A body giving pooled features [N, dim], a classification head
        (10 classes, log_softmax) and a regression head (3 values)."""

        def __init__(self, body, dim):
            super().__init__()
            self.body = body
            self.head_cls, self.head_reg = nn.Linear(dim, 10), nn.Linear(dim, 3)

        def forward(self, x):
            h = self.body(x)
            return F.log_softmax(self.head_cls(h), 1), self.head_reg(h)

    return Heads


def timm_model(name, size, **kw):
    def build():
        import timm
        import torch
        body = timm.create_model(name, pretrained=False, num_classes=0, **kw)
        with torch.no_grad():  # the pooled features' size (num_features is not it for MobileNetV4)
            dim = body.eval()(torch.zeros(1, 3, size, size)).shape[1]
        return heads_class()(body, dim)
    return build


def swin_v2():
    import torchvision
    body = torchvision.models.swin_v2_t(weights=None)
    body.head = _nn()[1].Identity()
    return heads_class()(body, 768)


def lraspp():
    torch, nn, F = _nn()
    import torchvision

    class LRASPP2(nn.Module):
        """torchvision's LR-ASPP (MobileNetV3-Large, 5 classes): its forward,
        plus a regression head on the pooled high-level features."""

        def __init__(self):
            super().__init__()
            self.m = torchvision.models.segmentation.lraspp_mobilenet_v3_large(
                weights=None, weights_backbone=None, num_classes=5)
            self.head_reg = nn.Linear(960, 3)

        def forward(self, x):
            f = self.m.backbone(x)
            out = F.interpolate(self.m.classifier(f), size=x.shape[-2:], mode="bilinear", align_corners=False)
            return F.log_softmax(out, 1), self.head_reg(f["high"].mean((2, 3)))

    return LRASPP2()


def deeplab():
    torch, nn, F = _nn()
    import torchvision

    class DeepLab2(nn.Module):
        """torchvision's DeepLabV3 (MobileNetV3-Large, 5 classes) with its aux
        classifier: both outputs as per-pixel log-probabilities."""

        def __init__(self):
            super().__init__()
            self.m = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
                weights=None, weights_backbone=None, num_classes=5, aux_loss=True)

        def forward(self, x):
            r = self.m(x)
            return F.log_softmax(r["out"], 1), F.log_softmax(r["aux"], 1)

    return DeepLab2()


def unet(c=8):
    """The zoo's UNet at width c (bench/unet/make_unet.py exports wider ones)."""
    torch, nn, F = _nn()

    def block(cin, cout, norm):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), norm(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), norm(cout), nn.ReLU())

    def gn(c):
        return nn.GroupNorm(4, c)

    def inorm(c):
        return nn.InstanceNorm2d(c, affine=True)

    class UNet(nn.Module):
        """Two-level UNet: GroupNorm and InstanceNorm blocks, max pooling,
        a ConvTranspose2d and a bilinear upsampling, skip concatenations; a
        per-pixel classification head (4 classes) and a depth head."""

        def __init__(self, c):
            super().__init__()
            self.enc1, self.enc2 = block(3, c, gn), block(c, 2 * c, inorm)
            self.mid = block(2 * c, 4 * c, gn)
            self.up2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
            self.dec2 = block(4 * c, 2 * c, inorm)
            self.red1 = nn.Conv2d(2 * c, c, 1)
            self.dec1 = block(2 * c, c, gn)
            self.head_seg, self.head_depth = nn.Conv2d(c, 4, 1), nn.Conv2d(c, 1, 1)

        def forward(self, x):
            e1 = self.enc1(x)
            e2 = self.enc2(F.max_pool2d(e1, 2))
            m = self.mid(F.max_pool2d(e2, 2))
            d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
            u1 = F.interpolate(self.red1(d2), scale_factor=2, mode="bilinear", align_corners=False)
            d1 = self.dec1(torch.cat([u1, e1], 1))
            return F.log_softmax(self.head_seg(d1), 1), self.head_depth(d1)

    return UNet(c)


def mha():
    torch, nn, F = _nn()

    class MHA(nn.Module):
        """A transformer encoder layer on nn.MultiheadAttention(batch_first=True)
        over 8 tokens of 6 features (dim 32, 4 heads), heads on the mean token."""

        def __init__(self, d=32):
            super().__init__()
            self.embed = nn.Linear(6, d)
            self.pos = nn.Parameter(torch.randn(1, 8, d) * 0.02)
            self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
            self.head_cls, self.head_reg = nn.Linear(d, 10), nn.Linear(d, 3)

        def forward(self, x):
            h = self.embed(x) + self.pos
            a, _ = self.attn(h, h, h, need_weights=False)
            h = self.norm1(h + a)
            h = self.norm2(h + self.ff(h))
            f = h.mean(1)
            return F.log_softmax(self.head_cls(f), 1), self.head_reg(f)

    return MHA()


def seqnet():
    torch, nn, F = _nn()

    class SeqNet(nn.Module):
        """A sequence model: a bidirectional GRU, multi-head self-attention
        (F.scaled_dot_product_attention, qkv by torch.chunk), a two-layer
        LSTM, heads on the last step. 8 steps of 6 features."""

        def __init__(self, d=16, heads=2):
            super().__init__()
            self.heads = heads
            self.embed = nn.Linear(6, d)
            self.gru = nn.GRU(d, d, batch_first=True, bidirectional=True)
            self.qkv, self.proj = nn.Linear(2 * d, 6 * d), nn.Linear(2 * d, 2 * d)
            self.norm = nn.LayerNorm(2 * d)
            self.lstm = nn.LSTM(2 * d, d, num_layers=2, batch_first=True)
            self.head_cls, self.head_reg = nn.Linear(d, 10), nn.Linear(d, 3)

        def forward(self, x):
            h, _ = self.gru(self.embed(x))                      # N, T, 2d
            n, t, c = h.shape
            q, k, v = self.qkv(h).chunk(3, dim=-1)
            q, k, v = (z.reshape(n, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(n, t, c)
            h = self.norm(h + self.proj(a))
            h, _ = self.lstm(h)
            f = h[:, -1]
            return F.log_softmax(self.head_cls(f), 1), self.head_reg(f)

    return SeqNet()


CLS_REG = {"outputs": ["logp", "reg"], "tasks": ["cls:nll:logp:cls", "reg:mse:reg:reg"], "criterion": "cls+reg"}
SEG_REG = {"outputs": ["seg_logp", "reg"], "tasks": ["seg:nll:seg_logp:seg", "reg:mse:reg:reg"], "criterion": "seg+reg"}
SEG_AUX = {"outputs": ["seg_logp", "aux_logp"], "tasks": ["seg:nll:seg_logp:seg", "aux:nll:aux_logp:seg"],
           "criterion": "seg+aux"}
SEG_DEPTH = {"outputs": ["seg_logp", "depth"], "tasks": ["seg:nll:seg_logp:seg", "depth:mse:depth:depth"],
             "criterion": "seg+depth"}

# name -> (what, variant, constructor, input shape, heads)
MODELS = {
    "mobilenetv4": ("timm MobileNetV4", "mobilenetv4_conv_small_035", timm_model("mobilenetv4_conv_small_035", 64),
                    (2, 3, 64, 64), CLS_REG),
    "regnety": ("timm RegNetY", "regnety_002", timm_model("regnety_002", 64), (2, 3, 64, 64), CLS_REG),
    "convnextv2": ("timm ConvNeXtV2", "convnextv2_atto", timm_model("convnextv2_atto", 64), (2, 3, 64, 64), CLS_REG),
    "efficientformerv2": ("timm EfficientFormerV2", "efficientformerv2_s0 (img_size 64)",
                          timm_model("efficientformerv2_s0", 64, img_size=64), (2, 3, 64, 64), CLS_REG),
    "fastvit": ("timm FastViT", "fastvit_t8", timm_model("fastvit_t8", 64), (2, 3, 64, 64), CLS_REG),
    "mobilevitv2": ("timm MobileViTv2", "mobilevitv2_050", timm_model("mobilevitv2_050", 64), (2, 3, 64, 64), CLS_REG),
    "levit": ("timm LeViT", "levit_128s (img_size 128: at 64 the last stage has one token)",
              timm_model("levit_128s", 128, img_size=128), (2, 3, 128, 128), CLS_REG),
    "edgenext": ("timm EdgeNeXt", "edgenext_xx_small", timm_model("edgenext_xx_small", 64), (2, 3, 64, 64), CLS_REG),
    "poolformer": ("timm PoolFormer", "poolformer_s12", timm_model("poolformer_s12", 64), (2, 3, 64, 64), CLS_REG),
    "maxvit": ("timm MaxViT", "maxvit_pico_rw_256 (img_size 64)", timm_model("maxvit_pico_rw_256", 64, img_size=64),
               (2, 3, 64, 64), CLS_REG),
    "vit_reg": ("timm ViT with register tokens", "vit_wee_patch16_reg1_gap_256 (img_size 64)",
                timm_model("vit_wee_patch16_reg1_gap_256", 64, img_size=64), (2, 3, 64, 64), CLS_REG),
    "eva02": ("timm EVA02", "eva02_tiny_patch14_224 (img_size 56)", timm_model("eva02_tiny_patch14_224", 56, img_size=56),
              (2, 3, 56, 56), CLS_REG),
    "lraspp": ("torchvision LR-ASPP", "lraspp_mobilenet_v3_large, 5 classes", lraspp, (2, 3, 64, 64), SEG_REG),
    "deeplabv3": ("torchvision DeepLabV3 with aux", "deeplabv3_mobilenet_v3_large, aux_loss, 5 classes", deeplab,
                  (2, 3, 64, 64), SEG_AUX),
    "swin_v2": ("torchvision Swin v2", "swin_v2_t", swin_v2, (2, 3, 64, 64), CLS_REG),
    "unet": ("UNet (ours)", "ConvTranspose2d, bilinear, GroupNorm, InstanceNorm, skip concat, width 8", unet,
             (2, 3, 32, 32), SEG_DEPTH),
    "mha": ("nn.MultiheadAttention (ours)", "batch_first, dim 32, 4 heads, 8 tokens", mha, (2, 8, 6), CLS_REG),
    "seqnet": ("attention + GRU + LSTM (ours)", "bidirectional GRU, SDPA, 2-layer LSTM, 8 steps", seqnet,
               (2, 8, 6), CLS_REG),
}


def fresh(model):
    """Empties eval-mode caches (timm's attention_bias_cache) by a round
    trip through training mode, as docs/pytorch2-exports.md advises."""
    model.train()
    model.eval()
    return model


def build(name):
    torch, nn, F = _nn()
    torch.manual_seed(SEED)
    model = MODELS[name][2]()
    gen = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=gen))
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=gen))
    return fresh(model)


def batch(name):
    shape, heads = MODELS[name][3], MODELS[name][4]
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal(shape, dtype=np.float32)
    n = shape[0]
    t = {}
    for spec in heads["tasks"]:
        task, kind, out, tgt = spec.split(":")[:4]
        if tgt in t:
            continue
        if tgt == "cls":
            t[tgt] = rng.integers(0, 10, n).astype(np.int64)
        elif tgt == "seg":
            classes = 4 if name == "unet" else 5
            t[tgt] = rng.integers(0, classes, (n,) + shape[2:]).astype(np.int64)
        elif tgt == "reg":
            t[tgt] = rng.standard_normal((n, 3)).astype(np.float32)
        elif tgt == "depth":
            t[tgt] = rng.standard_normal((n, 1) + shape[2:]).astype(np.float32)
    return x, t


# ----------------------------------------------------------------- export


@contextlib.contextmanager
def no_switch(model):
    yield


@contextlib.contextmanager
def mha_fast_path_off(model):
    import torch
    was = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(was)


@contextlib.contextmanager
def timm_unfused_attn(model):
    """timm's attention written out instead of F.scaled_dot_product_attention,
    as timm.layers.set_fused_attn(False) (or TIMM_FUSED_ATTN=0) before
    creating the model does."""
    mods = [m for m in model.modules() if getattr(m, "fused_attn", None) is True]
    for m in mods:
        m.fused_attn = False
    try:
        yield
    finally:
        for m in mods:
            m.fused_attn = True


# Switches a user turns on when the call fails as written (tried only then).
SWITCHES = {"mha": ("torch.backends.mha.set_fastpath_enabled(False)", mha_fast_path_off),
            "maxvit": ("timm.layers.set_fused_attn(False)", timm_unfused_attn)}


def export_call(exporter):
    if exporter == "ts":
        return ("torch.onnx.export(model, (x,), f, dynamo=False, training=TrainingMode.PRESERVE, "
                "do_constant_folding=False, opset_version=20, dynamic_axes=...)")
    if exporter == "dynamo":
        return "torch.onnx.export(model, (x,), f, dynamo=True, optimize=False, opset_version=20, dynamic_axes=...)"
    return "torch.onnx.export(model, (x,), f, dynamo=True, opset_version=20, dynamic_axes=...)"


def export(model, x, path, outs, exporter):
    import torch
    fresh(model)
    dyn = {n: {0: "N"} for n in ["x"] + outs}
    kw = dict(input_names=["x"], output_names=outs, dynamic_axes=dyn, opset_version=OPSET)
    if exporter == "ts":
        torch.onnx.export(model, (x,), path, dynamo=False, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.PRESERVE, **kw)
    else:
        torch.onnx.export(model, (x,), path, dynamo=True, optimize=exporter == "dynopt", verbose=False, **kw)
    fresh(model)


def export_error_text(e):
    """The exception's first line, and the dynamo exporter's exception
    summary (the cause) where it has one."""
    text = str(e).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    out = "%s: %s" % (type(e).__name__, lines[0][:300] if lines else "")
    if "## Exception summary" in text:
        after = text.split("## Exception summary", 1)[1].strip().splitlines()
        cause = next((ln for ln in after if ln.strip()), "")
        where = next((ln for ln in after if ln.startswith("While executing")), "")
        out += " | " + cause[:400] + (" | " + where[:300] if where else "")
    return out


# ----------------------------------------------------------------- references


def torch_losses(outs, targets, tasks, torch, F):
    """Task -> loss tensor, as paretonav's losses (nll: mean over the
    targets; mse: mean over every element)."""
    names = dict(zip([t.split(":")[2] for t in tasks], range(len(outs))))
    res = {}
    for spec in tasks:
        task, kind, out, tgt = spec.split(":")[:4]
        o = outs[names[out]]
        t = targets[tgt]
        if kind == "nll":
            res[task] = F.nll_loss(o, t)
        elif kind == "mse":
            res[task] = F.mse_loss(o, t.to(o.dtype))
        else:
            raise ValueError(kind)
    return res


def reference(model, x, targets, tasks, dtype):
    """Losses and per-task gradients (key -> numpy float64) of the module's
    parameters, computed in dtype."""
    torch, nn, F = _nn()
    m = fresh(copy.deepcopy(model).to(dtype))
    tt = {k: torch.from_numpy(v) for k, v in targets.items()}
    tt = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in tt.items()}
    outs = m(torch.from_numpy(x).to(dtype))
    params = dict(m.named_parameters())
    losses = torch_losses(outs, tt, tasks, torch, F)
    grads = {}
    for task, loss in losses.items():
        g = torch.autograd.grad(loss, list(params.values()), retain_graph=True, allow_unused=True)
        grads[task] = {k: (np.zeros(p.shape) if gi is None else gi.detach().double().numpy())
                       for (k, p), gi in zip(params.items(), g)}
    return {k: float(v) for k, v in losses.items()}, grads


def fused_pairs(plain_path, opt_path, model):
    """For BatchNorm the optimizer fused into the Conv before it: optimized
    initializer -> (BatchNorm γ key, "weight", σ/γ per output channel) for
    the Conv weight W' = W·γ/σ, (β key, "bias", None) for the fused bias.
    Pairs from the optimize=False export; the fused values checked."""
    import onnx
    from onnx import numpy_helper
    plain, opt = onnx.load(plain_path), onnx.load(opt_path)
    sd = {k: v.detach().double().numpy() for k, v in model.state_dict().items()}
    inits = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in opt.graph.initializer}
    consumers = {}
    for n in plain.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    opt_bias = {n.input[1]: (n.input[2] if len(n.input) > 2 else None)
                for n in opt.graph.node if n.op_type == "Conv"}
    out = {}
    for n in plain.graph.node:
        if n.op_type != "Conv" or n.input[1] not in sd:
            continue
        bns = [c for c in consumers.get(n.output[0], []) if c.op_type == "BatchNormalization"]
        if len(bns) != 1 or n.input[1] not in inits:
            continue
        bn = bns[0]
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        w, gamma, beta, mean, var = n.input[1], bn.input[1], bn.input[2], bn.input[3], bn.input[4]
        if gamma not in sd:
            continue
        sigma = np.sqrt(sd[var] + float(np.float32(eps)))
        scale = sd[gamma] / sigma
        want = sd[w] * scale.reshape((-1,) + (1,) * (sd[w].ndim - 1))
        if inits[w].shape != want.shape or not np.allclose(inits[w], want, rtol=1e-4, atol=1e-6):
            continue
        out[w] = (w, "weight", 1 / scale)
        b = opt_bias.get(w)
        if b is not None and b in inits:
            out[b] = (beta, "bias", None)
    return out


# ----------------------------------------------------------------- running


def binary():
    b = os.environ.get("PARETONAV_BINARY")
    if not b:
        raise SystemExit("set PARETONAV_BINARY to the paretonav binary (go build -o /tmp/zoo/paretonav .)")
    return b


def cli(args, timeout):
    t = time.time()
    p = subprocess.run([binary()] + args, capture_output=True, text=True, timeout=timeout)
    out = None
    if p.returncode == 0 and "--json" in args:
        try:
            out = json.loads(p.stdout)
        except ValueError:
            out = None
    return p.returncode, out, p.stderr, time.time() - t


def err_text(stderr):
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith(("step ", "tune ", "eval "))]
    return "\n".join(lines)[-2000:]


def warnings_of(stderr):
    out, cur = [], None
    for ln in stderr.splitlines():
        if ln.startswith("warning:"):
            cur = [ln]
            out.append(cur)
        elif cur is not None and ln.startswith((" ", "\t")):
            cur.append(ln)
        else:
            cur = None
    return ["\n".join(c)[:1500] for c in out]


def rel(a, b):
    nb = float(np.linalg.norm(b))
    d = float(np.linalg.norm(np.asarray(a, np.float64) - b))
    return d / nb if nb > 0 else (0.0 if d == 0 else float("inf"))


def versions():
    import onnx
    import onnxruntime
    import onnxscript
    import timm
    import torch
    import torchvision
    return {"torch": torch.__version__, "torchvision": torchvision.__version__, "timm": timm.__version__,
            "onnxscript": onnxscript.__version__, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
            "numpy": np.__version__, "python": platform.python_version(),
            "paretonav": subprocess.run([binary(), "--version"], capture_output=True, text=True).stdout.strip()}


def check_one(name, exporter, out_dir, step_timeout):
    """One model × exporter: the row (a dict)."""
    torch, nn, F = _nn()
    torch.set_num_threads(1)
    import onnx
    import onnxruntime
    import paretonav
    from paretonav.statedict import map_state_dict, to_key_layout

    what, variant, _, shape, heads = MODELS[name]
    outs, tasks, criterion = heads["outputs"], heads["tasks"], heads["criterion"]
    d = os.path.join(out_dir, name, exporter)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    row = {"model": name, "architecture": what, "variant": variant, "exporter": exporter, "opset": OPSET,
           "input": list(shape), "tasks": tasks, "export_call": export_call(exporter)}
    model = build(name)
    row["parameters"] = int(sum(p.numel() for p in model.parameters()))
    x, targets = batch(name)
    data = os.path.join(d, "data.npz")
    np.savez(data, x=x, **targets)
    path = os.path.join(d, "model.onnx")
    xt = torch.from_numpy(x)

    # export, as written; then with the switch a user would turn on
    t = time.time()
    switch = no_switch
    try:
        export(model, xt, path, outs, exporter)
    except Exception as e:
        row["export_error"] = export_error_text(e)
        if name not in SWITCHES:
            row["stage"] = "export"
            return row
        row["switch"], switch = SWITCHES[name]
        try:
            with switch(model):
                export(model, xt, path, outs, exporter)
        except Exception as e2:
            row["export_error_switched"] = export_error_text(e2)
            row["stage"] = "export"
            return row
    row["export_s"] = round(time.time() - t, 1)
    proto = onnx.load(path, load_external_data=False)
    row["file_opset"] = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    row["external_data"] = os.path.exists(path + ".data")
    row["ops"] = sorted({n.op_type for n in proto.graph.node})

    # PyTorch's outputs and ONNX Runtime's on the exported file
    with torch.no_grad(), switch(model):
        ref_out = [o.numpy() for o in fresh(model)(xt)]
    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    try:
        sess = onnxruntime.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        ort_out = sess.run(outs, {"x": x})
        row["ort_vs_torch"] = max(float(np.abs(a - b).max()) for a, b in zip(ort_out, ref_out))
    except Exception as e:
        row["ort_vs_torch_error"] = str(e)[:400]

    # inspect
    rc, ins, stderr, _ = cli(["inspect", "--json", path], step_timeout)
    row["inspect"] = {"rc": rc}
    if rc != 0:
        row["inspect"]["error"] = err_text(stderr)
        row["stage"] = "inspect"
        return row
    row["inspect"].update(unsupported=ins.get("unsupported"), unsupported_nodes=ins.get("unsupported_nodes", [])[:10],
                          warnings=ins.get("warnings", []), trainable=len(ins.get("trainable", [])),
                          trainable_parameters=ins.get("trainable_parameters"),
                          shared=[s.get("name") if isinstance(s, dict) else s for s in ins.get("shared_initializers", [])])
    left = paretonav.untrained(model, path)
    row["untrained"] = list(left)
    row["untrained_reasons"] = sorted(set(left.values()))

    # eval with gradients, against PyTorch's
    task_args = sum((["--task", t] for t in tasks), [])
    gpath = os.path.join(d, "g.npz")
    rc, ev, stderr, secs = cli(["eval", path, "--data", data, "--batch", "2", "--grad-out", gpath, "--json"]
                               + task_args, step_timeout)
    row["eval"] = {"rc": rc, "seconds": round(secs, 1)}
    if rc != 0:
        row["eval"]["error"] = err_text(stderr)
        row["stage"] = "eval"
        return row
    ours_losses = ev["tasks"]
    ref_dtype = "float64"
    try:
        with switch(model):
            ref_losses, ref_grads = reference(model, x, targets, tasks, torch.float64)
    except Exception as e:
        ref_dtype = "float32"
        row["float64_error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
        with switch(model):
            ref_losses, ref_grads = reference(model, x, targets, tasks, torch.float32)
    with switch(model):
        _, f32_grads = reference(model, x, targets, tasks, torch.float32) if ref_dtype == "float64" else (None, None)
    row["loss_rel"] = {k: abs(ours_losses[k] - ref_losses[k]) / abs(ref_losses[k]) for k in ref_losses}
    row["losses"] = {"paretonav": ours_losses, "torch": ref_losses}

    mapping, _ = map_state_dict(path, model)
    by_init = {mapping.initializer[n]: (n, k) for n, k in mapping.items()}
    fused = {}
    if exporter == "dynopt":
        plain = os.path.join(d, "plain.onnx")
        try:
            with switch(model):
                export(model, xt, plain, outs, "dynamo")
            fused = fused_pairs(plain, path, model)
        except Exception as e:
            row["fused_pairs_error"] = str(e)[:300]
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    sd_shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    g = np.load(gpath)
    # A parameter whose gradient is zero in exact arithmetic (a bias right
    # before a normalization that removes it) has a float32 gradient of pure
    # rounding noise: PyTorch's own float32 gradient is off by more than
    # ILL from the float64 one there. Those are reported apart, as ours
    # against PyTorch's float32 error on the same parameter.
    ILL = 1e-3
    worst, where, worst32, where32 = 0.0, None, 0.0, None
    ill, ill_ratio, ill_where = 0, 0.0, None
    zero_ref_mismatch = []
    no_ref, trained_buffers, compared = [], [], 0
    per_init = {}
    for key in g.files:
        task, init = key.split("/", 1)
        ours = g[key].astype(np.float64)
        if init in by_init:
            oname, sk = by_init[init]
            if sk in buffers and sk not in params:
                trained_buffers.append(init)
                continue
            ours_k, refg = to_key_layout(mapping, oname, ours, sd_shapes[sk]), ref_grads[task][sk]
            r32 = f32_grads[task][sk] if f32_grads else None
        elif init in fused:
            sk, how, s = fused[init]
            refg = ref_grads[task][sk]
            r32 = f32_grads[task][sk] if f32_grads else None
            if how == "weight":
                refg = refg * s.reshape((-1,) + (1,) * (refg.ndim - 1))
                r32 = None if r32 is None else r32 * s.reshape((-1,) + (1,) * (r32.ndim - 1))
            ours_k = ours
        else:
            if init not in no_ref:
                no_ref.append(init)
            continue
        compared += 1
        e = rel(ours_k.reshape(refg.shape), refg)
        if np.linalg.norm(refg) == 0:
            if e != 0:
                zero_ref_mismatch.append("%s (|ours| %.2g)" % (key, float(np.linalg.norm(ours_k))))
            continue
        e32 = rel(r32, refg) if r32 is not None else None
        if e32 is not None and e32 > ILL:
            ill += 1
            ratio = e / e32
            if ratio > ill_ratio:
                ill_ratio, ill_where = ratio, key
            continue
        per_init[key] = e
        if e > worst:
            worst, where = e, key
        if e32 is not None and e32 > worst32:
            worst32, where32 = e32, key
    row["grad"] = {"ref_dtype": ref_dtype, "compared": compared, "worst": worst, "where": where,
                   "torch_float32_worst": worst32 if f32_grads else None, "torch_float32_where": where32,
                   "ill_conditioned": ill, "ill_worst_ratio_to_torch_float32": ill_ratio, "ill_where": ill_where,
                   "zero_ref_mismatch": zero_ref_mismatch[:10], "no_reference": no_ref[:20],
                   "no_reference_count": len(no_ref), "trained_buffers": trained_buffers,
                   "fused": len({k for k in fused if any(f.endswith("/" + k) for f in g.files)})}
    # the ten worst, for the record
    row["grad"]["worst10"] = sorted(per_init.items(), key=lambda kv: -kv[1])[:10]

    # tune, two steps
    tuned = os.path.join(d, "tuned.onnx")
    rc, tu, stderr, secs = cli(["tune", path, "--data", data, "--batch", "2", "--steps", "2", "--criterion", criterion,
                                "--out", tuned, "--json"] + task_args, step_timeout)
    row["tune"] = {"rc": rc, "seconds": round(secs, 1), "warnings": warnings_of(stderr)}
    if rc != 0:
        row["tune"]["error"] = err_text(stderr)
        row["stage"] = "tune"
        return row
    row["tune"]["after"] = tu["after"]["losses"]

    # the tuned file in ONNX Runtime, against paretonav's eval of it
    try:
        sess = onnxruntime.InferenceSession(tuned, so, providers=["CPUExecutionProvider"])
        ort_t = dict(zip(outs, sess.run(outs, {"x": x})))
    except Exception as e:
        row["ort"] = {"error": str(e)[:600]}
        row["stage"] = "ort"
        return row
    odata = os.path.join(d, "data_ort.npz")
    np.savez(odata, x=x, **targets, **{"ort_" + o: v for o, v in ort_t.items()})
    otasks = task_args + sum((["--task", "o_%s:mse:%s:ort_%s" % (o, o, o)] for o in outs), [])
    rc, ev2, stderr, secs = cli(["eval", tuned, "--data", odata, "--batch", "2", "--json"] + otasks, step_timeout)
    row["ort"] = {"rc": rc, "seconds": round(secs, 1)}
    if rc != 0:
        row["ort"]["error"] = err_text(stderr)
        row["stage"] = "ort"
        return row
    rms = {o: float(np.sqrt(ev2["tasks"]["o_" + o]) / np.sqrt(np.mean(np.square(ort_t[o].astype(np.float64)))))
           for o in outs}
    tt = {k: torch.from_numpy(v) for k, v in targets.items()}
    ort_losses = {k: float(v) for k, v in torch_losses([torch.from_numpy(ort_t[o]).double() for o in outs],
                                                       {k: (v.double() if v.is_floating_point() else v)
                                                        for k, v in tt.items()}, tasks, torch, F).items()}
    row["ort"].update(rms_rel=rms, loss_rel={k: abs(ev2["tasks"][k] - ort_losses[k]) / abs(ort_losses[k])
                                             for k in ort_losses},
                      loss_abs={k: abs(ev2["tasks"][k] - ort_losses[k]) for k in ort_losses}, losses=ort_losses)

    # load back, the tuned file alone
    m2 = build(name)
    before = {k: v.detach().clone() for k, v in m2.named_parameters()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            loaded = paretonav.load_weights(m2, tuned)
        except Exception as e:
            row["load"] = {"error": "%s: %s" % (type(e).__name__, str(e)[:1500]),
                           "warnings": [str(w.message)[:800] for w in caught if "Paretonav" in type(w.message).__name__]}
            row["stage"] = "load"
            return row
    changed = sum(1 for k, v in m2.named_parameters() if not torch.equal(v, before[k]))
    with torch.no_grad(), switch(m2):
        back = [o.numpy() for o in fresh(m2)(xt)]
    row["load"] = {"loaded": len(loaded), "state_dict": len(m2.state_dict()),
                   "counters": sum(1 for k in m2.state_dict() if k.endswith("num_batches_tracked")),
                   "changed_parameters": changed,
                   "parameters": len(before),
                   "warnings": [str(w.message)[:800] for w in caught if "Paretonav" in type(w.message).__name__],
                   "vs_ort": max(float(np.abs(a - ort_t[o]).max() / max(np.abs(ort_t[o]).max(), 1e-30))
                                 for a, o in zip(back, outs))}
    row["stage"] = "done"
    return row


def cmd_one(args):
    t = time.time()
    try:
        row = check_one(args.model, args.exporter, args.out, args.step_timeout)
    except Exception as e:
        row = {"model": args.model, "exporter": args.exporter, "stage": "script",
               "error": "%s: %s" % (type(e).__name__, str(e)[:800]), "traceback": traceback.format_exc()[-3000:]}
    row["seconds"] = round(time.time() - t, 1)
    with open(args.result, "w") as fh:
        json.dump(row, fh, default=float)


def done_rows(path):
    rows = {}
    if os.path.exists(path):
        with open(path) as fh:
            for ln in fh:
                if ln.strip():
                    r = json.loads(ln)
                    rows[(r["model"], r["exporter"])] = r
    return rows


def cmd_run(args):
    os.makedirs(args.out, exist_ok=True)
    res = os.path.join(args.out, "results.jsonl")
    ver = versions()
    print("versions:", json.dumps(ver), flush=True)
    models = args.models.split(",") if args.models else list(MODELS)
    for m in models:
        if m not in MODELS:
            raise SystemExit("unknown model %r: one of %s" % (m, ", ".join(MODELS)))
    exporters = args.exporters.split(",") if args.exporters else list(EXPORTERS)
    have = done_rows(res)
    for m in models:
        for e in exporters:
            if (m, e) in have and not args.redo:
                print("skip", m, e, "(in results.jsonl)", flush=True)
                continue
            rfile = os.path.join(args.out, ".row.%s.%s.%d.json" % (m, e, os.getpid()))
            if os.path.exists(rfile):
                os.remove(rfile)
            t = time.time()
            cmd = [sys.executable, os.path.abspath(__file__), "one", m, e, "--out", args.out, "--result", rfile,
                   "--step-timeout", str(args.timeout)]
            try:
                p = subprocess.run(cmd, timeout=args.timeout, capture_output=True, text=True)
                if os.path.exists(rfile):
                    with open(rfile) as fh:
                        row = json.load(fh)
                else:
                    row = {"model": m, "exporter": e, "stage": "script",
                           "error": "exit %d: %s" % (p.returncode, p.stderr[-1500:])}
            except subprocess.TimeoutExpired:
                row = {"model": m, "exporter": e, "stage": "timeout",
                       "error": "over the per-row limit of %d s" % args.timeout}
            row["wall_s"] = round(time.time() - t, 1)
            row["date"] = datetime.date.today().isoformat()
            row["versions"] = ver
            with open(res, "a") as fh:
                fh.write(json.dumps(row, default=float) + "\n")
            print(m, e, row.get("stage"), "%.0fs" % row["wall_s"], flush=True)


# ----------------------------------------------------------------- table


EXPORTER_WORDS = {"ts": "TorchScript", "dynamo": "dynamo, optimize=False", "dynopt": "dynamo (optimized)"}


def short(s, n=160):
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[:n - 1] + "…"


# Notes the table's last column points to (docs/pytorch2-exports.md
# explains each at length).
NOTES = {
    "X": "the export itself fails (PyTorch)",
    "S": "exported with a documented switch; the call as written fails",
    "F": "the optimizer fused BatchNorm into the Conv before it",
    "G": "the optimizer folded parameters into new tensors that map onto no parameter",
    "B": "a float buffer is trained (the TorchScript file does not mark buffers)",
    "N": "parameters whose gradient is 0 or vanishes: float32 gradients there, PyTorch's too, are rounding noise",
}


def e1(x):
    return "%.1e" % x


def row_cells(r):
    """model, exporter, imports, gradients, loss, tune→ORT, load_weights, notes."""
    cells = [r["model"], EXPORTER_WORDS[r["exporter"]]]
    notes = []
    stage = r.get("stage")
    if stage in ("export", "script", "timeout"):
        why = r.get("export_error_switched") or r.get("export_error") or r.get("error")
        return cells + ["export fails: " + short(why, 300)] + ["—"] * 4 + ["X"]
    if r.get("switch"):
        notes.append("S")
    ins = r.get("inspect", {})
    if ins.get("rc") != 0:
        return cells + ["no: " + short(ins.get("error"))] + ["—"] * 4 + [" ".join(notes)]
    imp = "yes" if not ins.get("unsupported") else "unsupported: " + ", ".join(ins["unsupported"])
    if r.get("untrained"):
        imp += "; %d parameters not trained" % len(r["untrained"])
    cells.append(imp)
    ev = r.get("eval", {})
    if ev.get("rc") != 0:
        return cells + ["eval fails: " + short(ev.get("error"))] + ["—"] * 3 + [" ".join(notes)]
    g = r["grad"]
    gc = "%s (%s); PyTorch f32 %s" % (e1(g["worst"]), g["where"], e1(g["torch_float32_worst"])
                                     if g.get("torch_float32_worst") is not None else "—")
    if g["ref_dtype"] != "float64":
        gc += "; reference float32"
    if g.get("ill_conditioned"):
        gc += "; %d ≈ 0: ours ≤ %.1f× PyTorch f32's error" % (g["ill_conditioned"],
                                                             g["ill_worst_ratio_to_torch_float32"])
        notes.append("N")
    if g.get("fused"):
        gc += "; %d fused" % g["fused"]
        notes.append("F")
    if g["no_reference_count"]:
        gc += "; %d with no counterpart" % g["no_reference_count"]
        notes.append("G")
    if g["trained_buffers"]:
        gc += "; trains buffer %s" % ", ".join(sorted(set(g["trained_buffers"])))
        notes.append("B")
    if g["zero_ref_mismatch"]:
        gc += "; NONZERO WHERE PyTorch's IS 0: %s" % ", ".join(g["zero_ref_mismatch"][:3])
    cells.append(gc)
    cells.append(e1(max(r["loss_rel"].values())))
    tu = r.get("tune", {})
    if tu.get("rc") != 0:
        return cells + ["tune fails: " + short(tu.get("error"))] + ["—"] + [" ".join(notes)]
    o = r.get("ort", {})
    if "rms_rel" not in o:
        return cells + ["ORT: " + short(o.get("error"))] + ["—"] + [" ".join(notes)]
    oc = "%s; %s" % (e1(max(o["rms_rel"].values())), e1(max(o["loss_abs"].values())) if "loss_abs" in o else "—")
    cells.append(oc)
    ld = r.get("load", {})
    if "error" in ld:
        err = ld["error"]
        if "rewrote" in err:
            import re
            m = re.search(r"rewrote (\d+) initializer", err)
            cells.append("refused: %s initializers rewritten by the optimizer" % (m.group(1) if m else "some"))
            if "F" not in notes and "G" not in notes:
                notes.append("G")
        elif "no initializer of" in err:
            m = err.split("holds these parameters or buffers ")[-1].split(": forward()")[0] \
                if "holds these" in err else err.split("holds this parameter or buffer ")[-1].split(": forward()")[0]
            keys = [k.strip() for k in m.split(",")]
            cells.append("refused: %d parameters in no initializer (%s)" % (len(keys), short(", ".join(keys), 70)))
            if "G" not in notes:
                notes.append("G")
        else:
            cells.append("refused: " + short(err, 200))
    else:
        lc = "%d/%d keys, %d/%d parameters changed; outputs vs ORT %s" % (
            ld["loaded"], ld["state_dict"] - ld.get("counters", 0), ld["changed_parameters"], ld["parameters"],
            e1(ld["vs_ort"]))
        if ld.get("warnings"):
            lc += "; warns: " + short(" ".join(ld["warnings"]), 100)
        cells.append(lc)
    return cells + [" ".join(sorted(set(notes), key="XSFGBN".index))]


def cmd_table(args):
    rows = list(done_rows(args.results).values())
    order = {m: i for i, m in enumerate(MODELS)}
    rows.sort(key=lambda r: (order.get(r["model"], 99), EXPORTERS.index(r["exporter"])))
    print("| model | architecture | variant | input | parameters |")
    print("|---|---|---|---|---|")
    seen = set()
    for r in rows:
        if r["model"] in seen or r["model"] not in MODELS:
            continue
        seen.add(r["model"])
        what, variant, _, shape, _ = MODELS[r["model"]]
        print("| %s | %s | `%s` | %s | %s |" % (r["model"], what, variant, "×".join(map(str, shape)),
                                               "{:,}".format(r["parameters"]) if "parameters" in r else "—"))
    print()
    print("| model | exporter | imports | per-task gradients: worst relative L2 error vs PyTorch float64 (where);"
          " PyTorch float32's own | loss | tuned, in ONNX Runtime: outputs (rms rel); losses (max abs) |"
          " load_weights(module, tuned file) | notes |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(c.replace("|", "\\|") for c in row_cells(r)) + " |")
    if rows:
        print()
        v = rows[0].get("versions", {})
        print("Measured %s: %s." % (rows[0].get("date"), ", ".join("%s %s" % kv for kv in v.items())))
        print("Notes: " + "; ".join("%s: %s" % kv for kv in NOTES.items()) + ".")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", default="/tmp/zoo/out")
    r.add_argument("--models", default="")
    r.add_argument("--exporters", default="")
    r.add_argument("--timeout", type=int, default=1800, help="seconds per model × exporter")
    r.add_argument("--redo", action="store_true", help="check rows already in results.jsonl again")
    o = sub.add_parser("one")
    o.add_argument("model")
    o.add_argument("exporter", choices=EXPORTERS)
    o.add_argument("--out", required=True)
    o.add_argument("--result", required=True)
    o.add_argument("--step-timeout", type=int, default=1800)
    t = sub.add_parser("table")
    t.add_argument("results")
    args = ap.parse_args()
    {"run": cmd_run, "one": cmd_one, "table": cmd_table}[args.cmd](args)


if __name__ == "__main__":
    main()
