#!/usr/bin/python3
"""Extra PyTorch exports at opset 13 beyond those of make_fixtures.py: the kinds of
models users bring (not in the repo's model zoo), checked by
backend/torch_fixtures_test.go (TestTorchExtraFixtures) exactly like
../torch/: outputs, per-task losses and autograd gradients.

Regenerate from the repo root with the system Python (torch 1.13, onnx 1.12):

    /usr/bin/python3 backend/testdata/torch_extra/make_extra.py

It reuses ../torch/make_fixtures.py (export settings, file layout, float64
reference gradients, ONNX Runtime cross-check) and writes here:

  mlp_gelu         x.view flatten, Linear, GELU (Erf), Dropout, Tanh
  mlp_ln_silu      LayerNorm (ReduceMean/Sub/Pow/Sqrt/Div at opset 13), SiLU
  vgg_small        Conv-BN-ReLU, AvgPool, MaxPool, AdaptiveAvgPool(2,2), Dropout
  mobilenet_small  depthwise conv (group), ReLU6 (Clip), Hardswish and
                   hardsigmoid (HardSigmoid at opset 13), squeeze-excite
  unet_small       ConvTranspose, Upsample(bilinear, align_corners), concat,
                   LeakyReLU; tasks seg (nll) and depth (depth_l1)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "torch"))
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
import make_fixtures as mf
mf.HERE = HERE

class MLP(nn.Module):
    def __init__(self, ln=False, act="gelu"):
        super().__init__()
        self.fc1 = nn.Linear(20, 32); self.fc2 = nn.Linear(32, 32)
        self.ln = nn.LayerNorm(32) if ln else None
        self.drop = nn.Dropout(0.3)
        self.act = act
        self.ha = nn.Linear(32, 5); self.hb = nn.Linear(32, 4)
    def forward(self, x):
        h = self.fc1(x.view(x.size(0), -1))
        h = F.gelu(h) if self.act == "gelu" else F.silu(h)
        h = self.fc2(self.drop(h))
        if self.ln is not None: h = self.ln(h)
        h = torch.tanh(h)
        return F.log_softmax(self.ha(h), 1), F.log_softmax(self.hb(h), 1)

class VGG(nn.Module):
    def __init__(self):
        super().__init__()
        def blk(i, o): return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True))
        self.features = nn.Sequential(blk(3, 8), blk(8, 8), nn.AvgPool2d(2), blk(8, 16), nn.MaxPool2d(2), blk(16, 16), nn.AdaptiveAvgPool2d((2, 2)))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(True), nn.Dropout(0.5), nn.Linear(32, 10))
        self.hb = nn.Linear(32, 3)
    def forward(self, x):
        f = self.features(x)
        h = self.classifier[:4](f)
        return F.log_softmax(self.classifier[4](h), 1), F.log_softmax(self.hb(h), 1)

class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.LeakyReLU(0.1))
        self.e2 = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1, stride=2), nn.BatchNorm2d(16), nn.ReLU())
        self.e3 = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, stride=2), nn.ReLU())
        self.up1 = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.d1 = nn.Sequential(nn.Conv2d(32, 8, 3, padding=1), nn.ReLU())
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.d2 = nn.Sequential(nn.Conv2d(16, 8, 3, padding=1), nn.ReLU())
        self.seg = nn.Conv2d(8, 5, 1); self.depth = nn.Conv2d(8, 1, 1)
    def forward(self, x):
        a = self.e1(x); b = self.e2(a); c = self.e3(b)
        u = self.d1(torch.cat([self.up1(c), b], 1))
        u = self.d2(torch.cat([self.up2(u), a], 1))
        return F.log_softmax(self.seg(u), 1), torch.sigmoid(self.depth(u)) * 10

class MBBlock(nn.Module):
    def __init__(self, c, e):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(c, e, 1, bias=False), nn.BatchNorm2d(e), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(e, e, 3, padding=1, groups=e, bias=False), nn.BatchNorm2d(e), nn.Hardswish())
        self.se1 = nn.Conv2d(e, 4, 1); self.se2 = nn.Conv2d(4, e, 1)
        self.proj = nn.Sequential(nn.Conv2d(e, c, 1, bias=False), nn.BatchNorm2d(c))
    def forward(self, x):
        h = self.dw(self.expand(x))
        s = F.hardsigmoid(self.se2(F.relu(self.se1(F.adaptive_avg_pool2d(h, 1)))))
        return x + self.proj(h * s)

class MobileNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.Hardswish())
        self.b1 = MBBlock(8, 16); self.b2 = MBBlock(8, 24)
        self.ha = nn.Linear(8, 10); self.hb = nn.Linear(8, 2)
    def forward(self, x):
        h = self.b2(self.b1(self.stem(x)))
        h = torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)
        return F.log_softmax(self.ha(h), 1), F.log_softmax(self.hb(h), 1)

def cls(name, model, shape, ncls, seed):
    torch.manual_seed(seed); gen = torch.Generator().manual_seed(seed)
    mf.randomise_bn(model, gen)
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal(shape, dtype=np.float32))
    t = {"a": rng.integers(0, ncls[0], shape[0]).astype(np.int64), "b": rng.integers(0, ncls[1], shape[0]).astype(np.int64)}
    mf.make_fixture(name, model, x, ["oa", "ob"], [("a", "nll", "oa", "a", ""), ("b", "nll", "ob", "b", "")], t, 13, name)

torch.set_num_threads(1)
torch.manual_seed(10); cls("mlp_gelu", MLP(False, "gelu"), (4, 4, 5), (5, 4), 10)
torch.manual_seed(11); cls("mlp_ln_silu", MLP(True, "silu"), (4, 20), (5, 4), 11)
torch.manual_seed(12); cls("vgg_small", VGG(), (3, 3, 16, 16), (10, 3), 12)
torch.manual_seed(13); cls("mobilenet_small", MobileNet(), (2, 3, 16, 16), (10, 2), 13)
torch.manual_seed(14)
m = UNet(); mf.randomise_bn(m, torch.Generator().manual_seed(14))
rng = np.random.default_rng(14)
x = torch.from_numpy(rng.standard_normal((2, 3, 16, 16), dtype=np.float32))
seg = rng.integers(0, 5, (2, 16, 16)).astype(np.int64)
depth = (rng.random((2, 1, 16, 16), dtype=np.float32) * 5 + 0.5)
mf.make_fixture("unet_small", m, x, ["seg", "depth"], [("seg", "nll", "seg", "seg", ""), ("depth", "depth_l1", "depth", "depth_t", "")], {"seg": seg, "depth_t": depth}, 13, "unet")
