#!/usr/bin/env python3
"""PyTorch 2.x reference fixtures: both of torch.onnx.export's exporters, in the
layout of ../torch/make_fixtures.py (read its docstring for the files, the
float64 reference and the loss kinds; this script imports its models, losses
and ONNX Runtime runner).

Made with (a venv outside the repo; PyPI's torch is the CUDA build on x86_64,
it runs on the CPU):

    torch 2.15.0, torchvision 0.29.2, timm 1.0.31, onnxscript 0.7.2,
    onnx_ir 1.1.0, onnx 1.23.2, onnxruntime 1.32.0 (PyPI), numpy 2.4.6;
    onnxruntime-node 1.30.0 for the recorded ort/ arrays

Regenerate from the repo root (about six minutes on two busy cores):

    python3 -m venv /tmp/venv-torch2
    /tmp/venv-torch2/bin/pip install torch==2.15.0 torchvision==0.29.2 timm==1.0.31 \
        onnxscript==0.7.2 onnx==1.23.2 onnxruntime==1.32.0
    PARETONAV_ORT_DIR=$PWD/.tools/ort/node_modules PYTHONPATH=$PWD/python \
        /tmp/venv-torch2/bin/python backend/testdata/torch2/make_torch2_fixtures.py

Fixture names are MODEL_EXPORTER_opNN:

  EXPORTER  ts      torch.onnx.export(..., dynamo=False): the TorchScript
                    exporter, with training=TrainingMode.PRESERVE on the eval
                    model and do_constant_folding=False (BatchNormalization
                    kept in inference mode, every parameter an initializer
                    under its state_dict name). Its newest opset is 20; at 21
                    it warns and writes opset-20 forms under opset 21.
            dynamo  torch.onnx.export(..., dynamo=True, optimize=False): the
                    torch.export-based exporter without the onnxscript
                    optimizer, which keeps BatchNormalization and every
                    parameter under its state_dict name.
            dynopt  torch.onnx.export(..., dynamo=True): the default, with the
                    optimizer. It folds what reads only parameters into new
                    initializers: Linear weights transposed for MatMul
                    (val_NN), ConvNeXt's layer scale reshaped (view_N), and
                    BatchNormalization into the Conv before it (the Conv
                    keeps its weight's name but holds W' = W·γ/σ, a new
                    W_bias holds (b − μ)·γ/σ + β; the BN parameters are
                    gone; a Conv with a bias keeps the bias's name for
                    the fused one). The reference gradients of folded initializers
                    are PyTorch's mapped through the fold: transposed,
                    reshaped, dL/dW' = dL/dW·σ/γ per output channel and
                    dL/dW_bias = dL/dβ (the pairs read from the model's
                    optimize=False export, the fused values checked).
                    Swin's is no fixture (its bias table is gathered into
                    new tensors, and a lifted scalar has no metadata); it is
                    kept as rejected_swin_dynopt_op20.onnx (no .json) for
                    the importer's tests.
  opNN      the opset: each exporter's default (20 for both in torch 2.15,
            opset_version left out) and 21.

Models (every parameter perturbed by N(0, 0.05^2) after initialisation and
every BatchNorm's affine parameters and running statistics randomised, so no
two tensors are equal; eval mode; batch axis "N" dynamic):

  lenet2    the two-head LeNet of make_fixtures.py, input [N,1,36,36], batch 4
  mtan      make_fixtures.py's SegNet/MTAN (MaxPool indices, MaxUnpool,
            attention gates), input [N,3,32,32], batch 2; three tasks. The
            unpooling calls aten::max_unpool2d with an explicit output size
            (F.max_unpool2d's size check fails under torch 2.x's tracer);
            the TorchScript export uses make_fixtures.py's symbolic (MaxUnpool),
            the dynamo exporter its own translation (ScatterND into zeros).
  vit2      torchvision VisionTransformer (image 32, patch 8, 2 layers,
            hidden 32, 2 heads, MLP 64; nn.MultiheadAttention), heads on the
            class token (10 and 5 classes)
  convnext  timm convnext_atto topology, depths (1,1,1,1), dims (8,16,24,32):
            depthwise 7x7 conv, LayerNorm (channels-last and LayerNorm2d),
            GELU, layer scale
  effnet    timm EfficientNet-B0's first four stages, width x0.25, depth
            x0.25, 32 features: depthwise conv, squeeze-excitation, SiLU, BN
  resnet    timm resnet10t (deep stem, avg-pool downsample), channels
            (8,16,24,32), stem width 8
  deit      timm deit_tiny topology: image 32, patch 8, depth 2, dim 32,
            2 heads (fused qkv Linear, scaled_dot_product_attention, GELU)
  swin      timm swin_tiny topology: image 32, patch 2, window 4, dim 16,
            depths (2,1), heads (1,2): window attention with relative
            position bias, a shifted window (torch.roll, attention mask)
  masked    one attention block (16 tokens of dim 16) computing its masks
            and chunks at run time: ~mask and cumsum (EdgeNeXt), != 0 and
            masked_fill (Swin), <, |, >=, <=, &, ^, ==, torch.where,
            torch.fmod, torch.chunk and torch.split (SplitToSequence +
            SequenceAt under the dynamo exporter), input [N,3,16,16]
  upsample  Conv, BatchNorm, bilinear F.interpolate(scale_factor=2) (Resize
            with constant scales, lifted by the optimizer into an
            initializer without metadata), Conv; input [N,3,8,8]. The
            optimizer fuses the BatchNorm into the Conv's own bias.
  recurrent bidirectional nn.GRU (4 -> 6), then nn.LSTM (12 -> 5), batch
            first, input [N,7,4], heads on the last step (ONNX GRU and LSTM
            nodes). The optimized export folds the GRU's reordered weights
            into new tensors: no fixture.

timm models get two Linear heads (10 and 5 classes) + log_softmax on their
pooled features (num_classes=0). Tasks a:nll:logp_a:a and b:nll:logp_b:b,
input 3x32x32, batch 4.

The arrays are make_fixtures.py's but for ort/ (ONNX Runtime's outputs
are compared with PyTorch's here, within 1e-5, and the largest difference
recorded as `ort_vs_torch`): the TorchScript and dynamo (optimize=False)
exports of a model share one data file, MODEL_ref.npz (same initializer
names, same reference), the dynopt exports MODEL_dynopt.npz. Beside
make_fixtures.py's keys, every NAME.json records
`exporter`, `export_call` (the call that made it), `initializer_from`
(ONNX initializer -> [state_dict key, "name" | "value" | "transpose" |
"reshape"]) and `statedict_py` (python/paretonav's map_state_dict on the
file: its mapping, rules and unmapped keys), when that package is on
PYTHONPATH.
"""
import ast
import copy
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "torch"))
from functools import partial

