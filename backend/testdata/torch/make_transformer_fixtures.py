#!/usr/bin/python3
"""Opset-17 exports of torchvision's VisionTransformer and ConvNeXt with two
heads, in the layout of make_fixtures.py, whose make_fixture they
use (float64 reference losses and gradients, ONNX Runtime cross-check).

Regenerate from the repo root with the system Python (torch 1.13,
torchvision 0.14, onnx 1.12):

    PARETONAV_ORT_DIR=$PWD/.tools/ort/node_modules /usr/bin/python3 backend/testdata/torch/make_transformer_fixtures.py

It writes, beside this script:

  vit2_op17            ViT: image 32, patch 8, 2 encoder layers, hidden 64,
                       4 heads, MLP 128; heads: torchvision's (10 classes) on
                       the class token and a second Linear (5 classes), each
                       + log_softmax. Exported with make_fixtures.py's
                       settings (TrainingMode.PRESERVE on the eval model, no
                       constant folding). LayerNormalization, MatMul/Softmax
                       attention, GELU as Erf.
  vit2_op17_default    the same model with torch.onnx.export's defaults
                       (TrainingMode.EVAL, constant folding: Linear weights
                       become transposed onnx::MatMul_NN initializers).
  convnext2_op17       ConvNeXt with stages (16 ch, 1 block) and (32 ch, 1
                       block), stem 4x4/4, downsample LayerNorm2d + conv
                       2x2/2, global average pool, LayerNorm2d, two Linear
                       heads (10, 5) + log_softmax; PRESERVE export.
  convnext2_op17_default  the same with the default export.

Every parameter is perturbed by N(0, 0.05^2) after torchvision's
initialisation: fresh models have many equal tensors (LayerNorm weights of
ones, zero biases, zero heads) that torch's exporter merges (one
initializer, Identity nodes for the others), which would break the
one-to-one parameter/initializer mapping the fixtures need (merged
initializers are covered by the tied_*.onnx files below).

  tied_vit2_op17.onnx, tied_convnext2_op17.onnx
                       the fresh (unperturbed) models, default export: the
                       merged initializers that inspect reports and
                       --untie unties (cli and interop tests); no .json, so
                       they are not fixtures.

Tasks: a:nll:logp_a:a and b:nll:logp_b:b, batch 4, input [N,3,32,32].
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models import VisionTransformer
from torchvision.models.convnext import ConvNeXt, CNBlockConfig

import make_fixtures as mf


class ViT2(nn.Module):
    def __init__(self):
        super().__init__()
        self.vit = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                     hidden_dim=64, mlp_dim=128, num_classes=10)
        self.head_b = nn.Linear(64, 5)

    def forward(self, x):
        v = self.vit
        x = v._process_input(x)
        x = torch.cat([v.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = v.encoder(x)[:, 0]
        return F.log_softmax(v.heads(x), 1), F.log_softmax(self.head_b(x), 1)


class ConvNeXt2(nn.Module):
    def __init__(self):
        super().__init__()
        c = ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)],
                     stochastic_depth_prob=0.1, num_classes=10)
        self.features, self.avgpool, self.norm = c.features, c.avgpool, c.classifier[0]
        self.head_a, self.head_b = nn.Linear(32, 10), nn.Linear(32, 5)

    def forward(self, x):
        h = torch.flatten(self.norm(self.avgpool(self.features(x))), 1)
        return F.log_softmax(self.head_a(h), 1), F.log_softmax(self.head_b(h), 1)


def perturb(model, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen))


TASKS = [("a", "nll", "logp_a", "a", ""), ("b", "nll", "logp_b", "b", "")]


def fixtures(name, cls, seed, notes):
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((4, 3, 32, 32), dtype=np.float32))
    targets = {"a": rng.integers(0, 10, 4).astype(np.int64),
               "b": rng.integers(0, 5, 4).astype(np.int64)}
    for default in (False, True):
        torch.manual_seed(seed)
        model = cls()
        perturb(model, seed)
        suffix = "_default" if default else ""
        how = ("torch.onnx.export's defaults (TrainingMode.EVAL, constant folding)" if default
               else "TrainingMode.PRESERVE on the eval model, no constant folding")
        mf.make_fixture(name + "_op17" + suffix, model, x, ["logp_a", "logp_b"], TASKS, targets, 17,
                        notes + " Exported with " + how + "; parameters perturbed N(0, 0.05^2).",
                        default_export=default)
    torch.manual_seed(seed)
    model = cls().eval()
    torch.onnx.export(model, x, os.path.join(HERE, "tied_%s_op17.onnx" % name), opset_version=17,
                      input_names=["x"], output_names=["logp_a", "logp_b"],
                      dynamic_axes={n: {0: "N"} for n in ["x", "logp_a", "logp_b"]})


if __name__ == "__main__":
    torch.set_num_threads(1)
    fixtures("vit2", ViT2, 12, "torchvision VisionTransformer (image 32, patch 8, 2 layers, hidden 64, "
             "4 heads, MLP 128), heads on the class token: torchvision's (10) and a Linear (5).")
    fixtures("convnext2", ConvNeXt2, 13, "torchvision ConvNeXt, stages (16, 1 block) and (32, 1 block), "
             "LayerNorm2d, two Linear heads (10, 5).")
