#!/usr/bin/python3
"""Makes lenet2_torch.npz, read by TestLeNet2MatchesPyTorch.

usage: lenet2_torch.py LENET2.onnx   (write it with: paretonav models lenet2 --seed 1 --out LENET2.onnx)

Loads the ONNX initializers into a PyTorch (1.13) two-headed LeNet written
the way Pareto MTL writes its MultiMNIST model (conv→relu→pool twice, fc1,
two linear heads) plus log_softmax, runs it in eval mode on a fixed random
batch, and saves the batch and both outputs.
"""
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper


class LeNet2(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, 9, 1)
        self.conv2 = nn.Conv2d(10, 20, 5, 1)
        self.fc1 = nn.Linear(5 * 5 * 20, 50)
        self.head_left = nn.Linear(50, 10)
        self.head_right = nn.Linear(50, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2, 2)
        x = F.relu(self.fc1(x.view(-1, 5 * 5 * 20)))
        return F.log_softmax(self.head_left(x), dim=1), F.log_softmax(self.head_right(x), dim=1)


model = onnx.load(sys.argv[1])
net = LeNet2()
net.load_state_dict({t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in model.graph.initializer})
net.eval()
torch.manual_seed(0)
x = torch.rand(4, 1, 36, 36)
with torch.no_grad():
    left, right = net(x)
np.savez("lenet2_torch.npz", x=x.numpy(), logp_left=left.numpy(), logp_right=right.numpy())