import numpy as np
import onnx
import onnxruntime
import onnxscript
import timm
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from onnx import numpy_helper
from timm.models._efficientnet_builder import decode_arch_def, round_channels
from timm.models.efficientnet import EfficientNet
from torchvision.models import VisionTransformer

import make_fixtures as mf  # registers the TorchScript symbolic of aten::max_unpool2d

try:
    from paretonav.statedict import map_state_dict
except ImportError:  # python/ not on PYTHONPATH
    map_state_dict = None

warnings.filterwarnings("ignore")


# ---------------------------------------------------------------- models


class MTAN2(mf.MTANSmall):
    """make_fixtures.py's MTAN with aten::max_unpool2d called directly."""

    def forward(self, x):
        def unpool(v, i):
            return torch.ops.aten.max_unpool2d(v, i, [v.shape[2] * 2, v.shape[3] * 2])

        e1 = self.enc1(x)
        p1, i1 = self.pool(e1)
        e2 = self.enc2(p1)
        p2, i2 = self.pool(e2)
        m = self.mid(p2)
        d2 = unpool(self.dec2(m), i2)
        d1 = unpool(self.dec1(d2), i1)
        shared = self.dec0(d1)
        cat = torch.cat([shared, e1], dim=1)
        seg = self.head_seg(self.att_seg(cat) * shared)
        depth = self.head_depth(self.att_depth(cat) * shared)
        normal = self.head_normal(self.att_normal(cat) * shared)
        normal = normal / torch.norm(normal, p=2, dim=1, keepdim=True)
        return F.log_softmax(seg, dim=1), depth, normal


