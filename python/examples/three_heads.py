"""The Python snippet of docs/python.md, runnable: a small three-head conv net
(segmentation, depth, surface normals) on synthetic data, tuned toward
(seg*normal)/(0.001+depth) and left tuned in this process.

    python3 python/examples/three_heads.py
"""
import time

t_start = time.perf_counter()

import torch
import torch.nn as nn
import torch.nn.functional as F


class ThreeHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                 nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.seg, self.depth, self.normal = nn.Conv2d(16, 13, 1), nn.Conv2d(16, 1, 1), nn.Conv2d(16, 3, 1)

    def forward(self, x):
        h = self.enc(x)
        return F.log_softmax(self.seg(h), 1), self.depth(h), F.normalize(self.normal(h), dim=1)


def synthetic(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, 32, 32, generator=g)
    return {"x": x, "seg": (x[:, 0] > 0).long() * 6 + (x[:, 1] > 0).long(),
            "depth_t": x[:, 2:3].abs() + 0.1, "normal_t": F.normalize(x, dim=1)}


torch.manual_seed(0)
model = ThreeHeads()
train, val = synthetic(256, 1), synthetic(64, 2)
t_import = time.perf_counter()

# --- the snippet ---------------------------------------------------------
import paretonav

result = paretonav.tune(
    model,                                   # a torch.nn.Module (or an ONNX file's path)
    data=train,                              # {"x": X, "seg": S, "depth_t": D, "normal_t": N}: arrays or tensors
    val=val,                                 # losses before/after are measured on it
    inputs=["x"],                            # forward()'s arguments, in order
    outputs=["seg_logp", "depth", "normal"], # what forward() returns, in order
    tasks=["seg:nll:seg_logp:seg:ignore_index=-1", "depth:depth_l1:depth:depth_t",
           "normal:normal_cos:normal:normal_t"],
    criterion="(seg*normal)/(0.001+depth)",
    steps=300, batch=8, lr=1e-4,             # tune's flags, as keywords
)
print(result)
print(result.metrics["seg"]["miou"], result.g)
# model now holds the tuned weights: torch.save(model.state_dict(), "tuned.pt")
# -------------------------------------------------------------------------

t_end = time.perf_counter()
log = result.log if isinstance(result.log, list) else result.log.to_dict("records")
print("timing: torch+model+data %.2fs, import paretonav -> end %.2fs, %d steps" %
      (t_import - t_start, t_end - t_import, len(log)))