class ViT2(nn.Module):
    def __init__(self):
        super().__init__()
        self.vit = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                     hidden_dim=32, mlp_dim=64, num_classes=10)
        self.head_b = nn.Linear(32, 5)

    def forward(self, x):
        v = self.vit
        x = v._process_input(x)
        x = torch.cat([v.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = v.encoder(x)[:, 0]
        return F.log_softmax(v.heads(x), 1), F.log_softmax(self.head_b(x), 1)


class TwoHead(nn.Module):
    """A timm body (num_classes=0: pooled features) and two Linear heads."""

    def __init__(self, body, dim):
        super().__init__()
        self.body = body
        self.head_a, self.head_b = nn.Linear(dim, 10), nn.Linear(dim, 5)

    def forward(self, x):
        h = self.body(x)
        return F.log_softmax(self.head_a(h), 1), F.log_softmax(self.head_b(h), 1)


class Masked(nn.Module):
    """Masks and chunks computed at run time, as Swin, EdgeNeXt, MobileViTv2
    and LeViT write them, in a small attention block: a positional encoding
    from a data-dependent mask (~mask, cumsum), attention with a band mask
    from shapes (constant: != 0, masked_fill) and a key mask from the data
    (<, |), qkv and a GLU by torch.chunk, torch.split, gates from >=, <=,
    &, ^ and ==, torch.where, torch.fmod."""

    def __init__(self, dim=16):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 4, stride=4)
        self.pos = nn.Linear(2, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.glu = nn.Linear(dim, 2 * dim)
        self.head_a, self.head_b = nn.Linear(dim, 10), nn.Linear(dim, 5)

    def forward(self, x):
        h = self.stem(x)                                    # N, C, H, W
        n, c = h.shape[0], h.shape[1]
        mask = h[:, 0] > 0                                  # N, H, W from the data
        not_mask = ~mask
        y_embed = not_mask.cumsum(1, dtype=h.dtype)
        x_embed = not_mask.cumsum(2, dtype=h.dtype)
        y_embed = y_embed / (y_embed[:, -1:, :] + 1e-6)
        x_embed = x_embed / (x_embed[:, :, -1:] + 1e-6)
        t = h.flatten(2).transpose(1, 2)                    # N, L, C
        t = t + self.pos(torch.stack([y_embed, x_embed], -1).flatten(1, 2))
        q, k, v = self.qkv(t).chunk(3, dim=-1)
        attn = q @ k.transpose(-2, -1) * c ** -0.5          # N, L, L
        ids = torch.arange(t.shape[1], device=x.device)
        band = (ids[None, :] - ids[:, None]).abs() - 2
        band = band.clamp(min=0)
        attn = attn.masked_fill(band != 0, -100.0)          # Swin's mask, from shapes
        keys = (t[:, :, 0] < -0.5) | (t[:, :, 1] > 1.0)     # N, L from the data
        attn = attn.masked_fill(keys[:, None, :] & (band == 0), -30.0)
        t = t + self.proj(attn.softmax(-1) @ v)
        a, b = torch.split(self.glu(t), [c, c], dim=-1)
        t = t + a * torch.sigmoid(b)
        gate = ((t >= -1.0) & (t <= 1.0)) ^ (t == t.amax(-1, keepdim=True))
        t = torch.where(gate, t, 0.5 * t) + 0.1 * torch.fmod(t, 0.75)
        f = t.mean(1)
        return F.log_softmax(self.head_a(f), 1), F.log_softmax(self.head_b(f), 1)


class Upsample(nn.Module):
    """Conv, BatchNorm, a bilinear upsampling by a scale factor (Resize with
    constant scales, which the optimized export lifts into an initializer
    without metadata) and a second Conv, two heads."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2)
        self.head_a, self.head_b = nn.Linear(8, 10), nn.Linear(8, 5)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
        f = F.relu(self.conv2(h)).mean((2, 3))
        return F.log_softmax(self.head_a(f), 1), F.log_softmax(self.head_b(f), 1)


class Recurrent(nn.Module):
    """A bidirectional GRU and an LSTM over a sequence, two heads on the
    last step (ONNX GRU and LSTM nodes under every exporter)."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 6, batch_first=True, bidirectional=True)
        self.lstm = nn.LSTM(12, 5, batch_first=True)
        self.head_a, self.head_b = nn.Linear(5, 10), nn.Linear(5, 5)

    def forward(self, x):
        h, _ = self.gru(x)
        h, _ = self.lstm(h)
        f = h[:, -1]
        return F.log_softmax(self.head_a(f), 1), F.log_softmax(self.head_b(f), 1)


def effnet():
    arch = [['ds_r1_k3_s1_e1_c16_se0.25'], ['ir_r2_k3_s2_e6_c24_se0.25'],
            ['ir_r2_k5_s2_e6_c40_se0.25'], ['ir_r3_k3_s2_e6_c80_se0.25']]
    return EfficientNet(block_args=decode_arch_def(arch, 0.25), num_features=32, stem_size=8,
                        round_chs_fn=partial(round_channels, multiplier=0.25), act_layer=nn.SiLU,
                        num_classes=0)


def timm_two(name, **kw):
    return lambda: TwoHead(timm.create_model(name, pretrained=False, num_classes=0, **kw), 32)


TWO = [("a", "nll", "logp_a", "a", ""), ("b", "nll", "logp_b", "b", "")]
MTAN_TASKS = [("seg", "nll", "seg_logp", "seg", "ignore_index=-1"),
              ("depth", "depth_l1", "depth", "depth_t", ""),
              ("normal", "normal_cos", "normal", "normal_t", "")]

# name -> (constructor, input shape, outputs, tasks, description)
MODELS = {
    "lenet2": (lambda: mf.LeNet2("flatten"), (4, 1, 36, 36), ["logp_left", "logp_right"],
               [("left", "nll", "logp_left", "left", ""), ("right", "nll", "logp_right", "right", "")],
               "Two-head LeNet (Pareto-MTL/EPO MultiMNIST)."),
    "mtan": (MTAN2, (2, 3, 32, 32), ["seg_logp", "depth", "normal"], MTAN_TASKS,
             "Small SegNet/MTAN: MaxPool indices, MaxUnpool, attention gates, BatchNorm."),
    "vit2": (ViT2, (4, 3, 32, 32), ["logp_a", "logp_b"], TWO,
             "torchvision VisionTransformer (image 32, patch 8, 2 layers, hidden 32, 2 heads, MLP 64)."),
    "convnext": (timm_two("convnext_atto", depths=(1, 1, 1, 1), dims=(8, 16, 24, 32)),
                 (4, 3, 32, 32), ["logp_a", "logp_b"], TWO,
                 "timm convnext_atto topology, depths (1,1,1,1), dims (8,16,24,32)."),
    "effnet": (lambda: TwoHead(effnet(), 32), (4, 3, 32, 32), ["logp_a", "logp_b"], TWO,
               "timm EfficientNet-B0, first four stages, width x0.25, depth x0.25."),
    "resnet": (timm_two("resnet10t", channels=(8, 16, 24, 32), stem_width=8),
               (4, 3, 32, 32), ["logp_a", "logp_b"], TWO,
               "timm resnet10t, channels (8,16,24,32), stem width 8."),
    "deit": (timm_two("deit_tiny_patch16_224", img_size=32, patch_size=8, depth=2, embed_dim=32,
                      num_heads=2), (4, 3, 32, 32), ["logp_a", "logp_b"], TWO,
             "timm deit_tiny topology: image 32, patch 8, depth 2, dim 32, 2 heads."),
    "swin": (timm_two("swin_tiny_patch4_window7_224", img_size=32, patch_size=2, window_size=4,
                      embed_dim=16, depths=(2, 1), num_heads=(1, 2)),
             (4, 3, 32, 32), ["logp_a", "logp_b"], TWO,
             "timm swin_tiny topology: image 32, patch 2, window 4, dim 16, depths (2,1), heads (1,2)."),
    "masked": (Masked, (4, 3, 16, 16), ["logp_a", "logp_b"], TWO,
               "Masks and chunks at run time (Swin's != 0 mask, EdgeNeXt's ~mask and cumsum, "
               "torch.chunk and torch.split, comparisons, &, |, ^, torch.where, torch.fmod) "
               "in a one-block attention model, 16 tokens of dim 16."),
    "upsample": (Upsample, (4, 3, 8, 8), ["logp_a", "logp_b"], TWO,
                 "Conv, BatchNorm, bilinear F.interpolate(scale_factor=2), Conv, two heads."),
    "recurrent": (Recurrent, (4, 7, 4), ["logp_a", "logp_b"], TWO,
                  "Bidirectional GRU (4 -> 6) then LSTM (12 -> 5) over 7 steps, two heads on the last step."),
}


def build(name, seed):
    """The model, perturbed, in eval mode."""
    torch.manual_seed(seed)
    model = MODELS[name][0]()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen))
    mf.randomise_bn(model, gen)
    return model.eval()


def batch(name, seed):
    shape, tasks = MODELS[name][1], MODELS[name][3]
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal(shape, dtype=np.float32))
    if name == "lenet2":
        x = torch.from_numpy(rng.random(shape, dtype=np.float32))
    if name == "mtan":
        n, _, h, w = shape
        seg = rng.integers(0, 13, (n, h, w)).astype(np.int64)
        seg[rng.random((n, h, w)) < 0.1] = -1
        depth = rng.random((n, 1, h, w), dtype=np.float32) * 5 + 0.5
        depth[rng.random((n, 1, h, w)) < 0.2] = 0
        normal = rng.standard_normal((n, 3, h, w)).astype(np.float32)
        normal /= np.linalg.norm(normal, axis=1, keepdims=True)
        normal[np.broadcast_to(rng.random((n, 1, h, w)) < 0.15, normal.shape)] = 0
        return x, {"seg": seg, "depth_t": depth, "normal_t": normal.astype(np.float32)}
    n = shape[0]
    classes = {"a": 10, "b": 5, "left": 10, "right": 10}
    return x, {t[3]: rng.integers(0, classes[t[3]], n).astype(np.int64) for t in tasks}


# ---------------------------------------------------------------- export


def export(model, x, path, outs, exporter, opset):
    """Writes path; returns the call, as a user would write it."""
    dyn = {n: {0: "N"} for n in ["x"] + outs}
    kw = dict(input_names=["x"], output_names=outs, dynamic_axes=dyn)
    if opset is not None:
        kw["opset_version"] = opset
    if exporter == "ts":
        call = ("torch.onnx.export(model, (x,), f, dynamo=False, training=TrainingMode.PRESERVE, "
                "do_constant_folding=False%s)")
        torch.onnx.export(model, (x,), path, dynamo=False, do_constant_folding=False,
                          keep_initializers_as_inputs=False,
                          training=torch.onnx.TrainingMode.PRESERVE, **kw)
    else:
        optimize = exporter == "dynopt"
        call = "torch.onnx.export(model, (x,), f, dynamo=True%s%%s)" % ("" if optimize else ", optimize=False")
        torch.onnx.export(model, (x,), path, dynamo=True, optimize=optimize, external_data=False,
                          verbose=False, **kw)
    return call % ("" if opset is None else ", opset_version=%d" % opset)


def initializer_sources(proto, model):
    """ONNX initializer -> (state_dict key, how): by name, or the one parameter
    or buffer whose value it equals, transposed or reshaped. None where none."""
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    for k, v in model.named_buffers():  # non-persistent buffers too
        sd.setdefault(k, v.detach().numpy())
    out = {}
    for t in proto.graph.initializer:
        a = numpy_helper.to_array(t)
        if t.name in sd:
            # dynopt's BatchNorm fusion keeps the Conv weight's name, not its value
            out[t.name] = (t.name, "name") if np.array_equal(a, sd[t.name]) else None
            continue
        if a.dtype.kind != "f":
            continue
        cands = []
        for k, v in sd.items():
            if v.dtype != a.dtype or v.size != a.size:
                continue
            if v.shape == a.shape and np.array_equal(v, a):
                cands.append((k, "value"))
            elif v.ndim == 2 and a.shape == v.T.shape and np.array_equal(v.T, a):
                cands.append((k, "transpose"))
            elif np.array_equal(v.reshape(-1), a.reshape(-1)):
                cands.append((k, "reshape"))
        out[t.name] = cands[0] if len(cands) == 1 else None
    return out


def fused_sources(model, x, outs, proto, src, opset):
    """For an optimized dynamo export whose optimizer fused BatchNorm into the
    Conv before it (W' = W·γ/σ under W's name, b' = (b − μ)·γ/σ + β as
    W_bias, σ = sqrt(running_var + ε)), records in src how each fused
    initializer derives from the module: ("fused_weight", σ/γ) for W' (its
    gradient is dL/dW·σ/γ per output channel) and ("fused_bias") for b' (its
    gradient is dL/dβ). The pairs are read from the same model's export with
    optimize=False. Checks the fused values against the module's; returns
    the parameters absorbed (γ, the Conv's bias)."""
    tmp = os.path.join(HERE, ".tmp_unfused.onnx")
    export(model, x, tmp, outs, "dynamo", opset)
    plain = onnx.load(tmp)
    os.remove(tmp)
    sd = {k: v.detach().double().numpy() for k, v in model.state_dict().items()}
    consumers = {}
    for n in plain.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    inits = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in proto.graph.initializer}
    # the fused bias: W_bias, or the Conv's own bias under its name
    fused_bias = {n.input[1]: n.input[2] for n in proto.graph.node if n.op_type == "Conv" and len(n.input) > 2}
    absorbed = set()
    for n in plain.graph.node:
        if n.op_type != "Conv" or n.input[1] not in inits or src.get(n.input[1]) is not None:
            continue
        bns = [c for c in consumers.get(n.output[0], []) if c.op_type == "BatchNormalization"]
        if len(bns) != 1:
            continue
        bn = bns[0]
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        w, gamma, beta, mean, var = n.input[1], bn.input[1], bn.input[2], bn.input[3], bn.input[4]
        sigma = np.sqrt(sd[var] + np.float32(eps).astype(np.float64))
        scale = sd[gamma] / sigma
        want_w = sd[w] * scale.reshape((-1,) + (1,) * (sd[w].ndim - 1))
        has_b = len(n.input) > 2 and n.input[2] in sd  # else none, or a zero constant (checked below)
        b = sd[n.input[2]] if has_b else 0.0
        want_b = (b - sd[mean]) * scale + sd[beta]
        bias = fused_bias.get(w, w + "_bias")
        if not np.allclose(inits[w], want_w, rtol=1e-5, atol=1e-6) or \
                not np.allclose(inits.get(bias, np.nan), want_b, rtol=1e-5, atol=1e-6):
            raise SystemExit("%s: not BatchNorm %s fused into Conv %s" % (w, gamma, n.name))
        src[w] = (w, "fused_weight", 1 / scale)
        src[bias] = (beta, "fused_bias")
        absorbed.add(gamma)
        if has_b:
            absorbed.add(n.input[2])
    return absorbed


def dynamo_constants(proto):
    """Initializers the dynamo exporter marks as no parameter, as
    importer.Model.NotParameters reads them: InputSpec.kind other than
    PARAMETER, folded by the onnxscript optimizer from no parameter, or a
    scalar without metadata."""
    inits = {t.name for t in proto.graph.initializer}
    meta = {v.name: {p.key: p.value for p in v.metadata_props}
            for v in list(proto.graph.input) + list(proto.graph.value_info) if v.name in inits}
    kind = "pkg.torch.export.graph_signature.InputSpec.kind"
    out = set()
    if any(kind in md for md in meta.values()):
        # a scalar without metadata: a number of the forward lifted by the optimizer
        # (its value_info, if any, has no metadata; importer reads it so)
        out.update(t.name for t in proto.graph.initializer if not meta.get(t.name) and len(t.dims) == 0)
    for name, md in meta.items():
        if kind in md and md[kind] != "PARAMETER":
            out.add(name)
        elif "pkg.onnxscript.optimizer.folded_from" in md:
            srcs = ast.literal_eval(md["pkg.onnxscript.optimizer.folded_from"])
            # a folded parameter is usually gone from the file, named by its
            # state_dict key (with a dot; the exporter's own values have none)
            if not any(meta[s].get(kind) == "PARAMETER" if s in meta else "." in s for s in srcs):
                out.add(name)
    return out


def data_inputs(proto):
    """Names read by some node (not only as a BN statistic, a shape or
    Resize's roi, scales or sizes)."""
    skip = {"BatchNormalization": {3, 4}, "Reshape": {1}, "Resize": {1, 2, 3}}
    used = set()
    for n in proto.graph.node:
        for i, s in enumerate(n.input):
            if i not in skip.get(n.op_type, ()):
                used.add(s)
    return used


def ort_pypi(path, x):
    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    s = onnxruntime.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, {"x": x})))


def make(name, exporter, opset, seed):
    _, _, outs, tasks, desc = MODELS[name]
    model = build(name, seed)
    x, targets = batch(name, seed)
    tmp = os.path.join(HERE, ".tmp_%s.onnx" % name)
    try:
        call = export(model, x, tmp, outs, exporter, opset)
    except Exception as e:  # recorded in the summary, not a fixture
        return {"fixture": None, "error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])}
    proto = onnx.load(tmp)
    onnx.checker.check_model(proto, full_check=True)
    got_opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    fname = "%s_%s_op%d" % (name, exporter, got_opset)
    path = os.path.join(HERE, fname + ".onnx")
    os.replace(tmp, path)

    params = dict(model.named_parameters())
    buffers = {k: v for k, v in model.named_buffers() if not k.endswith("num_batches_tracked")}
    src = initializer_sources(proto, model)
    absorbed = set()
    if exporter == "dynopt":
        absorbed = fused_sources(model, x, outs, proto, src, opset)
    used = data_inputs(proto)
    consts = dynamo_constants(proto)
    # buffers: BatchNorm running statistics (as make_fixtures.py's);
    # other_buffers: the module's other buffers (Swin's attention mask and
    # index tables) when they are initializers.
    trainable, buffer_inits, other_buffers, unmapped_float = [], [], [], []
    for t in proto.graph.initializer:
        s = src.get(t.name)
        if s is not None and s[0] in buffers:
            if s[0].endswith(("running_mean", "running_var")):
                buffer_inits.append(t.name)
            else:
                other_buffers.append(t.name)
            continue
        if t.name in consts:
            if s is not None and s[0] in params:
                raise SystemExit("%s: %s is marked as no parameter but holds %s" % (name, t.name, s[0]))
            continue
        if s is not None and s[0] in params:
            trainable.append(t.name)
        elif t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE) and t.name in used:
            unmapped_float.append(t.name)
    missing = [k for k in params if k not in {src[i][0] for i in trainable} and k not in absorbed]
    if unmapped_float or missing:
        if exporter == "dynopt" and opset is None and name in REJECTED_KEPT:
            os.replace(path, os.path.join(HERE, "rejected_" + fname + ".onnx"))
        else:
            os.remove(path)
        return {"fixture": None, "name": fname,
                "error": "initializers that are no parameter: %s; parameters not in the file: %s"
                         % (unmapped_float[:6], missing[:6])}

    # float32 forward and gradients, float64 reference (make_fixtures.py's method).
    out32 = dict(zip(outs, model(x)))
    t32 = {k: torch.from_numpy(v) for k, v in targets.items()}
    plist = list(params.values())
    g32 = {}
    for task, kind, out, tgt, _ in tasks:
        loss = mf.LOSSES[kind](out32[out], t32[tgt])
        g32[task] = torch.autograd.grad(loss, plist, retain_graph=True, allow_unused=True)
    m64 = copy.deepcopy(model).double()
    t64 = {k: (v.double() if v.is_floating_point() else v) for k, v in t32.items()}
    out64 = dict(zip(outs, m64(x.double())))
    p64 = list(dict(m64.named_parameters()).values())
    arrays = {"input/x": x.numpy()}
    for k, v in targets.items():
        arrays["target/" + k] = v
    for n in outs:
        arrays["output/" + n] = out32[n].detach().numpy()
    losses = {}
    index = {k: i for i, k in enumerate(params)}
    worst32 = 0.0
    for task, kind, out, tgt, _ in tasks:
        loss = mf.LOSSES[kind](out64[out], t64[tgt])
        losses[task] = loss.item()
        arrays["loss/" + task] = np.array(loss.item(), dtype=np.float64)
        g = torch.autograd.grad(loss, p64, retain_graph=True, allow_unused=True)
        for init in trainable:
            key, how = src[init][:2]
            i = index[key]
            ref = np.zeros(plist[i].shape) if g[i] is None else g[i].detach().numpy()
            r32 = np.zeros(plist[i].shape) if g32[task][i] is None else g32[task][i].numpy()
            err = np.abs(ref - r32).max() / max(np.abs(ref).max(), 1e-6)
            worst32 = max(worst32, err)
            if err > 1e-3:
                raise SystemExit("%s: float32/float64 gradients of %s/%s differ (%g)" % (fname, task, key, err))
            shape = tuple(d for d in proto.graph.initializer[[t.name for t in proto.graph.initializer].index(init)].dims)
            if how == "fused_weight":  # W' = W·γ/σ per output channel: dL/dW' = dL/dW·σ/γ
                ref = ref * src[init][2].reshape((-1,) + (1,) * (ref.ndim - 1))
            ref = ref.T if how == "transpose" else ref.reshape(shape)
            arrays["grad/%s/%s" % (task, init)] = np.ascontiguousarray(ref.astype(np.float32))

    # ONNX Runtime: PyPI's here, npm's (the Go tests' oracle) recorded.
    pypi = ort_pypi(path, x.numpy())
    for n in outs:
        d = np.abs(pypi[n] - arrays["output/" + n]).max()
        if d > 1e-5:
            raise SystemExit("%s: onnxruntime %s and PyTorch differ on %s by %g"
                             % (fname, onnxruntime.__version__, n, d))
    ort_diff = {"onnxruntime " + onnxruntime.__version__:
                max(float(np.abs(pypi[n] - arrays["output/" + n]).max()) for n in outs)}
    node = mf.ort_run(path, {"x": x.numpy()})
    if node is not None:
        for n in outs:
            d = np.abs(node[n] - arrays["output/" + n]).max()
            if d > 1e-5:
                raise SystemExit("%s: onnxruntime-node and PyTorch differ on %s by %g" % (fname, n, d))
        ort_diff["onnxruntime-node"] = max(float(np.abs(node[n] - arrays["output/" + n]).max()) for n in outs)
    # One data file per model and initializer naming: the TorchScript and
    # the unoptimized dynamo exports share their names, so their arrays.
    data = "%s_%s.npz" % (name, "dynopt" if exporter == "dynopt" else "ref")
    dpath = os.path.join(HERE, data)
    if os.path.exists(dpath) and (name, data) in WRITTEN:
        with np.load(dpath) as old:
            if set(old.files) != set(arrays) or any(not np.array_equal(old[k], v) for k, v in arrays.items()):
                raise SystemExit("%s: arrays differ from those in %s" % (fname, data))
    else:
        np.savez_compressed(dpath, **arrays)
        WRITTEN.add((name, data))

    sdpy = None
    if map_state_dict is not None:
        mapping, unmapped = map_state_dict(path, model)
        sdpy = {"mapping": dict(mapping), "rule": dict(mapping.rule), "unmapped": unmapped}
    ops = sorted({n.op_type for n in proto.graph.node})
    meta = {
        "model": fname + ".onnx", "data": data, "opset": got_opset,
        "ort_vs_torch": ort_diff,
        "exporter": exporter, "export_call": call,
        "torch": torch.__version__, "torchvision": torchvision.__version__, "timm": timm.__version__,
        "onnxscript": onnxscript.__version__, "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "input": {"name": "x", "shape": list(x.shape), "dynamic_axes": {"0": "N"}},
        "outputs": {n: list(out32[n].shape) for n in outs},
        "targets": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in targets.items()},
        "tasks": [":".join([t, k, o, g]) + (":" + e if e else "") for t, k, o, g, e in tasks],
        "losses": losses,
        "trainable": trainable,
        "buffers": buffer_inits,
        "other_buffers": other_buffers,
        "state_dict_to_onnx": {src[i][0]: i for i in trainable + buffer_inits + other_buffers},
        "initializer_from": {i: list(src[i][:2]) for i in trainable + buffer_inits + other_buffers},
        "statedict_py": sdpy,
        "num_parameters": int(sum(p.numel() for p in params.values())),
        "ops": ops,
        "functions": [f.name for f in proto.functions],
        "dynamo_constants": sorted(consts),
        "notes": desc + " Parameters perturbed N(0, 0.05^2), BatchNorm randomised. Exported with "
                 + call + ".",
    }
    with open(os.path.join(HERE, fname + ".json"), "w") as fh:
        json.dump(meta, fh, indent=1, sort_keys=True)
        fh.write("\n")
    size = sum(os.path.getsize(os.path.join(HERE, fname + e)) for e in (".onnx", ".json"))
    return {"fixture": fname, "opset": got_opset, "params": meta["num_parameters"], "bytes": size,
            "float32_vs_float64": worst32, "ops": ops}


WRITTEN = set()  # (model, data file) written by this run

# Optimized dynamo exports that are no fixture but are kept (no .json) for
# the tests of what paretonav says about them: the relative position bias
# gathered into new tensors (swin).
REJECTED_KEPT = ("swin",)


def main():
    torch.set_num_threads(1)
    only = sys.argv[1:]
    summary = {}
    for seed, name in enumerate(MODELS, start=21):
        if only and name not in only:
            continue
        for exporter in ("ts", "dynamo", "dynopt"):
            for opset in (None, 21):
                r = make(name, exporter, opset, seed)
                key = "%s/%s/%s" % (name, exporter, "default" if opset is None else opset)
                summary[key] = r
                print(key, json.dumps(r), flush=True)
    path = os.path.join(HERE, "summary.txt")
    old = {}
    if only and os.path.exists(path):
        with open(path) as fh:
            old = json.load(fh)
    old.update(summary)
    with open(path, "w") as fh:
        json.dump(old, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
